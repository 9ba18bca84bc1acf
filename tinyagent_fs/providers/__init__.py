"""Where primitives run: in process (LocalProvider) or in a kernel-enforced sandbox."""

from __future__ import annotations

from pathlib import Path

from ..errors import ErrorCode, ToolError
from ..policy import SandboxPolicy
from .base import Provider
from .local import LocalProvider

__all__ = ["PROVIDER_NAMES", "LocalProvider", "Provider", "default_provider", "make_provider"]

PROVIDER_NAMES = ("auto", "local")


def default_provider(root: Path, policy: SandboxPolicy) -> Provider:
    if policy.require_kernel_sandbox:
        raise ToolError(
            ErrorCode.SANDBOX_UNAVAILABLE,
            "a kernel-enforced sandbox was required but none is available here",
        )
    return LocalProvider()


def make_provider(name: str, root: str | Path, policy: SandboxPolicy | None = None) -> Provider:
    """The provider a command line or config names; "auto" picks the strongest available."""
    chosen = policy or SandboxPolicy()
    if name == "local":
        return LocalProvider()
    if name == "auto":
        return default_provider(Path(root).resolve(), chosen)
    raise ValueError(f"unknown provider {name!r}; choose one of {', '.join(PROVIDER_NAMES)}")
