"""The undo journal: old bytes of every committed change, kept outside the project.

Each ChangeSet is written here *before* it is committed (``pending``) and marked
``committed`` after; a pending entry found later is put back by recovery. Layout,
trust (signed manifests), durability and the mark written behind the caller:
docs/architecture.md, "The undo journal".
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import threading
import time
import warnings
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._runtime.durable import FileFlush, sync_directories, write_all
from .._runtime.warm_threads import WarmThreads
from ..changes.changeset import ChangeKind, ChangeSet
from ..errors import ErrorCode, ToolError
from .store import drop_cached, keep_old_content, write_new_file
from .trust import ForgedEntry, ManifestSigner, check_change_id, read_stored

JOURNAL_ENV = "TINYAGENT_FS_JOURNAL_DIR"
MAX_BYTES_ENV = "TINYAGENT_FS_JOURNAL_MAX_BYTES"
KEEP_ENTRIES = 200
PRUNE_SLACK = KEEP_ENTRIES // 10
"""Entries allowed above ``KEEP_ENTRIES`` before a prune, so that pruning runs once
in a while for a batch of entries rather than for one at every change."""
DEFAULT_MAX_BYTES = 2 * 1024**3
FREE_SPACE_SHARE = 0.25
"""The old contents kept never take more than this share of the journal's file
system (its free space plus what the journal holds), whatever ``max_bytes`` says."""
DROPPED = "dropped.log"
"""Change ids dropped to stay within the bounds, so that undo can say so."""
DROPPED_MAX_BYTES = 256 * 1024
ENTRY_NAME = re.compile(
    r"(?P<stem>(?P<created>[0-9]{20})-(?P<change_id>[0-9a-f]{12}))(?P<pending>\.pending)?\.json"
)
"""An entry's manifest: its creation time in ns (so names sort by age), the change
id, and ``.pending`` while its commit has not finished. The entry's other files
are named ``<stem>.<n>.old`` and ``<stem>.<n>.dest``."""
PENDING = ".pending"
_marking = WarmThreads(1, "tinyagent-fs-journal")
"""The one thread that writes committed marks, for every journal of the process."""


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
    """Old contents of the newest ``KEEP_ENTRIES`` changes, at most ``max_bytes`` of them
    (default ``$TINYAGENT_FS_JOURNAL_MAX_BYTES`` or 2 GiB, and never more than a quarter
    of the file system), the oldest dropped first; the newest change is always kept."""

    def __init__(self, directory: Path, max_bytes: int | None = None) -> None:
        self.directory = directory
        self.max_bytes = max_bytes if max_bytes is not None else _configured_max_bytes()
        self._kept_since_prune = 0
        self._signer = ManifestSigner(directory)
        self._checked_root: Path | None = None
        self._unfinished: dict[str, tuple[str, dict[str, Any]]] = {}
        """Entries begun here and not yet finished: stem and manifest, so that finishing
        one reads nothing back."""
        self._finished_since_prune = PRUNE_SLACK  # the first finish looks at the size
        self._marks: list[Future[None]] = []
        """Committed marks handed to the marking thread and not yet waited for."""
        self._marks_lock = threading.Lock()
        self._held: dict[str, int] = {}
        """Change id -> descriptor holding the entry's manifest locked (``flock``): this
        toolkit is committing it or recovering it, so no other recovers it meanwhile."""
        self.unwritten_marks: list[str] = []
        """Change ids whose committed mark could not be written (left pending)."""

    def begin(self, changeset: ChangeSet) -> None:
        """Keep the old bytes of every file before the commit touches any of them.

        The committed marks of this journal's earlier changes are waited for first
        (each is written behind its call, usually long before the next one): a
        process killed later then leaves at most its newest change unmarked, whose
        files no later change of its own has touched, so recovery finds it landed
        whole and keeps it, never half undoing a change it reported."""
        self._marks_written()
        change_id = check_change_id(changeset.change_id)
        self._check_outside(changeset.root)
        created = time.time_ns()
        stem = f"{created:020d}-{change_id}"
        try:
            manifest = self._record(stem, changeset, created)
        except BaseException:
            self._remove_entries({stem})
            self._release(change_id)
            raise
        self._unfinished[change_id] = (stem, manifest)

    def finish(self, change_id: str) -> None:
        """Mark the entry committed, behind the caller (see the module's docstring)."""
        check_change_id(change_id)
        unfinished = self._unfinished.pop(change_id, None)
        with self._marks_lock:
            self._marks.append(_marking.submit(self._mark_committed, change_id, unfinished))

    def close(self) -> None:
        """Settle, then let go of every entry's lock: a closed toolkit commits nothing
        more, and an entry it left pending is another's to recover."""
        self.settle()
        for change_id in list(self._held):
            self._release(change_id)

    def settle(self) -> None:
        """Return once every committed mark handed over so far is written (or has
        failed, leaving its entry pending: see ``unwritten_marks``), this journal's
        and those of every other toolkit of the process: the one marking thread takes
        them in turn, so a job behind them ends after all of them. Another toolkit's
        change just reported then reads as committed here, not as in flight."""
        self._marks_written()
        with contextlib.suppress(RuntimeError):  # no thread may start: no mark is queued
            _marking.submit(_nothing).result()

    def _marks_written(self) -> None:
        """Return once this journal's committed marks handed over so far are written."""
        with self._marks_lock:
            marks, self._marks = self._marks, []
        for mark in marks:
            mark.result()

    def _mark_committed(
        self, change_id: str, unfinished: tuple[str, dict[str, Any]] | None
    ) -> None:
        """The manifest rewritten in place with status ``committed``, then renamed."""
        try:
            self._write_mark(change_id, unfinished)
        except Exception as exc:  # the entry stays pending: recovery completes it
            self.unwritten_marks.append(change_id)
            warnings.warn(
                f"tinyagent_fs: the undo journal could not mark change {change_id} "
                f"committed ({type(exc).__name__}: {exc}); it stays pending until "
                "recovery completes it at the next start",
                RuntimeWarning,
                stacklevel=1,
            )
        finally:
            self._release(change_id)  # the commit is over, marked or left for recovery

    def _write_mark(self, change_id: str, unfinished: tuple[str, dict[str, Any]] | None) -> None:
        stem, manifest = unfinished if unfinished is not None else self._find(change_id)
        if stem is None or manifest is None:
            return
        manifest["status"] = "committed"
        pending = self.directory / f"{stem}{PENDING}.json"
        try:
            _overwrite(pending, self._signer.signed(manifest))
            pending.rename(self.directory / f"{stem}.json")
        except FileNotFoundError:  # renamed already (a repaired entry): replace it whole
            self._replace_manifest(stem, manifest)
        for item in manifest["files"]:
            for kept in (item["old"], item["dest_old"]):
                if kept is not None:
                    drop_cached(self.directory / kept)
        self._finished_since_prune += 1
        self._kept_since_prune += manifest.get("kept_bytes", 0)
        if (
            self._finished_since_prune >= PRUNE_SLACK
            or self._kept_since_prune * PRUNE_SLACK >= self.max_bytes
        ):
            self._prune()

    def abandon(self, change_id: str) -> None:
        """The commit failed cleanly: nothing changed, nothing to keep."""
        unfinished = self._unfinished.pop(change_id, None)
        stem = unfinished[0] if unfinished else self._find(check_change_id(change_id), False)[0]
        if stem is not None:
            self._remove_entries({stem})
        self._release(change_id)

    def mark_undone(self, change_id: str, undone_by: str) -> None:
        self.settle()
        stem, manifest = self._find(check_change_id(change_id))
        if stem is not None and manifest is not None:
            manifest["undone_by"] = undone_by
            self._replace_manifest(stem, manifest)

    def get(self, change_id: str) -> JournalEntry | None:
        """The entry, None if there is none; a malformed id or a forged entry is an error."""
        self.settle()
        _, manifest = self._find(check_change_id(change_id))
        return None if manifest is None else self._entry(manifest)

    def last_undoable(self) -> JournalEntry | None:
        """The newest committed entry not undone yet, reading manifests newest first
        only until it is found."""
        self.settle()
        for found in reversed(self._manifest_names()):
            if found["pending"]:
                continue
            try:
                manifest = self._read_manifest(found.string, found["change_id"])
            except ForgedEntry:
                continue
            if manifest and manifest["status"] == "committed" and not manifest.get("undone_by"):
                return self._entry(manifest)
        return None

    def pending(self) -> list[JournalEntry]:
        """Entries of interrupted commits, oldest first; one that does not verify is
        skipped, not used. Only the manifests still named pending are read."""
        self.settle()
        entries = []
        for found in self._manifest_names():
            change_id = found["change_id"]
            if not found["pending"] or not self._claim(found.string, change_id):
                continue  # committed, or being committed (or recovered) by a live toolkit
            try:
                manifest = self._read_manifest(found.string, change_id)
                if manifest is None:
                    self._release(change_id)
                    continue
                if manifest["status"] != "pending":  # finished, then killed before the rename
                    os.rename(
                        self.directory / found.string, self.directory / f"{found['stem']}.json"
                    )
                    self._release(change_id)
                    continue
                entries.append(self._entry(manifest))
            except (ForgedEntry, OSError):
                self._release(change_id)
                continue
        return entries

    def _claim(self, name: str, change_id: str) -> bool:
        """Whether this toolkit holds the entry's lock, taking it if no live toolkit does
        (a process that dies lets go of its locks)."""
        if change_id in self._held:
            return True
        try:
            fd = os.open(self.directory / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._held[change_id] = fd
        return True

    def _release(self, change_id: str) -> None:
        fd = self._held.pop(change_id, None)
        if fd is not None:
            os.close(fd)

    def _record(self, stem: str, changeset: ChangeSet, created: int) -> dict[str, Any]:
        """Store the old contents and the pending manifest; flush them unless the change
        is one atomic step."""
        changes = changeset.changes
        atomic = len(changes) == 1 and changes[0].kind is not ChangeKind.MOVE
        flush = None if atomic else FileFlush()
        directory = str(self.directory)

        def keep(path: Path | None, name: str, data: bytes | None) -> str | None:
            if path is None or data is None:
                return None
            keep_old_content(path, f"{directory}/{name}", data, flush)
            return name

        files = [
            {
                "kind": change.kind.value,
                "path": str(change.path),
                "dest": str(change.dest) if change.dest is not None else None,
                "old": keep(change.path, f"{stem}.{index}.old", change.old_bytes),
                "old_sha": None if change.old_bytes is None else change.old_hash,
                "dest_old": keep(change.dest, f"{stem}.{index}.dest", change.dest_old_bytes),
                "dest_sha": None if change.dest_old_bytes is None else change.dest_expected_hash,
                "new_hash": change.new_hash,
                "mode": change.mode,
            }
            for index, change in enumerate(changes)
        ]
        kept = [data for change in changes for data in (change.old_bytes, change.dest_old_bytes)]
        manifest = {
            "change_id": changeset.change_id,
            "tool": changeset.tool,
            "status": "pending",
            "created": created / 1e9,
            "files": files,
            "kept_bytes": sum(len(data) for data in kept if data is not None),
            "undone_by": None,
        }
        self._write_locked(
            changeset.change_id,
            self.directory / f"{stem}{PENDING}.json",
            self._signer.signed(manifest),
            flush,
        )
        if flush is not None:
            flush.flush()
            sync_directories([str(self.directory)])
        return manifest

    def _write_locked(
        self, change_id: str, path: Path, data: bytes, flush: FileFlush | None
    ) -> None:
        """Create the pending manifest and lock it before it holds anything: a recovery
        by another toolkit meanwhile finds it locked (or, for an instant, empty and so
        not an entry), never a live commit to put back. The lock is held until the
        entry is finished or abandoned."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        self._held[change_id] = fd
        fcntl.flock(fd, fcntl.LOCK_EX)
        write_all(fd, data)
        if flush is not None:
            flush.written(fd, str(path))

    def _check_outside(self, root: Path) -> None:
        """Refuse to keep history inside the project: what is under the root, file tools
        and commands may rewrite (hard links to old files included)."""
        if root == self._checked_root:
            return
        self._signer.key()  # creates the directory
        if self.directory.resolve().is_relative_to(root.resolve()):
            raise ToolError(
                ErrorCode.PERMISSION_DENIED,
                f"The undo journal {self.directory} lies inside the project {root}, where "
                "file tools and commands could rewrite it; no change is made.",
                f"Set {JOURNAL_ENV} to a folder outside the project.",
            )
        self._checked_root = root

    def _manifest_names(self) -> list[re.Match[str]]:
        """The entries' manifests, oldest first (their names start with the time)."""
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        found = (ENTRY_NAME.fullmatch(name) for name in sorted(names))
        return [match for match in found if match is not None]

    def _find(self, change_id: str, read: bool = True) -> tuple[str | None, dict[str, Any] | None]:
        """The stem of ``change_id``'s entry and (with ``read``) its verified manifest."""
        for found in self._manifest_names():
            if found["change_id"] == change_id:
                manifest = self._read_manifest(found.string, change_id) if read else None
                return found["stem"], manifest
        return None, None

    def _read_manifest(self, name: str, change_id: str) -> dict[str, Any] | None:
        """The verified manifest; None when absent, ``ForgedEntry`` when it does not verify."""
        try:
            text = (self.directory / name).read_text()
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ForgedEntry(change_id) from exc
        return self._signer.verified(text, change_id)

    def _replace_manifest(self, stem: str, manifest: dict[str, Any]) -> None:
        """A new version of a committed entry's manifest, renamed over the old one:
        readers see one or the other."""
        staged = self.directory / f"{stem}.json.{secrets.token_hex(4)}.tmp"
        write_new_file(staged, self._signer.signed(manifest), None)
        os.replace(staged, self.directory / f"{stem}.json")

    def dropped(self, change_id: str) -> str | None:
        """Why ``change_id`` is no longer kept, if it was dropped to stay within bounds."""
        with contextlib.suppress(FileNotFoundError):
            for line in (self.directory / DROPPED).read_text().splitlines():
                dropped_id, _, why = line.partition(" ")
                if dropped_id == change_id:
                    return why
        return None

    def bounds(self) -> str:
        """What the journal keeps, in words."""
        return (
            f"the undo journal keeps the newest {KEEP_ENTRIES} changes and at most "
            f"{_size(self.max_bytes)} of old content (never more than a quarter of its disk), "
            "dropping the oldest first"
        )

    def _prune(self) -> None:
        """Drop the oldest entries beyond ``KEEP_ENTRIES`` (once there are ``PRUNE_SLACK``
        more: one listing every ``PRUNE_SLACK`` changes) or beyond the byte budget, but
        never the newest entry nor one being written."""
        self._finished_since_prune = 0
        self._kept_since_prune = 0
        manifests = self._manifest_names()
        sizes = self._sizes()
        held = sum(sizes.get(found["stem"], 0) for found in manifests)
        budget = min(self.max_bytes, int(FREE_SPACE_SHARE * (self._free_bytes() + held)))
        over_count = len(manifests) - KEEP_ENTRIES
        if over_count <= PRUNE_SLACK:
            over_count = 0  # the count waits for a batch; the bytes do not
        busy = {stem for stem, _ in list(self._unfinished.values())}
        drop: list[re.Match[str]] = []
        for index, found in enumerate(manifests[:-1]):
            if found["stem"] in busy:
                continue
            if index >= over_count and held <= budget:
                break
            drop.append(found)
            held -= sizes.get(found["stem"], 0)
        if drop:
            self._note_dropped(drop, time.time())
            self._remove_entries({found["stem"] for found in drop})

    def _sizes(self) -> dict[str, int]:
        """Bytes each entry holds on disk, by stem."""
        sizes: dict[str, int] = {}
        with os.scandir(self.directory) as entries:
            for entry in entries:
                stem = entry.name.split(".", 1)[0]
                with contextlib.suppress(FileNotFoundError):
                    sizes[stem] = sizes.get(stem, 0) + entry.stat(follow_symlinks=False).st_size
        return sizes

    def _free_bytes(self) -> int:
        info = os.statvfs(self.directory)
        return info.f_bavail * info.f_frsize

    def _note_dropped(self, dropped: list[re.Match[str]], when: float) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(when))
        lines = "".join(f"{found['change_id']} dropped on {stamp}\n" for found in dropped)
        path = self.directory / DROPPED
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size > DROPPED_MAX_BYTES:
                kept = path.read_text().splitlines(keepends=True)
                lines = "".join(kept[len(kept) // 2 :]) + lines
                path.unlink()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            write_all(fd, lines.encode())
        finally:
            os.close(fd)

    def _remove_entries(self, stems: set[str]) -> None:
        """Every file of these entries (all their names start with the stem)."""
        for name in os.listdir(self.directory):
            if name.split(".", 1)[0] in stems:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.directory / name)

    def _entry(self, manifest: dict[str, Any]) -> JournalEntry:
        change_id = manifest["change_id"]

        def load(name: str | None, digest: str | None, path: str) -> bytes | None:
            return read_stored(self.directory, name, digest, path, change_id)

        files = tuple(
            JournalFile(
                kind=item["kind"],
                path=item["path"],
                dest=item["dest"],
                old_bytes=load(item["old"], item.get("old_sha"), item["path"]),
                new_hash=item["new_hash"],
                dest_old_bytes=load(
                    item["dest_old"], item.get("dest_sha"), item["dest"] or item["path"]
                ),
                mode=item["mode"],
            )
            for item in manifest["files"]
        )
        return JournalEntry(
            change_id=change_id,
            tool=manifest["tool"],
            status=manifest["status"],
            created=manifest["created"],
            files=files,
            undone_by=manifest.get("undone_by"),
        )


def _configured_max_bytes() -> int:
    text = os.environ.get(MAX_BYTES_ENV, "")
    try:
        return int(text) if text else DEFAULT_MAX_BYTES
    except ValueError:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"${MAX_BYTES_ENV} must be a number of bytes, not {text!r}",
        ) from None


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def _overwrite(path: Path, data: bytes) -> None:
    """Rewrite an existing file in place: no new inode (creating one is the slow step)."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)


def _nothing() -> None:
    """A job for the marking thread that only says it got this far."""
