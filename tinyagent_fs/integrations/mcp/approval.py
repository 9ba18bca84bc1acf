"""Approval of changes by the person behind the MCP client, through *elicitation*.

With the risk-based policy (the default) a change is put to the person when the
client can ask one. A handshake-era client (2025-11-25 and earlier) is sent an
``elicitation/create`` request in the middle of the call; a 2026-07-28 client
is answered ``input_required`` with the question, and retries the call with the
answer, which is then matched to the re-planned change (a change that differs
from what the person saw is asked about again). A client without elicitation
gets the policy's refusal, with a hint to start the server with
``--policy auto-approve`` if changes should go through unasked.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ...hooks.decision import Decision, ToolCall
from ...text.display_safe import visible
from .protocol import supports_form_elicitation

DECIDED_BY = "mcp-elicitation"
DIFF_CHARS = 6000
AWAITING = "Waiting for the person to answer the approval request sent to the MCP client."
NO_ELICITATION = (
    "this MCP client cannot ask a person (it does not support elicitation); "
    "start the server with --policy auto-approve to let changes through unasked"
)

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Let the agent make this change.",
            "default": False,
        },
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "Optional: what the agent is told when you do not approve.",
        },
    },
    "required": ["approve"],
}

Ask = Callable[[str, dict[str, Any]], Awaitable[Any]]


@dataclass
class ClientRequest:
    """The ``tools/call`` being served, as the approver needs to see it.

    ``ask`` sends a request to the client mid-call (handshake era); None where
    the server may not (2026-07-28), where ``pending`` collects the questions
    instead, returned to the client as ``inputRequests``.
    """

    client_capabilities: dict[str, Any]
    input_responses: dict[str, Any]
    ask: Ask | None
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)


CURRENT_REQUEST: ContextVar[ClientRequest | None] = ContextVar(
    "tinyagent_fs_mcp_request", default=None
)


def approval_message(call: ToolCall) -> str:
    if call.changeset is not None:
        paths = ", ".join(call.changeset.relative_paths()) or "the project"
        added, removed = call.changeset.line_counts()
        diff = call.diff
        if len(diff) > DIFF_CHARS:
            diff = diff[:DIFF_CHARS] + f"\n[... diff cut at {DIFF_CHARS} characters]"
        head = (
            f"The agent wants to run {call.tool} on {visible(paths)} (+{added} -{removed} lines)."
        )
        return f"{head}\n\n{visible(diff, keep_newlines=True)}\nApprove this change?"
    shown = visible(
        json.dumps(call.args, ensure_ascii=False, indent=2, default=str), keep_newlines=True
    )
    return f"The agent wants to run {call.tool} ({call.risk.value}) with:\n{shown}\nApprove?"


def question_key(call: ToolCall) -> str:
    """Names one question; a re-planned change with other content gets another name."""
    digest = hashlib.sha256(
        json.dumps([call.tool, call.args, call.diff], sort_keys=True, default=str).encode()
    ).hexdigest()
    return f"approve-{digest[:24]}"


def elicitation_params(message: str) -> dict[str, Any]:
    return {"mode": "form", "message": message, "requestedSchema": copy.deepcopy(APPROVAL_SCHEMA)}


def decision_from_answer(answer: Any) -> Decision:
    """An ``ElicitResult`` (as JSON) as a hook decision; anything else is no approval."""
    answer = answer if isinstance(answer, dict) else {}
    action, content = answer.get("action"), answer.get("content")
    content = content if isinstance(content, dict) else {}
    if action == "accept" and content.get("approve") is True:
        return Decision.proceed(decided_by=DECIDED_BY)
    reason = str(content.get("reason") or "").strip()
    if action == "accept":
        return Decision.deny(reason or "the person did not approve this change", DECIDED_BY)
    if action == "decline":
        return Decision.deny(reason or "the person declined this change", DECIDED_BY)
    return Decision.deny("the person dismissed the approval request without deciding", DECIDED_BY)


class ElicitationApprover:
    """The approver a RiskBasedPolicy asks: the person behind the MCP client.

    Used only inside a ``tools/call`` this server is serving; anywhere else, or
    for a client without elicitation, it refuses with a message saying why.
    """

    name = DECIDED_BY

    async def before_tool_execution(self, call: ToolCall) -> Decision:
        request = CURRENT_REQUEST.get()
        if request is None or not supports_form_elicitation(request.client_capabilities):
            return Decision.deny(
                f"{call.tool} needs a person's approval ({call.risk.value}); {NO_ELICITATION}",
                decided_by=DECIDED_BY,
            )
        key = question_key(call)
        if key in request.input_responses:
            return decision_from_answer(request.input_responses[key])
        params = elicitation_params(approval_message(call))
        if request.ask is None:
            request.pending[key] = {"method": "elicitation/create", "params": params}
            return Decision.alternative(AWAITING, decided_by=DECIDED_BY)
        try:
            answer = await request.ask("elicitation/create", params)
        except Exception as exc:  # the client failed to ask: nobody approved
            return Decision.deny(
                f"the approval request failed ({type(exc).__name__}: {exc})", DECIDED_BY
            )
        return decision_from_answer(answer)
