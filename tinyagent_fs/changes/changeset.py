"""ChangeSet: what a mutating call will do, planned before anything touches disk.

A ChangeSet is the single object that review, commit, undo and audit share: hooks
read its diff, the provider commits it all-or-nothing, the journal keeps its old
bytes. Paths are absolute and already guarded.
"""

from __future__ import annotations

import functools
import os
import uuid
from dataclasses import dataclass, field, replace
from enum import Enum
from itertools import chain
from pathlib import Path
from typing import Any

from .._runtime.digest import DIRECTORY, content_hash
from ..text.codec import split_lines
from .diff import (
    DIFF_CONTEXT,
    HunkText,
    Opcode,
    hunk_text,
    marked,
    planned_sides,
    text_sides,
    unified_hunks,
)


class ChangeKind(str, Enum):
    CREATE = "create"
    MODIFY = "modify"
    DELETE = "delete"
    MOVE = "move"
    MKDIR = "mkdir"
    RMDIR = "rmdir"


@dataclass(frozen=True)
class PlannedDiff:
    """Hunks a plan built, and the two texts (the very objects) they were built from."""

    old_text: str
    new_text: str
    hunks: HunkText


@dataclass(frozen=True)
class FileChange:
    """One path's change.

    ``old_bytes`` is what the plan was made against (None: the path did not
    exist); ``new_bytes`` is what it becomes (None: it is removed). For a move,
    ``path`` is the source and ``dest`` the destination; ``new_bytes`` is what
    lands at ``dest``.
    """

    kind: ChangeKind
    path: Path
    old_bytes: bytes | None
    new_bytes: bytes | None
    dest: Path | None = None
    dest_old_bytes: bytes | None = None
    mode: int | None = None
    old_text: str | None = None
    new_text: str | None = None
    note: str = ""
    line_opcodes: tuple[Opcode, ...] | None = None
    """How old and new lines align, when the plan knows it already (a patch's hunks
    are the diff): spares diffing the texts again. Used only if it fits them."""
    planned_diff: PlannedDiff | None = field(default=None, repr=False, compare=False)
    """The hunks the plan built already (a patch's, while its old text was split to
    place them), used only for the very texts they were built from."""

    @functools.cached_property
    def old_hash(self) -> str:
        """``content_hash`` of ``old_bytes``, computed once (the commit payload and the
        journal both need it)."""
        return content_hash(self.old_bytes)

    @functools.cached_property
    def new_hash(self) -> str:
        """``content_hash`` of ``new_bytes``, computed once (the journal and the read
        state both need it)."""
        return content_hash(self.new_bytes)

    @property
    def expected_hash(self) -> str:
        if self.kind is ChangeKind.RMDIR:
            return DIRECTORY
        return self.old_hash

    @functools.cached_property
    def dest_expected_hash(self) -> str:
        """``content_hash`` of ``dest_old_bytes``, computed once (the commit payload
        and the journal both need it)."""
        return content_hash(self.dest_old_bytes)

    @functools.cached_property
    def _hunks(self) -> HunkText | None:
        """The diff's hunks, computed once (reviews, results and audit all show it);
        None when either side is not text."""
        old_text = display_text(self.old_bytes, self.old_text)
        new_text = display_text(self.new_bytes, self.new_text)
        if old_text is None or new_text is None:
            return None
        planned = self.planned_diff
        if planned is not None and planned.old_text is old_text and planned.new_text is new_text:
            return planned.hunks
        if self.line_opcodes is not None:
            sides = planned_sides(split_lines(old_text), new_text, self.line_opcodes)
            if sides is not None:
                return hunk_text(list(self.line_opcodes), *sides, DIFF_CONTEXT)
        if old_text == new_text:
            return HunkText("", 0, 0)
        return hunk_text(*text_sides(old_text, new_text, DIFF_CONTEXT), DIFF_CONTEXT)

    def line_counts(self) -> tuple[int, int]:
        """(+added, -removed) lines of this change's diff."""
        hunks = self._hunks
        return (0, 0) if hunks is None else (hunks.added, hunks.removed)

    def diff_lines(self, root: Path | None) -> list[str]:
        def show(p: Path) -> str:
            return p.as_posix() if root is None else relative_path(p, root)

        if self.kind is ChangeKind.MKDIR:
            return [f"new directory {show(self.path)}/\n"]
        if self.kind is ChangeKind.RMDIR:
            return [f"deleted directory {show(self.path)}/\n"]
        src = show(self.path)
        dst = show(self.dest) if self.dest is not None else src
        header: list[str] = []
        if self.kind is ChangeKind.MOVE:
            header.append(f"rename from {src}\nrename to {dst}\n")
        hunks = self._hunks
        if hunks is None:
            if self.kind is ChangeKind.MOVE and self.old_bytes == self.new_bytes:
                return header
            return [*header, f"Binary files {src} and {dst} differ\n"]
        if not hunks.text:
            return header
        from_name = "/dev/null" if self.old_bytes is None else f"a/{src}"
        to_name = "/dev/null" if self.new_bytes is None else f"b/{dst}"
        return [*header, f"--- {from_name}\n", f"+++ {to_name}\n", hunks.text]


