"""The real TinyAgent driving our tools and hooks; only the remote model is scripted.

TinyAgent calls its model through ``litellm.acompletion``. litellm's supported
extension point for other backends, a ``CustomLLM`` registered in
``litellm.custom_provider_map``, stands in for the network service: it answers
each turn from a script and keeps the messages it was sent, so a test can check
what the model saw. Everything else (TinyAgent's loop, its callbacks, our tools,
hooks, sandbox guard and audit log) is the real thing.
"""

from __future__ import annotations

import importlib.resources
import io
import json
import os
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import

import litellm
from litellm import CustomLLM, ModelResponse
from tinyagent import TinyAgent, tool

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import (
    AutoApprovePolicy,
    Decision,
    DenyAllPolicy,
    RiskBasedPolicy,
    ToolCall,
)
from tinyagent_fs.hooks.terminal import TerminalHook
from tinyagent_fs.integrations.tinyagent import TinyAgentApprovalHook, register_tools

from ..conftest import audit_events

Turn = list[tuple[str, dict[str, Any]]] | Callable[[list], list[tuple[str, dict[str, Any]]]]


class ScriptedModel(CustomLLM):
    """The remote model's replies, one scripted turn per completion request."""

    def __init__(self, turns: list[Turn]) -> None:
        super().__init__()
        self.turns = list(turns)
        self.requests: list[list[dict[str, Any]]] = []

    async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
        self.requests.append([dict(m) for m in messages])
        if not self.turns:
            raise RuntimeError("the script has no more turns")
        calls = self.turns.pop(0)
        if callable(calls):  # a turn that reads the conversation, as a model does
            calls = calls(messages)
        turn = len(self.requests)
        return ModelResponse(
            choices=[
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": f"call_{turn}_{i}",
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)},
                            }
                            for i, (name, args) in enumerate(calls)
                        ],
                    },
                }
            ]
        )

    def tool_replies(self) -> dict[str, str]:
        """What the model was told for each tool call, by call id."""
        return {
            m["tool_call_id"]: m["content"]
            for request in self.requests
            for m in request
            if m.get("role") == "tool"
        }


@pytest.fixture(autouse=True)
def offline_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """TinyAgent loads a tiktoken encoding; litellm ships it, so no download is needed."""
    bundled = importlib.resources.files(litellm).joinpath("litellm_core_utils/tokenizers")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(bundled))


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> ScriptedModel:
    """The scripted model, installed as litellm's "scripted/" provider for this test only."""
    scripted = ScriptedModel([])
    providers = [{"provider": "scripted", "custom_handler": scripted}]
    monkeypatch.setattr(litellm, "custom_provider_map", providers)
    return scripted


@pytest.fixture
async def agent() -> AsyncIterator[TinyAgent]:
    made = TinyAgent(
        model="scripted/test",
        api_key="unused",
        enable_todo_write=False,
        enable_custom_instruction=False,
        retry_config={"max_retries": 0},
        tool_call_timeout=60,
    )
    yield made
    await made.close()


class Approver:
    """A person who approves every change and remembers what they were shown."""

    name = "person"

    def __init__(self) -> None:
        self.seen: list[ToolCall] = []

    def before_tool_execution(self, call: ToolCall) -> Decision:
        self.seen.append(call)
        return Decision.proceed(decided_by=self.name)


async def test_agent_reads_edits_with_approval_and_is_refused_outside_the_root(
    project: Path, audit: AuditLog, agent: TinyAgent, model: ScriptedModel
) -> None:
    person = TerminalHook(input_stream=io.StringIO("y\n"), output_stream=io.StringIO())
    fs = FileTools(project, hooks=[RiskBasedPolicy(approver=person)], audit=audit)
    register_tools(agent, fs)
    TinyAgentApprovalHook(fs).attach(agent)
    model.turns += [
        [("read_file", {"path": "src/pkg/core.py"})],
        [
            (
                "edit_file",
                {
                    "path": "src/pkg/core.py",
                    "old_string": "return a + b",
                    "new_string": "return b + a",
                },
            )
        ],
        [("write_file", {"path": "../outside.txt", "content": "escaped"})],
        [("final_answer", {"content": "done"})],
    ]

    answer = await agent.run("swap the operands in add", max_turns=6)
    await fs.close()

    assert answer == "done"
    replies = model.tool_replies()
    assert "     2\t    return a + b" in replies["call_1_0"]
    assert replies["call_2_0"].startswith("Edited src/pkg/core.py")
    assert replies["call_3_0"].startswith("Error [PATH_OUTSIDE_ROOT]")
    assert "return b + a" in (project / "src/pkg/core.py").read_text()
    assert not (project.parent / "outside.txt").exists()
    events = audit_events(audit)
    assert [(e["tool"], e["outcome"]) for e in events] == [
        ("read_file", "ok"),
        ("edit_file", "ok"),
        ("write_file", "error"),
    ]
    assert events[1]["decided_by"] == "terminal"
    assert "+    return b + a" in events[1]["diff"]
    assert events[2]["security_violation"] is True


