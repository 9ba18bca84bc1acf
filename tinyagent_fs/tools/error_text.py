"""Provider errors retold for the model: paths relative to the root, no OS internals.

Providers report what the OS said, in their own words: the local provider as
``read_bytes: [Errno 20] Not a directory: '/abs/a.txt/x'``, the sandbox worker as
``/abs/a.txt/x: Not a directory``. A model needs the same short sentence from
both, naming the path the way it named it, and must never learn where the
project lives on disk.
"""

from __future__ import annotations

import errno
import re

from ..errors import ErrorCode, ToolError

_OS_ERROR = re.compile(r"\[Errno (?P<number>\d+)\] (?P<text>[^:]+)")
_NOT_A_DIRECTORY = ("Not a directory", f"[Errno {errno.ENOTDIR}]")


def retold(error: ToolError, absolute: str, shown: str, root: str) -> ToolError:
    """``error`` about ``absolute`` as the model should read it; ``shown`` is its relative name."""
    if error.code is ErrorCode.NOT_FOUND:
        return ToolError(error.code, f"{shown} does not exist", error.hint, details=error.details)
    if any(marker in error.message for marker in _NOT_A_DIRECTORY):
        return ToolError(
            ErrorCode.NOT_A_DIRECTORY,
            f"{shown}: a part of this path is a file, not a folder",
            "check the path with list_directory",
            details=error.details,
        )
    message = error.message
    found = _OS_ERROR.search(message)
    if found is not None:
        message = f"{shown}: {found['text'].strip()}"
    message = message.replace(absolute, shown).replace(root.rstrip("/") + "/", "")
    return ToolError(
        error.code,
        message,
        error.hint,
        security_violation=error.security_violation,
        details=error.details,
    )
