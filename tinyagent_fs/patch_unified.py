"""Reading unified diffs: plain ``diff -u`` output and ``git diff`` with its headers.

Hunk bodies are read by the counts in their ``@@ -l,s +l,s @@`` header, because
that is the only way to tell a truncated patch from a short hunk; a body that
disagrees with its header is refused rather than guessed at. Text outside file
sections (a commit message, ``Index:`` lines) is ignored, as ``git apply`` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tinyagent_fs.patch_model import FilePatch, Hunk, HunkLine, PatchLine, malformed

DEV_NULL = "/dev/null"

_UNPAIRED = "'--- <path>' must be followed by '+++ <path>'"
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")
_B_SIDE = re.compile(" (?=b/)")
"""Where the b/ side of a ``diff --git`` line may start (every space before a "b/")."""
_UNSUPPORTED = ("copy from ", "copy to ", "GIT binary patch", "Binary files ")
_EXTENDED_HEADERS = (
    *_UNSUPPORTED,
    "index ",
    "old mode ",
    "new mode ",
    "similarity index ",
    "dissimilarity index ",
    "new file mode ",
    "deleted file mode ",
    "rename from ",
    "rename to ",
)


@dataclass
class _Section:
    """What the headers of one file section said."""

    line: int
    git_paths: tuple[str, str] | None = None
    new_file: bool = False
    deleted: bool = False
    rename_from: str | None = None
    rename_to: str | None = None
    new_mode: int | None = None
    old_missing: bool = False
    new_missing: bool = False
    old_path: str | None = None
    new_path: str | None = None
    hunks: list[Hunk] = field(default_factory=list)


def parse_unified(lines: list[PatchLine], crlf: frozenset[int] = frozenset()) -> list[FilePatch]:
    """``crlf`` holds the numbers of the patch lines that ended in CRLF; when there
    are any, the patch states each added line's ending and it is written as given
    (byte for byte what ``git apply`` writes)."""
    files: list[FilePatch] = []
    index = 0
    while index < len(lines):
        number, line = lines[index]
        if line.startswith("diff --git ") or _starts_file(lines, index):
            section, index = _section(lines, index, crlf)
            file = _file_patch(section)
            if file is not None:
                files.append(file)
            continue
        if line.startswith("@@"):
            raise malformed(
                number, "a hunk header before any '--- a/path' / '+++ b/path'", "unified"
            )
        if line.startswith(("--- ", "+++ ")):
            raise malformed(number, "'--- <path>' must be followed by '+++ <path>'", "unified")
        index += 1
    return files


def _starts_file(lines: list[PatchLine], index: int) -> bool:
    return (
        lines[index][1].startswith("--- ")
        and index + 1 < len(lines)
        and lines[index + 1][1].startswith("+++ ")
    )


def _section(lines: list[PatchLine], index: int, crlf: frozenset[int]) -> tuple[_Section, int]:
    number, line = lines[index]
    section = _Section(number)
    if line.startswith("diff --git "):
        section.git_paths = _git_paths(line[len("diff --git ") :], number)
        index += 1
        while index < len(lines) and lines[index][1].startswith(_EXTENDED_HEADERS):
            _extended_header(section, *lines[index])
            index += 1
    if index < len(lines) and lines[index][1].startswith("--- "):
        if not _starts_file(lines, index):
            raise malformed(
                lines[index][0], "'--- <path>' must be followed by '+++ <path>'", "unified"
            )
        section.old_path, section.old_missing = _header_path(lines[index][1][4:])
        section.new_path, section.new_missing = _header_path(lines[index + 1][1][4:])
        index += 2
    while index < len(lines) and lines[index][1].startswith("@@"):
        hunk, index = _hunk(lines, index, crlf)
        section.hunks.append(hunk)
    if index < len(lines):
        _refuse_overlong_hunk(section, *lines[index])
    return section, index


def _extended_header(section: _Section, number: int, line: str) -> None:
    if line.startswith(_UNSUPPORTED):
        raise malformed(
            number, f"binary patches and copies are not supported: {line[:80]!r}", "unified"
        )
    if line.startswith("new file mode "):
        section.new_file = True
        section.new_mode = _mode(line[len("new file mode ") :], number)
    elif line.startswith("new mode "):
        section.new_mode = _mode(line[len("new mode ") :], number)
    elif line.startswith("deleted file mode "):
        section.deleted = True
    elif line.startswith("rename from "):
        section.rename_from = _unquote(line[len("rename from ") :])
    elif line.startswith("rename to "):
        section.rename_to = _unquote(line[len("rename to ") :])


def _refuse_overlong_hunk(section: _Section, number: int, line: str) -> None:
    """A hunk line right after a complete hunk means its header undercounts."""
    if not section.hunks or not line or line == "-- ":
        return
    if line[0] in " +" or (line[0] == "-" and not line.startswith("--- ")):
        last = section.hunks[-1]
        raise malformed(
            number,
            f"the hunk at patch line {last.patch_line} ({last.header}) has more lines than its "
            "header counts; fix the counts or use the '*** Begin Patch' format",
            "unified",
        )


def _hunk(lines: list[PatchLine], index: int, crlf: frozenset[int]) -> tuple[Hunk, int]:
    number, header = lines[index]
    match = _HUNK_HEADER.match(header.rstrip())
    if match is None:
        raise malformed(
            number,
            f"bad hunk header {header[:80]!r}: expected '@@ -<line>,<count> +<line>,<count> @@' "
            "(for patches without line numbers use the '*** Begin Patch' format)",
            "unified",
        )
    old_start = int(match.group(1))
    old_count = 1 if match.group(2) is None else int(match.group(2))
    new_count = 1 if match.group(4) is None else int(match.group(4))
    body: list[HunkLine] = []
    add, make = body.append, tuple.__new__  # make: HunkLine without its Python __new__
    old_seen = new_seen = 0
    index += 1
    while old_seen < old_count or new_seen < new_count:
        at, line = lines[index] if index < len(lines) else (0, "")
        op = line[:1] or " "
        if index >= len(lines) or op not in " -+\\":
            where = "the patch ends" if index >= len(lines) else f"line {at} is no hunk line"
            raise malformed(
                number,
                f"the hunk {header.strip()!r} is cut short ({where}) after {old_seen} of "
                f"{old_count} old and {new_seen} of {new_count} new lines",
                "unified",
            )
        if op == " ":
            old_seen += 1
            new_seen += 1
            add(make(HunkLine, (" ", line[1:], False, "")))
        elif op == "-":
            old_seen += 1
            add(make(HunkLine, ("-", line[1:], False, "")))
        elif op == "+":
            new_seen += 1
            ending = ("\r\n" if at in crlf else "\n") if crlf else ""
            add(make(HunkLine, ("+", line[1:], False, ending)))
        else:
            _mark_no_newline(body, at)
        if old_seen > old_count or new_seen > new_count:
            raise malformed(
                at, f"the hunk {header.strip()!r} has more lines than its header counts", "unified"
            )
        index += 1
    if index < len(lines) and lines[index][1].startswith("\\"):
        _mark_no_newline(body, lines[index][0])
        index += 1
    old_side = [line for line in body if line.op != "+"]
    hunk = Hunk(
        tuple(body),
        header.strip(),
        number,
        old_start=old_start if old_count else old_start + 1,
        end_of_file=bool(old_side) and old_side[-1].no_newline,
    )
    return hunk, index


def _mark_no_newline(body: list[HunkLine], number: int) -> None:
    if not body:
        raise malformed(number, "'\\ No newline at end of file' must follow a hunk line", "unified")
    last = body[-1]
    body[-1] = HunkLine(last.op, last.text, no_newline=True, ending=last.ending)


def _file_patch(section: _Section) -> FilePatch | None:
    """The section as a file change; None for a section that changes nothing."""
    old_path, new_path = section.old_path, section.new_path
    if section.git_paths is not None or _both_prefixed(old_path, new_path):
        old_path, new_path = _strip_prefix(old_path, "a/"), _strip_prefix(new_path, "b/")
    elif _tree_diff(old_path, new_path):  # diff -ruN old new: strip as patch -p1 does
        old_path, new_path = _strip_first(old_path), _strip_first(new_path)
    old_path = DEV_NULL if section.old_missing else old_path
    new_path = DEV_NULL if section.new_missing else new_path
    git_old, git_new = section.git_paths or (None, None)
    line = section.line
    hunks = tuple(section.hunks)
    if section.new_file or (old_path == DEV_NULL and new_path != DEV_NULL):
        path = _required(new_path if new_path not in (None, DEV_NULL) else git_new, line)
        if any(hl.op != "+" for hunk in hunks for hl in hunk.lines):
            raise malformed(line, f"the new file {path} has context or removed lines", "unified")
        return FilePatch(
            "add", path, hunks=hunks, style="unified", patch_line=line, mode=section.new_mode
        )
    if section.deleted or new_path == DEV_NULL:
        path = _required(old_path if old_path not in (None, DEV_NULL) else git_old, line)
        if any(hl.op == "+" for hunk in hunks for hl in hunk.lines):
            raise malformed(line, f"the deleted file {path} has added lines", "unified")
        return FilePatch("delete", path, hunks=hunks, style="unified", patch_line=line)
    source = _required(section.rename_from or new_path or git_old, line)
    move_to = section.rename_to if section.rename_to not in (None, source) else None
    if not hunks and move_to is None and section.new_mode is None:
        return None
    return FilePatch(
        "update", source, move_to, hunks, style="unified", patch_line=line, mode=section.new_mode
    )


def _mode(text: str, number: int) -> int:
    """Permission bits of a git mode (``100755`` -> 0o755); symlinks and submodules refused."""
    try:
        mode = int(text.strip(), 8)
    except ValueError:
        raise malformed(number, f"{text.strip()!r} is not a file mode", "unified") from None
    if mode >> 12 != 0o10:
        raise malformed(
            number, f"mode {text.strip()} is not a regular file (symlink or submodule)", "unified"
        )
    return mode & 0o7777


def _required(path: str | None, line: int) -> str:
    if not path:
        raise malformed(line, "this file section names no path", "unified")
    return path


def _both_prefixed(old_path: str | None, new_path: str | None) -> bool:
    """Plain diffs get a/ and b/ stripped only when every real side carries its prefix,
    so a path that merely starts with "a/" survives a hand-written diff."""
    sides = [(old_path, "a/"), (new_path, "b/")]
    real = [(path, prefix) for path, prefix in sides if path not in (None, DEV_NULL)]
    return bool(real) and all((path or "").startswith(prefix) for path, prefix in real)


def _tree_diff(old_path: str | None, new_path: str | None) -> bool:
    """Both sides name the same file under two different top folders (``old/x``,
    ``new/x``): the output of ``diff -r old new``."""
    if not old_path or not new_path or DEV_NULL in (old_path, new_path):
        return False
    old_top, _, old_rest = old_path.partition("/")
    new_top, _, new_rest = new_path.partition("/")
    return bool(old_rest) and old_rest == new_rest and old_top != new_top


def _strip_first(path: str | None) -> str | None:
    return path.partition("/")[2] if path else path


def _strip_prefix(path: str | None, prefix: str) -> str | None:
    if path is None or path == DEV_NULL or not path.startswith(prefix):
        return path
    return path[len(prefix) :]


def _header_path(text: str) -> tuple[str, bool]:
    """A ``---``/``+++`` path without the timestamp ``diff -u`` appends after a tab.

    ``diff -N`` marks a file that does not exist on one side with the epoch as its
    timestamp (``1970-01-01 00:00:00 +0000``, or that instant in another zone),
    not with /dev/null; as ``patch`` does, such a side is missing (the second value).
    """
    path, _, stamp = text.partition("\t")
    return _unquote(path.rstrip()), _is_epoch(stamp.strip())


_ISO_STAMP = re.compile(
    r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)?(?: ([+-])(\d\d)(\d\d))?$"
)


def _is_epoch(stamp: str) -> bool:
    """Whether a diff timestamp names the Unix epoch (ISO form, or the ctime form)."""
    if stamp == "Thu Jan  1 00:00:00 1970" or stamp == "Thu Jan 1 00:00:00 1970":
        return True
    match = _ISO_STAMP.match(stamp)
    if match is None:
        return False
    year, month, day, hour, minute, second, sign, zone_h, zone_m = match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
    except ValueError:
        return False
    offset = timedelta(hours=int(zone_h or 0), minutes=int(zone_m or 0))
    utc = moment - offset if sign != "-" else moment + offset
    return utc == datetime(1970, 1, 1)


def _git_paths(text: str, number: int) -> tuple[str, str]:
    """Both paths of a ``diff --git`` line, a/ and b/ stripped; quoted or not."""
    text = text.strip()
    if text.startswith('"'):
        quoted = re.match(r'("(?:[^"\\]|\\.)*")\s+(.*)$', text)
        if quoted is None:
            raise malformed(number, f"cannot read the paths of {text[:80]!r}", "unified")
        old, new = _unquote(quoted.group(1)), _unquote(quoted.group(2))
    else:
        halves = [
            (text[: found.start()], text[found.start() + 1 :]) for found in _B_SIDE.finditer(text)
        ]
        same = [(old, new) for old, new in halves if old[2:] == new[2:]]
        if not (same or halves):
            raise malformed(number, f"cannot read the paths of 'diff --git {text[:80]}'", "unified")
        old, new = (same or halves)[0]
    return _strip_prefix(old, "a/") or old, _strip_prefix(new, "b/") or new


def _unquote(text: str) -> str:
    """Git's C-style quoting of unusual paths ("a/sp\\303\\244ce"), decoded as UTF-8."""
    text = text.strip()
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return text
    raw = bytearray()
    escapes = {"n": 10, "t": 9, '"': 34, "\\": 92, "a": 7, "b": 8, "f": 12, "r": 13, "v": 11}
    body = text[1:-1]
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body):
            following = body[index + 1]
            if following in "01234567" and re.fullmatch(r"[0-7]{3}", body[index + 1 : index + 4]):
                raw.append(int(body[index + 1 : index + 4], 8))
                index += 4
                continue
            raw.append(escapes.get(following, ord(following)))
            index += 2
            continue
        raw.extend(char.encode("utf-8"))
        index += 1
    return raw.decode("utf-8", errors="replace")
