"""The provider boundary: a handful of primitives, each one an entry of ``ops.OPERATIONS``.

Everything a provider runs is named by a string and takes and returns plain values
(str, int, float, bool, None, bytes, lists and dicts of these), so the same table
serves an in-process provider and a sandboxed worker on the far side of a socket.
Planning, review and formatting stay outside the provider.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any


class Provider(ABC):
    """Runs ``ops`` primitives somewhere: in this process or behind a kernel sandbox."""

    name: str = "abstract"
    kernel_enforced: bool = False
    """True when the kernel, not just the path guard, confines what the primitives touch."""
    in_process: bool = False
    """True when the primitives run in this process and get the caller's objects by
    reference: handing a commit the planned old bytes to compare then costs nothing."""

    @abstractmethod
    async def call(self, op: str, **kwargs: Any) -> Any:
        """Run primitive ``op``; a ToolError raised by it reaches the caller unchanged."""

    async def commit(
        self, change_id: str, changes: list[dict[str, Any]], before: Callable[[], None]
    ) -> dict[str, Any]:
        """``commit_changes`` once ``before`` (the undo journal recording the old
        contents) has run: nothing on disk may change until it returns, and when it
        raises, its exception is raised with nothing changed. A provider may run
        ``before`` while its commit does what changes no name on disk: checking the
        planned hashes (a worker), writing the new contents to unnamed files (local)."""
        before()
        report: dict[str, Any] = await self.call(
            "commit_changes", change_id=change_id, changes=changes
        )
        return report

    def bind_roots(self, roots: Iterable[str]) -> None:  # noqa: B027 - optional
        """The folders the toolkit works in; a provider may pin its paths beneath them."""

    async def close(self) -> None:  # noqa: B027 - optional for providers without resources
        """Release what the provider holds (a worker process, sockets)."""

    def describe(self) -> dict[str, Any]:
        return {"provider": self.name, "kernel_enforced": self.kernel_enforced}
