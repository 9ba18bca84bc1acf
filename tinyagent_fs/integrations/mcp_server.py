"""A stdio MCP server exposing the file tools: ``tinyagent-fs mcp --root DIR [--root DIR2 ...]``.

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
import contextlib
import gc
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..audit import AuditEvent, AuditLog, summarise_arguments
from ..errors import ErrorCode, ToolError
from ..hooks.policies import policy_from_name
from ..limits import ResourceLimiter
from ..policy import SandboxPolicy
from ..providers import make_provider
from ..providers.base import Provider
from ..tools.facade import FileTools
from ..tools.registry import tool_table
from ..tools.result import ToolResult
from .mcp_approval import CURRENT_REQUEST, ClientRequest, ElicitationApprover
from .mcp_protocol import (
    MODERN_VERSIONS,
    initialize_refused_on_modern,
    modern_result,
    negotiate,
    opens_modern_era,
    read_envelope,
    supports_roots,
)
from .mcp_provider import OneCallAtATime
from .mcp_roots import ServedRoots, path_arguments
from .mcp_tools import LIST_ROOTS_TOOL, call_result, tool_list
from .mcp_wire import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    JsonRpcConnection,
    JsonRpcError,
    Request,
    StdioLines,
    Work,
)

SERVER_NAME = "tinyagent-fs"
USAGE_ERROR = 2
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
        self, roots: ServedRoots, limiter: ResourceLimiter, audit: AuditLog | None
    ) -> None:
        self.roots = roots
        self.limiter = limiter
        self.audit = audit
        self.specs = tool_table()
        self.tools = tool_list(self.specs.values())
        self.instructions = instructions(roots.configured)
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
        if modern and supports_roots(client.client_capabilities):
            question = self._take_modern_roots(client.input_responses)
            if question is not None:
                return modern_result(question, SERVER_INFO)
        elif self._roots_update is not None:
            await asyncio.shield(self._roots_update)
        if name == LIST_ROOTS_TOOL:
            result = self._list_roots(arguments)
        else:
            result = await self._run_tool(name, arguments, client)
        if client.pending:
            return modern_result(
                {"inputRequests": client.pending, "resultType": "input_required"}, SERVER_INFO
            )
        shaped = call_result(result)
        return modern_result(shaped, SERVER_INFO) if modern else shaped

    async def _run_tool(
        self, name: str, arguments: dict[str, Any], client: ClientRequest
    ) -> ToolResult:
        try:
            toolkit = self.roots.toolkit_for(name, arguments)
        except ToolError as error:
            self._record_refusal(name, arguments, error)
            return ToolResult.failure(error)
        token = CURRENT_REQUEST.set(client)
        try:
            return await toolkit.call(name, arguments)
        finally:
            CURRENT_REQUEST.reset(token)

    def _list_roots(self, arguments: dict[str, Any]) -> ToolResult:
        if arguments:
            return ToolResult.failure(
                ToolError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{LIST_ROOTS_TOOL} takes no arguments; got {', '.join(map(str, arguments))}",
                    "call it with {}",
                )
            )
        return ToolResult.success(self.roots.describe(), {"roots": list(self.roots.served)})

    def _record_refusal(self, name: str, arguments: dict[str, Any], error: ToolError) -> None:
        """A call refused before any toolkit saw it is audited like one a guard refused."""
        if self.audit is None:
            return
        self.audit.record(
            AuditEvent(
                tool=name,
                arguments=summarise_arguments(arguments),
                paths=path_arguments(arguments),
                root=self.roots.served[0] if self.roots.served else "",
                outcome="error",
                error_code=error.code.value,
                security_violation=error.security_violation,
                message=f"Error [{error.code.value}]: {error.message}"[:200],
                provider=self.roots.toolkits[0].provider.name,
            )
        )

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
        self._apply_roots(answer)

    def _take_modern_roots(self, answers: dict[str, Any]) -> dict[str, Any] | None:
        """Apply a roots answer, or return the question when none was ever given."""
        if ROOTS_QUESTION in answers:
            self._apply_roots(answers[ROOTS_QUESTION])
            self._modern_roots_known = True
        if self._modern_roots_known:
            return None
        question = {"method": "roots/list"}
        return {"inputRequests": {ROOTS_QUESTION: question}, "resultType": "input_required"}

    def _apply_roots(self, answer: Any) -> None:
        roots = answer.get("roots") if isinstance(answer, dict) else None
        if not isinstance(roots, list):
            print("tinyagent-fs mcp: the client's roots answer has no list", file=sys.stderr)
            return
        self.roots.narrow_to([r.get("uri") for r in roots if isinstance(r, dict)])


async def serve_stdio(server: McpServer) -> None:
    """Serve over stdin/stdout until the client closes stdin or SIGTERM arrives.

    On end of input, calls still running finish and are answered; on a signal,
    reads and commands are stopped and only changes under way finish.
    """
    lines = StdioLines()
    connection = JsonRpcConnection(lines.write, server.on_request, server.on_notification)
    server.connection = connection
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await lines.start(connection.feed, connection.eof)
        ended = [
            asyncio.ensure_future(connection.closed.wait()),
            asyncio.ensure_future(stop.wait()),
        ]
        await asyncio.wait(ended, return_when=asyncio.FIRST_COMPLETED)
        for waiter in ended:
            waiter.cancel()
        await connection.shut_down(interrupt=stop.is_set())
        await lines.flush()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        lines.close()


def main(
    roots: Sequence[str],
    policy: str | None = None,
    provider: str = "auto",
    audit_dir: str | None = None,
    *,
    max_requests_per_minute: int = SandboxPolicy.max_requests_per_round,
    max_bytes_per_minute: int = SandboxPolicy.max_bytes_per_round,
) -> int:
    """What ``tinyagent-fs mcp`` runs: build the toolkits, then serve them until stdin closes.

    Every root is served by one provider (one sandbox worker whose writable
    roots are all of them); the per-minute budgets (0 = off) are shared.
    """
    if max_requests_per_minute < 0 or max_bytes_per_minute < 0:
        print("tinyagent-fs mcp: per-minute limits must be 0 (off) or more", file=sys.stderr)
        return USAGE_ERROR
    folders = [Path(root) for root in roots] or [Path(".")]
    missing = [str(folder) for folder in folders if not folder.is_dir()]
    if missing:
        print(f"tinyagent-fs mcp: not an existing directory: {', '.join(missing)}", file=sys.stderr)
        return USAGE_ERROR
    limits = SandboxPolicy(
        max_requests_per_round=max_requests_per_minute,
        max_bytes_per_round=max_bytes_per_minute,
        extra_writable_dirs=tuple(folder.resolve() for folder in folders[1:]),
    )
    try:
        shared = make_provider(provider, folders[0], limits)
    except Exception as exc:  # no such provider, or no sandbox where one is required
        print(f"tinyagent-fs mcp: {exc}", file=sys.stderr)
        return USAGE_ERROR
    if shared.kernel_enforced:  # one sandbox worker: it serves one primitive at a time anyway
        shared = OneCallAtATime(shared)
    try:
        server = _server(folders, limits, shared, policy, audit_dir)
    except Exception as exc:  # a bad root or policy: say so and stop
        print(f"tinyagent-fs mcp: {exc}", file=sys.stderr)
        asyncio.run(shared.close())
        return USAGE_ERROR
    # Everything made so far lives until exit: freezing it keeps the collector
    # from walking it on every pass and at interpreter shutdown.
    gc.freeze()
    asyncio.run(_serve_then_close(server, shared))
    return 0


def _server(
    folders: Sequence[Path],
    limits: SandboxPolicy,
    provider: Provider,
    policy: str | None,
    audit_dir: str | None,
) -> McpServer:
    hook = policy_from_name(policy, approver=ElicitationApprover())
    audit = AuditLog(audit_dir)
    limiter = ResourceLimiter(limits.max_requests_per_round, limits.max_bytes_per_round)

    def toolkit(folder: Path) -> FileTools:
        return FileTools(folder, limits, provider, [hook], audit, limiter=limiter)

    return McpServer(ServedRoots(folders, toolkit), limiter, audit)


async def _serve_then_close(server: McpServer, provider: Provider) -> None:
    try:
        await serve_stdio(server)
    finally:
        with contextlib.suppress(Exception):
            await provider.close()
