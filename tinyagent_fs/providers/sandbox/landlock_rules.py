"""Landlock through raw syscalls: every right the running ABI knows, nothing less.

Why not a binding: the ``landlock`` package (1.0.0.dev5) only knows
``handled_access_fs``, so it cannot deny TCP bind/connect (ABI 4) or scope
signals and abstract UNIX sockets (ABI 6); it also turns the handled set into
"everything" with no way to ask for the ABI-exact sets we need. The three
syscalls and two structs are small, stable kernel UAPI, so they live here,
with the rights table kept per ABI so an older kernel gets the most it offers
and a newer one is never asked for bits it would reject.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13
TRUNCATE = 1 << 14
IOCTL_DEV = 1 << 15

NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The only rights a rule on a non-directory may carry (the kernel rejects others)."""

READ_RIGHTS = READ_FILE | READ_DIR | EXECUTE
NEVER_GRANTED = MAKE_CHAR | MAKE_BLOCK | IOCTL_DEV
"""Handled but granted nowhere, not even in writable roots: a process with CAP_MKNOD
(root in a container) could otherwise create a disk's device node in the root and
open it, which Landlock would allow because the node lies beneath the root."""
SPECIAL_FILES = MAKE_FIFO | MAKE_SOCK
"""Granted in scratch space only: a FIFO planted where the toolkit (or ripgrep, which
reads every ``.gitignore`` it meets) expects a file would block whoever opens it."""
DEVICE_RW_RIGHTS = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV
TERMINALS = "/dev/pts"
"""The worker's private devpts: every session's terminal lives here."""


def fs_rights_for(abi: int) -> int:
    """Filesystem rights ABI ``abi`` handles: v1 bits 0-12, REFER v2, TRUNCATE v3, IOCTL_DEV v5."""
    if abi < 1:
        return 0
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def net_rights_for(abi: int) -> int:
    return NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0


def scopes_for(abi: int) -> int:
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


_libc: ctypes.CDLL | None = None


def _syscall(number: int, *args: object) -> int:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    result = int(_libc.syscall(ctypes.c_long(number), *args))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def abi_version() -> int:
    """The Landlock ABI of the running kernel; 0 when Landlock is missing or disabled."""
    try:
        return _syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except OSError:
        return 0


