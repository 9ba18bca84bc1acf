"""Patch parsing and single-file application, below the scenario suite."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyagent_fs.edit.tolerance import LINE_STAGES
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.patch.apply import _LineSearch
from tinyagent_fs.patch.parse import _crlf_lines
from tinyagent_fs.patch.planner import (
    FilePatch,
    Hunk,
    HunkLine,
    apply_file_patch,
    parse_patch,
    plan_patch,
)
from tinyagent_fs.text.codec import line_count, split_lines


def parse_error(patch: str) -> ToolError:
    with pytest.raises(ToolError) as caught:
        parse_patch(patch)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    return caught.value


def test_codex_sections_hunks_and_anchors_are_parsed() -> None:
    parsed = parse_patch(
        "*** Begin Patch\n"
        "*** Update File: a.py\n"
        "*** Move to: b.py\n"
        "@@ class A:\n"
        "@@     def f(self):\n"
        " ctx\n"
        "-old\n"
        "+new\n"
        "@@\n"
        " tail\n"
        "+more\n"
        "*** End of File\n"
        "*** Delete File: gone.txt\n"
        "*** End Patch\n"
    )
    assert parsed.style == "codex"
    update, delete = parsed.files
    assert (update.kind, update.path, update.move_to) == ("update", "a.py", "b.py")
    first, second = update.hunks
    assert first.anchors == ("class A:", "def f(self):")
    assert first.old_lines == ["ctx", "old"] and first.new_lines == ["ctx", "new"]
    assert second.end_of_file and not first.end_of_file
    assert (delete.kind, delete.path) == ("delete", "gone.txt")


def test_unified_hunks_keep_line_hints_and_no_newline_markers() -> None:
    parsed = parse_patch(
        "--- a/f.txt\n+++ b/f.txt\n@@ -3,2 +3,2 @@ heading\n x\n-y\n\\ No newline at end of file\n"
        "+z\n\\ No newline at end of file\n"
    )
    (file,) = parsed.files
    (hunk,) = file.hunks
    assert (file.kind, file.path, file.style) == ("update", "f.txt", "unified")
    assert hunk.old_start == 3 and hunk.end_of_file
    assert [(line.op, line.text, line.no_newline) for line in hunk.lines] == [
        (" ", "x", False),
        ("-", "y", True),
        ("+", "z", True),
    ]


def test_plain_diff_keeps_paths_that_merely_start_with_a() -> None:
    (file,) = parse_patch("--- a/x.txt\n+++ a/x.txt\n@@ -1 +1 @@\n-1\n+2\n").files
    assert file.path == "a/x.txt"


def test_malformed_codex_line_names_the_line_and_shows_the_format() -> None:
    error = parse_error("*** Begin Patch\n*** Update File: a\n@@\n bad\nno prefix\n*** End Patch\n")
    assert error.message.startswith("patch line 5:")
    assert error.details["patch_line"] == 5
    assert "*** Begin Patch" in error.hint


def test_bad_unified_hunk_header_shows_the_unified_format() -> None:
    error = parse_error("--- a/x\n+++ b/x\n@@ -1,2 @@\n-a\n")
    assert "patch line 3" in error.message
    assert "@@ -12,3 +12,3 @@" in error.hint


def test_unclosed_heredoc_is_refused() -> None:
    error = parse_error("apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\n")
    assert "not closed" in error.message


def test_text_after_end_patch_is_refused() -> None:
    error = parse_error("*** Begin Patch\n*** Delete File: a\n*** End Patch\nmore\n")
    assert "patch line 4" in error.message


def test_update_section_without_hunks_is_refused() -> None:
    error = parse_error("*** Begin Patch\n*** Update File: a\n*** End Patch\n")
    assert "has no hunks" in error.message


def test_hunk_header_before_any_file_is_refused() -> None:
    assert "patch line 1" in parse_error("@@ -1 +1 @@\n-a\n+b\n").message


def test_mode_only_git_section_is_a_mode_change() -> None:
    parsed = parse_patch(
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-1\n+2\n"
    )
    first = parsed.files[0]
    assert (first.path, first.mode, first.hunks) == ("run.sh", 0o755, ())
    assert [file.path for file in parsed.files] == ["run.sh", "x"]


def test_a_symlink_mode_is_refused() -> None:
    assert (
        "not a regular file"
        in parse_error(
            "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+t\n"
        ).message
    )


_HEAD = "--- a/f\n+++ b/f\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "@@ -1,2 +1,2 @@\n a\n-b\n",
            "patch line 3: the hunk '@@ -1,2 +1,2 @@' is cut short (the patch ends) after 2 of "
            "2 old and 1 of 2 new lines",
        ),
        (
            "@@ -1,2 +1,2 @@\n a\nxb\n+c\n",
            "patch line 3: the hunk '@@ -1,2 +1,2 @@' is cut short (line 5 is no hunk line) "
            "after 1 of 2 old and 1 of 2 new lines",
        ),
        (
            "@@ -1,2 +1,2 @@\n\\ No newline at end of file\n a\n-b\n+c\n",
            "patch line 4: '\\ No newline at end of file' must follow a hunk line",
        ),
        (
            "@@ -0,0 +0,0 @@\n\\ No newline at end of file\n",
            "patch line 4: '\\ No newline at end of file' must follow a hunk line",
        ),
        (
            "@@ -1,2 +1 @@\n a\n+c\n-b\n",
            "patch line 5: the hunk '@@ -1,2 +1 @@' has more lines than its header counts",
        ),
    ],
)
def test_a_malformed_hunk_body_is_refused_at_the_line_that_goes_wrong(
    body: str, message: str
) -> None:
    assert parse_error(_HEAD + body).message == message


def test_no_newline_markers_belong_to_the_line_before_them() -> None:
    (file,) = parse_patch(
        _HEAD + "@@ -1,3 +1,3 @@\n a\n\\ x\n\\ y\n-b\n\n+c\n\\ No newline at end of file\n"
    ).files
    (hunk,) = file.hunks
    assert [(line.op, line.text, line.no_newline) for line in hunk.lines] == [
        (" ", "a", True),
        ("-", "b", False),
        (" ", "", False),
        ("+", "c", True),
    ]
    assert not hunk.end_of_file  # the old side's last line ("") has its newline


def test_apply_file_patch_is_pure_and_uses_the_given_newline() -> None:
    hunk = Hunk.of((HunkLine(" ", "a"), HunkLine("+", "b")), "@@", 1)
    patch = FilePatch("update", "f.txt", hunks=(hunk,))
    assert apply_file_patch(patch, "a\r\nz\r\n", "\r\n") == "a\r\nb\r\nz\r\n"
    assert apply_file_patch(FilePatch("delete", "f.txt"), "a\n", "\n") is None


def test_apply_file_patch_refuses_missing_and_existing_files() -> None:
    with pytest.raises(ToolError) as caught:
        apply_file_patch(FilePatch("update", "f.txt"), None, "\n")
    assert caught.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(ToolError) as caught:
        apply_file_patch(FilePatch("add", "f.txt"), "", "\n")
    assert caught.value.code is ErrorCode.ALREADY_EXISTS


def test_plan_notes_hunks_applied_with_a_tolerance() -> None:
    files = {"a.py": ("x = 1   \ny = 2\n", "\n")}
    (planned,) = plan_patch(
        "*** Begin Patch\n*** Update File: a.py\n x = 1\n-y = 2\n+y = 3\n*** End Patch\n",
        files.get,
    )
    assert planned.new_text == "x = 1   \ny = 3\n"
    assert planned.notes == ("a.py: hunk 1 matched ignoring trailing whitespace",)


def test_plan_reports_move_with_destination_and_old_text() -> None:
    files = {"a.txt": ("a\n", "\n")}
    (planned,) = plan_patch(
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch\n", files.get
    )
    assert (planned.kind, planned.path, planned.dest) == ("move", "a.txt", "b.txt")
    assert planned.new_text == planned.old_text == "a\n"


def test_unified_hint_picks_the_nearest_of_several_exact_places() -> None:
    text = "".join(f"{'end' if i % 10 == 9 else i}\n" for i in range(40))
    files = {"f.txt": (text, "\n")}
    (planned,) = plan_patch("--- a/f.txt\n+++ b/f.txt\n@@ -30 +30 @@\n-end\n+END\n", files.get)
    assert planned.new_text is not None
    assert planned.new_text.splitlines()[29] == "END"
    assert planned.new_text.count("END") == 1


def test_planning_a_50_file_patch_and_a_hunk_in_a_100k_line_file_is_fast() -> None:
    files = {
        f"pkg/m{n}.py": ("".join(f"def f{i}():\n    return {i}\n\n" for i in range(200)), "\n")
        for n in range(50)
    }
    sections = "".join(
        f"*** Update File: pkg/m{n}.py\n@@ def f{n}():\n-    return {n}\n+    return -{n}\n"
        for n in range(50)
    )
    patch = f"*** Begin Patch\n{sections}*** End Patch\n"
    big = {"big.txt": ("".join(f"line {i}\n" for i in range(100_000)), "\n")}
    started = time.perf_counter()
    planned = plan_patch(patch, files.get)
    fifty = time.perf_counter() - started
    started = time.perf_counter()
    plan_patch("--- a/big.txt\n+++ b/big.txt\n@@ -99000 +99000 @@\n-line 98999\n+x\n", big.get)
    large = time.perf_counter() - started
    assert len(planned) == 50
    assert all("    return -" in (p.new_text or "") for p in planned)
    assert fifty < 1.0 and large < 1.0


def test_added_lines_keep_the_endings_a_patch_with_mixed_endings_gives_them() -> None:
    """``git diff`` of a CRLF file: LF headers, CRLF content; a lone CR in a commit
    message above the diff is a line break too, and must not shift the numbering."""
    mixed = "note\rmore\n--- a/x\n+++ b/x\n@@ -1,2 +1,5 @@\n a\r\n+b\r\n+c\n d\r\n+e\r\n"
    (file,) = parse_patch(mixed).files
    added = [(line.text, line.ending) for line in file.hunks[0].lines if line.op == "+"]
    assert added == [("b", "\r\n"), ("c", "\n"), ("e", "\r\n")]
    converted = mixed.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\r\n")
    (file,) = parse_patch(converted).files
    assert {line.ending for line in file.hunks[0].lines} == {""}


@given(st.text(alphabet="ab\r\n\x0c", max_size=60))
def test_crlf_line_numbers_are_those_of_split_lines(text: str) -> None:
    ending_in_crlf = {n for n, line in enumerate(split_lines(text), 1) if line.endswith("\r\n")}
    found = _crlf_lines(text, line_count(text))
    breaks = line_count(text) - (1 if text and text[-1] not in "\r\n" else 0)
    assert found == (ending_in_crlf if len(ending_in_crlf) < breaks else set())


_PIECES = st.sampled_from(["a", "b", "\n", "\r\n", "\r", "a\n", "b\n", " \n", "\x0c"])


@given(
    st.lists(_PIECES, max_size=12).map("".join),
    st.lists(st.sampled_from(["a", "b", "", " "]), max_size=4),
    st.integers(-1, 6),
)
def test_a_hunk_fits_where_the_files_lines_are_its_old_lines(
    text: str, needle: list[str], start: int
) -> None:
    lines = split_lines(text)
    inside = start >= 0 and start + len(needle) <= len(lines)
    window = [line.rstrip("\r\n") for line in lines[start : start + len(needle)]]
    assert _LineSearch(text, lines).fits_at(needle, start) == (inside and window == needle)


@given(
    st.lists(_PIECES, max_size=10).map("".join),
    st.lists(st.sampled_from(["a", "b", "", " ", "a "]), max_size=4),
)
def test_a_deletion_must_list_the_files_lines(text: str, listed: list[str]) -> None:
    """Exactly, or with a tolerance that fits the whole file from its first line."""
    hunk = Hunk.of([HunkLine("-", line) for line in listed], "@@", 1)
    search = _LineSearch(text, split_lines(text))
    fits = len(listed) == len(search.contents) and (
        listed == search.contents
        or any(0 in search.positions(listed, stage, 0) for stage in LINE_STAGES)
    )
    deletion = FilePatch("delete", "f.txt", hunks=(hunk,), style="unified")
    if fits:
        assert apply_file_patch(deletion, text, "\n") is None
    else:
        with pytest.raises(ToolError) as caught:
            apply_file_patch(deletion, text, "\n")
        assert caught.value.code is ErrorCode.NO_MATCH
