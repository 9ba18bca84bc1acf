"""The undo journal: old content kept by hard link where it is safe, verified before
use, outside the project, and a change's cost independent of the journal's size."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import tinyagent_fs.journal.undo_journal as journal_module
from tinyagent_fs import FileTools
from tinyagent_fs.changes.changeset import ChangeKind, ChangeSet, FileChange
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.journal.store import keep_old_content
from tinyagent_fs.journal.trust import ForgedEntry, ManifestSigner
from tinyagent_fs.journal.undo_journal import ENTRY_NAME, KEEP_ENTRIES, PRUNE_SLACK, UndoJournal
from tinyagent_fs.providers import LocalProvider

from ..conftest import make_provider
from ..sandbox_support import require_sandbox


def local_tools(project: Path) -> FileTools:
    return FileTools(project, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False)


def stored_file(journal: UndoJournal, change_id: str) -> Path:
    for path in journal.directory.iterdir():
        found = ENTRY_NAME.fullmatch(path.name)
        if found is not None and found["change_id"] == change_id:
            return journal.directory / f"{found['stem']}.0.old"
    raise AssertionError(f"no entry for {change_id}")


def inodes_under(root: Path) -> set[tuple[int, int]]:
    found = set()
    for folder, _, names in os.walk(root):
        for name in names:
            info = os.lstat(os.path.join(folder, name))
            found.add((info.st_dev, info.st_ino))
    return found


async def test_old_content_is_the_old_inode_and_no_path_in_the_project_reaches_it(
    project: Path,
) -> None:
    fs = local_tools(project)
    target = project / "README.md"
    old = os.stat(target)
    written = await fs.write_file("README.md", "# new\n")
    assert written.ok, written.text
    assert fs.journal is not None
    kept = stored_file(fs.journal, written.data["change_id"])
    info = os.stat(kept)
    assert (info.st_dev, info.st_ino) == (old.st_dev, old.st_ino)  # linked, not copied
    assert info.st_nlink == 1  # the journal's name is the only one left
    assert (info.st_dev, info.st_ino) not in inodes_under(project)
    assert not fs.journal.directory.resolve().is_relative_to(project.resolve())
    assert (await fs.undo()).ok
    assert target.read_text() == "# Sample\n"
    await fs.close()


async def test_a_file_with_another_name_is_copied_so_writes_through_that_name_do_not_matter(
    project: Path,
) -> None:
    fs = local_tools(project)
    os.link(project / "README.md", project / "alias.md")
    assert (await fs.write_file("README.md", "# new\n")).ok
    with open(project / "alias.md", "r+") as alias:  # the old inode, written in place
        alias.write("# changed through the other name\n")
    undone = await fs.undo()
    assert undone.ok, undone.text
    assert (project / "README.md").read_text() == "# Sample\n"
    await fs.close()


async def test_old_content_changed_through_an_open_descriptor_is_not_restored(
    project: Path,
) -> None:
    fs = local_tools(project)
    target = project / "README.md"
    with open(target, "r+b") as kept_open:
        written = await fs.write_file("README.md", "# new\n")
        assert written.ok
        kept_open.write(b"# evil\n!!")  # same size as before, through the old inode
    result = await fs.undo(written.data["change_id"])
    assert result.error is not None and result.error.code == "PERMISSION_DENIED"
    assert "changed since" in result.error.message and "README.md" in result.error.message
    assert target.read_text() == "# new\n"
    await fs.close()


async def test_a_journal_on_another_file_system_keeps_a_copy(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = Path("/dev/shm")
    if not elsewhere.is_dir() or os.stat(elsewhere).st_dev == os.stat(project).st_dev:
        pytest.skip("no second file system to put the journal on")
    journal_dir = elsewhere / f"tinyagent-journal-test-{os.getpid()}"
    monkeypatch.setenv("TINYAGENT_FS_JOURNAL_DIR", str(journal_dir))
    try:
        fs = local_tools(project)
        old = os.stat(project / "README.md")
        written = await fs.write_file("README.md", "# new\n")
        assert written.ok
        assert fs.journal is not None
        kept = os.stat(stored_file(fs.journal, written.data["change_id"]))
        assert kept.st_dev != old.st_dev
        assert (await fs.undo()).ok
        assert (project / "README.md").read_text() == "# Sample\n"
        await fs.close()
    finally:
        shutil.rmtree(journal_dir, ignore_errors=True)


async def test_a_journal_inside_the_project_is_refused(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINYAGENT_FS_JOURNAL_DIR", str(project / "history"))
    fs = local_tools(project)
    result = await fs.write_file("README.md", "# new\n")
    assert result.error is not None and result.error.code == "PERMISSION_DENIED"
    assert "inside the project" in result.error.message
    assert (project / "README.md").read_text() == "# Sample\n"
    await fs.close()


async def test_a_change_whose_committed_mark_was_lost_is_completed_not_rolled_back(
    project: Path,
) -> None:
    """The mark is not flushed: after a power loss the entry may still say pending
    although the commit was durable and reported. Recovery must keep the change."""
    fs = local_tools(project)
    assert fs.journal is not None
    await fs.file_exists("README.md")  # recovery has run for this toolkit
    fs.journal.finish = lambda change_id: None  # type: ignore[method-assign]
    written = await fs.write_file("docs/guide.md", "# Rewritten\n")
    assert written.ok
    await fs.close()
    restarted = local_tools(project)
    await restarted.file_exists("README.md")
    assert restarted.recovered_changes == [written.data["change_id"]]
    assert (project / "docs" / "guide.md").read_text() == "# Rewritten\n"
    undone = await restarted.undo()
    assert undone.ok, undone.text
    assert (project / "docs" / "guide.md").read_text() == "# Guide\n\nUse add() to add.\n"
    await restarted.close()


def one_change(root: Path, index: int) -> ChangeSet:
    change = FileChange(ChangeKind.CREATE, root / f"f{index}.txt", None, b"x\n")
    return ChangeSet("write_file", (change,), root)


def test_a_change_reads_no_manifest_however_many_entries_the_journal_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = UndoJournal(tmp_path / "journal")
    root = tmp_path / "project"
    for index in range(KEEP_ENTRIES + PRUNE_SLACK):
        changeset = one_change(root, index)
        journal.begin(changeset)
        journal.finish(changeset.change_id)
    journal.settle()
    reads: list[str] = []
    listings: list[int] = []
    read, listed = journal._read_manifest, journal._manifest_names

    def counted_read(name: str, change_id: str) -> object:
        reads.append(name)
        return read(name, change_id)

    def counted_listing() -> list:
        listings.append(1)
        return listed()

    monkeypatch.setattr(journal, "_read_manifest", counted_read)
    monkeypatch.setattr(journal, "_manifest_names", counted_listing)
    changes = 3 * PRUNE_SLACK
    for index in range(changes):
        changeset = one_change(root, 1000 + index)
        journal.begin(changeset)
        journal.finish(changeset.change_id)
    journal.settle()  # the committed marks (and the prunes) are written behind
    assert reads == []
    assert len(listings) <= changes // PRUNE_SLACK  # one look at the size per batch
    entries = [p for p in journal.directory.iterdir() if ENTRY_NAME.fullmatch(p.name)]
    assert KEEP_ENTRIES <= len(entries) <= KEEP_ENTRIES + PRUNE_SLACK
    last = journal.last_undoable()
    assert last is not None and last.change_id == changeset.change_id
    assert len(reads) == 1  # the newest manifest, nothing else
    assert journal.pending() == [] and len(reads) == 1  # none is named pending


def test_only_a_change_of_several_steps_is_flushed_before_its_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = UndoJournal(tmp_path / "journal")
    root = tmp_path / "project"
    flushed: list[list[str]] = []
    monkeypatch.setattr(journal_module, "sync_directories", lambda paths: flushed.append(paths))
    journal.begin(one_change(root, 1))
    assert flushed == []
    two = ChangeSet(
        "apply_patch",
        tuple(FileChange(ChangeKind.CREATE, root / f"g{i}", None, b"x") for i in range(2)),
        root,
    )
    journal.begin(two)
    assert flushed == [[str(journal.directory)]]


@pytest.mark.parametrize("case", ["plain", "other name", "symlink", "grown", "missing"])
def test_old_content_is_linked_only_when_the_linked_inode_is_a_lone_file_of_that_size(
    tmp_path: Path, case: str
) -> None:
    """The link is made first and looked at through its own name: a symlink, a file
    with another name or of another size is not kept by link (nor left linked), and
    the kept file holds the planned bytes either way."""
    project, store = tmp_path / "project", tmp_path / "store"
    project.mkdir()
    store.mkdir()
    data = b"old bytes\n"
    source = project / "file.txt"
    real = project / "real.txt"
    if case == "symlink":
        real.write_bytes(data)
        source.symlink_to(real)
    elif case != "missing":
        source.write_bytes(data + b"more\n" if case == "grown" else data)
    if case == "other name":
        os.link(source, project / "alias.txt")
    kept = store / "kept.old"
    keep_old_content(source, str(kept), data, None)
    assert kept.read_bytes() == data
    info = os.lstat(kept)
    linked = case == "plain"
    assert stat.S_ISREG(info.st_mode)
    assert ((info.st_dev, info.st_ino) in inodes_under(project)) is linked, case
    assert info.st_nlink == (2 if linked else 1)
    assert [p.name for p in store.iterdir()] == ["kept.old"]


def test_a_signed_manifest_reads_back_whole_and_any_edit_to_it_is_refused(tmp_path: Path) -> None:
    signer = ManifestSigner(tmp_path / "journal")
    manifest = {
        "change_id": "c0ffee000003",
        "status": "pending",
        "created": 1.5,
        "files": [{"path": "/p/caf\u00e9 \udcff.txt", "old": "x.0.old", "mode": None}],
    }
    text = signer.signed(manifest).decode()
    assert signer.verified(text, "c0ffee000003") == manifest
    with pytest.raises(ForgedEntry):
        signer.verified(text, "c0ffee000004")
    for edit in ('"pending"', '"x.0.old"', "1.5"):
        forged = text.replace(edit, {'"pending"': '"committed"', "1.5": "2.5"}.get(edit, '"y"'))
        assert forged != text
        with pytest.raises(ForgedEntry):
            signer.verified(forged, "c0ffee000003")


def marker_names(journal: UndoJournal, change_id: str) -> list[str]:
    return sorted(
        path.name
        for path in journal.directory.iterdir()
        if change_id in path.name and path.suffix == ".json"
    )


def test_finish_returns_before_the_committed_mark_is_written_and_every_read_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = UndoJournal(tmp_path / "journal")
    changeset = one_change(tmp_path / "project", 1)
    journal.begin(changeset)
    release, marking = threading.Event(), threading.Event()
    write_mark = journal._write_mark

    def held_mark(*args: object) -> None:
        marking.set()
        assert release.wait(10), "the test never released the mark"
        write_mark(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(journal, "_write_mark", held_mark)
    journal.finish(changeset.change_id)  # a synchronous mark would wait 10 s here
    assert marking.wait(10)
    stem = ENTRY_NAME.fullmatch(marker_names(journal, changeset.change_id)[0])
    assert stem is not None and stem["pending"]
    threading.Timer(0.2, release.set).start()
    last = journal.last_undoable()  # waits for the mark, then finds the entry committed
    assert last is not None and last.change_id == changeset.change_id
    assert last.status == "committed"
    assert [
        ENTRY_NAME.fullmatch(n)["pending"] for n in marker_names(journal, changeset.change_id)
    ] == [None]  # type: ignore[index]


def test_a_mark_that_cannot_be_written_leaves_the_entry_pending_for_recovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    journal = UndoJournal(tmp_path / "journal")
    tools = FileTools(
        project, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False, journal=journal
    )

    def broken_overwrite(path: Path, data: bytes) -> None:
        raise OSError(28, "No space left on device", str(path))

    async def write_then_recover() -> None:
        with monkeypatch.context() as patched:
            patched.setattr(journal_module, "_overwrite", broken_overwrite)
            written = await tools.write_file("a.txt", "new\n")
            assert written.ok, written.text  # the file is committed all the same
            with pytest.warns(RuntimeWarning, match="could not mark change"):
                journal.settle()
        change_id = written.data["change_id"]
        assert journal.unwritten_marks == [change_id]
        assert [entry.change_id for entry in journal.pending()] == [change_id]
        await tools.close()  # gone, as a toolkit after a power loss: its claim goes too
        restarted = FileTools(
            project,
            provider=LocalProvider(),
            hooks=[AutoApprovePolicy()],
            audit=False,
            journal=UndoJournal(tmp_path / "journal"),
        )
        await restarted.read_file("a.txt")  # the first call recovers: every file is new
        assert restarted.journal is not None
        assert restarted.journal.pending() == []
        undone = await restarted.undo()
        assert undone.ok, undone.text
        assert not (project / "a.txt").exists()
        await restarted.close()

    asyncio.run(write_then_recover())


def test_a_commit_in_flight_is_not_another_toolkits_to_recover(tmp_path: Path) -> None:
    """Two toolkits on one project share its journal. The first one to call after
    starting recovers interrupted commits; one that another toolkit is making right
    now is not interrupted, and putting it back would undo it under its feet. Once
    its toolkit is gone, it is."""
    root = tmp_path / "project"
    committing = UndoJournal(tmp_path / "journal")
    changeset = one_change(root, 0)
    committing.begin(changeset)  # the files are being renamed now
    starting = UndoJournal(tmp_path / "journal")
    assert starting.pending() == []
    committing.close()  # the first toolkit closed, its commit never finished
    assert [entry.change_id for entry in starting.pending()] == [changeset.change_id]
    assert UndoJournal(tmp_path / "journal").pending() == []  # claimed: one recovers it


def test_the_commit_of_a_killed_process_is_recovered_at_once(tmp_path: Path) -> None:
    """The claim is a lock the kernel drops with its process: nothing to expire."""
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from tinyagent_fs.changes.changeset import ChangeKind, ChangeSet, FileChange
        from tinyagent_fs.journal.undo_journal import UndoJournal
        root = Path({str(tmp_path / "project")!r})
        change = FileChange(ChangeKind.CREATE, root / "f.txt", None, b"x\\n")
        changeset = ChangeSet("write_file", (change,), root)
        UndoJournal(Path({str(tmp_path / "journal")!r})).begin(changeset)
        print(changeset.change_id, flush=True)
        time.sleep(60)
        """
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            change_id = process.stdout.readline().strip()
            journal = UndoJournal(tmp_path / "journal")
            assert journal.pending() == []
            process.kill()
            process.wait(timeout=10)
            assert [entry.change_id for entry in journal.pending()] == [change_id]
        finally:
            process.kill()


