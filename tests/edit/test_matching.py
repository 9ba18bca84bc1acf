"""Locating old text: exact first, then each tolerance, only where one place fits."""

from __future__ import annotations

import contextlib
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent_fs.edit.matching import adapt_replacement, find_matches, line_numbers
from tinyagent_fs.edit.planner import apply_edit
from tinyagent_fs.edit.tolerance import IndentShift, fold_typography, indent_shift
from tinyagent_fs.errors import ErrorCode, ToolError


def matched(text: str, needle: str) -> tuple[str, str]:
    outcome = find_matches(text, needle)
    assert len(outcome.spans) == 1
    start, end = outcome.spans[0]
    return text[start:end], outcome.tolerance


def test_exact_match_lists_every_occurrence_with_its_line() -> None:
    outcome = find_matches("a = 1\nb = 2\na = 1\n", "a = 1")
    assert outcome.tolerance == "exact"
    assert outcome.spans == [(0, 5), (12, 17)]
    assert outcome.lines == [1, 3]


def test_exact_occurrences_do_not_overlap() -> None:
    assert len(find_matches("aaaa", "aa").spans) == 2


def test_empty_needle_is_invalid() -> None:
    with pytest.raises(ToolError) as caught:
        find_matches("text", "")
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT


def test_trailing_whitespace_in_file_is_tolerated() -> None:
    text = "def f():   \n    return 1  \nx = 2\n"
    found, tolerance = matched(text, "def f():\n    return 1\n")
    assert tolerance == "trailing_whitespace"
    assert found == "def f():   \n    return 1  \n"


def test_needle_trailing_whitespace_must_end_a_line() -> None:
    with pytest.raises(ToolError) as caught:
        find_matches("foobar\n", "foo  ")
    assert caught.value.code is ErrorCode.NO_MATCH
    assert matched("foo\nbar\n", "foo  ") == ("foo", "trailing_whitespace")


def test_tabs_in_file_match_spaces_in_needle_and_replacement_gets_tabs() -> None:
    text = "class A:\n\tdef f(self):\n\t\treturn 1\n"
    outcome = find_matches(text, "    def f(self):\n        return 1\n")
    assert outcome.tolerance == "indentation"
    start, end = outcome.spans[0]
    assert text[start:end] == "\tdef f(self):\n\t\treturn 1\n"
    new = adapt_replacement(
        "    def f(self):\n        x = 2\n        return x\n", outcome, text[start:end], "\n"
    )
    assert new == "\tdef f(self):\n\t\tx = 2\n\t\treturn x\n"


def test_uniform_indentation_shift_is_applied_to_the_replacement() -> None:
    text = "class K:\n    def m(self):\n        return 1\n"
    outcome = find_matches(text, "def m(self):\n    return 1")
    start, end = outcome.spans[0]
    assert outcome.tolerance == "indentation"
    new = adapt_replacement("def m(self):\n    if x:\n        return 2", outcome, "", "\n")
    assert new == "def m(self):\n        if x:\n            return 2"
    assert text[:start] + new + text[end:] == (
        "class K:\n    def m(self):\n        if x:\n            return 2\n"
    )


def test_needle_with_extra_indentation_loses_it_in_the_replacement() -> None:
    text = "def f():\nreturn 1\n"
    outcome = find_matches(text, "    def f():\n    return 1\n")
    assert outcome.indent == IndentShift(remove="    ")
    assert adapt_replacement("    def g():\n    return 2\n", outcome, "", "\n") == (
        "def g():\nreturn 2\n"
    )


def test_non_uniform_indentation_difference_is_no_match() -> None:
    with pytest.raises(ToolError) as caught:
        find_matches("if a:\n    x = 1\n        y = 2\n", "if a:\n  x = 1\n  y = 2\n")
    assert caught.value.code is ErrorCode.NO_MATCH
    assert "only in whitespace" in caught.value.message


def test_lf_needle_matches_crlf_file_and_replacement_gets_crlf() -> None:
    text = "one\r\ntwo\r\nthree\r\n"
    found, tolerance = matched(text, "one\ntwo\n")
    assert (found, tolerance) == ("one\r\ntwo\r\n", "line_endings")
    outcome = find_matches(text, "one\ntwo\n")
    assert adapt_replacement("1\n2\n", outcome, found, "\r\n") == "1\r\n2\r\n"


def test_exact_match_never_cuts_a_crlf_in_half() -> None:
    assert matched("foo\r\nbar", "\nbar") == ("\r\nbar", "line_endings")
    assert matched("\r\n\r\n", "\n\n") == ("\r\n\r\n", "line_endings")
    assert matched("a\r\nb", "a\r") == ("a\r\n", "line_endings")


def test_crlf_needle_matches_lf_file() -> None:
    assert matched("a\nb\nc\n", "a\r\nb") == ("a\nb", "line_endings")


def test_replacement_takes_the_newline_of_the_matched_region_in_a_mixed_file() -> None:
    text = "a\r\nb\r\nc\nd\n"
    outcome = find_matches(text, "c\nd")
    assert adapt_replacement("x\ny", outcome, "c\nd", "\r\n") == "x\ny"
    outcome = find_matches(text, "b")
    assert adapt_replacement("x\ny", outcome, "b", "\r\n") == "x\r\ny"


