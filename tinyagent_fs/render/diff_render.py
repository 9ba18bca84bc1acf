"""A ChangeSet as HTML: unified or side by side, coloured, and cut short when huge.

The frame takes JupyterLab's theme variables (``--jp-layout-color*``,
``--jp-ui-font-color*``); syntax colours and line numbers come in a light and a
dark set, chosen by the theme's ``data-jp-theme-light``, each reading at WCAG AA
on the translucent added and removed backgrounds, which sit on either theme.

Rendering is bounded: at most ``max_lines`` diff lines become HTML and the
result says how many were left out, so the widget can offer "show all" instead
of pushing a 10,000-line table into the page. Syntax colouring lexes each
file's old and new text once (a multi-line string stays a string on every line)
and is skipped for files above ``highlight_max_bytes``. Every piece of text is
escaped and its hidden characters marked after lexing the real text.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Protocol

from pygments.lexers import get_lexer_for_filename
from pygments.token import STANDARD_TYPES, Token, _TokenType
from pygments.util import ClassNotFound

from ..changes.changeset import ChangeSet, FileChange, display_text, relative_path
from ..text.codec import split_lines
from ..text.display_safe import marked_html, visible_html
from .diff_sections import DiffLine, FileDiff, file_diffs

DEFAULT_MAX_LINES = 400
HIGHLIGHT_MAX_BYTES = 256 * 1024
MAX_LINE_CHARS = 1000
COLUMNS = 4
VIEWS = ("unified", "side-by-side")

_SYNTAX_COLOURS: dict[str, tuple[str, str]] = {
    "k": ("#007100", "#4caf50"),
    "nb": ("#007100", "#46a74a"),
    "bp": ("#007100", "#46a74a"),
    "nf": ("#0000ff", "#3997e8"),
    "nc": ("#0000ff", "#3997e8"),
    "nd": ("#9200ee", "#c569ff"),
    "na": ("#0000cc", "#64b5f6"),
    "nt": ("#007100", "#42a847"),
    "s": ("#ba2121", "#ff7070"),
    "m": ("#007400", "#66bb6a"),
    "c": ("#366c6c", "#4f9f9f"),
    "o": ("#9200ee", "#d48fff"),
    "ow": ("#9200ee", "#d48fff"),
    "p": ("#0055aa", "#42a5f5"),
    "gh": ("#0000ff", "#2196f3"),
    "err": ("#c70000", "#ff5757"),
}
"""Short pygments class -> (colour in a light theme, in a dark theme).

JupyterLab's editor colours, darkened or lightened until each reads at 4.8:1 or
more on every background a diff line has (plain, added, removed, file row): the
theme's own ones fall to 3.2:1 on the added and removed lines.
tests/browser/test_browser_contrast.py measures them in the browser."""
DARK = 'body[data-jp-theme-light="false"]'

DIFF_CSS = (
    """
