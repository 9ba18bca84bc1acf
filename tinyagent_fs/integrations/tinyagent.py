"""TinyAgent adapter: our tools in a TinyAgent, and every tool call it makes reviewed by our hooks.

Two pieces, used together::

    fs = FileTools("project", hooks=[JupyterHook()])
    agent = TinyAgent(model=..., tool_call_timeout=3600)
    register_tools(agent, fs)
    TinyAgentApprovalHook(fs).attach(agent)

``register_tools`` gives the agent our file tools (replacing its own
``read_file``/``write_file``/``update_file``/``glob``/``grep``); they already go
through our pipeline. ``TinyAgentApprovalHook`` puts every *other* call the agent
makes (MCP tools, tools you add) in front of the same hooks, so one JupyterHook
approves them all and one audit log records them. A TinyCodeAgent's ``bash`` and
``run_python`` also need confining: see ``tinycodeagent.register_code_agent``.

How TinyAgent treats hooks (tinyagent-py 0.1.x): a callback object with a
``before_tool_execution`` method is asked before each tool runs; the first one
that returns a dict decides, and only ``proceed`` and ``alternative_response``
are honoured (``modified_args`` is ignored). It then passes the *same* argument
dict it showed the hook on to the tool, so a Modify is applied by rewriting that
dict in place. An exception in a hook is logged and the tool runs anyway, so this
hook turns its own failures into a refusal. TinyAgent's ``tool_call_timeout``
covers the hooks too: raise it well above how long a person may take to answer.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tinyagent import tool

from ..audit.log import AuditLog
from ..hooks.decision import Decision, Risk, ToolCall, Verdict
from ..hooks.runner import HookRunner, Review, with_new_arguments
from ..result import ToolResult
from ..tools.call_record import CallOutcome, audit_event, denial_text, modification_note
from ..tools.facade import FileTools
from ..tools.schema_export import portable_schema

OWNER_ATTRIBUTE = "__tinyagent_fs__"
"""Set on the tool functions ``register_tools`` creates, naming the FileTools behind them."""

CONTROL_TOOLS = frozenset({"final_answer", "ask_question", "notify_user"})
"""TinyAgent's conversation-control tools: they end or annotate the loop and touch nothing."""

DEFAULT_RISKS: Mapping[str, Risk] = {
    "bash": Risk.EXECUTE,
    "run_python": Risk.EXECUTE,
    "read_file": Risk.READ,
    "glob": Risk.READ,
    "grep": Risk.READ,
    "write_file": Risk.WRITE,
    "update_file": Risk.WRITE,
    "TodoWrite": Risk.READ,
}
"""How TinyAgent's and TinyCodeAgent's own tools are classified; anything unknown is EXECUTE."""

DECIDED_BY_FAILURE = "tinyagent-fs approval hook"


def register_tools(
    agent: Any,
    fs: FileTools,
    tools: Sequence[str] | None = None,
    replace_builtin: bool = True,
) -> list[str]:
    """Add our tools to a TinyAgent (or TinyCodeAgent) and return the names added.

    Each tool is an async function (TinyAgent runs a synchronous tool twice) that
    calls ``fs.call`` and returns ``result.text``, announced with our description
    and JSON schema. A tool of the same name that the agent already has is
    replaced when ``replace_builtin`` is true and left alone (ours is skipped)
    otherwise.
    """
    names = list(tools) if tools is not None else fs.tool_names()
    unknown = [name for name in names if name not in fs.tools]
    if unknown:
        raise ValueError(f"unknown tool(s) {', '.join(unknown)}; choose from {fs.tool_names()}")
    added: list[str] = []
    for name in names:
        if _agent_has_tool(agent, name):
            if not replace_builtin:
                continue
            _remove_tool(agent, name)
        agent.add_tool(_tool_function(fs, name))
        added.append(name)
    return added


def _tool_function(fs: FileTools, name: str) -> Any:
    spec = fs.tools[name]

    async def call_tool(**arguments: Any) -> str:
        result = await fs.call(name, arguments)
        return result.text

    call_tool.__name__ = name
    call_tool.__qualname__ = name
    setattr(call_tool, OWNER_ATTRIBUTE, fs)
    schema = portable_schema(spec.parameters)
    decorate = tool(name=name, description=spec.description, schema=schema)
    return decorate(call_tool)


def _schema_name(entry: Any) -> str | None:
    if isinstance(entry, dict):
        function = entry.get("function")
        if isinstance(function, dict):
            return function.get("name")
    return None


def _agent_has_tool(agent: Any, name: str) -> bool:
    if name in agent.custom_tool_handlers:
        return True
    return any(_schema_name(entry) == name for entry in agent.available_tools)


def _remove_tool(agent: Any, name: str) -> None:
    agent.custom_tool_handlers.pop(name, None)
    agent.custom_tools[:] = [e for e in agent.custom_tools if _schema_name(e) != name]
    agent.available_tools[:] = [e for e in agent.available_tools if _schema_name(e) != name]


def is_our_tool(agent: Any, name: str) -> bool:
    """Whether the agent's tool of this name is one ``register_tools`` added."""
    handler = agent.custom_tool_handlers.get(name)
    return getattr(handler, OWNER_ATTRIBUTE, None) is not None


