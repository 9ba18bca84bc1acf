"""A budget of requests and bytes per round, so a runaway agent loop stops early."""

from __future__ import annotations

from .errors import ErrorCode, ToolError


class ResourceLimiter:
    """Counts requests and bytes until ``reset()``; exceeding either is RATE_LIMITED.

    A limit of 0 is no limit: a person running a bulk job can switch a budget off.
    """

    def __init__(self, max_requests: int, max_bytes: int) -> None:
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.requests = 0
        self.bytes = 0

    def charge_request(self) -> None:
        if self.max_requests and self.requests >= self.max_requests:
            raise ToolError(
                ErrorCode.RATE_LIMITED,
                f"the limit of {self.max_requests} tool calls for this round is used up",
                "stop and report progress; the person can start a new round",
            )
        self.requests += 1

    def charge_bytes(self, count: int) -> None:
        if self.max_bytes and self.bytes + count > self.max_bytes:
            raise ToolError(
                ErrorCode.RATE_LIMITED,
                f"this call would pass the limit of {self.max_bytes} bytes for this round",
                "read smaller parts (offset/limit) or stop and report progress",
            )
        self.bytes += count

    def reset(self) -> None:
        self.requests = 0
        self.bytes = 0
