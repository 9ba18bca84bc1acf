"""``tinyagent-fs mcp`` as an MCP client sees it: the SDK's own client over stdio.

Each test starts the real server process (``python -m tinyagent_fs mcp``) and
talks to it with ``mcp.Client``. Elicitation is answered by the client's
callback, as a client application would after showing the person the question;
both protocol eras are covered: 2025-11-25 (``mode="legacy"``, the server sends
an ``elicitation/create`` request mid-call) and 2026-07-28 (``mode="auto"``, the
server answers ``InputRequiredResult`` and the client retries with the answer).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tinyagent_fs import __version__
from tinyagent_fs.cli import main
from tinyagent_fs.tools.registry import tool_table
from tinyagent_fs.tools.schema_export import portable_schema

from ..mcp_sdk import Answer, connect, error_code, events

OVERWRITING = {
    "write_file",
    "edit_file",
    "multi_edit",
    "apply_patch",
    "move_path",
    "copy_path",
    "update_file",
    "delete_path",
    "undo",
    "run_command",
    "exec_command",
    "write_stdin",
    "close_session",
}


EDIT = {"path": "src/pkg/core.py", "old_string": "return a - b", "new_string": "return b - a"}


async def test_lists_every_tool_with_our_schema_and_risk_hints(
    project: Path, isolated_audit_dir: Path
) -> None:
    async with connect(project, isolated_audit_dir, "auto-approve") as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        server = client.server_info

    specs = tool_table()
    assert set(listed) == {*specs, "list_allowed_directories"}
    assert (server.name, server.version) == ("tinyagent-fs", __version__)
    for name, spec in specs.items():
        assert listed[name].input_schema == portable_schema(spec.parameters)
        assert '"null"' not in json.dumps(listed[name].input_schema)
        assert listed[name].description == spec.description
        assert listed[name].title and listed[name].annotations.title == listed[name].title
        assert listed[name].output_schema["required"] == ["ok", "data"]
    destructive = {name for name, t in listed.items() if t.annotations.destructive_hint}
    assert destructive == OVERWRITING
    assert listed["read_file"].annotations.read_only_hint is True
    assert listed["create_directory"].annotations.read_only_hint is False
    assert listed["grep"].annotations.idempotent_hint is True
    assert listed["write_file"].annotations.idempotent_hint is False
    assert listed["list_allowed_directories"].annotations.read_only_hint is True


async def test_reads_edits_and_refuses_an_escape_all_audited(
    project: Path, isolated_audit_dir: Path
) -> None:
    async with connect(project, isolated_audit_dir, "auto-approve") as client:
        read = await client.call_tool("read_file", {"path": "src/pkg/core.py"})
        edit = await client.call_tool("edit_file", EDIT)
        escape = await client.call_tool("write_file", {"path": "../evil.txt", "content": "x"})

    assert not read.is_error
    assert "     5\tdef sub(a, b):" in read.content[0].text
    assert not edit.is_error
    edit_lines = edit.content[0].text.splitlines()
    assert edit_lines[0].startswith("Edited src/pkg/core.py: 1 replacement(s)")
    assert edit_lines[1].startswith("@@ ")
    assert "-    return a - b\n+    return b - a" in "\n".join(edit_lines[:10])
    assert "return b - a" in (project / "src/pkg/core.py").read_text()
    assert escape.is_error
    assert error_code(escape) == "PATH_OUTSIDE_ROOT"
    assert not (project.parent / "evil.txt").exists()
    logged = events(isolated_audit_dir)
    assert [(e["tool"], e["outcome"]) for e in logged] == [
        ("read_file", "ok"),
        ("edit_file", "ok"),
        ("write_file", "error"),
    ]
    assert logged[1]["decided_by"] == "auto-approve"
    assert logged[2]["security_violation"] is True


async def test_a_policy_denial_reaches_the_client_and_changes_nothing(
    project: Path, isolated_audit_dir: Path
) -> None:
    before = (project / "src/pkg/core.py").read_text()
    async with connect(project, isolated_audit_dir, "deny-all") as client:
        denied = await client.call_tool("edit_file", EDIT)

    assert denied.is_error
    assert error_code(denied) == "DENIED_BY_HOOK"
    assert "deny-all policy allows only reads" in denied.content[0].text
    assert (project / "src/pkg/core.py").read_text() == before
    assert events(isolated_audit_dir)[-1]["outcome"] == "denied"


async def test_without_elicitation_the_risk_based_policy_refuses_and_says_how_to_allow(
    project: Path, isolated_audit_dir: Path
) -> None:
    async with connect(project, isolated_audit_dir, "risk-based") as client:
        read = await client.call_tool("file_exists", {"path": "README.md"})
        denied = await client.call_tool("edit_file", EDIT)

    assert not read.is_error
    assert error_code(denied) == "DENIED_BY_HOOK"
    assert "does not support elicitation" in denied.content[0].text
    assert "--policy auto-approve" in denied.content[0].text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_approved_elicitation_applies_the_edit(
    project: Path, isolated_audit_dir: Path, mode: str
) -> None:
    questions: list[str] = []
    answers = [Answer(action="accept", content={"approve": True})]
    async with connect(
        project, isolated_audit_dir, "risk-based", mode=mode, answers=answers, questions=questions
    ) as client:
        edit = await client.call_tool("edit_file", EDIT)

    assert not edit.is_error, edit.content[0].text
    assert "return b - a" in (project / "src/pkg/core.py").read_text()
    [question] = questions
    assert "edit_file on src/pkg/core.py (+1 -1 lines)" in question
    assert "-    return a - b\n+    return b - a" in question
    applied = [e for e in events(isolated_audit_dir) if e["outcome"] == "ok"][-1]
    assert (applied["tool"], applied["decided_by"]) == ("edit_file", "mcp-elicitation")
    assert applied["change_id"]


@pytest.mark.parametrize(
    ("mode", "answer", "told"),
    [
        ("legacy", Answer(action="decline"), "the person declined this change"),
        ("auto", Answer(action="decline"), "the person declined this change"),
        ("auto", Answer(action="cancel"), "dismissed the approval request"),
        (
            "legacy",
            Answer(action="accept", content={"approve": False, "reason": "keep a - b"}),
            "keep a - b",
        ),
    ],
)
async def test_a_declined_elicitation_denies_the_edit_with_the_persons_reason(
    project: Path, isolated_audit_dir: Path, mode: str, answer: Answer, told: str
) -> None:
    before = (project / "src/pkg/core.py").read_text()
    questions: list[str] = []
    async with connect(
        project, isolated_audit_dir, "risk-based", mode=mode, answers=[answer], questions=questions
    ) as client:
        denied = await client.call_tool("edit_file", EDIT)

    assert len(questions) == 1
    assert error_code(denied) == "DENIED_BY_HOOK"
    assert told in denied.content[0].text
    assert (project / "src/pkg/core.py").read_text() == before
    last = events(isolated_audit_dir)[-1]
    assert (last["outcome"], last["decided_by"]) == ("denied", "mcp-elicitation")


async def test_structured_results_match_the_declared_output_schema(
    project: Path, isolated_audit_dir: Path
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    async with connect(project, isolated_audit_dir, "auto-approve") as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        read = await client.call_tool("read_file", {"path": "src/pkg/core.py"})
        missing = await client.call_tool("read_file", {"path": "no/such.py"})
        tree = await client.call_tool("list_directory", {"path": "src", "depth": 2})

    for result in (read, missing):
        jsonschema.validate(result.structured_content, listed["read_file"].output_schema)
    assert read.structured_content["ok"] is True and "error" not in read.structured_content
    assert error_code(missing) == "NOT_FOUND"
    jsonschema.validate(tree.structured_content, listed["list_directory"].output_schema)
    listing = tree.structured_content["data"]
    assert listing["paths"] == ["src/pkg", "src/pkg/__init__.py", "src/pkg/core.py"]
    assert listing["directories"] == ["src/pkg"] and listing["symlinks"] == []
    assert tree.content[0].text.splitlines()[1:] == ["pkg/", "  __init__.py", "  core.py"]


async def test_the_per_minute_request_budget_comes_from_the_command_line(
    project: Path, isolated_audit_dir: Path
) -> None:
    limited = ("--max-requests-per-minute", "2")
    async with connect(project, isolated_audit_dir, "auto-approve", extra_args=limited) as client:
        calls = [await client.call_tool("file_exists", {"path": "README.md"}) for _ in range(3)]
    assert [error_code(call) for call in calls] == [None, None, "RATE_LIMITED"]

    off = ("--max-requests-per-minute", "0", "--max-bytes-per-minute", "0")
    async with connect(project, isolated_audit_dir, "auto-approve", extra_args=off) as client:
        calls = [await client.call_tool("file_exists", {"path": "README.md"}) for _ in range(600)]
    assert all(not call.is_error for call in calls)


async def test_the_per_minute_byte_budget_comes_from_the_command_line(
    project: Path, isolated_audit_dir: Path
) -> None:
    size = (project / "src/pkg/core.py").stat().st_size
    limited = ("--max-bytes-per-minute", str(size + size // 2))
    async with connect(project, isolated_audit_dir, "auto-approve", extra_args=limited) as client:
        first = await client.call_tool("read_file", {"path": "src/pkg/core.py"})
        second = await client.call_tool("read_file", {"path": "src/pkg/core.py"})
    assert (error_code(first), error_code(second)) == (None, "RATE_LIMITED")


def test_a_negative_budget_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["mcp", "--root", str(tmp_path), "--max-requests-per-minute", "-1"]) == 2
    assert "0 (off) or more" in capsys.readouterr().err


def test_a_missing_root_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["mcp", "--root", str(tmp_path / "missing")]) == 2
    assert "tinyagent-fs mcp:" in capsys.readouterr().err
