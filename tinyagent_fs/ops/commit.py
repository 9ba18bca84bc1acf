"""Commit a ChangeSet: every file or none, each write atomic and durable.

The sequence is: check every planned hash (a mismatch is a CONFLICT and nothing
is changed); stage new contents in temp siblings (from a few threads for a
large batch: see ``fan_out``) and make them durable (one fsync each, or one
syncfs for a large batch: see ``durable``); move old files aside as hard-linked
backups (not the one file of a commit that writes one in place: its one rename
happens whole or not at all); rename the staged files into place; make the directories durable (once
each); drop the backups. A failure at any step restores the backups. Temp and
backup names carry the change id, so a commit killed half-way can be found and
rolled back (or, once every file is in its new state, completed) by
:func:`recover_commit`.

A smaller commit made in this process with its undo journal (``record``) writes
its new contents first, to unnamed files, and keeps the journal and checks the
planned contents while the disk writes them (see :func:`_unnamed_staging`); so
does a commit of a few files whose journal was kept before (a sandboxed
worker's), for the one flush they then share (:func:`_stages_unnamed`).

A commit of ``OVERLAP_FROM`` files or more stages on another thread while the
calling thread checks the planned contents: checking hundreds of files takes
milliseconds, creating their temp files longer, and neither needs the other. A
mismatch found meanwhile is still a CONFLICT that changes nothing: the temp
files written by then are removed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat as stat_module
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from .._runtime.digest import DIRECTORY, MISSING
from .._runtime.durable import (
    SYNCFS_FROM,
    FileFlush,
    start_writeback,
    sync_directories,
    write_all,
)
from .._runtime.warm_threads import WarmThreads
from ..errors import ErrorCode, ToolError
from .fan_out import run_each

PROC_FD = "/proc/self/fd/"
"""Where descriptor paths start (``providers.pinned_paths`` hands the commit such paths)."""
TEMP_MARK = ".tafs-"
LEFT_SHOWN = 8
"""The most entries a message names, of a failed rollback's leftovers or of the backups
a commit could not drop (all are in its details or data)."""
COMPARE_BLOCK = 256 * 1024
HASH_BLOCK = 1 << 20
OVERLAP_FROM = 32
"""Files in one commit from which staging overlaps the check (measured: the 523-file
patch x0.94 wall; a lone 1 MB file 4-15% slower, its check too short against the
hand-off to a thread, and its read competing with its own write)."""
STAGERS = 2
"""Staging threads: one per commit running at once in this process, up to two."""

_last_written: tuple[str, str, bytes] | None = None
"""Path, digest and bytes of the last file a commit wrote, when the caller gave
the digest (``new_hash``): the next change of that file is usually planned
against those bytes, and comparing the file with them spares hashing it (3 ms
for 5 MB in a sandboxed worker, which has no planned bytes to compare with)."""
_stagers = WarmThreads(STAGERS, "tinyagent-fs-stage")


@dataclass
class _Step:
    kind: str
    path: str
    dest: str | None
    new_bytes: bytes | None
    mode: int | None
    verified_mode: int | None = None
    """Permission bits of the regular file ``path`` held when its content was verified."""
    staged: str | None = None
    backups: list[tuple[str, str, bool]] = field(default_factory=list)
    """(original, backup, whether the backup is a renamed directory)."""


def commit_changes(
    change_id: str,
    changes: list[dict[str, Any]],
    ready: Callable[[], bool] | None = None,
    record: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Apply ``changes`` (dicts of FileChange fields) atomically; report bytes written.

    ``ready``, when given, is asked before any name in the project changes: a caller
    that keeps the undo journal elsewhere records it meanwhile, and says whether to
    go on (False: called off, nothing changed). A small commit asks it while the
    disk writes the new contents, unnamed, and checks them after; a large one
    checks every planned hash first.
    Without it, a large commit checks while it stages (see the module's docstring).

    ``record``, when given, keeps the undo journal in this process: it is called
    before any name in the project changes, and its error is raised with nothing
    changed. A small commit calls it while the disk writes the new contents (see
    :func:`_unnamed_staging`).
    """
    steps = [_step(change) for change in changes]
    pairs = list(zip(steps, changes, strict=True))
    if _stages_unnamed(steps, ready, record):
        unnamed = _unnamed_staging(steps)
        if unnamed is not None:
            meanwhile = (record or _nothing) if ready is None else partial(_go_ahead, ready)
            try:
                _name_when_checked(unnamed, pairs, meanwhile, change_id)
                return _applied(steps, changes, change_id, [])
            except _NoDescriptorToCheck:  # it ran: staged anew, by name, with descriptors to spare
                record = ready = None
    if record is not None:
        record()
    overlap = ready is None and len(steps) >= OVERLAP_FROM
    # Staging makes the folders it needs: a step that makes one is checked before.
    checked_meanwhile = [pair for pair in pairs if overlap and pair[0].kind != "mkdir"]
    _verify([pair for pair in pairs if not overlap or pair[0].kind == "mkdir"])
    if ready is not None:
        _go_ahead(ready)
    created_dirs: list[str] = []
    try:
        flush, folders = FileFlush(), _Folders(created_dirs)
        by_folder: dict[str, list[tuple[_Step, str, int]]] = {}
        for step in steps:
            if job := _staging(step, change_id, folders):
                by_folder.setdefault(os.path.dirname(job[1]), []).append(job)

        def stage() -> None:
            run_each(lambda job: _write_staged(*job, flush), list(by_folder.values()))
            flush.flush()  # new contents durable before any rename

        if checked_meanwhile:
            _meanwhile(stage, lambda: _verify(checked_meanwhile))
        else:
            stage()
    except BaseException as failure:
        _roll_back([], steps, created_dirs, failure)
        raise
    return _applied(steps, changes, change_id, created_dirs)


