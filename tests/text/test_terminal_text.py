"""What a model reads of a terminal: plain lines, and never more memory than a line's bound."""

from __future__ import annotations

import pytest

from tinyagent_fs.text.terminal_text import MAX_LINE_CHARS, TerminalText


def shown(*chunks: bytes) -> str:
    text = TerminalText()
    for chunk in chunks:
        text.feed(chunk)
    return text.take()


def test_progress_bars_collapse_and_colours_titles_vanish() -> None:
    bar = b"".join(b"\r[%-10s] %d%%" % (b"#" * i, i * 10) for i in range(11))
    assert shown(b"\x1b]0;title\x07\x1b[1;32mok\x1b[0m\n", bar, b"\n") == "ok\n[##########] 100%"


def test_a_prompt_is_not_repeated_when_its_line_completes() -> None:
    text = TerminalText()
    text.feed(b">>> ")
    assert text.take() == ">>> "
    text.feed(b"1+1\r\n2\r\n")
    assert text.take() == "1+1\n2"


def test_erases_and_cursor_moves_apply_within_the_line() -> None:
    assert shown(b"hello world\r\x1b[6C\x1b[KWORLD\n") == "hello WORLD"
    assert shown(b"abcdef\r\x1b[2P\n", b"abc\r\x1b[2@\n") == "cdef\n  abc"


@pytest.mark.parametrize("final", ["@", "C", "G", "X", "P", "D", "H"])
def test_a_huge_count_keeps_the_line_within_its_bound(final: str) -> None:
    count = b"9" * 60  # the longest count the parser reads
    lines = shown(b"x\r\x1b[" + count + final.encode() + b"y\n").splitlines()
    assert all(len(line) <= MAX_LINE_CHARS for line in lines)


def test_a_line_without_end_is_broken_at_its_bound() -> None:
    lines = shown(b"z" * (MAX_LINE_CHARS * 2 + 5)).splitlines()
    assert [len(line) for line in lines] == [MAX_LINE_CHARS, MAX_LINE_CHARS, 5]


def test_a_parameter_that_only_looks_like_a_number_is_ignored() -> None:
    assert shown("a\x1b[\u00b2m\x1b[\u0663Cb\n".encode()) == "a b"  # as a default 1


def test_lines_beyond_the_budget_are_counted_not_kept() -> None:
    text = TerminalText()
    text.budget = 100_000
    text.feed(b"\x1b[16383Gx\n" * 1000)  # 11 bytes a line of 16,384 characters
    lines = text.take().splitlines()
    assert sum(len(line) for line in lines) < 120_000
    assert lines[-1] == "[994 more lines were too much to keep and are not shown]"
