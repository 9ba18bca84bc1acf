"""Interactive sessions of the Linux sandbox provider: start, exchange, close, settle.

A session runs in the provider's worker like a command (the same walks, masks and
guardian; ``session_host`` serves it inside), but outlives the call that started
it, so its end, its after-walk and the check that its output holds no secret the
masks stopped hiding happen whenever the model next reads it. Mixed into
``LinuxSandboxProvider``, whose worker slot, lock, walks and plans it uses.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from ..errors import ToolError
from . import code_watch, sessions, wire

T = TypeVar("T")


class SandboxSessions:
    """The session half of ``LinuxSandboxProvider`` (see the module docstring)."""

    async def start_session(self, **kwargs: Any) -> sessions.Session:
        """Start a command on a terminal in the worker, with the walks, masks and guardian
        of ``run_command``; its after-walk happens when it ends."""
        loop = asyncio.get_running_loop()
        job = partial(self._start_session_sync, kwargs)
        return await loop.run_in_executor(self._thread(), job)

    async def session_exchange(
        self, session_id: str, data: bytes, yield_ms: int, read: Callable[[sessions.Session], T]
    ) -> tuple[sessions.Session, T]:
        """Type ``data``, wait ``yield_ms``, then ``read`` the session under its lock."""
        session = self.sessions.get(session_id)
        loop = asyncio.get_running_loop()
        job = partial(self._exchange_session, session, data, yield_ms, read)
        return session, await loop.run_in_executor(self._session_pool(), job)

    async def session_peek(self, session_id: str) -> sessions.Session:
        """Take what the session printed into the toolkit (for its listeners; the model
        still reads it), without typing, waiting or counting as activity. A session
        busy with a model's call is left alone."""
        session = self.sessions.get(session_id)
        if session.lock.acquire(blocking=False):
            try:
                job = partial(sessions.exchange, session, b"", 0, peek=True)
                await asyncio.get_running_loop().run_in_executor(self._session_pool(), job)
            finally:
                session.lock.release()
            if not session.live:
                await asyncio.get_running_loop().run_in_executor(
                    self._session_pool(), self._settle_session, session
                )
        return session

    async def close_session(self, session_id: str) -> sessions.Session:
        session = self.sessions.get(session_id)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._session_pool(), self._close_session, session)
        return session

    def _start_session_sync(self, kwargs: dict[str, Any]) -> sessions.Session:
        kwargs = {
            "limits": self._command_limits(),
            "idle_s": self.policy.session_idle_s,
            "lifetime_s": self.policy.session_lifetime_s,
            **kwargs,
        }
        self._collect_ended()
        with self._lock:
            self.sessions.check_room()
            self._watch_for_secrets()
            before = self._walked_and_masked()
            sock = self._ensure_worker(known=before)
            with self._settled_even_if_we_die(before):
                self._send("session_start", kwargs, sock)
                self._finish("session_start", time.monotonic() + self.start_timeout_s)
                fd = self._passed_fd(sock)
                host = socket.socket(fileno=fd)
                return self.sessions.add(
                    kwargs["command"], host, self.worker_pid, before, self._worker_secrets
                )

    def _passed_fd(self, sock: socket.socket) -> int:
        """The host's socket the worker passes right after its answer (SCM_RIGHTS)."""
        if wire.wait_readable(sock.fileno(), self.start_timeout_s):
            with contextlib.suppress(OSError):
                _, fds, _, _ = socket.recv_fds(sock, 1, 1, socket.MSG_DONTWAIT)
                if len(fds) == 1:
                    return fds[0]
        raise self._worker_lost("session_start", "it did not pass the session's socket")

    def _exchange_session(
        self,
        session: sessions.Session,
        data: bytes,
        yield_ms: int,
        read: Callable[[sessions.Session], T],
    ) -> T:
        self._collect_ended()
        with session.lock:
            sessions.exchange(session, data, yield_ms)
        self._clear_for_model(session)
        if not session.live:
            self._settle_session(session)
        with session.lock:
            return read(session)

    def _clear_for_model(self, session: sessions.Session) -> None:
        """Let the model read what the session printed so far, if the masks its sandbox
        was set up with still hide every secret: one the person added (or replaced) since
        is not masked in its view, and the output may hold it. Checked after the output
        arrived and before the model reads it; output a peek adds meanwhile waits for
        the next check. Otherwise every session of that sandbox ends, its unread output
        withheld."""
        with session.lock:
            upto = session.total_bytes
        watch = self._slot.watch
        trip = watch.check() if watch is not None else None
        if trip is None:
            plan = self._plan_masks()
            if plan.refusal is None and plan.secrets_key() == session.secrets:
                with session.lock:
                    session.cleared_upto = max(session.cleared_upto, upto)
                return
        with self._lock:
            if trip is not None:
                self._deal_with_a_trip()
                return  # every session of the sandbox ended, their output withheld
            if session.worker_pid == self.worker_pid:
                self._slot.stop()
            for other in self.sessions.of_worker(session.worker_pid):
                with other.lock:
                    other.withhold("secrets_changed")
            for ended in self.sessions.unsettled():
                self._settle_unlocked(ended)
            self.sessions.forget_settled()

    def _close_session(self, session: sessions.Session) -> None:
        with session.lock:
            sessions.close(session)
        self._clear_for_model(session)
        self._settle_session(session)

    def _collect_ended(self) -> None:
        """Sessions that ended unasked (idle, lifetime): their last answer read, their
        after-walk done."""
        for session in self.sessions.live():
            if not session.lock.acquire(blocking=False):
                continue
            try:
                # another's end may have ended this one too (its worker stopped)
                if session.live and wire.wait_readable(session.sock.fileno(), 0, spin=0):
                    sessions.exchange(session, b"", 0)
            except (OSError, ValueError):  # ValueError: its socket closed meanwhile
                session.lost("sandbox_replaced")
            finally:
                session.lock.release()
            if not session.live:
                self._settle_session(session)
        if self._slot.watch is not None and self.sessions.none_to_watch():
            with self._lock:
                self._deal_with_a_trip()
                if self.sessions.none_to_watch():
                    self._stop_watch()

    def _settle_session(self, session: sessions.Session) -> None:
        """The after-walk of an ended session, once every process it left is gone."""
        with self._lock:
            if session.settled:
                return
            if session.ended == "sandbox_replaced" and self.worker_pid == session.worker_pid:
                self._slot.stop()  # a host lost unasked: nothing else can end its processes
            else:
                self._settle_unlocked(session)
            self.sessions.forget_settled()

    def _settle_unlocked(self, session: sessions.Session) -> None:
        session.settled = True
        self._sessions_settled += 1
        self._hand_down_walk(session)
        try:
            if code_watch.settle(self._protect, session.before, session.settle_note):
                self._slot.stop()
        except ToolError as exc:
            session.settle_note["error"] = exc.info().to_dict()
            self._slot.stop()
            if session.before is not None:
                # walked against again before the next command or session, as a failed
                # command's is: no walk pending is older (a command pending ran while
                # this session lived; a session settled before it that began earlier
                # handed its walk down to this one)
                self._unsettled = session.before
        self._guardian_update()

    def _hand_down_walk(self, session: sessions.Session) -> None:
        """Sessions not settled yet that started after ``session`` walked a tree it may
        already have changed, and its after-walk races with them (one can hide a hook
        from it for a moment): each takes over its older walk, so their after-walks
        judge anything either planted against a tree no session had touched."""
        if session.before is None:
            return
        for other in self.sessions.not_settled():
            if other.started > session.started and other.before is not None:
                other.before = session.before

    def _sessions_lost(self) -> None:
        """The worker is gone, and every session with it: settle them all now."""
        self.sessions.all_lost("sandbox_replaced")
        for session in self.sessions.unsettled():
            self._settle_unlocked(session)

    def _session_pool(self) -> ThreadPoolExecutor:
        if self._session_threads is None:
            self._session_threads = ThreadPoolExecutor(
                self.policy.max_sessions + 1, thread_name_prefix="tinyagent-fs-session"
            )
        return self._session_threads
