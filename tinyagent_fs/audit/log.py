"""The audit trail: one JSON object per line in one append-only file.

Every tool call (allowed, denied or failed) becomes an ``AuditEvent``. The log is
a single ``audit.jsonl`` rather than one file per day because the Jupyter server
extension tails it: one file means one byte offset to remember, no rollover race
at midnight, and ``tail -f`` works. Several kernels may append at once, so each
event is written with a single ``os.write`` on an ``O_APPEND`` descriptor: the
kernel then places whole lines one after another and never interleaves them.

The log lives in a per-user state directory outside every project root, so no
agent running inside a sandboxed root can rewrite its own history.
"""

from __future__ import annotations

import dataclasses
import getpass
import json
import os
import sys
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

from .._runtime.digest import content_hash, text_hash
from .._runtime.durable import write_all

AUDIT_FILE_NAME = "audit.jsonl"
DIFF_CAP_BYTES = 64 * 1024
PREVIEW_CHARS = 80
READ_BLOCK_BYTES = 64 * 1024


def utc_timestamp() -> str:
    """ISO 8601 in UTC with milliseconds, e.g. ``2024-05-01T12:00:00.123Z``."""
    now = datetime.now(timezone.utc)
    return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def cap_diff(diff: str | None, limit: int = DIFF_CAP_BYTES) -> str | None:
    """Cut a diff to at most ``limit`` UTF-8 bytes, ending with a visible marker.

    The result is itself within the limit, so capping twice (e.g. after a round
    trip through the log) changes nothing.
    """
    if diff is None:
        return None
    raw = diff.encode("utf-8")
    if len(raw) <= limit:
        return diff
    marker = f"\n[diff truncated: showing part of {len(raw)} bytes]\n"
    budget = limit - len(marker.encode("utf-8"))
    kept = raw[: max(budget, 0)].decode("utf-8", errors="ignore")
    cut = kept.rfind("\n")
    if cut > 0:
        kept = kept[:cut]
    return kept + marker


@dataclass
class AuditEvent:
    """One tool call as the audit log keeps it.

    ``arguments`` should already be passed through ``summarise_arguments`` so the
    log never holds whole file contents; ``diff`` is capped at 64 KB for the same
    reason. Every field has a default so readers of older or newer lines still
    get an event.
    """

    event_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    timestamp: str = field(default_factory=utc_timestamp)
    session_id: str = ""
    user: str = ""
    conversation_id: str | None = None
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    abs_paths: list[str] = field(default_factory=list)
    root: str = ""
    decision: str = "none"
    decided_by: str = ""
    outcome: str = "ok"
    error_code: str | None = None
    security_violation: bool = False
    bytes_read: int = 0
    bytes_written: int = 0
    lines_added: int = 0
    lines_removed: int = 0
    duration_ms: float = 0.0
    change_id: str | None = None
    diff: str | None = None
    message: str = ""
    provider: str = ""

    def __post_init__(self) -> None:
        self.diff = cap_diff(self.diff)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        """One line of JSON (newlines inside strings are escaped).

        Serialised straight from the fields: ``to_dict`` deep-copies every nested
        value first, which costs more than the whole write of a small call's event.
        """
        return _event_json(dict(self.__dict__))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditEvent:
        """Build an event from a decoded line, ignoring fields this version does not know.

        Raises ValueError for anything that is not an event, so a reader can skip it.
        """
        if not isinstance(data, dict):
            raise ValueError("an audit event must be a JSON object")
        if not isinstance(data.get("event_id"), str) or not isinstance(data.get("tool"), str):
            raise ValueError("an audit event needs string 'event_id' and 'tool' fields")
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def _event_json(fields: dict[str, Any]) -> str:
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"), default=str)


def summarise_arguments(args: dict[str, Any], max_chars: int = 200) -> dict[str, Any]:
    """Replace long strings (file contents, patches) by their size, hash and a preview.

    The hash lets an auditor prove which content was written without the log
    becoming a second copy of every file an agent touched.
    """
    return {str(k): _summarise(v, max_chars) for k, v in args.items()}