def _applied(
    steps: list[_Step], changes: list[dict[str, Any]], change_id: str, created_dirs: list[str]
) -> dict[str, Any]:
    """Rename every staged file into place (rolling all back on a failure), make the
    renames durable and drop the backups; the commit's report."""
    applied: list[_Step] = []
    try:
        if alone := _alone(steps):  # one rename, whole or not at all: nothing to back up
            _replace(alone, steps[0].path)
            steps[0].staged = None
        else:
            for step in steps:
                try:
                    _apply(step, change_id)
                except BaseException:
                    if step.kind == "move" and step.staged is None:
                        applied.append(step)  # it failed after its rename: undo that too
                    raise
                applied.append(step)
    except BaseException as failure:
        _roll_back(applied, steps, created_dirs, failure)
        raise
    # Every file is new now: make the renames durable, then drop the backups.
    # Neither step can undo the change any more, so a failure in them is not a
    # failed commit; a backup that cannot be removed is retried once and then
    # reported, never left for recovery to "restore" over the committed file.
    with contextlib.suppress(OSError):
        sync_directories(_touched_directories(steps, created_dirs))
    leftovers = [
        backup
        for step in steps
        for _, backup, is_dir in step.backups
        if not _dropped(backup, is_dir)
    ]
    report: dict[str, Any] = {
        "bytes_written": sum(len(step.new_bytes or b"") for step in steps),
        "files": len(steps),
    }
    if leftovers:
        report["leftover_backups"] = leftovers
    _keep_last_written(steps, changes)
    return report


def _alone(steps: list[_Step]) -> str | None:
    """The staged file of a commit that writes one file in place (its rename is all
    it does), else None."""
    if len(steps) == 1 and steps[0].kind in ("create", "modify"):
        return steps[0].staged
    return None


def _stages_unnamed(
    steps: list[_Step], ready: Callable[[], bool] | None, record: Callable[[], None] | None
) -> bool:
    """Whether to try :func:`_unnamed_staging`: for a commit of fewer than
    ``OVERLAP_FROM`` files that keeps its journal meanwhile (``record``), is held
    while the journal is kept elsewhere (``ready``: the disk writes meanwhile too),
    or writes from two to ``SYNCFS_FROM - 1`` files.

    Files all under writeback before the first fsync are made durable by one
    journal commit of the file system, where files written and flushed one by one
    take one each (in a sandboxed worker, whose journal was kept before it was
    asked: a 5-file patch 1.20-1.30x ``git apply`` and its fsyncs, against
    1.27-1.47x, in turns). A lone file gains nothing, and from ``SYNCFS_FROM``
    files the named staging's one syncfs flushes them together already.
    """
    if len(steps) >= OVERLAP_FROM:
        return False
    return ready is not None or record is not None or 1 < len(steps) < SYNCFS_FROM


