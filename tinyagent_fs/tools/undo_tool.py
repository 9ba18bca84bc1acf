"""undo: revert a committed change as a new, reviewed change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..changes.changeset import ChangeKind, ChangeSet
from ..errors import ErrorCode, ToolError
from ..hooks.decision import Risk
from ..result import ToolResult
from .context import ToolContext
from .plan import Plan
from .restore import changes_back_to_old, check_entry_paths, unchanged_since
from .spec import ToolSpec, schema


async def plan_undo(ctx: ToolContext, args: dict[str, Any]) -> Plan:
    journal = ctx.journal
    if journal is None:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "this toolkit keeps no undo journal")
    wanted = args["change_id"]
    entry = journal.get(wanted) if wanted else journal.last_undoable()
    if entry is None or entry.status != "committed":
        dropped = journal.dropped(wanted) if wanted else None
        if dropped is not None:
            raise ToolError(
                ErrorCode.NOT_FOUND,
                f"change {wanted} can no longer be undone: its old content was {dropped}, "
                f"because {journal.bounds()}",
                "restore it by hand (from version control, say)",
            )
        raise ToolError(
            ErrorCode.NOT_FOUND,
            f"no committed change {wanted!r}" if wanted else "there is no change to undo",
            "change ids are in the data of each mutating tool's result",
        )
    if entry.undone_by is not None:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"change {entry.change_id} was already undone by {entry.undone_by}",
            f"undo {entry.undone_by} to redo it",
        )
    check_entry_paths(ctx, entry)
    for item in entry.files:
        if item.kind in (ChangeKind.MKDIR.value, ChangeKind.RMDIR.value):
            continue
        landed = Path(item.dest or item.path)
        current = await ctx.read_existing(landed)
        unchanged_since(current, item.new_hash, ctx.relative(landed))
    changes = await changes_back_to_old(ctx, entry)
    changeset = ChangeSet("undo", tuple(changes), ctx.root, summary=f"undo {entry.change_id}")
    reverted = entry.change_id

    def render(final: ChangeSet, report: dict[str, Any]) -> ToolResult:
        paths = ", ".join(final.relative_paths()) or "nothing left to change"
        return ToolResult.success(
            f"Reverted change {reverted} ({entry.tool}): {paths}",
            {"reverted": reverted, "paths": final.relative_paths()},
        )

    def mark(final: ChangeSet) -> None:
        journal.mark_undone(reverted, final.change_id)

    return Plan(changeset, render, after_commit=mark)


UNDO_TOOLS = (
    ToolSpec(
        name="undo",
        description=(
            "Revert the last change made through these tools (or the one named by "
            "change_id, found in a mutating tool's result data) byte for byte. The revert is "
            "itself a reviewed change and can be undone. Refused with CONFLICT if a file "
            "changed since: then fix it by hand."
        ),
        parameters=schema(
            {
                "change_id": {
                    "type": ["string", "null"],
                    "description": "Which change to revert; default the latest.",
                    "default": None,
                }
            }
        ),
        risk=Risk.WRITE,
        plan=plan_undo,
        never_trusted="undo always asks (it may delete files), never trusted",
        change_argument="change_id",
    ),
)
