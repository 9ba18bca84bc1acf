"""Hide secrets from commands: cover denied files and directories in the worker's view.

The file tools refuse the policy's denied patterns (``.env``, keys, ``.ssh/``)
and the root's ``.tinyagentignore`` denials in the guard; a shell command
never meets the guard, so ``cat .env`` or ``grep -r SECRET .`` would print
them. At start, before Landlock, the worker walks each root once and mounts
over every match: a file gets a read-only bind of an empty mode-000 file, a
directory an empty read-only mode-000 directory. The decision is the guard's
own (:meth:`PathGuard.denied_pattern`), so both walls agree on what a secret is.

Targets are opened with openat2 beneath the root (no symlinks) and covered by
descriptor, so a name swapped during the walk can only make a mask land on
something else inside the root, never outside it. Not covered: a secret created
after the worker started (until the worker is replaced), a secret reached by a
hard link or a symlink under a name that is not denied, and secret content in
files whose names are not denied.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..guard import PathGuard
from ..policy import SandboxPolicy
from . import kernel_calls as kc

STAGING = "/.tinyagent-masks"
MASK_ATTRIBUTES = kc.MOUNT_ATTR_RDONLY | kc.MOUNT_ATTR_NOSUID | kc.MOUNT_ATTR_NODEV


@dataclass
class TreeScan:
    """What one walk of the roots found: denied entries, and ``.git`` entries below the top."""

    denied: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)
    nested_git: dict[str, list[str]] = field(default_factory=dict)
    entries_walked: int = 0
    seconds: float = 0.0


@dataclass
class MaskReport:
    """How many paths were covered, which could not be, and what the walk cost."""

    masked: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    entries_walked: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "masked": self.masked,
            "failed": self.failed,
            "entries_walked": self.entries_walked,
            "seconds": round(self.seconds, 4),
        }


def scan_roots(roots: Iterable[str], denied_patterns: Iterable[str]) -> TreeScan:
    """Walk every root once (symlinks not followed); a denied directory is not entered.

    The same walk finds nested ``.git`` entries, so protecting vendored
    repositories costs nothing extra.
    """
    started = time.perf_counter()
    policy = SandboxPolicy(denied_patterns=tuple(denied_patterns))
    scan = TreeScan()
    for root in roots:
        guard = PathGuard(root, policy)
        denied, nested = scan.denied.setdefault(root, []), scan.nested_git.setdefault(root, [])
        pending = [""]
        while pending:
            relative_dir = pending.pop()
            try:
                entries = list(os.scandir(os.path.join(root, relative_dir)))
            except OSError:
                continue
            scan.entries_walked += len(entries)
            for entry in entries:
                relative = f"{relative_dir}/{entry.name}" if relative_dir else entry.name
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if guard.denied_pattern(relative, for_write=False, is_dir=is_dir) is not None:
                    denied.append((relative, is_dir))
                    continue
                if entry.name == ".git" and relative_dir:
                    nested.append(relative)
                if is_dir:
                    pending.append(relative)
    scan.seconds = time.perf_counter() - started
    return scan


def mask_secrets(scan: TreeScan) -> MaskReport:
    """Cover every denied path the scan found; runs after pivot_root, before the root is sealed."""
    started = time.perf_counter()
    report = MaskReport(entries_walked=scan.entries_walked)
    os.mkdir(STAGING, 0o700)
    empty_file = os.path.join(STAGING, "file")
    empty_dir = os.path.join(STAGING, "dir")
    os.close(os.open(empty_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0))
    os.mkdir(empty_dir, 0)
    file_fd = os.open(empty_file, os.O_PATH | os.O_CLOEXEC)
    dir_fd = os.open(empty_dir, os.O_PATH | os.O_CLOEXEC)
    try:
        for root, denied in scan.denied.items():
            root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                for relative, is_dir in denied:
                    _cover(root_fd, relative, dir_fd if is_dir else file_fd, root, report)
            finally:
                os.close(root_fd)
    finally:
        os.close(file_fd)
        os.close(dir_fd)
        shutil.rmtree(STAGING, ignore_errors=True)
    report.seconds = scan.seconds + time.perf_counter() - started
    return report


def _cover(root_fd: int, relative: str, mask_fd: int, root: str, report: MaskReport) -> None:
    shown = os.path.join(root, relative)
    try:
        target = kc.open_beneath(root_fd, relative, os.O_PATH)
    except OSError:
        report.failed.append(shown)
        return
    try:
        kc.bind_by_fd(mask_fd, target, MASK_ATTRIBUTES)
    except OSError:
        report.failed.append(shown)
    else:
        report.masked.append(shown)
    finally:
        os.close(target)
