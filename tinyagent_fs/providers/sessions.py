"""Interactive sessions, toolkit side: the live sessions of one provider and the
exchange with each one's host (``session_host``) over the socket the worker
passed on.

An exchange goes straight to the host, not through the worker, so a session
waiting out its ``yield_ms`` keeps neither the worker nor the provider's lock.
Raw terminal bytes are held here only until they are shown, at most
``session_host.RING_BYTES`` per session (older ones are dropped and counted), so
a program printing without end keeps the toolkit's memory flat.
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ErrorCode, ToolError
from . import wire
from .session_host import RING_BYTES

REPLY_MARGIN_S = 10.0
"""How much longer than its yield an exchange waits for the host's answer."""
ENDED_WHY = {
    "exited": "the command exited",
    "closed": "the session was closed",
    "idle_timeout": "the session was idle too long and was ended",
    "lifetime_exceeded": "the session reached its total lifetime and was ended",
    "sandbox_replaced": "the sandbox worker was replaced (a new secret or repository, a "
    "closed toolkit or a failure), which ends every session",
    "secrets_changed": "a file the deny patterns keep secret was added or replaced while "
    "it ran, which its sandbox does not hide: every session of that sandbox was ended "
    "and its output not yet read withheld",
}


@dataclass
class Session:
    """One interactive command: its host's socket, what is not shown yet, how it ended."""

    id: str
    command: str
    sock: socket.socket
    worker_pid: int | None
    before: Any = None
    """The code-running files walked before it started (``sandbox.code_files``)."""
    started: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    unread: bytearray = field(default_factory=bytearray)
    dropped: int = 0
    """Raw bytes of output lost before they were shown (the host's ring and ours)."""
    total_bytes: int = 0
    input_refused: int = 0
    """Typed bytes the host refused since the last read: the program was not reading."""
    exit_code: int | None = None
    ended: str | None = None
    settled: bool = False
    settle_note: dict[str, Any] = field(default_factory=dict)
    """What the after-walk found (``protected_paths_*``) or why it failed."""
    renderer: Any = None
    secrets: Any = None
    """What its sandbox's masks hide (``MaskPlan.secrets_key``); None: no masks at all
    (a session the person chose to run unconfined)."""
    withheld: bool = False
    """Its output and counts were withheld (``withhold``): none of them is reported."""
    cleared_upto: int = 0
    """Output up to this many bytes in (``total_bytes``) was cleared for the model: the
    masks still hid every secret after it arrived."""
    listeners: list[Callable[[Session, bytes], None]] = field(default_factory=list)
    """Told each piece of output as it arrives, and once more (with b"") at the end:
    a notebook's live view (``ui.session_view``)."""

    @property
    def live(self) -> bool:
        return self.ended is None

    def take(self, reply: dict[str, Any]) -> None:
        output = reply.get("output") or b""
        if not isinstance(output, bytes):
            output = b""
        self.total_bytes += len(output)
        self.dropped += int(reply.get("dropped") or 0)
        self.input_refused += int(reply.get("input_refused") or 0)
        self.unread += output
        excess = len(self.unread) - RING_BYTES
        if excess > 0:
            del self.unread[:excess]
            self.dropped += excess
        if reply.get("ended"):
            self.ended = str(reply["ended"])
            code = reply.get("exit_code")
            self.exit_code = code if isinstance(code, int) else None
        if output or not self.live:
            self.tell(output)

    def readable(self) -> int:
        """How many bytes at the front of ``unread`` the model may read now."""
        if self.secrets is None:
            return len(self.unread)
        start = self.total_bytes - len(self.unread)
        return max(0, min(len(self.unread), self.cleared_upto - start))

    def withhold(self, why: str) -> None:
        """Drop the output not yet read, and end the session (or say why it ended). How
        it exited and how much it printed go too: a program that read a secret could
        spell it in an exit code or an output length."""
        self.unread.clear()
        self.cleared_upto = self.total_bytes
        self.exit_code = None
        self.dropped = 0
        self.input_refused = 0
        self.withheld = True
        if self.live:
            self.lost(why)
        else:
            self.ended = why

    def tell(self, output: bytes) -> None:
        for listener in list(self.listeners):
            listener(self, output)

    def lost(self, why: str) -> None:
        if self.ended is None:
            self.ended = why
            self.tell(b"")
        with contextlib.suppress(OSError):
            self.sock.close()


