"""Waiting for the sandbox worker's answer on an event loop without blocking it.

The loop watches the worker's socket (``add_reader``) and goes on with other
work, a server's other requests included, while the worker computes: no thread
is woken for the answer and none waits on the lock. A timer checks every
``STALL_CHECK_S`` that the worker is not stopped and that the deadline has not
passed, so a stalled worker is found as quickly as by the thread that waits.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable

from . import wire

STALL_CHECK_S = 0.1
"""How often a pending reply checks that the worker is not stopped."""


class WorkerStalled(Exception):
    """The worker is stopped and cannot answer; waiting out the deadline would not help."""


async def frame_begun(sock: socket.socket, deadline: float, is_stopped: Callable[[], bool]) -> str:
    """Wait until the next frame on ``sock`` has begun; its ``wire.frame_state``.

    ``"queued"`` and ``"closed"`` can be read at once; ``"arriving"`` is still
    being sent. Raises ``WorkerStalled`` when the worker is stopped and
    ``wire.WireError`` at the deadline. A cancelled wait leaves the frame on
    the socket for whoever drains it.
    """
    loop = asyncio.get_running_loop()
    begun: asyncio.Future[str] = loop.create_future()

    def readable() -> None:
        state = wire.frame_state(sock)
        if state is not None and not begun.done():
            begun.set_result(state)

    def check() -> None:
        nonlocal timer
        if begun.done():
            return
        left = deadline - time.monotonic()
        if left <= 0:
            begun.set_exception(wire.WireError("timed out waiting for the peer"))
        elif is_stopped():
            begun.set_exception(WorkerStalled())
        else:
            timer = loop.call_later(min(left, STALL_CHECK_S), check)

    fd = sock.fileno()
    loop.add_reader(fd, readable)
    timer = loop.call_later(min(max(deadline - time.monotonic(), 0), STALL_CHECK_S), check)
    try:
        return await begun
    finally:
        loop.remove_reader(fd)
        timer.cancel()
