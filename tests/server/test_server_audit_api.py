"""The server extension's REST API and event-bus announcements, against a real Jupyter Server."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tornado.websocket import websocket_connect

from tests.jupyter_process import JupyterProcess, start_jupyter
from tinyagent_fs.audit.log import AuditEvent, AuditLog
from tinyagent_fs.server.tailer import SCHEMA_ID

pytestmark = pytest.mark.jupyter

DIFF = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server-audit")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, audit_dir: Path) -> Iterator[JupyterProcess]:
    root = tmp_path_factory.mktemp("server-root")
    home = tmp_path_factory.mktemp("server-home")
    process = start_jupyter("server", root, home, env={"TINYAGENT_FS_AUDIT_DIR": str(audit_dir)})
    yield process
    process.stop()


@pytest.fixture
def log(audit_dir: Path) -> Iterator[AuditLog]:
    """A fresh log file per test: the server notices the replaced file and starts over."""
    (audit_dir / "audit.jsonl").unlink(missing_ok=True)
    yield AuditLog(audit_dir, session_id="alpha")


def record(log: AuditLog, **fields: object) -> AuditEvent:
    event = AuditEvent(**fields)  # type: ignore[arg-type]
    log.record(event)
    return event


def sample_events(log: AuditLog) -> list[AuditEvent]:
    return [
        record(log, tool="read_file", paths=["README.md"], message="read 3 lines"),
        record(
            log,
            tool="edit_file",
            paths=["src/app.py"],
            decision="proceed",
            decided_by="JupyterHook",
            diff=DIFF,
            lines_added=1,
            lines_removed=1,
        ),
        record(
            log,
            tool="write_file",
            paths=["notes.txt"],
            decision="deny",
            outcome="denied",
            session_id="beta",
            message="denied by a person: not now",
        ),
        record(
            log,
            tool="read_file",
            paths=["../../etc/passwd"],
            outcome="error",
            error_code="PATH_OUTSIDE_ROOT",
            security_violation=True,
            session_id="beta",
        ),
        record(log, tool="grep", paths=["src"], message="2 matches for STOCK"),
    ]


def wait_for_total(server: JupyterProcess, total: int) -> dict:
    deadline = time.monotonic() + 10
    while True:
        page = server.get_json("tinyagent-fs/audit")
        if page["total"] == total or time.monotonic() > deadline:
            return page
        time.sleep(0.05)


def test_list_is_newest_first_without_diffs(server: JupyterProcess, log: AuditLog) -> None:
    events = sample_events(log)
    page = wait_for_total(server, len(events))
    assert [row["event_id"] for row in page["events"]] == [e.event_id for e in reversed(events)]
    assert [row["seq"] for row in page["events"]] == [4, 3, 2, 1, 0]
    assert page["latest"] == 4
    assert page["next_before"] is None
    edit = page["events"][3]
    assert edit["tool"] == "edit_file" and edit["has_diff"] is True
    assert "diff" not in edit and "arguments" not in edit
    denied = page["events"][2]
    assert denied["denied"] is True and denied["outcome"] == "denied"
    assert page["events"][1]["security_violation"] is True


def test_since_returns_only_what_is_newer(server: JupyterProcess, log: AuditLog) -> None:
    sample_events(log)
    wait_for_total(server, 5)
    later = record(log, tool="delete_file", paths=["old.txt"])
    wait_for_total(server, 6)
    page = server.get_json("tinyagent-fs/audit", {"since": 4})
    assert [row["event_id"] for row in page["events"]] == [later.event_id]
    assert server.get_json("tinyagent-fs/audit", {"since": 5})["events"] == []


def test_filters_by_session_tool_outcome_and_text(server: JupyterProcess, log: AuditLog) -> None:
    sample_events(log)
    wait_for_total(server, 5)

    def tools(params: dict) -> list[str]:
        page = server.get_json("tinyagent-fs/audit", params)
        return [row["tool"] for row in page["events"]]

    assert tools({"session": "beta"}) == ["read_file", "write_file"]
    assert tools({"tool": "read_file"}) == ["read_file", "read_file"]
    assert tools({"tool": "grep,edit_file"}) == ["grep", "edit_file"]
    assert tools({"outcome": "denied"}) == ["write_file"]
    assert tools({"outcome": "security"}) == ["read_file"]
    assert tools({"outcome": "ok", "session": "alpha"}) == ["grep", "edit_file", "read_file"]
    assert tools({"q": "stock"}) == ["grep"]
    assert tools({"q": "x = 2"}) == ["edit_file"], "the text filter searches diffs"
    assert tools({"q": "NOT NOW"}) == ["write_file"]
    assert tools({"q": "event_id"}) == [], "field names are not searched"
    assert tools({"session": "nobody"}) == []


def test_before_pages_through_every_event_once(server: JupyterProcess, log: AuditLog) -> None:
    events = sample_events(log)
    wait_for_total(server, 5)
    seen: list[str] = []
    params: dict = {"limit": 2}
    while True:
        page = server.get_json("tinyagent-fs/audit", params)
        seen.extend(row["event_id"] for row in page["events"])
        if page["next_before"] is None:
            break
        params = {"limit": 2, "before": page["next_before"]}
    assert seen == [e.event_id for e in reversed(events)]


def test_event_detail_has_the_diff(server: JupyterProcess, log: AuditLog) -> None:
    events = sample_events(log)
    page = wait_for_total(server, 5)
    row = next(r for r in page["events"] if r["tool"] == "edit_file")
    by_hint = server.get_json(f"tinyagent-fs/audit/{row['event_id']}", {"offset": row["offset"]})
    assert by_hint["diff"] == DIFF
    assert by_hint["decided_by"] == "JupyterHook"
    assert by_hint["event_id"] == events[1].event_id
    by_scan = server.get_json(f"tinyagent-fs/audit/{row['event_id']}", {"offset": 1})
    assert by_scan == by_hint
    no_hint = server.get_json(f"tinyagent-fs/audit/{row['event_id']}")
    assert no_hint == by_hint
    status, _ = server.get("tinyagent-fs/audit/0123456789abcdef")
    assert status == 404


def test_an_event_diff_is_served_rendered_for_the_full_width_view(
    server: JupyterProcess, log: AuditLog
) -> None:
    events = sample_events(log)
    wait_for_total(server, 5)
    edit = events[1].event_id
    unified = server.get_json(f"tinyagent-fs/audit/{edit}/diff")
    assert unified["paths"] == ["src/app.py"] and unified["view"] == "unified"
    assert "src/app.py  +1 −1" in unified["html"] and unified["lines"] == 3
    assert '<span class="tok-m">2</span>' in unified["html"], "syntax-coloured"
    assert ".taf-diff" in unified["css"]
    side = server.get_json(f"tinyagent-fs/audit/{edit}/diff", {"view": "side-by-side"})
    assert side["view"] == "side-by-side" and "taf-code taf-del" in side["html"]
    assert server.get(f"tinyagent-fs/audit/{edit}/diff", {"view": "split"})[0] == 400
    assert server.get(f"tinyagent-fs/audit/{events[0].event_id}/diff")[0] == 404, "no diff"
    assert server.get("tinyagent-fs/audit/0123456789abcdef/diff")[0] == 404


def test_sessions_summarise_each_session(server: JupyterProcess, log: AuditLog) -> None:
    sample_events(log)
    wait_for_total(server, 5)
    payload = server.get_json("tinyagent-fs/sessions")
    sessions = {s["session_id"]: s for s in payload["sessions"]}
    assert sessions["alpha"]["events"] == 3
    assert sessions["beta"] == {
        **sessions["beta"],
        "events": 2,
        "denied": 1,
        "errors": 1,
        "security_violations": 1,
    }
    assert payload["sessions"][0]["session_id"] == "alpha", "most recently active first"
    assert payload["tools"] == ["edit_file", "grep", "read_file", "write_file"]
    assert payload["outcomes"] == ["denied", "error", "ok"]
    assert payload["log"] == str(log.path)
    assert payload["schema_id"] == SCHEMA_ID


def test_malformed_arguments_are_rejected(server: JupyterProcess, log: AuditLog) -> None:
    status, body = server.get("tinyagent-fs/audit", {"limit": "many"})
    assert status == 400
    assert b"limit must be an integer" in body


def test_lines_that_are_not_events_are_skipped(server: JupyterProcess, log: AuditLog) -> None:
    good = record(log, tool="read_file", paths=["a.txt"])
    with log.path.open("ab") as handle:
        handle.write(b'not json\n[1, 2]\n{"event_id": 3}\n')
    later = record(log, tool="read_file", paths=["b.txt"])
    page = wait_for_total(server, 2)
    assert [row["event_id"] for row in page["events"]] == [later.event_id, good.event_id]


async def test_new_events_are_announced_on_the_event_bus(
    server: JupyterProcess, log: AuditLog
) -> None:
    sample_events(log)
    await asyncio.to_thread(wait_for_total, server, 5)
    url = server.url("api/events/subscribe").replace("http://", "ws://")
    socket = await websocket_connect(url)
    try:
        await asyncio.sleep(0.3)  # let the subscription settle before writing
        started = time.monotonic()
        event = record(log, tool="edit_file", paths=["src/app.py"], diff=DIFF, lines_added=1)
        announcement = await _next_audit_message(socket, timeout=5)
        elapsed = time.monotonic() - started
    finally:
        socket.close()
    assert announcement["schema_id"] == SCHEMA_ID
    assert announcement["event_id"] == event.event_id
    assert announcement["seq"] == 5
    assert announcement["has_diff"] is True and "diff" not in announcement
    assert elapsed < 1.0, f"announced after {elapsed:.2f}s"


async def _next_audit_message(socket: object, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, "no audit event was announced"
        message = await asyncio.wait_for(socket.read_message(), remaining)  # type: ignore[attr-defined]
        assert message is not None, "the event socket closed"
        data = json.loads(message)
        if data.get("schema_id") == SCHEMA_ID:
            return data
