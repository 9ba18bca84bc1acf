"""A stdio MCP server exposing the file tools: ``tinyagent-fs mcp --root DIR``.

Every ``tools/call`` goes through ``FileTools.call``, so an MCP client gets the
same guard, sandbox, review and audit as any other caller. Tools are announced
with our JSON schemas and with MCP's hints derived from each tool's risk.

Approval: with the risk-based policy (the default), a change is put to the person
through the client's *elicitation* support, when the client has it. A client on
a handshake-era protocol (2025-11-25 and earlier) is sent an
``elicitation/create`` request in the middle of the call; a client on
2026-07-28 is answered with an ``InputRequiredResult`` carrying the question,
and retries the call with the answer, which is then matched to the re-planned
change (a change that differs from what the person saw is asked about again).
A client without elicitation gets the policy's refusal, with a hint to start
the server with ``--policy auto-approve`` if changes should go through unasked.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import hashlib
import json
import sys
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from .. import __version__
from ..audit import AuditLog
from ..display_safe import visible
from ..hooks.decision import Decision, ToolCall
from ..hooks.policies import policy_from_name
from ..policy import SandboxPolicy
from ..providers import make_provider
from ..tools.facade import FileTools
from ..tools.result import ToolResult
from ..tools.schema_export import portable_schema
from ..tools.spec import ToolSpec

SERVER_NAME = "tinyagent-fs"
USAGE_ERROR = 2
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


@dataclass
class ClientRequest:
    """The ``tools/call`` being served, as the approver needs to see it.

    ``pending`` collects the questions a 2026-07-28 client must answer before the
    call can go on; the server returns them as an ``InputRequiredResult``.
    """

    session: Any
    request_id: Any
    input_responses: dict[str, Any]
    pending: dict[str, types.ElicitRequest] = field(default_factory=dict)


_CURRENT: ContextVar[ClientRequest | None] = ContextVar("tinyagent_fs_mcp_request", default=None)


def supports_form_elicitation(capabilities: types.ClientCapabilities | None) -> bool:
    """An elicitation capability with neither mode named means form (the 2025-06-18 shape)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    return elicitation.form is not None or elicitation.url is None


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


def decision_from_answer(answer: Any) -> Decision:
    """An ``ElicitResult`` (or its JSON) as a hook decision."""
    if isinstance(answer, dict):
        action, content = answer.get("action"), answer.get("content")
    else:
        action, content = getattr(answer, "action", None), getattr(answer, "content", None)
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
        request = _CURRENT.get()
        if request is None or not supports_form_elicitation(request.session.client_capabilities):
            return Decision.deny(
                f"{call.tool} needs a person's approval ({call.risk.value}); {NO_ELICITATION}",
                decided_by=DECIDED_BY,
            )
        key = question_key(call)
        if key in request.input_responses:
            return decision_from_answer(request.input_responses[key])
        message = approval_message(call)
        if request.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            request.pending[key] = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=message, requested_schema=copy.deepcopy(APPROVAL_SCHEMA)
                )
            )
            return Decision.alternative(AWAITING, decided_by=DECIDED_BY)
        if not request.session.can_send_request:
            return Decision.deny(
                f"{call.tool} needs a person's approval, and this connection cannot carry "
                "the question to the client",
                DECIDED_BY,
            )
        try:
            answer = await request.session.elicit_form(
                message, copy.deepcopy(APPROVAL_SCHEMA), related_request_id=request.request_id
            )
        except Exception as exc:  # the client failed to ask: nobody approved
            return Decision.deny(
                f"the approval request failed ({type(exc).__name__}: {exc})", DECIDED_BY
            )
        return decision_from_answer(answer)


ADDS_ONLY = frozenset({"create_directory"})
"""Changing tools that can only add: everything else that changes may overwrite or remove."""

RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean", "description": "Whether the call did what was asked."},
        "data": {"type": "object", "description": "The tool's result for programs."},
        "error": {
            "type": "object",
            "description": "Present only when ok is false.",
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "hint": {"type": "string"},
                "security_violation": {"type": "boolean"},
            },
            "required": ["code", "message"],
        },
    },
    "required": ["ok", "data"],
}


