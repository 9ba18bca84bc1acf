"""Diffs as the notebook shows them: split per file, numbered, coloured, bounded."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent_fs.changes.changeset import ChangeKind, ChangeSet, FileChange
from tinyagent_fs.render.diff_render import DIFF_CSS, highlight_lines, render_changeset
from tinyagent_fs.render.diff_sections import file_diffs, split_file_diffs

ROOT = Path("/project")


def modify(name: str, old: str, new: str) -> FileChange:
    return FileChange(
        ChangeKind.MODIFY, ROOT / name, old.encode(), new.encode(), old_text=old, new_text=new
    )


def changeset(*changes: FileChange) -> ChangeSet:
    return ChangeSet("apply_patch", changes, ROOT)


def test_a_removed_line_that_looks_like_a_header_stays_in_its_file() -> None:
    sql = modify("a.sql", "-- note\nselect 1;\n", "select 1;\n")
    other = modify("b.txt", "x\n", "y\n")
    diff = changeset(sql, other).unified_diff()
    assert "\n--- note\n" in diff
    sections = split_file_diffs(diff)
    assert [(s.added, s.removed) for s in sections] == [(0, 1), (1, 1)]


def test_a_pure_rename_followed_by_another_file_is_two_sections() -> None:
    move = FileChange(
        ChangeKind.MOVE, ROOT / "old.txt", b"same\n", b"same\n", dest=ROOT / "new.txt"
    )
    edited = modify("c.txt", "1\n", "2\n")
    sections = file_diffs(changeset(move, edited), changeset(move, edited).unified_diff())
    assert len(sections) == 2
    assert [line.text for line in sections[0].lines] == [
        "rename from old.txt",
        "rename to new.txt",
    ]
    assert (sections[1].added, sections[1].removed) == (1, 1)


lines_strategy = st.lists(st.sampled_from(["a", "b", "c", "-- d", "+ e", "", "\\f"]), max_size=12)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(lines_strategy, lines_strategy), min_size=1, max_size=3))
def test_sections_match_each_change_and_number_its_lines(files: list) -> None:
    changes = []
    for index, (old_lines, new_lines) in enumerate(files):
        old = "".join(f"{line}\n" for line in old_lines)
        new = "".join(f"{line}\n" for line in new_lines)
        changes.append(modify(f"f{index}.txt", old, new))
    cs = changeset(*changes)
    sections = file_diffs(cs, cs.unified_diff())
    assert len(sections) == len(changes)
    for change, section in zip(changes, sections, strict=True):
        assert (section.added, section.removed) == change.line_counts()
        old_lines = (change.old_text or "").splitlines()
        new_lines = (change.new_text or "").splitlines()
        for line in section.lines:
            if line.kind in ("add", "context"):
                assert new_lines[line.new_no - 1] == line.text
            if line.kind in ("del", "context"):
                assert old_lines[line.old_no - 1] == line.text


def test_a_huge_diff_is_collapsed_to_a_preview() -> None:
    old = "".join(f"value_{i} = {i}\n" for i in range(10_000))
    new = "".join(f"value_{i} = {i + 1}\n" for i in range(10_000))
    cs = changeset(modify("big.py", old, new))
    diff = cs.unified_diff()
    preview = render_changeset(cs, max_lines=400, diff=diff)
    assert preview.truncated and preview.shown_lines == 400
    assert preview.total_lines > 20_000
    assert "more diff lines not shown" in preview.html
    assert len(preview.html) < 200_000
    full = render_changeset(cs, max_lines=None, diff=diff)
    assert not full.truncated and "value_9999" in full.html


def test_the_frame_follows_the_theme_and_syntax_has_a_dark_set() -> None:
    for variable in ("--jp-layout-color0", "--jp-ui-font-color1", "--jp-code-font-family"):
        assert f"var({variable}" in DIFF_CSS
    # JupyterLab's own editor colours fall below 4.5:1 on the added and removed
    # lines (tests/browser/test_browser_contrast.py); a dark theme gets the lighter set.
    assert ".taf-diff .tok-k { color: #007100; }" in DIFF_CSS
    assert 'body[data-jp-theme-light="false"] .taf-diff .tok-k { color: #4caf50; }' in DIFF_CSS


def test_a_multi_line_string_is_coloured_on_every_line() -> None:
    lines = highlight_lines('DOC = """first\nsecond\n"""\nx = 1\n', "m.py")
    assert len(lines) == 4
    assert 'class="tok-s"' in lines[1] and "second" in lines[1]
    assert 'class="tok-k"' not in lines[1]


def test_side_by_side_puts_the_old_line_next_to_the_new_one() -> None:
    cs = changeset(modify("a.py", "x = 1\ny = 2\n", "x = 1\ny = 3\n"))
    html = render_changeset(cs, "side-by-side").html
    paired = [row for row in html.split("<tr>") if "taf-del" in row and "taf-add" in row]
    assert len(paired) == 1 and "2" in paired[0] and "3" in paired[0]


def test_file_content_is_escaped() -> None:
    cs = changeset(modify("page.html", "<p>old</p>\n", "<script>alert(1)</script>\n"))
    for view in ("unified", "side-by-side"):
        html = render_changeset(cs, view).html
        assert "<script>" not in html and "&lt;" in html


def test_crlf_lines_render_without_carriage_returns() -> None:
    cs = changeset(modify("w.txt", "a\r\nb\r\n", "a\r\nc\r\n"))
    html = render_changeset(cs).html
    assert "\r" not in html and ">c<" in html.replace("</span>", "")


def test_binary_and_directory_changes_render_as_notes() -> None:
    binary = FileChange(ChangeKind.MODIFY, ROOT / "logo.png", b"\x89PNG\xff", b"\x89PNG\xfe")
    folder = FileChange(ChangeKind.MKDIR, ROOT / "docs", None, None)
    html = render_changeset(changeset(binary, folder)).html
    assert "Binary files logo.png and logo.png differ" in html
    assert "new directory docs/" in html
