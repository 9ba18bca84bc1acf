"""Pipeline guarantees: structured errors, no exceptions escape, an audit line per call."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.hooks import AutoApprovePolicy, Decision, DenyAllPolicy
from tinyagent_fs.providers import LocalProvider

from ..conftest import audit_events


async def test_unknown_tool_is_a_structured_error(fs: FileTools) -> None:
    result = await fs.call("format_disk", {})
    assert result.error.code == "UNKNOWN_TOOL"
    assert "read_file" in result.error.hint


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({}, "missing required argument(s) path"),
        ({"path": 3}, "path must be string"),
        ({"path": "a", "bogus": 1}, "unknown argument(s) bogus"),
        ({"path": "a", "offset": -1}, "offset must be at least 0"),
        ({"path": "a", "offset": True}, "offset must be integer"),
        ("not an object", "arguments must be a JSON object"),
    ],
)
async def test_bad_arguments_are_invalid_argument(fs: FileTools, args, fragment: str) -> None:
    result = await fs.call("read_file", args)
    assert result.error.code == "INVALID_ARGUMENT"
    assert fragment in result.error.message


async def test_a_crashing_hook_becomes_an_internal_error_not_an_exception(
    project: Path, audit
) -> None:
    class Broken:
        def before_tool_execution(self, call):
            raise RuntimeError("boom")

    fs = FileTools(project, hooks=[Broken()], audit=audit)
    result = await fs.write_file("a.txt", "x")
    assert result.error.code == "INTERNAL_ERROR"
    assert "boom" in result.error.message
    assert not (project / "a.txt").exists()


async def test_every_call_is_audited_including_denied_and_failed(project: Path, audit) -> None:
    fs = FileTools(project, hooks=[DenyAllPolicy()], audit=audit)
    await fs.read_file("README.md")
    await fs.read_file("missing.txt")
    await fs.write_file("a.txt", "x")
    await fs.read_file("../outside")
    events = audit_events(audit)
    assert [e["outcome"] for e in events] == ["ok", "error", "denied", "error"]
    assert events[1]["error_code"] == "NOT_FOUND"
    assert events[2]["decision"] == "deny" and events[2]["decided_by"] == "deny-all"
    assert events[3]["security_violation"] is True
    assert events[3]["error_code"] == "PATH_OUTSIDE_ROOT"


async def test_audit_records_diff_lines_and_bytes_for_changes(project: Path, audit) -> None:
    fs = FileTools(project, hooks=[AutoApprovePolicy()], audit=audit)
    await fs.write_file("a.txt", "one\ntwo\n")
    event = audit_events(audit)[-1]
    assert event["lines_added"] == 2 and event["bytes_written"] == 8
    assert event["paths"] == ["a.txt"]
    assert event["abs_paths"] == [str(project.resolve() / "a.txt")]
    assert "+one" in event["diff"]
    assert event["arguments"]["path"] == "a.txt"


async def test_audit_log_lives_outside_the_root_by_default(project: Path) -> None:
    fs = FileTools(project, hooks=[AutoApprovePolicy()])
    await fs.read_file("README.md")
    assert not fs.audit.path.resolve().is_relative_to(project.resolve())
    assert fs.audit.path.exists()


async def test_request_budget_stops_a_runaway_loop(project: Path, audit) -> None:
    fs = FileTools(
        project,
        policy=SandboxPolicy(max_requests_per_round=2),
        hooks=[AutoApprovePolicy()],
        audit=audit,
    )
    assert (await fs.read_file("README.md")).ok
    assert (await fs.read_file("README.md")).ok
    assert (await fs.read_file("README.md")).error.code == "RATE_LIMITED"
    fs.new_round()
    assert (await fs.read_file("README.md")).ok


async def test_byte_budget_counts_bytes_read(project: Path, audit) -> None:
    fs = FileTools(
        project,
        policy=SandboxPolicy(max_bytes_per_round=12),
        hooks=[AutoApprovePolicy()],
        audit=audit,
    )
    assert (await fs.read_file("README.md")).ok
    assert (await fs.read_file("README.md")).error.code == "RATE_LIMITED"


def test_schemas_exist_for_every_tool_in_every_format(project: Path, audit) -> None:
    fs = FileTools(project, audit=audit)
    for fmt in ("openai", "anthropic", "json"):
        schemas = fs.tool_schemas(fmt)
        assert len(schemas) == len(fs.tool_names())
    openai = {s["function"]["name"]: s for s in fs.tool_schemas("openai")}
    assert openai["edit_file"]["function"]["parameters"]["required"] == [
        "path",
        "old_string",
        "new_string",
    ]
    anthropic = fs.tool_schemas("anthropic")
    assert all(set(s) == {"name", "description", "input_schema"} for s in anthropic)
    with pytest.raises(ValueError, match="unknown schema format"):
        fs.tool_schemas("yaml")


async def test_escapes_are_refused_before_any_hook_is_asked(project: Path, audit) -> None:
    asked = []

    class Person:
        def before_tool_execution(self, call):
            asked.append(call.tool)
            return Decision.proceed("person")

    fs = FileTools(project, hooks=[Person()], audit=audit)
    assert (await fs.write_file("../evil.txt", "x")).error.code == "PATH_OUTSIDE_ROOT"
    assert (await fs.read_file(".env")).error.code == "DENIED_PATTERN"
    assert asked == []
    assert [e["decision"] for e in audit_events(audit)] == ["none", "none"]
    await fs.close()


async def test_read_many_files_paths_are_guarded_before_any_hook_is_asked(
    project: Path, audit
) -> None:
    """Each entry of ``paths`` is a path its spec declares, so the guard sees every one."""
    asked = []

    class Person:
        def before_tool_execution(self, call):
            asked.append(call.tool)
            return Decision.proceed("person")

    (project / ".env").write_text("TOKEN=1\n")
    fs = FileTools(project, hooks=[Person()], audit=audit)
    outside = await fs.read_many_files(["docs/guide.md", "../outside.txt"])
    secret = await fs.read_many_files(["docs/guide.md", ".env"])
    assert outside.error.code == "PATH_OUTSIDE_ROOT"
    assert secret.error.code == "DENIED_PATTERN"
    assert asked == []
    logged = audit_events(audit)
    assert [(e["decision"], e["paths"]) for e in logged] == [
        ("none", ["docs/guide.md", "../outside.txt"]),
        ("none", ["docs/guide.md", ".env"]),
    ]
    assert all(e["security_violation"] for e in logged)
    await fs.close()


class DiffBlind:
    """A hook that says it never reads ``ToolCall.diff`` (as AutoApprovePolicy does)."""

    reads_diff = False

    def __init__(self) -> None:
        self.diffs: list[str] = []

    def before_tool_execution(self, call):  # type: ignore[no-untyped-def]
        self.diffs.append(call.diff)
        return Decision.proceed()


class DiffReader(DiffBlind):
    reads_diff = True


@pytest.mark.parametrize("also_reading", [False, True])
async def test_a_diff_no_hook_reads_is_left_out_of_review_and_made_for_the_result(
    project: Path, audit, also_reading: bool
) -> None:
    blind, reader = DiffBlind(), DiffReader()
    hooks = [blind, reader] if also_reading else [blind]
    fs = FileTools(project, provider=LocalProvider(), hooks=hooks, audit=audit)
    (project / "a.txt").write_text("one\ntwo\n")
    await fs.read_file("a.txt")
    overwritten = await fs.write_file("a.txt", "one\nTWO\nthree\n")
    created = await fs.write_file("b.txt", "x\ny\nz")
    await fs.close()
    expected = "@@ -1,2 +1,3 @@\n one\n-two\n+TWO\n+three\n"
    if also_reading:  # every hook sees the diff when one of them reads it
        assert expected in blind.diffs[1] and reader.diffs[1] == blind.diffs[1]
    else:
        assert blind.diffs == ["", "", ""]  # the read, then the two writes
    assert overwritten.data["lines"] == 3 and created.data["lines"] == 3
    assert (overwritten.data["lines_added"], overwritten.data["lines_removed"]) == (2, 1)
    assert (created.data["lines_added"], created.data["lines_removed"]) == (3, 0)
    events = [e for e in audit_events(audit) if e["tool"] == "write_file"]
    assert expected in events[0]["diff"] and "+x\n+y\n+z" in events[1]["diff"]
    assert [e["lines_added"] for e in events] == [2, 3]
