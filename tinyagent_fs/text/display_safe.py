"""Text made safe to show a person who is about to approve it.

Names, diffs, commands and reasons reach a terminal, a notebook card, the audit
table, the sidebar and an MCP elicitation. A character that hides or reorders
text (C0/C1 controls, DEL, bidirectional overrides and isolates, zero-width and
line-separator characters, Unicode tag characters, the soft hyphen) is shown as a
marked ``⟨U+202E⟩`` token instead, so ``report\\u202etxt.py`` cannot read as
``reportyp.txt`` and ``\\x1b[2K`` cannot erase a line. Tabs stay; newlines stay
where asked. ``labextension/src/format.ts`` is the sidebar's copy of these rules.
"""

from __future__ import annotations

import html
import re

_HIDDEN = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2069\ufeff\U000e0000-\U000e007f"
)
_INVISIBLE = re.compile(f"[{_HIDDEN}]")
_INVISIBLE_OR_NEWLINE = re.compile(f"[{_HIDDEN}\n]")

MARKER_CLASS = "taf-hidden-char"
"""The class of a marker in HTML, styled inline so it stands out on every surface."""
_MARKER_STYLE = (
    "color: var(--jp-warn-color0, #a84300); background: var(--jp-warn-color3, #fff3e0); "
    "border: 1px solid var(--jp-warn-color1, #e65100); border-radius: 2px; "
    "font-family: var(--jp-code-font-family, monospace); font-style: normal"
)


def token(char: str) -> str:
    """How one hidden character reads: ``⟨U+202E⟩``."""
    return f"⟨U+{ord(char):04X}⟩"


def _token(match: re.Match[str]) -> str:
    return token(match.group())


def _marker(match: re.Match[str]) -> str:
    return f'<span class="{MARKER_CLASS}" style="{_MARKER_STYLE}">{token(match.group())}</span>'


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every character that could hide or rewrite what is shown marked.

    ``keep_newlines`` leaves ``\\n`` alone for multi-line displays (a diff, a
    ``<pre>``); a one-line display marks it too, so nothing hides below the line.
    """
    pattern = _INVISIBLE if keep_newlines else _INVISIBLE_OR_NEWLINE
    return pattern.sub(_token, text)


def visible_html(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` as HTML: escaped, each hidden character a styled marker."""
    return marked_html(html.escape(text), keep_newlines=keep_newlines)


def marked_html(markup: str, *, keep_newlines: bool = False) -> str:
    """HTML built from ``html.escape``-d text, each hidden character a styled marker.

    Neither escaping nor tags yield a hidden character, so marking after them
    touches text only: a syntax-coloured line is marked once, not token by token.
    """
    pattern = _INVISIBLE if keep_newlines else _INVISIBLE_OR_NEWLINE
    return pattern.sub(_marker, markup)