def tool_annotations(spec: ToolSpec) -> types.ToolAnnotations:
    """MCP's hints: a client that trusts them must never auto-run something that overwrites."""
    return types.ToolAnnotations(
        title=spec.title,
        read_only_hint=spec.read_only,
        destructive_hint=not spec.read_only and spec.name not in ADDS_ONLY,
        idempotent_hint=spec.idempotent,
        open_world_hint=False,
    )


def mcp_tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=portable_schema(spec.parameters),
        output_schema=copy.deepcopy(RESULT_SCHEMA),
        annotations=tool_annotations(spec),
    )


def call_result(result: ToolResult) -> types.CallToolResult:
    """``text`` for the model; ok, data and (on failure) error for programs, per RESULT_SCHEMA."""
    structured: dict[str, Any] = {"ok": result.ok, "data": result.data}
    if result.error is not None:
        structured["error"] = result.error.to_dict()
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.text)],
        structured_content=structured,
        is_error=not result.ok,
    )


BUDGET_ROUND_S = 60.0


def build_server(fs: FileTools) -> Server[Any]:
    """A low-level MCP server whose tools are ``fs``'s tools.

    MCP has no turns, so the per-round budget becomes a per-minute one: it stops a
    runaway client without locking out a long session.
    """
    tools = [mcp_tool(spec) for spec in fs.tools.values()]
    round_started = time.monotonic()

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        nonlocal round_started
        if time.monotonic() - round_started >= BUDGET_ROUND_S:
            fs.new_round()
            round_started = time.monotonic()
        request = ClientRequest(ctx.session, ctx.request_id, dict(params.input_responses or {}))
        token = _CURRENT.set(request)
        try:
            result = await fs.call(params.name, params.arguments or {})
        finally:
            _CURRENT.reset(token)
        if request.pending:
            return types.InputRequiredResult(input_requests=dict(request.pending))
        return call_result(result)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=(
            f"File tools for the project folder {fs.root}. Paths are relative to it; "
            "nothing outside it can be read or written. Changes may need a person's "
            "approval; a denied call says why: do not retry it unchanged."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(fs: FileTools) -> None:
    """Serve ``fs`` over stdin/stdout until the client closes the connection."""
    server = build_server(fs)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await fs.close()


def main(
    root: str,
    policy: str | None = None,
    provider: str = "auto",
    audit_dir: str | None = None,
    *,
    max_requests_per_minute: int = SandboxPolicy.max_requests_per_round,
    max_bytes_per_minute: int = SandboxPolicy.max_bytes_per_round,
) -> int:
    """What ``tinyagent-fs mcp`` runs: build the toolkit, then serve it until stdin closes.

    The per-minute budgets (0 = off) are the toolkit's per-round ones, since the
    server starts a new round every minute.
    """
    if max_requests_per_minute < 0 or max_bytes_per_minute < 0:
        print("tinyagent-fs mcp: per-minute limits must be 0 (off) or more", file=sys.stderr)
        return USAGE_ERROR
    try:
        hook = policy_from_name(policy, approver=ElicitationApprover())
        limits = SandboxPolicy(
            max_requests_per_round=max_requests_per_minute,
            max_bytes_per_round=max_bytes_per_minute,
        )
        fs = FileTools(
            root,
            limits,
            provider=make_provider(provider, root, limits),
            hooks=[hook],
            audit=AuditLog(audit_dir),
        )
    except Exception as exc:  # a bad root, policy or provider: say so and stop
        print(f"tinyagent-fs mcp: {exc}", file=sys.stderr)
        return USAGE_ERROR
    # Everything imported so far lives until exit: freezing it keeps the collector
    # from walking the SDK's objects on every pass and at interpreter shutdown,
    # which took ~250 ms of each client's disconnect (bench/bench_mcp.py).
    gc.freeze()
    asyncio.run(serve_stdio(fs))
    return 0
