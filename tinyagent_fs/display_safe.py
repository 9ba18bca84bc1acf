"""Text made safe to show a person who is about to approve it.

A command or a file name is shown in a terminal, a notebook card, the sidebar and
an MCP elicitation before it runs. Control characters and escape sequences in it
must not act on that display: ``touch X #\\x1b[2K\\r  command: ls -la`` would
otherwise erase its own line and show an innocent ``ls -la``. Every such character
(C0 and C1 controls, DEL, bidirectional overrides, zero-width and line-separator
characters) is shown as a visible escape instead, so what a person reads is what runs.
A tab is left alone: it only adds space, and diffs of tab-indented code need it.
"""

from __future__ import annotations

import re

_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)
_INVISIBLE_OR_NEWLINE = re.compile(_INVISIBLE.pattern[:-1] + "\n]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every character that could hide or rewrite what is shown escaped.

    ``keep_newlines`` leaves ``\\n`` alone for multi-line displays (a diff, a
    ``<pre>``); a one-line display escapes it too, so nothing hides below the line.
    """
    pattern = _INVISIBLE if keep_newlines else _INVISIBLE_OR_NEWLINE
    return pattern.sub(_escape, text)
