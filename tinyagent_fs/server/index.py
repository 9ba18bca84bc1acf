"""A compact index over the audit file, so a page of 100,000 events costs one page.

The server never holds the events themselves. For each complete line that is an
event it keeps the byte offset and length plus four small codes (session, tool,
outcome, flags), 25 bytes an event. Filters on those fields run over the
codes; only the text filter and the page that is finally served read the file,
and they read it in bounded windows. The index grows by reading only the bytes
appended since the last ``refresh``; a file that shrank, was replaced (other
inode) or no longer starts its newest indexed line with the same bytes (a new
file that got the old inode number) is indexed again from the start.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..audit.log import AuditEvent, complete_lines

BLOCK_BYTES = 256 * 1024
WINDOW_BYTES = 1024 * 1024
FINGERPRINT_BYTES = 64

FLAG_DENIED = 1
FLAG_SECURITY = 2
FLAG_ERROR = 4

Row = dict[str, Any]
OnEvent = Callable[[int, int, Row], None]


@dataclass
class SessionSummary:
    """What the sidebar's session filter shows about one kernel session."""

    session_id: str
    user: str
    first_timestamp: str
    last_timestamp: str
    events: int = 0
    denied: int = 0
    errors: int = 0
    security_violations: int = 0
    last_seq: int = 0

    def to_dict(self) -> Row:
        return {
            "session_id": self.session_id,
            "user": self.user,
            "first_timestamp": self.first_timestamp,
            "last_timestamp": self.last_timestamp,
            "events": self.events,
            "denied": self.denied,
            "errors": self.errors,
            "security_violations": self.security_violations,
        }


