"""Plan: a mutating call's ChangeSet plus how to report it once committed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..changes.changeset import ChangeSet, FileChange
from ..errors import ErrorCode, ToolError
from ..result import ToolResult
from ..text.codec import UTF8_LF, DecodedText, encode_text

Renderer = Callable[[ChangeSet, dict], ToolResult]


@dataclass(frozen=True)
class Plan:
    """``formats`` keeps each file's encoding, BOM and line endings for re-encoding
    content a person edited during review; ``after_commit`` runs once the change is
    on disk (undo uses it to mark what it reverted); ``new_views`` holds, by path,
    the new bytes the plan made and how to tell their decoding, which the read
    state keeps after the commit if review left those very bytes in place."""

    changeset: ChangeSet
    render: Renderer
    formats: dict[Path, DecodedText] = field(default_factory=dict)
    after_commit: Callable[[ChangeSet], None] | None = None
    new_views: dict[Path, tuple[bytes, Callable[[], DecodedText | None]]] = field(
        default_factory=dict
    )

    def new_view(self, change: FileChange) -> DecodedText | None:
        """The decoding of ``change``'s new bytes, if this plan made those bytes (and
        can tell it cheaply)."""
        made = self.new_views.get(change.path)
        return made[1]() if made is not None and made[0] is change.new_bytes else None

    def with_content(self, edited: dict[str, str], root: Path) -> Plan:
        """The same plan with new text for the named files (paths relative to root)."""
        by_path = {root / rel: text for rel, text in edited.items()}
        changes: list[FileChange] = []
        for change in self.changeset.changes:
            target = change.dest if change.dest is not None else change.path
            if target not in by_path:
                changes.append(change)
                continue
            if change.new_bytes is None:
                raise ToolError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{target} is being removed; its content cannot be edited",
                )
            text = by_path.pop(target)
            like = self.formats.get(target, UTF8_LF)
            changes.append(replace(change, new_bytes=encode_text(text, like), new_text=text))
        if by_path:
            names = ", ".join(sorted(str(p) for p in by_path))
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"edited content names files that this change does not touch: {names}",
            )
        return replace(self, changeset=self.changeset.with_changes(tuple(changes)))
