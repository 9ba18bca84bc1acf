"""Thin ctypes wrappers for the mount and namespace system calls Python lacks.

The new mount API (open_tree, move_mount, mount_setattr) and openat2 work on
file descriptors, which is what makes the worker's view race-free: a path is
resolved once, beneath a directory the worker holds open, and every later step
uses the descriptor, never the name again. Their numbers are the same on every
architecture that has them (the unified table since Linux 5.x).
"""

from __future__ import annotations

import ctypes
import os
import platform

SYS_OPEN_TREE = 428
SYS_MOVE_MOUNT = 429
SYS_OPENAT2 = 437
SYS_MOUNT_SETATTR = 442
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
AT_RECURSIVE = 0x8000
OPEN_TREE_CLONE = 1
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOVE_MOUNT_T_EMPTY_PATH = 0x40
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MOUNT_ATTR_NODEV = 0x4
MOUNT_ATTR_NOEXEC = 0x8

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08

PR_SET_PDEATHSIG = 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


def _check(name: str, result: int, path: str | None = None) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}", path)
    return result


def libc_call(name: str, *args: object) -> int:
    """Call a libc function that returns -1 and sets errno on failure."""
    return _check(name, getattr(_libc, name)(*args))


def unshare(flags: int) -> None:
    libc_call("unshare", ctypes.c_int(flags))


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    libc_call(
        "mount",
        os.fsencode(source) if source else None,
        os.fsencode(target),
        os.fsencode(fstype) if fstype else None,
        ctypes.c_ulong(flags),
        os.fsencode(data) if data else None,
    )


def umount_detached(target: str) -> None:
    libc_call("umount2", os.fsencode(target), ctypes.c_int(MNT_DETACH))


def pivot_root_here() -> None:
    """pivot_root(".", "."): the old root ends up stacked under the new one, detached next."""
    number = SYS_PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(0, f"pivot_root: unknown system call number on {platform.machine()}")
    _check("pivot_root", _libc.syscall(ctypes.c_long(number), b".", b"."))


def set_parent_death_signal(signum: int) -> None:
    libc_call("prctl", ctypes.c_int(PR_SET_PDEATHSIG), ctypes.c_ulong(signum), 0, 0, 0)


OPEN_CHUNK = 3800
"""Bytes of a relative path opened in one openat2 call: below PATH_MAX, so deeper
paths are opened one chunk at a time, each beneath the last."""


def open_beneath(dir_fd: int, relative: str, flags: int) -> int:
    """openat2 with no symlinks, no magic links and nothing above ``dir_fd``; O_CLOEXEC added.

    A path longer than PATH_MAX allows is opened a chunk at a time, each chunk
    beneath the folder the last one opened: a tree deeper than PATH_MAX is as
    reachable to the toolkit as it is to a command that walks it step by step.
    """
    if len(relative) < OPEN_CHUNK:
        return _open_beneath_once(dir_fd, relative, flags)
    parts = relative.split("/")[::-1]  # popped from the end: the first part first
    current = dir_fd
    try:
        while True:
            chunk = [parts.pop()]
            size = len(chunk[0])
            while parts and size + 1 + len(parts[-1]) < OPEN_CHUNK:
                size += 1 + len(parts[-1])
                chunk.append(parts.pop())
            last = not parts
            opened = _open_beneath_once(
                current, "/".join(chunk), flags if last else os.O_PATH | os.O_DIRECTORY
            )
            if current != dir_fd:
                os.close(current)
            current = opened
            if last:
                return current
    except BaseException:
        if current != dir_fd:
            os.close(current)
        raise


def _open_beneath_once(dir_fd: int, relative: str, flags: int) -> int:
    how = _OpenHow(
        flags | os.O_CLOEXEC, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
    )
    result = _libc.syscall(
        ctypes.c_long(SYS_OPENAT2),
        ctypes.c_int(dir_fd),
        os.fsencode(relative),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    return _check("openat2", result, relative)


def clone_tree(fd: int, recursive: bool) -> int:
    """A detached copy of the mount at ``fd`` (an O_PATH descriptor), as a new descriptor."""
    flags = OPEN_TREE_CLONE | os.O_CLOEXEC | AT_EMPTY_PATH | (AT_RECURSIVE if recursive else 0)
    result = _libc.syscall(
        ctypes.c_long(SYS_OPEN_TREE), ctypes.c_int(fd), b"", ctypes.c_uint(flags)
    )
    return _check("open_tree", result)


def set_mount_attributes(tree_fd: int, attributes: int, recursive: bool) -> None:
    attr = _MountAttr(attributes, 0, 0, 0)
    flags = AT_EMPTY_PATH | (AT_RECURSIVE if recursive else 0)
    result = _libc.syscall(
        ctypes.c_long(SYS_MOUNT_SETATTR),
        ctypes.c_int(tree_fd),
        b"",
        ctypes.c_uint(flags),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    _check("mount_setattr", result)


def attach_tree(tree_fd: int, target_fd: int) -> None:
    """Mount a detached tree onto the object ``target_fd`` (O_PATH) refers to."""
    result = _libc.syscall(
        ctypes.c_long(SYS_MOVE_MOUNT),
        ctypes.c_int(tree_fd),
        b"",
        ctypes.c_int(target_fd),
        b"",
        ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH),
    )
    _check("move_mount", result)


def bind_by_fd(source_fd: int, target_fd: int, attributes: int, recursive: bool = False) -> None:
    """Bind what ``source_fd`` names onto what ``target_fd`` names, with mount attributes set.

    Both are O_PATH descriptors already resolved safely; no name is looked up here.
    """
    tree = clone_tree(source_fd, recursive)
    try:
        if attributes:
            set_mount_attributes(tree, attributes, recursive)
        attach_tree(tree, target_fd)
    finally:
        os.close(tree)


def pin_in_place(fd: int) -> int:
    """Bind the directory ``fd`` names onto itself; a descriptor of the new mount's root.

    A mount point cannot be renamed or removed (EBUSY). Lookups through the
    returned descriptor go through the new mount, which is the one every path
    now reaches; lookups through ``fd`` would reach the covered one beneath.
    """
    tree = clone_tree(fd, recursive=False)
    try:
        attach_tree(tree, fd)
    except BaseException:
        os.close(tree)
        raise
    return tree
