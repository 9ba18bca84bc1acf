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
   refusal (ELOOP), never a mount of something outside. ``.git`` itself is
   pinned (a mount point cannot be renamed or removed: EBUSY); hooks, config,
   config.worktree, commondir, info, worktrees, modules/*/hooks and config, a
   ``.git`` file, ``.gitmodules``, ``.tinyagentignore`` and the rc files become
   read-only (EROFS; hard links out of them fail with EXDEV).
2. After every command (:func:`code_entries` before and after, then
   :func:`quarantine`): a code-running entry that the command created or
   changed (it could, because it did not exist at start, e.g. after ``git
   init``) is renamed aside with a ``.quarantined`` suffix and made
   non-executable, and reported. A git config is left in place when every key
   in it is on a short list of harmless ones (what ``git init``, ``git remote``
   and ``git config user.*`` write). The worker is then replaced, so the next
   command finds the new paths mounted read-only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import kernel_calls as kc

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
ROOT_FILES: tuple[str, ...] = (".gitmodules", ".tinyagentignore", *RC_FILES)
GIT_READ_ONLY: tuple[str, ...] = (
    "hooks",
    "config",
    "config.worktree",
    "commondir",
    "info",
    "worktrees",
)
QUARANTINE_SUFFIX = ".quarantined"
SAFE_GIT_KEYS = re.compile(
    r"^(core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode"
    r"|symlinks)|extensions\.objectformat|user\.(name|email)|init\.defaultbranch"
    r"|remote\.[^=]+\.(url|fetch)|branch\.[^=]+\.(remote|merge))$"
)
"""Git config keys that make git run nothing and read no other file."""
READ_ONLY = kc.MOUNT_ATTR_RDONLY | kc.MOUNT_ATTR_NOSUID | kc.MOUNT_ATTR_NODEV
MAX_MODULE_DEPTH = 4


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


def candidates(roots: Iterable[str]) -> list[str]:
    """The top-level protected paths of each root, existing or not (watched around commands)."""
    paths = []
    for root in roots:
        paths.append(os.path.join(root, ".git"))
        paths += [os.path.join(root, ".git", name) for name in GIT_READ_ONLY]
        paths += [os.path.join(root, name) for name in ROOT_FILES]
    return paths


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
            for name in ROOT_FILES:
                _protect_one(root_fd, root, name, result)
        finally:
            os.close(root_fd)
    return result


def protect_nested(nested_git: dict[str, list[str]], result: Protection) -> None:
    """Pin each ``.git`` found deeper in a root (vendored repositories, submodule
    checkouts) and protect its code-running entries like the root's own.

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
    """
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
        _protect_git_dir(pinned, path, result, 0)
    finally:
        os.close(pinned)


def _protect_git_dir(git_fd: int, git_path: str, result: Protection, depth: int) -> None:
    """The code-running entries of one git directory, then of each submodule's beneath it."""
    for name in GIT_READ_ONLY:
        _protect_one(git_fd, git_path, name, result)
    if depth >= MAX_MODULE_DEPTH:
        return
    for module in _list_dir(git_fd, "modules"):
        module_fd = _open(git_fd, f"modules/{module}", git_path, result)
        if module_fd is None:
            continue
        try:
            _protect_git_dir(module_fd, f"{git_path}/modules/{module}", result, depth + 1)
        finally:
            os.close(module_fd)


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


def snapshot(paths: Iterable[str]) -> dict[str, tuple[int, ...] | None]:
    """Identity and change stamps of each path; None if absent.

    ``.git`` itself is stamped by identity only (git changes its entries on
    every command); other directories (hooks) by their entries too.
    """
    state: dict[str, tuple[int, ...] | None] = {}
    for path in paths:
        try:
            state[path] = _stamp(path, by_entries=not path.endswith("/.git"))
        except FileNotFoundError:
            state[path] = None
        except OSError as exc:
            state[path] = (-1, exc.errno or 0)
    return state


def _stamp(path: str, by_entries: bool) -> tuple[int, ...]:
    info = os.lstat(path)
    stamp = [info.st_dev, info.st_ino, info.st_mode]
    if not by_entries and stat.S_ISDIR(info.st_mode):
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


def code_entries(roots: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """Every file that makes git or a shell run code, with its stamp: compared around a command."""
    found: dict[str, tuple[int, ...]] = {}
    for root in roots:
        for name in RC_FILES:
            _add_entry(found, os.path.join(root, name))
        git = os.path.join(root, ".git")
        if os.path.isfile(git) and not os.path.islink(git):
            _add_entry(found, git)
        _add_git_dir(found, git, 0)
    return found


def _add_git_dir(found: dict[str, tuple[int, ...]], git: str, depth: int) -> None:
    if not os.path.isdir(git) or os.path.islink(git):
        return
    for name in ("config", "config.worktree", "commondir"):
        _add_entry(found, os.path.join(git, name))
    for name in _names(os.path.join(git, "hooks")):
        if not name.endswith((".sample", QUARANTINE_SUFFIX)):
            _add_entry(found, os.path.join(git, "hooks", name))
    for name in _names(os.path.join(git, "worktrees")):
        for entry in ("config.worktree", "commondir", "gitdir"):
            _add_entry(found, os.path.join(git, "worktrees", name, entry))
    if depth < MAX_MODULE_DEPTH:
        for name in _names(os.path.join(git, "modules")):
            _add_git_dir(found, os.path.join(git, "modules", name), depth + 1)


def _names(directory: str) -> list[str]:
    try:
        return os.listdir(directory) if not os.path.islink(directory) else []
    except OSError:
        return []


def _add_entry(found: dict[str, tuple[int, ...]], path: str) -> None:
    try:
        info = os.lstat(path)
    except OSError:
        return
    found[path] = (info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def quarantine(
    before: dict[str, tuple[int, ...]], after: dict[str, tuple[int, ...]]
) -> list[dict[str, str]]:
    """Rename aside (mode 0600) each code-running entry a command created or changed.

    Runs after every other process of the sandbox is gone, so nothing races
    the rename. A harmless git config stays (see module docstring).
    """
    moved = []
    for path, stamp in sorted(after.items()):
        if before.get(path) == stamp:
            continue
        if os.path.basename(path) in ("config", "config.worktree") and _harmless_config(path):
            continue
        aside = _free_name(path + QUARANTINE_SUFFIX)
        try:
            os.rename(path, aside)
        except OSError as exc:
            moved.append({"path": path, "error": exc.strerror or str(exc)})
            continue
        with contextlib.suppress(OSError):
            os.chmod(aside, 0o600, follow_symlinks=False)
        moved.append({"path": path, "moved_to": aside})
    return moved


def _harmless_config(path: str) -> bool:
    """Whether every key of a git config file is on the harmless list (no include, no hooks)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return False
        text = handle.read(64 * 1024 + 1).decode("utf-8", "replace")
    if len(text) > 64 * 1024:
        return False
    return all(SAFE_GIT_KEYS.match(key) for key in _config_keys(text))


def _config_keys(text: str) -> list[str]:
    """``section.subsection.name`` of every assignment; an unparsable line is an unsafe key."""
    keys, section = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        header = re.fullmatch(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]', line)
        if header:
            section = header.group(1).lower()
            if header.group(2) is not None:
                section += "." + header.group(2)
            continue
        name = re.match(r"([A-Za-z][A-Za-z0-9-]*)\s*(=|$)", line)
        keys.append(f"{section}.{name.group(1).lower()}" if name and section else "!unparsable")
    return keys


def _free_name(path: str) -> str:
    candidate, number = path, 1
    while os.path.lexists(candidate):
        number += 1
        candidate = f"{path}{number}"
    return candidate