async def test_our_tools_replace_the_agents_own_and_carry_our_schemas(
    project: Path, audit: AuditLog, agent: TinyAgent
) -> None:
    @tool(name="read_file", description="TinyAgent's own reader")
    async def builtin_read(file_path: str) -> str:
        return "builtin"

    agent.add_tool(builtin_read)
    fs = FileTools(project, audit=audit)
    added = register_tools(agent, fs, tools=["read_file", "edit_file", "update_file"])

    assert added == ["read_file", "edit_file", "update_file"]
    names = [entry["function"]["name"] for entry in agent.available_tools]
    assert names.count("read_file") == 1
    ours = {s["function"]["name"]: s for s in fs.tool_schemas("openai")}
    for entry in agent.available_tools:
        assert entry == ours[entry["function"]["name"]]
    await fs.close()


async def test_without_replace_builtin_the_agents_own_tool_stays(
    project: Path, audit: AuditLog, agent: TinyAgent
) -> None:
    @tool(name="read_file", description="TinyAgent's own reader")
    async def builtin_read(file_path: str) -> str:
        return "builtin"

    agent.add_tool(builtin_read)
    fs = FileTools(project, audit=audit)
    added = register_tools(agent, fs, tools=["read_file", "glob"], replace_builtin=False)

    assert added == ["glob"]
    assert agent.custom_tool_handlers["read_file"] is builtin_read
    await fs.close()


def test_unknown_tool_names_are_refused(project: Path, audit: AuditLog) -> None:
    fs = FileTools(project, audit=audit)
    with pytest.raises(ValueError, match="format_disk"):
        register_tools(object(), fs, tools=["format_disk"])


async def test_the_agents_own_tools_are_denied_by_our_policy_and_never_run(
    project: Path, audit: AuditLog, agent: TinyAgent, model: ScriptedModel
) -> None:
    ran: list[str] = []

    @tool(name="bash", description="Run a shell command")
    async def bash(command: str) -> str:
        ran.append(command)
        return "ran"

    agent.add_tool(bash)
    fs = FileTools(project, hooks=[DenyAllPolicy()], audit=audit)
    TinyAgentApprovalHook(fs).attach(agent)
    model.turns += [[("bash", {"command": "rm -rf ~"})], [("final_answer", {"content": "ok"})]]

    await agent.run("clean up", max_turns=4)
    await fs.close()

    assert ran == []
    assert model.tool_replies()["call_1_0"].startswith("Denied: bash was refused")
    [event] = audit_events(audit)
    assert (event["tool"], event["outcome"], event["decided_by"]) == ("bash", "denied", "deny-all")
    assert event["provider"] == "tinyagent"
    assert event["arguments"] == {"command": "rm -rf ~"}


async def test_modify_rewrites_the_arguments_tinyagent_passes_to_its_tool(
    project: Path, audit: AuditLog, agent: TinyAgent, model: ScriptedModel
) -> None:
    ran: list[str] = []

    @tool(name="bash", description="Run a shell command")
    async def bash(command: str) -> str:
        ran.append(command)
        return f"ran {command}"

    class Reviewer:
        def before_tool_execution(self, call: ToolCall) -> Decision:
            return Decision.modify(
                args={"command": "ls"}, message="only listing is allowed", decided_by="person"
            )

    agent.add_tool(bash)
    fs = FileTools(project, hooks=[Reviewer()], audit=audit)
    TinyAgentApprovalHook(fs).attach(agent)
    model.turns += [[("bash", {"command": "rm -rf build"})], [("final_answer", {"content": "ok"})]]

    await agent.run("clean up", max_turns=4)
    await fs.close()

    assert ran == ["ls"]
    reply = model.tool_replies()["call_1_0"]
    assert reply.startswith("ran ls\nNote: person modified this call before it ran")
    assert "only listing is allowed" in reply
    assert '"command": "ls"' in reply
    [event] = audit_events(audit)
    assert (event["decision"], event["arguments"]) == ("modify", {"command": "ls"})


