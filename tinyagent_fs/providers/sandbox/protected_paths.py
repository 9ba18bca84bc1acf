"""Keep what makes git or a shell run code read-only inside writable roots.

Landlock cannot take back a right granted to a parent directory, so a root
that is writable makes ``.git/hooks`` writable too, and a hook, a git config
(``core.fsmonitor``, ``core.hooksPath``, aliases) or an rc file planted there
runs *outside* the sandbox the next time a person uses git or a shell. The file
tools refuse these paths in the guard; shell commands meet two walls here.

1. At start (:func:`protect`, in the worker's private mount namespace, after
   ``pivot_root`` and before Landlock): each path is opened from an O_PATH
   descriptor of its root with openat2 (RESOLVE_BENEATH, no symlinks, no magic
   links) and bound onto itself *by that descriptor* (open_tree + move_mount).
   A name is never looked up twice, so a ``.git`` swapped with a symlink at any
   moment yields either the real directory (protected where it really is) or a
   refusal (ELOOP), never a mount of something outside. A git directory (a
   ``.git``, or any folder git would take for one: :func:`is_git_dir`) is
   pinned (a mount point cannot be renamed or removed: EBUSY); its hooks, config,
   config.worktree, commondir, info, worktrees, modules (whole: submodules' own), a
   ``.git`` file, ``.gitmodules``, ``.tinyagentignore``, the rc files and the home
   folder's startup files become read-only (EROFS; hard links out of them fail
   with EXDEV).
2. Around every command, the toolkit itself watches these files, by
   descriptor, and moves aside whatever code-running file the command created
   or changed (``code_files``): a path that did not exist when the worker
   started is not mounted, and a mount is lost when a file is replaced outside.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from ...guard.code_running import HOME_FILES, RC_FILES, ROOT_FOLDERS
from . import kernel_calls as kc

ROOT_FILES: tuple[str, ...] = (".gitmodules", ".tinyagentignore", *RC_FILES, *HOME_FILES)
GIT_READ_ONLY: tuple[str, ...] = (
    "hooks",
    "config",
    "config.worktree",
    "commondir",
    "info",
    "worktrees",
    "modules",
)
GIT_DIR_OWN = frozenset({"modules", "worktrees"})
GIT_DATA = frozenset({"objects", "logs", "lfs"})
"""A git directory's folders of data git never runs: not walked (anything there git
could use as a git directory needs a pointer, and pointers are watched)."""
"""A git directory's folders of git directories, protected with it: not looked at again."""
QUARANTINE_SUFFIX = ".quarantined"
READ_ONLY = kc.MOUNT_ATTR_RDONLY | kc.MOUNT_ATTR_NOSUID | kc.MOUNT_ATTR_NODEV
MAX_SCAN_DEPTH = 256
"""Levels the toolkit's scans of a root (code-running files, secrets) enter. A deeper
folder is not searched, so commands are refused until it is removed: a secret or a
hook down there could not be masked or quarantined."""


@dataclass
class Protection:
    """What :func:`protect` did, reported by the worker to the toolkit."""

    mode: str = "mount-namespace"
    read_only: list[str] = field(default_factory=list)
    pinned: list[str] = field(default_factory=list)
    unprotected: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "read_only": self.read_only,
            "pinned": self.pinned,
            "unprotected": self.unprotected,
        }


def protect(roots: Iterable[str]) -> Protection:
    """Bind the protected paths of every root read-only, by descriptor.

    Must run in the worker's own mount namespace, before Landlock (which
    forbids mounting) and while the worker still has CAP_SYS_ADMIN there.
    """
    result = Protection()
    for root in roots:
        root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            _protect_git(root_fd, root, ".git", result)
            for name in (*ROOT_FILES, *ROOT_FOLDERS):
                _protect_one(root_fd, root, name, result)
        finally:
            os.close(root_fd)
    return result


def protect_nested(nested_git: dict[str, list[str]], result: Protection) -> None:
    """Pin each git directory found in a root but its own ``.git`` (vendored
    repositories, submodule checkouts, bare repositories, the root itself made one:
    ``""``) and protect its code-running entries like the root's ``.git``.

    Kept apart from :func:`protect` because their number is the tree's: a mount
    that fails here (OSError) refuses commands, not the file tools.
    """
    for root, found in nested_git.items():
        root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for relative in found:
                _protect_git(root_fd, root, relative, result)
        finally:
            os.close(root_fd)


def _protect_git(root_fd: int, root: str, relative: str, result: Protection) -> None:
    """Pin a ``.git`` directory and protect its entries; a ``.git`` file becomes read-only.

    The entries are looked up from the pinned mount itself, never by the name
    ``.git`` again: a directory swapped in under that name meanwhile gets nothing.
    The root itself is not pinned: no command can rename it (its parent is not writable).
    """
    if not relative:
        _protect_git_dir(root_fd, root, result)
        return
    git = _open(root_fd, relative, root, result)
    if git is None:
        return
    path = os.path.join(root, relative)
    try:
        if not stat.S_ISDIR(os.fstat(git).st_mode):
            kc.bind_by_fd(git, git, READ_ONLY)
            result.read_only.append(path)
            return
        pinned = kc.pin_in_place(git)
    finally:
        os.close(git)
    result.pinned.append(path)
    try:
        _protect_git_dir(pinned, path, result)
    finally:
        os.close(pinned)


def _protect_git_dir(git_fd: int, git_path: str, result: Protection) -> None:
    """The code-running entries of one git directory; ``modules`` whole, as the git
    directories of submodules lie in it at any depth (``modules/lib/foo``)."""
    for name in GIT_READ_ONLY:
        _protect_one(git_fd, git_path, name, result)


def _protect_one(base_fd: int, base: str, relative: str, result: Protection) -> None:
    fd = _open(base_fd, relative, base, result)
    if fd is None:
        return
    try:
        kc.bind_by_fd(fd, fd, READ_ONLY)
        result.read_only.append(os.path.join(base, relative))
    finally:
        os.close(fd)


def _open(base_fd: int, relative: str, base: str, result: Protection) -> int | None:
    """An O_PATH fd of ``relative`` beneath ``base_fd``; None if absent (or a symlink: noted)."""
    try:
        return kc.open_beneath(base_fd, relative, os.O_PATH)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR):
            result.unprotected.append(os.path.join(base, relative))
            return None
        raise


def _list_dir(base_fd: int, relative: str) -> list[str]:
    try:
        fd = kc.open_beneath(base_fd, relative, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return []
    try:
        return sorted(os.listdir(fd))
    finally:
        os.close(fd)
