"""The hook protocol around real tool calls: deny, modify, alternative, after, order."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import (
    AutoApprovePolicy,
    Decision,
    DenyAllPolicy,
    RiskBasedPolicy,
    ToolCall,
)
from tinyagent_fs.result import ToolResult


class Recorder:
    def __init__(self, decision: Decision | None = None) -> None:
        self.calls: list[ToolCall] = []
        self.decision = decision or Decision.proceed("recorder")

    def before_tool_execution(self, call: ToolCall) -> Decision:
        self.calls.append(call)
        return self.decision


async def test_hooks_see_the_changeset_and_its_diff(project: Path, audit) -> None:
    seen = Recorder()
    fs = FileTools(project, hooks=[seen], audit=audit)
    assert (await fs.edit_file("README.md", "# Sample", "# Example")).ok
    call = seen.calls[0]
    assert call.changeset is not None
    assert "-# Sample" in call.diff and "+# Example" in call.diff
    assert call.changeset.describe()["files"][0]["path"] == "README.md"


async def test_deny_reaches_the_model_and_changes_nothing(project: Path, audit) -> None:
    fs = FileTools(project, hooks=[Recorder(Decision.deny("not today", "person"))], audit=audit)
    result = await fs.write_file("README.md", "gone\n")
    assert result.error.code == "DENIED_BY_HOOK"
    assert "not today" in result.text
    assert (project / "README.md").read_text() == "# Sample\n"


async def test_first_deny_wins_and_later_hooks_are_not_asked(project: Path, audit) -> None:
    later = Recorder()
    fs = FileTools(project, hooks=[DenyAllPolicy(), later], audit=audit)
    assert (await fs.write_file("x.txt", "x")).error.code == "DENIED_BY_HOOK"
    assert later.calls == []


async def test_modify_content_is_applied_and_the_model_is_told(project: Path, audit) -> None:
    person = Recorder(
        Decision.modify(
            content={"README.md": "# Edited by a person\n"},
            message="kept the title short",
            decided_by="person",
        )
    )
    fs = FileTools(project, hooks=[person], audit=audit)
    result = await fs.edit_file("README.md", "# Sample", "# A much longer title")
    assert result.ok
    assert (project / "README.md").read_text() == "# Edited by a person\n"
    assert "person modified this call" in result.text
    assert "kept the title short" in result.text
    assert "+# Edited by a person" in result.text


async def test_modify_args_replans_the_call(project: Path, audit) -> None:
    person = Recorder(
        Decision.modify(args={"path": "other.txt", "content": "y\n"}, decided_by="person")
    )
    fs = FileTools(project, hooks=[person], audit=audit)
    result = await fs.write_file("x.txt", "x\n")
    assert result.ok
    assert not (project / "x.txt").exists()
    assert (project / "other.txt").read_text() == "y\n"


async def test_hooks_after_a_modify_review_the_modified_call(project: Path, audit) -> None:
    person = Recorder(Decision.modify(args={"path": "other.txt", "content": "y\n"}))
    policy = Recorder()
    fs = FileTools(project, hooks=[person, policy], audit=audit)
    await fs.write_file("x.txt", "x\n")
    assert policy.calls[0].args["path"] == "other.txt"


async def test_alternative_response_replaces_the_call(project: Path, audit) -> None:
    hook = Recorder(Decision.alternative("cached answer"))
    fs = FileTools(project, hooks=[hook], audit=audit)
    result = await fs.read_file("README.md")
    assert result.ok and result.text == "cached answer"


async def test_async_hooks_and_after_hooks_can_replace_results(project: Path, audit) -> None:
    class Redactor:
        async def before_tool_execution(self, call: ToolCall) -> Decision:
            return Decision.proceed()

        async def after_tool_execution(self, call: ToolCall, result: ToolResult) -> ToolResult:
            return ToolResult(
                result.ok, result.text.replace("Sample", "[redacted]"), result.data, result.error
            )

    fs = FileTools(project, hooks=[Redactor()], audit=audit)
    result = await fs.read_file("README.md")
    assert "[redacted]" in result.text


async def test_risk_based_policy_without_approver_denies_writes_saying_how_to_allow(
    project: Path, audit
) -> None:
    fs = FileTools(project, hooks=[RiskBasedPolicy()], audit=audit)
    assert (await fs.read_file("README.md")).ok
    result = await fs.write_file("README.md", "x")
    assert result.error.code == "DENIED_BY_HOOK"
    assert "auto-approve" in result.text


async def test_risk_based_policy_asks_its_approver_and_honours_trust(project: Path, audit) -> None:
    approver = Recorder()
    policy = RiskBasedPolicy(approver=approver)
    fs = FileTools(project, hooks=[policy], audit=audit)
    assert (await fs.write_file("a.txt", "1")).ok
    assert len(approver.calls) == 1
    policy.trust_path("a.txt")
    assert (await fs.write_file("a.txt", "2")).ok
    assert len(approver.calls) == 1


async def test_auto_approve_lets_writes_through(project: Path, audit) -> None:
    fs = FileTools(project, hooks=[AutoApprovePolicy()], audit=audit)
    assert (await fs.write_file("a.txt", "1")).ok


class Answers:
    """A hook that answers with whatever it was given, Decision or not."""

    name = "sloppy-hook"

    def __init__(self, answer: object) -> None:
        self.answer = answer

    async def before_tool_execution(self, call: ToolCall) -> object:
        return self.answer


@pytest.mark.parametrize(
    "answer", [{"proceed": False}, {"proceed": True}, True, "yes", 1, ["proceed"]]
)
async def test_an_answer_that_is_not_a_decision_denies_and_names_the_hook(
    project: Path, audit, answer: object
) -> None:
    before = (project / "README.md").read_bytes()
    fs = FileTools(project, hooks=[Answers(answer)], audit=audit)
    result = await fs.write_file("README.md", "overwritten\n")
    assert not result.ok
    assert result.error is not None and result.error.code == "DENIED_BY_HOOK"
    assert "sloppy-hook" in result.text and "not a Decision" in result.text
    assert (project / "README.md").read_bytes() == before


async def test_a_hook_answering_none_lets_the_call_proceed(project: Path, audit) -> None:
    fs = FileTools(project, hooks=[Answers(None)], audit=audit)
    assert (await fs.write_file("README.md", "kept\n")).ok
    assert (project / "README.md").read_text() == "kept\n"