@dataclass
class _Running:
    """A reviewed call between TinyAgent's before and after callbacks."""

    review: Review
    started: float


class TinyAgentApprovalHook:
    """Routes every tool call a TinyAgent makes through our hooks, and audits it.

    ``fs_or_hooks`` is a FileTools (its hooks and audit log are used, and its
    per-round budget restarts at each ``agent.run``) or the hooks themselves (a
    HookRunner or a list of hook objects), with ``audit`` naming the log.

    Our own tools are left to our pipeline, which already asked, so a person is
    never asked twice; TinyAgent's control tools (``final_answer``...) pass
    untouched. ``risks`` classifies other tools by name (see ``DEFAULT_RISKS``);
    unknown tools count as EXECUTE, so a risk-based policy always asks for them.

    Attach it with ``attach(agent)``, which puts it first among the agent's
    callbacks: TinyAgent takes the first hook that answers, so one added after
    a permissive hook would never be asked. When a person approves calls, give
    the agent a ``tool_call_timeout`` (seconds) longer than they may take to
    answer: TinyAgent's timeout includes the time spent in this hook.
    """

    name = "tinyagent"

    def __init__(
        self,
        fs_or_hooks: FileTools | HookRunner | Sequence[Any],
        *,
        audit: AuditLog | None = None,
        risks: Mapping[str, Risk] | None = None,
        passthrough: Collection[str] = CONTROL_TOOLS,
    ) -> None:
        self.fs: FileTools | None = None
        if isinstance(fs_or_hooks, FileTools):
            self.fs = fs_or_hooks
            self.runner = fs_or_hooks.hooks
            self.audit = audit if audit is not None else fs_or_hooks.audit
        else:
            runner = fs_or_hooks
            self.runner = runner if isinstance(runner, HookRunner) else HookRunner(runner)
            self.audit = audit
        self.risks: dict[str, Risk] = {**DEFAULT_RISKS, **(risks or {})}
        self.passthrough = frozenset(passthrough)
        self._running: dict[str, _Running] = {}

    def attach(self, agent: Any) -> TinyAgentApprovalHook:
        agent.callbacks.insert(0, self)
        return self

    def risk_of(self, tool_name: str) -> Risk:
        return self.risks.get(tool_name, Risk.EXECUTE)

    async def __call__(self, event_name: str, agent: Any, *args: Any, **kwargs: Any) -> None:
        """TinyAgent sends every event to every callback; a new run is a new round."""
        if event_name == "agent_start" and self.fs is not None:
            self.fs.new_round()

    async def before_tool_execution(
        self,
        event_name: str,
        agent: Any,
        *,
        tool_name: str,
        tool_args: dict[str, Any],
        tool_call: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any] | None:
        if tool_name in self.passthrough or is_our_tool(agent, tool_name):
            return None
        started = time.perf_counter()
        call_id = getattr(tool_call, "id", None) or uuid.uuid4().hex[:12]
        risk = self.risk_of(tool_name)
        call = ToolCall(
            tool_name,
            dict(tool_args),
            risk,
            call_id=call_id,
            session_id=str(getattr(agent, "session_id", "") or ""),
        )
        try:
            review = await self.runner.before(call, with_new_arguments)
        except Exception as exc:  # TinyAgent would run the tool if this escaped
            decision = Decision.deny(
                f"the approval step failed ({type(exc).__name__}: {exc}), so the call was not run",
                decided_by=DECIDED_BY_FAILURE,
            )
            review = Review(call, decision)
        verdict = review.decision.verdict
        if verdict is Verdict.DENY:
            text = denial_text(review.decision)
            self._record(review, "denied", started, text)
            return {"proceed": False, "alternative_response": text}
        if verdict is Verdict.ALTERNATIVE_RESPONSE:
            text = review.decision.response or ""
            self._record(review, "ok", started, text)
            return {"proceed": False, "alternative_response": text}
        if review.modified_by:
            tool_args.clear()
            tool_args.update(copy.deepcopy(review.call.args))
        self._running[call_id] = _Running(review, started)
        return None

    async def after_tool_execution(
        self,
        event_name: str,
        agent: Any,
        *,
        tool_name: str,
        tool_args: dict[str, Any],
        tool_call: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any] | None:
        running = self._running.pop(str(getattr(tool_call, "id", "") or ""), None)
        if running is None:
            return None
        output = str(tool_args.get("result", ""))
        review = running.review
        try:
            result = await self.runner.after(review.call, ToolResult.success(output))
            text = result.text
        except Exception as exc:
            text = f"{output}\n(note: an after-hook failed: {type(exc).__name__}: {exc})"
        if review.modified_by:
            text += "\n" + modification_note(review)
        self._record(review, "ok", running.started, text)
        return {"modified_result": text} if text != output else None

    def _record(self, review: Review, outcome: str, started: float, message: str) -> None:
        if self.audit is None:
            return
        outcome_of_call = CallOutcome(
            tool=review.call.tool,
            arguments=review.call.args,
            started=started,
            provider="tinyagent",
            root=str(self.fs.root) if self.fs is not None else "",
            session_id=review.call.session_id,
            decision=review.decision,
            outcome=outcome,
            message=message,
        )
        self.audit.record(audit_event(outcome_of_call))
