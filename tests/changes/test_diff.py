"""Unified hunks: applying them to the old lines gives the new lines, fast on big rewrites;
the hunks of two texts are exactly those of their split lines."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent_fs.changes.changeset import ChangeKind, FileChange, PlannedDiff, hunk_lines
from tinyagent_fs.changes.diff import HunkText, opcodes, text_hunks, unified_hunks
from tinyagent_fs.text.codec import split_lines

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


# --- text_hunks: the same hunks, without splitting the shared start and end -----------

pieces = st.sampled_from(["a", "b", "x y", "\n", "\r", "\r\n", "a\n", "b\r\n", "\n\n", "c\r"])
texts = st.lists(pieces, max_size=24).map("".join)


def line_hunks(old: str, new: str, context: int) -> list[str]:
    return list(unified_hunks(split_lines(old), split_lines(new), context))


@settings(max_examples=1500, deadline=None)
@given(texts, texts, st.sampled_from([0, 1, 3]))
def test_text_hunks_equal_the_line_diff_of_any_two_texts(old: str, new: str, context: int) -> None:
    assert list(text_hunks(old, new, context)) == line_hunks(old, new, context)


@settings(max_examples=1500, deadline=None)
@given(texts, texts, texts, texts, st.sampled_from([0, 3]))
def test_text_hunks_equal_the_line_diff_around_a_shared_middle(
    head: str, old: str, new: str, tail: str, context: int
) -> None:
    """Texts that share a start and an end, cut anywhere, even inside a CRLF."""
    before, after = head + old + tail, head + new + tail
    assert list(text_hunks(before, after, context)) == line_hunks(before, after, context)


BIG = [f"line {i} = compute({i * 7919 % 10007})\n" for i in range(20_000)]


def edited(lines: list[str], at: int, remove: int, insert: list[str]) -> list[str]:
    return lines[:at] + insert + lines[at + remove :]


@pytest.mark.parametrize(
    "after",
    [
        edited(BIG, 0, 1, ["first changed\n"]),
        edited(BIG, 10_000, 1, ["middle changed\n"]),
        edited(BIG, 19_999, 1, ["last changed, no newline"]),
        edited(BIG, 500, 300, []),
        edited(BIG, 7_000, 0, [f"new {i}\n" for i in range(50)]),
        edited(edited(BIG, 15_000, 2, ["y\n", "z\n", "w\n"]), 3, 1, ["x\n"]),
        [line.replace("line", "LINE") if i % 1000 == 0 else line for i, line in enumerate(BIG)],
        [line.replace("\n", "\r\n") for line in BIG],
        [*BIG, "appended\n"],
        BIG[1:],
        [],
    ],
)
def test_text_hunks_equal_the_line_diff_on_a_big_file(after: list[str]) -> None:
    old, new = "".join(BIG), "".join(after)
    assert list(text_hunks(old, new)) == line_hunks(old, new, 3)


def test_text_hunks_of_crlf_and_cr_files_match_the_line_diff() -> None:
    for ending in ("\r\n", "\r"):
        lines = [line.replace("\n", ending) for line in BIG[:3000]]
        old = "".join(lines)
        for at in (0, 1500, 2999):
            new = "".join(edited(lines, at, 1, [f"edited{ending}"]))
            assert list(text_hunks(old, new)) == line_hunks(old, new, 3)
            cut = old.replace(f"{ending}", "\n", 1)  # one ending differs from the rest
            assert list(text_hunks(old, cut)) == line_hunks(old, cut, 3)


def test_identical_texts_have_no_text_hunks() -> None:
    text = "".join(BIG)
    assert list(text_hunks(text, text)) == []


# --- a change's diff: the marked line hunks, joined, and their +/- counts -------------


@settings(max_examples=1000, deadline=None)
@given(texts, texts, st.booleans())
def test_a_change_shows_the_marked_line_hunks_and_counts_their_lines(
    old: str, new: str, aligned: bool
) -> None:
    """Diffed here, or from the alignment a plan gives (as a patch's does)."""
    root = Path("/project")
    old_lines, new_lines = split_lines(old), split_lines(new)
    known = tuple(opcodes(old_lines, new_lines)) if aligned else None
    change = FileChange(
        ChangeKind.MODIFY, root / "f", old.encode(), new.encode(), line_opcodes=known
    )
    hunks = hunk_lines(old_lines, new_lines)
    shown = change.diff_lines(root)
    assert "".join(shown[2:]) == "".join(hunks)  # after the --- / +++ lines, when any
    assert shown[:2] == (["--- a/f\n", "+++ b/f\n"] if hunks else [])
    firsts = [line[0] for line in hunks]
    assert change.line_counts() == (firsts.count("+"), firsts.count("-"))


def test_a_plans_hunks_are_shown_only_for_the_texts_they_were_built_from() -> None:
    root = Path("/project")
    old, new = "a\nb\n", "a\nB\n"
    built = HunkText("@@ -2 +2 @@\n-b\n+B\n", 1, 1)
    change = FileChange(
        ChangeKind.MODIFY,
        root / "f",
        old.encode(),
        new.encode(),
        old_text=old,
        new_text=new,
        planned_diff=PlannedDiff(old, new, built),
    )
    assert change.diff_lines(root)[2:] == [built.text]
    edited = "a\nC\nd\n"  # a person changed the content in review: diffed anew
    changed = replace(change, new_bytes=edited.encode(), new_text=edited)
    assert "".join(changed.diff_lines(root)[2:]) == "".join(
        hunk_lines(split_lines(old), split_lines(edited))
    )
    assert changed.line_counts() == (2, 1)