async def test_our_own_tools_are_reviewed_once_not_twice(
    project: Path, audit: AuditLog, agent: TinyAgent, model: ScriptedModel
) -> None:
    person = Approver()
    fs = FileTools(project, hooks=[person], audit=audit)
    register_tools(agent, fs)
    TinyAgentApprovalHook(fs).attach(agent)
    model.turns += [
        [("write_file", {"path": "notes.txt", "content": "hi\n"})],
        [("final_answer", {"content": "ok"})],
    ]

    await agent.run("take a note", max_turns=4)
    await fs.close()

    assert [(c.tool, c.changeset is not None) for c in person.seen] == [("write_file", True)]
    assert (project / "notes.txt").read_text() == "hi\n"
    assert len(audit_events(audit)) == 1


async def test_a_failing_hook_refuses_the_call_instead_of_letting_it_run(
    project: Path, audit: AuditLog, agent: TinyAgent, model: ScriptedModel
) -> None:
    ran: list[str] = []

    @tool(name="bash", description="Run a shell command")
    async def bash(command: str) -> str:
        ran.append(command)
        return "ran"

    class Broken:
        def before_tool_execution(self, call: ToolCall) -> Decision:
            raise RuntimeError("widget went away")

    agent.add_tool(bash)
    TinyAgentApprovalHook([Broken()], audit=audit).attach(agent)
    model.turns += [[("bash", {"command": "make"})], [("final_answer", {"content": "ok"})]]

    await agent.run("build", max_turns=4)

    assert ran == []
    reply = model.tool_replies()["call_1_0"]
    assert "the approval step failed (RuntimeError: widget went away)" in reply
    assert audit_events(audit)[0]["outcome"] == "denied"


async def test_each_agent_run_starts_a_new_round_budget(
    project: Path, audit: AuditLog, agent: TinyAgent, model: ScriptedModel
) -> None:
    fs = FileTools(project, SandboxPolicy(max_requests_per_round=2), audit=audit)
    register_tools(agent, fs)
    TinyAgentApprovalHook(fs).attach(agent)
    reads = [("file_exists", {"path": "README.md"}), ("file_exists", {"path": "docs"})]
    model.turns += [
        reads,
        [("final_answer", {"content": "1"})],
        reads,
        [("final_answer", {"content": "2"})],
    ]

    await agent.run("first", max_turns=4)
    await agent.run("second", max_turns=4)
    await fs.close()

    outcomes = [e["outcome"] for e in audit_events(audit)]
    assert outcomes == ["ok", "ok", "ok", "ok"]


async def test_agent_drives_an_interactive_session(
    project: Path, audit: AuditLog, agent: TinyAgent, model: ScriptedModel
) -> None:
    fs = FileTools(project, hooks=[AutoApprovePolicy()], audit=audit)
    added = register_tools(agent, fs)
    assert {"exec_command", "write_stdin", "close_session"} <= set(added)

    def typing(chars: str, yield_ms: int) -> Callable[[list], list]:
        def turn(messages: list) -> list:
            started = next(m for m in messages if m.get("tool_call_id") == "call_1_0")
            session_id = re.search(r'session_id="([^"]+)"', started["content"]).group(1)
            args = {"session_id": session_id, "chars": chars, "yield_time_ms": yield_ms}
            return [("write_stdin", args)]

        return turn

    model.turns += [
        [("exec_command", {"cmd": "python3 -q", "yield_time_ms": 1500})],
        typing("print(6 * 7)\n", 500),
        typing("\u0004", 1000),
        [("final_answer", {"content": "done"})],
    ]
    answer = await agent.run("compute in a REPL", max_turns=6)
    await fs.close()
    assert answer == "done"
    replies = model.tool_replies()
    assert ">>>" in replies["call_1_0"] and 'session_id="1-' in replies["call_1_0"]
    assert "42" in replies["call_2_0"]
    assert "exited with code 0" in replies["call_3_0"]
