"""What a person approves in a notebook is what runs: the call summary and the card show
a command with escape sequences whole and visible (the guard's tests cover the terminal)."""

from __future__ import annotations

import html
import re

from tinyagent_fs.ui.approval_card import _arguments_html
from tinyagent_fs.ui.call_text import summarise

from ..escapes.test_escape_guard import command_call, shows_everything


def test_call_summary_neutralises_escape_sequences() -> None:
    shows_everything(summarise(command_call()))


def test_approval_card_neutralises_escape_sequences() -> None:
    shown = _arguments_html(command_call())
    assert 'class="taf-hidden-char"' in shown
    shows_everything(html.unescape(re.sub(r"<[^>]+>", "", shown)))
