"""Keep git hooks, git config and shell rc files read-only inside writable roots.

Landlock cannot take back a right granted to a parent directory, so a root
that is writable makes ``.git/hooks`` writable too, and a hook or rc file
planted there runs *outside* the sandbox the next time a person uses git or a
shell. The file tools refuse these paths in the guard; shell commands need a
wall of their own.

How, where the system allows it: before Landlock is applied, the worker moves
into a private mount namespace (a user namespace too when it is not root) and

- bind-mounts ``.git`` onto itself, so it is a mount point: it cannot be
  renamed or removed (EBUSY), which would otherwise let a command set up a
  fresh ``.git`` beside the protected one;
- bind-mounts read-only: ``.git/hooks``, ``.git/config``, a ``.git`` *file*
  (a worktree's pointer to its git directory), and each shell rc file in
  ``RC_FILES``. Writing, truncating, replacing or removing them fails (EROFS /
  EBUSY), and hard links out of a read-only mount fail (EXDEV).

Landlock then forbids any change of mount topology, and seccomp refuses mount
and unshare, so nothing inside can undo the mounts. The mounts exist only in
the worker's namespace; the toolkit and the person see the tree unchanged.

What is *not* protected, and how the gaps are covered: a protected path that
does not exist when the worker starts (there is nothing to mount on) or that
is a symlink (mounts follow links; the link itself stays replaceable). For
those, :func:`snapshot` is taken around every command; a change or a new
appearance is reported with the command's result, and the worker is replaced
so the next command runs with the new path protected. A single command that
creates and fills such a path is reported, not prevented.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

RC_FILES: tuple[str, ...] = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
)
GIT_ENTRIES: tuple[str, ...] = (".git", ".git/hooks", ".git/config")

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
LOCKED_MOUNT_FLAGS = 2 | 4 | 8 | 1024 | 2048 | 4096
"""nosuid, nodev, noexec and the atime flags: a remount must keep them (as statvfs reports)."""


@dataclass
class Protection:
    """What :func:`protect` did, reported by the worker to the toolkit."""

    mode: str = "none"
    reason: str = ""
    read_only: list[str] = field(default_factory=list)
    pinned: list[str] = field(default_factory=list)
    unprotected: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "reason": self.reason,
            "read_only": self.read_only,
            "pinned": self.pinned,
            "unprotected": self.unprotected,
        }


def candidates(roots: Iterable[str]) -> list[str]:
    """Every path this module guards, for each root, existing or not."""
    return [os.path.join(root, name) for root in roots for name in (*GIT_ENTRIES, *RC_FILES)]


def protect(roots: Iterable[str]) -> Protection:
    """Enter a private mount namespace and mount the protected paths read-only.

    Must run before Landlock (which forbids mounting) and before any thread
    starts. Failure to get a mount namespace is reported, not raised: the
    snapshot check still runs, and the toolkit decides whether that is enough.
    """
    result = Protection()
    try:
        _enter_mount_namespace()
    except OSError as exc:
        result.reason = f"no private mount namespace: {exc.strerror or exc}"
        result.unprotected = [p for p in candidates(roots) if os.path.lexists(p)]
        return result
    result.mode = "mount-namespace"
    for root in roots:
        _protect_root(root, result)
    return result


def snapshot(paths: Iterable[str]) -> dict[str, tuple[int, ...] | None]:
    """Identity and change stamps of each path; None if absent.

    ``.git`` itself is stamped by identity only (git changes its entries on
    every command); other directories (hooks) by their entries too.
    """
    state: dict[str, tuple[int, ...] | None] = {}
    for path in paths:
        try:
            state[path] = _stamp(path)
        except FileNotFoundError:
            state[path] = None
        except OSError as exc:
            state[path] = (-1, exc.errno or 0)
    return state


def _stamp(path: str) -> tuple[int, ...]:
    info = os.lstat(path)
    stamp = [info.st_dev, info.st_ino, info.st_mode]
    if path.endswith("/.git") and stat.S_ISDIR(info.st_mode):
        return tuple(stamp)
    stamp += [info.st_size, info.st_ctime_ns]
    if stat.S_ISDIR(info.st_mode):
        for entry in sorted(os.scandir(path), key=lambda item: item.name):
            entry_info = entry.stat(follow_symlinks=False)
            stamp += [entry_info.st_ino, entry_info.st_size, entry_info.st_ctime_ns]
    return tuple(stamp)


def changed(
    before: dict[str, tuple[int, ...] | None], after: dict[str, tuple[int, ...] | None]
) -> list[str]:
    """Paths whose snapshot differs: written, replaced, created or removed."""
    return sorted(path for path in after if before.get(path) != after[path])


def _protect_root(root: str, result: Protection) -> None:
    git = os.path.join(root, ".git")
    kind = _kind(git)
    if kind == "dir":
        _bind(git, read_only=False)
        result.pinned.append(git)
        for name in ("hooks", "config"):
            _protect_one(os.path.join(git, name), result)
    elif kind != "missing":
        _protect_one(git, result)
    for name in RC_FILES:
        _protect_one(os.path.join(root, name), result)


def _protect_one(path: str, result: Protection) -> None:
    kind = _kind(path)
    if kind == "missing":
        return
    if kind == "symlink":
        result.unprotected.append(path)
        return
    _bind(path, read_only=True)
    result.read_only.append(path)


def _kind(path: str) -> str:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "missing"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "dir" if stat.S_ISDIR(mode) else "file"


_libc: ctypes.CDLL | None = None


def _call(name: str, *args: object) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if getattr(_libc, name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}")


def _enter_mount_namespace() -> None:
    """A new mount namespace, with a user namespace only when not already privileged.

    Root keeps its own identity (a user namespace would leave files of other
    owners unmapped); everyone else maps their uid and gid onto themselves.
    Propagation is made private so no mount made here reaches the host.
    """
    uid, gid = os.geteuid(), os.getegid()
    try:
        _call("unshare", CLONE_NEWNS)
    except OSError:
        _call("unshare", CLONE_NEWNS | CLONE_NEWUSER)
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _call("mount", None, b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None)


def _bind(path: str, read_only: bool) -> None:
    target = os.fsencode(path)
    _call("mount", target, target, None, ctypes.c_ulong(MS_BIND), None)
    if read_only:
        kept = os.statvfs(path).f_flag & LOCKED_MOUNT_FLAGS
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | kept
        _call("mount", None, target, None, ctypes.c_ulong(flags), None)


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)
