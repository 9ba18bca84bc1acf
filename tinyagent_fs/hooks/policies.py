"""Non-interactive decision policies, and the risk-based one that knows when to ask."""

from __future__ import annotations

import inspect
import os
from typing import Any

from .decision import Decision, Risk, ToolCall

POLICY_ENV = "TINYAGENT_FS_POLICY"
POLICY_NAMES = ("auto-approve", "deny-all", "risk-based")
PERSON_DECIDERS = frozenset({"terminal", "mcp-elicitation"})
"""``decided_by`` of the hooks that put the call to a person (the notebook card's is
``"<user> (notebook)"``, the sidebar's ``"jupyter-sidebar:<user>"``); anything else
decided by a rule, nobody was asked."""
SIDEBAR_DECIDER = "jupyter-sidebar:"


def decided_by_person(decided_by: str) -> bool:
    """Whether a person answered, from the audit event's ``decided_by``.

    The sidebar says "approved" only then and "allowed by policy" otherwise
    (``labextension/src/format.ts`` holds the same rule).
    """
    return (
        decided_by in PERSON_DECIDERS
        or decided_by.endswith(" (notebook)")
        or decided_by.startswith(SIDEBAR_DECIDER)
    )


class AutoApprovePolicy:
    """Lets every call through: for scripts and CI where the sandbox is the only wall."""

    name = "auto-approve"
    reads_diff = False

    def before_tool_execution(self, call: ToolCall) -> Decision:
        return Decision.proceed(decided_by=self.name)


class DenyAllPolicy:
    """Lets reads through and refuses everything else."""

    name = "deny-all"
    reads_diff = False

    def before_tool_execution(self, call: ToolCall) -> Decision:
        if call.risk is Risk.READ:
            return Decision.proceed(decided_by=self.name)
        return Decision.deny(
            f"{call.tool} was refused: the deny-all policy allows only reads",
            decided_by=self.name,
        )


class RiskBasedPolicy:
    """Reads proceed; writes and edits ask; deletes and commands always ask.

    ``approver`` is the hook that asks a person (terminal, notebook widget). With
    none attached, a call that would ask is denied with a message that says how
    to allow it. Trust granted for a tool or a file for the session lets writes
    through without asking, never deletes, commands or a call its tool marks
    ``never_trusted`` (undo, which may delete what a change created).
    """

    name = "risk-based"

    def __init__(self, approver: Any | None = None, no_approver_hint: str = "") -> None:
        self.approver = approver
        self.no_approver_hint = no_approver_hint or (
            "no interactive approver is attached; choose the auto-approve policy "
            f"(set {POLICY_ENV}=auto-approve or pass --policy auto-approve) to allow writes"
        )
        self.trusted_tools: set[str] = set()
        self.trusted_paths: set[str] = set()
        self.trusted_sessions: set[str] = set()
        """Interactive sessions whose typed input goes through unasked (``trust_session``)."""

    def trust_session(self, session_id: str) -> None:
        """Let ``write_stdin`` type into this one session without asking again (its
        command was approved already; other sessions still ask)."""
        self.trusted_sessions.add(str(session_id))

    def trust_tool(self, tool: str) -> None:
        """Let this tool's writes through unasked; its ``never_trusted`` calls still ask."""
        self.trusted_tools.add(tool)

    def trust_path(self, relative_path: str) -> None:
        self.trusted_paths.add(relative_path)

    def is_trusted(self, call: ToolCall) -> bool:
        if call.never_trusted or call.risk in (Risk.DESTRUCTIVE, Risk.EXECUTE):
            return False
        if call.tool in self.trusted_tools:
            return True
        paths = call.changeset.relative_paths() if call.changeset else []
        return bool(paths) and all(p in self.trusted_paths for p in paths)

    async def before_tool_execution(self, call: ToolCall) -> Decision:
        if call.risk is Risk.READ or _types_nothing(call):
            return Decision.proceed(decided_by=self.name)
        if call.tool == "write_stdin" and str(call.args.get("session_id")) in self.trusted_sessions:
            return Decision.proceed(decided_by=f"{self.name} (session trusted)")
        if self.is_trusted(call):
            return Decision.proceed(decided_by=f"{self.name} (trusted for this session)")
        if self.approver is None:
            return Decision.deny(
                f"{call.tool} needs a person's approval ({call.risk.value}); "
                + self.no_approver_hint,
                decided_by=self.name,
            )
        decision = self.approver.before_tool_execution(call)
        if inspect.isawaitable(decision):
            decision = await decision
        return decision


def _types_nothing(call: ToolCall) -> bool:
    """A ``write_stdin`` that only reads, or a ``close_session``: nothing new runs."""
    if call.tool == "write_stdin":
        return not call.args.get("chars")
    return call.tool == "close_session"


def policy_from_name(name: str | None = None, approver: Any | None = None) -> Any:
    """The policy hook for a name, or for ``$TINYAGENT_FS_POLICY`` (default risk-based)."""
    chosen = (name or os.environ.get(POLICY_ENV) or "risk-based").strip().lower()
    if chosen == "auto-approve":
        return AutoApprovePolicy()
    if chosen == "deny-all":
        return DenyAllPolicy()
    if chosen == "risk-based":
        return RiskBasedPolicy(approver=approver)
    raise ValueError(f"unknown policy {chosen!r}; choose one of {', '.join(POLICY_NAMES)}")
