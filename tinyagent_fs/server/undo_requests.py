"""Undo asked for in the sidebar, carried to the toolkit that made the change.

Only that toolkit holds the change's undo journal, so the server never undoes
anything itself: it queues the person's request for the toolkit, which runs its
own ``undo`` tool, reviewed like any other call (undo is never trusted). A
toolkit takes requests by long-polling for its session (``listen``); asking for
a session no toolkit listens for is refused at once (``TOOLKIT_GONE``), and a
request whose toolkit goes away before answering ends the same way.
Transport-free, like the approval broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

Row = dict[str, Any]

DEFAULT_GONE_S = 10.0
KEEP_S = 600.0
MAX_TEXT_CHARS = 10_000
TOOLKIT_GONE = "TOOLKIT_GONE"


class UndoRequestError(Exception):
    """A request refused; ``status`` is its HTTP status, ``code`` a stable name."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass
class UndoRequest:
    """A person's request to undo one change, and what the toolkit made of it."""

    id: str
    session_id: str
    change_id: str
    event_id: str
    requested_by: str
    created: float
    state: str = "queued"
    result: Row | None = None

    def to_dict(self) -> Row:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "change_id": self.change_id,
            "event_id": self.event_id,
            "requested_by": self.requested_by,
            "created": self.created,
            "state": self.state,
            "result": self.result,
        }


@dataclass
class Listener:
    """A toolkit taking undo requests for its session."""

    session_id: str
    last_seen: float = field(default_factory=time.monotonic)
    waiting: int = 0
    queue: list[UndoRequest] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class UndoRequests:
    """The undo requests of one Jupyter server and the toolkits that take them."""

    def __init__(self, *, gone_after_s: float = DEFAULT_GONE_S) -> None:
        self.gone_after_s = gone_after_s
        self.listeners: dict[str, Listener] = {}
        self.requests: dict[str, UndoRequest] = {}

    # --- the person's side ----------------------------------------------

    def request(self, body: Any, user: str) -> UndoRequest:
        if not isinstance(body, dict):
            raise UndoRequestError(400, "INVALID_ARGUMENT", "the body must be a JSON object")
        session_id, change_id = _text(body, "session_id"), _text(body, "change_id")
        event_id = body.get("event_id", "")
        if not isinstance(event_id, str):
            raise UndoRequestError(400, "INVALID_ARGUMENT", "event_id must be a string")
        self._forget_old()
        listener = self._alive(session_id)
        if listener is None:
            raise UndoRequestError(409, TOOLKIT_GONE, _gone(session_id))
        request = UndoRequest(
            id=uuid.uuid4().hex,
            session_id=session_id,
            change_id=change_id,
            event_id=event_id,
            requested_by=user,
            created=time.time(),
        )
        self.requests[request.id] = request
        listener.queue.append(request)
        listener.wake.set()
        return request

    def get(self, request_id: str) -> UndoRequest:
        request = self.requests.get(request_id)
        if request is None:
            raise UndoRequestError(404, "NOT_FOUND", f"no undo request {request_id!r} here")
        if request.state in ("queued", "taken") and self._alive(request.session_id) is None:
            request.state = "failed"
            request.result = {
                "ok": False,
                "error_code": TOOLKIT_GONE,
                "text": _gone(request.session_id),
            }
        return request

    # --- the toolkit's side ---------------------------------------------

    async def listen(self, session_id: str, wait_s: float) -> list[UndoRequest]:
        """The requests queued for ``session_id``, waiting up to ``wait_s`` for one."""
        listener = self.listeners.get(session_id)
        if listener is None:
            listener = self.listeners[session_id] = Listener(session_id)
        listener.waiting += 1
        try:
            if not listener.queue:
                listener.wake.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(listener.wake.wait(), max(0.0, wait_s))
        finally:
            listener.waiting -= 1
            listener.last_seen = time.monotonic()
        taken, listener.queue = listener.queue, []
        for request in taken:
            request.state = "taken"
        return taken

    def report(self, request_id: str, body: Any) -> UndoRequest:
        request = self.get(request_id)
        if not isinstance(body, dict) or body.get("session_id") != request.session_id:
            raise UndoRequestError(409, "CONFLICT", "this result is for another session")
        if request.state != "taken":
            raise UndoRequestError(409, "CONFLICT", f"this undo request is already {request.state}")
        ok, text, code = body.get("ok"), body.get("text", ""), body.get("error_code")
        if not isinstance(ok, bool) or not isinstance(text, str):
            raise UndoRequestError(400, "INVALID_ARGUMENT", "ok must be a boolean, text a string")
        if code is not None and not isinstance(code, str):
            raise UndoRequestError(400, "INVALID_ARGUMENT", "error_code must be a string")
        request.state = "done" if ok else "failed"
        request.result = {"ok": ok, "text": text[:MAX_TEXT_CHARS], "error_code": code}
        return request

    def _forget_old(self) -> None:
        """Requests and silent toolkits older than ``KEEP_S`` are of no use to anyone."""
        now_wall, now = time.time(), time.monotonic()
        for request in list(self.requests.values()):
            if now_wall - request.created > KEEP_S:
                del self.requests[request.id]
        for listener in list(self.listeners.values()):
            if not listener.waiting and now - listener.last_seen > KEEP_S:
                del self.listeners[listener.session_id]

    def _alive(self, session_id: str) -> Listener | None:
        listener = self.listeners.get(session_id)
        if listener is None:
            return None
        if listener.waiting or time.monotonic() - listener.last_seen <= self.gone_after_s:
            return listener
        return None


def _text(body: Row, key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise UndoRequestError(400, "INVALID_ARGUMENT", f"{key} must be a non-empty string")
    return value


def _gone(session_id: str) -> str:
    return (
        f"the toolkit that made this change (session {session_id}) is not running or not "
        "taking undo requests; nothing was undone. Only that toolkit holds the change's "
        "undo journal: start it again with UndoListener, or undo by hand."
    )
