"""Paths pinned beneath the root's descriptor, so a symlink swapped in mid-call
cannot move an in-process read or write outside the root.

The guard hands the provider absolute paths with every symlink already resolved.
Between that check and the system call, another process (or thread) can replace
a folder on the path with a symlink to somewhere else; a plain ``open(path)``
would then follow it. So, before a primitive runs, the deepest existing folder
of each path is opened from the root's descriptor with ``openat2`` and
``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`` (Linux >= 5.6;
elsewhere a per-component ``O_NOFOLLOW`` walk does the same), and the primitive
gets ``/proc/self/fd/N/<rest>``: the kernel resolves that to the folder the
descriptor holds, whatever the path says by then. Every temp file, backup and
rename of a commit happens in that pinned folder. A symlink found on the way is a
path that changed since the guard saw it: SYMLINK_ESCAPE, nothing touched.

Folders a write creates (``create_dirs``) are made beneath the pinned ancestor.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import ErrorCode, ToolError

SYS_OPENAT2 = 437
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
DIRECTORY_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC if hasattr(os, "O_PATH") else 0
NON_DIRECTORY = os.O_PATH | os.O_CLOEXEC if hasattr(os, "O_PATH") else 0
PROC_FD = "/proc/self/fd"


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def pinning_supported() -> bool:
    """Descriptor paths need Linux's /proc/self/fd and O_PATH."""
    return bool(DIRECTORY_FLAGS) and os.path.isdir(PROC_FD)


class PinnedRoots:
    """The roots' descriptors, opened once; :meth:`session` pins the paths of one call."""

    def __init__(self, roots: Iterable[str]) -> None:
        self.roots: list[tuple[str, int]] = []
        for root in dict.fromkeys(os.path.realpath(r) for r in roots):
            self.roots.append((root, os.open(root, DIRECTORY_FLAGS)))
        # Longest first, so a root nested in another pins from the nearer one.
        self.roots.sort(key=lambda item: len(item[0]), reverse=True)
        self.openat2 = _openat2_available(self.roots[0][1]) if self.roots else False

    def close(self) -> None:
        for _, fd in self.roots:
            os.close(fd)
        self.roots = []

    def session(self) -> PinSession:
        return PinSession(self)


class PinSession:
    """Pins paths for one primitive call and closes the descriptors afterwards."""

    def __init__(self, roots: PinnedRoots) -> None:
        self._roots = roots
        self._opened: dict[str, int] = {}
        self._shown: dict[str, str] = {}

    def __enter__(self) -> PinSession:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self._opened.values():
            os.close(fd)

    def pin(self, path: str) -> str:
        """``path`` as a descriptor path; unchanged when it lies under no root."""
        for root, root_fd in self._roots.roots:
            if path == root:  # the anchor itself: lstat must see the folder, not fd's link
                return path
            if path.startswith(root + "/"):
                parts = [p for p in path[len(root) + 1 :].split("/") if p]
                return self._pin_beneath(root, root_fd, parts)
        return path

    def pin_arguments(self, op: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments with every path it names pinned."""
        pinned = dict(kwargs)
        for key in ("path", "workdir"):
            if isinstance(pinned.get(key), str):
                pinned[key] = self.pin(pinned[key])
        if op == "recover_commit":
            pinned["directories"] = [self.pin(d) for d in pinned.get("directories", [])]
        if op in ("read_files", "stat_paths"):
            pinned["paths"] = [self.pin(path) for path in pinned.get("paths", [])]
        if op == "commit_changes":
            pinned["changes"] = [self._pin_change(change) for change in pinned["changes"]]
        return pinned

    def unpin(self, value: Any) -> Any:
        """Descriptor paths in a result or an error turned back into the real paths."""
        if not self._shown:
            return value
        if isinstance(value, str):
            for shown, real in self._shown.items():
                value = value.replace(shown, real)
            return value
        if isinstance(value, list):
            return [self.unpin(item) for item in value]
        if isinstance(value, dict):
            return {key: self.unpin(item) for key, item in value.items()}
        return value

    def _pin_change(self, change: dict[str, Any]) -> dict[str, Any]:
        pinned = dict(change)
        for key in ("path", "dest"):
            if isinstance(pinned.get(key), str):
                pinned[key] = self.pin(pinned[key])
        return pinned

    def _pin_beneath(self, root: str, root_fd: int, parts: list[str]) -> str:
        """Open the deepest existing folder of ``parts[:-1]``; the rest stays names."""
        for depth in range(len(parts) - 1, 0, -1):
            folder = "/".join(parts[:depth])
            key = f"{root}/{folder}"
            if key not in self._opened:
                try:
                    self._opened[key] = self._open_folder(root_fd, folder, key)
                except FileNotFoundError:
                    continue
                except NotADirectoryError:
                    # Pin the file itself: what lies "below" it then fails with
                    # ENOTDIR whatever replaces it later, as the plain path did.
                    try:
                        self._opened[key] = self._open_folder(root_fd, folder, key, NON_DIRECTORY)
                    except NotADirectoryError:
                        continue
            return self._descriptor_path(key, self._opened[key], parts[depth:])
        return self._descriptor_path(root, root_fd, parts)

    def _open_folder(
        self, root_fd: int, folder: str, shown: str, flags: int = DIRECTORY_FLAGS
    ) -> int:
        try:
            if self._roots.openat2:
                return _openat2(root_fd, folder, flags)
            return _walk_nofollow(root_fd, folder, flags)
        except FileNotFoundError:
            raise
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EXDEV):
                raise ToolError(
                    ErrorCode.SYMLINK_ESCAPE,
                    f"{shown} is a symlink now; it was not when the path was checked",
                    "check the path again; nothing was read or changed",
                    security_violation=True,
                ) from None
            raise type(exc)(exc.errno, exc.strerror, shown) from None

    def _descriptor_path(self, real: str, fd: int, rest: Sequence[str]) -> str:
        shown = f"{PROC_FD}/{fd}"
        self._shown[shown] = real
        return "/".join([shown, *rest])


def _openat2_available(probe_fd: int) -> bool:
    try:
        os.close(_openat2(probe_fd, "."))
    except OSError:
        return False
    return True


def _openat2(root_fd: int, folder: str, flags: int = DIRECTORY_FLAGS) -> int:
    how = _OpenHow(flags, 0, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(
        ctypes.c_long(SYS_OPENAT2),
        ctypes.c_int(root_fd),
        ctypes.c_char_p(os.fsencode(folder)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), folder)
    return int(fd)


def _walk_nofollow(root_fd: int, folder: str, flags: int = DIRECTORY_FLAGS) -> int:
    """The same as openat2 without it: one component at a time, none a symlink."""
    current = os.dup(root_fd)
    parts = folder.split("/")
    try:
        for index, part in enumerate(parts):
            if part in ("", ".", ".."):
                raise OSError(errno.EXDEV, "path leaves the root", folder)
            if os.path.islink(os.path.join(f"{PROC_FD}/{current}", part)):
                raise OSError(errno.ELOOP, "a symlink on the path", folder)
            last = index == len(parts) - 1
            following = os.open(
                part, (flags if last else DIRECTORY_FLAGS) | os.O_NOFOLLOW, dir_fd=current
            )
            os.close(current)
            current = following
    except BaseException:
        os.close(current)
        raise
    return current
