"""The worker's filesystem view: a fresh root holding only what the sandbox needs.

Built bubblewrap-style before Landlock: a tmpfs becomes the new root, and into
it are bound, at their usual absolute paths (so no path is ever translated):

- read-only, nosuid, nodev: /usr, /bin, /sbin, /lib*, /etc and the readable
  paths the provider lists (Python prefixes, the package, extra read roots);
- read-write, nosuid, nodev: the writable roots and the private TMPDIR;
- a minimal /dev (null, zero, full, random, urandom, tty), a private devpts
  instance (/dev/pts, /dev/ptmx: the pseudo-terminals of interactive sessions,
  none of the host's) and a fresh /proc for the worker's PID namespace.

Then ``pivot_root`` and the old root is detached. Everything else on the host
is simply absent, and what is present outside the roots is on a read-only
mount, so chmod, chown, setxattr, utime or a setuid bit on it fail with EROFS
whatever the capabilities. Every source and target is opened with openat2
(no symlinks) and bound by descriptor, so a symlink planted in a writable root
cannot redirect a mount.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import kernel_calls as kc

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1"}
DEV_LINKS["stderr"] = "/proc/self/fd/2"
READ_ONLY = kc.MOUNT_ATTR_RDONLY | kc.MOUNT_ATTR_NOSUID | kc.MOUNT_ATTR_NODEV
READ_WRITE = kc.MOUNT_ATTR_NOSUID | kc.MOUNT_ATTR_NODEV


@dataclass
class ViewReport:
    """What the new root holds, for the worker's start-up report."""

    read_only: list[str] = field(default_factory=list)
    read_write: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    proc: str = "none"
    pts: str = "none"

    def to_dict(self) -> dict[str, object]:
        return {
            "pts": self.pts,
            "read_only": self.read_only,
            "read_write": self.read_write,
            "skipped": self.skipped,
            "proc": self.proc,
        }


def build_view(writable: Iterable[str], readable: Iterable[str], scratch_dir: str) -> ViewReport:
    """Make a new root, bind what is needed into it and pivot into it.

    Every source is cloned (open_tree) before the new root's tmpfs exists, so
    no recursive clone can contain the new root itself, wherever the roots lie.
    ``scratch_dir`` (the private TMPDIR) holds the new root's mount point while
    it is built. Must run in a private mount namespace, as PID 1 of the
    worker's PID namespace (for /proc), before Landlock.
    """
    report = ViewReport()
    kc.mount(None, "/", None, kc.MS_REC | kc.MS_PRIVATE)
    trees, links = _clone_sources(_plan([*writable, scratch_dir], readable), report)
    try:
        new_root = tempfile.mkdtemp(prefix=".root-", dir=scratch_dir)
        kc.mount("tmpfs", new_root, "tmpfs", kc.MS_NOSUID | kc.MS_NODEV, "mode=0755,size=1m")
        root_fd = os.open(new_root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for path, target in links:
                os.symlink(target, new_root + path)
            _attach_all(root_fd, trees, report)
            _make_dev(root_fd, report)
            report.pts = _mount_pts(new_root)
            report.proc = _mount_proc(new_root)
        finally:
            os.close(root_fd)
    finally:
        for tree in trees:
            os.close(tree.fd)
    os.chdir(new_root)
    kc.pivot_root_here()
    kc.umount_detached(".")
    os.chdir("/")
    os.rmdir(new_root)
    return report


def seal_root() -> None:
    """Make the new root's own tmpfs read-only: nothing can be created beside the binds.

    Separate from :func:`build_view` so secret masks can be staged in it first.
    """
    fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        kc.set_mount_attributes(fd, READ_ONLY, recursive=False)
    finally:
        os.close(fd)


def _plan(writable: Iterable[str], readable: Iterable[str]) -> list[tuple[str, int]]:
    """(path, mount attributes), parents first.

    A readable path inside one already bound is left out (it is visible
    already); a writable one is always bound, on top of a read-only parent.
    """
    wanted: dict[str, int] = {}
    for path in writable:
        wanted[os.path.normpath(path)] = READ_WRITE
    for path in (*SYSTEM_DIRS, *readable):
        wanted.setdefault(os.path.normpath(path), READ_ONLY)
    ordered = sorted(wanted.items(), key=lambda item: item[0].split("/"))
    kept: list[tuple[str, int]] = []
    for path, attributes in ordered:
        if attributes == READ_ONLY and any(_is_within(path, parent) for parent, _ in kept):
            continue
        kept.append((path, attributes))
    return kept


def _is_within(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


@dataclass
class _Tree:
    """A detached copy of one source mount, attributes already set, waiting for its place."""

    path: str
    is_dir: bool
    fd: int
    read_only: bool


def _clone_sources(
    plan: list[tuple[str, int]], report: ViewReport
) -> tuple[list[_Tree], list[tuple[str, str]]]:
    """Detached trees for the planned paths; the system symlinks (/bin -> usr/bin) to recreate."""
    slash_fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    trees: list[_Tree] = []
    links: list[tuple[str, str]] = []
    try:
        for path, attributes in plan:
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(info.st_mode):
                if path in SYSTEM_DIRS:
                    links.append((path, os.readlink(path)))
                else:
                    report.skipped.append(path)
                continue
            try:
                source = kc.open_beneath(slash_fd, path.lstrip("/"), os.O_PATH)
            except OSError:
                report.skipped.append(path)
                continue
            try:
                tree = kc.clone_tree(source, recursive=True)
            finally:
                os.close(source)
            trees.append(_Tree(path, stat.S_ISDIR(info.st_mode), tree, attributes == READ_ONLY))
            kc.set_mount_attributes(tree, attributes, recursive=True)
    except BaseException:
        for tree in trees:
            os.close(tree.fd)
        raise
    finally:
        os.close(slash_fd)
    return trees, links


def _attach_all(root_fd: int, trees: list[_Tree], report: ViewReport) -> None:
    for tree in trees:
        try:
            target = _make_target(root_fd, tree.path, tree.is_dir)
            try:
                kc.attach_tree(tree.fd, target)
            finally:
                os.close(target)
        except OSError:
            report.skipped.append(tree.path)
            continue
        (report.read_only if tree.read_only else report.read_write).append(tree.path)


def _make_target(root_fd: int, path: str, is_dir: bool) -> int:
    """Create the mount point of ``path`` inside the new root, by descriptor; an O_PATH fd to it."""
    parts = [p for p in path.split("/") if p]
    current = os.dup(root_fd)
    try:
        for index, name in enumerate(parts):
            last = index == len(parts) - 1
            if not last or is_dir:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=current)
            else:
                with contextlib.suppress(FileExistsError):
                    os.close(
                        os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644, dir_fd=current)
                    )
            following = kc.open_beneath(current, name, os.O_PATH)
            os.close(current)
            current = following
        return current
    except BaseException:
        os.close(current)
        raise


