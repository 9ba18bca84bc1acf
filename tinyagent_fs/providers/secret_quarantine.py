"""After a secret was visible to sessions: take what they may have left it in out of reach.

A session that read a secret before the watch killed it can leave it in a file's
content, in a file's or a new folder's *name*, or in a folder's extended attributes or
times. Renaming aside in place would keep the names, and a mask hides a file's
content but not its name. So every entry changed since the watch was last clean (a
file by its change time, a folder by its birth time) moves into the root's
``.tinyagent-quarantine/<trip>/`` under a number, with a manifest of where each came
from. That folder is denied by the default policy, so listings and file tools skip
it and commands see it empty. Folders that only changed keep their place; their user
extended attributes and ACLs are removed and their times reset. The model is told how
many entries moved, never their names.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import stat
import time
from dataclasses import dataclass, field

from ..ops.ignore import load_ignore_rules
from ..policy import IGNORE_FILE_NAME
from .sandbox import code_files
from .sandbox import kernel_calls as kc

QUARANTINE_DIR = ".tinyagent-quarantine"
KEPT = (IGNORE_FILE_NAME, QUARANTINE_DIR)
"""Never moved: the denials (a session cannot write them) and the quarantine itself (a
file planted under its name is removed when the folder is made)."""
ACL_ATTRIBUTES = ("system.posix_acl_access", "system.posix_acl_default")
"""A folder's ACLs: a session can set their permission bits to anything it likes."""
STATX_BTIME = 0x800
AT_SYMLINK_NOFOLLOW = 0x100
_STATX_SIZE = 256
_BTIME_OFFSET = 80
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass
class Quarantined:
    """What a trip took out of reach: how many entries moved, and what could not be."""

    moved: int = 0
    left: list[str] = field(default_factory=list)
    """Paths that could neither be moved nor removed, or folders that could not be
    searched: for the person (listed in the manifest), never for the model."""


def quarantine_since(
    roots: list[str], denied_patterns: tuple[str, ...], since_ns: int
) -> Quarantined:
    """Move out of reach what changed in ``roots`` at or after ``since_ns``."""
    done = Quarantined()
    trip = time.strftime("%Y%m%dT%H%M%S") + f"-{time.time_ns() % 1_000_000_000:09d}"
    for root in roots:
        moved, left = _quarantine_root(root, denied_patterns, since_ns, trip)
        done.moved += moved
        done.left += left
    return done


def _quarantine_root(
    root: str, denied_patterns: tuple[str, ...], since_ns: int, trip: str
) -> tuple[int, list[str]]:
    rules = load_ignore_rules(root, denied_patterns)
    root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    taken: list[str] = []
    touched: list[str] = []
    left: list[str] = []
    try:
        pending = [""]
        while pending:
            relative_dir = pending.pop()
            try:
                entries = _entries(root_fd, relative_dir)
            except FileNotFoundError:
                continue
            except OSError:
                left.append(os.path.join(root, relative_dir))
                continue
            for name, info in entries:
                relative = f"{relative_dir}/{name}" if relative_dir else name
                is_dir = stat.S_ISDIR(info.st_mode)
                if relative in KEPT or rules.is_denied(relative, is_dir):
                    continue  # denied entries are masked and refused already
                if not is_dir:
                    if info.st_ctime_ns >= since_ns:
                        taken.append(relative)
                elif _born_ns(root_fd, relative, info) >= since_ns:
                    taken.append(relative)  # a folder made meanwhile: its name and all in it
                else:
                    if info.st_ctime_ns >= since_ns:
                        touched.append(relative)
                    pending.append(relative)
        if os.fstat(root_fd).st_ctime_ns >= since_ns:
            touched.append(".")
        moved = _move_all(root, root_fd, taken, trip, left) if taken or left else 0
        for relative in touched:
            if not _scrubbed(root_fd, relative):
                left.append(os.path.join(root, relative))
    finally:
        os.close(root_fd)
    return moved, left


def _move_all(root: str, root_fd: int, taken: list[str], trip: str, left: list[str]) -> int:
    try:
        holder = _quarantine_folder(root_fd, trip)
    except OSError:
        left.append(root)  # nothing can be moved: the whole root stays suspect
        return 0
    manifest: dict[str, str] = {}
    try:
        for number, relative in enumerate(taken):
            try:
                _move_one(root_fd, relative, holder, str(number))
            except FileNotFoundError:
                continue
            except OSError:
                left.append(os.path.join(root, relative))
                continue
            manifest[str(number)] = relative
        record = {"moved": manifest, "left": left}
        data = json.dumps(record, indent=1).encode()  # ASCII: a name may not be UTF-8
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
            fd = os.open("manifest.json", flags, 0o600, dir_fd=holder)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError:
            left.append(root)  # no record of what moved where: the person must look
    finally:
        os.close(holder)
    return len(manifest)