def _unnamed_staging(steps: list[_Step]) -> list[tuple[_Step, int]] | None:
    """Each step's new content written to an unnamed file (``O_TMPFILE``) in its
    target's folder, the disk told to start writing it; None (nothing left behind)
    where a step cannot be staged so: a folder to make first, a file system or a
    system without unnamed files.

    An unnamed file is not in any folder, and it is gone with its descriptor, even
    when the process is killed: so it may be written before the undo journal is,
    which a named temp file may not (a kill in between would leave it behind, with
    no journal entry to find it by). The journal and the check of the planned
    contents then take place while the disk writes, and the files are named only
    after both (measured here for 1 MB: the fsync waits 0.2 ms after 0.8 ms of
    such work, 0.9 ms without it).
    """
    if not hasattr(os, "O_TMPFILE") or any(step.kind == "mkdir" for step in steps):
        return None
    files: list[tuple[_Step, int]] = []
    try:
        for step in steps:
            target = _target(step)
            if target is None or step.new_bytes is None:
                continue
            mode = step.mode if step.mode is not None else _existing_mode(target)
            flags = os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC
            fd = _open(os.path.dirname(target), flags, 0o600)
            files.append((step, fd))
            write_all(fd, step.new_bytes)
            os.fchmod(fd, mode)
            start_writeback(fd)
    except OSError:
        _close_all(files)
        return None
    return files


def _name_when_checked(
    files: list[tuple[_Step, int]],
    pairs: list[tuple[_Step, dict[str, Any]]],
    record: Callable[[], None],
    change_id: str,
) -> None:
    """The journal recorded and the planned contents checked while the disk writes
    ``files``; then each is named as its step's temp file and made durable (after
    the name, so that the one fsync also keeps the new link count)."""
    try:
        record()
        try:
            _verify(pairs)
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE):  # the unnamed files hold the last
                raise _NoDescriptorToCheck from exc
            raise
        for step, fd in files:
            target = _target(step)
            assert target is not None
            staged = _sibling(target, change_id, "tmp")
            _name_open_file(fd, staged)
            step.staged = staged
        for _, fd in files:
            os.fsync(fd)
    except BaseException as failure:
        _roll_back([], [step for step, _ in files], [], failure)
        raise
    finally:
        _close_all(files)


class _NoDescriptorToCheck(Exception):
    """The check of the planned contents found no descriptor free while the unnamed
    files held theirs: nothing was named, and the commit stages by name instead."""


def _go_ahead(ready: Callable[[], bool]) -> None:
    """``ready``'s word; a no calls the commit off, nothing changed."""
    if not ready():
        raise ToolError(
            ErrorCode.INTERNAL_ERROR,
            "the commit was called off before it changed anything",
            "nothing was written",
        )


def _nothing() -> None:
    """The journal step of a commit whose journal was kept before it was asked for."""


def _close_all(files: list[tuple[_Step, int]]) -> None:
    for _, fd in files:
        os.close(fd)


def recover_commit(change_id: str, directories: list[str], keep_new: bool = False) -> list[str]:
    """Restore backups and drop temp files a killed commit left in ``directories``.

    Returns the paths restored. Backups are hard links of the old files, so
    restoring is a rename: every file ends up exactly old or exactly new. With
    ``keep_new`` (every file already holds its new state: the commit was killed
    while cleaning up) the backups are dropped instead.
    """
    restored: list[str] = []
    marker = f"{TEMP_MARK}{change_id}"
    for directory in directories:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            if marker not in name:
                continue
            full = os.path.join(directory, name)
            if name.endswith(".bak") and not keep_new:
                original = os.path.join(directory, name[1 : name.index(marker)])
                os.replace(full, original)
                if os.path.lexists(full):  # both names were one inode: rename did nothing
                    os.unlink(full)
                restored.append(original)
            else:
                _remove(full)
    return restored


def _step(change: dict[str, Any]) -> _Step:
    return _Step(
        change["kind"],
        change["path"],
        change.get("dest"),
        change.get("new_bytes"),
        change.get("mode"),
    )