class Interned:
    """Small integer codes for the few distinct values a column takes."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._codes: dict[str, int] = {}

    def code(self, value: str) -> int:
        found = self._codes.get(value)
        if found is None:
            found = self._codes[value] = len(self.values)
            self.values.append(value)
        return found

    def lookup(self, value: str) -> int | None:
        return self._codes.get(value)


def parse_line(line: bytes) -> Row | None:
    """A decoded event, or None for anything that is not one (same test as AuditEvent)."""
    if not line.strip():
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if not isinstance(data.get("event_id"), str) or not isinstance(data.get("tool"), str):
        return None
    return data


def normalise(data: Row) -> Row:
    """Every field an ``AuditEvent`` has, with its default where the line lacks it.

    A line written by another version may carry a field of an unexpected type;
    it is passed on as it is rather than dropping the whole event.
    """
    try:
        return AuditEvent.from_dict(data).to_dict()
    except (TypeError, ValueError, AttributeError):
        defaults = AuditEvent(event_id=data["event_id"], tool=data["tool"]).to_dict()
        return {key: data.get(key, value) for key, value in defaults.items()}


def flags_of(data: Row) -> int:
    flags = 0
    if data.get("outcome") == "denied" or data.get("decision") == "deny":
        flags |= FLAG_DENIED
    if data.get("security_violation") is True:
        flags |= FLAG_SECURITY
    if data.get("outcome") == "error":
        flags |= FLAG_ERROR
    return flags


class AuditIndex:
    """Offsets and filter codes of every event line of one audit file."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.skipped = 0
        self.generation = 0
        self._reset()

    def _reset(self) -> None:
        self.starts = array("q")
        self.lengths = array("I")
        self.session_codes = array("I")
        self.tool_codes = array("I")
        self.outcome_codes = array("I")
        self.flags = array("B")
        self.sessions = Interned()
        self.tools = Interned()
        self.outcomes = Interned()
        self.summaries: dict[str, SessionSummary] = {}
        self.generation += 1
        self._end = 0
        self._identity: tuple[int, int] | None = None
        self._fingerprint = b""

    def __len__(self) -> int:
        return len(self.starts)

    def refresh(self, on_event: OnEvent | None = None) -> int:
        """Index the complete lines appended since the last call; returns how many events.

        ``on_event(seq, offset, data)`` is called for each new event, which is how the
        tailer learns what to announce without reading the file twice.
        """
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            if self._end:
                self._reset()
            return 0
        identity = (stat.st_dev, stat.st_ino)
        if self._identity is not None and (identity != self._identity or stat.st_size < self._end):
            self._reset()
        self._identity = identity
        if stat.st_size == self._end:
            return 0
        before = len(self)
        with open(self.path, "rb") as handle:
            if self._fingerprint and self._read_fingerprint(handle) != self._fingerprint:
                # Recreated under the same inode number: not an append, a new file.
                self._reset()
                self._identity = identity
            for offset, line in complete_lines(handle, self._end, BLOCK_BYTES):
                self._end = offset + len(line) + 1
                data = parse_line(line)
                if data is None:
                    if line.strip():
                        self.skipped += 1
                    continue
                seq = self._add(offset, len(line), data)
                if on_event is not None:
                    on_event(seq, offset, data)
            self._fingerprint = self._read_fingerprint(handle)
        return len(self) - before

    def _read_fingerprint(self, handle: BinaryIO) -> bytes:
        """The start of the newest indexed line (it holds a unique event id), or of the file."""
        start = self.starts[-1] if self.starts else 0
        handle.seek(start)
        return handle.read(min(FINGERPRINT_BYTES, self._end - start))

    def _add(self, offset: int, length: int, data: Row) -> int:
        session = str(data.get("session_id") or "")
        outcome = str(data.get("outcome") or "")
        flags = flags_of(data)
        seq = len(self.starts)
        self.starts.append(offset)
        self.lengths.append(length)
        self.session_codes.append(self.sessions.code(session))
        self.tool_codes.append(self.tools.code(data["tool"]))
        self.outcome_codes.append(self.outcomes.code(outcome))
        self.flags.append(flags)
        timestamp = str(data.get("timestamp") or "")
        summary = self.summaries.get(session)
        if summary is None:
            summary = self.summaries[session] = SessionSummary(
                session, str(data.get("user") or ""), timestamp, timestamp
            )
        summary.events += 1
        summary.last_timestamp = max(summary.last_timestamp, timestamp)
        summary.first_timestamp = min(summary.first_timestamp, timestamp)
        summary.denied += bool(flags & FLAG_DENIED)
        summary.errors += bool(flags & FLAG_ERROR)
        summary.security_violations += bool(flags & FLAG_SECURITY)
        summary.last_seq = seq
        return seq

    def end_of(self, seq: int) -> int:
        return self.starts[seq] + self.lengths[seq]

    def read_lines(self, seqs: Iterable[int]) -> Iterator[tuple[int, bytes]]:
        """The raw lines of ``seqs`` (ascending or descending), read in windows of ~1 MB.

        Sequence numbers whose lines lie close together share one read, so streaming
        a filter over the whole file costs a few hundred reads, not one per event.
        A file that vanished since the last ``refresh`` yields nothing.
        """
        handle: BinaryIO | None = None
        window: list[int] = []
        try:
            for seq in seqs:
                if window and self._span(window[0], seq) > WINDOW_BYTES:
                    handle = handle or open(self.path, "rb")  # noqa: SIM115
                    yield from self._read_window(handle, window)
                    window = []
                window.append(seq)
            if window:
                handle = handle or open(self.path, "rb")  # noqa: SIM115
                yield from self._read_window(handle, window)
        except FileNotFoundError:
            return
        finally:
            if handle is not None:
                handle.close()

    def _span(self, first: int, last: int) -> int:
        low, high = min(first, last), max(first, last)
        return self.end_of(high) - self.starts[low]

    def _read_window(self, handle: BinaryIO, window: list[int]) -> Iterator[tuple[int, bytes]]:
        low = self.starts[min(window[0], window[-1])]
        handle.seek(low)
        buffer = handle.read(self._span(window[0], window[-1]))
        for seq in window:
            start = self.starts[seq] - low
            yield seq, buffer[start : start + self.lengths[seq]]
