"""A terminal's output as the lines a person would read, for a model.

Interactive sessions give raw terminal bytes: colours, cursor moves, carriage
returns that redraw a progress bar, backspaces. This keeps one line being drawn
at a time and interprets what moves within it (``\\r``, ``\\b``, tabs, CSI
cursor-column moves and erases), removes the rest of the escape sequences
(colours, titles, modes) and hands out completed lines plus the line in
progress. A part of the line in progress already handed out (a prompt) is not
repeated when the line is completed. Memory is bounded: a line longer than
``MAX_LINE_CHARS`` is broken there, and completed lines beyond ``budget``
characters are counted and dropped until the next ``take``.
"""

from __future__ import annotations

import codecs

MAX_LINE_CHARS = 16_384
MAX_PENDING_CHARS = 1 << 20
"""Completed lines kept between two ``take`` calls: a cursor move to column 16,000
costs a program 8 bytes and a line that many characters, so lines past this are
counted, not kept."""
TAB = 8


class TerminalText:
    """Feed bytes with :meth:`feed`; :meth:`take` returns the text not yet taken."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._line: list[str] = []
        self._col = 0
        self._done: list[str] = []
        self._done_chars = 0
        self._lines_cut = 0
        self.budget = MAX_PENDING_CHARS
        """At most this many characters of completed lines wait for ``take``."""
        self._shown = ""
        self._escape: str | None = None
        """The escape sequence being read, from the character after ESC."""

    def reset(self) -> None:
        """Forget a half-read escape sequence and the line's cursor (output was dropped)."""
        self._escape = None
        self._decoder.reset()
        self._end_line()

    def feed(self, data: bytes) -> None:
        for char in self._decoder.decode(data):
            if self._escape is not None:
                self._escape_char(char)
            elif char == "\x1b":
                self._escape = ""
            elif char == "\n":
                self._end_line()
            elif char == "\r":
                self._col = 0
            elif char == "\b":
                self._col = max(0, self._col - 1)
            elif char == "\t":
                self._move_to((self._col // TAB + 1) * TAB)
            elif char < " " or char == "\x7f" or "\x80" <= char < "\xa0":
                continue
            else:
                self._put(char)

    def take(self) -> str:
        """Completed lines and the line in progress since the last call, one per line."""
        current = "".join(self._line)
        pending = self._done
        if self._lines_cut:
            cut = self._lines_cut
            pending.append(f"[{cut} more lines were too much to keep and are not shown]")
        self._done, self._done_chars, self._lines_cut = [], 0, 0
        if current:
            part = current[len(self._shown) :] if current.startswith(self._shown) else current
            if part:
                pending.append(part)
            self._shown = current
        return "\n".join(pending)

    def _end_line(self) -> None:
        text = "".join(self._line).rstrip()
        shown = self._shown
        if shown and (text.startswith(shown) or text == shown.rstrip()):
            text = text[len(shown) :]
        if self._done_chars + len(text) > self.budget:
            self._lines_cut += 1
        elif text or not self._shown:
            self._done.append(text)
            self._done_chars += len(text) + 1
        self._line = []
        self._col = 0
        self._shown = ""

    def _put(self, char: str) -> None:
        if self._col >= MAX_LINE_CHARS:
            self._end_line()
        line = self._line
        if self._col < len(line):
            line[self._col] = char
        else:
            line.extend(" " * (self._col - len(line)))
            line.append(char)
        self._col += 1

    def _move_to(self, col: int) -> None:
        self._col = max(0, min(col, MAX_LINE_CHARS - 1))

    def _escape_char(self, char: str) -> None:
        seq = self._escape + char
        self._escape = seq
        first = seq[0]
        if first == "[":
            if len(seq) > 1 and "\x40" <= char <= "\x7e":
                self._escape = None
                self._csi(seq[1:-1], char)
            elif len(seq) > 64:
                self._escape = None
        elif first in "]PX^_":  # strings: OSC, DCS, ...: until BEL or ESC \
            if char == "\x07" or seq.endswith("\x1b\\") or len(seq) > 4096:
                self._escape = None
        elif first in "()*+#%" and len(seq) < 2:
            return
        else:
            self._escape = None

    def _csi(self, params: str, final: str) -> None:
        if params.startswith("?") or params.startswith(">"):
            return  # private modes (alternate screen, cursor shape): nothing to show
        # ASCII digits only: "²" passes isdigit() and int() refuses it.
        numbers = [
            int(part) if part.isascii() and part.isdigit() else 0 for part in params.split(";")
        ]
        count = numbers[0] or 1
        line = self._line
        if final == "K":
            mode = numbers[0]
            if mode == 0:
                del line[self._col :]
            elif mode == 1:
                line[: self._col + 1] = " " * min(len(line), self._col + 1)
            else:
                line.clear()
        elif final in "G`":
            self._move_to(count - 1)
        elif final == "C":
            self._move_to(self._col + count)
        elif final == "D":
            self._move_to(self._col - count)
        elif final in "Hf":
            column = numbers[1] if len(numbers) > 1 else 1
            self._move_to(max(column, 1) - 1)
        elif final == "X":
            end = min(len(line), self._col + count)
            line[self._col : end] = " " * (end - self._col)
        elif final == "P":
            del line[self._col : self._col + count]
        elif final == "@" and self._col < len(line):  # the line stays within its bound
            line[self._col : self._col] = " " * min(count, MAX_LINE_CHARS - self._col)
            del line[MAX_LINE_CHARS:]
        elif final == "J" and numbers[0] in (2, 3):
            line.clear()