class SessionTable:
    """The sessions of one provider, at most ``max_sessions`` live.

    An id is a number from 1 with a random tag (``"1-9f3a2b7c"``): a policy that
    trusts a session by its id (``trust_session``) may be shared by toolkits, or
    outlive one, and must never meet the same id for another session."""

    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[str, Session] = {}
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self.watchers: list[Callable[[Session], None]] = []
        """Told of each new session (a notebook's live view subscribes here)."""

    def check_room(self) -> None:
        if len(self.live()) >= self.max_sessions:
            raise ToolError(
                ErrorCode.RATE_LIMITED,
                f"{self.max_sessions} interactive sessions are running already "
                "(SandboxPolicy.max_sessions)",
                "close one with close_session (or let it finish) before starting another, "
                "or use run_command for a command that needs no input",
                details={"cause": "max_sessions", "live": [s.id for s in self.live()]},
            )

    def add(
        self,
        command: str,
        sock: socket.socket,
        worker_pid: int | None,
        before: Any,
        hidden: Any = None,
    ) -> Session:
        with self._lock:
            number = f"{next(self._numbers)}-{secrets.token_hex(4)}"
            session = Session(number, command, sock, worker_pid, before, secrets=hidden)
            self._sessions[session.id] = session
        for watcher in list(self.watchers):
            watcher(session)
        return session

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(str(session_id))
        if session is None:
            known = ", ".join(s.id for s in self.live()) or "none"
            raise ToolError(
                ErrorCode.NOT_FOUND,
                f"there is no session {session_id!r} (live sessions: {known})",
                "start one with exec_command; its answer gives the session_id",
            )
        return session

    def _all(self) -> list[Session]:
        """A copy (one C-level step under the GIL): other threads add and drop sessions."""
        return list(self._sessions.values())

    def live(self) -> list[Session]:
        return [s for s in self._all() if s.live]

    def with_masks(self) -> list[Session]:
        """Sessions run in a sandbox with masks (not the ones run unconfined)."""
        return [s for s in self._all() if s.secrets is not None]

    def none_to_watch(self) -> bool:
        """No session in a sandbox with masks still runs, waits for its after-walk, or
        has output the model may yet read: nothing a new secret could reach."""
        return all(
            not s.live and s.settled and s.cleared_upto >= s.total_bytes for s in self.with_masks()
        )

    def of_worker(self, worker_pid: int | None) -> list[Session]:
        return [s for s in self._all() if s.worker_pid == worker_pid]

    def unsettled(self) -> list[Session]:
        return [s for s in self._all() if not s.live and not s.settled]

    def not_settled(self) -> list[Session]:
        """Running or ended, their after-walk still to come."""
        return [s for s in self._all() if not s.settled]

    def forget_settled(self, keep: int = 32) -> None:
        """Drop the oldest ended and settled sessions beyond ``keep`` (their ids stay unused)."""
        with self._lock:
            done = [s for s in self._all() if not s.live and s.settled]
            for session in done[: max(0, len(done) - keep)]:
                del self._sessions[session.id]

    def oldest_before(self) -> Any:
        """The earliest before-walk among live and unsettled sessions (covers them all)."""
        pending = [s for s in self.not_settled() if s.before is not None]
        return min(pending, key=lambda s: s.started).before if pending else None

    def all_lost(self, why: str) -> None:
        for session in self.live():
            session.lost(why)


def exchange(session: Session, data: bytes, yield_ms: int, *, peek: bool = False) -> None:
    """Type ``data``, wait ``yield_ms`` and take what the host answers into ``session``.

    The caller holds ``session.lock``. A host that is gone (the worker was replaced,
    the toolkit's sandbox closed) ends the session; its last answer, sent before it
    exited, is still read from the socket.
    """
    if not session.live:
        return
    request = {"input": data, "yield_ms": int(yield_ms), "peek": peek}
    with contextlib.suppress(wire.WireError, OSError):
        wire.send_message(session.sock, request)
    deadline = time.monotonic() + yield_ms / 1000 + REPLY_MARGIN_S
    try:
        reply = wire.recv_message(session.sock, deadline)
    except (wire.WireError, OSError):
        session.lost("sandbox_replaced")
        return
    if not isinstance(reply, dict):
        session.lost("sandbox_replaced")
        return
    session.take(reply)
    if not session.live:
        with contextlib.suppress(OSError):
            session.sock.close()


def close(session: Session) -> None:
    """Ask the host to end the session; its last answer is taken into ``session``."""
    if not session.live:
        return
    with contextlib.suppress(wire.WireError, OSError):
        wire.send_message(session.sock, {"close": True})
    try:
        reply = wire.recv_message(session.sock, time.monotonic() + REPLY_MARGIN_S)
    except (wire.WireError, OSError):
        session.lost("closed")
        return
    if isinstance(reply, dict):
        session.take(reply)
    session.lost("closed")
