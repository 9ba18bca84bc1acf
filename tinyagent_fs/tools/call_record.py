"""What a reviewed call leaves behind, the same from every entry point: its audit
event, and the texts that tell the model a call was denied or changed by a person.

The pipeline, ``wrap_tool``, the TinyAgent hook and the MCP server's refusals each
describe a finished call as a ``CallOutcome``; only :func:`audit_event` turns one
into the record the log, the sidebar and the schema agree on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..audit.log import AuditEvent, summarise_arguments
from ..changes.changeset import ChangeSet
from ..hooks.decision import Decision
from ..hooks.runner import Review

MESSAGE_CHARS = 200
"""How much of a result's first line an audit event keeps."""
DENIAL_HINT = "do not retry the same call; ask the person or take another approach"
SHOWN_CHANGE_CHARS = 4000
"""How much of what ran instead a modification note shows the model."""


@dataclass
class CallOutcome:
    """A finished call as an entry point knows it."""

    tool: str
    arguments: Mapping[str, Any]
    started: float
    """``time.perf_counter()`` when the call arrived."""
    provider: str
    root: str = ""
    session_id: str = ""
    decision: Decision | None = None
    outcome: str = "ok"
    """``ok``, ``error`` or ``denied``."""
    message: str = ""
    error_code: str | None = None
    security_violation: bool = False
    paths: Sequence[str] = ()
    abs_paths: Sequence[str] = ()
    changeset: ChangeSet | None = None
    committed: bool = False
    bytes_read: int = 0
    bytes_written: int = 0


def audit_event(call: CallOutcome) -> AuditEvent:
    """The one audit event of a finished call."""
    changeset = call.changeset
    added, removed = changeset.line_counts() if changeset is not None else (0, 0)
    decision = call.decision
    event = AuditEvent(
        tool=call.tool,
        arguments=summarise_arguments(dict(call.arguments)),
        paths=list(call.paths),
        abs_paths=list(call.abs_paths),
        root=call.root,
        decision=decision.verdict.value if decision is not None else "none",
        decided_by=decision.decided_by if decision is not None else "",
        outcome=call.outcome,
        error_code=call.error_code,
        security_violation=call.security_violation,
        bytes_read=call.bytes_read,
        bytes_written=call.bytes_written,
        lines_added=added if call.committed else 0,
        lines_removed=removed if call.committed else 0,
        duration_ms=round((time.perf_counter() - call.started) * 1000, 3),
        change_id=changeset.change_id if changeset is not None and call.committed else None,
        diff=changeset.unified_diff() if changeset is not None else None,
        message=_first_line(call.message, MESSAGE_CHARS),
        provider=call.provider,
    )
    if call.session_id:
        event.session_id = call.session_id
    return event


def denial_reason(decision: Decision) -> str:
    return decision.message or f"the call was denied by {decision.decided_by}"


def denial_text(decision: Decision) -> str:
    """What the model reads for a denied call where a tool result is plain text."""
    return f"Denied: {denial_reason(decision)}. {DENIAL_HINT[0].upper()}{DENIAL_HINT[1:]}."


def modification_note(review: Review) -> str:
    """Tell the model that a person changed its call, and what ran instead."""
    who = ", ".join(sorted({m.decided_by for m in review.modified_by}))
    notes = "; ".join(m.message for m in review.modified_by if m.message)
    note = f"Note: {who} modified this call before it ran" + (f" ({notes})" if notes else "")
    if review.call.changeset is not None:
        shown = review.call.changeset.unified_diff()[:SHOWN_CHANGE_CHARS]
        return f"{note}. What was applied:\n{shown}"
    ran = json.dumps(review.call.args, ensure_ascii=False, default=str)[:SHOWN_CHANGE_CHARS]
    return f"{note}. The arguments that ran: {ran}"


def _first_line(text: str, limit: int) -> str:
    """The start of ``text``'s first line, at most ``limit`` characters, without
    splitting a whole file's worth of output to find it."""
    lines = text[: limit + 1].splitlines()
    return lines[0][:limit] if lines else ""