.taf-diff { font-family: var(--jp-code-font-family, monospace);
  font-size: var(--jp-code-font-size, 13px); color: var(--jp-content-font-color1, #000);
  background: var(--jp-layout-color0, #fff); border: 1px solid var(--jp-border-color2, #ddd);
  border-radius: 2px; overflow-x: auto; max-height: 32em; overflow-y: auto; }
.taf-diff table { border-collapse: collapse; width: 100%; table-layout: auto; }
.taf-diff td { padding: 0 6px; white-space: pre; vertical-align: top; line-height: 1.4; }
.taf-diff td.taf-no { color: #616161; text-align: right;
  user-select: none; width: 1%; border-right: 1px solid var(--jp-border-color2, #ddd); }
.taf-diff td.taf-sign { user-select: none; width: 1%; }
.taf-diff.taf-side-by-side table { table-layout: fixed; }
.taf-diff.taf-side-by-side col.taf-no-col { width: calc(5ch + 12px); }
.taf-diff.taf-side-by-side col.taf-code-col { width: 50%; }
.taf-diff.taf-side-by-side td.taf-code { white-space: pre-wrap; overflow-wrap: anywhere; }
.taf-diff tr.taf-add td.taf-code, .taf-diff tr.taf-add td.taf-sign,
.taf-diff td.taf-code.taf-add { background: rgba(46, 160, 67, 0.18); }
.taf-diff tr.taf-del td.taf-code, .taf-diff tr.taf-del td.taf-sign,
.taf-diff td.taf-code.taf-del { background: rgba(248, 81, 73, 0.18); }
.taf-diff td.taf-code.taf-empty { background: var(--jp-layout-color2, #eee); }
.taf-diff tr.taf-hunk td { color: var(--jp-ui-font-color1, #000);
  background: var(--jp-layout-color2, #f0f0f0); }
.taf-diff tr.taf-file td { font-weight: bold; color: var(--jp-ui-font-color1, #000);
  background: var(--jp-layout-color1, #fafafa);
  border-top: 1px solid var(--jp-border-color1, #bbb); padding: 2px 6px; }
.taf-diff tr.taf-meta td { color: var(--jp-ui-font-color1, #000); font-style: italic; }
.taf-diff tr.taf-more td { color: var(--jp-ui-font-color1, #000);
  background: var(--jp-layout-color2, #eee); text-align: center; }
"""
    + "".join(
        f".taf-diff .tok-{short} {{ color: {light}; }}\n"
        f"{DARK} .taf-diff .tok-{short} {{ color: {dark}; }}\n"
        for short, (light, dark) in _SYNTAX_COLOURS.items()
    )
    + f"{DARK} .taf-diff td.taf-no {{ color: #a8a8a8; }}\n"
)


@dataclass(frozen=True)
class RenderedDiff:
    """HTML for a diff and how much of it was left out."""

    html: str
    shown_lines: int
    total_lines: int

    @property
    def truncated(self) -> bool:
        return self.shown_lines < self.total_lines


def render_changeset(
    changeset: ChangeSet,
    view: str = "unified",
    max_lines: int | None = DEFAULT_MAX_LINES,
    *,
    diff: str | None = None,
    highlight_max_bytes: int = HIGHLIGHT_MAX_BYTES,
) -> RenderedDiff:
    """The whole ChangeSet as one table; ``max_lines=None`` renders everything.

    ``diff`` is the ChangeSet's unified diff when the caller has it already
    (``ToolCall.diff``), which spares diffing large files a second time.
    """
    check_view(view)
    table = DiffTable(view, max_lines)
    for change, section in zip(changeset.changes, file_diffs(changeset, diff), strict=True):
        table.rows.append(_file_row(change, section, changeset.root))
        table.add(section, _Highlighted(change, highlight_max_bytes))
    return table.rendered()


def check_view(view: str) -> None:
    if view not in VIEWS:
        raise ValueError(f"unknown diff view {view!r}; use 'unified' or 'side-by-side'")


class LineColour(Protocol):
    """Coloured HTML of a line of the old or new side, by its line number."""

    def old_line(self, number: int | None, fallback: str) -> str: ...

    def new_line(self, number: int | None, fallback: str) -> str: ...


class DiffTable:
    """The rows of one diff table; rows past ``max_lines`` are counted, never made HTML."""

    def __init__(self, view: str, max_lines: int | None) -> None:
        self.view = view
        self.max_lines = max_lines
        self.rows: list[str] = []
        self.total = 0

    def add(self, section: FileDiff, colour: LineColour) -> None:
        if self.view == "unified":
            for line in section.lines:
                self.total += 1
                if self.max_lines is None or self.total <= self.max_lines:
                    self.rows.append(_unified_row(line, colour))
        else:
            for pair in _pairs(section):
                self.total += 1
                if self.max_lines is None or self.total <= self.max_lines:
                    self.rows.append(_paired_row(pair, colour))

    def rendered(self) -> RenderedDiff:
        total = self.total
        shown = total if self.max_lines is None else min(total, self.max_lines)
        rows = self.rows
        if shown < total:
            rows = [
                *rows,
                f'<tr class="taf-more"><td colspan="{COLUMNS}">… {total - shown} more diff '
                "lines not shown</td></tr>",
            ]
        # Side by side, each column keeps half the width and wraps its long lines, so
        # the new text never ends up scrolled off the right edge of a notebook.
        columns = _SIDE_COLUMNS if self.view == "side-by-side" else ""
        table = (
            f'<div class="taf-diff taf-{self.view}"><table>{columns}{"".join(rows)}</table></div>'
        )
        return RenderedDiff(table, shown, total)


def highlight_lines(text: str, filename: str) -> list[str]:
    """HTML of each line of ``text`` with syntax colour; plain escaped text if unknown."""
    lines = ColouredLines(text, filename)
    return [lines.line(number, "") for number in range(1, len(split_lines(text)) + 1)]


class ColouredLines:
    """A text's lines as coloured HTML, lexed only as far as the lines asked for.

    A collapsed view of a change at the top of a 10,000-line file then costs the
    lexing of a few hundred lines, not of the whole file.
    """

    def __init__(
        self, text: str | None, filename: str, max_bytes: int = HIGHLIGHT_MAX_BYTES
    ) -> None:
        self._done: list[str] = []
        self._current = _LineBuilder()
        self._tokens: Iterator[tuple[_TokenType, str]] | None = None
        if text is None or len(text) > max_bytes:
            return
        try:
            lexer = get_lexer_for_filename(filename, stripnl=False, ensurenl=False)
        except ClassNotFound:
            self._done = [visible_html(line) for line in _plain_lines(text)]
            return
        self._tokens = iter(lexer.get_tokens(text))

    def line(self, number: int | None, fallback: str) -> str:
        """Line ``number`` (from 1), or ``fallback`` escaped when it cannot be coloured."""
        if number is None:
            return visible_html(_clip(fallback))
        while len(self._done) < number and self._tokens is not None:
            self._advance()
        if 1 <= number <= len(self._done):
            return self._done[number - 1]
        return visible_html(_clip(fallback))

    def _advance(self) -> None:
        assert self._tokens is not None
        token = next(self._tokens, None)
        if token is None:
            self._tokens = None
            if not self._current.empty:
                self._done.append(self._current.html())
            return
        css = _css_class(token[0])
        for index, piece in enumerate(token[1].split("\n")):
            if index:
                self._done.append(self._current.html())
                self._current = _LineBuilder()
            self._current.add(css, piece)


class _LineBuilder:
    """One line's coloured spans, cut at ``MAX_LINE_CHARS`` like plain lines are."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.cut = 0

    @property
    def empty(self) -> bool:
        return self.length == 0 and self.cut == 0

    def add(self, css: str, piece: str) -> None:
        room = MAX_LINE_CHARS - self.length
        if len(piece) > room:
            self.cut += len(piece) - max(room, 0)
            piece = piece[: max(room, 0)]
        if not piece:
            return
        self.length += len(piece)
        escaped = html.escape(piece)
        self.parts.append(f'<span class="tok-{css}">{escaped}</span>' if css else escaped)

    def html(self) -> str:
        tail = f"… ({self.cut} more characters)" if self.cut else ""
        return marked_html("".join(self.parts)) + tail


def _css_class(token_type: _TokenType) -> str:
    """The nearest short class we colour (``Token.Literal.String.Doc`` -> ``s``)."""
    current: _TokenType | None = token_type
    while current is not None and current is not Token:
        short = STANDARD_TYPES.get(current, "")
        if short in _SYNTAX_COLOURS:
            return short
        current = current.parent
    return ""


def _plain_lines(text: str) -> list[str]:
    return [_clip(line.rstrip("\r\n")) for line in split_lines(text)]


def _clip(text: str) -> str:
    if len(text) <= MAX_LINE_CHARS:
        return text
    return text[:MAX_LINE_CHARS] + f"… ({len(text) - MAX_LINE_CHARS} more characters)"


class _Highlighted:
    """Old and new text of one change, each coloured on first use."""

    def __init__(self, change: FileChange, max_bytes: int) -> None:
        name = (change.dest or change.path).name
        self.old = ColouredLines(display_text(change.old_bytes, change.old_text), name, max_bytes)
        self.new = ColouredLines(display_text(change.new_bytes, change.new_text), name, max_bytes)

    def old_line(self, number: int | None, fallback: str) -> str:
        return self.old.line(number, fallback)

    def new_line(self, number: int | None, fallback: str) -> str:
        return self.new.line(number, fallback)


def _file_row(change: FileChange, section: FileDiff, root: Path) -> str:
    name = relative_path(change.path, root)
    if change.dest is not None:
        name += f" → {relative_path(change.dest, root)}"
    label = f"{change.kind.value} {visible_html(name)}  +{section.added} −{section.removed}"
    return f'<tr class="taf-file"><td colspan="{COLUMNS}">{label}</td></tr>'


def _unified_row(line: DiffLine, colour: LineColour) -> str:
    if line.kind == "add":
        code = colour.new_line(line.new_no, line.text)
        return _row("taf-add", "", str(line.new_no), "+", code)
    if line.kind == "del":
        code = colour.old_line(line.old_no, line.text)
        return _row("taf-del", str(line.old_no), "", "−", code)
    if line.kind == "context":
        code = colour.new_line(line.new_no, line.text)
        return _row("", str(line.old_no), str(line.new_no), "", code)
    css = "taf-hunk" if line.kind == "hunk" else "taf-meta"
    return _row(css, "", "", "", visible_html(_clip(line.text)))


def _row(css: str, old_no: str, new_no: str, sign: str, code: str) -> str:
    return (
        f'<tr class="{css}"><td class="taf-no">{old_no}</td><td class="taf-no">{new_no}</td>'
        f'<td class="taf-sign">{sign}</td><td class="taf-code">{code}</td></tr>'
    )


_SIDE_COLUMNS = (
    '<colgroup><col class="taf-no-col"><col class="taf-code-col">'
    '<col class="taf-no-col"><col class="taf-code-col"></colgroup>'
)

Pair = tuple[DiffLine | None, DiffLine | None]
"""(old side, new side); a hunk or meta line stands alone on the old side."""


def _pairs(section: FileDiff) -> Iterator[Pair]:
    """Side by side: a run of removed lines faces the run of added lines after it."""
    removed: list[DiffLine] = []
    added: list[DiffLine] = []

    def flush() -> Iterator[Pair]:
        yield from zip_longest(removed, added)
        removed.clear()
        added.clear()

    for line in section.lines:
        if line.kind == "del":
            if added:
                yield from flush()
            removed.append(line)
        elif line.kind == "add":
            added.append(line)
        elif line.kind != "note":
            yield from flush()
            yield (line, line) if line.kind == "context" else (line, None)
    yield from flush()


def _paired_row(pair: Pair, colour: LineColour) -> str:
    old, new = pair
    if old is not None and old.kind in ("hunk", "meta"):
        css = "taf-hunk" if old.kind == "hunk" else "taf-meta"
        text = visible_html(_clip(old.text))
        return f'<tr class="{css}"><td colspan="{COLUMNS}">{text}</td></tr>'
    changed = old is None or new is None or old.kind != "context"
    empty = '<td class="taf-no"></td><td class="taf-code taf-empty"></td>'
    left = right = empty
    if old is not None:
        css = " taf-del" if changed else ""
        code = colour.old_line(old.old_no, old.text)
        left = f'<td class="taf-no">{old.old_no}</td><td class="taf-code{css}">{code}</td>'
    if new is not None:
        css = " taf-add" if changed else ""
        code = colour.new_line(new.new_no, new.text)
        right = f'<td class="taf-no">{new.new_no}</td><td class="taf-code{css}">{code}</td>'
    return f"<tr>{left}{right}</tr>"
