"""A commit through the sandbox worker is sent before the undo journal is recorded and
held by the worker once it has checked the planned hashes: the journal is written
while the worker works, nothing changes on disk until the journal is done, and a
failure on either side leaves every file as it was and the worker in step."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.changes.changeset import content_hash
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.journal.undo_journal import UndoJournal
from tinyagent_fs.providers import linux
from tinyagent_fs.providers.linux import HELD_FROM, HELD_FROM_BYTES, _CommitGoAhead

from ..conftest import make_provider
from ..sandbox_support import Sandbox, open_sandbox, require_sandbox

OLD, NEW = b"inside\n", b"changed\n"


@pytest.fixture(autouse=True)
def hold_every_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hold one-file commits too, as one of ``HELD_FROM`` files is held."""
    monkeypatch.setattr(linux, "HELD_FROM", 1)


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    async for opened in open_sandbox(tmp_path):
        yield opened


def modify(sandbox: Sandbox, expected: bytes = OLD) -> list[dict[str, Any]]:
    return [
        {
            "kind": "modify",
            "path": str(sandbox.root / "inside.txt"),
            "expected_hash": content_hash(expected),
            "new_bytes": NEW,
            "new_hash": content_hash(NEW),
        }
    ]


def leftovers(root: Path) -> list[str]:
    return sorted(path.name for path in root.iterdir() if ".tafs-" in path.name)


async def in_step(sandbox: Sandbox) -> None:
    """The next calls get their own answers: no word or reply of the commit is left over."""
    info = await sandbox.provider.call("stat_path", path=str(sandbox.root / "inside.txt"))
    assert info is not None and info["type"] == "file"
    data = await sandbox.provider.call(
        "read_bytes", path=str(sandbox.root / "inside.txt"), max_bytes=100
    )
    assert data == (sandbox.root / "inside.txt").read_bytes()


@require_sandbox()
async def test_the_journal_is_recorded_while_the_worker_holds_the_checked_commit(
    sandbox: Sandbox,
) -> None:
    await sandbox.provider.call("ping")
    seen: list[tuple[bool, bytes, list[str]]] = []

    def before() -> None:
        target = sandbox.root / "inside.txt"
        seen.append((sandbox.provider._lock.locked(), target.read_bytes(), leftovers(sandbox.root)))

    report = await sandbox.provider.commit("held1", modify(sandbox), before)
    assert seen == [(True, OLD, [])], "the request is in flight and nothing is written yet"
    assert report["files"] == 1
    assert (sandbox.root / "inside.txt").read_bytes() == NEW
    await in_step(sandbox)


@require_sandbox()
async def test_a_failing_journal_calls_the_commit_off_with_nothing_changed(
    sandbox: Sandbox,
) -> None:
    def before() -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        await sandbox.provider.commit("held2", modify(sandbox), before)
    assert (sandbox.root / "inside.txt").read_bytes() == OLD
    assert leftovers(sandbox.root) == []
    await in_step(sandbox)
    await sandbox.provider.commit("held3", modify(sandbox), lambda: None)
    assert (sandbox.root / "inside.txt").read_bytes() == NEW


@require_sandbox()
async def test_a_conflict_found_while_held_is_raised_once_the_journal_is_recorded(
    sandbox: Sandbox,
) -> None:
    recorded: list[str] = []
    with pytest.raises(ToolError) as caught:
        await sandbox.provider.commit(
            "held4", modify(sandbox, b"not what is there\n"), lambda: recorded.append("journal")
        )
    assert caught.value.code is ErrorCode.CONFLICT
    assert recorded == ["journal"]
    assert (sandbox.root / "inside.txt").read_bytes() == OLD
    await in_step(sandbox)


@require_sandbox()
async def test_a_word_that_never_comes_calls_the_commit_off_by_the_deadline(
    tmp_path: Path,
) -> None:
    """A loop stopped without ending its tasks never answers: the worker and the lock
    are not kept for ever, and nothing changes."""
    async for sandbox in open_sandbox(tmp_path, call_timeout_s=1.0):
        word = _CommitGoAhead(asyncio.get_running_loop())
        args = {"change_id": "held5", "changes": modify(sandbox)}
        call = partial(sandbox.provider.call_sync, "commit_changes", args, word)
        with pytest.raises(ToolError, match="called off before it changed anything"):
            await asyncio.get_running_loop().run_in_executor(None, call)
        assert word.sending.done()
        assert (sandbox.root / "inside.txt").read_bytes() == OLD
        assert leftovers(sandbox.root) == []
        await in_step(sandbox)


