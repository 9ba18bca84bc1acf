"""A commit that fails at any step rolls back whole: every file already renamed,
removed or created is restored, every temp file and made folder is gone, modes too.

The failure is real: the N-th filesystem call the commit makes inside the project
raises ENOSPC (or EIO), for every N of a commit that creates, modifies, deletes,
moves and makes a folder at once; for a commit wide enough that its temp files
are written from several threads (``ops.fan_out``); and for one that stages while
it checks the planned contents (as one of ``ops.commit.OVERLAP_FROM`` files does).
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.ops import commit, fan_out
from tinyagent_fs.providers import LocalProvider

CALLS = (
    "close",
    "open",
    "write",
    "fsync",
    "fchmod",
    "replace",
    "rename",
    "link",
    "unlink",
    "mkdir",
    "rmdir",
)
BEFORE = {
    "keep.txt": (b"keep\n", 0o644),
    "change.txt": (b"one\ntwo\n", 0o644),
    "gone.txt": (b"bye\n", 0o644),
    "script.sh": (b"#!/bin/sh\necho move me\n", 0o755),
}
PATCH = """\
*** Begin Patch
*** Add File: made/new.txt
+brand new
*** Update File: change.txt
@@
 one
-two
+TWO
*** Delete File: gone.txt
*** Update File: script.sh
*** Move to: bin/script.sh
@@
 #!/bin/sh
