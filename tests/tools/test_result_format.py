"""Result shaping for the model: numbered lines, and the short diff an edit result opens with."""

from __future__ import annotations

from tinyagent_fs.tools.format import PREFIX_TABLE_LINES, number_lines, short_diff

DIFF = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"


def test_short_diff_keeps_hunks_and_drops_the_file_header() -> None:
    assert short_diff(DIFF) == "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"


def test_short_diff_caps_a_long_diff_and_says_how_much_is_left_out() -> None:
    long = "@@ -1,50 +1,50 @@\n" + "".join(f"-{i}\n+{i}!\n" for i in range(50))
    shown = short_diff(long, max_lines=10).splitlines()
    assert len(shown) == 11
    assert shown[-1] == "[... 91 more diff lines not shown]"


def test_line_numbers_are_cat_n_style_across_the_end_of_the_prefix_table() -> None:
    lines = [f"line {i}\r\n" if i % 2 else f"line {i}\n" for i in range(10)]
    first = PREFIX_TABLE_LINES - 4
    text, cut = number_lines(lines, first, 2000)
    assert cut == 0
    assert text.split("\n") == [f"{first + i:>6}\tline {i}" for i in range(10)]


def test_long_lines_are_cut_with_a_marker_and_counted() -> None:
    text, cut = number_lines(["short\n", "x" * 12 + "\n", "end"], 1, 10)
    assert cut == 1
    assert text.split("\n") == [
        "     1\tshort",
        "     2\txxxxxxxxxx [... line truncated: 2 more characters]",
        "     3\tend",
    ]
