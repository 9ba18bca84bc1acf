"""REST handlers: thin, authenticated, and nothing but transport.

Every method is wrapped in ``tornado.web.authenticated`` and Jupyter Server's
``authorized`` (resource ``tinyagent-fs``), so the audit log is never served
to a request the server has not identified, even where the server allows
unauthenticated access to handlers that do not ask for it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web

from ..render.diff_render import DIFF_CSS, VIEWS
from ..render.recorded_diff import render_recorded_diff
from .index import AuditIndex
from .query import DEFAULT_LIMIT, AuditFilter, find_event, find_page
from .tailer import SCHEMA_ID, AuditTailer

AUTH_RESOURCE = "tinyagent-fs"
TAILER_SETTING = "tinyagent_fs_tailer"


class AuditAPIHandler(ExtensionHandlerMixin, APIHandler):
    """Common ground of the handlers: the tailer and argument parsing."""

    auth_resource = AUTH_RESOURCE

    @property
    def tailer(self) -> AuditTailer:
        tailer: AuditTailer = self.settings[TAILER_SETTING]
        return tailer

    def int_argument(self, name: str) -> int | None:
        raw = self.get_argument(name, None)
        if raw is None or raw == "":
            return None
        try:
            return int(raw)
        except ValueError:
            raise web.HTTPError(400, f"{name} must be an integer, not {raw!r}") from None

    def list_argument(self, name: str) -> tuple[str, ...]:
        """Repeated (``?tool=a&tool=b``) or comma-separated (``?tool=a,b``) values."""
        values: list[str] = []
        for raw in self.get_arguments(name):
            values.extend(part.strip() for part in raw.split(",") if part.strip())
        return tuple(values)

    def write_json(self, payload: dict[str, Any]) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(payload, ensure_ascii=False, default=str))


class AuditListHandler(AuditAPIHandler):
    """``GET /tinyagent-fs/audit``: a page of events, newest first."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        limit = self.int_argument("limit")
        query = AuditFilter(
            sessions=self.list_argument("session"),
            tools=self.list_argument("tool"),
            outcomes=self.list_argument("outcome"),
            text=self.get_argument("q", "").strip(),
            since=self.int_argument("since"),
            before=self.int_argument("before"),
            limit=DEFAULT_LIMIT if limit is None else limit,
        )
        page = await self.tailer.run_in_index_thread(lambda index: find_page(index, query))
        self.write_json(page.to_dict())


class AuditEventHandler(AuditAPIHandler):
    """``GET /tinyagent-fs/audit/<event_id>``: one event in full, diff included."""

    @web.authenticated
    @authorized
    async def get(self, event_id: str) -> None:
        offset = self.int_argument("offset")
        event = await self.tailer.run_in_index_thread(
            lambda index: find_event(index, event_id, offset)
        )
        if event is None:
            raise web.HTTPError(404, f"no audit event {event_id!r} in {self.tailer.path}")
        self.write_json(event)


class AuditDiffHandler(AuditAPIHandler):
    """``GET /tinyagent-fs/audit/<event_id>/diff?view=``: its diff as coloured HTML.

    For the full-width view: rendered here, with the card's renderer, so the
    browser only inserts HTML that was escaped and marked on the server.
    """

    @web.authenticated
    @authorized
    async def get(self, event_id: str) -> None:
        view = self.get_argument("view", "unified")
        if view not in VIEWS:
            raise web.HTTPError(400, f"view must be one of {', '.join(VIEWS)}")
        offset = self.int_argument("offset")
        event = await self.tailer.run_in_index_thread(
            lambda index: find_event(index, event_id, offset)
        )
        if event is None:
            raise web.HTTPError(404, f"no audit event {event_id!r} in {self.tailer.path}")
        diff = event.get("diff") or ""
        if not diff:
            raise web.HTTPError(404, f"audit event {event_id!r} changed no file")
        rendered = await asyncio.to_thread(render_recorded_diff, diff, view)
        self.write_json(
            {
                "event_id": event_id,
                "tool": event.get("tool", ""),
                "paths": event.get("paths", []),
                "view": view,
                "html": rendered.html,
                "lines": rendered.total_lines,
                "css": DIFF_CSS,
            }
        )


class SessionsHandler(AuditAPIHandler):
    """``GET /tinyagent-fs/sessions``: sessions, tools and outcomes seen, for the filters."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        payload = await self.tailer.run_in_index_thread(_sessions_payload)
        payload["log"] = str(self.tailer.path)
        payload["schema_id"] = SCHEMA_ID
        self.write_json(payload)


def _sessions_payload(index: AuditIndex) -> dict[str, Any]:
    sessions = sorted(index.summaries.values(), key=lambda s: s.last_seq, reverse=True)
    return {
        "sessions": [summary.to_dict() for summary in sessions],
        "tools": sorted(index.tools.values),
        "outcomes": sorted(index.outcomes.values),
        "total": len(index),
        "latest": len(index) - 1,
        "generation": index.generation,
    }


ROUTES: list[tuple[str, type[AuditAPIHandler]]] = [
    (r"/tinyagent-fs/audit", AuditListHandler),
    (r"/tinyagent-fs/audit/([^/]+)", AuditEventHandler),
    (r"/tinyagent-fs/audit/([^/]+)/diff", AuditDiffHandler),
    (r"/tinyagent-fs/sessions", SessionsHandler),
]
