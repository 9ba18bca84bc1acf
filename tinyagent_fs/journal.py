"""The undo journal: old bytes of every committed change, kept outside the project.

Each ChangeSet is written here *before* it is committed (status ``pending``) and
marked ``committed`` after. A pending entry found later means a commit was killed
half-way: :meth:`UndoJournal.pending` hands it to recovery, which puts every file
back as it was. The directory lives in the per-user state directory, never under
a path the sandboxed worker may write, so nothing an agent runs can rewrite it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .changes import ChangeSet, content_hash

JOURNAL_ENV = "TINYAGENT_FS_JOURNAL_DIR"
KEEP_ENTRIES = 200


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

    def begin(self, changeset: ChangeSet) -> None:
        """Keep the old bytes of every file before the commit touches any of them."""
        folder = self.directory / changeset.change_id
        folder.mkdir(parents=True, mode=0o700, exist_ok=True)
        files = []
        for index, change in enumerate(changeset.changes):
            files.append(
                {
                    "kind": change.kind.value,
                    "path": str(change.path),
                    "dest": str(change.dest) if change.dest is not None else None,
                    "old": _store(folder, f"{index}.old", change.old_bytes),
                    "dest_old": _store(folder, f"{index}.dest", change.dest_old_bytes),
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
        shutil.rmtree(self.directory / change_id, ignore_errors=True)

    def mark_undone(self, change_id: str, undone_by: str) -> None:
        self._update(change_id, undone_by=undone_by)

    def get(self, change_id: str) -> JournalEntry | None:
        manifest = self._read_manifest(change_id)
        return None if manifest is None else _entry(self.directory / change_id, manifest)

    def last_undoable(self) -> JournalEntry | None:
        for manifest in reversed(self._manifests()):
            if manifest["status"] == "committed" and manifest.get("undone_by") is None:
                return _entry(self.directory / manifest["change_id"], manifest)
        return None

    def pending(self) -> list[JournalEntry]:
        return [
            _entry(self.directory / m["change_id"], m)
            for m in self._manifests()
            if m["status"] == "pending"
        ]

    def _manifests(self) -> list[dict[str, Any]]:
        """Every entry's manifest (not its stored bytes), oldest first."""
        if not self.directory.is_dir():
            return []
        out = []
        for child in self.directory.iterdir():
            manifest = self._read_manifest(child.name)
            if manifest is not None:
                out.append(manifest)
        return sorted(out, key=lambda m: m["created"])

    def _read_manifest(self, change_id: str) -> dict[str, Any] | None:
        try:
            return json.loads((self.directory / change_id / "manifest.json").read_text())
        except (OSError, ValueError):
            return None

    def _write_manifest(self, change_id: str, manifest: dict[str, Any]) -> None:
        folder = self.directory / change_id
        staged = folder / "manifest.json.tmp"
        with open(staged, "w", encoding="utf-8") as handle:
            json.dump(manifest, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(staged, folder / "manifest.json")

    def _update(self, change_id: str, **fields: Any) -> None:
        manifest = self._read_manifest(change_id)
        if manifest is not None:
            manifest.update(fields)
            self._write_manifest(change_id, manifest)

    def _prune(self) -> None:
        if sum(1 for _ in self.directory.iterdir()) <= KEEP_ENTRIES:
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


def _load(folder: Path, name: str | None) -> bytes | None:
    if name is None:
        return None
    with contextlib.suppress(FileNotFoundError):
        return (folder / name).read_bytes()
    return None


def _entry(folder: Path, manifest: dict[str, Any]) -> JournalEntry:
    files = tuple(
        JournalFile(
            kind=item["kind"],
            path=item["path"],
            dest=item["dest"],
            old_bytes=_load(folder, item["old"]),
            new_hash=item["new_hash"],
            dest_old_bytes=_load(folder, item["dest_old"]),
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
