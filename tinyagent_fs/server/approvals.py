"""The approval broker: proposals that wait for a person, and the first answer to each.

Any toolkit of the person (a kernel, a script, ``tinyagent-fs mcp``) puts a
proposal here; any frontend (the sidebar) answers it. One answer counts: a
proposal is decided, withdrawn by its agent, or expired, once. A decision names
the proposal's hash and session, so it can never apply to a changed proposal.
An agent that stops waiting (its long-poll gone for ``abandon_s``) loses its
proposal, so a killed script leaves no row behind; that absence is counted in
the sweeper's ticks, so a server whose loop was blocked does not blame the agent
for the time it could not hear it. Transport-free: the
handlers (``approval_handlers``) and the event bus are given to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..changes.proposal import proposal_hash

Row = dict[str, Any]
Announce = Callable[[str, "Proposal"], None]

VERDICTS = ("proceed", "deny", "modify")
SURFACE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
MAX_TIMEOUT_S = 24 * 3600.0
DEFAULT_ABANDON_S = 10.0
MAX_REASON_CHARS = 10_000
MAX_ORIGIN_CHARS = 200


class ApprovalError(Exception):
    """A request the broker refuses; ``status`` is the HTTP status it maps to."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Proposal:
    """One call waiting for a person, and what became of it."""

    id: str
    session_id: str
    tool: str
    risk: str
    args: dict[str, Any]
    diff: str
    paths: list[str]
    editable: list[Row]
    can_trust: bool
    origin: str
    root: str
    asked_by: str
    proposal_hash: str
    created: float
    deadline: float | None
    state: str = "pending"
    decision: Row | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    waiting: int = 0
    last_seen: float = field(default_factory=time.monotonic)
    unheard_ticks: int = 0

    def to_dict(self) -> Row:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "tool": self.tool,
            "risk": self.risk,
            "args": self.args,
            "diff": self.diff,
            "paths": self.paths,
            "editable": self.editable,
            "can_trust": self.can_trust,
            "origin": self.origin,
            "root": self.root,
            "asked_by": self.asked_by,
            "proposal_hash": self.proposal_hash,
            "created": self.created,
            "expires": None if self.deadline is None else time.time() + self._left(),
            "state": self.state,
        }

    def outcome(self) -> Row:
        """What the agent's long-poll returns."""
        return {
            "id": self.id,
            "state": self.state,
            "session_id": self.session_id,
            "proposal_hash": self.proposal_hash,
            "decision": self.decision,
        }

    def _left(self) -> float:
        return 0.0 if self.deadline is None else max(0.0, self.deadline - time.monotonic())


