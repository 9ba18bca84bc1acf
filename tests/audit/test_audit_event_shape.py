"""The audit event's shape is written three times: the dataclass that writes it, the
JSON schema the Jupyter server announces it with, and the sidebar's TypeScript
interfaces. The dataclass is the source; the other two are checked against it."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from tinyagent_fs.audit.log import AuditEvent
from tinyagent_fs.server.tailer import SCHEMA_PATH

MODEL_TS = Path(__file__).resolve().parent.parent.parent / "labextension" / "src" / "model.ts"
WRITTEN = {field.name for field in dataclasses.fields(AuditEvent)}
ADDED_BY_THE_SERVER = {"seq", "offset", "denied", "has_diff"}
"""Where the event sits in the log, and what the server derives for filters."""
LEFT_OUT_OF_ANNOUNCEMENTS = {"arguments", "abs_paths", "diff"}
"""Fetched with the event in full, never broadcast (they may be large)."""
ANNOUNCEMENT_ONLY = {"generation"}
"""The log file's generation, so a listener notices a rotated log."""


def typescript_fields(interface: str) -> set[str]:
    source = MODEL_TS.read_text(encoding="utf-8")
    body = re.search(rf"export interface {interface}\b[^{{]*{{(.*?)\n}}", source, re.S)
    assert body is not None, f"{interface} is not in {MODEL_TS}"
    return set(re.findall(r"^\s+(\w+)\??:", body.group(1), re.M))


def test_the_schema_announces_every_field_but_the_large_ones() -> None:
    announced = set(json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))["properties"])
    expected = (WRITTEN - LEFT_OUT_OF_ANNOUNCEMENTS) | ADDED_BY_THE_SERVER | ANNOUNCEMENT_ONLY
    assert announced == expected


def test_the_sidebar_knows_every_field() -> None:
    summary = typescript_fields("IAuditSummary")
    full = summary | typescript_fields("IAuditEvent")
    assert full == WRITTEN | ADDED_BY_THE_SERVER
    assert not summary & LEFT_OUT_OF_ANNOUNCEMENTS, "a list row never carries these"


def test_one_place_builds_the_events_of_calls() -> None:
    """Every entry point (pipeline, wrap_tool, TinyAgent, MCP) describes a finished call
    as a CallOutcome; only tools/call_record.py makes it an AuditEvent."""
    package = Path(__file__).resolve().parent.parent.parent / "tinyagent_fs"
    builders = {
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if re.search(r"\bAuditEvent\(", path.read_text(encoding="utf-8"))
    }
    reading_defaults = {"server/index.py"}  # reads an event's defaults, records nothing
    assert builders - reading_defaults == {"tools/call_record.py"}, builders
