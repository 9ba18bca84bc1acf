"""The words around a call: its one-line summary, its record, what the model is told.

Shared by the approval card and the record left when a policy decided alone,
so both describe a call the same way.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import replace
from datetime import datetime
from typing import Any

from ..changes.changeset import relative_path
from ..hooks.decision import Decision, ToolCall, Verdict
from ..hooks.policies import decided_by_person
from ..render.diff_sections import file_diffs
from ..text.display_safe import visible, visible_html

MESSAGE_DIFF_LINES = 40
ARG_PREVIEW_CHARS = 60


def summary_text(call: ToolCall) -> str:
    """``edit_file src/a.py (modify) +3 −1`` or the command, as it is: mark it to show it."""
    changeset = call.changeset
    if changeset is not None:
        # Counted from the diff the pipeline already made: diffing again can take seconds.
        sections = file_diffs(changeset, call.diff or None)
        files = ", ".join(
            f"{relative_path(c.path, changeset.root)} → {relative_path(c.dest, changeset.root)}"
            if c.dest is not None
            else f"{relative_path(c.path, changeset.root)} ({c.kind.value})"
            for c in changeset.changes
        )
        added = sum(s.added for s in sections)
        removed = sum(s.removed for s in sections)
        return f"{call.tool} {files} +{added} −{removed}"
    if call.command_line is not None:
        # The whole command and its environment, never a preview: what a person
        # approves is what runs.
        return f"{call.tool} $ {call.command_line}"
    if call.tool == "write_stdin":
        return f"write_stdin session {call.args.get('session_id')} ⌨ {call.args.get('chars', '')}"
    return f"{call.tool} {_cut(json.dumps(call.args, ensure_ascii=False, default=str))}"


def summarise(call: ToolCall) -> str:
    """The summary for plain text (records, logs): one line, hidden characters marked."""
    return visible(summary_text(call))


def content_change_message(proposed: dict[str, str], edited: dict[str, str]) -> str:
    """What the model is told: which files a person rewrote, as a short diff."""
    lines: list[str] = []
    for path, text in edited.items():
        lines += difflib.unified_diff(
            proposed[path].splitlines(), text.splitlines(), f"proposed/{path}", f"edited/{path}"
        )
    diff = [line.rstrip("\n") for line in lines]
    if len(diff) > MESSAGE_DIFF_LINES:
        diff = [*diff[:MESSAGE_DIFF_LINES], f"... ({len(diff) - MESSAGE_DIFF_LINES} more lines)"]
    names = ", ".join(edited)
    return f"a person edited the proposed content of {names} in the notebook:\n" + "\n".join(diff)


def argument_change_message(old: dict[str, Any], new: dict[str, Any]) -> str:
    changes = [
        f"{key}: {_preview(json.dumps(old.get(key), default=str))} -> "
        f"{_preview(json.dumps(new.get(key), default=str))}"
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]
    return "a person changed the arguments in the notebook: " + "; ".join(changes)


def written_call(call: ToolCall, decision: Decision) -> ToolCall:
    """The call as it ran after ``decision``: a person's edits in place of the proposal.

    Only for what the record shows; the pipeline re-plans the real call itself
    (keeping each file's encoding and line endings, which the display does not need).
    """
    if decision.verdict is not Verdict.MODIFY:
        return call
    if decision.modified_args is not None and call.changeset is None:
        return replace(call, args=decision.modified_args)
    edited = decision.modified_content or {}
    if call.changeset is None or not edited:
        return call
    root = call.changeset.root
    changes = tuple(
        replace(
            change,
            new_text=edited[target],
            new_bytes=edited[target].encode("utf-8"),
            line_opcodes=None,
            planned_diff=None,
        )
        if (target := relative_path(change.dest or change.path, root)) in edited
        and change.new_bytes is not None
        else change
        for change in call.changeset.changes
    )
    changeset = call.changeset.with_changes(changes)
    return replace(call, changeset=changeset, diff=changeset.unified_diff())


_VERDICTS = {
    Verdict.MODIFY: ("Modified", "a person's version ran instead of the proposal", "warn"),
    Verdict.DENY: ("Denied", "nothing was changed; proposed", "error"),
    Verdict.ALTERNATIVE_RESPONSE: ("Answered instead", "nothing was changed; proposed", "info"),
}


def record_html(call: ToolCall, summary: str, decision: Decision, how: str = "") -> str:
    """The one line that stays once a call is decided: what, who, when, and what it did.

    ``call`` and ``summary`` are what ran (``written_call``); every text is marked
    here. The verdict is a word, not an emoji: a browser without an emoji font
    shows words too. Its colour is a border, so no text depends on it.
    """
    if decision.verdict is Verdict.PROCEED:
        person = decided_by_person(decision.decided_by)
        label, what, tone = ("Approved" if person else "Allowed", "", "success")
    else:
        label, what, tone = _VERDICTS[decision.verdict]
    when = datetime.now().strftime("%H:%M:%S")
    reason = decision.message if decision.verdict is Verdict.DENY else ""
    extra = f" ({visible_html(how)})" if how else ""
    said = f" · reason: {visible_html(_first_line(reason))}" if reason else ""
    return (
        f'<div class="taf-verdict" data-verdict="{decision.verdict.value}" '
        'style="font-family: var(--jp-ui-font-family); color: var(--jp-ui-font-color1); '
        f'border-left: 4px solid var(--jp-{tone}-color1); padding-left: 6px">'
        f"<b>{label}</b>{extra} by {visible_html(decision.decided_by or 'unknown')} at {when}"
        f" · {what + ': ' if what else ''}<code>{visible_html(summary)}</code>{said}</div>"
    )


def _preview(text: str) -> str:
    return visible(_cut(text))


def _cut(text: str) -> str:
    first = text.splitlines()[0] if text else ""
    if len(first) <= ARG_PREVIEW_CHARS and first == text:
        return first
    return f"{first[:ARG_PREVIEW_CHARS]}… ({len(text)} chars)"


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""
