"""In-process provider: the path guard is the only wall."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..errors import ErrorCode, ToolError
from ..ops import OPERATIONS
from . import pty_local, sessions
from .base import Provider
from .pinned_paths import PinnedRoots, PinSession, pinning_supported

T = TypeVar("T")
BLOCKING_OPERATIONS = frozenset({"grep", "glob_files", "list_tree", "walk_all", "run_command"})
ROOT_RELATIVE_RESULTS = frozenset({"list_tree"})
"""Operations whose results name paths relative to the root only, so no descriptor
path can appear in them and a large listing is not walked to unpin nothing."""


class LocalProvider(Provider):
    """Runs primitives inline; fast, portable, and not kernel-enforced.

    A local stat, read or commit is far cheaper than a hop to a thread pool, so
    those run inline; searches and commands, which can take seconds, run on a
    thread so the event loop (a notebook kernel, say) stays responsive.
    """

    name = "local"
    kernel_enforced = False
    in_process = True

    def __init__(self, max_sessions: int = 4) -> None:
        self._roots: tuple[str, ...] = ()
        self._pinned: PinnedRoots | None = None
        self.sessions = sessions.SessionTable(max_sessions)
        """Unconfined interactive sessions, only when the policy opts in (the tools check)."""
        self._hosts: dict[str, subprocess.Popen[bytes]] = {}

    def bind_roots(self, roots: Iterable[str]) -> None:
        """Pin every later path beneath these roots' descriptors (see ``pinned_paths``)."""
        if not self._roots and pinning_supported():
            self._roots = tuple(str(root) for root in roots)

    async def call(self, op: str, **kwargs: Any) -> Any:
        try:
            operation = OPERATIONS[op]
        except KeyError:
            raise ToolError(
                ErrorCode.INTERNAL_ERROR, f"unknown provider operation {op!r}"
            ) from None
        if not self._roots:
            return await self._run(op, operation, kwargs)
        if self._pinned is None:
            self._pinned = PinnedRoots(self._roots)
        with self._pinned.session() as session:
            try:
                pinned = _os_errors_told(op, session.pin_arguments, op, kwargs)
                result = await self._run(op, operation, pinned)
            except ToolError as exc:
                raise _unpinned_error(exc, session) from None
            return result if op in ROOT_RELATIVE_RESULTS else session.unpin(result)

    async def commit(
        self, change_id: str, changes: list[dict[str, Any]], before: Callable[[], None]
    ) -> dict[str, Any]:
        """The commit calls ``before`` itself: a small one while the disk writes."""
        report: dict[str, Any] = await self.call(
            "commit_changes", change_id=change_id, changes=changes, record=before
        )
        return report

    async def start_session(self, **kwargs: Any) -> sessions.Session:
        self.sessions.check_room()
        sock, process = await asyncio.to_thread(pty_local.start, kwargs)
        session = self.sessions.add(str(kwargs["command"]), sock, None, None)
        self._hosts[session.id] = process
        return session

    async def session_exchange(
        self, session_id: str, data: bytes, yield_ms: int, read: Callable[[sessions.Session], T]
    ) -> tuple[sessions.Session, T]:
        session = self.sessions.get(session_id)

        def job() -> T:
            with session.lock:
                sessions.exchange(session, data, yield_ms)
                self._reap(session)
                return read(session)

        return session, await asyncio.to_thread(job)

    async def close_session(self, session_id: str) -> sessions.Session:
        session = self.sessions.get(session_id)

        def job() -> None:
            with session.lock:
                sessions.close(session)
                self._reap(session)

        await asyncio.to_thread(job)
        return session

    def _reap(self, session: sessions.Session) -> None:
        if session.live:
            return
        session.settled = True
        process = self._hosts.pop(session.id, None)
        if process is not None:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    async def close(self) -> None:
        for session in self.sessions.live():
            await self.close_session(session.id)
        if self._pinned is not None:
            self._pinned.close()
            self._pinned = None

    async def _run(self, op: str, operation: Any, kwargs: dict[str, Any]) -> Any:
        if op in BLOCKING_OPERATIONS:
            return await asyncio.to_thread(_os_errors_told, op, operation, **kwargs)
        return _os_errors_told(op, operation, **kwargs)


def _os_errors_told(op: str, func: Any, *args: Any, **kwargs: Any) -> Any:
    """``func``'s result; an OSError becomes the ToolError the tools expect."""
    try:
        return func(*args, **kwargs)
    except PermissionError as exc:
        raise ToolError(
            ErrorCode.PERMISSION_DENIED, f"{op}: {exc}", security_violation=False
        ) from None
    except OSError as exc:
        raise ToolError(ErrorCode.IO_ERROR, f"{op}: {exc}") from None


def _unpinned_error(exc: ToolError, session: PinSession) -> ToolError:
    """The error with the real paths where the primitive saw descriptor paths."""
    return ToolError(
        exc.code,
        session.unpin(exc.message),
        session.unpin(exc.hint),
        security_violation=exc.security_violation,
        details=session.unpin(exc.details),
    )
