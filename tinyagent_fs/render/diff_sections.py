"""A ChangeSet's unified diff, split back into one numbered section per file.

The pipeline already computed the diff once (``ToolCall.diff``); difflib on two
large, similar files can take seconds, so the notebook view parses that text
instead of diffing again. Hunk headers carry line counts, which is what tells a
removed line ``-- x`` apart from the next file's ``--- a/x`` header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..changes.changeset import ChangeSet

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ENDS_FILE = ("Binary files ", "new directory ", "deleted directory ")


@dataclass(frozen=True)
class DiffLine:
    """``kind`` is hunk, add, del, context, note (``\\ No newline``) or meta."""

    kind: str
    text: str
    old_no: int | None = None
    new_no: int | None = None


@dataclass
class FileDiff:
    lines: list[DiffLine] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    has_body: bool = False
    renamed_from: str = ""
    names: list[str] = field(default_factory=list)
    """The ``--- a/x`` and ``+++ b/x`` names, for a diff that is all we have (audit log)."""

    def append(self, line: DiffLine) -> None:
        self.lines.append(line)
        if line.kind == "add":
            self.added += 1
        elif line.kind == "del":
            self.removed += 1


def split_file_diffs(diff: str) -> list[FileDiff]:
    """Sections in the order the diff names the files (one per FileChange)."""
    files: list[FileDiff] = []
    old_left = new_left = 0
    old_no = new_no = 0
    previous = ""
    for line in diff.split("\n")[:-1] if diff.endswith("\n") else diff.split("\n"):
        if old_left > 0 or new_left > 0:
            sign, body = line[:1], line[1:]
            if sign == "+":
                files[-1].append(DiffLine("add", body, None, new_no))
                new_no, new_left = new_no + 1, new_left - 1
            elif sign == "-":
                files[-1].append(DiffLine("del", body, old_no, None))
                old_no, old_left = old_no + 1, old_left - 1
            elif sign == "\\":
                files[-1].append(DiffLine("note", line))
            else:
                files[-1].append(DiffLine("context", body, old_no, new_no))
                old_no, new_no = old_no + 1, new_no + 1
                old_left, new_left = old_left - 1, new_left - 1
        elif (hunk := _HUNK.match(line)) and files:
            old_no, new_no = int(hunk.group(1)), int(hunk.group(3))
            old_left = int(hunk.group(2)) if hunk.group(2) is not None else 1
            new_left = int(hunk.group(4)) if hunk.group(4) is not None else 1
            # An empty side is numbered from the line before it ("@@ -0,0 +1,3 @@").
            old_no += old_left == 0
            new_no += new_left == 0
            files[-1].has_body = True
            files[-1].append(DiffLine("hunk", line))
        elif line.startswith("\\") and files:
            files[-1].append(DiffLine("note", line))
        else:
            if _starts_file(line, previous, files):
                files.append(FileDiff())
            if line.startswith(_ENDS_FILE):
                files[-1].has_body = True
            if line.startswith("rename from "):
                files[-1].renamed_from = line[len("rename from ") :]
            if line.startswith(("--- ", "+++ ")):
                files[-1].names.append(line[4:])
            else:
                files[-1].append(DiffLine("meta", line))
        previous = line
    return files


def _starts_file(line: str, previous: str, files: list[FileDiff]) -> bool:
    if not files or files[-1].has_body:
        return True
    if line.startswith("rename from "):
        return True
    if previous.startswith("rename to "):
        # A moved file's own diff starts with its source; anything else is the next file.
        source = files[-1].renamed_from
        return line.startswith("--- ") and line != f"--- a/{source}"
    return line.startswith(("--- ", *_ENDS_FILE)) and not previous.startswith("--- ")


def file_diffs(changeset: ChangeSet, diff: str | None = None) -> list[FileDiff]:
    """One section per change, from ``diff`` when it matches, else diffed per change."""
    if diff:
        sections = split_file_diffs(diff)
        if len(sections) == len(changeset.changes):
            return sections
    return [
        _single(split_file_diffs("".join(change.diff_lines(changeset.root))))
        for change in changeset.changes
    ]


def _single(sections: list[FileDiff]) -> FileDiff:
    merged = FileDiff()
    for section in sections:
        for line in section.lines:
            merged.append(line)
    return merged
