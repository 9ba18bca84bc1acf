"""apply_patch planning: a patch and a way to read files in, every file's new text out.

All files or none: every section is parsed and applied in memory before anything
is returned, so one bad hunk anywhere fails the whole patch and nothing is half
planned. Reading goes through a callback, so this module does no I/O and the tool
layer keeps decoding, guarding and the sandbox to itself.

A move onto an existing file overwrites it, as Codex's apply_patch does; the
caller records the destination's old bytes, so review shows it and a file that
changes before commit is a conflict.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from tinyagent_fs.changes.diff import HunkText, Opcode
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.patch.apply import PatchedText, apply_file_patch, patch_text
from tinyagent_fs.patch.model import FilePatch, Hunk, HunkLine
from tinyagent_fs.patch.parse import ParsedPatch, parse_patch
from tinyagent_fs.text.codec import has_escaped_bytes

__all__ = [
    "FilePatch",
    "Hunk",
    "HunkLine",
    "ParsedPatch",
    "PatchedText",
    "PlannedFile",
    "ReadText",
    "apply_file_patch",
    "parse_patch",
    "patch_text",
    "plan_patch",
]

ReadText = Callable[[str], tuple[str, str] | None]
"""path -> (decoded text, dominant newline), or None when the file does not exist."""


@dataclass(frozen=True)
class PlannedFile:
    """One file's planned change.

    ``kind`` is "add", "delete", "update" or "move"; for a move ``path`` is the
    source, ``dest`` the destination and ``new_text`` what lands there.
    ``old_text`` is the text the plan was made against (None for an add).
    ``notes`` say which hunks matched only with a tolerance.
    """

    kind: str
    path: str
    dest: str | None
    new_text: str | None
    old_text: str | None = None
    notes: tuple[str, ...] = ()
    mode: int | None = None
    alignment: tuple[Opcode, ...] | None = None
    """How old and new lines correspond (see ``PatchedText``)."""
    hunks: HunkText | None = field(default=None, repr=False, compare=False)
    """The review diff's hunks of ``old_text`` and ``new_text`` (see ``PatchedText``)."""


def plan_patch(
    patch: str | ParsedPatch,
    read_text: ReadText,
    encoding_of: Callable[[str], str | None] | None = None,
) -> list[PlannedFile]:
    """Parse (unless the caller already did) and apply every section in memory; any
    ToolError means nothing is planned.

    ``encoding_of`` names a file's encoding: a patch read from bytes that are not
    UTF-8 (``git diff`` of a latin-1 file) carries them as surrogate escapes, which
    are turned into that file's characters before matching.
    """
    parsed = parse_patch(patch) if isinstance(patch, str) else patch
    _refuse_repeated_paths(parsed.files)
    planned: list[PlannedFile] = []
    for fp in parsed.files:
        if encoding_of is not None:
            fp = _in_file_encoding(fp, encoding_of(fp.path))
        current = read_text(fp.path)
        old_text, newline = current if current is not None else (None, "\n")
        outcome = patch_text(fp, old_text, newline)
        dest = fp.move_to if fp.move_to and _same(fp.move_to) != _same(fp.path) else None
        kind = "move" if dest is not None else fp.kind
        planned.append(
            PlannedFile(
                kind,
                fp.path,
                dest,
                outcome.text,
                old_text,
                outcome.notes,
                fp.mode,
                outcome.alignment,
                outcome.hunks,
            )
        )
    return planned


def _in_file_encoding(fp: FilePatch, encoding: str | None) -> FilePatch:
    if encoding is None or encoding.startswith("utf"):
        return fp
    hunks = tuple(
        replace(hunk, texts=tuple(_transcoded(text, encoding) for text in hunk.texts))
        if has_escaped_bytes("\n".join(hunk.texts))
        else hunk
        for hunk in fp.hunks
    )
    return replace(fp, hunks=hunks)


def _transcoded(text: str, encoding: str) -> str:
    """Surrogate-escaped bytes as the characters they are in ``encoding``."""
    if text.isascii() or not has_escaped_bytes(text):  # isascii: a flag, no scan
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode(encoding)
    except (UnicodeEncodeError, UnicodeDecodeError):
        return text


def _same(path: str) -> str:
    return posixpath.normpath(path.replace("\\", "/"))


def _refuse_repeated_paths(files: list[FilePatch]) -> None:
    """One section per path: two sections on one file (or a move onto a path another
    section changes) would make the result depend on their order."""
    seen: dict[str, int] = {}
    for fp in files:
        for path in (fp.path, fp.move_to):
            if path is None:
                continue
            key = _same(path)
            if key in seen and not (path == fp.move_to and key == _same(fp.path)):
                raise ToolError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{path} appears in more than one file section (patch lines {seen[key]} "
                    f"and {fp.patch_line})",
                    "put all changes to one file into a single section",
                    details={"path": path},
                )
            seen[key] = fp.patch_line
