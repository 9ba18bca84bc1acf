"""Unified hunks: applying them to the old lines gives the new lines, fast on big rewrites."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent_fs.changes import hunk_lines
from tinyagent_fs.diff import opcodes

HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n$")
NO_NEWLINE = "\n\\ No newline at end of file\n"


def apply_hunks(old: list[str], hunks: list[str]) -> list[str]:
    out: list[str] = []
    position = 0
    for line in hunks:
        header = HEADER.match(line)
        if header:
            start, length = int(header[1]), int(header[2] or 1)
            begin = start - 1 if length else start
            assert begin >= position, "hunks overlap or go backwards"
            out.extend(old[position:begin])
            position = begin
            continue
        body = line[1:].replace(NO_NEWLINE, "")
        if line[0] == " ":
            assert old[position] == body
            out.append(old[position])
            position += 1
        elif line[0] == "-":
            assert old[position] == body
            position += 1
        else:
            assert line[0] == "+"
            out.append(body)
    return out + old[position:]


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "a", "d\n", "\n", "x y\n"]), max_size=30)


@settings(max_examples=400, deadline=None)
@given(lines, lines)
def test_hunks_turn_old_into_new(old: list[str], new: list[str]) -> None:
    assert apply_hunks(old, hunk_lines(old, new)) == new


def test_identical_inputs_have_no_hunks() -> None:
    assert hunk_lines(["a\n", "b\n"], ["a\n", "b\n"]) == []


def test_missing_final_newline_is_marked() -> None:
    hunks = hunk_lines(["a\n", "b"], ["a\n", "c"])
    assert "-b" + NO_NEWLINE in hunks and "+c" + NO_NEWLINE in hunks


def test_scattered_changes_in_a_big_file_align_on_unique_lines() -> None:
    old = [f"line {i}\n" for i in range(20_000)]
    new = [f"changed {i}\n" if i % 2 else line for i, line in enumerate(old)]
    codes = opcodes(old, new)
    equal = sum(i2 - i1 for tag, i1, i2, _, _ in codes if tag == "equal")
    assert equal == 10_000  # every unchanged line is kept, not shown as replaced
