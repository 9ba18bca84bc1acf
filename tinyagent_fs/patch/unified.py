"""Reading unified diffs: plain ``diff -u`` output and ``git diff`` with its headers.

Hunk bodies are read by the counts in their ``@@ -l,s +l,s @@`` header, because
that is the only way to tell a truncated patch from a short hunk; a body that
disagrees with its header is refused rather than guessed at. Text outside file
sections (a commit message, ``Index:`` lines) is ignored, as ``git apply`` does.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from tinyagent_fs.errors import ToolError
from tinyagent_fs.patch.model import FilePatch, Hunk, malformed

DEV_NULL = "/dev/null"

_UNPAIRED = "'--- <path>' must be followed by '+++ <path>'"
_LF_ENDINGS = {"+": "\n", " ": "", "-": ""}
"""The ending each kind of hunk line states in a patch that states endings, for a
hunk none of whose lines ended in CRLF."""
_MARKER_FIRST = "'\\ No newline at end of file' must follow a hunk line"
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


def parse_unified(
    lines: list[str], first: int = 1, crlf: frozenset[int] = frozenset()
) -> list[FilePatch]:
    """``lines``: the patch's lines without their endings, the first of them patch line
    ``first``. ``crlf`` holds the numbers of the patch lines that ended in CRLF; when
    there are any, the patch states each added line's ending and it is written as
    given (byte for byte what ``git apply`` writes)."""
    reader = _Reader(lines, first, crlf)
    files: list[FilePatch] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("diff --git ") or _starts_file(lines, index):
            section, index = _section(reader, index)
            file = _file_patch(section)
            if file is not None:
                files.append(file)
            continue
        if line.startswith("@@"):
            raise malformed(
                first + index,
                "a hunk header before any '--- a/path' / '+++ b/path'",
                "unified",
            )
        if line.startswith(("--- ", "+++ ")):
            raise malformed(first + index, _UNPAIRED, "unified")
        index += 1
    return files


class _Reader:
    """The patch's lines, with what reading hunk bodies needs: each line's first
    character (one string for the whole patch, so a body's lines are counted by
    ``str.count`` rather than one by one) and the CRLF line numbers."""

    def __init__(self, lines: list[str], first: int, crlf: frozenset[int]) -> None:
        self.lines = lines
        self.first = first
        self.crlf = crlf
        self.ops = "".join([line[:1] or " " for line in lines])
        self._crlf_sorted = sorted(crlf)

    def has_crlf(self, first: int, stop: int) -> bool:
        """Whether a patch line numbered ``first`` to ``stop - 1`` ended in CRLF."""
        at = bisect_left(self._crlf_sorted, first)
        return at < len(self._crlf_sorted) and self._crlf_sorted[at] < stop


def _starts_file(lines: list[str], index: int) -> bool:
    return (
        lines[index].startswith("--- ")
        and index + 1 < len(lines)
        and lines[index + 1].startswith("+++ ")
    )


def _section(reader: _Reader, index: int) -> tuple[_Section, int]:
    lines, first = reader.lines, reader.first
    line = lines[index]
    section = _Section(first + index)
    if line.startswith("diff --git "):
        section.git_paths = _git_paths(line[len("diff --git ") :], first + index)
        index += 1
        while index < len(lines) and lines[index].startswith(_EXTENDED_HEADERS):
            _extended_header(section, first + index, lines[index])
            index += 1
    if index < len(lines) and lines[index].startswith("--- "):
        if not _starts_file(lines, index):
            raise malformed(first + index, _UNPAIRED, "unified")
        section.old_path, section.old_missing = _header_path(lines[index][4:])
        section.new_path, section.new_missing = _header_path(lines[index + 1][4:])
        index += 2
    while index < len(lines) and lines[index].startswith("@@"):
        hunk, index = _hunk(reader, index)
        section.hunks.append(hunk)
    if index < len(lines):
        _refuse_overlong_hunk(section, first + index, lines[index])
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


def _hunk(reader: _Reader, index: int) -> tuple[Hunk, int]:
    lines, number = reader.lines, reader.first + index
    header = lines[index]
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
    start = index + 1
    end = _body_end(reader.ops, start, old_count, new_count)
    if end is None:
        raise _body_error(reader, index, old_count, new_count)
    ops, rows = reader.ops[start:end], lines[start:end]
    marks: set[int] = set()
    numbers: Sequence[int] = range(reader.first + start, reader.first + end)
    if "\\" in ops:  # a marker belongs to the line before it
        kept = [at for at, op in enumerate(ops) if op != "\\"]
        marks = {len(ops[:at].replace("\\", "")) - 1 for at, op in enumerate(ops) if op == "\\"}
        ops = "".join(ops[at] for at in kept)
        rows = [rows[at] for at in kept]
        numbers = [numbers[at] for at in kept]
    if end < len(lines) and lines[end].startswith("\\"):
        if not ops:
            raise malformed(reader.first + end, _MARKER_FIRST, "unified")
        marks.add(len(ops) - 1)
        end += 1
    endings = None
    if reader.crlf and reader.has_crlf(reader.first + start, reader.first + end):
        endings = tuple(
            ("\r\n" if at in reader.crlf else "\n") if op == "+" else ""
            for op, at in zip(ops, numbers, strict=True)
        )
    elif reader.crlf:
        endings = tuple(map(_LF_ENDINGS.__getitem__, ops))
    last_old = max(ops.rfind(" "), ops.rfind("-"))
    hunk = Hunk(
        ops,
        tuple([row[1:] for row in rows]),
        header.strip(),
        number,
        old_start=old_start if old_count else old_start + 1,
        end_of_file=last_old in marks,
        no_newline=frozenset(marks),
        endings=endings,
    )
    return hunk, end


def _body_end(ops: str, start: int, old_count: int, new_count: int) -> int | None:
    """Where a hunk body starting at line ``start`` ends, read by the header's counts
    (markers after its last line not included); None when the body is not well formed.

    Each line counts at most once towards each side, so the body is at least as many
    lines longer as the side furthest from its count lacks: stepping by that lands
    on the first line where both counts are reached, counting characters in C.
    """
    end = start + max(old_count, new_count)
    while end <= len(ops):
        context = ops.count(" ", start, end)
        old_seen = context + ops.count("-", start, end)
        new_seen = context + ops.count("+", start, end)
        lacking = max(old_count - old_seen, new_count - new_seen)
        if lacking > 0:
            end += lacking
            continue
        valid = old_seen + new_seen - context + ops.count("\\", start, end) == end - start
        if old_seen != old_count or new_seen != new_count or not valid:
            return None
        if end > start and ops[start] == "\\":
            return None
        return end
    return None


def _body_error(reader: _Reader, index: int, old_count: int, new_count: int) -> ToolError:
    """The error a body that ``_body_end`` found not well formed gets: its lines read
    one by one to find the first that goes wrong."""
    lines, number = reader.lines, reader.first + index
    header = lines[index].strip()
    old_seen = new_seen = 0
    seen_any = False
    index += 1
    while old_seen < old_count or new_seen < new_count:
        at = reader.first + index
        line = lines[index] if index < len(lines) else ""
        op = line[:1] or " "
        if index >= len(lines) or op not in " -+\\":
            where = "the patch ends" if index >= len(lines) else f"line {at} is no hunk line"
            return malformed(
                number,
                f"the hunk {header!r} is cut short ({where}) after {old_seen} of "
                f"{old_count} old and {new_seen} of {new_count} new lines",
                "unified",
            )
        if op == "\\" and not seen_any:
            return malformed(at, _MARKER_FIRST, "unified")
        old_seen += op in " -"
        new_seen += op in " +"
        seen_any = seen_any or op != "\\"
        if old_seen > old_count or new_seen > new_count:
            return malformed(
                at, f"the hunk {header!r} has more lines than its header counts", "unified"
            )
        index += 1
    raise AssertionError("a hunk body _body_end refused reads well line by line")


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
        if any(hunk.ops.strip("+") for hunk in hunks):
            raise malformed(line, f"the new file {path} has context or removed lines", "unified")
        return FilePatch(
            "add", path, hunks=hunks, style="unified", patch_line=line, mode=section.new_mode
        )
    if section.deleted or new_path == DEV_NULL:
        path = _required(old_path if old_path not in (None, DEV_NULL) else git_old, line)
        if any("+" in hunk.ops for hunk in hunks):
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
