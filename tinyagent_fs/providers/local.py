"""In-process provider: the path guard is the only wall."""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import ErrorCode, ToolError
from ..ops import OPERATIONS
from .base import Provider

BLOCKING_OPERATIONS = frozenset({"grep", "glob_files", "list_tree", "walk_all", "run_command"})


class LocalProvider(Provider):
    """Runs primitives inline; fast, portable, and not kernel-enforced.

    A local stat, read or commit is far cheaper than a hop to a thread pool, so
    those run inline; searches and commands, which can take seconds, run on a
    thread so the event loop (a notebook kernel, say) stays responsive.
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
            if op in BLOCKING_OPERATIONS:
                return await asyncio.to_thread(operation, **kwargs)
            return operation(**kwargs)
        except PermissionError as exc:
            raise ToolError(
                ErrorCode.PERMISSION_DENIED, f"{op}: {exc}", security_violation=False
            ) from None
        except OSError as exc:
            raise ToolError(ErrorCode.IO_ERROR, f"{op}: {exc}") from None
