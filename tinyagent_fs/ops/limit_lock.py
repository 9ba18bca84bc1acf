"""The lock on a command's limits: once set, the command cannot set them again.

A seccomp filter for the command's child, compiled to BPF before the fork so
that the child loads it with one prctl instead of having libseccomp build and
compile it again (0.8 ms a command). pyseccomp is imported lazily by the
caller's first use: importing it runs ldconfig, which a toolkit that never
limits a command should not pay.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
from collections.abc import Sequence

import pyseccomp

PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2


def limit_lock(resources: Sequence[int]) -> pyseccomp.SyscallFilter:
    """A second filter, for a command's child before exec: ``resources`` can no longer be set.

    Lowering a limit needs no privilege, raising a hard one CAP_SYS_RESOURCE,
    which root outside a user namespace holds; so once the worker has set a
    command's limits, setrlimit and prlimit64 with a new value for those
    resources answer EPERM, lowering included. Reading them still works, and
    so does every other resource (``ulimit -n``, ``ulimit -c``).
    """
    deny = pyseccomp.ERRNO(errno.EPERM)
    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    for which in resources:
        rules.add_rule(deny, "setrlimit", pyseccomp.Arg(0, pyseccomp.EQ, which))
        rules.add_rule(
            deny,
            "prlimit64",
            pyseccomp.Arg(1, pyseccomp.EQ, which),
            pyseccomp.Arg(2, pyseccomp.NE, 0),
        )
    return rules


class CompiledLimitLock:
    """``limit_lock`` compiled to BPF before the fork, so that the child loads it with one
    prctl instead of having libseccomp build and compile it again (0.8 ms a command)."""

    def __init__(self, resources: Sequence[int]) -> None:
        program = _compiled(tuple(sorted(resources)))
        self._program = ctypes.create_string_buffer(program, len(program))
        self._fprog = _SockFprog(len(program) // 8, ctypes.addressof(self._program))
        self._prctl = ctypes.CDLL(None, use_errno=True).prctl

    def load(self) -> None:
        """In the child: no new privileges (as libseccomp sets), then the filter."""
        if (
            self._prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            or self._prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(self._fprog), 0, 0)
            != 0
        ):
            raise OSError(ctypes.get_errno(), "the command's limit lock could not be loaded")


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


@functools.lru_cache(maxsize=16)
def _compiled(resources: tuple[int, ...]) -> bytes:
    """The BPF program libseccomp makes of ``limit_lock(resources)``."""
    with os.fdopen(os.memfd_create("limit-lock", os.MFD_CLOEXEC), "w+b") as program:
        limit_lock(resources).export_bpf(program)
        program.seek(0)
        return program.read()
