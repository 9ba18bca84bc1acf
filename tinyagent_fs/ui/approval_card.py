"""One approval in the notebook: what the call will do, and Approve / Modify / Deny.

The card is one anywidget (``approval_card.js``) whose controls are plain DOM in
the browser. Nothing a person ticks, types or switches is synced as widget
state: JupyterLab sends a widget's state changes one at a time, each waiting for
the kernel to report idle, and a kernel whose cell awaits the agent never does,
so only the first change of a box would arrive. Instead each answer is ONE
custom message (``model.send``; custom messages are not held back) carrying the
decision with the whole form: both trust boxes, the Deny reason, every edited
text. The kernel acts on that message alone. Which diff view is shown is the
browser's business; the full diff and the texts to edit are fetched with a
custom message when first asked for, so a huge change costs nothing until then.

The card knows nothing about threads or waiting. Each answer ends in one call
to ``on_answer(decision, trust)``; the owner decides whether that answer still
counts (a timeout may have come first) and then calls ``close`` to turn the
card into its one-line record. Every control is a real ``<button>``,
``<input>`` or ``<textarea>`` with a text name, so Tab, Enter and Space work
without a mouse.

What the card shows as HTML is made here, escaped (``html.escape``, and
``visible`` for names and commands); the browser adds only text nodes.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ..hooks.decision import Decision, Risk, ToolCall, Verdict
from ..render.diff_render import DIFF_CSS, VIEWS, render_changeset
from ..text.display_safe import visible, visible_html
from .call_text import (
    argument_change_message,
    content_change_message,
    record_html,
    summary_text,
    written_call,
)
from .config import TinyAgentFS

_HERE = Path(__file__).parent


@dataclass(frozen=True)
class TrustChoice:
    """What the person asked to trust for the rest of the session along with an approval."""

    tool: str | None = None
    paths: tuple[str, ...] = ()


Answer = Callable[[Decision, TrustChoice], None]


class CardWidget(anywidget.AnyWidget):
    """The browser half of a card. Its state only ever flows from the kernel to the page."""

    _esm = (_HERE / "approval_card.js").read_text(encoding="utf-8")
    _css = (_HERE / "approval_card.css").read_text(encoding="utf-8") + DIFF_CSS
    heading = traitlets.Unicode("").tag(sync=True)
    details = traitlets.Unicode("").tag(sync=True)
    """The arguments as HTML, for a call without a diff."""
    diff = traitlets.Dict().tag(sync=True)
    """Each view's preview: ``{view: {"html": ..., "total": lines, "truncated": bool}}``."""
    trust = traitlets.Dict().tag(sync=True)
    """Labels of the trust boxes on offer (``path``, ``tool``); empty: none offered."""
    modify = traitlets.Unicode("").tag(sync=True)
    """Why Modify is unavailable; empty when it is available."""
    record = traitlets.Unicode("").tag(sync=True)
    closed = traitlets.Bool(False).tag(sync=True)


