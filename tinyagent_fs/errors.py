"""Structured tool errors.

Every failure a model can cause is a ``ToolError`` with a stable code, a message a
person can read and a hint that tells the model what to try next. Codes are part of
the public surface: agents and audit queries match on them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any


class ErrorCode(str, Enum):
    PATH_OUTSIDE_ROOT = "PATH_OUTSIDE_ROOT"
    SYMLINK_ESCAPE = "SYMLINK_ESCAPE"
    DENIED_PATTERN = "DENIED_PATTERN"
    NULL_BYTE = "NULL_BYTE"
    PATH_TOO_DEEP = "PATH_TOO_DEEP"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    IS_A_DIRECTORY = "IS_A_DIRECTORY"
    NOT_A_DIRECTORY = "NOT_A_DIRECTORY"
    NOT_TEXT = "NOT_TEXT"
    TOO_LARGE = "TOO_LARGE"
    NO_MATCH = "NO_MATCH"
    AMBIGUOUS_MATCH = "AMBIGUOUS_MATCH"
    CONFLICT = "CONFLICT"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    DENIED_BY_HOOK = "DENIED_BY_HOOK"
    RATE_LIMITED = "RATE_LIMITED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    TIMEOUT = "TIMEOUT"
    SANDBOX_UNAVAILABLE = "SANDBOX_UNAVAILABLE"
    SANDBOX_FAILURE = "SANDBOX_FAILURE"
    IO_ERROR = "IO_ERROR"
    INTERNAL_ERROR = "INTERNAL_ERROR"


SECURITY_CODES = frozenset(
    {
        ErrorCode.PATH_OUTSIDE_ROOT,
        ErrorCode.SYMLINK_ESCAPE,
        ErrorCode.DENIED_PATTERN,
        ErrorCode.NULL_BYTE,
        ErrorCode.PERMISSION_DENIED,
    }
)


@dataclass(frozen=True)
class ErrorInfo:
    """The JSON-friendly face of a ToolError, carried inside a ToolResult."""

    code: str
    message: str
    hint: str = ""
    security_violation: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ToolError(Exception):
    """A failure the caller (usually a model) can act on."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        hint: str = "",
        *,
        security_violation: bool | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.security_violation = (
            code in SECURITY_CODES if security_violation is None else security_violation
        )
        self.details = details or {}

    def info(self) -> ErrorInfo:
        return ErrorInfo(
            code=self.code.value,
            message=self.message,
            hint=self.hint,
            security_violation=self.security_violation,
        )

    def __repr__(self) -> str:
        return f"ToolError({self.code.value}, {self.message!r})"
