"""The undo journal: old bytes of every committed change, kept outside the project.

Each ChangeSet is written here *before* it is committed (status ``pending``) and
marked ``committed`` after. A pending entry found later means a commit was killed
half-way: :meth:`UndoJournal.pending` hands it to recovery, which puts every file
back as it was. The directory lives in the per-user state directory, never under
a path the sandboxed worker may write, so nothing an agent runs can rewrite it.

It is still not trusted blindly, because undo writes whatever an entry says:
a ``change_id`` must have exactly the form the toolkit generates (so it cannot
name a folder elsewhere, e.g. a manifest an agent wrote into the project), and
every manifest carries an HMAC, under a per-journal key kept 0600 beside the
entries, over its content and the SHA-256 of each stored old-bytes file. An
entry that does not verify is refused, never planned from.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .changes import ChangeSet, content_hash
from .errors import ErrorCode, ToolError

JOURNAL_ENV = "TINYAGENT_FS_JOURNAL_DIR"
KEEP_ENTRIES = 200
PRUNE_SLACK = KEEP_ENTRIES // 10
"""Entries allowed above ``KEEP_ENTRIES`` before a prune: pruning reads every
manifest, so doing it in batches keeps a commit's journal cost flat."""
CHANGE_ID_FORMAT = re.compile(r"[0-9a-f]{12}")
"""What ``ChangeSet`` generates (``uuid4().hex[:12]``), and the only names accepted."""
KEY_FILE_NAME = ".key"
_KEY_BYTES = 32


class ForgedEntry(ToolError):
    """A journal entry whose HMAC or stored bytes do not verify."""

    def __init__(self, change_id: str) -> None:
        super().__init__(
            ErrorCode.PERMISSION_DENIED,
            f"The undo journal entry {change_id} does not verify (forged or modified); "
            "it is not used.",
            "Only changes made through these tools can be undone.",
        )


def check_change_id(change_id: object) -> str:
    """``change_id`` if it has the generated form; INVALID_ARGUMENT otherwise."""
    if not isinstance(change_id, str) or not CHANGE_ID_FORMAT.fullmatch(change_id):
        shown = repr(change_id)[:40]
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"{shown} is not a change id; ids are 12 lowercase hex digits.",
            "Take the change_id from a mutating tool's result data, or omit it for the latest.",
        )
    return change_id


@dataclass(frozen=True)
class JournalFile:
    kind: str
    path: str
    dest: str | None
    old_bytes: bytes | None
    new_hash: str
    dest_old_bytes: bytes | None
    mode: int | None


@dataclass(frozen=True)
class JournalEntry:
    change_id: str
    tool: str
    status: str
    created: float
    files: tuple[JournalFile, ...]
    undone_by: str | None = None


def default_journal_dir(root: Path) -> Path:
    """``$TINYAGENT_FS_JOURNAL_DIR`` or the per-user state dir, one folder per root."""
    base = os.environ.get(JOURNAL_ENV)
    if base:
        parent = Path(base)
    else:
        state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        parent = Path(state) / "tinyagent-fs" / "journal"
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    return parent / f"{root.name or 'root'}-{digest}"


