"""Pages of audit events, newest first, filtered while streaming through the index.

``seq`` numbers the events of the file from 0 (oldest). A client keeps the
highest ``seq`` it has seen and asks ``since`` it for new events, and the lowest
to ask ``before`` it for older ones; ``generation`` tells it the file was
replaced and its numbers no longer hold.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .index import FLAG_DENIED, FLAG_SECURITY, AuditIndex, Row, normalise, parse_line

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
SUMMARY_DROPS = ("diff", "arguments", "abs_paths")
TEXT_FIELDS = (
    "event_id",
    "tool",
    "session_id",
    "user",
    "decision",
    "decided_by",
    "outcome",
    "error_code",
    "message",
    "diff",
)


@dataclass(frozen=True)
class AuditFilter:
    """Which events a page holds; empty lists and None mean "any"."""

    sessions: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    outcomes: tuple[str, ...] = ()
    text: str = ""
    since: int | None = None
    before: int | None = None
    limit: int = DEFAULT_LIMIT


@dataclass
class Page:
    events: list[Row] = field(default_factory=list)
    total: int = 0
    latest: int = -1
    next_before: int | None = None
    scanned: int = 0
    generation: int = 0

    def to_dict(self) -> Row:
        return {
            "events": self.events,
            "total": self.total,
            "latest": self.latest,
            "next_before": self.next_before,
            "scanned": self.scanned,
            "generation": self.generation,
        }


def summary(seq: int, offset: int, data: Row) -> Row:
    """What a list row needs: the event without its diff and arguments, plus its place."""
    row = normalise(data)
    row["has_diff"] = bool(row.get("diff"))
    for key in SUMMARY_DROPS:
        row.pop(key, None)
    row["seq"] = seq
    row["offset"] = offset
    row["denied"] = row.get("outcome") == "denied" or row.get("decision") == "deny"
    return row


def detail(seq: int, offset: int, data: Row) -> Row:
    row = normalise(data)
    row["seq"] = seq
    row["offset"] = offset
    row["denied"] = row.get("outcome") == "denied" or row.get("decision") == "deny"
    return row


def find_page(index: AuditIndex, query: AuditFilter) -> Page:
    """Up to ``query.limit`` matching events, newest first."""
    total = len(index)
    page = Page(total=total, latest=total - 1, generation=index.generation)
    limit = max(1, min(query.limit, MAX_LIMIT))
    high = total if query.before is None else max(0, min(query.before, total))
    low = 0 if query.since is None else max(0, query.since + 1)
    candidates = _column_matches(index, query, range(high - 1, low - 1, -1))
    matcher = TextMatcher(query.text) if query.text else None
    last_seq: int | None = None
    for seq, line in index.read_lines(candidates):
        page.scanned += 1
        if matcher is not None and not matcher.could_match(line):
            continue
        data = parse_line(line)
        if data is None or (matcher is not None and not matcher.matches(data)):
            continue
        page.events.append(summary(seq, index.starts[seq], data))
        last_seq = seq
        if len(page.events) == limit:
            break
    if last_seq is not None and len(page.events) == limit and last_seq > low:
        page.next_before = last_seq
    return page


def find_event(index: AuditIndex, event_id: str, offset_hint: int | None = None) -> Row | None:
    """The full event with ``event_id``: at ``offset_hint`` if it is still there, else by scan.

    The scan runs newest first, since the events people open are mostly recent,
    and it compares raw bytes before decoding, so a miss costs little more than
    reading the file.
    """
    total = len(index)
    if offset_hint is not None:
        seq = _seq_at(index, offset_hint)
        if seq is not None:
            for found_seq, line in index.read_lines([seq]):
                data = parse_line(line)
                if data is not None and data["event_id"] == event_id:
                    return detail(found_seq, index.starts[found_seq], data)
    needle = json.dumps(event_id).encode("utf-8")
    for seq, line in index.read_lines(range(total - 1, -1, -1)):
        if needle not in line:
            continue
        data = parse_line(line)
        if data is not None and data["event_id"] == event_id:
            return detail(seq, index.starts[seq], data)
    return None


def _seq_at(index: AuditIndex, offset: int) -> int | None:
    """Binary search of the offsets: the event starting exactly at ``offset``, if any."""
    low, high = 0, len(index.starts)
    while low < high:
        middle = (low + high) // 2
        if index.starts[middle] < offset:
            low = middle + 1
        else:
            high = middle
    if low < len(index.starts) and index.starts[low] == offset:
        return low
    return None


def _column_matches(index: AuditIndex, query: AuditFilter, seqs: range) -> Iterator[int]:
    """Sequence numbers whose session, tool and outcome codes pass, without reading the file."""
    sessions = _codes(index.sessions.lookup, query.sessions)
    tools = _codes(index.tools.lookup, query.tools)
    outcomes = _codes(index.outcomes.lookup, query.outcomes)
    wants_denied = "denied" in query.outcomes
    wants_security = "security" in query.outcomes
    for seq in seqs:
        if sessions is not None and index.session_codes[seq] not in sessions:
            continue
        if tools is not None and index.tool_codes[seq] not in tools:
            continue
        if outcomes is not None and not (
            index.outcome_codes[seq] in outcomes
            or (wants_denied and index.flags[seq] & FLAG_DENIED)
            or (wants_security and index.flags[seq] & FLAG_SECURITY)
        ):
            continue
        yield seq


def _codes(lookup: Callable[[str], int | None], values: tuple[str, ...]) -> set[int] | None:
    if not values:
        return None
    return {code for value in values if (code := lookup(value)) is not None}


class TextMatcher:
    """Case-insensitive substring search over the fields a person reads.

    The raw line is checked first for the text as JSON escapes it, so lines that
    cannot match are dropped without being decoded; for ASCII text that check
    runs on the bytes themselves, which is what makes a scan of 100,000 events
    take well under a second.
    """

    def __init__(self, text: str) -> None:
        self.text = text.casefold()
        escaped = json.dumps(text, ensure_ascii=False)[1:-1]
        self._ascii = escaped.lower().encode("ascii") if escaped.isascii() else None
        self._escaped = escaped.casefold()

    def could_match(self, line: bytes) -> bool:
        """False only for lines that cannot match; cheap, needs no decoding."""
        if self._ascii is not None:
            return self._ascii in line.lower()
        return self._escaped in line.decode("utf-8", errors="replace").casefold()

    def matches(self, data: Row) -> bool:
        return any(self.text in value.casefold() for value in _texts(data))


def _texts(data: Row) -> Iterator[str]:
    for key in TEXT_FIELDS:
        value = data.get(key)
        if isinstance(value, str):
            yield value
    paths = data.get("paths")
    if isinstance(paths, list):
        yield from (path for path in paths if isinstance(path, str))
    arguments = data.get("arguments")
    if arguments:
        yield json.dumps(arguments, ensure_ascii=False)
