"""JupyterHook: each write, delete or command is put to a person in the notebook.

Use it as the only hook (``FileTools(root, hooks=[JupyterHook()])``): reads go
through without a question, everything else follows the risk-based policy and
asks with an approval card. It also works as the approver of a
``RiskBasedPolicy`` you configure yourself.

Each pending call owns a ``concurrent.futures.Future``; a click resolves it
from whichever thread delivered the click (the kernel's main thread or a
subshell thread), and the waiting coroutine sees it through
``asyncio.wrap_future``, which hops to its own loop thread-safely. The first
answer wins: a click, a timeout, or the waiter being cancelled. How clicks
reach a kernel while a cell is running is in ``kernel_bridge``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import getpass
import html
import os
import threading
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from ..hooks.decision import Decision, NoAnswer, Risk, ToolCall, Verdict
from ..hooks.policies import (
    POLICY_ENV,
    SIDEBAR_DECIDER,
    RiskBasedPolicy,
    policy_from_name,
)
from ..render.diff_render import DIFF_CSS, render_changeset
from ..text.display_safe import visible
from .approval_card import ApprovalCard, TrustChoice
from .call_text import record_html, summary_text
from .config import FRONTEND_ENV, TinyAgentFS, load_settings
from .kernel_bridge import (
    KernelSide,
    current_kernel,
    frontend_evidence,
    pump_comm_messages,
    responds,
    unresponsive,
)

HEADLESS_DIFF_LINES = 60


@dataclass(frozen=True)
class Mode:
    """Whether a person is asked, and why (shown in the notebook)."""

    interactive: bool
    policy: str
    reason: str

    def describe(self) -> str:
        if self.interactive:
            return (
                "Approvals are interactive: each write, delete or command is shown with "
                "Approve / Modify / Deny before it runs; reads go through "
                f"(risk-based policy; {self.reason})."
            )
        effect = {
            "auto-approve": "every call goes through",
            "deny-all": "reads go through, everything else is refused",
            "risk-based": "reads go through, writes, deletes and commands are refused",
        }[self.policy]
        return (
            f"No one is asked here: {self.reason}. The {self.policy} policy decides every "
            f"call: {effect} (set {POLICY_ENV} or c.TinyAgentFS.policy to change it)."
        )


class PendingApproval:
    """One call waiting for an answer; the first ``resolve`` wins, from any thread."""

    def __init__(self, call: ToolCall, hook: JupyterHook, policy_note: str) -> None:
        self.call = call
        self.future: concurrent.futures.Future[Decision] = concurrent.futures.Future()
        self.how = ""
        self._hook = hook
        self._lock = threading.Lock()
        can_trust = not call.never_trusted and call.risk is Risk.WRITE
        self.card = ApprovalCard(
            call,
            hook.settings,
            self._clicked,
            who=hook.who,
            policy_note=policy_note,
            can_trust=can_trust,
        )

    def _clicked(self, decision: Decision, trust: TrustChoice) -> None:
        self.resolve(decision, trust=trust)

    def resolve(self, decision: Decision, how: str = "", trust: TrustChoice | None = None) -> bool:
        """Settle the call with ``decision`` unless something else already did."""
        with self._lock:
            if self.future.done():
                return False
            if trust is not None:
                self._hook.grant(trust)
            self.how = how
            self.future.set_result(decision)
        self._hook.pending.pop(self.call.call_id, None)
        self.card.close(decision, how)
        return True


class _Approver:
    """What the risk-based policy asks; a separate object so the policy never loops back."""

    def __init__(self, hook: JupyterHook) -> None:
        self._hook = hook

    async def before_tool_execution(self, call: ToolCall) -> Decision:
        return await self._hook.ask(call)


class JupyterHook:
    """Shows mutating calls as approval cards and waits for Approve / Modify / Deny.

    ``policy``, ``timeout_s`` (None: wait as long as it takes),
    ``default_on_timeout`` ("deny" or "approve") and ``frontend`` ("auto",
    "widgets", "none") override the ``TinyAgentFS`` settings from Jupyter
    config and the environment. ``container`` is a Box the cards are added to
    instead of being displayed where the call happens; ``show()`` makes one.
    """

    name = "jupyter"

    def __init__(
        self,
        policy: str | None = None,
        timeout_s: float | None = None,
        default_on_timeout: str | None = None,
        *,
        frontend: str | None = None,
        container: widgets.Box | None = None,
        settings: TinyAgentFS | None = None,
    ) -> None:
        self.settings = settings or load_settings(
            policy=policy,
            approval_timeout_s=timeout_s,
            default_on_timeout=default_on_timeout,
            frontend=frontend,
        )
        self.risk_policy = RiskBasedPolicy(approver=_Approver(self))
        self.container = container
        self.pending: dict[str, PendingApproval] = {}
        self.who = f"{_user()} (notebook)"

    @property
    def mode(self) -> Mode:
        settings = self.settings
        if settings.policy != "risk-based":
            return Mode(False, settings.policy, f"the {settings.policy} policy was chosen")
        if settings.frontend == "none":
            return Mode(False, "risk-based", f"the frontend setting is 'none' (${FRONTEND_ENV})")
        if settings.frontend == "widgets":
            return Mode(True, "risk-based", "the frontend setting is 'widgets'")
        if current_kernel() is None:
            return Mode(False, "risk-based", "this is not running in a Jupyter kernel")
        evidence = frontend_evidence()
        if evidence:
            return Mode(True, "risk-based", evidence)
        return Mode(
            False,
            "risk-based",
            "no widget frontend is attached (nbval, CI, or a kernel not started by "
            f"Jupyter Server; set {FRONTEND_ENV}=widgets if there is one)",
        )

    def describe(self) -> str:
        return self.mode.describe()

    async def answer(self, call: ToolCall) -> Decision:
        """For ``FirstAnswer``: the card's answer; ``NoAnswer`` where no card can be clicked.

        ``FirstAnswer(JupyterHook(), WebApprovalHook())`` shows the card and the
        sidebar's Pending row together; without a frontend the sidebar alone asks.
        """
        mode = self.mode
        if not mode.interactive and mode.policy == "risk-based":
            raise NoAnswer(f"no approval card can be clicked here: {mode.reason}")
        return await self.before_tool_execution(call)

    def withdraw(self, call: ToolCall, winner: Decision | None) -> None:
        """Another place answered first: the card becomes the record of that answer."""
        approval = self.pending.get(call.call_id)
        if approval is not None and winner is not None:
            approval.resolve(winner, how=f"answered first in {_place(winner.decided_by)}")

    def show(self) -> widgets.VBox:
        """Display a panel where every approval of this hook appears, and return it.

        Useful when the agent runs in the background: the cards land here rather
        than under whichever cell happens to be running.
        """
        intro = widgets.HTML(f"<i>{html.escape(self.describe())}</i>")
        self.container = widgets.VBox([intro])
        _display(self.container)
        return self.container

    def grant(self, trust: TrustChoice) -> None:
        """Remember what a person trusted; the risk-based policy consults it next time
        (and never lets a ``never_trusted`` call through on it)."""
        if trust.tool is not None:
            self.risk_policy.trust_tool(trust.tool)
        for path in trust.paths:
            self.risk_policy.trust_path(path)

    async def before_tool_execution(self, call: ToolCall) -> Decision:
        mode = self.mode
        if mode.interactive:
            return await self.risk_policy.before_tool_execution(call)
        return self._decide_without_asking(call, mode)

    async def ask(self, call: ToolCall) -> Decision:
        """Show the card and wait for an answer on the running event loop."""
        side = current_kernel()
        approval = self._open(call, side)
        waiter = asyncio.wrap_future(approval.future)
        # Helpers: one keeps clicks flowing on old kernels; one gives up on a stuck kernel.
        helpers: set[asyncio.Task[Any]] = set()
        watchdog: set[asyncio.Task[Any]] = set()
        if side is not None and side.on_main_loop():
            helpers.add(asyncio.ensure_future(pump_comm_messages(side, waiter)))
        elif side is not None and side.main_loop is not None and not side.on_shell_thread():
            grace = self.settings.busy_kernel_grace_s
            watchdog.add(asyncio.ensure_future(unresponsive(side.main_loop, grace)))
        try:
            done, _ = await asyncio.wait(
                {waiter, *watchdog},
                timeout=self.settings.timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except asyncio.CancelledError:
            approval.resolve(
                Decision.deny("the agent stopped waiting before anyone answered", self.name),
                how="cancelled",
            )
            raise
        finally:
            for helper in helpers | watchdog:
                helper.cancel()
        if waiter in done:
            return waiter.result()
        if done:
            how = "the kernel's main thread was busy, so no click could arrive"
        else:
            how = f"no answer within {self.settings.timeout:g} s"
        return self._fall_back(approval, how)

    def decide(self, call: ToolCall, timeout_s: float | None = None) -> Decision:
        """For synchronous callers: ask, but never block longer than ``timeout_s``.

        ``timeout_s`` defaults to ``sync_wait_s`` (or the approval timeout, if
        shorter). On a thread that handles the kernel's messages no click can
        arrive while it blocks, so the default decision applies at once.
        """
        mode = self.mode
        if not mode.interactive:
            return self._decide_without_asking(call, mode)
        if call.risk is Risk.READ or self.risk_policy.is_trusted(call):
            return Decision.proceed(decided_by=self.risk_policy.name)
        side = current_kernel()
        approval = self._open(call, side)
        if side is not None and side.on_shell_thread():
            how = "a synchronous wait on the kernel's own thread cannot receive a click"
            return self._fall_back(approval, how)
        limit = min(timeout_s or self.settings.sync_wait_s, self.settings.timeout or float("inf"))
        slice_s = min(0.5, limit)
        waited = 0.0
        while waited < limit:
            try:
                return approval.future.result(timeout=slice_s)
            except concurrent.futures.TimeoutError:
                waited += slice_s
            loop = side.main_loop if side is not None else None
            if loop is not None and not responds(loop, self.settings.busy_kernel_grace_s):
                return self._fall_back(approval, "the kernel's main thread was busy")
        return self._fall_back(approval, f"no answer within {limit:g} s")

    def _decide_without_asking(self, call: ToolCall, mode: Mode) -> Decision:
        if mode.policy == "risk-based":
            # The risk-based policy with nobody to ask: reads proceed, the rest is refused.
            if call.mutating:
                decision = Decision.deny(
                    f"{call.tool} needs a person's approval ({call.risk.value}), and "
                    f"{mode.reason}; {RiskBasedPolicy().no_approver_hint}",
                    decided_by="risk-based",
                )
            else:
                decision = Decision.proceed(decided_by="risk-based")
        else:
            decision = policy_from_name(mode.policy).before_tool_execution(call)
        if call.mutating:
            self._show_decided(call, decision, mode)
        return decision

    def _open(self, call: ToolCall, side: KernelSide | None) -> PendingApproval:
        approval = PendingApproval(call, self, self._policy_note(call, side))
        self.pending[call.call_id] = approval
        if self.container is not None:
            self.container.children = (*self.container.children, approval.card.widget)
        else:
            _display(approval.card.widget)
        return approval

    def _fall_back(self, approval: PendingApproval, how: str) -> Decision:
        """The default decision, unless an answer got in first."""
        if self.settings.default_on_timeout == "approve":
            fallback = Decision.proceed(decided_by=f"{self.name} default (approve)")
        else:
            fallback = Decision.deny(
                f"{approval.call.tool} was not approved: {how}, and the default is to deny",
                decided_by=f"{self.name} default (deny)",
            )
        if approval.resolve(fallback, how=how):
            return fallback
        return approval.future.result()

    def _policy_note(self, call: ToolCall, side: KernelSide | None) -> str:
        if call.never_trusted:
            note = f"Policy risk-based: {call.never_trusted}."
        elif call.risk is Risk.EXECUTE:
            note = "Policy risk-based: commands always ask and cannot be trusted for the session."
        elif call.risk is Risk.DESTRUCTIVE:
            note = "Policy risk-based: deletes always ask and cannot be trusted for the session."
        else:
            note = "Policy risk-based: writes ask unless you trust the file or the tool."
        if self.settings.timeout is not None:
            verb = self.settings.default_on_timeout
            note += f" No answer in {self.settings.timeout:g} s: {verb}."
        old_kernel = side is not None and (7, 0) <= side.version < (7, 4)
        if old_kernel and side is not None and side.on_main_loop() and side.cell_running():
            note += (
                f" ipykernel {side.version[0]}.{side.version[1]} delivers this click after"
                " the cell ends unless the frontend uses a subshell: run the agent with"
                " asyncio.create_task(...) or upgrade to ipykernel 7.4 or later."
            )
        return note

    def _show_decided(self, call: ToolCall, decision: Decision, mode: Mode) -> None:
        """Leave a record of a call nobody was asked about: what it did and who decided."""
        summary = summary_text(call)
        verdict = "allowed" if decision.verdict is not Verdict.DENY else "denied"
        plain = visible(f"{summary}: {verdict} by {decision.decided_by} ({mode.reason})")
        rich = record_html(call, summary, decision, how=mode.reason)
        if call.diff:
            lines = call.diff.splitlines()
            shown = lines[:HEADLESS_DIFF_LINES]
            if len(lines) > len(shown):
                shown.append(f"... ({len(lines) - len(shown)} more diff lines)")
            plain += "\n" + visible("\n".join(shown), keep_newlines=True)
        if call.changeset is not None:
            rendered = render_changeset(
                call.changeset,
                max_lines=self.settings.diff_preview_lines,
                diff=call.diff or None,
                highlight_max_bytes=self.settings.highlight_max_bytes,
            )
            rich += (
                f"<details><summary>Diff</summary><style>{DIFF_CSS}</style>"
                f"{rendered.html}</details>"
            )
        _display({"text/plain": plain, "text/html": rich}, raw=True)


def _display(obj: Any, raw: bool = False) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is None:
        return
    display(obj, raw=raw)


def _place(decided_by: str) -> str:
    """Where an answer that beat the card was given, as a person names it."""
    if decided_by.startswith(SIDEBAR_DECIDER):
        return "the JupyterLab sidebar"
    if decided_by == "terminal":
        return "the terminal"
    return decided_by or "another approver"


def _user() -> str:
    explicit = os.environ.get("JUPYTERHUB_USER")
    if explicit:
        return explicit
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "someone"
