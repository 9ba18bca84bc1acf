"""The sandbox worker and what must not outlive its provider: socket, TMPDIR, log, cgroup.

Kept apart from the provider so a finalizer can release it when a provider is
dropped without ``close()`` (a notebook kernel that just goes away).

The worker's stderr goes to an anonymous memory file (``memfd``) the toolkit
holds: it has no path, so no command can swap it for a symlink to a file the
toolkit would then read back into an error result, and what is read back is
capped.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Callable

from .sandbox.pids_cgroup import PidsCgroup
from .secret_watch import SecretWatch

STDERR_TAIL_BYTES = 2000
"""How much of the worker's stderr an error result carries."""
REAP_AFTER_CLOSE_S = 1.0
"""How long a worker whose socket was closed gets to clean up before SIGKILL."""


class WorkerSlot:
    """Owns one worker at a time and the resources that outlive a single worker."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.tmpdir: str | None = None
        self.cgroup: PidsCgroup | None = None
        self.stderr_fd: int | None = None
        self.watch: SecretWatch | None = None
        """Watches the sandbox's folders while sessions live (``secret_watch``)."""
        self.on_stop: Callable[[], None] | None = None
        """Called once a worker has been stopped and reaped (every process of its
        namespace is gone then): its interactive sessions ended with it."""

    def stderr_log(self) -> int:
        """The descriptor workers write stderr to (one memfd for the slot's life)."""
        if self.stderr_fd is None:
            self.stderr_fd = os.memfd_create("tinyagent-fs-worker-stderr", os.MFD_CLOEXEC)
        return self.stderr_fd

    def stderr_tail(self) -> str:
        """The end of what workers wrote to stderr: a traceback when one crashed."""
        if self.stderr_fd is None:
            return ""
        size = os.fstat(self.stderr_fd).st_size
        data = os.pread(self.stderr_fd, STDERR_TAIL_BYTES, max(0, size - STDERR_TAIL_BYTES))
        return data.decode("utf-8", "replace")

    def stop(self, *, kill_now: bool = False) -> None:
        """Close the socket (the worker then clears its sandbox and exits) and reap it.

        ``kill_now`` is for a worker that stalled: it will not answer a close.
        Whatever the worker's commands left in its pids cgroup is killed too.
        """
        sock, process = self.sock, self.process
        self.sock = self.process = None
        if sock is not None:
            sock.close()
        if process is not None:
            if kill_now:
                process.kill()
            try:
                process.wait(timeout=REAP_AFTER_CLOSE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if process is not None and self.on_stop is not None:
            self.on_stop()

    def clear_tmpdir(self) -> None:
        """Drop the TMPDIR (with all a session left there); the next worker gets a new one."""
        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None

    def release(self) -> None:
        watch, self.watch = self.watch, None
        if watch is not None:
            watch.stop()
        self.stop()
        self.clear_tmpdir()
        if self.stderr_fd is not None:
            os.close(self.stderr_fd)
            self.stderr_fd = None

    def is_stopped(self) -> bool:
        """Whether the worker is stopped (SIGSTOP, job control) and so cannot answer.

        Both the process the provider started and the child it forked as PID 1
        of the worker's namespace (the one that serves requests) are looked at.
        """
        process = self.process
        if process is None:
            return False
        return any(_state(pid) in (b"T", b"t") for pid in (process.pid, *_children(process.pid)))


def _state(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return b""


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as handle:
            return [int(child) for child in handle.read().split()]
    except (OSError, ValueError):
        return []
