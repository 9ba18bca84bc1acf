"""A diff kept in the audit log, rendered for the full-width view like the card renders it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyagent_fs.changes.changeset import ChangeKind, ChangeSet, FileChange
from tinyagent_fs.render.diff_render import render_changeset
from tinyagent_fs.render.recorded_diff import render_recorded_diff

ROOT = Path("/project")


def diff_of(*files: tuple[str, str | None, str | None]) -> tuple[ChangeSet, str]:
    changes = []
    for name, old, new in files:
        kind = ChangeKind.MODIFY
        if old is None or new is None:
            kind = ChangeKind.CREATE if old is None else ChangeKind.DELETE
        changes.append(
            FileChange(
                kind,
                ROOT / name,
                None if old is None else old.encode(),
                None if new is None else new.encode(),
                old_text=old,
                new_text=new,
            )
        )
    changeset = ChangeSet("apply_patch", tuple(changes), ROOT)
    return changeset, changeset.unified_diff()


def test_each_file_gets_a_header_row_naming_it_with_its_counts() -> None:
    _, diff = diff_of(("src/app.py", "x = 1\n", "x = 2\n"), ("gone.txt", "bye\n", None))
    html = render_recorded_diff(diff).html
    assert "src/app.py  +1 −1" in html
    assert "gone.txt  +0 −1" in html, "a deleted file is named by its old name"


def test_a_string_opened_inside_the_hunk_is_coloured_on_every_line() -> None:
    old = 'def f():\n    text = """one\n    two\n    three"""\n    return text\n'
    new = old.replace("two", "TWO")
    _, diff = diff_of(("m.py", old, new))
    html = render_recorded_diff(diff).html
    assert '<span class="tok-s">    TWO</span>' in html
    assert '<span class="tok-s">    two</span>' in html
    assert '<span class="tok-k">def</span>' in html


def test_the_lines_shown_are_those_of_the_card() -> None:
    changeset, diff = diff_of(("a.py", "a = 1\nb = 2\nc = 3\n", "a = 1\nb = 20\nc = 3\nd = 4\n"))
    for view in ("unified", "side-by-side"):
        recorded = render_recorded_diff(diff, view)
        card = render_changeset(changeset, view, None, diff=diff)
        assert recorded.total_lines == card.total_lines
        assert recorded.html == card.html.replace("modify a.py", "a.py"), view


def test_side_by_side_faces_the_old_line_with_the_new() -> None:
    _, diff = diff_of(("t.txt", "keep\nold\n", "keep\nnew\n"))
    html = render_recorded_diff(diff, "side-by-side").html
    assert (
        '<td class="taf-no">2</td><td class="taf-code taf-del">old</td>'
        '<td class="taf-no">2</td><td class="taf-code taf-add">new</td>'
    ) in html


def test_names_and_lines_are_escaped_and_hidden_characters_marked() -> None:
    _, diff = diff_of(("report\u202etxt.py", "a\n", "<script>alert(1)</script>\u200b\n"))
    html = render_recorded_diff(diff).html
    assert "<script>" not in html and "&lt;" in html
    assert "\u202e" not in html and "\u200b" not in html
    assert "U+202E" in html and "U+200B" in html


def test_the_truncation_marker_of_a_capped_diff_is_shown() -> None:
    _, diff = diff_of(("a.txt", "1\n", "2\n"))
    html = render_recorded_diff(diff + "\n[diff truncated: showing part of 99999 bytes]\n").html
    assert "[diff truncated: showing part of 99999 bytes]" in html


def test_an_unknown_view_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown diff view"):
        render_recorded_diff("", "split")
