"""In-process provider: the path guard is the only wall."""

from __future__ import annotations

from typing import Any

from ..errors import ErrorCode, ToolError
from ..ops import OPERATIONS
from .base import Provider


class LocalProvider(Provider):
    """Runs primitives inline; fast, portable, and not kernel-enforced.

    Primitives are plain blocking calls: a local stat or read is far cheaper than
    a hop to a thread pool, and long-running ones (grep, commands) spawn
    subprocesses of their own.
    """

    name = "local"
    kernel_enforced = False

    async def call(self, op: str, **kwargs: Any) -> Any:
        try:
            operation = OPERATIONS[op]
        except KeyError:
            raise ToolError(
                ErrorCode.INTERNAL_ERROR, f"unknown provider operation {op!r}"
            ) from None
        try:
            return operation(**kwargs)
        except PermissionError as exc:
            raise ToolError(
                ErrorCode.PERMISSION_DENIED, f"{op}: {exc}", security_violation=False
            ) from None
        except OSError as exc:
            raise ToolError(ErrorCode.IO_ERROR, f"{op}: {exc}") from None