def _quarantine_folder(root_fd: int, trip: str) -> int:
    """``.tinyagent-quarantine/<trip>`` beneath the root, made 0700, by descriptor. A
    file or symlink under that name (a session may plant one, not denied as a folder
    is) is removed first: it is no quarantine, and may itself hold the secret."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISDIR(os.stat(QUARANTINE_DIR, dir_fd=root_fd, follow_symlinks=False).st_mode):
            os.unlink(QUARANTINE_DIR, dir_fd=root_fd)
    for name, parent in ((QUARANTINE_DIR, "."), (f"{QUARANTINE_DIR}/{trip}", QUARANTINE_DIR)):
        parent_fd = kc.open_beneath(root_fd, parent, os.O_PATH | os.O_DIRECTORY)
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(os.path.basename(name), 0o700, dir_fd=parent_fd)
        finally:
            os.close(parent_fd)
    return kc.open_beneath(root_fd, f"{QUARANTINE_DIR}/{trip}", os.O_PATH | os.O_DIRECTORY)


def _move_one(root_fd: int, relative: str, holder: int, number: str) -> None:
    parent_rel, name = os.path.split(relative)
    parent = kc.open_beneath(root_fd, parent_rel or ".", os.O_PATH | os.O_DIRECTORY)
    try:
        with code_files.writable(parent):  # a session may have made it 0555
            try:
                os.rename(name, number, src_dir_fd=parent, dst_dir_fd=holder)
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    raise
                code_files.remove_entry(parent, name)
    finally:
        os.close(parent)


def _scrubbed(root_fd: int, relative: str) -> bool:
    """Whether a folder that stays was cleared of what a session could have written
    into it besides entries (user extended attributes, ACLs, its times)."""
    try:
        fd = kc.open_beneath(root_fd, relative, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for attribute in os.listxattr(fd):
                if attribute.startswith("user.") or attribute in ACL_ATTRIBUTES:
                    os.removexattr(fd, attribute)
            os.utime(fd)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _born_ns(root_fd: int, relative: str, info: os.stat_result) -> int:
    """When a folder was made (statx birth time); its change time where the file system
    keeps no birth time, which takes a folder whose entries changed as new."""
    buffer = ctypes.create_string_buffer(_STATX_SIZE)
    fd = -1
    try:
        fd = kc.open_beneath(root_fd, relative, os.O_PATH | os.O_DIRECTORY)
        status = _libc.statx(fd, b"", kc.AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BTIME, buffer)
    except OSError:
        return info.st_ctime_ns
    finally:
        if fd >= 0:
            os.close(fd)
    mask = int.from_bytes(buffer.raw[0:4], "little")
    if status != 0 or not mask & STATX_BTIME:
        return info.st_ctime_ns
    seconds = int.from_bytes(buffer.raw[_BTIME_OFFSET : _BTIME_OFFSET + 8], "little", signed=True)
    nanos = int.from_bytes(buffer.raw[_BTIME_OFFSET + 8 : _BTIME_OFFSET + 12], "little")
    return seconds * 1_000_000_000 + nanos


def _entries(root_fd: int, relative_dir: str) -> list[tuple[str, os.stat_result]]:
    """A folder's entries, made searchable first if a session made it 000."""
    try:
        fd = kc.open_beneath(root_fd, relative_dir or ".", os.O_RDONLY | os.O_DIRECTORY)
    except PermissionError:
        path_fd = kc.open_beneath(root_fd, relative_dir or ".", os.O_PATH | os.O_DIRECTORY)
        try:
            mode = stat.S_IMODE(os.fstat(path_fd).st_mode)
            os.chmod(f"/proc/self/fd/{path_fd}", mode | stat.S_IRWXU)
        finally:
            os.close(path_fd)
        fd = kc.open_beneath(root_fd, relative_dir or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        with os.scandir(fd) as found:
            return [(entry.name, entry.stat(follow_symlinks=False)) for entry in found]
    finally:
        os.close(fd)
