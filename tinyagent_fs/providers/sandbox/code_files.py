"""The toolkit's own watch on files that make git or a shell run code.

The worker mounts them read-only, but a command can create one where none was,
or find a protection gone; so the toolkit walks every root by descriptor before
and after each command and quarantines what the command created or changed.
What is watched and how: docs/architecture.md, "The watch on code-running files".
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ...guard.code_running import ROOT_FOLDERS, is_git_dir
from . import kernel_calls as kc
from .protected_paths import (
    GIT_DATA,
    GIT_DIR_OWN,
    GIT_READ_ONLY,
    MAX_SCAN_DEPTH,
    QUARANTINE_SUFFIX,
    ROOT_FILES,
)

ROOT_PROTECTED = frozenset({*ROOT_FILES, *ROOT_FOLDERS})
ROOT_CONTAINERS = frozenset(
    {*ROOT_FOLDERS}
    | {path.rsplit("/", up)[0] for path in ROOT_PROTECTED for up in range(1, path.count("/") + 1)}
)
"""At a root, the folders of watched files, watched by identity (``.config`` made a symlink)."""
GIT_FILES = ("config", "config.worktree", "commondir")
WORKTREE_FILES = ("config.worktree", "commondir", "gitdir")
CONTAINERS = frozenset({".git", "hooks", "worktrees", "modules"})
"""Folders watched by identity only: what matters is inside them (or that they are a symlink)."""
NOT_RUN = (".sample", QUARANTINE_SUFFIX)
"""Hook names git never runs."""
OPEN_PARENTS = 16
"""Folders one walk keeps open for its stats."""

Stamp = tuple[int, ...]
Key = tuple[str, str]
"""(root, path relative to it)."""


class ScanFailed(Exception):
    """A part of a root could not be walked: what is in it is unknown."""


@dataclass
class CodeFiles:
    """One walk: the code-running entries with their stamps, and what the worker protects."""

    entries: dict[Key, Stamp] = field(default_factory=dict)
    protectable: dict[Key, tuple[int, int]] = field(default_factory=dict)
    opaque: dict[Key, Stamp] = field(default_factory=dict)
    """Folders this process may not list, as found (compared, never entered)."""
    too_deep: list[str] = field(default_factory=list)
    """Folders below ``MAX_SCAN_DEPTH``, not searched: what is in them is unknown."""


def scan(roots: Iterable[str], before: CodeFiles | None = None) -> CodeFiles:
    """Walk every root; ``before`` given, a folder made unreadable since is opened up again."""
    found = CodeFiles()
    for root in roots:
        root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            _Walk(root_fd, root, found, before).run()
        finally:
            os.close(root_fd)
    return found


class _Walk:
    """One root, every path opened beneath its descriptor without following a symlink."""

    def __init__(self, root_fd: int, root: str, found: CodeFiles, before: CodeFiles | None):
        self.root_fd, self.root, self.found, self.before = root_fd, root, found, before
        self.real_root = os.path.realpath(root)
        self.symlinks: list[str] = []
        self.git_data: list[str] = []
        """Folders of git directories the walk does not enter (``GIT_DATA``), as paths."""
        self.parents: OrderedDict[str, int | None] = OrderedDict()
        """The last folders a stat was made in, kept open (None: not there, or beneath a
        symlink): some fifty names are looked up in a handful of folders, and a tree of
        many repositories must not run out of descriptors."""

    def run(self) -> None:
        try:
            self._run()
        finally:
            for fd in self.parents.values():
                if fd is not None:
                    os.close(fd)

    def _run(self) -> None:
        for relative in sorted(ROOT_CONTAINERS | set(ROOT_FILES)):
            self._add(relative)
        for folder in ROOT_FOLDERS:
            self._add_each(folder)
        pending = [("", False)]
        while pending:
            relative_dir, covered = pending.pop()
            entries = self._list(relative_dir)
            named_git = os.path.basename(relative_dir) == ".git"
            git_dir = not covered and (named_git or is_git_dir({name for name, _ in entries}))
            if git_dir:
                self._git_dir(relative_dir)
                here = os.path.join(self.real_root, relative_dir)  # the walk follows no link
                self.git_data += [os.path.join(here, name) for name in GIT_DATA]
                if relative_dir and not named_git:
                    self._protectable(relative_dir)
            for name, is_dir in entries:
                relative = _join(relative_dir, name)
                if name in (".git", ".gitmodules"):
                    self._add(relative)
                if not is_dir or (git_dir and name in GIT_DATA):
                    continue
                if relative.count("/") >= MAX_SCAN_DEPTH:
                    self.found.too_deep.append(self._path(relative))
                else:
                    pending.append((relative, covered or (git_dir and name == "worktrees")))
        self._watch_symlinks_into_git_data()

    def _watch_symlinks_into_git_data(self) -> None:
        """A symlink that leads into a folder the walk does not enter is watched itself:
        a person who follows it (``cd docs``) would reach whatever a command hid there."""
        if not self.git_data:
            return
        for relative in self.symlinks:
            try:
                target = os.path.realpath(self._path(relative))
            except OSError:
                continue  # replaced since it was listed (only a person acts meanwhile)
            if any(target == data or target.startswith(data + "/") for data in self.git_data):
                self._add(relative)

    def _git_dir(self, git: str) -> None:
        """The code-running entries of one git directory (the walk finds the git
        directories of its modules, at any depth, by what they hold)."""
        for name in GIT_READ_ONLY:
            self._protectable(_join(git, name))
        for name in (*GIT_FILES, "worktrees", "modules"):
            self._add(_join(git, name))
        self._add_each(_join(git, "hooks"))
        for name, _ in self._list(_join(git, "worktrees")):
            self._add(_join(git, f"worktrees/{name}"))
            for entry in WORKTREE_FILES:
                self._add(_join(git, f"worktrees/{name}/{entry}"))

    def _add_each(self, folder: str) -> None:
        """A folder whose every entry runs code (hooks), and each entry git or a shell may run."""
        self._add(folder)
        for name, _ in self._list(folder):
            if not name.endswith(NOT_RUN):
                self._add(f"{folder}/{name}")

    def _stat(self, relative: str) -> os.stat_result | None:
        parent, _, name = relative.rpartition("/")
        fd = self._parent(parent)
        if fd is None:
            return None
        try:
            return os.stat(name or ".", dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ScanFailed(f"{self._path(relative)}: {exc.strerror}") from None

    def _parent(self, parent: str) -> int | None:
        if not parent:
            return self.root_fd
        if parent in self.parents:
            self.parents.move_to_end(parent)
            return self.parents[parent]
        try:
            fd: int | None = kc.open_beneath(self.root_fd, parent, os.O_PATH | os.O_DIRECTORY)
        except (FileNotFoundError, NotADirectoryError):
            fd = None
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.EXDEV):
                raise ScanFailed(f"{self._path(parent)}: {exc.strerror}") from None
            fd = None  # beneath a symlink: git does not look there; the symlink is watched
        self.parents[parent] = fd
        if len(self.parents) > OPEN_PARENTS:
            _, oldest = self.parents.popitem(last=False)
            if oldest is not None:
                os.close(oldest)
        return fd

    def _add(self, relative: str) -> None:
        info = self._stat(relative)
        if info is None:
            return
        stamp: Stamp = (info.st_dev, info.st_ino, info.st_mode)
        if not (stat.S_ISDIR(info.st_mode) and is_container(relative)):
            stamp += (info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        self.found.entries[(self.root, relative)] = stamp
        if os.path.basename(relative) == ".git" or relative in ROOT_PROTECTED:
            self._protectable(relative, info)

    def _protectable(self, relative: str, info: os.stat_result | None = None) -> None:
        """What the worker binds read-only or pins: anything there but a symlink."""
        info = info or self._stat(relative)
        if info is not None and not stat.S_ISLNK(info.st_mode):
            self.found.protectable[(self.root, relative)] = (info.st_dev, info.st_ino)

    def _list(self, relative: str) -> list[tuple[str, bool]]:
        """(name, is a folder) of each entry; [] when ``relative`` is not a folder."""
        try:
            fd = kc.open_beneath(self.root_fd, relative or ".", os.O_RDONLY | os.O_DIRECTORY)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EXDEV):
                return []
            if exc.errno != errno.EACCES:
                raise ScanFailed(f"{self._path(relative)}: {exc.strerror}") from None
            reopened = self._reopen_unreadable(relative)
            if reopened is None:
                return []
            fd = reopened
        try:
            listed = []
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_symlink():
                        self.symlinks.append(_join(relative, entry.name))
                    listed.append((entry.name, entry.is_dir(follow_symlinks=False)))
            return listed
        finally:
            os.close(fd)

    def _reopen_unreadable(self, relative: str) -> int | None:
        """A folder this process may not list: left alone while it is as it was before the
        command (the command could not enter it either), else made listable again."""
        info = self._stat(relative)
        if info is None:
            return None
        key = (self.root, relative)
        stamp = (info.st_dev, info.st_ino, info.st_mode, info.st_mtime_ns, info.st_ctime_ns)
        if self.before is None or self.before.opaque.get(key) == stamp:
            self.found.opaque[key] = stamp
            return None
        if info.st_uid != os.geteuid():
            raise ScanFailed(f"{self._path(relative)}: cannot list it, and it is not ours")
        path_fd = kc.open_beneath(self.root_fd, relative or ".", os.O_PATH | os.O_DIRECTORY)
        try:
            os.chmod(f"/proc/self/fd/{path_fd}", stat.S_IMODE(info.st_mode) | stat.S_IRWXU)
            return os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=path_fd)
        except OSError as exc:
            raise ScanFailed(f"{self._path(relative)}: {exc.strerror}") from None
        finally:
            os.close(path_fd)

    def _path(self, relative: str) -> str:
        return os.path.join(self.root, relative)


def is_container(relative: str) -> bool:
    """A folder that only holds watched entries: ``.git``, ``hooks``, a worktree's, a module's,
    a root's ``.config`` and the like."""
    parent, name = os.path.split(relative)
    return (
        name in CONTAINERS or os.path.basename(parent) in GIT_DIR_OWN or relative in ROOT_CONTAINERS
    )


