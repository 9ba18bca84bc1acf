"""Approve from JupyterLab, for any agent: put each change to the Jupyter server.

``WebApprovalHook`` sends the proposal (tool, arguments, diff, editable files) to
the server's approval broker, then long-polls for the person's answer from the
sidebar's Pending section (docs/approval-protocol.md). The answer is used only
if it names this proposal's hash and session. Timeout, cancellation and a lost
race withdraw the proposal, so the sidebar row goes away with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from ..changes.changeset import ChangeSet
from ..changes.proposal import proposal_hash
from .decision import Decision, NoAnswer, Risk, ToolCall
from .jupyter_servers import JupyterServer, JupyterUnreachable, find_server
from .policies import RiskBasedPolicy

DECIDED_BY = "jupyter"
POLL_S = 20.0
DEFAULT_TIMEOUT_S = 600.0
MAX_PROPOSAL_BYTES = 8 * 1024 * 1024


class WebApprovalHook:
    """Asks the person in JupyterLab (or any frontend of the approval protocol).

    ``server`` is found on first use when not given: ``url``/``token``, the
    ``TINYAGENT_FS_JUPYTER_URL``/``_TOKEN`` variables, or Jupyter's runtime files
    (the server whose root holds ``project``). Reads pass without a question;
    what the person trusts for the session passes too. No answer within
    ``timeout_s`` denies (``on_timeout="approve"`` approves instead).
    """

    name = DECIDED_BY

    def __init__(
        self,
        server: JupyterServer | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        project: Path | str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        on_timeout: str = "deny",
        origin: str | None = None,
        session_id: str = "",
    ) -> None:
        if on_timeout not in ("deny", "approve"):
            raise ValueError("on_timeout must be 'deny' or 'approve'")
        self._server = server
        self._found = False
        self._url, self._token, self._project = url, token, project
        self.timeout_s = timeout_s
        self.on_timeout = on_timeout
        self.origin = origin or _default_origin()
        self.session_id = session_id or os.urandom(6).hex()
        self.trust = RiskBasedPolicy()

    @property
    def server(self) -> JupyterServer:
        if self._server is None:
            self._server = find_server(self._project, url=self._url, token=self._token)
            self._found = True
        return self._server

    async def before_tool_execution(self, call: ToolCall) -> Decision:
        try:
            return await self.answer(call)
        except NoAnswer as exc:
            return Decision.deny(
                f"{call.tool} needs a person's approval, and JupyterLab could not be asked: {exc}",
                decided_by=DECIDED_BY,
            )

    async def answer(self, call: ToolCall) -> Decision:
        """The person's decision; raises ``NoAnswer`` when JupyterLab cannot be asked.

        Cancelling the awaiting task withdraws the proposal (the race in
        ``FirstAnswer`` relies on that).
        """
        if call.risk is Risk.READ:
            return Decision.proceed(decided_by=DECIDED_BY)
        if self.trust.is_trusted(call):
            return Decision.proceed(decided_by=f"{DECIDED_BY} (trusted for this session)")
        body = self._proposal(call)
        try:
            server = await asyncio.to_thread(lambda: self.server)
            status, reply = await asyncio.to_thread(
                server.request, "POST", "tinyagent-fs/approvals", body
            )
        except JupyterUnreachable as exc:
            self._forget_found_server()
            raise NoAnswer(str(exc)) from None
        if status != 201 or not isinstance(reply, dict):
            raise NoAnswer(f"the server refused the proposal ({status}: {_message(reply)})")
        expected = proposal_hash(body["session_id"], call.tool, body["args"], body["diff"])
        if reply.get("proposal_hash") != expected:
            await self._withdraw(server, str(reply.get("id", "")))
            raise NoAnswer("the server's hash of the proposal differs from ours")
        approval_id = str(reply["id"])
        outcome: dict[str, Any] | None = None
        try:
            outcome = await self._wait(server, approval_id)
        finally:
            if outcome is None:  # timed out, cancelled, lost a race, or failed
                await asyncio.shield(self._withdraw(server, approval_id))
        return self._decision(call, body, outcome)

    def _forget_found_server(self) -> None:
        """A server found on disk may have restarted elsewhere: look again next time."""
        if self._found:
            self._server = None

    async def _wait(self, server: JupyterServer, approval_id: str) -> dict[str, Any] | None:
        """The outcome once settled, or None when ``timeout_s`` passed first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        path = f"tinyagent-fs/approvals/{approval_id}/decision"
        while (left := deadline - loop.time()) > 0:
            wait = min(POLL_S, left)
            try:
                status, outcome = await asyncio.to_thread(
                    server.request, "GET", f"{path}?wait={wait:.3f}", timeout_s=wait + 30
                )
            except JupyterUnreachable as exc:
                raise NoAnswer(str(exc)) from None
            if status != 200 or not isinstance(outcome, dict):
                raise NoAnswer(f"the server lost the proposal ({status}: {_message(outcome)})")
            if outcome.get("state") != "pending":
                return outcome
        return None

    def _decision(
        self, call: ToolCall, body: dict[str, Any], outcome: dict[str, Any] | None
    ) -> Decision:
        if outcome is None or outcome.get("state") == "expired":
            if self.on_timeout == "approve":
                return Decision.proceed(decided_by=f"{DECIDED_BY} default on timeout (approve)")
            return Decision.deny(
                f"no answer in JupyterLab within {self.timeout_s:g} s; {call.tool} was not run",
                decided_by=f"{DECIDED_BY} default on timeout (deny)",
            )
        decision = outcome.get("decision")
        if outcome.get("state") != "decided" or not isinstance(decision, dict):
            raise NoAnswer(f"the proposal was {outcome.get('state')} without a decision")
        expected = proposal_hash(body["session_id"], call.tool, body["args"], body["diff"])
        if (
            decision.get("proposal_hash") != expected
            or decision.get("session_id") != body["session_id"]
        ):
            return Decision.deny(
                "the decision received was for another proposal; nothing was run",
                decided_by=DECIDED_BY,
            )
        return self._from_wire(call, decision)

    def _from_wire(self, call: ToolCall, wire: dict[str, Any]) -> Decision:
        who = str(wire.get("decided_by") or DECIDED_BY)
        user = str(wire.get("user") or "a person")
        verdict = wire.get("verdict")
        if verdict == "deny":
            reason = str(wire.get("reason") or "").strip()
            return Decision.deny(reason or f"Denied by {user} in JupyterLab", decided_by=who)
        self._grant(call, wire.get("trust"))
        if verdict == "proceed":
            return Decision.proceed(decided_by=who)
        if verdict == "modify" and isinstance(wire.get("content"), dict):
            return Decision.modify(
                content={str(k): str(v) for k, v in wire["content"].items()},
                message=f"edited in JupyterLab by {user}",
                decided_by=who,
            )
        if verdict == "modify" and isinstance(wire.get("args"), dict):
            return Decision.modify(
                args=wire["args"],
                message=f"arguments edited in JupyterLab by {user}",
                decided_by=who,
            )
        return Decision.deny(f"JupyterLab answered {verdict!r}, which is not a decision", who)

    def _grant(self, call: ToolCall, trust: Any) -> None:
        if not isinstance(trust, dict) or call.risk is not Risk.WRITE:
            return
        if trust.get("tool") is True and not call.never_trusted:
            self.trust.trust_tool(call.tool)
        paths = set(_paths(call))
        for path in trust.get("paths") or []:
            if path in paths:
                self.trust.trust_path(path)

    def _proposal(self, call: ToolCall) -> dict[str, Any]:
        changeset = call.changeset
        diff = call.diff or (changeset.unified_diff() if changeset is not None else "")
        body = {
            "session_id": call.session_id or self.session_id,
            "tool": call.tool,
            "risk": call.risk.value,
            "args": _jsonable(call.args),
            "diff": diff,
            "paths": _paths(call),
            "editable": _editable(changeset),
            "can_trust": call.risk is Risk.WRITE and not call.never_trusted,
            "origin": self.origin,
            "root": str(changeset.root) if changeset is not None else "",
            "timeout_s": self.timeout_s,
        }
        size = sum(len(str(value)) for value in body.values())
        if size > MAX_PROPOSAL_BYTES:
            raise NoAnswer(f"the proposal ({size} bytes) is too large to show in JupyterLab")
        return body

    async def _withdraw(self, server: JupyterServer, approval_id: str) -> None:
        if approval_id:
            with contextlib.suppress(JupyterUnreachable):
                await asyncio.to_thread(
                    server.request, "DELETE", f"tinyagent-fs/approvals/{approval_id}", timeout_s=5
                )


def _paths(call: ToolCall) -> list[str]:
    if call.changeset is not None:
        return call.changeset.relative_paths()
    return list(call.paths)


def _editable(changeset: ChangeSet | None) -> list[dict[str, str]]:
    if changeset is None:
        return []
    return [{"path": path, "text": text} for path, text in changeset.editable_texts().items()]


def _jsonable(args: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(args, ensure_ascii=False, default=str))
    return loaded


def _message(reply: Any) -> str:
    if isinstance(reply, dict):
        return str(reply.get("message") or reply.get("reason") or reply)[:300]
    return str(reply)[:300]


def _default_origin() -> str:
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    return f"{program} (pid {os.getpid()} on {socket.gethostname()})"
