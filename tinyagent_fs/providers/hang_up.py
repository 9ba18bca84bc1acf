"""Ending a command whose caller gave up: the socket it went out on, hung up from the loop.

A cancelled ``run_command`` (or a provider closed while one runs) shuts the
worker's socket down while the provider's thread still waits on it; the
process watching that socket then kills the worker's whole PID namespace
(``sandbox.namespaces``). Shut down, not closed: the descriptor stays the
thread's, so it cannot be reused under it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator

from ..errors import ErrorCode, ToolError

COMMAND_KILLED = "the command was killed with every process it started"
"""Added to a cancelled command's CancelledError once its sandbox is gone."""


class HangUp:
    """Between a command's caller on the loop and the provider's thread: the socket the
    command went out on, for the caller to hang up on a cancel while the thread waits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._called_off = False
        self._hung_up = False

    @contextlib.contextmanager
    def armed(self, sock: socket.socket, stop: Callable[[], None]) -> Iterator[None]:
        """Let :meth:`now` shut ``sock`` down until the block ends; ``stop`` the worker
        at the end if it did (a command that ended just before is not told apart)."""
        with self._lock:
            if self._called_off:
                raise ToolError(
                    ErrorCode.SANDBOX_FAILURE,
                    "the command was not run: its call was cancelled or the provider closed",
                )
            self._sock = sock
        try:
            yield
        finally:
            with self._lock:
                self._sock = None
            if self._hung_up:
                stop()

    def now(self) -> bool:
        """Shut the socket down (not close: the thread still polls it); whether one was."""
        with self._lock:
            self._called_off = True
            if self._sock is None:
                return False
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            self._hung_up = True
            return True