def _verify(pairs: list[tuple[_Step, dict[str, Any]]]) -> None:
    """CONFLICT unless every step's paths still are what its change was planned against."""
    for step, change in pairs:
        step.verified_mode = _check_unchanged(
            step.path, change["expected_hash"], change.get("expected_bytes")
        )
        if step.dest is not None:
            _check_unchanged(
                step.dest, change["dest_expected_hash"], change.get("dest_expected_bytes")
            )


def _meanwhile(background: Callable[[], None], foreground: Callable[[], None]) -> None:
    """Run ``background`` on the staging thread while ``foreground`` runs here; raise
    ``foreground``'s error first, once both are done. Without a thread, one after
    the other (``foreground`` first)."""
    try:
        running = _stagers.submit(background)
    except RuntimeError:  # no thread may start (a process limit)
        foreground()
        background()
        return
    try:
        foreground()
    finally:
        error = running.exception()  # waits for it either way
    if error is not None:
        raise error


def _keep_last_written(steps: list[_Step], changes: list[dict[str, Any]]) -> None:
    global _last_written
    for step, change in zip(reversed(steps), reversed(changes), strict=True):
        target, digest = _target(step), change.get("new_hash")
        if target is not None and step.new_bytes is not None and isinstance(digest, str):
            _last_written = (target, digest, step.new_bytes)
            return


def _check_unchanged(path: str, expected: str, expected_bytes: bytes | None) -> int | None:
    """CONFLICT unless ``path`` still is what the change was planned against. An
    in-process caller also passes the planned bytes, and the bytes this process
    last wrote are known with their digest: comparing them costs a read, where
    hashing 5 MB again costs 3 ms more. Returns the permission bits of the
    regular file found holding them (None when that was not looked at)."""
    if expected_bytes is None and _last_written is not None:
        written_path, written_hash, written = _last_written
        if written_path == path and written_hash == expected:
            expected_bytes = written
    mode = None
    if expected_bytes is not None:
        mode = _holds(path, expected_bytes)
        same = mode is not None
    else:
        same = _current_hash(path) == expected
    if not same:
        raise ToolError(
            ErrorCode.CONFLICT,
            f"{path} changed on disk since the change was planned",
            "read the file again and redo the change against its current content",
            details={"path": path},
        )
    return mode


def _holds(path: str, expected: bytes) -> int | None:
    """The permission bits of ``path`` if it is a regular file (not a link to one)
    holding ``expected``, else None."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = _open(path, flags)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            return None
        raise
    try:
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode) or info.st_size != len(expected):
            return None
        # Compared block by block (no second copy of a big file), in a block no larger
        # than the file needs, one byte over so that growth since the fstat shows. A
        # short read of a regular file is its end: no further read to see it.
        block = bytearray(min(COMPARE_BLOCK, len(expected) + 1))
        view, offset = memoryview(block), 0
        while size := os.readv(fd, (block,)):
            if not expected.startswith(view[:size], offset):
                return None
            offset += size
            if size < len(block):
                break
        return stat_module.S_IMODE(info.st_mode) if offset == len(expected) else None
    finally:
        os.close(fd)


def _current_hash(path: str) -> str:
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    if stat_module.S_ISDIR(info.st_mode):
        return DIRECTORY
    if stat_module.S_ISLNK(info.st_mode):
        return "symlink:" + os.readlink(path)
    if not stat_module.S_ISREG(info.st_mode):
        return "special"  # a FIFO or device: never what a plan read, never opened
    # Read in blocks no larger than the file needs, one byte over: a short read of a
    # regular file is its end, so a small file takes one read (a sandbox worker hashes
    # every file of a 500-file commit here).
    digest = hashlib.sha256()
    fd = _open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        size = min(os.fstat(fd).st_size + 1, HASH_BLOCK)
        while block := os.read(fd, size):
            digest.update(block)
            if len(block) < size:
                break
    finally:
        os.close(fd)
    return digest.hexdigest()


def _target(step: _Step) -> str | None:
    """The path that gets new content (None: the step writes no file)."""
    if step.kind in ("mkdir", "rmdir") or step.new_bytes is None:
        return None
    return step.dest if step.kind == "move" else step.path


def _staging(step: _Step, change_id: str, folders: _Folders) -> tuple[_Step, str, int] | None:
    """What :func:`_write_staged` needs for ``step``'s temp file, its folder made
    (on the calling thread: folders and the umask are shared state)."""
    target = _target(step)
    if target is None or step.new_bytes is None:
        return None
    folders.make(os.path.dirname(target))
    mode = step.mode
    if mode is None:
        verified = step.verified_mode is not None and target == step.path
        mode = step.verified_mode if verified else _existing_mode(target)
    return step, _sibling(target, change_id, "tmp"), mode


def _write_staged(step: _Step, staged: str, mode: int, flush: FileFlush) -> None:
    """Create and fill ``step``'s temp file (on any thread: see ``fan_out``)."""
    assert step.new_bytes is not None
    fd = _open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    step.staged = staged
    try:
        write_all(fd, step.new_bytes)
        os.fchmod(fd, mode)
        flush.written(fd, staged)
    finally:
        os.close(fd)


