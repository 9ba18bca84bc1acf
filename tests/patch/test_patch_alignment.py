"""A patch's placed hunks are the review diff: the alignment they give is a true one,
and a wrong alignment is never used."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.changes.test_diff import apply_hunks
from tests.patch_harness import Scenario, TreeFiles, copy_input, load_scenarios
from tinyagent_fs.changes.diff import Opcode, marked, opcodes, planned_hunk_text, unified_hunks
from tinyagent_fs.patch.planner import plan_patch
from tinyagent_fs.text.codec import split_lines

APPLIED = [s for s in load_scenarios() if s.expected_error is None]


@pytest.mark.parametrize("scenario", APPLIED, ids=[s.name for s in APPLIED])
def test_placed_hunks_align_old_and_new_lines(scenario: Scenario, tmp_path: Path) -> None:
    files = TreeFiles(copy_input(scenario, tmp_path / "tree"))
    for planned in plan_patch(scenario.patch_text, files.read_text):
        if planned.old_text is None or planned.new_text is None:
            continue
        old, new = split_lines(planned.old_text), split_lines(planned.new_text)
        assert planned.alignment is not None
        if not aligns(old, new, planned.alignment):
            # Only a file without a final line break, which the patch appends to,
            # changes a line it keeps; its diff is then computed from the texts.
            assert not planned.old_text.endswith(("\n", "\r")), planned.path
            assert planned.hunks is None
            continue
        hunks = list(unified_hunks(old, new, 3, list(planned.alignment)))
        assert apply_hunks(old, hunks) == new
        assert planned.hunks is not None  # the review diff shows these very hunks
        assert planned.hunks.text == "".join(marked(hunks))


OLD = ["a\n", "b\n", "c\n"]
NEW = ["a\n", "B\n", "c\n", "d\n"]


def test_a_true_alignment_is_accepted() -> None:
    codes = [("equal", 0, 1, 0, 1), ("replace", 1, 2, 1, 2), ("equal", 2, 3, 2, 3)]
    assert aligns(OLD, NEW, [*codes, ("insert", 3, 3, 3, 4)])


UNFIT = [
    [("equal", 0, 3, 0, 3), ("insert", 3, 3, 3, 4)],  # "equal" lines that differ
    [("equal", 0, 1, 0, 1), ("replace", 1, 2, 1, 2), ("equal", 2, 3, 2, 3)],  # short
    [("equal", 0, 1, 0, 1), ("replace", 2, 3, 1, 4)],  # a gap in the old lines
    [("replace", 0, 3, 0, 5)],  # past the end of the new lines
    [("equal", 0, 1, 0, 1), ("equal", 1, 2, 1, 2), ("replace", 2, 3, 2, 4)],  # b != B
]


@pytest.mark.parametrize("codes", UNFIT)
def test_an_alignment_that_does_not_fit_is_refused(codes: list) -> None:
    assert not aligns(OLD, NEW, codes)


@pytest.mark.parametrize(
    "codes",
    [
        [
            ("equal", 0, 1, 0, 1),
            ("replace", 1, 2, 1, 2),
            ("equal", 2, 3, 2, 3),
            ("insert", 3, 3, 3, 4),
        ],
        *UNFIT,
    ],
)
def test_planned_hunk_text_take_exactly_the_alignments_aligns_takes(codes: list) -> None:
    _check_planned_hunks("".join(OLD), "".join(NEW), codes)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a\r", "a\r\n"),  # the stretch ends in CR, the added line starts with LF: one break
        ("a", "ab\n"),  # the last old line has no break, and text follows it
    ],
)
def test_planned_hunk_text_refuse_stretches_that_do_not_join_at_a_line_start(
    old: str, new: str
) -> None:
    codes = [("equal", 0, 1, 0, 1), ("insert", 1, 1, 1, 2)]
    assert planned_hunk_text(split_lines(old), new, codes) is None
    _check_planned_hunks(old, new, codes)


LINE_TEXT = st.text(alphabet="ab\r\n", max_size=12)


@settings(max_examples=400, deadline=None)
@given(LINE_TEXT, LINE_TEXT, LINE_TEXT, st.booleans())
def test_planned_hunk_text_match_the_split_texts_line_breaks_of_any_kind(
    old: str, new: str, other: str, true_codes: bool
) -> None:
    """Without splitting the new text, the hunks are those of the split lines, and an
    alignment whose stretches would split differently (a CR meeting an LF where two
    stretches join, a last line without a break that gains text) is refused."""
    source = new if true_codes else other
    codes = opcodes(split_lines(old), split_lines(source))
    _check_planned_hunks(old, new, codes)


def _check_planned_hunks(old: str, new: str, codes: list) -> None:
    old_lines, new_lines = split_lines(old), split_lines(new)
    found = planned_hunk_text(old_lines, new, codes)
    if aligns(old_lines, new_lines, codes):
        assert found is not None
        hunks = marked(unified_hunks(old_lines, new_lines, 3, list(codes)))
        assert found.text == "".join(hunks)
        firsts = [line[0] for line in hunks]
        assert (found.added, found.removed) == (firsts.count("+"), firsts.count("-"))
    else:
        assert found is None


def aligns(old: Sequence[str], new: Sequence[str], codes: Sequence[Opcode]) -> bool:
    """Whether ``codes`` turn ``old`` into ``new`` (contiguous, covering both sides,
    every "equal" stretch really equal): the definition ``planned_hunk_text`` is held to,
    on the split lines of both sides."""
    i = j = 0
    for tag, i1, i2, j1, j2 in codes:
        if (i1, j1) != (i, j) or i2 < i1 or j2 < j1:
            return False
        if tag == "equal" and (i2 - i1 != j2 - j1 or old[i1:i2] != new[j1:j2]):
            return False
        i, j = i2, j2
    return (i, j) == (len(old), len(new))
