"""Undo restores byte-identical content, as a reviewed change, and refuses on conflict."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.errors import ToolError
from tinyagent_fs.hooks import AutoApprovePolicy, DenyAllPolicy
from tinyagent_fs.journal.undo_journal import UndoJournal
from tinyagent_fs.providers.local import LocalProvider

ODD_BYTES = b"\xef\xbb\xbfline one\r\nline two\rmixed\n\xc3\xa9 no final newline"


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


async def test_undo_write_restores_exact_bytes(fs: FileTools, project: Path) -> None:
    (project / "odd.txt").write_bytes(ODD_BYTES)
    before = snapshot(project)
    assert (await fs.write_file("odd.txt", "replaced\n")).ok
    result = await fs.undo()
    assert result.ok, result.text
    assert snapshot(project) == before


@pytest.mark.parametrize(
    "action",
    [
        ("edit_file", {"path": "src/pkg/core.py", "old_string": "a + b", "new_string": "b + a"}),
        ("write_file", {"path": "new/file.txt", "content": "new\n"}),
        ("delete_path", {"path": "src", "recursive": True}),
        ("move_path", {"src": "docs", "dst": "manual"}),
        ("move_path", {"src": "README.md", "dst": "docs/guide.md", "overwrite": True}),
        ("copy_path", {"src": "src", "dst": "src2"}),
        ("create_directory", {"path": "x/y/z"}),
    ],
)
async def test_undo_reverts_every_kind_of_change(
    fs: FileTools, project: Path, action: tuple[str, dict]
) -> None:
    before = snapshot(project)
    dirs_before = sorted(str(p) for p in project.rglob("*") if p.is_dir())
    done = await fs.call(*action)
    assert done.ok, done.text
    undone = await fs.undo()
    assert undone.ok, undone.text
    assert snapshot(project) == before
    assert sorted(str(p) for p in project.rglob("*") if p.is_dir()) == dirs_before


async def test_undo_by_change_id_and_redo(fs: FileTools, project: Path) -> None:
    first = await fs.write_file("a.txt", "1\n")
    await fs.write_file("b.txt", "2\n")
    undone = await fs.undo(first.data["change_id"])
    assert undone.ok
    assert not (project / "a.txt").exists() and (project / "b.txt").exists()
    assert (await fs.undo(first.data["change_id"])).error.code == "INVALID_ARGUMENT"
    redo = await fs.undo(undone.data["change_id"])
    assert redo.ok
    assert (project / "a.txt").read_text() == "1\n"


async def test_undo_refuses_when_the_file_changed_since(fs: FileTools, project: Path) -> None:
    await fs.write_file("README.md", "# mine\n")
    (project / "README.md").write_text("# someone else's\n")
    result = await fs.undo()
    assert result.error.code == "CONFLICT"
    assert (project / "README.md").read_text() == "# someone else's\n"


async def test_undo_is_reviewed_like_any_change(project: Path, audit) -> None:
    fs = FileTools(project, hooks=[AutoApprovePolicy()], audit=audit)
    await fs.write_file("README.md", "# mine\n")
    strict = FileTools(project, hooks=[DenyAllPolicy()], audit=audit)
    result = await strict.undo()
    assert result.error.code == "DENIED_BY_HOOK"
    assert (project / "README.md").read_text() == "# mine\n"


async def test_nothing_to_undo(project: Path, audit, tmp_path: Path) -> None:
    os.environ["TINYAGENT_FS_JOURNAL_DIR"] = str(tmp_path / "fresh-journal")
    fs = FileTools(project, hooks=[AutoApprovePolicy()], audit=audit)
    assert (await fs.undo()).error.code == "NOT_FOUND"


async def test_journal_lives_outside_the_root(fs: FileTools, project: Path) -> None:
    await fs.write_file("a.txt", "x")
    assert not fs.journal.directory.resolve().is_relative_to(project.resolve())


def journal_bytes(journal: UndoJournal) -> int:
    """What the journal's entries hold on disk (manifests and old contents)."""
    return sum(
        path.stat().st_size for path in journal.directory.iterdir() if path.name[:1].isdigit()
    )


async def test_the_journal_is_bounded_by_bytes_oldest_dropped_first_and_undo_says_so(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    journal = UndoJournal(tmp_path / "journal", max_bytes=64 * 1024)
    async with FileTools(
        root, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False, journal=journal
    ) as tools:
        ids = []
        for index in range(40):
            result = await tools.write_file("data.bin", f"{index:08d}" * 1024)
            assert result.ok, result.text
            ids.append(result.data["change_id"])
        journal.settle()
        assert journal_bytes(journal) <= 64 * 1024
        gone = await tools.undo(ids[0])
        assert gone.error is not None and gone.error.code == "NOT_FOUND"
        assert f"change {ids[0]} can no longer be undone" in gone.text
        assert "dropped on" in gone.text and "64.0 KiB" in gone.text
        assert (await tools.undo()).ok
        assert (root / "data.bin").read_text() == f"{38:08d}" * 1024


async def test_the_newest_change_is_kept_even_when_it_alone_is_over_the_budget(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "big.txt").write_text("old\n" * 10_000)
    journal = UndoJournal(tmp_path / "journal", max_bytes=1000)
    async with FileTools(
        root, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False, journal=journal
    ) as tools:
        assert (await tools.write_file("big.txt", "new\n")).ok
        journal.settle()
        assert (await tools.undo()).ok
    assert (root / "big.txt").read_text() == "old\n" * 10_000


def test_the_byte_budget_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINYAGENT_FS_JOURNAL_MAX_BYTES", "5000")
    assert UndoJournal(tmp_path / "journal").max_bytes == 5000
    monkeypatch.setenv("TINYAGENT_FS_JOURNAL_MAX_BYTES", "lots")
    with pytest.raises(ToolError, match="must be a number of bytes"):
        UndoJournal(tmp_path / "journal")
