"""The worker's seccomp filter: allow by default, refuse the syscalls that reach past Landlock.

Landlock confines paths, TCP ports, signals and abstract sockets; it says nothing
about UDP, raw or netlink sockets, io_uring (which bypasses the syscall layer
this filter sees), ptrace-style memory access, or the kernel-wide knobs a root
process in a container still holds. Those are refused here with EPERM rather
than a kill, so a command sees an ordinary error and tests can observe it.
System V IPC is refused too: its segments and queues are shared with every
process of the host's IPC namespace and Landlock does not look at them.

Sockets: ``socket()`` is refused for every family, AF_UNIX included, and only
``socketpair(AF_UNIX)`` remains (pipes between processes of the sandbox). Up
to ABI 7 Landlock does not check ``connect()`` to a *pathname* UNIX socket, so
an AF_UNIX ``socket()`` would reach any daemon listening outside the roots —
``/var/run/docker.sock`` is root on the host, a session bus can start programs.

Other processes: a command may change limits, priority and scheduling of
itself only (pid or ``who`` 0). As root it could otherwise set RLIMIT_FSIZE=0
on the toolkit (whose audit log would stop growing), renice every process of
root, or pin the toolkit to one CPU; Landlock does not look at any of these.

Built with ``pyseccomp`` (ctypes over libseccomp): libseccomp resolves syscall
names per architecture and adds the architecture and x32 checks a hand-written
BPF program would have to get right by itself.
"""

from __future__ import annotations

import ctypes
import errno
import socket
from typing import Any

import pyseccomp

DENIED_SYSCALLS: tuple[str, ...] = (
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "fanotify_init",
    "open_by_handle_at",
    "name_to_handle_at",
    "keyctl",
    "add_key",
    "request_key",
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "iopl",
    "ioperm",
    "syslog",
    "shmget",
    "shmat",
    "shmctl",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
)
"""Refused with EPERM. Names the running libseccomp or architecture lacks are skipped."""

NAMESPACE_CLONE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)
"""clone() flags that would create namespaces; unshare and setns are refused as well."""

SELF_ONLY_SYSCALLS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("prlimit64", (0,)),
    ("sched_setaffinity", (0,)),
    ("sched_setscheduler", (0,)),
    ("sched_setparam", (0,)),
    ("sched_setattr", (0,)),
    ("migrate_pages", (0,)),
    ("move_pages", (0,)),
    ("setpriority", (0, 1)),
    ("getpriority", (0, 1)),
)
"""Syscalls refused unless every listed argument is 0 (the caller itself): for
prlimit64 and the sched/page calls that is the pid; for set/getpriority both
``which`` (PRIO_PROCESS) and ``who``."""
IOPRIO_WHO_PROCESS = 1

PR_GET_SECCOMP = 21
SECCOMP_MODE_FILTER = 2


def install_filter() -> list[str]:
    """Load the filter into the calling thread (and its future children).

    Returns the syscall names that were skipped because this system does not
    know them. clone3 answers ENOSYS, not EPERM: its flags sit behind a pointer
    the filter cannot read, and ENOSYS makes libc fall back to clone(), whose
    flags the filter does check.
    """
    deny = pyseccomp.ERRNO(errno.EPERM)
    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    rules.add_rule(deny, "socket")
    rules.add_rule(deny, "socketpair", pyseccomp.Arg(0, pyseccomp.NE, socket.AF_UNIX))
    for flag in NAMESPACE_CLONE_FLAGS:
        rules.add_rule(deny, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag))
    rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    skipped: list[str] = []
    for name, self_args in SELF_ONLY_SYSCALLS:
        for arg in self_args:
            _add_or_skip(rules, deny, name, skipped, pyseccomp.Arg(arg, pyseccomp.NE, 0))
    _add_or_skip(
        rules, deny, "ioprio_set", skipped, pyseccomp.Arg(0, pyseccomp.NE, IOPRIO_WHO_PROCESS)
    )
    _add_or_skip(rules, deny, "ioprio_set", skipped, pyseccomp.Arg(1, pyseccomp.NE, 0))
    for name in DENIED_SYSCALLS:
        _add_or_skip(rules, deny, name, skipped)
    rules.load()
    return list(dict.fromkeys(skipped))


def _add_or_skip(
    rules: pyseccomp.SyscallFilter, action: Any, name: str, skipped: list[str], *args: Any
) -> None:
    """Add one rule; a syscall this libseccomp or architecture does not know is noted, not fatal."""
    try:
        rules.add_rule(action, name, *args)
    except (OSError, ValueError):
        skipped.append(name)


def filter_mode() -> int:
    """The calling thread's seccomp mode as the kernel reports it (2: a filter is on)."""
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(PR_GET_SECCOMP, 0, 0, 0, 0))