class UndoJournal:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._key: bytes | None = None

    def begin(self, changeset: ChangeSet) -> None:
        """Keep the old bytes of every file before the commit touches any of them."""
        folder = self.directory / check_change_id(changeset.change_id)
        folder.mkdir(parents=True, mode=0o700, exist_ok=True)
        files = []
        for index, change in enumerate(changeset.changes):
            files.append(
                {
                    "kind": change.kind.value,
                    "path": str(change.path),
                    "dest": str(change.dest) if change.dest is not None else None,
                    "old": _store(folder, f"{index}.old", change.old_bytes),
                    "old_sha": _sha(change.old_bytes),
                    "dest_old": _store(folder, f"{index}.dest", change.dest_old_bytes),
                    "dest_sha": _sha(change.dest_old_bytes),
                    "new_hash": content_hash(change.new_bytes),
                    "mode": change.mode,
                }
            )
        manifest = {
            "change_id": changeset.change_id,
            "tool": changeset.tool,
            "status": "pending",
            "created": time.time(),
            "files": files,
            "undone_by": None,
        }
        self._write_manifest(changeset.change_id, manifest)

    def finish(self, change_id: str) -> None:
        self._update(change_id, status="committed")
        self._prune()

    def abandon(self, change_id: str) -> None:
        """The commit failed cleanly: nothing changed, nothing to keep."""
        shutil.rmtree(self.directory / check_change_id(change_id), ignore_errors=True)

    def mark_undone(self, change_id: str, undone_by: str) -> None:
        self._update(change_id, undone_by=undone_by)

    def get(self, change_id: str) -> JournalEntry | None:
        """The entry, None if there is none; a malformed id or a forged entry is an error."""
        manifest = self._read_manifest(check_change_id(change_id))
        return None if manifest is None else _entry(self.directory / change_id, manifest)

    def last_undoable(self) -> JournalEntry | None:
        for manifest in reversed(self._manifests()):
            if manifest["status"] == "committed" and manifest.get("undone_by") is None:
                return _entry(self.directory / manifest["change_id"], manifest)
        return None

    def pending(self) -> list[JournalEntry]:
        """Entries of interrupted commits; one that does not verify is skipped, not used."""
        entries = []
        for manifest in self._manifests():
            if manifest["status"] == "pending":
                try:
                    entries.append(_entry(self.directory / manifest["change_id"], manifest))
                except ForgedEntry:
                    continue
        return entries

    def _manifests(self) -> list[dict[str, Any]]:
        """Every entry's manifest (not its stored bytes), oldest first."""
        if not self.directory.is_dir():
            return []
        out = []
        for child in self.directory.iterdir():
            if not CHANGE_ID_FORMAT.fullmatch(child.name):
                continue
            try:
                manifest = self._read_manifest(child.name)
            except ForgedEntry:
                continue
            if manifest is not None:
                out.append(manifest)
        return sorted(out, key=lambda m: m["created"])

    def _read_manifest(self, change_id: str) -> dict[str, Any] | None:
        """The verified manifest; None when absent, ``ForgedEntry`` when it does not verify."""
        try:
            signed = json.loads((self.directory / change_id / "manifest.json").read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ForgedEntry(change_id) from exc
        if not isinstance(signed, dict) or not isinstance(signed.get("manifest"), dict):
            raise ForgedEntry(change_id)
        manifest: dict[str, Any] = signed["manifest"]
        expected = self._mac(manifest)
        if not hmac.compare_digest(str(signed.get("mac", "")), expected):
            raise ForgedEntry(change_id)
        if manifest.get("change_id") != change_id:
            raise ForgedEntry(change_id)
        return manifest

    def _mac(self, manifest: dict[str, Any]) -> str:
        canonical = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
        return hmac.new(self._journal_key(), canonical, hashlib.sha256).hexdigest()

    def _journal_key(self) -> bytes:
        """The per-journal secret, created 0600 on first use; a key that is not a
        private regular file of ours is refused rather than trusted."""
        if self._key is not None:
            return self._key
        self.directory.mkdir(parents=True, mode=0o700, exist_ok=True)
        path = self.directory / KEY_FILE_NAME
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        if not path.exists():
            # Written whole under a temporary name, then linked into place: a process
            # killed half-way leaves no empty key, and of two racing creators one wins.
            staged = self.directory / f"{KEY_FILE_NAME}.{secrets.token_hex(8)}"
            fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(secrets.token_bytes(_KEY_BYTES))
                    handle.flush()
                    os.fsync(handle.fileno())
                with contextlib.suppress(FileExistsError):
                    os.link(staged, path)
            finally:
                staged.unlink()
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077:
                raise ToolError(
                    ErrorCode.PERMISSION_DENIED,
                    f"The undo journal key {path} is not a private regular file.",
                    "Remove the journal directory; undo history starts afresh.",
                )
            key = handle.read(_KEY_BYTES + 1)
        if len(key) != _KEY_BYTES:
            raise ToolError(ErrorCode.PERMISSION_DENIED, f"The undo journal key {path} is damaged.")
        self._key = key
        return key

    def _write_manifest(self, change_id: str, manifest: dict[str, Any]) -> None:
        folder = self.directory / change_id
        staged = folder / "manifest.json.tmp"
        signed = {"manifest": manifest, "mac": self._mac(manifest)}
        with open(staged, "w", encoding="utf-8") as handle:
            json.dump(signed, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(staged, folder / "manifest.json")

    def _update(self, change_id: str, **fields: Any) -> None:
        manifest = self._read_manifest(check_change_id(change_id))
        if manifest is not None:
            manifest.update(fields)
            self._write_manifest(change_id, manifest)

    def _prune(self) -> None:
        if sum(1 for _ in self.directory.iterdir()) <= KEEP_ENTRIES + PRUNE_SLACK + 1:
            return
        manifests = self._manifests()
        for manifest in manifests[: max(0, len(manifests) - KEEP_ENTRIES)]:
            shutil.rmtree(self.directory / manifest["change_id"], ignore_errors=True)


def _store(folder: Path, name: str, data: bytes | None) -> str | None:
    if data is None:
        return None
    fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return name


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _load(folder: Path, name: str | None, digest: str | None) -> bytes | None:
    """Stored bytes, checked against the digest the signed manifest holds."""
    if name is None:
        return None
    try:
        fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ForgedEntry(folder.name) from exc
    with os.fdopen(fd, "rb") as handle:
        data = handle.read() if stat.S_ISREG(os.fstat(fd).st_mode) else None
    if data is None or digest is None or not hmac.compare_digest(_sha(data) or "", digest):
        raise ForgedEntry(folder.name)
    return data


def _entry(folder: Path, manifest: dict[str, Any]) -> JournalEntry:
    files = tuple(
        JournalFile(
            kind=item["kind"],
            path=item["path"],
            dest=item["dest"],
            old_bytes=_load(folder, item["old"], item.get("old_sha")),
            new_hash=item["new_hash"],
            dest_old_bytes=_load(folder, item["dest_old"], item.get("dest_sha")),
            mode=item["mode"],
        )
        for item in manifest["files"]
    )
    return JournalEntry(
        change_id=manifest["change_id"],
        tool=manifest["tool"],
        status=manifest["status"],
        created=manifest["created"],
        files=files,
        undone_by=manifest.get("undone_by"),
    )
