"""Ending what a command left running, from inside the sandbox worker.

A command can escape its process group (``setsid``, a double fork, ``nohup``)
and so the group kill at its end. The worker is a child subreaper: such
orphans become its children, not init's, and ``kill(-1)`` from a worker whose
Landlock domain scopes signals reaches exactly the processes of that domain
(in a PID namespace of which the worker is PID 1, exactly that namespace). So
SIGKILL to -1 and reaping until no child is left ends all of them before the
command's answer goes back.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time

PR_SET_CHILD_SUBREAPER = 36
REAP_LIMIT_S = 2.0
"""A process in uninterruptible sleep may take a moment to die; not forever."""
REAP_POLL_S = 0.002


def become_subreaper() -> None:
    """Make orphans of this process's descendants its children (so it can reap them)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def kill_domain() -> None:
    """SIGKILL every process this one may signal, then reap its children until none is left.

    Only call this where signals are scoped (Landlock) or confined (PID
    namespace): unconfined, kill(-1) as root would reach the whole machine.
    """
    deadline = time.monotonic() + REAP_LIMIT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGKILL)
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(REAP_POLL_S)