def test_typographic_quotes_dashes_and_ellipsis_fold_to_ascii() -> None:
    text = "say(\u201chello\u201d \u2013 it\u2019s\u2026)\n"
    assert matched(text, 'say("hello" - it\'s...)') == (text[:-1], "typography")
    assert fold_typography("\u2018a\u2019 \u2014 \u2026") == "'a' - ..."


def test_ascii_quotes_in_file_match_typographic_needle() -> None:
    assert matched('x = "q"\n', "x = \u201cq\u201d") == ('x = "q"', "typography")


def test_tolerant_stage_with_two_places_is_ambiguous_and_lists_lines() -> None:
    text = "a\n  foo()\nb\n    foo()\n"
    with pytest.raises(ToolError) as caught:
        find_matches(text, "\tfoo()")
    assert caught.value.code is ErrorCode.AMBIGUOUS_MATCH
    assert caught.value.details["lines"] == [2, 4]
    assert "2, 4" in caught.value.message


def test_no_match_points_at_the_most_similar_region() -> None:
    text = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    with pytest.raises(ToolError) as caught:
        find_matches(text, "def subtract(a, b):\n    return a - b")
    error = caught.value
    assert error.code is ErrorCode.NO_MATCH
    assert error.details["candidates"][0] == 5
    assert "5 | def sub(a, b):" in error.message
    assert "around line 5" in error.hint


def test_no_match_in_a_file_without_anything_similar_says_so() -> None:
    with pytest.raises(ToolError) as caught:
        find_matches("alpha\nbeta\n", "zzzz qqqq")
    assert "Nothing in the file resembles it" in caught.value.message


def test_no_match_in_a_100k_line_file_still_finds_the_candidate_quickly() -> None:
    lines = [f"value_{i} = compute({i})\n" for i in range(100_000)]
    text = "".join(lines)
    started = time.perf_counter()
    with pytest.raises(ToolError) as caught:
        find_matches(text, "value_73456 = compute(73456, extra)\nvalue_73457 = compute(73457)\n")
    elapsed = time.perf_counter() - started
    assert caught.value.details["candidates"][0] == 73457
    assert elapsed < 2.0


def test_line_numbers_count_lf_crlf_and_cr_breaks() -> None:
    text = "a\r\nb\rc\nd"
    assert line_numbers(text, [0, 1, 2, 3, 4, 5, 6, 7, 8]) == [1, 1, 1, 2, 2, 3, 3, 4, 4]


def test_indent_shift_finds_tab_width_that_explains_the_difference() -> None:
    shift = indent_shift(["x", "        y"], ["\tx", "\t\ty"])
    assert shift is not None and (shift.tab_size, shift.delta, shift.use_tabs) == (8, 8, True)
    assert shift.reindent("    z") == "\t    z"
    assert indent_shift(["a", "  b"], ["  a", "b"]) is None


def test_match_starting_mid_line_leaves_first_line_indentation_alone() -> None:
    text = "    x = f(\n        1)\n"
    outcome = find_matches(text, "x = f(\n    1)")
    assert outcome.tolerance == "indentation"
    assert adapt_replacement("y = g(\n    2)", outcome, "", "\n") == "y = g(\n        2)"


line_text = st.text(alphabet="ab \t\u201c-", max_size=8)
endings = st.sampled_from(["\n", "\r\n", "\r"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(line_text, endings), min_size=1, max_size=12), st.data())
def test_crlf_file_matches_its_own_lf_spelling_when_unique(
    lines: list[tuple[str, str]], data: st.DataObject
) -> None:
    text = "".join(content + "\r\n" for content, _ in lines)
    start = data.draw(st.integers(0, len(lines) - 1))
    stop = data.draw(st.integers(start + 1, len(lines)))
    needle = "".join(content + "\n" for content, _ in lines[start:stop])
    exact = "".join(content + "\r\n" for content, _ in lines[start:stop])
    try:
        outcome = find_matches(text, needle)
    except ToolError as error:
        assert error.code is ErrorCode.AMBIGUOUS_MATCH
        return
    if outcome.tolerance == "line_endings":
        begin, end = outcome.spans[0]
        assert text[begin:end] == exact


@settings(max_examples=400, deadline=None)
@given(
    text=st.text(alphabet="\r\n \tab", max_size=12),
    needle=st.text(alphabet="\r\n \tab", min_size=1, max_size=6),
)
def test_tolerant_matching_never_fails_on_line_breaks_of_any_kind(text: str, needle: str) -> None:
    """Lone CRs and blank runs once made the indentation stage compare lines pairwise
    across a different number of lines (a ValueError, reported as INTERNAL_ERROR)."""
    with contextlib.suppress(ToolError):
        find_matches(text, needle)


def test_a_needle_spread_over_other_line_breaks_is_not_an_internal_error() -> None:
    try:
        apply_edit("\r\nb\r\n  ", "\n  ", "\r")
    except ToolError as error:
        assert error.code is not ErrorCode.INTERNAL_ERROR
