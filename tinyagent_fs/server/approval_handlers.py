"""REST faces of the approval broker: thin, authenticated, authorized, XSRF-checked.

Agents send Jupyter's token in the ``Authorization`` header (token-authenticated
requests need no XSRF token, as everywhere in Jupyter Server); a browser answers
with its login cookie and the ``X-XSRFToken`` header, or is refused. The
protocol is described in docs/approval-protocol.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web

from .approvals import ApprovalBroker, ApprovalError, Proposal

AUTH_RESOURCE = "tinyagent-fs"
BROKER_SETTING = "tinyagent_fs_approvals"
MAX_WAIT_S = 30.0
MAX_BODY_BYTES = 16 * 1024 * 1024


class ApprovalHandler(ExtensionHandlerMixin, APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def broker(self) -> ApprovalBroker:
        broker: ApprovalBroker = self.settings[BROKER_SETTING]
        return broker

    def user_name(self) -> str:
        user = self.current_user
        return str(getattr(user, "name", "") or getattr(user, "username", "") or "unknown")

    def body(self) -> Any:
        if len(self.request.body) > MAX_BODY_BYTES:
            raise web.HTTPError(413, f"a proposal or decision may hold {MAX_BODY_BYTES} bytes")
        try:
            return json.loads(self.request.body or b"null")
        except ValueError:
            raise web.HTTPError(400, "the body is not JSON") from None

    def write_json(self, payload: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.finish(json.dumps(payload, ensure_ascii=False, default=str))

    def settle(self, work: Any) -> Proposal:
        try:
            result: Proposal = work()
        except ApprovalError as error:
            raise web.HTTPError(error.status, str(error)) from None
        return result


class ApprovalsHandler(ApprovalHandler):
    """``GET``: the pending proposals (for frontends); ``POST``: an agent asks."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.write_json({"approvals": self.broker.listing()})

    @web.authenticated
    @authorized
    async def post(self) -> None:
        body = self.body()
        proposal = self.settle(lambda: self.broker.ask(body, self.user_name()))
        self.write_json(
            {"id": proposal.id, "proposal_hash": proposal.proposal_hash, "state": "pending"},
            status=201,
        )


class ApprovalItemHandler(ApprovalHandler):
    """``GET``: one proposal; ``DELETE``: its agent withdraws it (timeout, cancel, lost race)."""

    @web.authenticated
    @authorized
    async def get(self, approval_id: str) -> None:
        proposal = self.settle(lambda: self.broker.get(approval_id))
        self.write_json(proposal.to_dict())

    @web.authenticated
    @authorized
    async def delete(self, approval_id: str) -> None:
        proposal = self.settle(lambda: self.broker.withdraw(approval_id))
        self.write_json(proposal.outcome())


class DecisionHandler(ApprovalHandler):
    """``GET ?wait=S``: the agent's long-poll for the outcome; ``POST``: a person decides."""

    @web.authenticated
    @authorized
    async def get(self, approval_id: str) -> None:
        try:
            wait = min(MAX_WAIT_S, max(0.0, float(self.get_argument("wait", "0"))))
        except ValueError:
            raise web.HTTPError(400, "wait must be a number of seconds") from None
        self._waiter = asyncio.ensure_future(self.broker.wait(approval_id, wait))
        try:
            proposal = await self._waiter
        except ApprovalError as error:
            raise web.HTTPError(error.status, str(error)) from None
        except asyncio.CancelledError:
            return  # the agent hung up; the broker notices it is gone
        self.write_json(proposal.outcome())

    def on_connection_close(self) -> None:
        waiter = getattr(self, "_waiter", None)
        if waiter is not None and not waiter.done():
            waiter.cancel()
        with contextlib.suppress(Exception):
            super().on_connection_close()

    @web.authenticated
    @authorized
    async def post(self, approval_id: str) -> None:
        body = self.body()
        proposal = self.settle(lambda: self.broker.decide(approval_id, body, self.user_name()))
        self.write_json(proposal.outcome())


APPROVAL_ROUTES: list[tuple[str, type[ApprovalHandler]]] = [
    (r"/tinyagent-fs/approvals", ApprovalsHandler),
    (r"/tinyagent-fs/approvals/([^/]+)", ApprovalItemHandler),
    (r"/tinyagent-fs/approvals/([^/]+)/decision", DecisionHandler),
]
