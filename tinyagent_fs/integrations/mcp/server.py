"""The MCP methods of ``tinyagent-fs mcp`` (started by ``mcp_run``).

Every ``tools/call`` goes through ``FileTools.call``, so an MCP client gets the
same guard, sandbox, review and audit as any other caller. Tools are announced
with our JSON schemas and MCP's hints derived from each tool's risk
(``mcp_tools``); changes are put to the person through elicitation
(``mcp_approval``); the folders served are the ``--root`` folders, narrowed by
the client's MCP roots (``mcp_roots``). The protocol (both eras, see
``mcp_protocol``) and the JSON-RPC transport (``mcp_wire``) are our own: the
MCP SDK is used only as a client, by the tests.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Sequence
from typing import Any

from ..._version import __version__
from ...audit.log import AuditLog
from ...errors import ErrorCode, ToolError
from ...limits import ResourceLimiter
from ...result import ToolResult
from ...tools.call_record import CallOutcome, audit_event
from ...tools.registry import tool_table
from .approval import CURRENT_REQUEST, ClientRequest
from .protocol import (
    MODERN_VERSIONS,
    initialize_refused_on_modern,
    modern_result,
    negotiate,
    opens_modern_era,
    read_envelope,
    supports_roots,
)
from .roots import ServedRoots, path_arguments
from .tools import LIST_ROOTS_TOOL, call_result, tool_list
from .wire import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    JsonRpcConnection,
    JsonRpcError,
    Request,
    Work,
)

SERVER_NAME = "tinyagent-fs"
BUDGET_ROUND_S = 60.0
ROOTS_TIMEOUT_S = 10.0
ROOTS_QUESTION = "roots"
"""The key a 2026-07-28 client is asked for its roots under (``inputRequests``)."""
CAPABILITIES = {"tools": {"listChanged": False}}
SERVER_INFO = {"name": SERVER_NAME, "version": __version__}


def invalid_params(why: str) -> JsonRpcError:
    return JsonRpcError(INVALID_PARAMS, "Invalid request parameters", why)


def instructions(roots: Sequence[str]) -> str:
    if len(roots) == 1:
        where = (
            f"File tools for the project folder {roots[0]}. Paths are relative to it; "
            "nothing outside it can be read or written."
        )
    else:
        where = (
            f"File tools for the folders {', '.join(roots)}. Relative paths are resolved "
            f"against {roots[0]}; give absolute paths for the others. Nothing outside "
            "them can be read or written."
        )
    return (
        f"{where} The client's MCP roots can narrow this (list_allowed_directories shows "
        "what is served). Changes may need a person's approval; a denied call says why: "
        "do not retry it unchanged."
    )


class McpServer:
    """The MCP methods, for one client connection in whichever era it opens.

    MCP has no turns, so the per-round budget becomes a per-minute one: it stops
    a runaway client without locking out a long session.
    """

    def __init__(
        self,
        configured: Sequence[str],
        roots: asyncio.Future[ServedRoots],
        limiter: ResourceLimiter,
        audit: AuditLog | None,
    ) -> None:
        """``roots`` may still be in the making (the sandbox probe runs meanwhile):
        only tool calls wait for it, not the handshake or the tool list."""
        self._roots = roots
        self.limiter = limiter
        self.audit = audit
        self.specs = tool_table()
        self.tools = tool_list(self.specs.values())
        self.instructions = instructions(configured)
        self.connection: JsonRpcConnection | None = None
        self.modern: bool | None = None
        """None until the client's first request decides the connection's era."""
        self.accepted = False
        """Whether the handshake-era client has initialized (requests may come before
        notifications/initialized, as the SDK allows)."""
        self.client_capabilities: dict[str, Any] = {}
        self._roots_update: asyncio.Future[None] | None = None
        self._modern_roots_known = False
        self._round_started = time.monotonic()
        self._closing: set[asyncio.Future[None]] = set()
        """Providers of a served set the client's roots replaced, being closed."""

    # --- dispatch ----------------------------------------------------------

    def on_request(self, request: Request) -> dict[str, Any] | Work:
        if self.modern is None:
            self.modern = opens_modern_era(request.method, request.params)
        if self.modern:
            return self._modern_request(request)
        return self._handshake_request(request)

    def on_notification(self, method: str, params: dict[str, Any] | None) -> None:
        if self.modern:
            return  # 2026-07-28 defines no client notifications but cancellation
        if method == "notifications/initialized":
            self.accepted = True
            self._refresh_roots()
        elif method == "notifications/roots/list_changed" and self.accepted:
            self._refresh_roots()

    def _handshake_request(self, request: Request) -> dict[str, Any] | Work:
        method, params = request.method, request.params
        if method == "initialize":
            return self._initialize(params)
        if opens_modern_era(method, params):
            raise JsonRpcError(
                INVALID_REQUEST,
                "this connection serves the handshake protocol era; requests carrying the "
                "2026-07-28 envelope are not accepted on it",
            )
        if method not in ("ping", "tools/list", "tools/call"):
            raise JsonRpcError(METHOD_NOT_FOUND, "Method not found", method)
        if not self.accepted and method != "ping":
            raise invalid_params(f"{method} before initialize")
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": self.tools}
        return self._tools_call(request, self.client_capabilities, modern=False)

    def _modern_request(self, request: Request) -> dict[str, Any] | Work:
        method, params = request.method, request.params
        if method == "initialize":
            raise initialize_refused_on_modern(params)
        envelope = read_envelope(params)
        if method == "server/discover":
            discovered = {
                "supportedVersions": list(MODERN_VERSIONS),
                "capabilities": CAPABILITIES,
                "instructions": self.instructions,
            }
            return modern_result(discovered, SERVER_INFO, cacheable=True)
        if method == "tools/list":
            return modern_result({"tools": self.tools}, SERVER_INFO, cacheable=True)
        if method == "tools/call":
            return self._tools_call(request, envelope.client_capabilities, modern=True)
        raise JsonRpcError(METHOD_NOT_FOUND, "Method not found", method)

    def _initialize(self, params: dict[str, Any] | None) -> dict[str, Any]:
        params = params or {}
        client = params.get("clientInfo")
        capabilities = params.get("capabilities")
        if not isinstance(params.get("protocolVersion"), str):
            raise invalid_params("initialize needs protocolVersion, a string")
        if not isinstance(capabilities, dict):
            raise invalid_params("initialize needs capabilities, an object")
        if not isinstance(client, dict) or not isinstance(client.get("name"), str):
            raise invalid_params("initialize needs clientInfo with a name")
        self.client_capabilities = capabilities
        self.accepted = True
        return {
            "protocolVersion": negotiate(params["protocolVersion"]),
            "capabilities": CAPABILITIES,
            "serverInfo": SERVER_INFO,
            "instructions": self.instructions,
        }

    # --- tools/call --------------------------------------------------------

    def _tools_call(self, request: Request, capabilities: dict[str, Any], *, modern: bool) -> Work:
        params = request.params or {}
        name, arguments = params.get("name"), params.get("arguments")
        answers = params.get("inputResponses") if modern else None
        if not isinstance(name, str):
            raise invalid_params("tools/call needs name, a string")
        if arguments is not None and not isinstance(arguments, dict):
            raise invalid_params("tools/call arguments must be an object")
        if answers is not None and not isinstance(answers, dict):
            raise invalid_params("tools/call inputResponses must be an object")
        connection = self.connection
        assert connection is not None

        async def ask(method: str, question: dict[str, Any]) -> Any:
            return await connection.request(method, question, on_behalf_of=request.id)

        client = ClientRequest(capabilities, answers or {}, None if modern else ask)
        call = self._call(name, arguments or {}, client, modern)
        spec = self.specs.get(name)
        # A change past review finishes atomically when cancelled; reads and commands stop.
        return Work(call, interruptible=spec is None or spec.plan is None)

    async def _call(
        self, name: str, arguments: dict[str, Any], client: ClientRequest, modern: bool
    ) -> dict[str, Any]:
        if time.monotonic() - self._round_started >= BUDGET_ROUND_S:
            self.limiter.reset()
            self._round_started = time.monotonic()
        roots = await asyncio.shield(self._roots)
        if modern and supports_roots(client.client_capabilities):
            question = self._take_modern_roots(roots, client.input_responses)
            if question is not None:
                return modern_result(question, SERVER_INFO)
        elif self._roots_update is not None:
            await asyncio.shield(self._roots_update)
        if name == LIST_ROOTS_TOOL:
            result = self._list_roots(roots, arguments)
        else:
            result = await self._run_tool(roots, name, arguments, client)
        if client.pending:
            return modern_result(
                {"inputRequests": client.pending, "resultType": "input_required"}, SERVER_INFO
            )
        shaped = call_result(result)
        return modern_result(shaped, SERVER_INFO) if modern else shaped

    async def _run_tool(
        self, roots: ServedRoots, name: str, arguments: dict[str, Any], client: ClientRequest
    ) -> ToolResult:
        try:
            toolkit = roots.toolkit_for(name, arguments)
        except ToolError as error:
            message = f"Error [{error.code.value}]: {error.message}"
            self._record(roots, name, arguments, message, error)
            return ToolResult.failure(error)
        token = CURRENT_REQUEST.set(client)
        try:
            return await toolkit.call(name, arguments)
        except asyncio.CancelledError as cancelled:  # the pipeline records only calls that end
            why = "; ".join(map(str, cancelled.args)) or "cancelled before it ended"
            self._record(roots, name, arguments, why)
            raise
        finally:
            CURRENT_REQUEST.reset(token)

    def _list_roots(self, roots: ServedRoots, arguments: dict[str, Any]) -> ToolResult:
        if arguments:
            return ToolResult.failure(
                ToolError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{LIST_ROOTS_TOOL} takes no arguments; got {', '.join(map(str, arguments))}",
                    "call it with {}",
                )
            )
        return ToolResult.success(roots.describe(), {"roots": list(roots.served)})

    def _record(
        self,
        roots: ServedRoots,
        name: str,
        arguments: dict[str, Any],
        message: str,
        error: ToolError | None = None,
    ) -> None:
        """Audit a call no toolkit finished: refused before one saw it, or cancelled."""
        if self.audit is None:
            return
        outcome = CallOutcome(
            tool=name,
            arguments=arguments,
            started=time.perf_counter(),
            provider=roots.provider.name,
            root=roots.served[0] if roots.served else "",
            outcome="error",
            message=message,
            error_code=error.code.value if error else None,
            security_violation=error.security_violation if error else False,
            paths=path_arguments(name, arguments),
        )
        self.audit.record(audit_event(outcome))

    # --- roots -------------------------------------------------------------

    def _refresh_roots(self) -> None:
        """Ask a client that has roots for them; calls wait until the answer is in."""
        if supports_roots(self.client_capabilities) and self.connection is not None:
            self._roots_update = asyncio.ensure_future(self._fetch_roots(self.connection))

    async def _fetch_roots(self, connection: JsonRpcConnection) -> None:
        try:
            answer = await asyncio.wait_for(connection.request("roots/list"), ROOTS_TIMEOUT_S)
        except (JsonRpcError, asyncio.TimeoutError) as exc:
            print(f"tinyagent-fs mcp: the client's roots are unknown ({exc})", file=sys.stderr)
            return
        self._apply_roots(await asyncio.shield(self._roots), answer)

    def _take_modern_roots(
        self, roots: ServedRoots, answers: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Apply a roots answer, or return the question when none was ever given."""
        if ROOTS_QUESTION in answers:
            self._apply_roots(roots, answers[ROOTS_QUESTION])
            self._modern_roots_known = True
        if self._modern_roots_known:
            return None
        question = {"method": "roots/list"}
        return {"inputRequests": {ROOTS_QUESTION: question}, "resultType": "input_required"}

    def _apply_roots(self, roots: ServedRoots, answer: Any) -> None:
        listed = answer.get("roots") if isinstance(answer, dict) else None
        if not isinstance(listed, list):
            print("tinyagent-fs mcp: the client's roots answer has no list", file=sys.stderr)
            return
        old = roots.narrow_to([r.get("uri") for r in listed if isinstance(r, dict)])
        if old is not None:  # its worker's view is wider than what is served now
            closing = asyncio.ensure_future(old.close())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)