def _apply(step: _Step, change_id: str) -> None:
    if step.kind == "mkdir":
        os.makedirs(step.path, exist_ok=True)
        return
    _back_up(step, step.path, change_id)
    if step.kind == "move":
        assert step.dest is not None and step.staged is not None
        _back_up(step, step.dest, change_id)
        _replace(step.staged, step.dest)
        step.staged = None
        _unlink_original(step.path)
    elif step.kind in ("delete", "rmdir"):
        _unlink_original(step.path)
    else:
        assert step.staged is not None
        _replace(step.staged, step.path)
        step.staged = None


def _back_up(step: _Step, path: str, change_id: str) -> None:
    """Keep the old entry under a marked name; a link for files (tried first: nearly
    every entry is one), a rename for directories, which cannot be linked."""
    backup = _sibling(path, change_id, "bak")
    try:
        _link(path, backup)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EISDIR):
            raise
        try:
            is_dir = stat_module.S_ISDIR(os.lstat(path).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return
        if not is_dir:
            raise
        os.rename(path, backup)
        step.backups.append((path, backup, True))
        return
    step.backups.append((path, backup, False))


def _unlink_original(path: str) -> None:
    """Remove ``path`` unless _back_up already renamed it (directories)."""
    if os.path.lexists(path):
        os.unlink(path)


def _roll_back(
    applied: list[_Step], steps: list[_Step], created_dirs: list[str], failure: BaseException
) -> None:
    """Undo the ``applied`` steps, last first, then remove the temp files, backups and
    folders the commit made. Each action is tried whatever became of the others (a
    folder made read-only meanwhile refuses some, not all), and a backup that could
    not be put back is kept, never removed. What is left is not hidden behind
    ``failure``: a ToolError names it, chained to ``failure``."""
    left: list[str] = []

    def tried(action: Callable[[], None], what: str) -> bool:
        try:
            action()
        except OSError as exc:
            left.append(f"{what} ({exc.strerror or exc})")
            return False
        return True

    for step in reversed(applied):
        if step.kind == "move" and step.dest is not None:
            tried(partial(_remove, step.dest), f"{step.dest}, new")
        elif step.kind in ("create", "modify", "mkdir") and not step.backups:
            tried(partial(_remove, step.path), f"{step.path}, new")
        step.backups = [
            backup
            for backup in reversed(step.backups)
            if not tried(partial(_put_back, *backup[:2]), f"{backup[1]}, the old {backup[0]}")
        ]
    undone = {id(step) for step in applied}
    for step in steps:
        if step.staged is not None and tried(partial(_remove, step.staged), step.staged):
            step.staged = None
        if id(step) not in undone:
            step.backups = [
                backup
                for backup in step.backups
                if not tried(partial(_remove, backup[1]), backup[1])
            ]
    for directory in reversed(created_dirs):
        with contextlib.suppress(OSError):
            os.rmdir(directory)
    if left and isinstance(failure, Exception):
        raise ToolError(
            _code(failure),
            f"{_told(failure)}; the commit could not be undone completely, and "
            f"{len(left)} entr{'y is' if len(left) == 1 else 'ies are'} left as they are: "
            + "; ".join(left[:LEFT_SHOWN])
            + ("; ..." if len(left) > LEFT_SHOWN else ""),
            "check those files by hand (a file may hold its new content, its old one kept "
            "beside it); the names with '.tafs-' are the commit's own and can be removed",
            details={"rollback_incomplete": True, "left": left},
        ) from failure


def _put_back(original: str, backup: str) -> None:
    os.replace(backup, original)
    if os.path.lexists(backup):  # both names were one inode: rename did nothing
        os.unlink(backup)


def _code(failure: Exception) -> ErrorCode:
    if isinstance(failure, ToolError):
        return failure.code
    return (
        ErrorCode.PERMISSION_DENIED if isinstance(failure, PermissionError) else ErrorCode.IO_ERROR
    )


def _told(failure: Exception) -> str:
    """What went wrong first, as the commit's error would have said it."""
    if isinstance(failure, ToolError):
        return failure.message
    if isinstance(failure, OSError) and failure.filename:
        return f"{failure.filename}: {failure.strerror or failure}"
    return str(failure) or type(failure).__name__


class _Folders:
    """Makes the folders files are staged in; each is looked up once per commit."""

    def __init__(self, created: list[str]) -> None:
        self.created = created
        self._present: set[str] = set()

    def make(self, parent: str) -> None:
        missing: list[str] = []
        current = parent
        while current and current not in self._present and not os.path.isdir(current):
            missing.append(current)
            current = os.path.dirname(current)
        for directory in reversed(missing):
            os.mkdir(directory)
            self.created.append(directory)
        self._present.add(parent)


def _existing_mode(path: str) -> int:
    try:
        return stat_module.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _sibling(path: str, change_id: str, suffix: str) -> str:
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}{TEMP_MARK}{change_id}.{suffix}")


