"""The index follows a growing, replaced or half-written file; the tailer announces news."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from jupyter_events import EventLogger

from tinyagent_fs.audit.log import AUDIT_FILE_NAME, AuditEvent, AuditLog
from tinyagent_fs.server.index import AuditIndex
from tinyagent_fs.server.tailer import MAX_ANNOUNCED_PER_REFRESH, SCHEMA_ID, AuditTailer


def test_a_half_written_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / AUDIT_FILE_NAME
    first = AuditEvent(tool="read_file").to_json()
    second = AuditEvent(tool="grep").to_json()
    path.write_text(first + "\n" + second[:20])
    index = AuditIndex(path)
    assert index.refresh() == 1
    with path.open("a") as handle:
        handle.write(second[20:] + "\n")
    assert index.refresh() == 1
    assert [line for _, line in index.read_lines([0, 1])] == [first.encode(), second.encode()]


def test_a_replaced_or_truncated_file_is_indexed_again(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    for _ in range(3):
        log.record(AuditEvent(tool="read_file"))
    index = AuditIndex(log.path)
    index.refresh()
    generation = index.generation
    replacement = tmp_path / "new.jsonl"
    replacement.write_text(AuditEvent(tool="grep").to_json() + "\n")
    os.replace(replacement, log.path)
    assert index.refresh() == 1
    assert len(index) == 1 and index.tools.values == ["grep"]
    assert index.generation == generation + 1
    log.path.write_text("")
    index.refresh()
    assert len(index) == 0 and index.generation == generation + 2


def test_a_file_rewritten_in_place_is_indexed_again(tmp_path: Path) -> None:
    """Same inode, and longer than before: only the content shows it is a new file."""
    path = tmp_path / AUDIT_FILE_NAME
    path.write_text(AuditEvent(tool="read_file").to_json() + "\n")
    index = AuditIndex(path)
    index.refresh()
    inode = path.stat().st_ino
    with path.open("w") as handle:  # truncates and rewrites the same inode
        for _ in range(3):
            handle.write(AuditEvent(tool="grep").to_json() + "\n")
    assert path.stat().st_ino == inode
    index.refresh()
    assert len(index) == 3 and index.tools.values == ["grep"]
    assert index.generation == 2


def test_a_missing_file_is_an_empty_log(tmp_path: Path) -> None:
    index = AuditIndex(tmp_path / "nowhere" / AUDIT_FILE_NAME)
    assert index.refresh() == 0
    assert list(index.read_lines(range(0))) == []


class Received:
    """A real listener on a real EventLogger, as Jupyter Server's websocket is."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    async def __call__(self, logger: EventLogger, schema_id: str, data: dict[str, Any]) -> None:
        self.events.append({"schema_id": schema_id, **data})


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_new_events_are_announced_once_and_old_ones_never(tmp_path: Path) -> None:
    log = AuditLog(tmp_path, session_id="s1")
    log.record(AuditEvent(tool="read_file"))
    bus = EventLogger()
    received = Received()
    tailer = AuditTailer(log.path, bus)
    bus.add_listener(schema_id=SCHEMA_ID, listener=received)
    assert await tailer.refresh() == 0, "what was there before the server started is not news"
    log.record(AuditEvent(tool="edit_file", diff="-a\n+b\n"))
    assert await tailer.refresh() == 1
    assert await tailer.refresh() == 0
    await settle()
    assert [(e["tool"], e["seq"], e["has_diff"]) for e in received.events] == [
        ("edit_file", 1, True)
    ]
    assert "diff" not in received.events[0]
    await tailer.stop()


async def test_a_burst_announces_only_its_newest_events(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    bus = EventLogger()
    received = Received()
    tailer = AuditTailer(log.path, bus)
    bus.add_listener(schema_id=SCHEMA_ID, listener=received)
    await tailer.refresh()
    burst = MAX_ANNOUNCED_PER_REFRESH + 50
    for i in range(burst):
        log.record(AuditEvent(tool="grep", message=str(i)))
    await tailer.refresh()
    await settle()
    seqs = [event["seq"] for event in received.events]
    assert seqs == list(range(50, burst)), "a client sees the gap and fetches the rest"
    await tailer.stop()


async def test_following_announces_within_the_interval(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    bus = EventLogger()
    received = Received()
    tailer = AuditTailer(log.path, bus, interval_s=0.05)
    bus.add_listener(schema_id=SCHEMA_ID, listener=received)
    tailer.start()
    await asyncio.sleep(0.2)
    log.record(AuditEvent(tool="write_file", outcome="denied", decision="deny"))
    for _ in range(40):
        await asyncio.sleep(0.025)
        if received.events:
            break
    await tailer.stop()
    assert [(e["tool"], e["denied"]) for e in received.events] == [("write_file", True)]
