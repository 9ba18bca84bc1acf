from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import stat
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from tinyagent_fs.audit.log import (
    DIFF_CAP_BYTES,
    AuditEvent,
    AuditLog,
    AuditReader,
    AuditWriteWarning,
    default_audit_dir,
    summarise_arguments,
)

WRITERS = 4
EVENTS_PER_WRITER = 200


def _write_events(directory: str, writer: int) -> None:
    log = AuditLog(directory, session_id=f"writer{writer}")
    for i in range(EVENTS_PER_WRITER):
        # Every tenth event is far larger than PIPE_BUF, the size below which
        # POSIX promises atomic pipe writes, to show regular-file appends hold too.
        diff = _large_diff(f"{writer}:{i}") if i % 10 == 0 else None
        log.record(AuditEvent(tool="write_file", message=f"{writer}:{i}", diff=diff))


def _large_diff(message: str) -> str:
    return f"+{message}\n" * 4000


def _event(i: int, **extra: Any) -> AuditEvent:
    return AuditEvent(tool="read_file", message=f"event {i}", **extra)


def test_concurrent_writers_produce_whole_lines(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_write_events, args=(str(tmp_path), w)) for w in range(WRITERS)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0

    raw_lines = (tmp_path / "audit.jsonl").read_bytes().split(b"\n")
    assert raw_lines[-1] == b""
    decoded = [json.loads(line) for line in raw_lines[:-1]]
    assert len(decoded) == WRITERS * EVENTS_PER_WRITER
    seen = {d["message"] for d in decoded}
    assert seen == {f"{w}:{i}" for w in range(WRITERS) for i in range(EVENTS_PER_WRITER)}
    large = [d for d in decoded if d["diff"]]
    assert len(large) == WRITERS * EVENTS_PER_WRITER // 10
    assert all(d["diff"] == _large_diff(d["message"]) for d in large)