def _join(folder: str, relative: str) -> str:
    """``relative`` beneath ``folder``, where ``""`` is the root."""
    return f"{folder}/{relative}" if folder else relative


def changed(before: CodeFiles, after: CodeFiles) -> list[Key]:
    """Entries created, changed or removed between the two walks."""
    keys = set(before.entries) | set(after.entries)
    return sorted(key for key in keys if before.entries.get(key) != after.entries.get(key))


def to_quarantine(before: CodeFiles, after: CodeFiles) -> list[Key]:
    """Entries created or changed that git or a shell could run: all but a folder that
    only holds others (a new ``.git`` folder stays; what is in it is judged by itself)."""
    keys = []
    for key, stamp in sorted(after.entries.items()):
        if before.entries.get(key) == stamp:
            continue
        if is_container(key[1]) and stat.S_ISDIR(stamp[2]):
            continue
        keys.append(key)
    return keys


def quarantine(keys: list[Key]) -> list[dict[str, str]]:
    """Rename each entry aside (mode 0600), or remove it; each outcome, failures named."""
    outcomes = []
    for root, relative in keys:
        path = os.path.join(root, relative)
        try:
            outcomes.append({"path": path, **_move_aside(root, relative)})
        except FileNotFoundError:
            continue  # gone since the walk (only a person acts now): nothing to move
        except OSError as exc:
            outcomes.append({"path": path, "error": exc.strerror or str(exc)})
    return outcomes