def _summarise(value: Any, max_chars: int) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, dict):
        return {str(k): _summarise(v, max_chars) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_summarise(v, max_chars) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return {
            "bytes": len(value),
            "sha256": content_hash(bytes(value)),
            "preview": bytes(value[:PREVIEW_CHARS]).decode("utf-8", errors="replace"),
        }
    text = value if isinstance(value, str) else str(value)
    if len(text) <= max_chars:
        return text
    return {
        "chars": len(text),
        "sha256": text_hash(text),
        "preview": text[:PREVIEW_CHARS],
    }


def default_audit_dir() -> Path:
    """Where the log goes when nobody says: a per-user state directory, never a project."""
    explicit = os.environ.get("TINYAGENT_FS_AUDIT_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "tinyagent-fs" / "audit"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "tinyagent-fs" / "audit"
    local_app_data = os.environ.get("LOCALAPPDATA")
    if sys.platform == "win32" and local_app_data:
        return Path(local_app_data) / "tinyagent-fs" / "audit"
    return Path.home() / ".local" / "state" / "tinyagent-fs" / "audit"


class AuditWriteWarning(RuntimeWarning):
    """The audit log could not be written; events are kept in ``AuditLog.unwritten``."""


def _current_user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"


_OPEN_FLAGS = (
    os.O_WRONLY
    | os.O_APPEND
    | os.O_CREAT
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_BINARY", 0)
)


class AuditLog:
    """Appends events to ``<directory>/audit.jsonl``.

    Recording never raises into a tool call: a failed write is reported once as
    an ``AuditWriteWarning`` and the event is kept in ``unwritten``, because
    losing an audit line must not turn a successful edit into an error.
    """

    def __init__(
        self,
        directory: Path | str | None = None,
        session_id: str | None = None,
        user: str | None = None,
    ) -> None:
        self.directory = Path(directory) if directory is not None else default_audit_dir()
        self.session_id = session_id or uuid.uuid4().hex[:12]
        self.user = user or _current_user()
        self.conversation_id: str | None = None
        self.unwritten: list[AuditEvent] = []
        self._lock = threading.Lock()
        self._warned = False
        self._mode_checked = False

    @property
    def path(self) -> Path:
        return self.directory / AUDIT_FILE_NAME

    def reader(self) -> AuditReader:
        return AuditReader(self.path)

    def record(self, event: AuditEvent) -> None:
        """Append ``event``, filling in whatever identity and time fields it left blank."""
        fields = dict(event.__dict__)
        fields["event_id"] = event.event_id or uuid.uuid4().hex
        fields["timestamp"] = event.timestamp or utc_timestamp()
        fields["session_id"] = event.session_id or self.session_id
        fields["user"] = event.user or self.user
        if event.conversation_id is None:
            fields["conversation_id"] = self.conversation_id
        try:
            # A lone surrogate (an undecodable file name) can only sit inside a JSON
            # string, where backslashreplace writes it as a valid \udcXX escape.
            line = (_event_json(fields) + "\n").encode("utf-8", errors="backslashreplace")
            self._append(line)
        except (OSError, ValueError, TypeError) as exc:
            self.unwritten.append(dataclasses.replace(event, **fields))
            self._warn_once(exc)

    def _append(self, line: bytes) -> None:
        """Open, write, close: three system calls, and the directory is only made
        (and checked) when the open finds it missing."""
        path = os.path.join(self.directory, AUDIT_FILE_NAME)
        try:
            fd = os.open(path, _OPEN_FLAGS, 0o600)
        except FileNotFoundError:
            self._ensure_directory()
            fd = os.open(path, _OPEN_FLAGS, 0o600)
        try:
            if not self._mode_checked:
                self._restrict_file(fd)
            write_all(fd, line)
        finally:
            os.close(fd)

    def _ensure_directory(self) -> None:
        if self.directory.is_dir():
            return
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkdir's mode is filtered by the umask; the log must not be readable by others.
        os.chmod(self.directory, 0o700)

    def _restrict_file(self, fd: int) -> None:
        if hasattr(os, "fchmod") and os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
        self._mode_checked = True

    def _warn_once(self, exc: BaseException) -> None:
        with self._lock:
            if self._warned:
                return
            self._warned = True
        warnings.warn(
            f"tinyagent-fs could not write its audit log {self.path}: {exc}; "
            "events are kept in memory (AuditLog.unwritten)",
            AuditWriteWarning,
            stacklevel=3,
        )


Opener = Callable[[Path], BinaryIO]


def _open_binary(path: Path) -> BinaryIO:
    return path.open("rb")


class AuditReader:
    """Reads an audit file incrementally, as a tailing server needs to.

    ``read`` returns only complete lines, so a line a writer has not finished yet
    is picked up on the next call. Lines that are not events are skipped and
    counted in ``skipped``. ``opener`` lets the bytes come from elsewhere than a
    local path (any seekable binary file).
    """

    def __init__(
        self,
        path: Path | str,
        *,
        opener: Opener | None = None,
        block_size: int = READ_BLOCK_BYTES,
    ) -> None:
        self.path = Path(path)
        self.skipped = 0
        self._open = opener or _open_binary
        self._block_size = block_size

    def read(self, offset: int = 0, limit: int | None = None) -> tuple[list[AuditEvent], int]:
        """Events after byte ``offset`` and the offset to pass next time.

        An offset past the end means the file was replaced (rotated or recreated),
        so reading starts again from the beginning.
        """
        events: list[AuditEvent] = []
        try:
            with self._open(self.path) as handle:
                size = handle.seek(0, os.SEEK_END)
                if offset > size:
                    offset = 0
                position = offset
                for start, line in complete_lines(handle, offset, self._block_size):
                    if limit is not None and len(events) >= limit:
                        break
                    position = start + len(line) + 1
                    event = self._parse(line)
                    if event is not None:
                        events.append(event)
        except FileNotFoundError:
            return [], 0
        return events, position

    def iter_events(self) -> Iterator[AuditEvent]:
        try:
            with self._open(self.path) as handle:
                for _, line in complete_lines(handle, 0, self._block_size):
                    event = self._parse(line)
                    if event is not None:
                        yield event
        except FileNotFoundError:
            return

    def tail(self, n: int) -> list[AuditEvent]:
        """The last ``n`` events, oldest first, reading backwards block by block."""
        if n <= 0:
            return []
        newest_first: list[AuditEvent] = []
        try:
            with self._open(self.path) as handle:
                for line in self._lines_backwards(handle):
                    event = self._parse(line)
                    if event is None:
                        continue
                    newest_first.append(event)
                    if len(newest_first) >= n:
                        break
        except FileNotFoundError:
            return []
        newest_first.reverse()
        return newest_first

    def _lines_backwards(self, handle: BinaryIO) -> Iterator[bytes]:
        """Complete lines from the end towards the start; an unterminated last line is skipped."""
        position = handle.seek(0, os.SEEK_END)
        carry = b""
        dropping_tail = True
        while position > 0:
            step = min(self._block_size, position)
            position -= step
            handle.seek(position)
            parts = (handle.read(step) + carry).split(b"\n")
            if dropping_tail:
                parts.pop()  # the bytes after the last newline: unfinished or nothing
                if not parts:
                    carry = b""
                    continue
                dropping_tail = False
            carry = parts[0]
            yield from reversed(parts[1:])
        if carry:
            yield carry

    def _parse(self, line: bytes) -> AuditEvent | None:
        if not line.strip():
            return None
        try:
            return AuditEvent.from_dict(json.loads(line))
        except (ValueError, TypeError):
            self.skipped += 1
            return None


def complete_lines(
    handle: BinaryIO, offset: int, block_size: int = READ_BLOCK_BYTES
) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` for each newline-terminated line after ``offset``: a line a
    writer has not finished yet is left for the next reader (``AuditReader`` and the
    Jupyter server's index both read the log this way)."""
    handle.seek(offset)
    pending = b""
    pending_at = offset
    while block := handle.read(block_size):
        pending += block
        start = 0
        while (newline := pending.find(b"\n", start)) != -1:
            yield pending_at + start, pending[start:newline]
            start = newline + 1
        pending_at += start
        pending = pending[start:]
