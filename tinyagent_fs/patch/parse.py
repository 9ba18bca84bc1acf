"""Reading patches as models write them: the Codex envelope and unified diffs.

Models emit both: the ``*** Begin Patch`` envelope (no line numbers, ``@@``
anchors naming the enclosing function) and ``git diff``-style unified diffs.
Parsing is strict where sloppiness would change the meaning (a hunk shorter than
its header says is a truncated patch, not a shorter hunk) and lenient where it
cannot (padding around marker lines, a shell heredoc around the whole patch).
Every error names the patch line and shows the expected format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.patch.model import CODEX_FORMAT, FilePatch, Hunk, HunkLine, PatchLine, malformed
from tinyagent_fs.patch.unified import parse_unified
from tinyagent_fs.text.codec import line_contents, line_count

_HEREDOC = re.compile(r"^\s*\S.*?<<-?\s*(['\"]?)([A-Za-z_][\w.-]*)\1\s*$")
_FILE_HEADER = re.compile(r"^\*\*\* (Add|Delete|Update) File:(.*)$")
_MOVE = re.compile(r"^\*\*\* Move to:(.*)$")
_BEGIN = "*** Begin Patch"
_END = "*** End Patch"
_END_OF_FILE = "*** End of File"
_NUMBERED = re.compile(r"^-(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@(.*)$")


@dataclass(frozen=True)
class ParsedPatch:
    """The file sections of a patch, in order; ``style`` is "codex" or "unified"."""

    files: list[FilePatch]
    style: str


def parse_patch(patch: str) -> ParsedPatch:
    """Parse either format; INVALID_ARGUMENT with the patch line number otherwise."""
    texts = line_contents(patch)
    start, stop = _unwrap_heredoc(texts)
    lines = texts if (start, stop) == (0, len(texts)) else texts[start:stop]
    crlf = _crlf_lines(patch, line_count(patch))
    first = _first_content(lines)
    if first is None:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT, "the patch is empty", "expected format:\n" + CODEX_FORMAT
        )
    if lines[first].strip() == _BEGIN:
        files, style = _parse_codex(list(enumerate(lines, start + 1)), first), "codex"
    elif any(line.startswith(("--- ", "diff --git ", "@@ ")) for line in lines[first:]):
        files, style = parse_unified(lines, start + 1, crlf), "unified"
    else:
        raise malformed(
            start + 1 + first,
            f"this is neither a '{_BEGIN}' patch nor a unified diff (it starts with "
            f"{lines[first][:60]!r})",
            "codex",
        )
    if not files:
        raise malformed(start + 1 + _last_content(lines), "the patch changes no file", style)
    return ParsedPatch(files, style)


def _first_content(lines: list[str]) -> int | None:
    """Index of the first line that is not blank; None when all are."""
    return next((index for index, line in enumerate(lines) if line.strip()), None)


def _last_content(lines: list[str]) -> int:
    """Index of the last line that is not blank (there is one)."""
    return next(index for index in range(len(lines) - 1, -1, -1) if lines[index].strip())


def _crlf_lines(patch: str, line_count: int) -> frozenset[int]:
    """Numbers of the lines ending in CRLF, when the patch mixes endings (as ``git diff``
    of a CRLF file does: LF headers, CRLF content). A patch that is CRLF throughout was
    converted in transport (an editor, a clipboard), so it states no endings."""
    # Between two CRLFs every \r and \n is a break of its own: the running count of
    # breaks up to each CRLF is its line's number.
    numbers = accumulate(
        piece.count("\n") + piece.count("\r") + 1 for piece in patch.split("\r\n")[:-1]
    )
    found = frozenset(numbers)
    broken = line_count - (1 if patch and patch[-1] not in "\r\n" else 0)
    return found if len(found) < broken else frozenset()


def _unwrap_heredoc(lines: list[str]) -> tuple[int, int]:
    """Where the body of ``apply_patch <<'EOF' ... EOF`` (also <<EOF, <<"EOF", any
    word) starts and stops among ``lines``; all of them when there is no heredoc."""
    first = _first_content(lines)
    if first is None:
        return 0, len(lines)
    opened = _HEREDOC.match(lines[first])
    if opened is None:
        return 0, len(lines)
    last = _last_content(lines)
    word = opened.group(2)
    if last == first or lines[last].strip() != word:
        raise malformed(
            first + 1,
            f"the heredoc opened here with <<{word} is not closed by a final line '{word}'",
            "codex",
        )
    return first + 1, last


def _parse_codex(lines: list[PatchLine], start: int) -> list[FilePatch]:
    """``start``: the index of the ``*** Begin Patch`` line."""
    files: list[FilePatch] = []
    index = start + 1
    while True:
        if index >= len(lines):
            raise malformed(
                lines[-1][0], f"the patch ends without '{_END}' (is it cut short?)", "codex"
            )
        number, line = lines[index]
        stripped = line.strip()
        if stripped == _END:
            _refuse_trailing_text(lines[index + 1 :])
            return files
        if not stripped:
            index += 1
            continue
        header = _FILE_HEADER.match(stripped)
        if header is None:
            raise malformed(
                number,
                "expected '*** Add File: <path>', '*** Update File: <path>', "
                f"'*** Delete File: <path>' or '{_END}', found {line[:80]!r}",
                "codex",
            )
        kind, path = header.group(1).lower(), header.group(2).strip()
        if not path:
            raise malformed(number, f"'*** {header.group(1)} File:' needs a path", "codex")
        if kind == "add":
            file, index = _codex_add(lines, index + 1, path, number)
        elif kind == "delete":
            file, index = FilePatch("delete", path, patch_line=number), index + 1
        else:
            file, index = _codex_update(lines, index + 1, path, number)
        files.append(file)


def _refuse_trailing_text(rest: list[PatchLine]) -> None:
    for number, line in rest:
        if line.strip():
            raise malformed(number, f"text after '{_END}': {line[:80]!r}", "codex")


def _is_section_end(stripped: str) -> bool:
    return stripped == _END or _FILE_HEADER.match(stripped) is not None


def _codex_add(
    lines: list[PatchLine], index: int, path: str, header_line: int
) -> tuple[FilePatch, int]:
    added: list[str] = []
    blanks: list[int] = []
    while index < len(lines) and not _is_section_end(lines[index][1].strip()):
        number, line = lines[index]
        if not line.strip():
            blanks.append(number)
        elif line.startswith("+"):
            if blanks:
                raise malformed(
                    blanks[0],
                    f"a line of added file {path} must start with '+' (write '+' alone for an "
                    "empty line)",
                    "codex",
                )
            added.append(line[1:])
        else:
            raise malformed(
                number, f"a line of added file {path} must start with '+': {line[:80]!r}", "codex"
            )
        index += 1
    hunk = Hunk("+" * len(added), tuple(added), f"*** Add File: {path}", header_line)
    return FilePatch("add", path, hunks=(hunk,) if added else (), patch_line=header_line), index


def _codex_update(
    lines: list[PatchLine], index: int, path: str, header_line: int
) -> tuple[FilePatch, int]:
    move_to: str | None = None
    if index < len(lines):
        moved = _MOVE.match(lines[index][1].strip())
        if moved is not None:
            move_to = moved.group(1).strip()
            if not move_to:
                raise malformed(lines[index][0], "'*** Move to:' needs a path", "codex")
            index += 1
    hunks: list[Hunk] = []
    builder = _HunkBuilder(path)
    while index < len(lines):
        number, line = lines[index]
        stripped = line.strip()
        if _is_section_end(stripped):
            break
        if _MOVE.match(stripped):
            raise malformed(
                number, "'*** Move to:' must come right after '*** Update File:'", "codex"
            )
        if line.startswith("@@"):
            if builder.lines:
                hunks.append(builder.finish())
            builder.anchor(number, line)
        elif stripped == _END_OF_FILE:
            if not builder.lines:
                raise malformed(number, f"'{_END_OF_FILE}' must follow a hunk's lines", "codex")
            hunks.append(builder.finish(end_of_file=True))
        elif line[:1] in (" ", "-", "+") or not line:
            builder.add(number, line)
        else:
            raise malformed(
                number,
                "a hunk line must start with ' ' (context), '-' (remove) or '+' (add); found "
                f"{line[:80]!r}",
                "codex",
            )
        index += 1
    if builder.lines or builder.anchors:
        hunks.append(builder.finish())
    if not hunks and move_to is None:
        raise malformed(header_line, f"'*** Update File: {path}' has no hunks", "codex")
    return FilePatch("update", path, move_to, tuple(hunks), patch_line=header_line), index


class _HunkBuilder:
    """Collects one Codex hunk: its ``@@`` anchors (nested ones in order) and lines.

    A line left completely empty is read as an empty context line, as models often
    drop the single space; empty lines at the end of a hunk are separators, not
    context, and are dropped.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._reset()

    def _reset(self) -> None:
        self.anchors: list[str] = []
        self.headers: list[str] = []
        self.lines: list[HunkLine] = []
        self.implicit: list[bool] = []
        self.first_line = 0
        self.old_start: int | None = None

    def anchor(self, number: int, line: str) -> None:
        """``@@ <line>`` adds an anchor. A unified ``@@ -12,3 +12,4 @@ <heading>`` header,
        which models also write here, gives a position hint and its heading as anchor."""
        self.first_line = self.first_line or number
        self.headers.append(line.strip())
        text = line[2:].strip()
        numbered = _NUMBERED.match(text)
        if numbered is not None:
            self.old_start = int(numbered.group(1))
            text = numbered.group(2).strip()
        if text:
            self.anchors.append(text)

    def add(self, number: int, line: str) -> None:
        self.first_line = self.first_line or number
        self.lines.append(HunkLine(line[0], line[1:]) if line else HunkLine(" ", ""))
        self.implicit.append(not line)

    def finish(self, end_of_file: bool = False) -> Hunk:
        if not end_of_file:
            while self.implicit and self.implicit[-1]:
                self.implicit.pop()
                self.lines.pop()
        if not self.lines:
            raise malformed(
                self.first_line, f"a hunk of {self.path} has an '@@' line but no lines", "codex"
            )
        hunk = Hunk.of(
            self.lines,
            " ".join(self.headers),
            self.first_line,
            anchors=tuple(self.anchors),
            old_start=self.old_start,
            end_of_file=end_of_file,
        )
        self._reset()
        return hunk