def set_no_new_privs() -> None:
    """Required by both landlock_restrict_self and an unprivileged seccomp filter."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")


@dataclass(frozen=True)
class LandlockRules:
    """Where the sandboxed process may go.

    ``writable`` gets every handled right but device creation, device ioctls and
    FIFO/socket creation (beneath it: create, remove, rename, link, truncate,
    execute); ``scratch`` (the private TMPDIR) may hold FIFOs and sockets too; ``readable``
    gets read and execute; ``devices`` (e.g. /dev/null) get read, write,
    truncate and device ioctls on that node only.
    Paths that do not exist are skipped and listed in the status.
    """

    writable: tuple[str, ...]
    readable: tuple[str, ...]
    scratch: tuple[str, ...] = ()
    devices: tuple[str, ...] = ("/dev/null", "/dev/tty", "/dev/pts")
    """``/dev/tty`` is the opener's own terminal: a session's, and none for a command
    (the worker has no controlling terminal: ENXIO)."""
    read_only_devices: tuple[str, ...] = ("/dev/urandom", "/dev/random", "/dev/zero")


@dataclass(frozen=True)
class LandlockStatus:
    """What the kernel accepted; the worker reports it so the parent can check it."""

    abi: int
    handled_fs: int
    handled_net: int
    scoped: int
    skipped: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {
            "abi": self.abi,
            "handled_fs": self.handled_fs,
            "handled_net": self.handled_net,
            "scoped": self.scoped,
            "skipped": list(self.skipped),
        }


def restrict_self(rules: LandlockRules) -> LandlockStatus:
    """Confine the calling thread and its future children; raises OSError when refused.

    Call it with no other thread alive: Landlock binds the calling thread only.
    TCP bind/connect are handled with no rule, so both are denied outright.
    """
    abi = abi_version()
    if abi < 1:
        raise OSError(0, "Landlock is not available in this kernel")
    handled_fs = fs_rights_for(abi)
    attr = _RulesetAttr(handled_fs, net_rights_for(abi), scopes_for(abi))
    attr_size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset_fd = _syscall(
        SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(attr_size), ctypes.c_uint32(0)
    )
    skipped: list[str] = []
    try:
        grants = (
            [(path, handled_fs & ~NEVER_GRANTED & ~SPECIAL_FILES) for path in rules.writable]
            + [(path, handled_fs & ~NEVER_GRANTED) for path in rules.scratch]
            + [(path, READ_RIGHTS) for path in rules.readable]
            + [(path, DEVICE_RW_RIGHTS) for path in rules.devices]
            + [(path, READ_FILE) for path in rules.read_only_devices]
        )
        for path, rights in grants:
            if not _add_path_rule(ruleset_fd, path, rights & handled_fs):
                skipped.append(path)
        set_no_new_privs()
        _syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset_fd), ctypes.c_uint32(0))
    finally:
        os.close(ruleset_fd)
    global _applied
    _applied = rules
    return LandlockStatus(abi, handled_fs, attr.handled_access_net, attr.scoped, tuple(skipped))


_applied: LandlockRules | None = None
"""The rules this process confined itself with (inherited by its forks)."""


def scope_self() -> int:
    """Put the calling process (and its future children) in a Landlock domain of its
    own, nested in the current one, that restricts no path: from it no process can
    signal, ``/proc/PID/mem``-read or connect to an abstract socket of a process
    outside it (ABI 6 scopes; below ABI 6 only the ptrace-style access is cut off).
    One per interactive session keeps sessions apart. Returns the scopes applied."""
    abi = abi_version()
    if abi < 1:
        raise OSError(0, "Landlock is not available in this kernel")
    scoped = scopes_for(abi)
    _restrict(_RulesetAttr(0 if scoped else MAKE_BLOCK, 0, scoped), abi, [])
    return scoped


def scope_apart(own_terminal: str | None) -> int:
    """``scope_self`` that also cuts the process off every terminal but ``own_terminal``.

    Sessions share the worker's devpts, and a terminal device is a door into its
    session: writing to it shows text there, reading it takes what a person types,
    its settings (``stty -F``) turn typed keys into signals. Scopes do not cover
    that, so this domain handles reading, writing, truncating and ioctls of files
    and grants them wherever the worker's own rules grant anything, except beneath
    ``TERMINALS``; ``own_terminal`` (a session's) is granted alone. A process that
    was not confined by ``restrict_self`` cannot be cut off this way and is refused.
    """
    abi = abi_version()
    if _applied is None or abi < 6:
        raise OSError(0, "no Landlock confinement to keep terminals apart in")
    rules = _applied
    granted = [
        path
        for path in (
            *rules.writable,
            *rules.scratch,
            *rules.readable,
            *rules.devices,
            *rules.read_only_devices,
        )
        if not _reaches(path, TERMINALS)
    ]
    if own_terminal is not None:
        if os.path.dirname(own_terminal) != TERMINALS:
            raise OSError(0, f"{own_terminal!r} is not a session terminal")
        granted.append(own_terminal)
    scoped = scopes_for(abi)
    handled = DEVICE_RW_RIGHTS & fs_rights_for(abi)  # a terminal's text both ways, its settings
    _restrict(_RulesetAttr(handled, 0, scoped), abi, [(path, handled) for path in granted])
    return scoped


def _reaches(path: str, target: str) -> bool:
    """Whether a rule on ``path`` would cover ``target`` (or anything beneath it)."""
    path = path.rstrip("/") or "/"
    return (
        path == "/"
        or target == path
        or target.startswith(path + "/")
        or (path.startswith(target + "/"))
    )


def _restrict(attr: _RulesetAttr, abi: int, grants: list[tuple[str, int]]) -> None:
    """Create a ruleset from ``attr`` and ``grants`` and enter it; a grant on a path
    that exists but cannot be added fails it all (a missing path grants nothing)."""
    attr_size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset_fd = _syscall(
        SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(attr_size), ctypes.c_uint32(0)
    )
    try:
        for path, rights in grants:
            _add_path_rule(ruleset_fd, path, rights)
        set_no_new_privs()
        _syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset_fd), ctypes.c_uint32(0))
    finally:
        os.close(ruleset_fd)


def _add_path_rule(ruleset_fd: int, path: str, rights: int) -> bool:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_RIGHTS
        rule = _PathBeneathAttr(rights, fd)
        _syscall(
            SYS_ADD_RULE,
            ctypes.c_int(ruleset_fd),
            ctypes.c_int(RULE_PATH_BENEATH),
            ctypes.byref(rule),
            ctypes.c_uint32(0),
        )
    finally:
        os.close(fd)
    return True


def existing(paths: Iterable[str]) -> tuple[str, ...]:
    """``paths`` that exist, in order and without duplicates."""
    seen: dict[str, None] = {}
    for path in paths:
        if path not in seen and os.path.exists(path):
            seen[path] = None
    return tuple(seen)