def _move_aside(root: str, relative: str) -> dict[str, str]:
    root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        parent_rel, name = os.path.split(relative)
        parent = kc.open_beneath(root_fd, parent_rel or ".", os.O_PATH | os.O_DIRECTORY)
    finally:
        os.close(root_fd)
    try:
        with writable(parent):
            aside = _free_name(parent, name + QUARANTINE_SUFFIX)
            try:
                os.rename(name, aside, src_dir_fd=parent, dst_dir_fd=parent)
            except OSError:
                remove_entry(parent, name)
                return {"removed": "true"}
            _defuse(parent, aside)
        return {"moved_to": os.path.join(root, parent_rel, aside)}
    finally:
        os.close(parent)


@contextlib.contextmanager
def writable(dir_fd: int) -> Iterator[None]:
    """The folder writable for this process meanwhile (a command may have made it 0555)."""
    mode = stat.S_IMODE(os.fstat(dir_fd).st_mode)
    opened = mode | stat.S_IRWXU
    if opened != mode and os.geteuid() != 0:
        os.chmod(f"/proc/self/fd/{dir_fd}", opened)
    try:
        yield
    finally:
        if opened != mode and os.geteuid() != 0:
            os.chmod(f"/proc/self/fd/{dir_fd}", mode)


def remove_entry(dir_fd: int, name: str) -> None:
    """Remove ``name`` in the folder ``dir_fd``, a whole folder included."""
    if stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def _defuse(dir_fd: int, name: str) -> None:
    """Nothing executable is left under the new name (a symlink has no mode of its own)."""
    mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    if stat.S_ISREG(mode):
        os.chmod(name, 0o600, dir_fd=dir_fd)
    elif stat.S_ISDIR(mode):
        os.chmod(name, 0o700, dir_fd=dir_fd)


def _free_name(dir_fd: int, name: str) -> str:
    candidate, number = name, 1
    while True:
        try:
            os.stat(candidate, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return candidate
        number += 1
        candidate = f"{name}{number}"