def _dropped(backup: str, is_dir: bool) -> bool:
    for _ in range(2):
        try:
            if is_dir:
                _remove(backup)
            else:
                with contextlib.suppress(FileNotFoundError):
                    _unlink(backup)
            return True
        except OSError:
            continue
    return False


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        if stat_module.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def _touched_directories(steps: list[_Step], created_dirs: list[str]) -> list[str]:
    """Every directory whose entries the commit changed."""
    paths = [step.path for step in steps] + [step.dest for step in steps if step.dest]
    return [os.path.dirname(path) for path in [*paths, *created_dirs]]


def _at(path: str) -> tuple[str, int | None]:
    """``path`` for an ``*at`` call: a descriptor path (``/proc/self/fd/N/rest``) is
    ``rest`` beneath descriptor N (``.`` for the folder N itself), the same file
    without the kernel walking /proc for every call of the commit's hot path; any
    other path stays whole. A failing call still names ``path`` whole in its error."""
    if path.startswith(PROC_FD):
        number, _, rest = path[len(PROC_FD) :].partition("/")
        if number.isdigit():
            return rest or ".", int(number)
    return path, None


def _open(path: str, flags: int, mode: int = 0o777) -> int:
    name, folder = _at(path)
    try:
        return os.open(name, flags, mode, dir_fd=folder)
    except OSError as exc:
        exc.filename = path
        raise


def _unlink(path: str) -> None:
    name, folder = _at(path)
    try:
        os.unlink(name, dir_fd=folder)
    except OSError as exc:
        exc.filename = path
        raise


def _link(source: str, target: str) -> None:
    """A hard link of ``source`` itself (a symlink is linked, not followed)."""
    (src, src_folder), (dst, dst_folder) = _at(source), _at(target)
    try:
        os.link(src, dst, src_dir_fd=src_folder, dst_dir_fd=dst_folder, follow_symlinks=False)
    except OSError as exc:
        exc.filename, exc.filename2 = source, target
        raise


def _name_open_file(fd: int, target: str) -> None:
    """Link the unnamed file open as ``fd`` to ``target``: through its /proc/self/fd
    entry, followed (``AT_SYMLINK_FOLLOW``). Python calls linkat(2), which can follow,
    only when given a folder descriptor, and an absolute source ignores its own:
    ``fd`` itself is given (plain link(2) refuses the /proc entry with EXDEV)."""
    dst, dst_folder = _at(target)
    try:
        os.link(f"{PROC_FD}{fd}", dst, src_dir_fd=fd, dst_dir_fd=dst_folder, follow_symlinks=True)
    except OSError as exc:
        exc.filename = target
        raise


def _replace(source: str, target: str) -> None:
    (src, src_folder), (dst, dst_folder) = _at(source), _at(target)
    try:
        os.replace(src, dst, src_dir_fd=src_folder, dst_dir_fd=dst_folder)
    except OSError as exc:
        exc.filename, exc.filename2 = source, target
        raise