-echo move me
+echo moved
*** End Patch
"""
WIDE = {
    f"wide{index % 8}/f{index:02}.txt": (f"line {index}\n".encode(), 0o644) for index in range(16)
}
"""Files in eight folders: enough for helper threads to take some (see fan_out)."""
WIDE_PATCH = PATCH.replace(
    "*** End Patch\n",
    "".join(
        f"*** Update File: {name}\n@@\n-{data.decode()}+changed {name}\n"
        for name, (data, _) in WIDE.items()
    )
    + "*** End Patch\n",
)


def state(root: Path) -> dict[str, tuple[bytes, int]]:
    found = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        found[rel] = (b"<dir>" if path.is_dir() else path.read_bytes(), path.stat().st_mode & 0o777)
    return found


class FailAt:
    """Makes the ``step``-th call into the project raise ``errno_``; counts calls."""

    def __init__(self, root: Path, step: int, errno_: int) -> None:
        self.root = str(root.resolve())
        self.step = step
        self.errno = errno_
        self.calls = 0
        self.failed_in = ""
        self.descriptors: set[int] = set()
        self.lock = threading.Lock()  # the temp files of a wide commit come from threads
        self.threads: set[int] = set()

    def inside(self, args: tuple[object, ...], kwargs: dict[str, object]) -> bool:
        # A path may be relative to a folder's descriptor (dir_fd, src_dir_fd, dst_dir_fd).
        folders = (kwargs.get("src_dir_fd", kwargs.get("dir_fd")), kwargs.get("dst_dir_fd"))
        for arg, folder_fd in zip(args[:2], folders, strict=False):
            if isinstance(arg, int):  # a descriptor opened inside: write, fsync, fchmod
                return arg in self.descriptors
            if isinstance(arg, (str, bytes, os.PathLike)):
                base = "" if folder_fd is None else f"/proc/self/fd/{folder_fd}"
                folder = os.path.realpath(os.path.join(base, os.path.dirname(os.fsdecode(arg))))
                if folder == self.root or folder.startswith(self.root + "/"):
                    return True
        return False

    def wrap(self, name: str, real):  # type: ignore[no-untyped-def]
        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            with self.lock:
                if name == "close":
                    self.descriptors.discard(args[0])
                elif not self.failed_in and self.inside(args, kwargs):
                    self.calls += 1
                    if self.calls == self.step:
                        self.failed_in = name
                        raise OSError(self.errno, os.strerror(self.errno))
            result = real(*args, **kwargs)
            if name == "open" and self.inside(args, kwargs):
                with self.lock:
                    self.descriptors.add(result)
                    self.threads.add(threading.get_ident())
            return result

        return call


def fill(root: Path, wide: bool) -> Path:
    root.mkdir()
    for name, (data, mode) in {**BEFORE, **(WIDE if wide else {})}.items():
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_bytes(data)
        (root / name).chmod(mode)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    yield fill(tmp_path / "project", wide=False)


async def apply_with(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    fault: FailAt | None,
    patch: str = PATCH,
    overlap: bool = False,
) -> object:
    fs = FileTools(root, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False)
    try:
        await fs.read_file("change.txt")  # plan and review happen unfaulted
        if patch is WIDE_PATCH:  # every call counts as slow: helper threads always join
            monkeypatch.setattr(fan_out, "SLOW_CALL", 0.0)
        if overlap:  # staged on another thread while the planned contents are checked
            monkeypatch.setattr(commit, "OVERLAP_FROM", 1)
        if fault is not None:
            for name in CALLS:
                monkeypatch.setattr(os, name, fault.wrap(name, getattr(os, name)))
        return await fs.apply_patch(patch)
    finally:
        monkeypatch.undo()
        await fs.close()


async def test_the_patch_applies_whole_without_faults(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = FailAt(project, step=0, errno_=errno.ENOSPC)
    result = await apply_with(project, monkeypatch, counter)
    assert result.ok, result.text  # type: ignore[attr-defined]
    after = state(project)
    assert after["bin/script.sh"] == (b"#!/bin/sh\necho moved\n", 0o755)
    assert "gone.txt" not in after and after["made/new.txt"][0] == b"brand new\n"
    assert counter.calls >= 20, f"only {counter.calls} filesystem calls: the loop below is thin"


async def test_a_wide_commit_writes_its_temp_files_from_several_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = fill(tmp_path / "wide", wide=True)
    counter = FailAt(root, step=0, errno_=errno.ENOSPC)
    result = await apply_with(root, monkeypatch, counter, WIDE_PATCH)
    assert result.ok, result.text  # type: ignore[attr-defined]
    assert state(root)["wide3/f11.txt"][0] == b"changed wide3/f11.txt\n"
    assert len(counter.threads) > 1


@pytest.mark.parametrize(
    ("errno_", "wide", "overlap"),
    [
        (errno.ENOSPC, False, False),
        (errno.EIO, False, False),
        (errno.ENOSPC, True, False),
        (errno.ENOSPC, False, True),
    ],
)
async def test_a_failure_at_any_step_rolls_the_whole_commit_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, errno_: int, wide: bool, overlap: bool
) -> None:
    patch = WIDE_PATCH if wide else PATCH
    counting = fill(tmp_path / "count", wide)
    counter = FailAt(counting, step=0, errno_=errno_)
    assert (await apply_with(counting, monkeypatch, counter, patch, overlap)).ok  # type: ignore[attr-defined]
    await rolls_back_at_every_step(
        tmp_path, monkeypatch, counter, patch, wide, overlap, moved="bin/script.sh"
    )


async def rolls_back_at_every_step(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    counter: FailAt,
    patch: str,
    wide: bool = False,
    overlap: bool = False,
    moved: str = "bin/script.sh",
) -> None:
    """Apply ``patch`` once for every call ``counter`` counted, that call failing."""
    failed_steps = 0
    for step in range(1, counter.calls + 1):
        root = fill(tmp_path / f"step{step}", wide)
        before = state(root)
        fault = FailAt(root, step, counter.errno)
        result = await apply_with(root, monkeypatch, fault, patch, overlap)
        assert fault.failed_in, f"step {step} was never reached"
        if result.ok:  # type: ignore[attr-defined]
            # Only a failure after the last rename (dropping backups, syncing folders)
            # may leave the change applied; then it must be applied whole.
            assert state(root)[moved][0] == b"#!/bin/sh\necho moved\n"
        else:
            failed_steps += 1
            assert state(root) == before, f"step {step} ({fault.failed_in}) left a partial change"
        assert not [p for p in root.rglob("*") if ".tafs-" in p.name], f"temp files at {step}"
    assert failed_steps >= counter.calls // 2, (failed_steps, counter.calls)


IN_PLACE_PATCH = PATCH.replace("made/new.txt", "added.txt").replace("bin/script.sh", "moved.sh")
"""The same kinds of change with no folder to make: staged unnamed (``O_TMPFILE``)."""


@pytest.mark.parametrize("errno_", [errno.ENOSPC, errno.EIO])
async def test_a_commit_staged_unnamed_rolls_back_whole_at_any_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, errno_: int
) -> None:
    staged_unnamed: list[bool] = []
    real = commit._unnamed_staging

    def spied(steps):  # type: ignore[no-untyped-def]
        files = real(steps)
        staged_unnamed.append(files is not None)
        return files

    counting = fill(tmp_path / "count", wide=False)
    counter = FailAt(counting, step=0, errno_=errno_)
    monkeypatch.setattr(commit, "_unnamed_staging", spied)
    assert (await apply_with(counting, monkeypatch, counter, IN_PLACE_PATCH)).ok  # type: ignore[attr-defined]
    assert staged_unnamed == [True]
    assert state(counting)["moved.sh"] == (b"#!/bin/sh\necho moved\n", 0o755)
    await rolls_back_at_every_step(tmp_path, monkeypatch, counter, IN_PLACE_PATCH, moved="moved.sh")


@pytest.mark.parametrize("errno_", [errno.ENOSPC, errno.EIO])
async def test_a_single_file_write_fails_whole_or_lands_whole_at_any_step(
    tmp_path: Path, errno_: int
) -> None:
    """One file staged unnamed and renamed with no backup: every failure leaves the
    old bytes and mode, or (after the rename) the new ones; never a temp file."""
    new = b"rewritten\n" * 5000

    async def write(root: Path, fault: FailAt) -> object:
        fs = FileTools(root, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False)
        patched = pytest.MonkeyPatch()
        try:
            await fs.read_file("change.txt")
            for name in CALLS:
                patched.setattr(os, name, fault.wrap(name, getattr(os, name)))
            return await fs.write_file("change.txt", new.decode())
        finally:
            patched.undo()
            await fs.close()

    counting = fill(tmp_path / "count", wide=False)
    counter = FailAt(counting, step=0, errno_=errno_)
    assert (await write(counting, counter)).ok  # type: ignore[attr-defined]
    assert counter.calls >= 6, counter.calls
    for step in range(1, counter.calls + 1):
        root = fill(tmp_path / f"step{step}", wide=False)
        before = state(root)
        fault = FailAt(root, step, errno_)
        result = await write(root, fault)
        assert fault.failed_in, f"step {step} was never reached"
        after = state(root)
        if result.ok:  # type: ignore[attr-defined]
            assert after["change.txt"] == (new, 0o644)
        else:
            assert after == before, f"step {step} ({fault.failed_in}) left a partial change"
        assert sorted(after) == sorted(before), f"step {step} left a file behind"


class RefusedFrom:
    """From the ``step``-th call into the project on, the ``refused`` calls that would
    change an entry of the project's top folder fail with ``errno_``: all of them
    (EACCES) as when a person makes the folder read-only while a commit runs, or only
    renames (EIO): the commit fails, and so does part of its rollback."""

    WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | getattr(os, "O_TMPFILE", 0)

    def __init__(self, root: Path, step: int, refused: frozenset[str], errno_: int) -> None:
        self.root = str(root.resolve())
        self.step = step
        self.refused = refused
        self.errno = errno_
        self.calls = 0

    def at_top(self, arg: object, folder_fd: object) -> bool:
        if not isinstance(arg, (str, bytes, os.PathLike)):
            return False
        base = "" if folder_fd is None else f"/proc/self/fd/{folder_fd}"
        path = os.path.join(base, os.fsdecode(arg))
        if os.path.isdir(path) and not os.path.islink(path) and arg not in ("", "."):
            path = path.rstrip("/")
        return os.path.realpath(os.path.dirname(path)) == self.root

    def wrap(self, name: str, real):  # type: ignore[no-untyped-def]
        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            folders = (kwargs.get("src_dir_fd", kwargs.get("dir_fd")), kwargs.get("dst_dir_fd"))
            tops = [self.at_top(a, f) for a, f in zip(args[:2], folders, strict=False)]
            refused = name in self.refused and (
                name != "open" or (len(args) > 1 and args[1] & self.WRITE_FLAGS)
            )
            if any(tops):
                self.calls += 1
                if refused and self.calls >= self.step:
                    raise OSError(self.errno, os.strerror(self.errno))
            return real(*args, **kwargs)

        return call


READ_ONLY = frozenset({"open", "replace", "rename", "link", "unlink", "mkdir", "rmdir"})


@pytest.mark.parametrize(
    ("refused", "errno_"),
    [(READ_ONLY, errno.EACCES), (frozenset({"replace", "rename"}), errno.EIO)],
)
async def test_a_folder_refusing_changes_mid_commit_leaves_no_hidden_leftover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused: frozenset[str], errno_: int
) -> None:
    """At every step from which the folder refuses changes, the commit either applies
    whole, or fails and puts back everything it still can (never stopping at the
    first refusal), never drops an old file it could not put back, and names in its
    error every entry it had to leave (``rollback_incomplete``); a whole change names
    the backups it could not drop."""
    incomplete = 0
    for step in range(1, 40):
        root = fill(tmp_path / f"step{step}", wide=False)
        before = state(root)
        fault = RefusedFrom(root, step, refused, errno_)
        fs = FileTools(root, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False)
        try:
            await fs.read_file("change.txt")
            for name in CALLS:
                monkeypatch.setattr(os, name, fault.wrap(name, getattr(os, name)))
            result = await fs.apply_patch(IN_PLACE_PATCH)
        finally:
            monkeypatch.undo()
            await fs.close()
        leftovers = [p.name for p in root.rglob("*") if ".tafs-" in p.name]
        if result.ok:  # whole; a backup it could not drop is named, never left unsaid
            assert state(root)["moved.sh"][0] == b"#!/bin/sh\necho moved\n", step
            left = result.data.get("leftover_backups", [])
            assert all(any(name in entry for entry in left) for name in leftovers), (step, left)
            assert all(entry in result.text for entry in left)
            continue
        assert result.error is not None
        left = result.data.get("left", [])
        assert all(any(name in entry for entry in left) for name in leftovers), (step, left)
        for name, (data, _) in BEFORE.items():
            kept = [p for p in root.iterdir() if p.name.startswith(f".{name}.tafs-")]
            assert state(root).get(name, (None,))[0] == data or any(
                p.read_bytes() == data for p in kept
            ), f"step {step}: the old {name} is gone"
        if result.data.get("rollback_incomplete"):
            incomplete += 1
            assert "could not be undone completely" in result.text
        else:
            assert state(root) == before, f"step {step} left a change it did not name"
    assert incomplete, "no step failed the rollback: the test misses what it is for"
