"""Approve from JupyterLab, for any agent: the sidebar's Pending section in a real
JupyterLab driven through Debian's chromium, answering real agent processes.

A plain script (``tests.approval_agent``, ``WebApprovalHook``) and a real
``tinyagent-fs mcp --approve-in jupyter`` find the server through Jupyter's
runtime files and wait; a person clicks in the sidebar. Screenshots go to
test-artifacts/browser/. A machine without chromium or playwright fails here
with what to install: these tests are never skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_browser_audit_sidebar import shot
from tests.jupyter_process import JupyterProcess
from tests.mcp_raw_client import RawServer
from tests.pending_support import (
    BADGE,
    agent,
    lab_page,
    last_audit,
    pending_lab,
    result_of,
    row_for,
    wait_no_rows,
)

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    root = tmp_path_factory.mktemp("pending-root")
    with pending_lab(root, tmp_path_factory.mktemp("pending-home")) as process:
        yield process


@pytest.fixture(scope="module")
def page(lab: JupyterProcess) -> Iterator[Any]:
    with lab_page(lab) as tab:
        yield tab


def test_approve_in_the_sidebar_writes_the_file_and_the_audit_names_who(
    lab: JupyterProcess, page: Any, tmp_path: Path
) -> None:
    process = agent(lab, tmp_path / "p", "write_file", {"path": "hello.txt", "content": "hi\n"})
    row = row_for(page, "hello.txt")
    assert "+hi" in row.locator(".jp-TinyAgentFS-diff").inner_text()
    assert "approval test" in row.locator(".jp-TinyAgentFS-pendingMeta").inner_text()
    page.locator(BADGE).wait_for(state="visible")
    assert "1 change awaits approval" in page.locator(BADGE).inner_text()
    page.locator(".jp-toast-message", has_text="hello.txt").wait_for(state="visible")
    shot(page, "pending-approve")
    row.locator("[data-action='approve']").click()
    result = result_of(process)
    assert result["ok"], result
    assert (tmp_path / "p" / "hello.txt").read_text() == "hi\n"
    event = last_audit(lab)
    assert event["decision"] == "proceed"
    assert event["decided_by"].startswith("jupyter-sidebar:")
    assert len(event["decided_by"]) > len("jupyter-sidebar:")
    wait_no_rows(page)
    page.locator(BADGE).wait_for(state="hidden")


def test_deny_with_a_typed_reason_tells_the_script_the_whole_reason(
    lab: JupyterProcess, page: Any, tmp_path: Path
) -> None:
    reason = "Keep the old greeting; ask me <b>first</b> — merci"
    process = agent(lab, tmp_path / "p", "write_file", {"path": "deny.txt", "content": "no\n"})
    row = row_for(page, "deny.txt")
    row.locator("[data-action='deny']").click()
    row.locator(".jp-TinyAgentFS-pendingReason").press_sequentially(reason, delay=5)
    row.locator("[data-action='confirm-deny']").click()
    result = result_of(process)
    assert not result["ok"] and reason in result["text"], result
    assert not (tmp_path / "p" / "deny.txt").exists()
    assert last_audit(lab)["decided_by"].startswith("jupyter-sidebar:")
    wait_no_rows(page)


def test_modify_in_the_sidebar_writes_the_edited_content(
    lab: JupyterProcess, page: Any, tmp_path: Path
) -> None:
    process = agent(lab, tmp_path / "p", "write_file", {"path": "mod.txt", "content": "one\n"})
    row = row_for(page, "mod.txt")
    row.locator("[data-action='modify']").click()
    editor = row.locator("textarea[data-path='mod.txt']")
    assert editor.input_value() == "one\n"
    editor.fill("two, by a person\n")
    row.locator("[data-action='confirm-modify']").click()
    result = result_of(process)
    assert result["ok"] and "edited in JupyterLab" in result["text"], result
    assert (tmp_path / "p" / "mod.txt").read_text() == "two, by a person\n"
    assert last_audit(lab)["decision"] == "modify"
    wait_no_rows(page)


def test_the_agents_timeout_takes_the_row_away(
    lab: JupyterProcess, page: Any, tmp_path: Path
) -> None:
    process = agent(
        lab, tmp_path / "p", "write_file", {"path": "late.txt", "content": "z\n"}, "--timeout", "3"
    )
    row_for(page, "late.txt")
    wait_no_rows(page, timeout_ms=10_000)
    result = result_of(process)
    assert not result["ok"] and "no answer in JupyterLab" in result["text"]
    assert not (tmp_path / "p" / "late.txt").exists()


def test_a_browser_post_without_xsrf_is_refused_and_changes_nothing(
    lab: JupyterProcess, page: Any, tmp_path: Path
) -> None:
    process = agent(lab, tmp_path / "p", "write_file", {"path": "xsrf.txt", "content": "x\n"})
    row_for(page, "xsrf.txt")
    outcome = page.evaluate(
        """async () => {
            const list = await fetch('/tinyagent-fs/approvals', {credentials: 'same-origin'});
            const [p] = (await list.json()).approvals;
            const answer = await fetch(`/tinyagent-fs/approvals/${p.id}/decision`, {
                method: 'POST', credentials: 'same-origin',
                headers: {'Content-Type': 'application/json'},
                body: JSON.stringify({verdict: 'proceed', proposal_hash: p.proposal_hash,
                                      session_id: p.session_id}),
            });
            const withdraw = await fetch(`/tinyagent-fs/approvals/${p.id}`, {
                method: 'DELETE', credentials: 'same-origin'});
            const after = await (await fetch('/tinyagent-fs/approvals')).json();
            return {list: list.status, answer: answer.status, withdraw: withdraw.status,
                    pending: after.approvals.length};
        }"""
    )
    assert outcome == {"list": 200, "answer": 403, "withdraw": 403, "pending": 1}, outcome
    assert not (tmp_path / "p" / "xsrf.txt").exists()
    row = row_for(page, "xsrf.txt")
    row.locator("[data-action='deny']").click()
    row.locator("[data-action='confirm-deny']").click()
    assert not result_of(process)["ok"]
    wait_no_rows(page)


def test_tinyagent_fs_mcp_asks_jupyterlab_and_the_browser_approves(
    lab: JupyterProcess, page: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "mcp-project"
    project.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", lab.env["JUPYTER_RUNTIME_DIR"])
    audit = tmp_path / "mcp-audit"
    with RawServer([project], audit, "--approve-in", "jupyter") as server:
        server.initialize()
        ident = server.send_request(
            "tools/call",
            {"name": "write_file", "arguments": {"path": "from-mcp.txt", "content": "mcp\n"}},
        )
        row = row_for(page, "from-mcp.txt")
        assert "tinyagent-fs mcp" in row.locator(".jp-TinyAgentFS-pendingMeta").inner_text()
        shot(page, "pending-mcp")
        row.locator("[data-action='approve']").click()
        answer = server.receive()
        assert answer["id"] == ident and not answer["result"].get("isError"), answer
        assert server.close() == 0
    assert (project / "from-mcp.txt").read_text() == "mcp\n"
    event = json.loads((audit / "audit.jsonl").read_text().splitlines()[-1])
    assert event["decided_by"].startswith("jupyter-sidebar:")
    wait_no_rows(page)
