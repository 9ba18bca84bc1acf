"""A patch's placed hunks are the review diff: the alignment they give is a true one,
and a wrong alignment is never used."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.patch_harness import Scenario, TreeFiles, copy_input, load_scenarios
from tests.test_diff import apply_hunks
from tinyagent_fs.diff import aligns, unified_hunks
from tinyagent_fs.patch import plan_patch
from tinyagent_fs.text import split_lines

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
            continue
        hunks = list(unified_hunks(old, new, 3, list(planned.alignment)))
        assert apply_hunks(old, hunks) == new


OLD = ["a\n", "b\n", "c\n"]
NEW = ["a\n", "B\n", "c\n", "d\n"]


def test_a_true_alignment_is_accepted() -> None:
    codes = [("equal", 0, 1, 0, 1), ("replace", 1, 2, 1, 2), ("equal", 2, 3, 2, 3)]
    assert aligns(OLD, NEW, [*codes, ("insert", 3, 3, 3, 4)])


@pytest.mark.parametrize(
    "codes",
    [
        [("equal", 0, 3, 0, 3), ("insert", 3, 3, 3, 4)],  # "equal" lines that differ
        [("equal", 0, 1, 0, 1), ("replace", 1, 2, 1, 2), ("equal", 2, 3, 2, 3)],  # short
        [("equal", 0, 1, 0, 1), ("replace", 2, 3, 1, 4)],  # a gap in the old lines
        [("replace", 0, 3, 0, 5)],  # past the end of the new lines
        [("equal", 0, 1, 0, 1), ("equal", 1, 2, 1, 2), ("replace", 2, 3, 2, 4)],  # b != B
    ],
)
def test_an_alignment_that_does_not_fit_is_refused(codes: list) -> None:
    assert not aligns(OLD, NEW, codes)