def test_read_leaves_a_partial_last_line_for_the_next_call(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    for i in range(3):
        log.record(_event(i))
    complete_size = log.path.stat().st_size
    fourth = (_event(3).to_json() + "\n").encode()
    with log.path.open("ab") as handle:
        handle.write(fourth[:25])

    reader = log.reader()
    events, offset = reader.read()
    assert [e.message for e in events] == ["event 0", "event 1", "event 2"]
    assert offset == complete_size

    again, same_offset = reader.read(offset)
    assert again == []
    assert same_offset == offset

    with log.path.open("ab") as handle:
        handle.write(fourth[25:])
    events, offset = reader.read(offset)
    assert [e.message for e in events] == ["event 3"]
    assert offset == log.path.stat().st_size
    assert reader.skipped == 0


def test_read_skips_and_counts_malformed_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    lines = [_event(0).to_json(), "not json", "[1, 2]", '{"tool": 3}', "", _event(1).to_json()]
    path.write_text("\n".join(lines) + "\n")
    reader = AuditReader(path)
    events, offset = reader.read()
    assert [e.message for e in events] == ["event 0", "event 1"]
    assert reader.skipped == 3
    assert offset == path.stat().st_size


def test_read_with_limit_returns_the_offset_after_the_last_event_returned(
    tmp_path: Path,
) -> None:
    log = AuditLog(tmp_path)
    for i in range(5):
        log.record(_event(i))
    reader = log.reader()
    first, offset = reader.read(limit=2)
    rest, end = reader.read(offset)
    assert [e.message for e in first] == ["event 0", "event 1"]
    assert [e.message for e in rest] == ["event 2", "event 3", "event 4"]
    assert end == log.path.stat().st_size


def test_read_starts_over_when_the_file_was_replaced(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    for i in range(4):
        log.record(_event(i))
    _, offset = log.reader().read()
    log.path.unlink()
    assert log.reader().read(offset) == ([], 0)
    log.record(_event(9))
    events, _ = log.reader().read(offset)
    assert [e.message for e in events] == ["event 9"]


class _CountingFile:
    """A real file that remembers how much was read from it."""

    def __init__(self, path: Path) -> None:
        self._file: BinaryIO = path.open("rb")
        self.bytes_read = 0

    def read(self, size: int = -1) -> bytes:
        data = self._file.read(size)
        self.bytes_read += len(data)
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def __enter__(self) -> _CountingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()


def test_tail_of_a_large_file_reads_only_its_end(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with path.open("w") as handle:
        for i in range(50_000):
            handle.write(_event(i, event_id=f"{i:032x}").to_json() + "\n")
    opened: list[_CountingFile] = []

    def opener(p: Path) -> Any:
        opened.append(_CountingFile(p))
        return opened[-1]

    block = 64 * 1024
    tail = AuditReader(path, opener=opener, block_size=block).tail(20)

    assert [e.message for e in tail] == [f"event {i}" for i in range(49_980, 50_000)]
    assert path.stat().st_size > 100 * block
    assert len(opened) == 1
    assert opened[0].bytes_read <= 2 * block


@pytest.mark.parametrize("block_size", [1, 2, 3, 17, 100, 4096])
def test_tail_matches_a_forward_read_at_any_block_size(tmp_path: Path, block_size: int) -> None:
    path = tmp_path / "audit.jsonl"
    lines = [_event(i).to_json() for i in range(12)]
    lines.insert(5, "garbage")
    # The last line parses but has no newline yet: both readers must leave it.
    path.write_text("\n".join(lines) + "\n" + _event(99).to_json())
    reader = AuditReader(path, block_size=block_size)
    everything = [e.message for e in reader.iter_events()]
    assert everything == [f"event {i}" for i in range(12)]
    for n in (1, 5, 12, 50):
        assert [e.message for e in reader.tail(n)] == everything[-n:]
    assert reader.tail(0) == []


def test_tail_of_a_missing_file_is_empty(tmp_path: Path) -> None:
    reader = AuditReader(tmp_path / "nothing.jsonl")
    assert reader.tail(5) == []
    assert list(reader.iter_events()) == []


def test_summarise_arguments_replaces_long_strings_by_size_hash_and_preview() -> None:
    content = "x" * 150 + "y" * 350
    summary = summarise_arguments(
        {
            "path": "src/a.py",
            "content": content,
            "replace_all": True,
            "count": 3,
            "edits": [{"old_string": "short", "new_string": content}],
            "blob": b"\x00\x01" * 10,
        }
    )
    digest = hashlib.sha256(content.encode()).hexdigest()
    expected_long = {"chars": 500, "sha256": digest, "preview": "x" * 80}
    assert summary == {
        "path": "src/a.py",
        "content": expected_long,
        "replace_all": True,
        "count": 3,
        "edits": [{"old_string": "short", "new_string": expected_long}],
        "blob": {
            "bytes": 20,
            "sha256": hashlib.sha256(b"\x00\x01" * 10).hexdigest(),
            "preview": "\x00\x01" * 10,
        },
    }
    assert summarise_arguments({"s": "abcdef"}, max_chars=5)["s"]["chars"] == 6
    json.dumps(summary)


def test_unwritable_directory_warns_once_and_keeps_events(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the audit directory should be")
    log = AuditLog(blocker / "audit")
    with pytest.warns(AuditWriteWarning) as caught:
        log.record(_event(0))
        log.record(_event(1))
    assert len(caught) == 1
    assert [e.message for e in log.unwritten] == ["event 0", "event 1"]
    assert log.unwritten[0].session_id == log.session_id


def test_log_file_is_private_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        log = AuditLog(tmp_path / "state" / "audit")
        log.record(_event(0))
    finally:
        os.umask(previous)
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.directory.stat().st_mode) == 0o700


def test_a_log_directory_removed_between_calls_is_made_again_and_private(
    tmp_path: Path,
) -> None:
    log = AuditLog(tmp_path / "audit")
    log.record(_event(0))
    (tmp_path / "audit" / "audit.jsonl").unlink()
    (tmp_path / "audit").rmdir()
    log.record(_event(1))
    assert [e.message for e in log.reader().iter_events()] == ["event 1"]
    assert stat.S_IMODE((tmp_path / "audit").stat().st_mode) == 0o700
    assert not log.unwritten


def test_event_json_is_the_json_of_its_dict() -> None:
    event = _event(0, arguments={"nested": {"list": [1, (2, 3)], "none": None}}, paths=["a"])
    assert json.loads(event.to_json()) == json.loads(json.dumps(event.to_dict()))


def test_an_existing_readable_log_file_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text("")
    path.chmod(0o644)
    AuditLog(tmp_path).record(_event(0))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_record_fills_in_session_user_and_conversation(tmp_path: Path) -> None:
    log = AuditLog(tmp_path, session_id="sess1", user="ada")
    log.conversation_id = "conv7"
    log.record(_event(0))
    log.record(_event(1, session_id="other", user="bob", conversation_id="mine"))
    first, second = log.reader().tail(2)
    assert (first.session_id, first.user, first.conversation_id) == ("sess1", "ada", "conv7")
    assert (second.session_id, second.user, second.conversation_id) == ("other", "bob", "mine")


def test_record_stamps_events_that_left_id_and_time_blank(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    log.record(AuditEvent(event_id="", timestamp="", tool="glob"))
    (event,) = log.reader().tail(1)
    assert len(event.event_id) == 32
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", event.timestamp)
    assert datetime.fromisoformat(event.timestamp.replace("Z", "+00:00")).tzinfo is not None


def test_undecodable_file_names_survive_the_round_trip(tmp_path: Path) -> None:
    name = os.fsdecode(b"caf\xe9.txt")
    log = AuditLog(tmp_path)
    log.record(AuditEvent(tool="read_file", paths=[name], message="ünïcode"))
    log.path.read_bytes().decode("utf-8")
    (event,) = log.reader().tail(1)
    assert event.paths == [name]
    assert event.message == "ünïcode"


def test_default_session_id_and_user_are_filled(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    assert len(log.session_id) == 12
    assert log.user


def test_large_diffs_are_capped_with_a_marker_and_stay_capped() -> None:
    diff = "".join(f"+line {i} é\n" for i in range(20_000))
    event = AuditEvent(tool="write_file", diff=diff)
    assert event.diff is not None
    assert len(event.diff.encode()) <= DIFF_CAP_BYTES
    assert event.diff.endswith(f"[diff truncated: showing part of {len(diff.encode())} bytes]\n")
    assert event.diff.startswith("+line 0 é\n")
    again = AuditEvent.from_dict(json.loads(event.to_json()))
    assert again.diff == event.diff
    assert AuditEvent(tool="x", diff="+small\n").diff == "+small\n"


def test_event_round_trips_through_json_and_ignores_unknown_fields() -> None:
    event = AuditEvent(
        session_id="s",
        tool="edit_file",
        arguments={"path": "a.txt"},
        paths=["a.txt"],
        abs_paths=["/r/a.txt"],
        root="/r",
        decision="modify",
        decided_by="terminal",
        outcome="ok",
        bytes_written=12,
        lines_added=2,
        lines_removed=1,
        duration_ms=3.5,
        change_id="abc",
        diff="-a\n+b\n",
        message="edited a.txt",
        provider="local",
    )
    line = event.to_json()
    assert "\n" not in line
    data = json.loads(line)
    data["added_in_a_later_version"] = 1
    assert AuditEvent.from_dict(data) == event
    assert event.timestamp.endswith("Z")
    assert len(event.event_id) == 32


def test_default_audit_dir_prefers_explicit_then_xdg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINYAGENT_FS_AUDIT_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_audit_dir() == tmp_path / "explicit"
    monkeypatch.delenv("TINYAGENT_FS_AUDIT_DIR")
    if os.name == "posix" and os.uname().sysname == "Linux":
        assert default_audit_dir() == tmp_path / "xdg" / "tinyagent-fs" / "audit"
        monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        assert default_audit_dir() == tmp_path / "home" / ".local/state/tinyagent-fs/audit"
