"""Can this system run the sandboxed worker? Asked before a provider is chosen."""

from __future__ import annotations

import ctypes
import importlib.util
import platform

from . import landlock_rules, namespaces

MIN_LANDLOCK_ABI = 3
"""Before ABI 3 Landlock cannot refuse truncate(2), so any file the user may write,
anywhere, could be emptied from inside: not a sandbox worth the name."""

PR_GET_SECCOMP = 21
LIBSECCOMP = "libseccomp.so.2"
"""Loaded by soname: importing pyseccomp here would run ldconfig in the toolkit
process just to answer a yes/no question."""


def sandbox_support() -> tuple[bool, str]:
    """(True, summary) when Landlock and seccomp are usable here, else (False, why not)."""
    if platform.system() != "Linux":
        return False, f"Landlock is Linux-only; this is {platform.system()}"
    abi = landlock_rules.abi_version()
    if abi == 0:
        return False, (
            "Landlock is not available: the kernel lacks it or it is not enabled "
            "(CONFIG_SECURITY_LANDLOCK and 'landlock' in the lsm= boot parameter)"
        )
    if abi < MIN_LANDLOCK_ABI:
        return False, (
            f"Landlock ABI {abi} is too old: ABI {MIN_LANDLOCK_ABI} (Linux 6.2) is needed "
            "to deny truncation outside the roots"
        )
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0:
        return False, "seccomp is not available in this kernel"
    if importlib.util.find_spec("pyseccomp") is None:
        return False, "pyseccomp is not installed (pip install 'tinyagent-fs[linux]')"
    try:
        ctypes.CDLL(LIBSECCOMP)
    except OSError as exc:
        return False, f"libseccomp cannot be loaded: {exc} (install libseccomp2)"
    usable, reason = namespaces.namespace_support()
    if not usable:
        return False, reason
    return True, f"Landlock ABI {abi}, seccomp and namespaces are available"
