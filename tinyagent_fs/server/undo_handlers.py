"""REST faces of the undo requests: thin, authenticated, authorized, XSRF-checked.

The sidebar asks (``POST /tinyagent-fs/undo-requests``, with its login cookie and
the XSRF header) and follows its request; the toolkit, with Jupyter's token,
long-polls for its session's requests and reports each result. Nothing here
undoes anything: the toolkit's own ``undo`` tool does, after its review.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from jupyter_server.auth.decorator import authorized
from tornado import web

from .approval_handlers import MAX_WAIT_S, ApprovalHandler
from .undo_requests import UndoRequest, UndoRequestError, UndoRequests

UNDO_SETTING = "tinyagent_fs_undo"


class UndoHandler(ApprovalHandler):
    @property
    def desk(self) -> UndoRequests:
        desk: UndoRequests = self.settings[UNDO_SETTING]
        return desk

    def answer(self, work: Callable[[], UndoRequest], status: int = 200) -> None:
        """The request as JSON, or the refusal with its code (``TOOLKIT_GONE``, ...)."""
        try:
            request = work()
        except UndoRequestError as error:
            self.write_json({"code": error.code, "message": str(error)}, status=error.status)
            return
        self.write_json(request.to_dict(), status=status)


class UndoRequestsHandler(UndoHandler):
    """``GET``: the recent requests; ``POST``: a person asks the toolkit that made a
    change to undo it."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json({"requests": [r.to_dict() for r in self.desk.requests.values()]})

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body()
        self.answer(lambda: self.desk.request(body, self.user_name()), status=201)


class UndoRequestHandler(UndoHandler):
    """``GET``: how a request went (queued, taken, done or failed, with the tool's text);
    ``POST``: the toolkit reports what its ``undo`` call returned."""

    @web.authenticated
    @authorized
    async def get(self, request_id: str) -> None:
        self.answer(lambda: self.desk.get(request_id))

    @web.authenticated
    @authorized
    async def post(self, request_id: str) -> None:
        body = self.body()
        self.answer(lambda: self.desk.report(request_id, body))


class UndoListenHandler(UndoHandler):
    """``GET ?wait=S``: a toolkit's long-poll for the requests of its session."""

    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        try:
            wait = min(MAX_WAIT_S, max(0.0, float(self.get_argument("wait", "0"))))
        except ValueError:
            raise web.HTTPError(400, "wait must be a number of seconds") from None
        self._waiter = asyncio.ensure_future(self.desk.listen(session_id, wait))
        try:
            taken = await self._waiter
        except asyncio.CancelledError:
            return  # the toolkit hung up before anything was taken
        self.write_json({"requests": [request.to_dict() for request in taken]})

    def on_connection_close(self) -> None:
        waiter = getattr(self, "_waiter", None)
        if waiter is not None and not waiter.done():
            waiter.cancel()
        with contextlib.suppress(Exception):
            super().on_connection_close()


UNDO_ROUTES: list[tuple[str, type[UndoHandler]]] = [
    (r"/tinyagent-fs/undo-requests", UndoRequestsHandler),
    (r"/tinyagent-fs/undo-requests/([^/]+)", UndoRequestHandler),
    (r"/tinyagent-fs/undo-listeners/([^/]+)", UndoListenHandler),
]
