"""Lines around a position, found without splitting the whole text: the same lines
(and line numbers) as splitting it all."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent_fs.edit.matching import line_numbers
from tinyagent_fs.text.codec import split_lines
from tinyagent_fs.text.line_window import line_start, lines_before, lines_from, next_line_start
from tinyagent_fs.tools.format import number_lines, snippet

pieces = st.sampled_from(["a", "bc", "\n", "\r", "\r\n", "x\n", "\n\n", "long line " * 30])
texts = st.lists(pieces, max_size=40).map("".join)


def starts(text: str) -> list[int]:
    """Where each line of ``split_lines(text)`` starts."""
    out, position = [], 0
    for line in split_lines(text):
        out.append(position)
        position += len(line)
    return out


@settings(max_examples=800, deadline=None)
@given(texts, st.data())
def test_line_start_and_next_line_start_bound_the_line_holding_a_position(
    text: str, data: st.DataObject
) -> None:
    position = data.draw(st.integers(0, len(text)))
    line = line_numbers(text, [position])[0]
    bounds = [*starts(text), len(text)]
    if line <= len(split_lines(text)):
        assert line_start(text, position) == bounds[line - 1]
        assert next_line_start(text, position) == bounds[line]


@settings(max_examples=800, deadline=None)
@given(texts, st.data(), st.integers(0, 4))
def test_lines_before_and_from_a_line_start_are_those_of_the_split(
    text: str, data: st.DataObject, count: int
) -> None:
    lines = split_lines(text)
    index = data.draw(st.integers(0, len(lines)))
    at = ([*starts(text), len(text)])[index]
    assert lines_before(text, at, count) == lines[max(0, index - count) : index]
    assert lines_from(text, at, count) == lines[index : index + count]


def reference_snippet(text: str, start_line: int, end_line: int, context: int) -> str:
    lines = split_lines(text)
    first = max(1, start_line - context)
    last = min(len(lines), end_line + context)
    return number_lines(lines[first - 1 : last], first, 2000)[0]


@settings(max_examples=800, deadline=None)
@given(texts, st.data(), st.sampled_from([0, 1, 3]))
def test_snippet_from_positions_equals_the_snippet_of_the_split_lines(
    text: str, data: st.DataObject, context: int
) -> None:
    first = data.draw(st.integers(0, len(text)))
    last = data.draw(st.integers(first, len(text)))
    first_line, last_line = line_numbers(text, [first, last])
    expected = reference_snippet(text, first_line, last_line, context)
    assert snippet(text, first, last, first_line, context) == expected
