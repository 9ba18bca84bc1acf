"""What a tool's code gets to work with: the guard, the provider, limits, read state."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._runtime.digest import same_as
from ..changes.changeset import content_hash
from ..errors import ErrorCode, ToolError
from ..guard.path_guard import PathGuard
from ..journal.undo_journal import UndoJournal
from ..limits import ResourceLimiter
from ..policy import SandboxPolicy
from ..providers.base import Provider
from ..text.codec import DecodedText, decode_text
from .error_text import retold

IDENTITY = "identity:"
"""Marks a ``ReadState`` entry that holds a file identity instead of a content hash."""


@dataclass
class ReadState:
    """The content hash of each file as the toolkit last read or wrote it.

    A change planned against a file whose bytes differ from what the model last
    saw would silently discard someone else's edit: that is a CONFLICT.

    A file the model saw only through line windows was never read whole, so it
    is remembered by its identity (``ops.files.file_identity``) until a change
    reads it whole; ``ToolContext.check_unchanged`` then turns that into a hash.
    """

    seen: dict[Path, str] = field(default_factory=dict)
    latest: tuple[Path, bytes, str, DecodedText | None] | None = None
    """The last content remembered, with its path, digest and decoding when known: a
    change usually reads back the file the model just read or the toolkit just
    wrote, and comparing those bytes costs far less than hashing them (see
    ``recognise``), as taking that decoding costs less than decoding them again.
    One only, so that the memory held stays one file's worth."""

    def remember(
        self,
        path: Path,
        data: bytes | None,
        digest: str | None = None,
        decoded: DecodedText | None = None,
    ) -> None:
        """``digest``: ``content_hash(data)``, when the caller has it already;
        ``decoded``: ``decode_text(data)``, when the caller has it."""
        if data is None:
            self.seen.pop(path, None)
            if self.latest is not None and self.latest[0] == path:
                self.latest = None
        else:
            digest = digest if digest is not None else content_hash(data)
            self.seen[path] = digest
            self.latest = (path, data, digest, decoded)

    def last_seen(self, path: Path) -> bytes | None:
        """The bytes the model last saw in ``path`` (read whole, or written by the
        toolkit), if they are the ones kept in ``latest``."""
        latest = self.latest
        if latest is None or latest[0] != path:
            return None
        return latest[1] if self.seen.get(path) == latest[2] else None

    def decoded(self, path: Path, data: bytes) -> DecodedText | None:
        """``decode_text(data)`` if it is known: ``data`` is the content last remembered
        for ``path``, with its decoding."""
        latest = self.latest
        if latest is None or latest[0] != path or latest[1] is not data:
            return None
        return latest[3]

    def recognise(self, path: Path, data: bytes | None) -> None:
        """``data`` was just read from ``path``: if it equals the content last
        remembered for it, it takes that content's digest without hashing."""
        if self.latest is not None and self.latest[0] == path:
            same_as(data, self.latest[1], self.latest[2])

    def remember_window(self, path: Path, proof: dict[str, Any]) -> None:
        """What a window read vouches for: the file's content hash, or its identity."""
        digest = proof.get("sha256")
        self.seen[path] = digest if isinstance(digest, str) else IDENTITY + str(proof["identity"])

    def identity_of(self, path: Path) -> str | None:
        known = self.seen.get(path)
        return known[len(IDENTITY) :] if known and known.startswith(IDENTITY) else None

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

    def resolve_all(self, raws: list[str], *, for_write: bool = False) -> list[Path]:
        return self.guard.resolve_all(raws, for_write=for_write)

    def relative(self, path: Path) -> str:
        return self.guard.relative(path)

    async def stat(self, path: Path) -> dict[str, Any] | None:
        return await self.provider.call("stat_path", path=str(path))

    async def stat_each(self, paths: list[Path]) -> list[dict[str, Any] | None]:
        """``stat`` of every path, in one provider call (one round trip to a worker)."""
        if not paths:
            return []
        found: list[dict[str, Any] | None] = await self.provider.call(
            "stat_paths", paths=[str(path) for path in paths]
        )
        return found

    async def missing_directories(self, path: Path) -> list[Path]:
        """``path`` and its parents that do not exist yet, outermost first."""
        return await self.missing_folders([path])

    async def missing_folders(self, folders: list[Path]) -> list[Path]:
        """Each folder and its parents that do not exist yet, outermost first, without
        repeats: every folder looked up once, and each level of parents in one provider
        call (a patch names hundreds of files in dozens of folders).

        Plans create them explicitly (MKDIR changes) so that review shows them and
        undo removes them again.
        """
        absent: set[Path] = set()
        level = [folder for folder in dict.fromkeys(folders) if folder != self.root]
        asked = set(level)
        while level:
            parents: list[Path] = []
            for folder, info in zip(level, await self.stat_each(level), strict=True):
                if not self._is_folder(folder, info):
                    absent.add(folder)
                    if folder.parent not in (self.root, folder):
                        parents.append(folder.parent)
            level = [parent for parent in dict.fromkeys(parents) if parent not in asked]
            asked.update(level)
        chains: list[Path] = []
        for folder in folders:
            chain: list[Path] = []
            while folder in absent:
                chain.append(folder)
                folder = folder.parent
            chains.extend(reversed(chain))
        return list(dict.fromkeys(chains))

    def _is_folder(self, path: Path, info: dict[str, Any] | None) -> bool:
        """Whether ``info`` (``path``'s stat) shows a folder; False when nothing is
        there, NOT_A_DIRECTORY when something else is."""
        if info is None:
            return False
        if info["type"] != "directory":
            raise ToolError(
                ErrorCode.NOT_A_DIRECTORY,
                f"{self.relative(path)} exists and is not a directory",
            )
        return True

    async def read_bytes(self, path: Path, max_bytes: int | None = None) -> bytes:
        limit = max_bytes or self.policy.max_file_bytes
        data: bytes = await self._read(path, "read_bytes", max_bytes=limit)
        self.limiter.charge_bytes(len(data))
        return data

    async def read_window(self, path: Path, **request: Any) -> dict[str, Any]:
        """The provider's ``read_window`` answer; only the bytes it returns are charged."""
        found: dict[str, Any] = await self._read(path, "read_window", **request)
        self.limiter.charge_bytes(len(found.get("whole", found.get("lines", b""))))
        return found

    async def _read(self, path: Path, op: str, **kwargs: Any) -> Any:
        try:
            return await self.provider.call(op, path=str(path), **kwargs)
        except ToolError as error:
            raise retold(error, str(path), self.relative(path), str(self.root)) from None

    async def check_unchanged(self, path: Path, data: bytes | None) -> None:
        """CONFLICT if ``path`` changed since the model last read it; ``data`` is what
        it holds now, read just before this call.

        A file known by identity is stat'ed after ``data`` was read: an unchanged
        identity then vouches for ``data``, and a write in between shows.
        """
        identity = self.read_state.identity_of(path)
        if identity is not None and data is not None:
            info = await self.stat(path)
            if info is not None and info.get("identity") == identity:
                self.read_state.remember(path, data)
        self.read_state.check_unchanged(path, data, self.relative(path))

    async def read_existing(self, path: Path) -> bytes | None:
        """The file's bytes, or None when nothing is there (for plans that may create it)."""
        try:
            data = await self.read_bytes(path)
        except ToolError as error:
            if error.code is ErrorCode.NOT_FOUND:
                return None
            raise
        self.read_state.recognise(path, data)
        return data

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
        for path, data in zip(paths, found, strict=True):
            if data is not None:
                self.limiter.charge_bytes(len(data))
                self.read_state.recognise(path, data)
        return found

    async def read_text(self, path: Path) -> tuple[bytes, DecodedText]:
        data = await self.read_bytes(path)
        return data, decode_text(data, self.relative(path))