def hunk_lines(old: list[str], new: list[str], context: int = DIFF_CONTEXT) -> list[str]:
    """Unified-diff hunks of two line lists, with git's marker for a missing final newline."""
    return marked(unified_hunks(old, new, context))


def display_text(data: bytes | None, decoded: str | None) -> str | None:
    """The text a diff shows for one side: "" for no file, None when not UTF-8 text."""
    if data is None:
        return ""
    if decoded is not None:
        return decoded
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass(frozen=True)
class ChangeSet:
    """All files of one mutating call: committed together or not at all."""

    tool: str
    changes: tuple[FileChange, ...]
    root: Path
    change_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    summary: str = ""

    def unified_diff(self) -> str:
        return self._diff

    @functools.cached_property
    def _diff(self) -> str:
        """Built once: the review, the result and the audit record all show it (a
        500-file patch need not be diffed twice)."""
        return "".join(chain.from_iterable(c.diff_lines(self.root) for c in self.changes))

    def line_counts(self) -> tuple[int, int]:
        added = removed = 0
        for change in self.changes:
            a, r = change.line_counts()
            added += a
            removed += r
        return added, removed

    def paths(self) -> list[Path]:
        out: list[Path] = []
        for change in self.changes:
            out.append(change.path)
            if change.dest is not None:
                out.append(change.dest)
        return out

    def relative_paths(self) -> list[str]:
        return [relative_path(p, self.root) for p in self.paths()]

    def editable_texts(self) -> dict[str, str]:
        """Files whose new content is text, keyed by where that content lands: what a
        person may rewrite before the change is committed (a card, a terminal, a page)."""
        texts: dict[str, str] = {}
        for change in self.changes:
            if change.kind not in (ChangeKind.CREATE, ChangeKind.MODIFY, ChangeKind.MOVE):
                continue
            text = change.new_text
            if text is None and change.new_bytes is not None:
                try:
                    text = change.new_bytes.decode("utf-8")
                except UnicodeDecodeError:
                    continue
            if text is None:
                continue
            target = change.dest if change.dest is not None else change.path
            texts[relative_path(target, self.root)] = text
        return texts

    def with_changes(self, changes: tuple[FileChange, ...]) -> ChangeSet:
        return replace(self, changes=changes)

    def describe(self) -> dict[str, Any]:
        """A JSON-friendly summary for hooks, UIs and the audit log."""
        added, removed = self.line_counts()
        return {
            "change_id": self.change_id,
            "tool": self.tool,
            "files": [
                {
                    "kind": c.kind.value,
                    "path": relative_path(c.path, self.root),
                    "dest": relative_path(c.dest, self.root) if c.dest is not None else None,
                    "added": c.line_counts()[0],
                    "removed": c.line_counts()[1],
                }
                for c in self.changes
            ],
            "added": added,
            "removed": removed,
        }


def relative_path(path: Path, root: Path) -> str:
    """``path`` as shown to people and models: relative to ``root`` when inside it.

    A path whose text starts with the root's and a separator is cut as text (a
    500-file change shows each path several times; ``relative_to`` costs ten times
    more); anything else, Windows' case-blind matches included, goes through
    ``relative_to``."""
    text, base = str(path), str(root)
    if text.startswith(base) and text[len(base) : len(base) + 1] == os.sep:
        return text[len(base) + 1 :].replace(os.sep, "/")
    try:
        return path.relative_to(root).as_posix() or "."
    except ValueError:
        return path.as_posix()
