"""A small in-process commit writes its new contents to unnamed files first.

``ops.commit._unnamed_staging``: the new bytes go to ``O_TMPFILE`` files in the
targets' folders and the disk starts writing them; the undo journal (``record``)
and the check of the planned contents run meanwhile; the files get names only
after both. These tests look at the folder and at the process's descriptors from
inside ``record``, fail ``record`` and the check, and kill the process inside
``record``: nothing may be left behind in the folder, and no descriptor open.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tinyagent_fs._runtime.durable import SYNCFS_FROM
from tinyagent_fs.changes.changeset import content_hash
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.ops import commit as commit_module
from tinyagent_fs.ops.commit import commit_changes

OLD = b"old line\n" * 1000
NEW = b"new line\n" * 1200


def modify(path: Path, old: bytes = OLD, new: bytes = NEW) -> dict[str, object]:
    return {
        "kind": "modify",
        "path": str(path),
        "dest": None,
        "expected_hash": content_hash(old),
        "dest_expected_hash": content_hash(None),
        "new_bytes": new,
        "mode": None,
    }


def unnamed_files_holding(data: bytes) -> list[str]:
    """This process's open files that have no name and hold ``data``."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.endswith(" (deleted)") and "/#" in target:
            with open(f"/proc/self/fd/{fd}", "rb") as handle:
                if handle.read() == data:
                    found.append(target)
    return found


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    target.mkdir()
    (target / "file.txt").write_bytes(OLD)
    (target / "file.txt").chmod(0o640)
    return target


def test_the_journal_is_recorded_while_the_new_content_is_written_but_unnamed(
    folder: Path,
) -> None:
    seen: list[tuple[list[str], bytes, list[str]]] = []

    def record() -> None:
        names = sorted(os.listdir(folder))
        seen.append((names, (folder / "file.txt").read_bytes(), unnamed_files_holding(NEW)))

    commit_changes("0123456789ab", [modify(folder / "file.txt")], record=record)
    [(names, current, unnamed)] = seen
    assert names == ["file.txt"] and current == OLD  # nothing named yet, nothing replaced
    assert len(unnamed) == 1 and unnamed[0].startswith(f"{folder}/#")
    assert sorted(os.listdir(folder)) == ["file.txt"]
    assert (folder / "file.txt").read_bytes() == NEW
    assert (folder / "file.txt").stat().st_mode & 0o777 == 0o640
    assert unnamed_files_holding(NEW) == []


@pytest.mark.parametrize("failing", ["record", "check"])
def test_a_failing_journal_or_check_leaves_no_file_and_no_descriptor(
    folder: Path, failing: str
) -> None:
    def record() -> None:
        if failing == "record":
            raise RuntimeError("the journal could not be written")

    change = modify(folder / "file.txt", old=b"planned against other bytes\n")
    if failing == "record":
        change = modify(folder / "file.txt")
    before = open_descriptors()
    with pytest.raises((RuntimeError, ToolError)) as raised:
        commit_changes("0123456789ab", [change], record=record)
    if failing == "check":
        assert isinstance(raised.value, ToolError) and raised.value.code is ErrorCode.CONFLICT
    assert sorted(os.listdir(folder)) == ["file.txt"]
    assert (folder / "file.txt").read_bytes() == OLD
    assert open_descriptors() == before


def test_a_commit_that_makes_a_folder_records_before_it_stages(folder: Path) -> None:
    """A folder made is a visible change: the journal must exist first, so such a
    commit stages named temp files after ``record``, as a large one does."""
    seen: list[list[str]] = []
    made = folder / "made"
    changes = [
        {**modify(made), "kind": "mkdir", "expected_hash": content_hash(None), "new_bytes": None},
        {**modify(made / "new.txt"), "kind": "create", "expected_hash": content_hash(None)},
    ]
    commit_changes("0123456789ab", changes, record=lambda: seen.append(os.listdir(folder)))
    assert seen == [["file.txt"]]
    assert (made / "new.txt").read_bytes() == NEW


def test_a_process_killed_while_the_journal_is_recorded_leaves_nothing_behind(
    folder: Path,
) -> None:
    """The attack on the order: the new content is on disk, unnamed, when the process
    dies. Had it a name by then (a temp file), nothing would ever remove it."""
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from tinyagent_fs.changes.changeset import content_hash
        from tinyagent_fs.ops.commit import commit_changes

        path = Path({str(folder / "file.txt")!r})
        change = {{
            "kind": "modify", "path": str(path), "dest": None,
            "expected_hash": content_hash(path.read_bytes()),
            "dest_expected_hash": content_hash(None),
            "new_bytes": b"new line\\n" * 1200, "mode": None,
        }}

        def record():
            print("recording", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

        commit_changes("0123456789ab", [change], record=record)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout == "recording\n"  # killed inside record, not before
    assert sorted(os.listdir(folder)) == ["file.txt"]
    assert (folder / "file.txt").read_bytes() == OLD


@pytest.mark.parametrize("files", [1, 2, SYNCFS_FROM - 1, SYNCFS_FROM])
def test_a_few_files_without_a_journal_are_all_written_back_before_the_first_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: int
) -> None:
    """A sandboxed worker's commit (its journal kept before it was asked): from two
    files to ``SYNCFS_FROM - 1``, each is under writeback before any is flushed, so
    one journal commit of the file system makes them all durable; a lone file, and
    a batch big enough for one syncfs, are staged named as before."""
    paths = [tmp_path / f"file{index}.txt" for index in range(files)]
    for path in paths:
        path.write_bytes(OLD)
    calls: list[str] = []
    writeback, fsync = commit_module.start_writeback, os.fsync
    monkeypatch.setattr(
        commit_module, "start_writeback", lambda fd: (calls.append("writeback"), writeback(fd))
    )
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), fsync(fd)))
    commit_changes("0123456789ab", [modify(path) for path in paths])
    assert all(path.read_bytes() == NEW for path in paths)
    assert sorted(os.listdir(tmp_path)) == sorted(path.name for path in paths)
    if 1 < files < SYNCFS_FROM:
        assert calls[:files] == ["writeback"] * files
        assert calls[files:] == ["fsync"] * (files + 1)  # each file, then the folder
    else:
        assert "writeback" not in calls


@pytest.mark.parametrize("journal", [True, False])
def test_no_descriptor_left_to_check_while_staged_unnamed_stages_by_name_instead(
    folder: Path, monkeypatch: pytest.MonkeyPatch, journal: bool
) -> None:
    """The unnamed files hold descriptors until they are named: a check that finds
    none free (a low RLIMIT_NOFILE) is not a failed commit. The commit closes them,
    names nothing, and stages by name; the journal is kept once."""
    second = folder / "second.txt"
    second.write_bytes(OLD)
    real, refused = commit_module._check_unchanged, []

    def no_descriptor_while_unnamed(*args: object) -> object:
        if unnamed_files_holding(NEW):
            refused.append(args[0])
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(commit_module, "_check_unchanged", no_descriptor_while_unnamed)
    recorded: list[str] = []
    commit_changes(
        "0123456789ab",
        [modify(folder / "file.txt"), modify(second)],
        record=(lambda: recorded.append("journal")) if journal else None,
    )
    assert refused, "the check never ran while the files were unnamed"
    assert recorded == (["journal"] if journal else [])
    assert (folder / "file.txt").read_bytes() == NEW and second.read_bytes() == NEW
    assert sorted(os.listdir(folder)) == ["file.txt", "second.txt"]
    assert unnamed_files_holding(NEW) == []
