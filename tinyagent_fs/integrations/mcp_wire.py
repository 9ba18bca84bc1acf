"""JSON-RPC 2.0 over newline-delimited JSON on stdin/stdout: the MCP stdio transport.

Written for this server instead of taking the MCP SDK's, whose import alone took
most of a second of every client's start-up (bench/bench_mcp.py). It is strict
where the SDK was lenient: a line that is not JSON gets a -32700 answer, one
that is not a JSON-RPC request, notification or response a -32600 answer, and
nothing is dropped silently.

Requests are served concurrently: a handler either answers at once (a dict) or
hands back ``Work`` that runs as a task. ``notifications/cancelled`` leaves the
request unanswered, withdraws the questions it had asked the client, and
interrupts its task when the work says it may be interrupted (a change that is
under way finishes atomically instead). Outbound requests (``elicitation/create``,
``roots/list``) are matched to their responses by id.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

if sys.platform != "win32":
    import fcntl

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
CONNECTION_CLOSED = -32000
REQUEST_CANCELLED = -32800
UNSUPPORTED_PROTOCOL_VERSION = -32022

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""Longest line read: a 10 MB write_file is ~20 MB of escaped JSON; this only stops a runaway."""
FLUSH_LIMIT_S = 5.0
"""How long the last answers may wait at exit for a client that stopped reading."""

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


class StdioLines:
    """The process's stdin and stdout as the wire, kept away from everything else.

    Serving reads and writes private duplicates; fd 0 then reads /dev/null and
    fd 1 writes to stderr, so a stray ``print`` or a child process can never
    put bytes on the wire or eat a request. ``close`` puts them back.
    """

    def __init__(self) -> None:
        self.read_fd = _private_copy(0)
        self.write_fd = _private_copy(1)
        sys.stdout.flush()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        self._reading: asyncio.BaseTransport | asyncio.Task[None] | None = None
        self._transport: asyncio.WriteTransport | None = None

    async def start(self, on_data: Callable[[bytes], None], on_eof: Callable[[], None]) -> None:
        """Pipes are watched by the event loop; what it cannot watch (a regular file,
        or any stdin on Windows) is read on a thread and written in place."""
        if sys.platform == "win32":
            self._reading = asyncio.ensure_future(_read_on_thread(self.read_fd, on_data, on_eof))
            return
        loop = asyncio.get_running_loop()
        reader = os.fdopen(self.read_fd, "rb", buffering=0, closefd=False)
        try:
            self._reading, _ = await loop.connect_read_pipe(lambda: _Feed(on_data, on_eof), reader)
        except ValueError:
            self._reading = asyncio.ensure_future(_read_on_thread(self.read_fd, on_data, on_eof))
        writer = os.fdopen(self.write_fd, "wb", buffering=0, closefd=False)
        try:
            self._transport, _ = await loop.connect_write_pipe(asyncio.Protocol, writer)
        except ValueError:
            self._transport = None

    def write(self, data: bytes) -> None:
        if self._transport is None:
            _write_all(self.write_fd, data)
        elif not self._transport.is_closing():
            self._transport.write(data)

    async def flush(self) -> None:
        """Wait until what was written has left, so the client sees it before we exit."""
        transport = self._transport
        give_up = time.monotonic() + FLUSH_LIMIT_S
        while transport is not None and not transport.is_closing():
            if transport.get_write_buffer_size() == 0 or time.monotonic() > give_up:
                return
            await asyncio.sleep(0.001)

    def close(self) -> None:
        """Stop reading and writing (before the descriptors go), then give fd 0 and 1 back."""
        if isinstance(self._reading, asyncio.Task):
            self._reading.cancel()
        elif self._reading is not None:
            self._reading.close()
        if self._transport is not None:
            self._transport.close()
        for fd, std in ((self.read_fd, 0), (self.write_fd, 1)):
            try:
                os.dup2(fd, std)
                os.close(fd)
            except OSError:
                pass


class _Feed(asyncio.Protocol):
    def __init__(self, on_data: Callable[[bytes], None], on_eof: Callable[[], None]) -> None:
        self.on_data = on_data
        self.on_eof = on_eof

    def data_received(self, data: bytes) -> None:
        self.on_data(data)

    def eof_received(self) -> bool:
        self.on_eof()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.on_eof()


def _private_copy(fd: int) -> int:
    """A duplicate of ``fd`` that children do not inherit, above the standard three."""
    if sys.platform == "win32":
        return os.dup(fd)  # not inheritable either
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


async def _read_on_thread(
    fd: int, on_data: Callable[[bytes], None], on_eof: Callable[[], None]
) -> None:
    while chunk := await asyncio.to_thread(os.read, fd, 1 << 16):
        on_data(chunk)
    on_eof()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
        except (ValueError, UnicodeDecodeError) as exc:
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
            task.cancel()

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
                    task.cancel()
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