def _make_dev(root_fd: int, report: ViewReport) -> None:
    dev = _make_target(root_fd, "/dev", is_dir=True)
    try:
        for name in DEVICES:
            host = f"/dev/{name}"
            if not os.path.exists(host):
                continue
            source = os.open(host, os.O_PATH | os.O_CLOEXEC)
            try:
                os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644, dir_fd=dev))
                target = kc.open_beneath(dev, name, os.O_PATH)
                try:
                    kc.bind_by_fd(source, target, kc.MOUNT_ATTR_NOSUID | kc.MOUNT_ATTR_NOEXEC)
                finally:
                    os.close(target)
                report.read_write.append(host)
            except OSError:
                report.skipped.append(host)
            finally:
                os.close(source)
        for name, link in DEV_LINKS.items():
            os.symlink(link, name, dir_fd=dev)
    finally:
        os.close(dev)


def _mount_pts(new_root: str) -> str:
    """A devpts instance of the worker's own (``newinstance``): sessions get terminals
    that no host process shares; "none" when the kernel refuses it (sessions are then
    refused, commands go on)."""
    target = os.path.join(new_root, "dev", "pts")
    os.mkdir(target, 0o755)
    try:
        kc.mount(
            "devpts",
            target,
            "devpts",
            kc.MS_NOSUID | kc.MS_NOEXEC,
            "newinstance,ptmxmode=0666,mode=0620",
        )
    except OSError as exc:
        os.rmdir(target)
        return f"none ({exc.strerror})"
    os.symlink("pts/ptmx", os.path.join(new_root, "dev", "ptmx"))
    return "private"


def _mount_proc(new_root: str) -> str:
    """A /proc of the worker's own PID namespace; "none" when the kernel refuses it."""
    target = os.path.join(new_root, "proc")
    os.mkdir(target, 0o555)
    try:
        kc.mount("proc", target, "proc", kc.MS_NOSUID | kc.MS_NODEV | kc.MS_NOEXEC)
    except OSError as exc:
        return f"none ({exc.strerror})"
    return "pid-namespace"
