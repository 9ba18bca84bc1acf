"""JSON-RPC 2.0 in newline-delimited JSON, as MCP's stdio transport frames it (the pipes
themselves: ``mcp_stdio``).

Written for this server instead of taking the MCP SDK's, whose import alone took
most of a second of every client's start-up (bench/bench_mcp.py). It is strict
where the SDK was lenient: a line that is not JSON gets a -32700 answer, one
that is not a JSON-RPC request, notification or response a -32600 answer, and
nothing is dropped silently.

Requests are served concurrently: a handler either answers at once (a dict) or
hands back ``Work`` that runs as a task. ``notifications/cancelled`` leaves the
request unanswered; one waiting for the client's answer to a question ends when
the question is withdrawn, any other is interrupted if its work allows (a change
under way finishes atomically instead). Outbound requests (``elicitation/create``,
``roots/list``) are matched to their responses by id.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
CONNECTION_CLOSED = -32000
REQUEST_CANCELLED = -32800
UNSUPPORTED_PROTOCOL_VERSION = -32022

CANCELLED_BY_CLIENT = "cancelled by the client before it ended"
CANCELLED_BY_SHUTDOWN = "stopped with the server before it ended"
"""Why a request's task was cancelled: the message its CancelledError carries."""

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""Longest line read: a 10 MB write_file is ~20 MB of escaped JSON; this only stops a runaway."""

RequestId = str | int


class JsonRpcError(Exception):
    """An error answer: raised by a handler, or by ``request`` when the client answered one."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


@dataclass
class Request:
    id: RequestId
    method: str
    params: dict[str, Any] | None


@dataclass
class Work:
    """An answer that takes time; ``interruptible`` says cancelling may stop it midway."""

    run: Coroutine[Any, Any, dict[str, Any]]
    interruptible: bool = True


RequestHandler = Callable[[Request], "dict[str, Any] | Work"]
NotificationHandler = Callable[[str, "dict[str, Any] | None"], None]


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_COMPACT_ASCII = json.JSONEncoder(separators=(",", ":"))


def encode(message: dict[str, Any]) -> bytes:
    """One line of JSON; text that holds lone surrogates is sent \\u-escaped."""
    try:
        return _COMPACT.encode(message).encode() + b"\n"
    except UnicodeEncodeError:
        return _COMPACT_ASCII.encode(message).encode() + b"\n"


