"""One approval as ipywidgets: what the call will do, and Approve / Modify / Deny.

The card knows nothing about threads or waiting. Each button ends in one call
to ``on_answer(decision, trust)``; the owner decides whether that answer still
counts (a timeout may have come first) and then calls ``close`` to turn the
card into its one-line record. Every control is a real ``<button>``, ``<input>``
or ``<textarea>``, so Tab, Enter and Space work without a mouse.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from ..display_safe import visible, visible_html
from ..hooks.decision import Decision, Risk, ToolCall, Verdict
from .call_text import (
    argument_change_message,
    content_change_message,
    editable_texts,
    record_html,
    summary_text,
)
from .config import TinyAgentFS
from .diff_render import DIFF_CSS, render_changeset


@dataclass(frozen=True)
class TrustChoice:
    """What the person asked to trust for the rest of the session along with an approval."""

    tool: str | None = None
    paths: tuple[str, ...] = ()


Answer = Callable[[Decision, TrustChoice], None]


class ApprovalCard:
    """The widget for one pending call; ``widget`` is what gets displayed."""

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
        self._full_diff = False
        self.closed = False
        self.summary = summary_text(call)
        self.heading = widgets.HTML(_heading_html(call, self.summary, policy_note))
        self.details = self._details()
        self.approve = widgets.Button(
            description="Approve",
            button_style="success",
            icon="check",
            tooltip="Run this call exactly as proposed",
        )
        self.modify = widgets.Button(
            description="Modify",
            button_style="warning",
            icon="pencil",
            tooltip="Edit the proposed content or arguments, then run your version",
        )
        self.deny = widgets.Button(
            description="Deny",
            button_style="danger",
            icon="times",
            tooltip="Refuse this call; the model is told why",
        )
        self.approve.on_click(lambda _b: self._answer(Decision.proceed(decided_by=self.who)))
        self.modify.on_click(lambda _b: self._open_editor())
        self.deny.on_click(lambda _b: self._open_reason())
        self.trust_path = widgets.Checkbox(
            description=f"Trust {visible(', '.join(self._paths()))} for this session",
            indent=False,
            layout=widgets.Layout(width="auto"),
        )
        self.trust_tool = widgets.Checkbox(
            description=f"Trust every {visible(call.tool)} call for this session",
            indent=False,
            layout=widgets.Layout(width="auto"),
        )
        trust_row = [self.trust_path] if self._paths() else []
        trust_row.append(self.trust_tool)
        self.buttons = widgets.HBox([self.approve, self.modify, self.deny])
        self.panel = widgets.VBox([])
        rows: list[widgets.Widget] = [self.heading, self.details]
        if can_trust:
            rows.append(widgets.HBox(trust_row))
        rows += [self.buttons, self.panel]
        self.widget = widgets.VBox(rows, layout=widgets.Layout(margin="4px 0"))
        self.editors: dict[str, widgets.Textarea] = {}
        self.reason = widgets.Text(
            description="Reason",
            placeholder="optional: why, so the model can do better",
            layout=widgets.Layout(width="100%"),
        )
        self.error = widgets.HTML("")
        if call.changeset is not None and not editable_texts(call.changeset):
            self.modify.disabled = True
            self.modify.tooltip = "Nothing in this change is text that can be edited"

    def _paths(self) -> list[str]:
        return self.call.changeset.relative_paths() if self.call.changeset else []

    def _details(self) -> widgets.Widget:
        call = self.call
        if call.changeset is None:
            return widgets.HTML(_arguments_html(call))
        self.diff_html = widgets.HTML()
        self.view = widgets.ToggleButtons(
            options=[("Unified", "unified"), ("Side by side", "side-by-side")],
            value="unified",
            tooltips=["One column: removed and added lines", "Old and new next to each other"],
            style={"button_width": "auto"},
        )
        self.show_all = widgets.Button(
            description="Show all", tooltip="Render the whole diff (may be slow for huge diffs)"
        )
        self.view.observe(lambda _change: self._render_diff(), names="value")
        self.show_all.on_click(lambda _b: self._expand())
        self._render_diff()
        return widgets.VBox([self.view, self.diff_html, self.show_all])

    def _render_diff(self) -> None:
        assert self.call.changeset is not None
        limit = None if self._full_diff else self.settings.diff_preview_lines
        rendered = render_changeset(
            self.call.changeset,
            self.view.value,
            limit,
            diff=self.call.diff or None,
            highlight_max_bytes=self.settings.highlight_max_bytes,
        )
        self.diff_html.value = f"<style>{DIFF_CSS}</style>{rendered.html}"
        self.show_all.description = f"Show all {rendered.total_lines} lines"
        self.show_all.layout.display = None if rendered.truncated else "none"

    def _expand(self) -> None:
        self._full_diff = True
        self._render_diff()

    def _open_editor(self) -> None:
        if self.closed:
            return
        self.error.value = ""
        if self.call.changeset is not None:
            texts = editable_texts(self.call.changeset)
            self.editors = {
                path: widgets.Textarea(
                    value=text,
                    description=visible(path) if len(texts) == 1 else "",
                    layout=widgets.Layout(width="100%", height="20em"),
                    style={"description_width": "initial"},
                )
                for path, text in texts.items()
            }
            if len(self.editors) == 1:
                editor: widgets.Widget = next(iter(self.editors.values()))
            else:
                editor = widgets.Tab(
                    children=list(self.editors.values()),
                    titles=tuple(visible(path) for path in self.editors),
                )
        else:
            self.editors = {
                "arguments": widgets.Textarea(
                    value=json.dumps(self.call.args, indent=2, ensure_ascii=False, default=str),
                    description="Arguments (JSON)",
                    layout=widgets.Layout(width="100%", height="14em"),
                    style={"description_width": "initial"},
                )
            }
            editor = self.editors["arguments"]
        apply = widgets.Button(
            description="Apply", button_style="primary", tooltip="Run the call with your version"
        )
        cancel = widgets.Button(description="Cancel", tooltip="Back to Approve / Modify / Deny")
        apply.on_click(lambda _b: self._apply_edits())
        cancel.on_click(lambda _b: self._close_panel())
        self.apply_button, self.cancel_button = apply, cancel
        self.panel.children = [editor, self.error, widgets.HBox([apply, cancel])]
        self.buttons.layout.display = "none"

    def _apply_edits(self) -> None:
        if self.call.changeset is not None:
            texts = editable_texts(self.call.changeset)
            edited = {
                path: box.value for path, box in self.editors.items() if box.value != texts[path]
            }
            if not edited:
                self._answer(Decision.proceed(decided_by=self.who))
                return
            message = content_change_message(texts, edited)
            self._answer(Decision.modify(content=edited, message=message, decided_by=self.who))
            return
        try:
            args = json.loads(self.editors["arguments"].value)
        except json.JSONDecodeError as exc:
            self.error.value = _error_html(f"Not valid JSON: {exc}")
            return
        if not isinstance(args, dict):
            self.error.value = _error_html("The arguments must be a JSON object.")
            return
        if args == self.call.args:
            self._answer(Decision.proceed(decided_by=self.who))
            return
        message = argument_change_message(self.call.args, args)
        self._answer(Decision.modify(args=args, message=message, decided_by=self.who))

    def _open_reason(self) -> None:
        if self.closed:
            return
        confirm = widgets.Button(
            description="Deny", button_style="danger", tooltip="Refuse the call with this reason"
        )
        cancel = widgets.Button(description="Cancel", tooltip="Back to Approve / Modify / Deny")
        confirm.on_click(lambda _b: self._deny())
        cancel.on_click(lambda _b: self._close_panel())
        self.confirm_deny, self.cancel_button = confirm, cancel
        self.panel.children = [self.reason, widgets.HBox([confirm, cancel])]
        self.buttons.layout.display = "none"

    def _deny(self) -> None:
        reason = self.reason.value.strip()
        message = reason or f"{self.call.tool} was denied by a person in the notebook"
        self._answer(Decision.deny(message, decided_by=self.who))

    def _close_panel(self) -> None:
        self.panel.children = []
        self.buttons.layout.display = None

    def _answer(self, decision: Decision) -> None:
        # A click already in flight when the card closed must not count twice.
        if self.closed:
            return
        trust = TrustChoice()
        if decision.verdict in (Verdict.PROCEED, Verdict.MODIFY):
            trust = TrustChoice(
                tool=self.call.tool if self.trust_tool.value else None,
                paths=tuple(self._paths()) if self.trust_path.value else (),
            )
        self._on_answer(decision, trust)

    def close(self, decision: Decision, how: str = "") -> None:
        """Freeze the card: no more answers, one line of record, the details folded away."""
        self.closed = True
        for control in self._controls():
            control.disabled = True
        record = widgets.HTML(record_html(self.call, self.summary, decision, how))
        folded = widgets.Accordion(
            children=[widgets.VBox([self.heading, self.details])],
            titles=("Details",),
            selected_index=None,
        )
        self.record = record
        self.folded = folded
        self.widget.children = [record, folded]

    def _controls(self) -> list[Any]:
        controls: list[Any] = [self.approve, self.modify, self.deny, self.trust_path]
        controls += [self.trust_tool, self.reason, *self.editors.values()]
        for name in ("apply_button", "cancel_button", "confirm_deny"):
            if hasattr(self, name):
                controls.append(getattr(self, name))
        return controls


def _heading_html(call: ToolCall, summary: str, policy_note: str) -> str:
    risk = {
        Risk.READ: "read",
        Risk.WRITE: "writes files",
        Risk.DESTRUCTIVE: "deletes",
        Risk.EXECUTE: "runs a command",
    }[call.risk]
    return (
        '<div style="font-family: var(--jp-ui-font-family); color: var(--jp-ui-font-color1)">'
        f"<b>Approval needed</b> · {html.escape(risk)} · <code>{visible_html(summary)}</code>"
        f'<br><span style="color: var(--jp-ui-font-color2)">{visible_html(policy_note)}</span>'
        "</div>"
    )


def _arguments_html(call: ToolCall) -> str:
    style = (
        "font-family: var(--jp-code-font-family); background: var(--jp-layout-color1); "
        "color: var(--jp-content-font-color1); padding: 4px 8px; white-space: pre-wrap; "
        "border: 1px solid var(--jp-border-color2); margin: 2px 0"
    )
    if call.tool == "run_command":
        command = str(call.args.get("command", ""))
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


def _error_html(text: str) -> str:
    return f'<span style="color: var(--jp-error-color1, #d32f2f)">{visible_html(text)}</span>'