async def test_a_patch_whose_journal_cannot_be_written_changes_nothing(
    tmp_path: Path, provider_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_bytes(b"one\n")
    begin = UndoJournal.begin
    failures = [OSError(28, "No space left on device")]

    def failing_once(journal: UndoJournal, changeset: Any) -> None:
        if failures:
            raise failures.pop()
        begin(journal, changeset)

    monkeypatch.setattr(UndoJournal, "begin", failing_once)
    patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"
    async with FileTools(
        tmp_path,
        provider=make_provider(provider_name, tmp_path),
        hooks=[AutoApprovePolicy()],
        audit=False,
    ) as fs:
        failed = await fs.apply_patch(patch)
        assert not failed.ok and "No space left" in failed.text
        assert (tmp_path / "a.txt").read_bytes() == b"one\n"
        assert leftovers(tmp_path) == []
        applied = await fs.apply_patch(patch)
        assert applied.ok, applied.text
        assert (tmp_path / "a.txt").read_bytes() == b"two\n"
        assert (await fs.undo()).ok
    assert (tmp_path / "a.txt").read_bytes() == b"one\n"


@require_sandbox()
@pytest.mark.parametrize(
    ("files", "size"),
    [(1, 1), (HELD_FROM - 1, 1), (HELD_FROM, 1), (1, HELD_FROM_BYTES - 1), (1, HELD_FROM_BYTES)],
)
async def test_only_a_commit_of_many_files_or_many_bytes_is_held(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, files: int, size: int
) -> None:
    monkeypatch.setattr(linux, "HELD_FROM", HELD_FROM)
    new = NEW * (size // len(NEW) + 1)
    new = new[:size] if size > 1 else NEW
    paths = [sandbox.root / f"file{index}.txt" for index in range(files)]
    for path in paths:
        path.write_bytes(OLD)
    changes = [
        {**modify(sandbox)[0], "path": str(path), "new_bytes": new, "new_hash": content_hash(new)}
        for path in paths
    ]
    held: list[bool] = []
    report = await sandbox.provider.commit(
        "held6", changes, lambda: held.append(sandbox.provider._lock.locked())
    )
    # The request already holds the worker, or not yet.
    assert held == [files >= HELD_FROM or size >= HELD_FROM_BYTES]
    assert report["files"] == files
    assert all(path.read_bytes() == new for path in paths)
    await in_step(sandbox)


def unnamed_files_of(pid: int, data: bytes) -> list[str]:
    """The files process ``pid`` or its children (the worker proper runs as PID 1 of its
    namespace, a child of the process started) hold open that have no name and hold
    ``data``."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    found = []
    for process in (pid, *children):
        for fd in os.listdir(f"/proc/{process}/fd"):
            try:
                target = os.readlink(f"/proc/{process}/fd/{fd}")
                if target.endswith(" (deleted)") and "/#" in target:
                    with open(f"/proc/{process}/fd/{fd}", "rb") as handle:
                        if handle.read() == data:
                            found.append(target)
            except OSError:
                continue
    return found


@require_sandbox()
async def test_a_held_commit_writes_its_new_content_unnamed_while_the_journal_is_recorded(
    sandbox: Sandbox,
) -> None:
    """The disk writes while the journal is kept: the new bytes are in an unnamed file
    of the worker's, and nothing in the project has changed, until the word comes."""
    await sandbox.provider.call("ping")
    seen: list[tuple[bytes, list[str], int]] = []
    pid = sandbox.provider.worker_pid
    assert pid is not None

    def before() -> None:
        deadline = time.monotonic() + 10
        while not (unnamed := unnamed_files_of(pid, NEW)) and time.monotonic() < deadline:
            time.sleep(0.005)  # the worker stages as the request arrives
        target = sandbox.root / "inside.txt"
        seen.append((target.read_bytes(), leftovers(sandbox.root), len(unnamed)))

    await sandbox.provider.commit("held7", modify(sandbox), before)
    assert seen == [(OLD, [], 1)]
    assert (sandbox.root / "inside.txt").read_bytes() == NEW
    assert unnamed_files_of(pid, NEW) == [] and leftovers(sandbox.root) == []
    await in_step(sandbox)
