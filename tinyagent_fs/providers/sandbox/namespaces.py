"""Put the worker in its own mount and PID namespaces, as PID 1 of the new one.

Why a PID namespace: commands then cannot see, signal, prlimit or renice the
toolkit (it is not in their namespace), and when the worker (PID 1) exits the
kernel kills every process of the namespace, including whatever a command
started with ``setsid``. The process that called :func:`enter_namespaces`
stays outside, only waits for the child and exits with its status; the child
dies with it (PR_SET_PDEATHSIG), so killing the worker the toolkit started
ends the whole sandbox. That process also watches the toolkit's socket: when
the toolkit's end closes (the toolkit exited, was killed, or hung up to cancel
a command) it kills the child at once, and with it every process of the
namespace, instead of letting a running command finish unwatched.

A user namespace is added only when the caller is not root: root keeps its own
identity (files of other owners would otherwise appear unmapped).
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import subprocess
import sys
import time

from . import kernel_calls as kc

REAP_WAIT_S = 1.0
REAP_POLL_S = 0.001


def enter_namespaces(hangup_fd: int | None = None) -> None:
    """Unshare, fork, and return only in the child, which is PID 1 of a new PID namespace.

    The parent waits and exits with the child's status; it never returns. When
    the peer of the socket ``hangup_fd`` hangs up, it kills the child first.
    Raises OSError when the kernel refuses the namespaces.
    """
    uid, gid = os.geteuid(), os.getegid()
    flags = kc.CLONE_NEWNS | kc.CLONE_NEWPID
    if uid == 0:
        kc.unshare(flags)
    else:
        kc.unshare(flags | kc.CLONE_NEWUSER)
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    child = os.fork()
    if child:
        _watch(child, hangup_fd)
        _wait_and_exit(child)
    kc.set_parent_death_signal(signal.SIGKILL)


def _watch(child: int, hangup_fd: int | None) -> None:
    """Return when the child has exited; SIGKILL it first if ``hangup_fd``'s peer hangs up.

    Only a hang-up wakes this process, never a request: it does not read the socket.
    """
    signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGKILL))
    exited = os.pidfd_open(child)
    poller = select.poll()
    poller.register(exited, select.POLLIN)
    if hangup_fd is not None:
        poller.register(hangup_fd, select.POLLRDHUP)
    while True:
        events = dict(poller.poll())
        if exited in events:
            return
        if hangup_fd in events:
            os.kill(child, signal.SIGKILL)
            poller.unregister(hangup_fd)


def _wait_and_exit(child: int) -> None:
    """Wait for the child and end the same way: its exit status, or killed by its signal."""
    while True:
        try:
            _, status = os.waitpid(child, 0)
        except InterruptedError:
            continue
        if os.WIFSIGNALED(status):
            signum = os.WTERMSIG(status)
            if signum not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def end_other_processes(wait_s: float = REAP_WAIT_S) -> int:
    """SIGKILL every process of the namespace but this PID 1 and reap them; how many were reaped.

    kill(-1) from init reaches exactly its own namespace: a ``setsid`` daemon
    included, the toolkit never. As init the worker inherits every orphan, so
    it reaps them, waiting up to ``wait_s`` for the killed to die; one still
    dying after that is collected after the next call.
    """
    with contextlib.suppress(OSError):
        os.kill(-1, signal.SIGKILL)
    deadline = time.monotonic() + wait_s
    reaped = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid:
            reaped += 1
        elif time.monotonic() < deadline:
            time.sleep(REAP_POLL_S)
        else:
            return reaped


NAMESPACE_PROBE = """\
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
flags = 0x00020000 | 0x20000000 | (0 if os.geteuid() == 0 else 0x10000000)
if libc.unshare(flags) != 0:
    sys.exit(os.strerror(ctypes.get_errno()))
"""
"""Run in a fresh interpreter: unsharing in a forked copy of a threaded toolkit is unsafe."""


@functools.lru_cache(maxsize=1)
def namespace_support() -> tuple[bool, str]:
    """Whether this process may create the mount and PID namespaces the worker needs."""
    try:
        probe = subprocess.run(
            [sys.executable, "-I", "-S", "-c", NAMESPACE_PROBE],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"the namespace probe could not run: {exc}"
    if probe.returncode != 0:
        why = probe.stderr.strip().splitlines()[-1:] or [f"status {probe.returncode}"]
        return False, (
            f"mount and PID namespaces are not available here ({why[0]}); "
            "unprivileged user namespaces may be disabled"
        )
    return True, "mount and PID namespaces are available"


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)