ROUNDS = 80


@require_sandbox()
async def test_toolkits_starting_beside_a_committing_one_leave_its_commits_alone(
    tmp_path: Path,
) -> None:
    """The way a person has it: a notebook agent writes large files through the
    sandbox while other agents (an MCP server, a script) start on the same project
    and recover. Before entries were claimed, a starting toolkit removed the live
    commit's temp file as a leftover (IO_ERROR)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "x.txt").write_text("x\n")
    writing = FileTools(
        root, provider=make_provider("linux", root), hooks=[AutoApprovePolicy()], audit=False
    )

    async def write() -> str:
        for index in range(ROUNDS):
            text = f"version {index}\n" * 40_000
            result = await writing.write_file("a.txt", text)
            assert result.ok, result.text
        return text

    async def start_others() -> None:
        for _ in range(ROUNDS):
            other = local_tools(root)
            assert (await other.read_file("x.txt")).ok  # its first call recovers
            await other.close()
            await asyncio.sleep(0.001)

    try:
        last, _ = await asyncio.gather(write(), start_others())
        assert (root / "a.txt").read_text() == last
        assert not [path.name for path in root.iterdir() if ".tafs-" in path.name]
    finally:
        await writing.close()


def test_a_reported_change_is_never_half_undone_after_a_kill(tmp_path: Path) -> None:
    """Committed marks are written behind the calls. A 2-file patch, then a write of
    one of its files, both reported, then the process killed while the marking thread
    is slow (a slow journal disk): the next toolkit keeps both changes. Before a change
    waited for the marks of its toolkit's earlier ones, the patch was left pending
    under the write, was not found landed whole, and was half put back."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "f.txt").write_text("f-old\n")
    (project / "g.txt").write_text("g-old\n")
    script = textwrap.dedent(
        f"""
        import asyncio, os, time
        from pathlib import Path
        from tinyagent_fs import FileTools
        from tinyagent_fs.hooks import AutoApprovePolicy
        from tinyagent_fs.providers import LocalProvider
        import tinyagent_fs.journal.undo_journal as journal_module

        async def main():
            fs = FileTools(Path({str(project)!r}), provider=LocalProvider(),
                           hooks=[AutoApprovePolicy()], audit=False)
            await fs.read_file("f.txt")
            journal_module._marking.submit(time.sleep, 1)  # the marking thread is slow
            patch = ("--- a/f.txt\\n+++ b/f.txt\\n@@ -1 +1 @@\\n-f-old\\n+f-c1\\n"
                     "--- a/g.txt\\n+++ b/g.txt\\n@@ -1 +1 @@\\n-g-old\\n+g-c1\\n")
            assert (await fs.apply_patch(patch)).ok
            assert (await fs.write_file("g.txt", "g-c2\\n")).ok
            os.kill(os.getpid(), 9)

        asyncio.run(main())
        """
    )
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert killed.returncode == -9, killed.stderr

    async def restart() -> None:
        restarted = local_tools(project)
        assert (await restarted.read_file("f.txt")).ok  # the first call recovers
        await restarted.close()

    asyncio.run(restart())
    assert (project / "f.txt").read_text() == "f-c1\n"
    assert (project / "g.txt").read_text() == "g-c2\n"
