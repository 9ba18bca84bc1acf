"""The approval card and JupyterHook without a kernel.

A click is delivered as the comm delivers it: the custom message the card's page
sends (``approval_card.js``: one message with the decision and the whole form)
handed to the widget's ``_handle_msg``, on whichever thread the test chooses.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import ipywidgets as widgets
import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.audit.log import AuditEvent, AuditLog
from tinyagent_fs.changes.changeset import ChangeKind, ChangeSet, FileChange
from tinyagent_fs.hooks.decision import Risk, ToolCall, Verdict
from tinyagent_fs.providers import LocalProvider
from tinyagent_fs.tools.registry import tool_table
from tinyagent_fs.ui import AuditTable, JupyterHook
from tinyagent_fs.ui.config import load_settings

from ..card_support import from_page
from ..conftest import audit_events


def change_call(root: Path, call_id: str = "c1", tool: str = "write_file") -> ToolCall:
    old, new = "hello world\n", "hello there\n"
    change = FileChange(
        ChangeKind.MODIFY, root / "a.txt", old.encode(), new.encode(), old_text=old, new_text=new
    )
    changeset = ChangeSet(tool, (change,), root)
    return ToolCall(
        tool,
        {"path": "a.txt", "content": new},
        Risk.WRITE,
        changeset=changeset,
        diff=changeset.unified_diff(),
        call_id=call_id,
    )


def command_call(call_id: str = "r1") -> ToolCall:
    args = {"command": "pytest -q", "workdir": "src", "timeout_s": 30}
    return tool_table()["run_command"].review_call(args, call_id=call_id)


def interactive_hook(timeout_s: float = 0, default_on_timeout: str = "deny") -> JupyterHook:
    """Asks through widgets whatever the environment says (0 s: no timeout)."""
    return JupyterHook(
        "risk-based", timeout_s, default_on_timeout, frontend="widgets", container=widgets.VBox()
    )


async def started(hook: JupyterHook, call: ToolCall) -> asyncio.Task:
    """Begin waiting for an answer and return once the card is up."""
    task = asyncio.create_task(hook.ask(call))
    for _ in range(100):
        if call.call_id in hook.pending:
            return task
        await asyncio.sleep(0.01)
    raise AssertionError("the approval card never appeared")


async def test_approve_click_resolves_the_waiting_call(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = change_call(tmp_path)
    task = await started(hook, call)
    card = hook.pending[call.call_id].card
    assert card.widget in hook.container.children
    from_page(card, "approve")
    decision = await task
    assert decision.verdict is Verdict.PROCEED
    assert decision.decided_by == hook.who
    assert card.closed and card.widget.closed
    assert "Approved" in card.widget.record and "a.txt" in card.widget.record
    assert call.call_id not in hook.pending


async def test_click_from_another_thread_resolves_the_call(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = change_call(tmp_path)
    task = await started(hook, call)
    card = hook.pending[call.call_id].card
    clicker = threading.Thread(target=from_page, args=(card, "deny"), kwargs={"reason": "no"})
    clicker.start()
    clicker.join()
    decision = await asyncio.wait_for(task, 5)
    assert decision.verdict is Verdict.DENY
    assert decision.message == "no"


async def test_modify_sends_the_edited_content_and_says_how(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = change_call(tmp_path)
    task = await started(hook, call)
    card = hook.pending[call.call_id].card
    from_page(card, "modify", files={"a.txt": "hello reviewer\n"})
    decision = await task
    assert decision.verdict is Verdict.MODIFY
    assert decision.modified_content == {"a.txt": "hello reviewer\n"}
    assert "a person edited the proposed content of a.txt" in decision.message
    assert "+hello reviewer" in decision.message and "-hello there" in decision.message


async def test_modify_without_changes_is_an_approval(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = change_call(tmp_path)
    task = await started(hook, call)
    card = hook.pending[call.call_id].card
    from_page(card, "modify", files={"a.txt": "hello there\n"})
    assert (await task).verdict is Verdict.PROCEED


async def test_what_the_page_asks_to_see_decides_nothing(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = change_call(tmp_path)
    task = await started(hook, call)
    card = hook.pending[call.call_id].card
    for what in ("editors", "full-diff", "nonsense"):
        from_page(card, "load", what=what)
    for junk in ("approve", ["approve"], {"action": "unknown"}, {"action": None}):
        message = {"content": {"data": {"method": "custom", "content": junk}}, "buffers": []}
        card.widget._handle_msg(message)
    # Browser-side state syncs of the card's traits are not answers either.
    card.widget.set_state({"closed": True, "record": "<b>forged</b>"})
    await asyncio.sleep(0.05)
    assert not task.done() and not card.closed
    from_page(card, "modify", files={"a.txt": "hello there\n", "elsewhere.txt": "x"})
    assert (await task).verdict is Verdict.PROCEED


async def test_bad_json_arguments_keep_the_editor_open(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = command_call()
    task = await started(hook, call)
    card = hook.pending[call.call_id].card
    from_page(card, "modify", arguments='{"command": "pytest -x",')
    await asyncio.sleep(0.05)
    assert not task.done()
    assert "Not valid JSON" in card.error
    from_page(card, "modify", arguments='["pytest -x"]')
    assert not task.done() and "must be a JSON object" in card.error
    from_page(card, "modify", arguments='{"command": "pytest -x", "workdir": "src"}')
    decision = await task
    assert decision.verdict is Verdict.MODIFY
    assert decision.modified_args == {"command": "pytest -x", "workdir": "src"}
    assert "command" in decision.message and "timeout_s" in decision.message


async def test_deny_passes_the_reason(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = change_call(tmp_path)
    task = await started(hook, call)
    card = hook.pending[call.call_id].card
    from_page(card, "deny", reason="  keep the greeting as it is\n")
    decision = await task
    assert decision.verdict is Verdict.DENY
    assert decision.message == "keep the greeting as it is"
    assert "Denied" in card.widget.record and "keep the greeting" in card.widget.record


async def test_after_modify_the_record_and_details_show_what_was_written(
    tmp_path: Path,
) -> None:
    hook = interactive_hook()
    call = change_call(tmp_path)
    task = await started(hook, call)
    card = hook.pending[call.call_id].card
    from_page(card, "modify", files={"a.txt": "hello reviewer\nand more\n"})
    await task
    record, heading = card.widget.record, card.widget.heading
    assert "Modified" in record and "a person's version ran" in record
    assert "+2 −1" in record, record  # the written version's counts, not the proposal's +1 −1
    assert "Approval needed" not in heading and "What ran" in heading
    shown = card.widget.diff["unified"]["html"]
    assert "reviewer" in shown and "and more" in shown and "there" not in shown
    assert "world" in shown  # the diff is against the file as it was


async def test_after_modified_arguments_the_details_show_the_new_ones(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = command_call()
    task = await started(hook, call)
    card = hook.pending[call.call_id].card
    from_page(card, "modify", arguments='{"command": "pytest -x", "workdir": "src"}')
    await task
    assert "pytest -x" in card.widget.details and "pytest -q" not in card.widget.details
    assert "pytest -x" in card.widget.record


async def test_a_denied_record_says_nothing_was_changed(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = change_call(tmp_path)
    task = await started(hook, call)
    card = hook.pending[call.call_id].card
    from_page(card, "deny", reason="keep the patch")
    await task
    record = card.widget.record
    assert "Denied" in record and "nothing was changed; proposed:" in record
    assert "reason: keep the patch" in record
    assert "Approval needed" not in card.widget.heading
    assert "Not run, nothing was changed" in card.widget.heading


async def test_deny_without_a_reason_says_who_denied(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = change_call(tmp_path)
    task = await started(hook, call)
    from_page(hook.pending[call.call_id].card, "deny", reason="   ")
    assert (await task).message == "write_file was denied by a person in the notebook"


async def test_only_the_first_answer_counts(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = change_call(tmp_path)
    task = await started(hook, call)
    card = hook.pending[call.call_id].card
    from_page(card, "approve")
    from_page(card, "deny", reason="too late")
    from_page(card, "modify", files={"a.txt": "too late\n"})
    assert (await task).verdict is Verdict.PROCEED
    assert "Approved" in card.widget.record


async def test_several_pending_calls_resolve_independently(tmp_path: Path) -> None:
    hook = interactive_hook()
    first, second = change_call(tmp_path, "one"), change_call(tmp_path, "two")
    task_one = await started(hook, first)
    task_two = await started(hook, second)
    assert len(hook.container.children) == 2
    from_page(hook.pending["two"].card, "deny")
    assert (await task_two).verdict is Verdict.DENY
    assert not task_one.done()
    from_page(hook.pending["one"].card, "approve")
    assert (await task_one).verdict is Verdict.PROCEED


async def test_timeout_applies_the_default_decision(tmp_path: Path) -> None:
    hook = interactive_hook(timeout_s=0.2)
    call = change_call(tmp_path)
    decision = await asyncio.wait_for(hook.ask(call), 5)
    assert decision.verdict is Verdict.DENY
    assert "no answer within 0.2 s" in decision.message
    approving = interactive_hook(timeout_s=0.2, default_on_timeout="approve")
    assert (await approving.ask(change_call(tmp_path))).verdict is Verdict.PROCEED


async def test_cancelled_wait_closes_the_card(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = change_call(tmp_path)
    task = await started(hook, call)
    card = hook.pending[call.call_id].card
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert card.widget.closed
    assert "cancelled" in card.widget.record


def test_synchronous_caller_gets_the_default_after_its_timeout(tmp_path: Path) -> None:
    hook = interactive_hook()
    decision = hook.decide(change_call(tmp_path), timeout_s=0.3)
    assert decision.verdict is Verdict.DENY
    assert "no answer within 0.3 s" in decision.message


def test_synchronous_caller_gets_a_click_from_another_thread(tmp_path: Path) -> None:
    hook = interactive_hook()
    call = change_call(tmp_path)

    def click_when_shown() -> None:
        for _ in range(200):
            approval = hook.pending.get(call.call_id)
            if approval is not None:
                from_page(approval.card, "approve")
                return
            threading.Event().wait(0.01)

    clicker = threading.Thread(target=click_when_shown)
    clicker.start()
    decision = hook.decide(call, timeout_s=10)
    clicker.join()
    assert decision.verdict is Verdict.PROCEED


def test_commands_and_deletes_offer_no_trust(tmp_path: Path) -> None:
    hook = interactive_hook()
    assert hook.decide  # the card is built by _open; build it without waiting
    card = hook._open(command_call(), None).card
    assert card.widget.trust == {}
    assert "$ pytest -q" in card.widget.details and "src" in card.widget.details
    assert "commands always ask" in card.widget.heading
    write_card = hook._open(change_call(tmp_path), None).card
    assert write_card.widget.trust == {
        "path": "Trust a.txt for this session",
        "tool": "Trust every write_file call for this session",
    }


def test_show_all_and_side_by_side_rerender_the_diff(tmp_path: Path) -> None:
    old = "".join(f"line {i}\n" for i in range(1000))
    new = "".join(f"LINE {i}\n" for i in range(1000))
    change = FileChange(
        ChangeKind.MODIFY, tmp_path / "big.txt", old.encode(), new.encode(), old_text=old
    )
    changeset = ChangeSet("write_file", (change,), tmp_path)
    call = ToolCall(
        "write_file", {}, Risk.WRITE, changeset=changeset, diff=changeset.unified_diff()
    )
    card = interactive_hook()._open(call, None).card
    unified, paired = card.widget.diff["unified"], card.widget.diff["side-by-side"]
    assert (unified["total"], paired["total"]) == (2001, 1001)
    assert unified["truncated"] and paired["truncated"]
    assert "LINE 999" not in unified["html"] and "LINE 999" not in paired["html"]
    assert "taf-code taf-del" in paired["html"] and "taf-code taf-del" not in unified["html"]
    full = card._diff(None)
    assert not full["unified"]["truncated"] and "LINE 999" in full["unified"]["html"]
    assert "taf-code taf-del" in full["side-by-side"]["html"]
    assert "LINE 999" in full["side-by-side"]["html"]


async def test_trusting_a_file_lets_the_next_write_through(project: Path, audit: AuditLog) -> None:
    hook = interactive_hook()
    fs = FileTools(project, provider=LocalProvider(), hooks=[hook], audit=audit)
    first = asyncio.create_task(fs.write_file("README.md", "# One\n"))
    approval = await _first_pending(hook)
    from_page(approval.card, "approve", trust_path=True)
    assert (await first).ok
    second = await asyncio.wait_for(fs.write_file("README.md", "# Two\n"), 5)
    assert second.ok and (project / "README.md").read_text() == "# Two\n"
    events = audit_events(audit)
    assert events[-1]["decided_by"] == "risk-based (trusted for this session)"
    assert events[-2]["decided_by"] == hook.who


async def test_trust_counts_only_as_the_answer_carries_it_and_where_offered(
    project: Path, audit: AuditLog
) -> None:
    hook = interactive_hook()
    fs = FileTools(project, provider=LocalProvider(), hooks=[hook], audit=audit)
    first = asyncio.create_task(fs.write_file("README.md", "# One\n"))
    from_page((await _first_pending(hook)).card, "approve", trust_path=False, trust_tool=False)
    assert (await first).ok
    second = asyncio.create_task(fs.write_file("README.md", "# Two\n"))
    approval = await _first_pending(hook)
    from_page(approval.card, "deny", trust_path=True, trust_tool=True)
    assert not (await second).ok
    call = command_call()
    task = await started(hook, call)
    from_page(hook.pending[call.call_id].card, "approve", trust_tool=True, trust_path=True)
    assert (await task).verdict is Verdict.PROCEED
    assert not hook.risk_policy.is_trusted(command_call("r2"))
    third = asyncio.create_task(fs.write_file("README.md", "# Three\n"))
    from_page((await _first_pending(hook)).card, "approve", trust_tool=True)
    assert (await third).ok
    assert (await asyncio.wait_for(fs.write_file("other.md", "x\n"), 5)).ok
    events = audit_events(audit)
    assert [e["decided_by"] for e in events[-4:]] == [
        hook.who,
        hook.who,
        hook.who,
        "risk-based (trusted for this session)",
    ]


async def test_the_model_is_told_a_person_modified_the_change(
    project: Path, audit: AuditLog
) -> None:
    hook = interactive_hook()
    fs = FileTools(project, provider=LocalProvider(), hooks=[hook], audit=audit)
    task = asyncio.create_task(fs.write_file("README.md", "# Proposed\n"))
    approval = await _first_pending(hook)
    from_page(approval.card, "modify", files={"README.md": "# Reviewed\n"})
    result = await task
    assert result.ok
    assert (project / "README.md").read_text() == "# Reviewed\n"
    assert "modified this call before it ran" in result.text
    assert "a person edited the proposed content of README.md" in result.text
    assert audit_events(audit)[-1]["decision"] == "modify"


async def test_without_a_frontend_the_configured_policy_decides(
    project: Path, audit: AuditLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TINYAGENT_FS_POLICY", raising=False)
    hook = JupyterHook()
    assert not hook.mode.interactive
    assert "not running in a Jupyter kernel" in hook.describe()
    fs = FileTools(project, provider=LocalProvider(), hooks=[hook], audit=audit)
    assert (await fs.read_file("README.md")).ok
    refused = await fs.write_file("README.md", "# Changed\n")
    assert not refused.ok and "TINYAGENT_FS_POLICY=auto-approve" in refused.text
    monkeypatch.setenv("TINYAGENT_FS_POLICY", "auto-approve")
    approving = JupyterHook()
    assert "auto-approve policy decides every call" in approving.describe()
    fs = FileTools(project, provider=LocalProvider(), hooks=[approving], audit=audit)
    assert (await fs.write_file("README.md", "# Changed\n")).ok
    assert audit_events(audit)[-1]["decided_by"] == "auto-approve"


def test_settings_come_from_config_files_then_environment_then_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "jupyter_config.json").write_text(
        '{"TinyAgentFS": {"approval_timeout_s": 7, "policy": "deny-all"}}'
    )
    (tmp_path / "tinyagent_fs_config.py").write_text("c.TinyAgentFS.diff_preview_lines = 50\n")
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path))
    monkeypatch.delenv("TINYAGENT_FS_POLICY", raising=False)
    monkeypatch.delenv("TINYAGENT_FS_APPROVAL_TIMEOUT", raising=False)
    settings = load_settings()
    assert (settings.timeout, settings.policy, settings.diff_preview_lines) == (7, "deny-all", 50)
    monkeypatch.setenv("TINYAGENT_FS_POLICY", "auto-approve")
    monkeypatch.setenv("TINYAGENT_FS_APPROVAL_TIMEOUT", "0")
    settings = load_settings()
    assert (settings.timeout, settings.policy) == (None, "auto-approve")
    assert load_settings(policy="risk-based", approval_timeout_s=3).timeout == 3
    with pytest.raises(ValueError, match="unknown policy"):
        load_settings(policy="yolo")


async def _first_pending(hook: JupyterHook):
    for _ in range(200):
        if hook.pending:
            return next(iter(hook.pending.values()))
        await asyncio.sleep(0.01)
    raise AssertionError("no approval appeared")


def test_audit_table_text_is_stable_and_html_flags_violations() -> None:
    events = [
        AuditEvent(tool="edit_file", paths=["a.txt"], decision="proceed", decided_by="me"),
        AuditEvent(
            tool="read_file",
            paths=["../x"],
            outcome="error",
            security_violation=True,
            lines_added=0,
        ),
    ]
    table = AuditTable(events)
    assert table.text().splitlines() == [
        "tool       paths  decision  decided by  outcome         +/-",
        "edit_file  a.txt  proceed   me          ok              +0 -0",
        "read_file  ../x   none      -           error SECURITY  +0 -0",
    ]
    rows = table._repr_html_().split("<tr")
    assert "--jp-error-color1" in rows[-1] and "--jp-error-color1" not in rows[-2]
