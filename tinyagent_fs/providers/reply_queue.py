"""Requests sent to the sandbox worker from an event loop, answered in order.

The worker answers one request after another. Quick calls from one loop do not
wait for each other's answers before they are sent: their small requests go
down the socket as they come (up to ``MAX_IN_FLIGHT``), the worker works through
them back to back, and the loop reads every answer that is there when the
socket turns readable (``add_reader``). No thread is woken, and the loop serves
other work while the worker computes. A request sent with nothing in flight
and nothing else ready to run on the loop waits for its answer in place for up
to ``DIRECT_WAIT_S`` first: a quick answer is there in tens of µs, and taking it
at once spares the registration, the loop's wake-up and the timer; only a slower
one is left to the loop.

The queue holds the provider's lock from its first request to its last answer,
so a call from a thread (or another loop) waits until it has drained. A timer
checks the answer at the head: past its deadline (counted from when the worker
could start on it) or with the worker stopped, the worker is replaced and every
call in the queue fails. An answer still arriving when the socket turns readable
(a large read) is read on a thread. A cancelled caller's answer is read and
dropped in its turn, so no call ever gets another's answer.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import deque
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ToolError
from . import wire

STALL_CHECK_S = 0.1
"""How often a pending answer checks that the worker is not stopped."""
MAX_IN_FLIGHT = 8
"""Requests sent ahead of their answers; a few small ones never fill a socket buffer,
so the loop's send cannot block on a worker that is itself blocked sending."""
DIRECT_WAIT_S = 0.002
"""How long a lone request waits for its answer on the loop before the loop is told to
watch the socket: a quick answer takes tens of µs, far less than the registration and
the wake-ups of the watched path, and the loop is held no longer than this. The wait
polls all along (yielding the CPU between looks): the loop is held either way, and a
process that never sleeps is not woken late."""


class WorkerStalled(Exception):
    """The worker is stopped and cannot answer; waiting out the deadline would not help."""


class QueueOwner(Protocol):
    """What the queue needs of its provider."""

    def send_request(self, op: str, kwargs: dict[str, Any], sock: socket.socket) -> None: ...

    def unpack(self, op: str, reply: Any) -> Any: ...

    def lost(self, op: str, exc: BaseException) -> ToolError: ...

    def worker_socket(self) -> socket.socket | None: ...

    def is_stopped(self) -> bool: ...

    def finishing_thread(self) -> Executor: ...

    def release(self) -> None: ...


@dataclass
class _Pending:
    op: str
    timeout: float
    answer: asyncio.Future[Any] = field(repr=False)


