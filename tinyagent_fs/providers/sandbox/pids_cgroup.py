"""A pids cgroup around one sandbox worker: a fork bomb stops at a count, not at the host's limit.

RLIMIT_NPROC counts every process of a user and is not enforced for root at
all, so where a pids controller is writable (cgroup v1 ``pids`` hierarchy or
the v2 unified one) the toolkit creates a group per worker, caps it, and moves
the worker in before it forks anything. Commands cannot leave the group: the
cgroup filesystem is outside every Landlock root. Where no controller is
usable the per-command RLIMIT_NPROC is the only bound and ``create`` returns
None.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from pathlib import Path

CGROUP_MOUNTS = ("/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup")
GROUP_PREFIX = "tinyagent-fs-"
"""Followed by the toolkit's pid: a group whose toolkit is gone can be cleaned up."""
_sequence = itertools.count()


class PidsCgroup:
    """One cgroup directory with ``pids.max`` set; removed again by :meth:`remove`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, max_processes: int) -> PidsCgroup | None:
        """A fresh capped group under the first writable pids hierarchy, or None."""
        for mount in CGROUP_MOUNTS:
            base = Path(mount)
            if not _has_pids_controller(base):
                continue
            _remove_orphaned_groups(base)
            path = base / f"{GROUP_PREFIX}{os.getpid()}-{next(_sequence)}"
            try:
                path.mkdir()
                (path / "pids.max").write_text(str(max_processes))
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            return cls(path)
        return None

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def limit_hits(self) -> int:
        """How often a fork was refused because the group was full (``pids.events`` max)."""
        with contextlib.suppress(OSError, ValueError):
            for line in (self.path / "pids.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "max":
                    return int(value)
        return 0

    def remove(self) -> None:
        """Kill what is still in the group, then delete it (a group with members cannot go)."""
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            try:
                pids = (self.path / "cgroup.procs").read_text().split()
            except OSError:
                return
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            time.sleep(0.01)
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _remove_orphaned_groups(base: Path) -> None:
    """Delete empty groups of toolkits that died without releasing them (SIGKILL, a crash)."""
    for group in base.glob(f"{GROUP_PREFIX}*"):
        owner = group.name[len(GROUP_PREFIX) :].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            with contextlib.suppress(OSError):
                group.rmdir()


def _has_pids_controller(base: Path) -> bool:
    if base.name == "pids" and (base / "cgroup.procs").exists():
        return os.access(base, os.W_OK)
    controllers = base / "cgroup.subtree_control"
    with contextlib.suppress(OSError):
        return "pids" in controllers.read_text().split() and os.access(base, os.W_OK)
    return False


def processes_of_this_user() -> int:
    """How many processes this user runs: RLIMIT_NPROC counts them all, not just the command's."""
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                count += entry.stat().st_uid == uid
    return count
