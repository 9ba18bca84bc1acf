"""What a tool's code gets to work with: the guard, the provider, limits, read state."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..changes import content_hash
from ..errors import ErrorCode, ToolError
from ..guard import PathGuard
from ..journal import UndoJournal
from ..limits import ResourceLimiter
from ..policy import SandboxPolicy
from ..providers.base import Provider
from ..text import DecodedText, decode_text
from .error_text import retold


@dataclass
class ReadState:
    """The content hash of each file as the toolkit last read or wrote it.

    A change planned against a file whose bytes differ from what the model last
    saw would silently discard someone else's edit: that is a CONFLICT.
    """

    seen: dict[Path, str] = field(default_factory=dict)

    def remember(self, path: Path, data: bytes | None) -> None:
        if data is None:
            self.seen.pop(path, None)
        else:
            self.seen[path] = content_hash(data)

    def check_unchanged(self, path: Path, data: bytes | None, shown_as: str) -> None:
        known = self.seen.get(path)
        if known is not None and known != content_hash(data):
            raise ToolError(
                ErrorCode.CONFLICT,
                f"{shown_as} changed on disk since you last read it",
                f"read {shown_as} again and redo the change against its current content",
                details={"path": shown_as},
            )


@dataclass
class ToolContext:
    guard: PathGuard
    provider: Provider
    policy: SandboxPolicy
    limiter: ResourceLimiter
    journal: UndoJournal | None = None
    read_state: ReadState = field(default_factory=ReadState)

    @property
    def root(self) -> Path:
        return self.guard.root

    def resolve(self, raw: str, *, for_write: bool = False) -> Path:
        return self.guard.resolve(raw, for_write=for_write)

    def relative(self, path: Path) -> str:
        return self.guard.relative(path)

    async def stat(self, path: Path) -> dict[str, Any] | None:
        return await self.provider.call("stat_path", path=str(path))

    async def missing_directories(self, path: Path) -> list[Path]:
        """``path`` and its parents that do not exist yet, outermost first.

        Plans create them explicitly (MKDIR changes) so that review shows them and
        undo removes them again.
        """
        missing: list[Path] = []
        current = path
        while current != self.root:
            info = await self.stat(current)
            if info is not None:
                if info["type"] != "directory":
                    raise ToolError(
                        ErrorCode.NOT_A_DIRECTORY,
                        f"{self.relative(current)} exists and is not a directory",
                    )
                break
            missing.append(current)
            current = current.parent
        return missing[::-1]

    async def read_bytes(self, path: Path, max_bytes: int | None = None) -> bytes:
        try:
            data: bytes = await self.provider.call(
                "read_bytes", path=str(path), max_bytes=max_bytes or self.policy.max_file_bytes
            )
        except ToolError as error:
            raise retold(error, str(path), self.relative(path), str(self.root)) from None
        self.limiter.charge_bytes(len(data))
        return data

    async def read_existing(self, path: Path) -> bytes | None:
        """The file's bytes, or None when nothing is there (for plans that may create it)."""
        try:
            return await self.read_bytes(path)
        except ToolError as error:
            if error.code is ErrorCode.NOT_FOUND:
                return None
            raise

    async def read_existing_files(self, paths: list[Path]) -> list[bytes | None]:
        """``read_existing`` of each path, in one provider call (one round trip to a
        sandboxed worker). When that call fails the files are read one by one, so the
        error is the one ``read_existing`` gives, naming the file it is about."""
        try:
            found: list[bytes | None] = await self.provider.call(
                "read_files",
                paths=[str(path) for path in paths],
                max_bytes=self.policy.max_file_bytes,
            )
        except ToolError:
            return [await self.read_existing(path) for path in paths]
        for data in found:
            if data is not None:
                self.limiter.charge_bytes(len(data))
        return found

    async def read_text(self, path: Path) -> tuple[bytes, DecodedText]:
        data = await self.read_bytes(path)
        return data, decode_text(data, self.relative(path))
