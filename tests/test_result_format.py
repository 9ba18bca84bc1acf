"""Result shaping for the model: the short diff an edit result opens with."""

from __future__ import annotations

from tinyagent_fs.tools.format import short_diff

DIFF = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"


def test_short_diff_keeps_hunks_and_drops_the_file_header() -> None:
    assert short_diff(DIFF) == "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"


def test_short_diff_caps_a_long_diff_and_says_how_much_is_left_out() -> None:
    long = "@@ -1,50 +1,50 @@\n" + "".join(f"-{i}\n+{i}!\n" for i in range(50))
    shown = short_diff(long, max_lines=10).splitlines()
    assert len(shown) == 11
    assert shown[-1] == "[... 91 more diff lines not shown]"