class ReplyQueue:
    """The requests one loop has sent and not yet had answered, oldest first."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, owner: QueueOwner):
        self.loop = loop
        self.closed = False
        self.draining = False
        """A call that cannot be sent ahead waits for the queue: later calls wait behind it."""
        self.idle: asyncio.Future[None] = loop.create_future()
        self._sock = sock
        self._fd = sock.fileno()
        """Kept: a socket closed when its worker was lost no longer knows its number."""
        self._owner = owner
        self._pending: deque[_Pending] = deque()
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._on_thread = False
        self._watching = False
        """Whether the loop watches the socket for this queue (a lone answer taken at
        once never needed it)."""
        self._room: asyncio.Future[None] | None = None

    def takes(self) -> bool:
        """Whether a quick call may join now (see ``full`` for when it must wait first)."""
        return not self.closed and not self.draining

    def full(self) -> bool:
        return len(self._pending) >= MAX_IN_FLIGHT

    async def room(self) -> None:
        """Wait until an answer has come in (or the queue has closed)."""
        if self._room is None or self._room.done():
            self._room = self.loop.create_future()
        await asyncio.shield(self._room)

    def send(self, op: str, kwargs: dict[str, Any], timeout: float) -> asyncio.Future[Any]:
        """Send one request; the future its answer will settle."""
        try:
            self._owner.send_request(op, kwargs, self._sock)
        except ToolError as error:
            if self._owner.worker_socket() is not self._sock:
                self._fail_all(error)
            elif not self._pending:
                self._close()
            raise
        answer: asyncio.Future[Any] = self.loop.create_future()
        self._pending.append(_Pending(op, timeout, answer))
        if len(self._pending) == 1:
            self._deadline = time.monotonic() + timeout
            wait = min(timeout, DIRECT_WAIT_S)
            if _nothing_else_ready(self.loop) and wire.wait_readable(self._fd, wait, spin=wait):
                self._readable()
            if self._pending and not self._on_thread:
                self._watch(True)
                self._head_started()
        return answer

    def _readable(self) -> None:
        """Take every answer that is all there; hand one still arriving to a thread."""
        head = self._pending[0]
        try:
            replies, state = wire.take_queued(self._sock)
        except wire.WireError as exc:
            self._fail_all(self._owner.lost(head.op, exc))
            return
        for reply in replies:
            if self.closed:
                return
            if not self._pending:  # an answer nobody asked for: not a worker to trust
                self._fail_all(self._owner.lost(head.op, wire.WireError("an answer too many")))
                return
            head = self._pending[0]
            self._answered(head, reply)
        if self.closed or not self._pending:
            return
        if state == "closed":
            error = wire.WireError("the peer closed the connection")
            self._fail_all(self._owner.lost(self._pending[0].op, error))
        elif state == "arriving":
            self._read_on_thread(self._pending[0])

    def _read_on_thread(self, head: _Pending) -> None:
        self._on_thread = True
        self._watch(False)
        reading = self.loop.run_in_executor(
            self._owner.finishing_thread(), wire.recv_message, self._sock, self._deadline
        )
        reading.add_done_callback(lambda done: self._read_ended(head, done))

    def _read_ended(self, head: _Pending, reading: asyncio.Future[Any]) -> None:
        self._on_thread = False
        error = reading.exception()
        if error is not None:
            self._fail_all(self._owner.lost(head.op, error))
            return
        self._answered(head, reading.result())
        if not self.closed:
            self._watch(True)

    def _answered(self, head: _Pending, reply: Any) -> None:
        self._pending.popleft()
        self._made_room()
        try:
            result = self._owner.unpack(head.op, reply)
        except ToolError as error:
            if not head.answer.done():
                head.answer.set_exception(error)
        else:
            if not head.answer.done():  # a cancelled caller's answer is dropped here
                head.answer.set_result(result)
        if self._owner.worker_socket() is not self._sock:  # replaced after this answer
            self._fail_all(self._owner.lost(head.op, wire.WireError("the worker was replaced")))
        elif self._pending:
            self._head_started()
        else:
            self._close()

    def _head_started(self) -> None:
        """The worker can start on the head request now: its deadline counts from here."""
        timeout = self._pending[0].timeout
        self._deadline = time.monotonic() + timeout
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.loop.call_later(min(timeout, STALL_CHECK_S), self._check)

    def _check(self) -> None:
        if not self._pending or self._on_thread:
            return  # a thread reading an answer has the deadline as its receive timeout
        left = self._deadline - time.monotonic()
        head = self._pending[0]
        if left <= 0:
            self._fail_all(
                self._owner.lost(head.op, wire.WireError("timed out waiting for the peer"))
            )
        elif self._owner.is_stopped():
            self._fail_all(self._owner.lost(head.op, WorkerStalled()))
        else:
            self._timer = self.loop.call_later(min(left, STALL_CHECK_S), self._check)

    def _fail_all(self, error: ToolError) -> None:
        """The worker is gone: every call still waiting fails as the one at the head did."""
        for pending in self._pending:
            if not pending.answer.done():
                pending.answer.set_exception(
                    ToolError(error.code, error.message, error.hint, details=error.details)
                )
        self._pending.clear()
        self._close()

    def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._watch(False)
        if self._timer is not None:
            self._timer.cancel()
        self._owner.release()
        self.idle.set_result(None)
        self._made_room()

    def _watch(self, on: bool) -> None:
        if on and not self._watching:
            self.loop.add_reader(self._fd, self._readable)
        elif self._watching and not on:
            self.loop.remove_reader(self._fd)
        self._watching = on

    def _made_room(self) -> None:
        if self._room is not None and not self._room.done():
            self._room.set_result(None)


def _nothing_else_ready(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether no other callback waits to run on ``loop``: then a lone call may wait
    for its answer in place. With others ready (concurrent callers), the request goes
    ahead and the loop runs them, so their requests follow it down the socket and the
    worker answers them back to back. asyncio's own loops keep what is ready in
    ``_ready``; a loop without one (uvloop) is taken as busy: the pipelined way."""
    ready = getattr(loop, "_ready", None)
    return ready is not None and not ready