class ApprovalBroker:
    """Holds the pending proposals of one Jupyter server."""

    def __init__(
        self, announce: Announce | None = None, *, abandon_s: float = DEFAULT_ABANDON_S
    ) -> None:
        self.pending: dict[str, Proposal] = {}
        self.abandon_s = abandon_s
        self._announce = announce or (lambda action, proposal: None)
        self._sweeper: asyncio.Task[None] | None = None

    # --- the agent's side -----------------------------------------------

    def ask(self, body: Any, asked_by: str) -> Proposal:
        if not isinstance(body, dict):
            raise ApprovalError(400, "the body must be a JSON object")
        session_id = _text(body, "session_id", required=True)
        tool = _text(body, "tool", required=True)
        args = body.get("args", {})
        if not isinstance(args, dict):
            raise ApprovalError(400, "args must be a JSON object")
        diff = _text(body, "diff")
        timeout = body.get("timeout_s")
        if timeout is not None and (
            not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT_S
        ):
            raise ApprovalError(400, f"timeout_s must be a number in (0, {MAX_TIMEOUT_S:.0f}]")
        editable = _editable(body.get("editable", []))
        paths = body.get("paths", [])
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise ApprovalError(400, "paths must be a list of strings")
        now = time.monotonic()
        proposal = Proposal(
            id=uuid.uuid4().hex,
            session_id=session_id,
            tool=tool,
            risk=_text(body, "risk") or "write",
            args=args,
            diff=diff,
            paths=paths,
            editable=editable,
            can_trust=body.get("can_trust") is True,
            origin=_text(body, "origin")[:MAX_ORIGIN_CHARS],
            root=_text(body, "root"),
            asked_by=asked_by,
            proposal_hash=proposal_hash(session_id, tool, args, diff),
            created=time.time(),
            deadline=None if timeout is None else now + float(timeout),
            last_seen=now,
        )
        self.pending[proposal.id] = proposal
        self._announce("asked", proposal)
        return proposal

    async def wait(self, approval_id: str, wait_s: float) -> Proposal:
        """Until the proposal is settled or ``wait_s`` passed; the agent is seen meanwhile."""
        proposal = self._find(approval_id)
        proposal.waiting += 1
        try:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proposal.finished.wait(), max(0.0, wait_s))
        finally:
            proposal.waiting -= 1
            proposal.last_seen = time.monotonic()
            proposal.unheard_ticks = 0
        return proposal

    def withdraw(self, approval_id: str) -> Proposal:
        proposal = self._find(approval_id)
        if proposal.state == "pending":
            self._finish(proposal, "withdrawn")
        return proposal

    # --- the person's side ----------------------------------------------

    def listing(self) -> list[Row]:
        self.sweep()
        rows = [p.to_dict() for p in self.pending.values() if p.state == "pending"]
        return sorted(rows, key=lambda row: row["created"])

    def get(self, approval_id: str) -> Proposal:
        return self._find(approval_id)

    def decide(self, approval_id: str, body: Any, user: str) -> Proposal:
        proposal = self._find(approval_id)
        if not isinstance(body, dict):
            raise ApprovalError(400, "the body must be a JSON object")
        if (
            body.get("proposal_hash") != proposal.proposal_hash
            or body.get("session_id") != proposal.session_id
        ):
            raise ApprovalError(
                409, "this decision is for another proposal (hash or session differ)"
            )
        self.sweep()
        if proposal.state != "pending":
            raise ApprovalError(409, f"this proposal is already {proposal.state}")
        proposal.decision = _decision(proposal, body, user)
        self._finish(proposal, "decided")
        return proposal

    # --- keeping it clean -------------------------------------------------

    def sweep(self) -> None:
        """Expire proposals past their deadline and forget settled ones once collected."""
        now = time.monotonic()
        for proposal in list(self.pending.values()):
            if proposal.state != "pending":
                if now - proposal.last_seen > self.abandon_s:
                    del self.pending[proposal.id]  # settled and collected (or never will be)
            elif proposal.deadline is not None and now >= proposal.deadline:
                self._finish(proposal, "expired")

    def tick(self, interval_s: float) -> None:
        """One sweep of the sweeper, ``interval_s`` after the last: a proposal no agent
        has waited for during ``abandon_s`` worth of ticks is dropped. A tick that came
        late (the loop was blocked) counts once, since no agent could be heard meanwhile."""
        for proposal in list(self.pending.values()):
            if proposal.state == "pending" and not proposal.waiting:
                proposal.unheard_ticks += 1
                if proposal.unheard_ticks * interval_s > self.abandon_s:
                    self._finish(proposal, "abandoned")
        self.sweep()

    def start(self, interval_s: float = 0.5) -> None:
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_every(interval_s))

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        for proposal in self.pending.values():
            if proposal.state == "pending":
                self._finish(proposal, "withdrawn")

    async def _sweep_every(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            self.tick(interval_s)

    def _find(self, approval_id: str) -> Proposal:
        proposal = self.pending.get(approval_id)
        if proposal is None:
            raise ApprovalError(404, f"no proposal {approval_id!r} is known here")
        return proposal

    def _finish(self, proposal: Proposal, state: str) -> None:
        proposal.state = state
        proposal.last_seen = time.monotonic()
        proposal.finished.set()
        self._announce(state, proposal)


def _text(body: Row, key: str, *, required: bool = False) -> str:
    value = body.get(key, "")
    if not isinstance(value, str) or (required and not value):
        raise ApprovalError(400, f"{key} must be a{' non-empty' if required else ''} string")
    return value


def _editable(value: Any) -> list[Row]:
    if not isinstance(value, list) or not all(
        isinstance(item, dict)
        and isinstance(item.get("path"), str)
        and isinstance(item.get("text"), str)
        for item in value
    ):
        raise ApprovalError(400, "editable must be a list of {path, text} objects")
    return [{"path": item["path"], "text": item["text"]} for item in value]


def _decision(proposal: Proposal, body: Row, user: str) -> Row:
    """The decision as the agent receives it; who decided comes from the server's identity."""
    verdict = body.get("verdict")
    if verdict not in VERDICTS:
        raise ApprovalError(400, f"verdict must be one of {', '.join(VERDICTS)}")
    surface = body.get("surface", "web")
    if not isinstance(surface, str) or not SURFACE.match(surface):
        raise ApprovalError(400, "surface must be a short lower-case name like jupyter-sidebar")
    reason = body.get("reason", "")
    if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS:
        raise ApprovalError(400, f"reason must be a string of at most {MAX_REASON_CHARS} chars")
    decision: Row = {
        "verdict": verdict,
        "reason": reason,
        "decided_by": f"{surface}:{user}",
        "user": user,
        "content": None,
        "args": None,
        "trust": _trust(proposal, body.get("trust")),
        "proposal_hash": proposal.proposal_hash,
        "session_id": proposal.session_id,
    }
    if verdict == "modify":
        decision["content"], decision["args"] = _modification(proposal, body)
    return decision


def _modification(proposal: Proposal, body: Row) -> tuple[dict[str, str] | None, Row | None]:
    content, args = body.get("content"), body.get("args")
    if content is not None:
        allowed = {item["path"] for item in proposal.editable}
        if (
            not isinstance(content, dict)
            or not content
            or not all(
                isinstance(path, str) and path in allowed and isinstance(text, str)
                for path, text in content.items()
            )
        ):
            raise ApprovalError(400, "content must map the proposal's editable paths to text")
        return content, None
    if isinstance(args, dict):
        return None, args
    raise ApprovalError(400, "a modify decision needs content (edited files) or args")


def _trust(proposal: Proposal, value: Any) -> Row:
    if value is None:
        return {"tool": False, "paths": []}
    if not isinstance(value, dict):
        raise ApprovalError(400, "trust must be an object {tool, paths}")
    tool, paths = value.get("tool", False) is True, value.get("paths", [])
    if not isinstance(paths, list) or not all(p in proposal.paths for p in paths):
        raise ApprovalError(400, "trust.paths must be paths of this proposal")
    if (tool or paths) and not proposal.can_trust:
        raise ApprovalError(400, f"{proposal.tool} cannot be trusted for a session")
    return {"tool": tool, "paths": list(paths)}
