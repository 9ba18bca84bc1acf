"""Where primitives run: in process (LocalProvider) or in a kernel-enforced sandbox."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ErrorCode, ToolError
from ..policy import SandboxPolicy
from .base import Provider

if TYPE_CHECKING:
    from .local import LocalProvider

__all__ = [
    "PROVIDER_NAMES",
    "LocalProvider",
    "Provider",
    "SandboxUnavailableWarning",
    "default_provider",
    "make_provider",
]

PROVIDER_NAMES = ("auto", "linux-sandbox", "local")


def __getattr__(name: str) -> Any:
    """``LocalProvider`` on first use: the sandbox worker imports this package on its way
    to ``worker`` and would otherwise import asyncio it never uses (about 20 ms of every
    worker's start-up)."""
    if name == "LocalProvider":
        from .local import LocalProvider

        return LocalProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class SandboxUnavailableWarning(RuntimeWarning):
    """The kernel sandbox is missing: only the path guard confines the tools."""


def linux_sandbox(root: Path, policy: SandboxPolicy) -> Provider:
    from .linux import LinuxSandboxProvider

    usable, reason = LinuxSandboxProvider.available()
    if not usable:
        raise ToolError(
            ErrorCode.SANDBOX_UNAVAILABLE,
            f"the Linux kernel sandbox is not available here: {reason}",
            "use the local provider, or run on Linux 5.19+ with Landlock and libseccomp2",
        )
    return LinuxSandboxProvider(root, policy)


def default_provider(root: Path, policy: SandboxPolicy) -> Provider:
    """The Landlock + seccomp worker where the kernel offers it, else LocalProvider
    with a loud warning (an error when the policy requires the kernel sandbox)."""
    try:
        return linux_sandbox(root, policy)
    except ToolError as error:
        if policy.require_kernel_sandbox:
            raise
        warnings.warn(
            f"{error.message}; falling back to LocalProvider: only the path guard "
            "confines file tools, and run_command is refused unless the policy sets "
            "allow_unconfined_commands",
            SandboxUnavailableWarning,
            stacklevel=3,
        )
        from .local import LocalProvider

        return LocalProvider(policy.max_sessions)


def make_provider(name: str, root: str | Path, policy: SandboxPolicy | None = None) -> Provider:
    """The provider a command line or config names; "auto" picks the strongest available."""
    chosen = policy or SandboxPolicy()
    resolved = Path(root).resolve()
    if name == "local":
        from .local import LocalProvider

        return LocalProvider(chosen.max_sessions)
    if name == "linux-sandbox":
        return linux_sandbox(resolved, chosen)
    if name == "auto":
        return default_provider(resolved, chosen)
    raise ValueError(f"unknown provider {name!r}; choose one of {', '.join(PROVIDER_NAMES)}")
