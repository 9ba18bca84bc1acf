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
import os
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from ..errors import ErrorCode, ToolError
from ..sandbox import code_files
from . import code_watch, secret_watch, sessions, wire
from .worker_slot import WorkerSlot

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
                return
            if session.worker_pid == self.worker_pid:
                self._slot.stop()
            for other in self.sessions.of_worker(session.worker_pid):
                with other.lock:
                    other.withhold("secrets_changed")
            for ended in self.sessions.unsettled():
                self._settle_unlocked(ended)
            self.sessions.forget_settled()

    def _settle_secret_watch(self) -> None:
        """Before a worker is used or started (the caller holds the lock): a trip of the
        watch is dealt with, and nothing runs while copies could not be quarantined."""
        self._deal_with_a_trip()
        self._refuse_while_copies_left()

    def _deal_with_a_trip(self) -> None:
        """The caller holds the lock."""
        watch = self._slot.watch
        trip = watch.check() if watch is not None else None
        if trip is not None:
            self._secret_appeared(trip)

    def _refuse_after_a_secret_appeared(self, op: str) -> None:
        """Every request checks the watch as it goes out (the caller holds the lock): a
        read of a copy a session made must not slip in before the trip is dealt with;
        one that finds a trip deals with it and is not sent."""
        watch = self._slot.watch
        if watch is not None and watch.check() is not None:
            self._deal_with_a_trip()
            raise ToolError(
                ErrorCode.SANDBOX_FAILURE,
                f"{op} was not run: a secret appeared while sessions ran; their sandbox "
                "was ended and what they changed meanwhile quarantined",
                "Call again.",
                details={"cause": "secrets_changed"},
            )

    def _watch_for_secrets(self) -> None:
        """Have the folders the sandbox reads watched while sessions live (the caller
        holds the lock). A session is not started unwatched."""
        self._settle_secret_watch()
        if self._slot.watch is not None:
            return
        try:
            self._slot.watch = secret_watch.SecretWatch(
                [path for path in self._masked_dirs if os.path.isdir(path)],
                self.policy.denied_patterns,
                partial(_end_at_once, self._slot),
            )
        except secret_watch.WatchFailed as exc:
            raise ToolError(
                ErrorCode.SANDBOX_FAILURE,
                f"the session was not started: the folder {exc.path} cannot be watched for "
                f"secrets the person adds while it runs ({exc})",
                "Make the folder readable, or raise fs.inotify.max_user_watches if the "
                "project has very many folders; run_command still works.",
                details={"cause": "watch_failed", "path": exc.path, "errno": exc.errno},
            ) from None

    def _secret_appeared(self, trip: secret_watch.Trip) -> None:
        """A secret appeared while sessions ran (the caller holds the lock): they end
        (the watch already killed their worker), their output not yet read is withheld,
        the sandbox's TMPDIR is emptied, and every file changed since the watch was last
        clean is quarantined, as a session may have copied the secret there."""
        self._stop_watch()
        self._slot.stop(kill_now=True)
        self._slot.clear_tmpdir()
        found, unsearchable = secret_watch.changed_since(
            self._protect, self.policy.denied_patterns, trip.since_ns
        )
        outcomes = code_files.quarantine(found)
        stuck = [entry["path"] for entry in outcomes if "error" in entry] + unsearchable
        self._copies_left = stuck
        note = {
            "secret_appeared": {"cause": trip.cause, "path": trip.path},
            "secret_copies_quarantined": outcomes,
            "secret_copies_left": stuck,
        }
        for session in self.sessions.with_masks():
            with session.lock:
                session.withhold("secrets_changed")
                session.settle_note.update(note)
        for ended in self.sessions.unsettled():
            self._settle_unlocked(ended)
        self.sessions.forget_settled()

    def _refuse_while_copies_left(self) -> None:
        """Files that may hold a copy of a secret and could not be quarantined keep the
        sandbox shut until they are gone (the caller holds the lock)."""
        self._copies_left = [path for path in self._copies_left if os.path.lexists(path)]
        if self._copies_left:
            raise ToolError(
                ErrorCode.SANDBOX_FAILURE,
                "commands are refused: after a secret appeared while sessions ran, these "
                "files, changed meanwhile, could not be quarantined and may hold a copy of "
                "it: " + ", ".join(self._copies_left),
                "A person must look at them and move them out of the project or delete "
                "them; file tools still work.",
                details={"cause": "secret_copies_left", "paths": self._copies_left},
            )

    def _stop_watch(self) -> None:
        watch, self._slot.watch = self._slot.watch, None
        if watch is not None:
            watch.stop()

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
        try:
            if code_watch.settle(self._protect, session.before, session.settle_note):
                self._slot.stop()
        except ToolError as exc:
            session.settle_note["error"] = exc.to_dict()
            self._slot.stop()
        self._guardian_update()

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


def _end_at_once(slot: WorkerSlot, trip: secret_watch.Trip) -> None:
    """From the watch's thread: kill the worker now, and with it every session, so none
    goes on reading the secret until the toolkit's next call deals with the trip."""
    process = slot.process
    if process is not None:
        with contextlib.suppress(OSError):
            process.kill()
