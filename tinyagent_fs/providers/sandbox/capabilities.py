"""Drop every capability of the worker once its mounts are in place.

Run as root, the worker would otherwise keep them all: CAP_FOWNER lets chmod
and utime reach files it does not own, CAP_MKNOD makes devices, CAP_SYS_ADMIN
mounts, CAP_DAC_OVERRIDE ignores file modes. The order matters: the bounding
set and the securebits need CAP_SETPCAP, so they go first, the sets last.
With SECBIT_NOROOT locked, executing anything as uid 0 grants nothing back.
"""

from __future__ import annotations

import ctypes
import errno

from . import kernel_calls as kc

PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECURE_NOROOT = 1 << 0
SECURE_NOROOT_LOCKED = 1 << 1
SECURE_NO_SETUID_FIXUP = 1 << 2
SECURE_NO_SETUID_FIXUP_LOCKED = 1 << 3
SECURE_KEEP_CAPS_LOCKED = 1 << 5
SECURE_NO_CAP_AMBIENT_RAISE = 1 << 6
SECURE_NO_CAP_AMBIENT_RAISE_LOCKED = 1 << 7
LOCKED_SECUREBITS = (
    SECURE_NOROOT
    | SECURE_NOROOT_LOCKED
    | SECURE_NO_SETUID_FIXUP
    | SECURE_NO_SETUID_FIXUP_LOCKED
    | SECURE_KEEP_CAPS_LOCKED
    | SECURE_NO_CAP_AMBIENT_RAISE
    | SECURE_NO_CAP_AMBIENT_RAISE_LOCKED
)
LINUX_CAPABILITY_VERSION_3 = 0x20080522
MAX_CAPABILITIES = 64
"""More than any kernel defines; the first EINVAL ends the bounding-set loop."""


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_all() -> None:
    """Empty the bounding, ambient, effective, permitted and inheritable sets; lock securebits."""
    for cap in range(MAX_CAPABILITIES):
        try:
            kc.libc_call("prctl", ctypes.c_int(PR_CAPBSET_DROP), ctypes.c_ulong(cap), 0, 0, 0)
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            break
    kc.libc_call(
        "prctl", ctypes.c_int(PR_SET_SECUREBITS), ctypes.c_ulong(LOCKED_SECUREBITS), 0, 0, 0
    )
    kc.libc_call(
        "prctl", ctypes.c_int(PR_CAP_AMBIENT), ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0
    )
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    kc.libc_call("capset", ctypes.byref(header), data)


def capability_sets() -> dict[str, int]:
    """CapInh, CapPrm, CapEff, CapBnd and CapAmb of this process, as the kernel reports them."""
    sets: dict[str, int] = {}
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Cap"):
                name, value = line.split(":", 1)
                sets[name] = int(value, 16)
    return sets
