"""edit_file / multi_edit planning on text: counts, tolerance, regex, all-or-nothing."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent_fs.edit.planner import apply_edit, apply_edits
from tinyagent_fs.edit.regex_edit import regex_replacements
from tinyagent_fs.errors import ErrorCode, ToolError

CODE = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def error_of(call: Callable[..., object], *args: Any, **kwargs: Any) -> ToolError:
    with pytest.raises(ToolError) as caught:
        call(*args, **kwargs)
    return caught.value


def test_single_exact_replacement_reports_its_lines_in_the_new_text() -> None:
    result = apply_edit(CODE, "return a - b", "result = a - b\n    return result")
    assert result.text == CODE.replace("return a - b", "result = a - b\n    return result")
    assert (result.tolerance, result.replacements) == ("exact", 1)
    assert result.changed_lines == [(6, 7)]


def test_identical_old_and_new_is_invalid() -> None:
    assert error_of(apply_edit, CODE, "add", "add").code is ErrorCode.INVALID_ARGUMENT


def test_empty_old_string_is_invalid() -> None:
    assert error_of(apply_edit, CODE, "", "x").code is ErrorCode.INVALID_ARGUMENT


@pytest.mark.parametrize("count", [0, -1, True, 1.5])
def test_expected_replacements_must_be_a_positive_whole_number(count: object) -> None:
    error = error_of(apply_edit, CODE, "add", "plus", expected_replacements=count)
    assert error.code is ErrorCode.INVALID_ARGUMENT


def test_more_occurrences_than_expected_is_ambiguous_and_lists_every_line() -> None:
    error = error_of(apply_edit, CODE, "(a, b):", "(x, y):")
    assert error.code is ErrorCode.AMBIGUOUS_MATCH
    assert error.details["lines"] == [1, 5]
    assert "expected_replacements=2" in error.hint


def test_fewer_occurrences_than_expected_is_no_match_naming_them() -> None:
    error = error_of(apply_edit, CODE, "(a, b):", "(x, y):", expected_replacements=3)
    assert error.code is ErrorCode.NO_MATCH
    assert error.details["lines"] == [1, 5]
    assert "expected_replacements=2" in error.hint


def test_expected_replacements_replaces_exactly_that_many() -> None:
    result = apply_edit(CODE, "(a, b):", "(x, y):", expected_replacements=2)
    assert result.text.count("(x, y):") == 2
    assert result.changed_lines == [(1, 1), (5, 5)]


def test_replace_all_replaces_every_occurrence() -> None:
    result = apply_edit("x x x\nx\n", "x", "y", replace_all=True)
    assert (result.text, result.replacements) == ("y y y\ny\n", 4)
    assert result.changed_lines == [(1, 2)]


def test_tolerant_match_is_used_and_reported_for_a_single_replacement() -> None:
    text = "if ok:\r\n    go()   \r\n"
    result = apply_edit(text, "if ok:\n    go()\n", "if ok:\n    run()\n", file_newline="\r\n")
    assert result.text == "if ok:\r\n    run()\r\n"
    assert result.tolerance == "line_endings"


def test_tolerance_is_not_used_when_several_replacements_are_expected() -> None:
    error = error_of(apply_edit, "a  \nb\na  \nb\n", "a\nb", "c", expected_replacements=2)
    assert error.code is ErrorCode.NO_MATCH


def test_new_lines_inserted_into_a_crlf_file_get_crlf() -> None:
    result = apply_edit("one\r\ntwo\r\n", "one", "one\nhalf", file_newline="\r\n")
    assert result.text == "one\r\nhalf\r\ntwo\r\n"


def test_edit_that_leaves_the_text_unchanged_is_refused() -> None:
    error = error_of(apply_edit, "x = 1\n", "x = 1  ", "x = 1")
    assert error.code is ErrorCode.INVALID_ARGUMENT


def test_regex_edit_expands_numbered_and_named_groups() -> None:
    result = apply_edit(
        CODE,
        r"def (?P<name>\w+)\((\w), (\w)\)",
        r"def \g<name>(\3, \2)",
        regex=True,
        expected_replacements=2,
    )
    assert "def add(b, a)" in result.text and "def sub(b, a)" in result.text


def test_regex_identical_to_its_template_may_still_change_the_text() -> None:
    assert apply_edit("a b\n", "(a)", "(a)", regex=True).text == "(a) b\n"


def test_regex_edit_counts_matches_like_a_literal_edit() -> None:
    error = error_of(apply_edit, CODE, r"return a . b", "return 0", regex=True)
    assert error.code is ErrorCode.AMBIGUOUS_MATCH
    assert error.details["lines"] == [2, 6]


def test_regex_matching_nothing_is_no_match() -> None:
    assert error_of(apply_edit, CODE, r"mul\(", "x", regex=True).code is ErrorCode.NO_MATCH


def test_invalid_regex_is_invalid_argument() -> None:
    error = error_of(apply_edit, CODE, r"def (", "x", regex=True)
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert "regular expression" in error.message


def test_template_naming_a_missing_group_is_invalid_argument() -> None:
    error = error_of(apply_edit, CODE, r"def (add)", r"def \2", regex=True)
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert "template" in error.message


def test_catastrophic_regex_is_stopped_after_its_timeout() -> None:
    started = time.perf_counter()
    error = error_of(apply_edit, "a" * 40 + "!", r"(a+)+$", "x", regex=True, regex_timeout_s=0.3)
    assert error.code is ErrorCode.TIMEOUT
    assert time.perf_counter() - started < 3


def test_regex_child_in_a_fresh_interpreter_gives_the_same_answer_and_stops_too() -> None:
    pattern = re.compile(r"(\w+)@(\w+)")
    text = "a@b c@d"
    assert regex_replacements(pattern, r"\2@\1", text, 5.0, method="subprocess") == (
        regex_replacements(pattern, r"\2@\1", text, 5.0, method="fork")
    )
    with pytest.raises(ToolError) as caught:
        regex_replacements(re.compile(r"(a+)+$"), "x", "a" * 40 + "!", 0.2, method="subprocess")
    assert caught.value.code is ErrorCode.TIMEOUT


def test_multi_edit_applies_edits_in_order_on_each_others_result() -> None:
    result = apply_edits(
        CODE,
        [
            {"old_string": "def add", "new_string": "def plus"},
            {"old_string": "def plus(a, b):", "new_string": "def plus(a, b, c=0):"},
        ],
    )
    assert result.text.startswith("def plus(a, b, c=0):\n")
    assert (result.replacements, result.tolerances) == (2, ("exact", "exact"))


def test_multi_edit_changed_lines_follow_later_insertions() -> None:
    result = apply_edits(
        CODE,
        [
            {"old_string": "return a - b", "new_string": "return b - a"},
            {
                "old_string": "def add(a, b):\n",
                "new_string": "def add(a, b):\n    # one\n    # two\n",
            },
        ],
    )
    assert result.changed_lines == [(1, 3), (8, 8)]
    assert result.text.splitlines()[7] == "    return b - a"


def test_multi_edit_failure_names_the_edit_and_applies_nothing() -> None:
    error = error_of(
        apply_edits,
        CODE,
        [
            {"old_string": "def add", "new_string": "def plus"},
            {"old_string": "does not exist", "new_string": "x"},
        ],
    )
    assert error.code is ErrorCode.NO_MATCH
    assert "edit 2 of 2 (edits[1])" in error.message
    assert error.details["edit_index"] == 1


def test_multi_edit_refuses_unknown_fields() -> None:
    error = error_of(apply_edits, CODE, [{"old_string": "a", "new_string": "b", "old": "a"}])
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert "old" in error.message


def test_multi_edit_reports_the_strongest_tolerance_used() -> None:
    result = apply_edits(
        "a = 1   \nb = 2\n",
        [
            {"old_string": "b = 2", "new_string": "b = 3"},
            {"old_string": "a = 1\nb", "new_string": "a = 0\nb"},
        ],
    )
    assert result.tolerance == "trailing_whitespace"
    assert result.text == "a = 0\nb = 3\n"


def test_exact_edit_in_a_100k_line_file_is_fast() -> None:
    text = "".join(
        f"    value_{i} = compute(alpha={i}, beta={i * 7})  # note\n" for i in range(100_000)
    )
    best = min(
        _timed(apply_edit, text, "value_54321 = compute(", "value_54321 = recompute(")
        for _ in range(3)
    )
    assert best < 0.2


def _timed(call: Callable[..., object], *args: Any) -> float:
    started = time.perf_counter()
    call(*args)
    return time.perf_counter() - started


chunk = st.text(alphabet="ab\r\n \t", max_size=12)


@settings(max_examples=200, deadline=None)
@given(chunk, chunk, chunk, st.text(alphabet="xy", max_size=5))
def test_bytes_outside_an_exact_edit_stay_untouched(
    before: str, middle: str, after: str, new: str
) -> None:
    needle = "<" + middle + ">"
    text = before + needle + after
    if needle == new:
        return
    result = apply_edit(text, needle, new)
    assert result.text == before + new + after


def test_a_match_after_an_earlier_skipped_occurrence_is_the_one_replaced() -> None:
    """The first "\\nb" would split a CRLF, so the match is the second one: the text
    is spliced there, not where the first occurrence of the same text is."""
    result = apply_edit("a\r\nb x\nb", "\nb", "\nc")
    assert result.text == "a\r\nb x\nc"
    assert result.changed_lines == [(2, 3)]
