"""Undo from the sidebar: a toolkit takes the person's requests and runs its own ``undo``.

Only the toolkit that made a change holds its undo journal. ``UndoListener``
long-polls the Jupyter server for the requests of the toolkit's audit session
and calls ``tools.undo(change_id)`` for each, so the revert goes through the
same hooks and review as any call (undo is never trusted), then reports what
the tool returned. A toolkit without a listener cannot be asked: the sidebar
says so (``TOOLKIT_GONE``) and nothing is undone.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..hooks.jupyter_servers import JupyterServer, JupyterUnreachable, find_server

if TYPE_CHECKING:
    from ..tools.facade import FileTools

POLL_S = 20.0
RETRY_S = 2.0
T = TypeVar("T")


class UndoListener:
    """Takes the sidebar's Undo requests for ``tools`` while ``start``-ed.

    The server is found as ``WebApprovalHook`` finds it (``url``/``token``, the
    ``TINYAGENT_FS_JUPYTER_*`` variables, or Jupyter's runtime files).
    """

    def __init__(
        self,
        tools: FileTools,
        server: JupyterServer | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
    ) -> None:
        if tools.audit is None or not tools.audit.session_id:
            raise ValueError("UndoListener needs a toolkit with an audit log (its session)")
        self.tools = tools
        self.session_id = tools.audit.session_id
        self._server = server
        self._url, self._token = url, token
        self._task: asyncio.Task[None] | None = None

    def start(self) -> UndoListener:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                for request in await self._take():
                    await self._undo(request)
            except JupyterUnreachable:
                self._server = None  # it may have restarted elsewhere
                await asyncio.sleep(RETRY_S)

    async def _take(self) -> list[dict[str, Any]]:
        server = await asyncio.to_thread(self._find)
        path = f"tinyagent-fs/undo-listeners/{self.session_id}?wait={POLL_S:g}"
        status, reply = await _on_daemon_thread(
            lambda: server.request("GET", path, timeout_s=POLL_S + 30)
        )
        if status != 200 or not isinstance(reply, dict):
            await asyncio.sleep(RETRY_S)
            return []
        return [item for item in reply.get("requests", []) if isinstance(item, dict)]

    async def _undo(self, request: dict[str, Any]) -> None:
        result = await self.tools.undo(change_id=str(request.get("change_id") or "") or None)
        report = {
            "session_id": self.session_id,
            "ok": result.ok,
            "text": result.text,
            "error_code": None if result.error is None else result.error.code,
        }
        server = await asyncio.to_thread(self._find)
        await asyncio.to_thread(
            server.request, "POST", f"tinyagent-fs/undo-requests/{request['id']}", report
        )

    def _find(self) -> JupyterServer:
        if self._server is None:
            self._server = find_server(Path(self.tools.root), url=self._url, token=self._token)
        return self._server


async def _on_daemon_thread(work: Callable[[], T]) -> T:
    """``work()`` on a thread of its own: a long-poll left behind by ``stop`` must not
    hold up the end of the program (``asyncio.to_thread``'s pool is joined at exit)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not done.done():
            outcome()

    def run() -> None:
        try:
            value = work()
            outcome: Callable[[], None] = lambda: done.set_result(value)  # noqa: E731
        except BaseException as exc:  # handed to the awaiting task
            error = exc
            outcome = lambda: done.set_exception(error)  # noqa: E731
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=run, name="tinyagent-fs undo listener", daemon=True).start()
    return await done
