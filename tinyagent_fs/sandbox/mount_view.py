"""The worker's filesystem view: a fresh root holding only what the sandbox needs.

Built bubblewrap-style before Landlock: a tmpfs becomes the new root, and into
it are bound, at their usual absolute paths (so no path is ever translated):

- read-only, nosuid, nodev: /usr, /bin, /sbin, /lib*, /etc and the readable
  paths the provider lists (Python prefixes, the package, extra read roots);
- read-write, nosuid, nodev: the writable roots and the private TMPDIR;
- a minimal /dev (null, zero, full, random, urandom, tty) and a fresh /proc
  for the worker's PID namespace.

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

    def to_dict(self) -> dict[str, object]:
        return {
            "read_only": self.read_only,
            "read_write": self.read_write,
            "skipped": self.skipped,
            "proc": self.proc,
        }


def build_view(writable: Iterable[str], readable: Iterable[str], scratch_dir: str) -> ViewReport:
    """Make a new root, bind what is needed into it and pivot into it.

    ``scratch_dir`` (the private TMPDIR) holds the empty mount point of the new
    root while it is being built. Must run in a private mount namespace, as
    PID 1 of the worker's PID namespace (for /proc), before Landlock.
    """
    report = ViewReport()
    kc.mount(None, "/", None, kc.MS_REC | kc.MS_PRIVATE)
    new_root = tempfile.mkdtemp(prefix=".root-", dir=scratch_dir)
    kc.mount("tmpfs", new_root, "tmpfs", kc.MS_NOSUID | kc.MS_NODEV, "mode=0755,size=1m")
    root_fd = os.open(new_root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    slash_fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        plan = _plan([*writable, scratch_dir], readable)
        _bind_all(slash_fd, root_fd, new_root, plan, scratch_dir, report)
        _make_dev(root_fd, report)
        report.proc = _mount_proc(new_root)
    finally:
        os.close(root_fd)
        os.close(slash_fd)
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


def _bind_all(
    slash_fd: int,
    root_fd: int,
    new_root: str,
    plan: list[tuple[str, int]],
    scratch_dir: str,
    report: ViewReport,
) -> None:
    """Bind each planned path; the scratch dir alone is not recursive (it holds the new root)."""
    for path, attributes in plan:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            if path in SYSTEM_DIRS:
                os.symlink(os.readlink(path), new_root + path)
            else:
                report.skipped.append(path)
            continue
        try:
            source = kc.open_beneath(slash_fd, path.lstrip("/"), os.O_PATH)
        except OSError:
            report.skipped.append(path)
            continue
        try:
            target = _make_target(root_fd, path, stat.S_ISDIR(info.st_mode))
            try:
                kc.bind_by_fd(source, target, attributes, recursive=path != scratch_dir)
            finally:
                os.close(target)
        except OSError:
            report.skipped.append(path)
            continue
        finally:
            os.close(source)
        (report.read_only if attributes == READ_ONLY else report.read_write).append(path)


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


def _mount_proc(new_root: str) -> str:
    """A /proc of the worker's own PID namespace; "none" when the kernel refuses it."""
    target = os.path.join(new_root, "proc")
    os.mkdir(target, 0o555)
    try:
        kc.mount("proc", target, "proc", kc.MS_NOSUID | kc.MS_NODEV | kc.MS_NOEXEC)
    except OSError as exc:
        return f"none ({exc.strerror})"
    return "pid-namespace"