class JsonRpcConnection:
    """One client: splits lines, dispatches them, answers, and asks the client things."""

    def __init__(
        self,
        write: Callable[[bytes], None],
        on_request: RequestHandler,
        on_notification: NotificationHandler,
        *,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self._write = write
        self._max_message_bytes = max_message_bytes
        self._on_request = on_request
        self._on_notification = on_notification
        self._buffer = bytearray()
        self._skipping = False
        self._running: dict[RequestId, tuple[asyncio.Task[None], bool]] = {}
        self._unanswered: set[RequestId] = set()
        self._asked: dict[RequestId, tuple[asyncio.Future[Any], RequestId | None]] = {}
        self._next_id = 0
        self.closed = asyncio.Event()

    # --- inbound -----------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Take bytes from the wire; every complete line is handled before this returns."""
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            if self._buffer or self._skipping:
                self._buffer += data[start:end]
                line = bytes(self._buffer)
                self._buffer.clear()
                skipped, self._skipping = self._skipping, False
                if not skipped:
                    self._line(line)
            else:
                self._line(data[start:end])
            start = end + 1
        if start < len(data) and not self._skipping:
            self._buffer += data[start:]
            if len(self._buffer) > self._max_message_bytes:
                self._buffer.clear()
                self._skipping = True
                too_long = f"a message longer than {self._max_message_bytes} bytes"
                self._send_error(None, INVALID_REQUEST, "Invalid request", too_long)

    def eof(self) -> None:
        if self._buffer.strip():
            self._line(bytes(self._buffer))
        self._buffer.clear()
        self.closed.set()

    def _line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # too deeply nested
            self._send_error(None, PARSE_ERROR, "Parse error", str(exc))
            return
        if not isinstance(message, dict):
            why = "batches are not supported" if isinstance(message, list) else "not an object"
            self._send_error(None, INVALID_REQUEST, "Invalid request", why)
            return
        self._message(message)

    def _message(self, message: dict[str, Any]) -> None:
        has_id = "id" in message
        ident = message.get("id")
        valid_id = isinstance(ident, (str, int)) and not isinstance(ident, bool)
        reply_to = ident if valid_id else None
        if message.get("jsonrpc") != "2.0":
            self._send_error(reply_to, INVALID_REQUEST, "Invalid request", 'jsonrpc must be "2.0"')
            return
        method = message.get("method")
        if method is None and ("result" in message or "error" in message):
            self._answer_received(ident, message)
            return
        if not isinstance(method, str):
            self._send_error(
                reply_to, INVALID_REQUEST, "Invalid request", "method must be a string"
            )
            return
        params = message.get("params")
        if has_id and not valid_id:
            self._send_error(
                None, INVALID_REQUEST, "Invalid request", "id must be a string or integer"
            )
            return
        if params is not None and not isinstance(params, dict):
            if has_id:
                self._send_error(
                    ident, INVALID_PARAMS, "Invalid params", "params must be an object"
                )
            return
        if not has_id:
            self._notification(method, params)
            return
        self._request(Request(ident, method, params))

    def _request(self, request: Request) -> None:
        if request.id in self._running:
            self._send_error(request.id, INVALID_REQUEST, "Invalid request", "id already in use")
            return
        try:
            answer = self._on_request(request)
        except JsonRpcError as error:
            self._send({"jsonrpc": "2.0", "id": request.id, "error": error.to_dict()})
            return
        except Exception as exc:  # a bug in a handler: answer, and lose no later line
            self._send({"jsonrpc": "2.0", "id": request.id, "error": _internal(repr(exc))})
            return
        if isinstance(answer, Work):
            task = asyncio.ensure_future(self._finish(request.id, answer.run))
            self._running[request.id] = (task, answer.interruptible)
        else:
            self._send_result(request.id, answer)

    async def _finish(self, ident: RequestId, work: Awaitable[dict[str, Any]]) -> None:
        try:
            result = await work
        except JsonRpcError as error:
            self._answer(ident, {"jsonrpc": "2.0", "id": ident, "error": error.to_dict()})
        except asyncio.CancelledError:
            self._answer(ident, None)
        except Exception as exc:  # a bug in a handler: say so rather than hang the client
            message = f"{type(exc).__name__}: {exc}"
            self._answer(ident, {"jsonrpc": "2.0", "id": ident, "error": _internal(message)})
        else:
            self._answer(ident, {"jsonrpc": "2.0", "id": ident, "result": result})

    def _answer(self, ident: RequestId, message: dict[str, Any] | None) -> None:
        self._running.pop(ident, None)
        if ident in self._unanswered:
            self._unanswered.discard(ident)
        elif message is not None:
            self._send(message)

    def _notification(self, method: str, params: dict[str, Any] | None) -> None:
        if method == "notifications/cancelled":
            self._cancel((params or {}).get("requestId"))
            return
        self._on_notification(method, params)

    def _cancel(self, ident: Any) -> None:
        """The client gave up on ``ident``: never answer it, and end it soon.

        A request waiting for the client's answer to a question ends when the
        question is withdrawn (a tool call is then denied and audited as such);
        any other is interrupted if its work allows.
        """
        running = self._running.get(ident) if isinstance(ident, (str, int)) else None
        if running is None:
            return
        self._unanswered.add(ident)
        task, interruptible = running
        if not self.withdraw(ident, "the request was cancelled") and interruptible:
            task.cancel(CANCELLED_BY_CLIENT)

    # --- outbound ----------------------------------------------------------

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, on_behalf_of: Any = None
    ) -> Any:
        """Ask the client; its error answer is raised as JsonRpcError."""
        if self.closed.is_set():
            raise JsonRpcError(CONNECTION_CLOSED, "Connection closed")
        self._next_id += 1
        ident = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._asked[ident] = (future, on_behalf_of)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        try:
            return await future
        finally:
            self._asked.pop(ident, None)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    def withdraw(self, on_behalf_of: Any, reason: str) -> int:
        """Fail the questions asked for one request, tell the client they are off; how many."""
        withdrawn = 0
        for ident, (future, owner) in list(self._asked.items()):
            if owner == on_behalf_of and not future.done():
                future.set_exception(JsonRpcError(REQUEST_CANCELLED, reason))
                self.notify("notifications/cancelled", {"requestId": ident, "reason": reason})
                withdrawn += 1
        return withdrawn

    def _answer_received(self, ident: Any, message: dict[str, Any]) -> None:
        asked = self._asked.get(ident) if isinstance(ident, (str, int)) else None
        if asked is None or asked[0].done():
            return  # late, or never ours: nothing waits for it
        future = asked[0]
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(
                JsonRpcError(
                    error.get("code", INTERNAL_ERROR), str(error.get("message")), error.get("data")
                )
            )
        else:
            future.set_result(message.get("result"))

    # --- shutdown ----------------------------------------------------------

    async def shut_down(self, *, interrupt: bool) -> None:
        """Fail every open question, then let running work end (or interrupt what may be)."""
        for future, _ in list(self._asked.values()):
            if not future.done():
                future.set_exception(JsonRpcError(CONNECTION_CLOSED, "Connection closed"))
        tasks = [task for task, interruptible in self._running.values()]
        if interrupt:
            for task, interruptible in self._running.values():
                if interruptible:
                    task.cancel(CANCELLED_BY_SHUTDOWN)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # --- writing -----------------------------------------------------------

    def _send_result(self, ident: RequestId, result: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "id": ident, "result": result})

    def _send_error(self, ident: Any, code: int, message: str, data: Any = None) -> None:
        self._send(
            {"jsonrpc": "2.0", "id": ident, "error": JsonRpcError(code, message, data).to_dict()}
        )

    def _send(self, message: dict[str, Any]) -> None:
        self._write(encode(message))


def _internal(message: str) -> dict[str, Any]:
    return JsonRpcError(INTERNAL_ERROR, "Internal error", message).to_dict()