class ApprovalCard:
    """The card for one pending call; ``widget`` is what gets displayed."""

    def __init__(
        self,
        call: ToolCall,
        settings: TinyAgentFS,
        on_answer: Answer,
        *,
        who: str,
        policy_note: str,
        can_trust: bool,
    ) -> None:
        self.call = call
        self.settings = settings
        self.who = who
        self._on_answer = on_answer
        self.closed = False
        self.error = ""
        self.summary = summary_text(call)
        self.shown = call
        """What the details show: the proposal, then what ran once a person edited it."""
        self.heading = _heading_html(call, "Approval needed", self.summary, policy_note)
        trust: dict[str, str] = {}
        if can_trust:
            if self._paths():
                trust["path"] = f"Trust {visible(', '.join(self._paths()))} for this session"
            trust["tool"] = f"Trust every {visible(call.tool)} call for this session"
        modify = ""
        if call.changeset is not None and not call.changeset.editable_texts():
            modify = "Nothing in this change is text that can be edited"
        self.widget = CardWidget(
            heading=self.heading,
            details=_arguments_html(call) if call.changeset is None else "",
            diff=self._diff(self.settings.diff_preview_lines),
            trust=trust,
            modify=modify,
        )
        self.widget.on_msg(self._received)

    def _paths(self) -> list[str]:
        return self.call.changeset.relative_paths() if self.call.changeset else []

    def _diff(self, limit: int | None) -> dict[str, Any]:
        if self.shown.changeset is None:
            return {}
        shown: dict[str, Any] = {}
        for view in VIEWS:
            rendered = render_changeset(
                self.shown.changeset,
                view,
                limit,
                diff=self.shown.diff or None,
                highlight_max_bytes=self.settings.highlight_max_bytes,
            )
            shown[view] = {
                "html": rendered.html,
                "total": rendered.total_lines,
                "truncated": rendered.truncated,
            }
        return shown

    def _received(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """A message from the page: a request for more to show, or an answer with its form."""
        if not isinstance(content, dict):
            return
        action = content.get("action")
        if action == "load":  # only more to show: the folded record shows the diff too
            self._load(content.get("what"))
        elif self.closed:
            return
        elif action == "approve":
            self._answer(Decision.proceed(decided_by=self.who), content)
        elif action == "deny":
            reason = content.get("reason")
            reason = reason.strip() if isinstance(reason, str) else ""
            message = reason or f"{self.call.tool} was denied by a person in the notebook"
            self._answer(Decision.deny(message, decided_by=self.who), content)
        elif action == "modify":
            self._apply_edits(content)

    def _load(self, what: Any) -> None:
        """Send what the page asked for: the whole diff, or the texts to edit."""
        if what == "full-diff" and self.shown.changeset is not None:
            self.widget.send({"loaded": "full-diff", **self._diff(None)})
        elif what == "editors":
            if self.call.changeset is not None:
                files = [
                    {"path": path, "label": visible(path), "text": text}
                    for path, text in self.call.changeset.editable_texts().items()
                ]
                self.widget.send({"loaded": "editors", "files": files})
            else:
                text = json.dumps(self.call.args, indent=2, ensure_ascii=False, default=str)
                self.widget.send({"loaded": "editors", "arguments": text})

    def _apply_edits(self, form: dict[str, Any]) -> None:
        if self.call.changeset is not None:
            texts = self.call.changeset.editable_texts()
            files = form.get("files")
            sent = files if isinstance(files, dict) else {}
            edited = {
                path: text
                for path, text in sent.items()
                if path in texts and isinstance(text, str) and text != texts[path]
            }
            if not edited:
                self._answer(Decision.proceed(decided_by=self.who), form)
                return
            message = content_change_message(texts, edited)
            decision = Decision.modify(content=edited, message=message, decided_by=self.who)
            self._answer(decision, form)
            return
        text = form.get("arguments")
        try:
            args = json.loads(text) if isinstance(text, str) else None
        except json.JSONDecodeError as exc:
            self._refuse(f"Not valid JSON: {exc}")
            return
        if not isinstance(args, dict):
            self._refuse("The arguments must be a JSON object.")
            return
        if args == self.call.args:
            self._answer(Decision.proceed(decided_by=self.who), form)
            return
        message = argument_change_message(self.call.args, args)
        self._answer(Decision.modify(args=args, message=message, decided_by=self.who), form)

    def _refuse(self, error: str) -> None:
        """The edited version cannot run: say why and leave the editor open."""
        self.error = error
        self.widget.send({"error": visible(error)})

    def _answer(self, decision: Decision, form: dict[str, Any]) -> None:
        # A message already in flight when the card closed must not count twice.
        if self.closed:
            return
        trust = TrustChoice()
        if decision.verdict in (Verdict.PROCEED, Verdict.MODIFY):
            offered = self.widget.trust  # a box the card did not show cannot be ticked
            trust = TrustChoice(
                tool=self.call.tool
                if "tool" in offered and form.get("trust_tool") is True
                else None,
                paths=tuple(self._paths())
                if "path" in offered and form.get("trust_path") is True
                else (),
            )
        self._on_answer(decision, trust)

    def close(self, decision: Decision, how: str = "") -> None:
        """Freeze the card: no more answers, one line of record, the details folded away.

        The record and the details then show what ran: after Modify, the person's
        version and its diff against the file as it was, not the model's proposal.
        """
        self.closed = True
        self.shown = written_call(self.call, decision)
        summary = self.summary if self.shown is self.call else summary_text(self.shown)
        self.record = record_html(self.shown, summary, decision, how)
        with self.widget.hold_sync():
            self.widget.heading = _heading_html(self.shown, _DECIDED[decision.verdict], summary)
            if self.shown is not self.call:
                self.widget.diff = self._diff(self.settings.diff_preview_lines)
                self.widget.details = _arguments_html(self.shown) if not self.widget.diff else ""
            self.widget.record = self.record
            self.widget.closed = True


_DECIDED = {
    Verdict.PROCEED: "Allowed as proposed",
    Verdict.MODIFY: "What ran: a person's version (its diff against the file as it was)",
    Verdict.DENY: "Not run, nothing was changed; the model proposed",
    Verdict.ALTERNATIVE_RESPONSE: "Not run, nothing was changed; the model proposed",
}
"""The folded details' heading once the card is a record."""


def _heading_html(call: ToolCall, title: str, summary: str, note: str = "") -> str:
    risk = {
        Risk.READ: "read",
        Risk.WRITE: "writes files",
        Risk.DESTRUCTIVE: "deletes",
        Risk.EXECUTE: "runs a command",
    }[call.risk]
    below = (
        f'<br><span style="color: var(--jp-ui-font-color2)">{visible_html(note)}</span>'
        if note
        else ""
    )
    return (
        '<div style="font-family: var(--jp-ui-font-family); color: var(--jp-ui-font-color1)">'
        f"<b>{html.escape(title)}</b> · {html.escape(risk)} · <code>{visible_html(summary)}</code>"
        f"{below}</div>"
    )


def _arguments_html(call: ToolCall) -> str:
    style = (
        "font-family: var(--jp-code-font-family); background: var(--jp-layout-color1); "
        "color: var(--jp-content-font-color1); padding: 4px 8px; white-space: pre-wrap; "
        "border: 1px solid var(--jp-border-color2); margin: 2px 0"
    )
    if call.command_line is not None:
        command = call.command_line
        workdir = str(call.args.get("workdir") or ".")
        timeout = call.args.get("timeout_s")
        rows = [f"<div>Working directory: <code>{visible_html(workdir)}</code> (in the project)"]
        if timeout is not None:
            rows.append(f" · timeout {html.escape(str(timeout))} s")
        rows.append("</div>")
        shown = visible_html(command, keep_newlines=True)
        return f'<pre style="{style}">$ {shown}</pre>' + "".join(rows)
    body = json.dumps(call.args, indent=2, ensure_ascii=False, default=str)
    return f'<pre style="{style}">{visible_html(body, keep_newlines=True)}</pre>'
