"""Commit a ChangeSet: every file or none, each write atomic and durable.

The sequence is: check every planned hash (a mismatch is a CONFLICT and nothing
is touched); stage new contents in temp siblings (written, fsynced); move old
files aside as hard-linked backups; rename the staged files into place; fsync the
directories; drop the backups. A failure at any step restores the backups. Temp
and backup names carry the change id, so a commit killed half-way can be found
and rolled back by :func:`recover_commit`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat as stat_module
from dataclasses import dataclass, field
from typing import Any

from ..errors import ErrorCode, ToolError

MISSING = "missing"
DIRECTORY = "directory"
TEMP_MARK = ".tafs-"


@dataclass
class _Step:
    kind: str
    path: str
    dest: str | None
    new_bytes: bytes | None
    mode: int | None
    staged: str | None = None
    backups: list[tuple[str, str]] = field(default_factory=list)


def commit_changes(change_id: str, changes: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply ``changes`` (dicts of FileChange fields) atomically; report bytes written."""
    steps = [_verify(change) for change in changes]
    created_dirs: list[str] = []
    applied: list[_Step] = []
    try:
        for step in steps:
            _stage(step, change_id, created_dirs)
        for step in steps:
            _apply(step, change_id)
            applied.append(step)
    except BaseException:
        _roll_back(applied, steps, created_dirs)
        raise
    # Every file is new now: make the renames durable, then drop the backups.
    # Neither step can undo the change any more, so a failure in them is not a
    # failed commit; a backup that cannot be removed is retried once and then
    # reported, never left for recovery to "restore" over the committed file.
    _sync_parents(steps)
    leftovers = [backup for step in steps for _, backup in step.backups if not _dropped(backup)]
    report: dict[str, Any] = {
        "bytes_written": sum(len(step.new_bytes or b"") for step in steps),
        "files": len(steps),
    }
    if leftovers:
        report["leftover_backups"] = leftovers
    return report


def recover_commit(change_id: str, directories: list[str]) -> list[str]:
    """Restore backups and drop temp files a killed commit left in ``directories``.

    Returns the paths restored. Backups are hard links of the old files, so
    restoring is a rename: every file ends up exactly old or exactly new.
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
            if name.endswith(".bak"):
                original = os.path.join(directory, name[1 : name.index(marker)])
                os.replace(full, original)
                if os.path.lexists(full):  # both names were one inode: rename did nothing
                    os.unlink(full)
                restored.append(original)
            else:
                _remove(full)
    return restored


def _verify(change: dict[str, Any]) -> _Step:
    kind = change["kind"]
    path = change["path"]
    _check_hash(path, change["expected_hash"])
    dest = change.get("dest")
    if dest is not None:
        _check_hash(dest, change["dest_expected_hash"])
    return _Step(kind, path, dest, change.get("new_bytes"), change.get("mode"))


def _check_hash(path: str, expected: str) -> None:
    actual = _current_hash(path)
    if actual != expected:
        raise ToolError(
            ErrorCode.CONFLICT,
            f"{path} changed on disk since the change was planned",
            "read the file again and redo the change against its current content",
            details={"path": path},
        )


def _current_hash(path: str) -> str:
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    if stat_module.S_ISDIR(info.st_mode):
        return DIRECTORY
    if stat_module.S_ISLNK(info.st_mode):
        return "symlink:" + os.readlink(path)
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _stage(step: _Step, change_id: str, created_dirs: list[str]) -> None:
    if step.kind in ("mkdir", "rmdir"):
        return
    target = step.dest if step.kind == "move" else step.path
    if step.new_bytes is None or target is None:
        return
    parent = os.path.dirname(target)
    _make_parents(parent, created_dirs)
    mode = step.mode if step.mode is not None else _existing_mode(target)
    staged = _sibling(target, change_id, "tmp")
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    step.staged = staged
    try:
        view = memoryview(step.new_bytes)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode)
        os.fsync(fd)
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
        os.replace(step.staged, step.dest)
        step.staged = None
        _unlink_original(step.path)
    elif step.kind in ("delete", "rmdir"):
        _unlink_original(step.path)
    else:
        assert step.staged is not None
        os.replace(step.staged, step.path)
        step.staged = None


def _back_up(step: _Step, path: str, change_id: str) -> None:
    """Keep the old entry under a marked name; a rename for directories, a link for files."""
    if not os.path.lexists(path):
        return
    backup = _sibling(path, change_id, "bak")
    if os.path.isdir(path) and not os.path.islink(path):
        os.rename(path, backup)
    else:
        os.link(path, backup, follow_symlinks=False)
    step.backups.append((path, backup))


def _unlink_original(path: str) -> None:
    """Remove ``path`` unless _back_up already renamed it (directories)."""
    if os.path.lexists(path):
        os.unlink(path)


def _roll_back(applied: list[_Step], steps: list[_Step], created_dirs: list[str]) -> None:
    for step in reversed(applied):
        if step.kind == "move" and step.dest is not None:
            _remove(step.dest)
        elif step.kind in ("create", "modify", "mkdir") and not step.backups:
            _remove(step.path)
        for original, backup in reversed(step.backups):
            os.replace(backup, original)
        step.backups.clear()
    for step in steps:
        if step.staged is not None:
            _remove(step.staged)
        for _, backup in step.backups:
            _remove(backup)
    for directory in reversed(created_dirs):
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def _make_parents(parent: str, created_dirs: list[str]) -> None:
    missing: list[str] = []
    current = parent
    while current and not os.path.isdir(current):
        missing.append(current)
        current = os.path.dirname(current)
    for directory in reversed(missing):
        os.mkdir(directory)
        created_dirs.append(directory)


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


def _dropped(backup: str) -> bool:
    for _ in range(2):
        try:
            _remove(backup)
            return True
        except OSError:
            continue
    return False


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def _sync_parents(steps: list[_Step]) -> None:
    parents = {os.path.dirname(s.path) for s in steps}
    parents |= {os.path.dirname(s.dest) for s in steps if s.dest}
    for parent in parents:
        with contextlib.suppress(OSError):
            fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
