"""Undo from the sidebar in a real JupyterLab driven through Debian's chromium.

A notebook's toolkit takes undo requests (``UndoListener``); a person opens its
change in the audit sidebar and clicks Undo; the toolkit's own ``undo`` asks for
approval like any call (a Pending row, never trusted) and only then reverts the
file. A change whose toolkit is gone is refused plainly and nothing is undone.
Screenshots go to test-artifacts/browser/.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_browser_audit_sidebar import ARTIFACTS, run_cell, shot, show_audit_panel
from tests.browser_support import notebook_tab, start_notebook_lab
from tests.jupyter_process import JupyterProcess
from tinyagent_fs.audit.log import AuditEvent, AuditLog

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

NOTEBOOK = "undo.ipynb"
PANEL = "#tinyagent-fs-audit"
PENDING_ROW = f"{PANEL} .jp-TinyAgentFS-pending .jp-TinyAgentFS-pendingRow"
CELLS = [
    """\
from pathlib import Path
from tinyagent_fs import FileTools
from tinyagent_fs.hooks.race import FirstAnswer
from tinyagent_fs.integrations.undo_listener import UndoListener
from tinyagent_fs.hooks.web import WebApprovalHook
from tinyagent_fs.ui import JupyterHook

root = Path("project")
root.mkdir(exist_ok=True)
(root / "a.txt").write_text("old\\n")
fs = FileTools(root, hooks=[FirstAnswer(JupyterHook(), WebApprovalHook(project=root))])
listener = UndoListener(fs).start()
print("ready")""",
    """\
result = await fs.write_file("a.txt", "new\\n")
print("wrote:", result.ok)""",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    process = start_notebook_lab(tmp_path_factory, "undo", NOTEBOOK, CELLS)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def page(lab: JupyterProcess) -> Iterator[Any]:
    with notebook_tab(lab, NOTEBOOK, ARTIFACTS) as tab:
        show_audit_panel(tab)
        run_cell(tab, 0)
        tab.wait_for_selector(".jp-OutputArea-output:has-text('ready')", timeout=30_000)
        yield tab


def audit_events(lab: JupyterProcess) -> list[dict[str, Any]]:
    path = Path(lab.env["TINYAGENT_FS_AUDIT_DIR"]) / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def open_event(page: Any, event_id: str) -> None:
    back = page.locator(f"{PANEL} .jp-TinyAgentFS-back")
    if back.is_visible():
        back.click()
    page.locator(f"{PANEL} .jp-TinyAgentFS-row[data-event-id='{event_id}']").click()


def test_undo_goes_through_the_same_review_then_reverts(lab: JupyterProcess, page: Any) -> None:
    run_cell(page, 1)
    page.locator(PENDING_ROW, has_text="a.txt").locator("[data-action='approve']").click()
    page.locator(".jp-OutputArea-output:has-text('wrote: True')").wait_for()
    project = lab.root / "project" / "a.txt"
    assert project.read_text() == "new\n"
    (write,) = [e for e in audit_events(lab) if e["tool"] == "write_file"]

    open_event(page, write["event_id"])
    page.locator(f"{PANEL} .jp-TinyAgentFS-undoButton").click()
    row = page.locator(PENDING_ROW, has_text="undo")
    row.wait_for(state="visible", timeout=30_000)
    assert row.locator("input[type='checkbox']").count() == 0, "undo is never trusted"
    status = page.locator(f"{PANEL} .jp-TinyAgentFS-undoStatus")
    assert status.get_attribute("data-state") == "waiting"
    assert project.read_text() == "new\n", "nothing is undone before the undo is approved"
    shot(page, "undo-01-asks-for-approval")
    row.locator("[data-action='approve']").click()
    page.wait_for_function(
        "s => document.querySelector(s)?.dataset.state === 'done'",
        arg=f"{PANEL} .jp-TinyAgentFS-undoStatus",
        timeout=30_000,
    )
    assert f"Reverted change {write['change_id']}" in status.inner_text()
    assert project.read_text() == "old\n"
    undo = [e for e in audit_events(lab) if e["tool"] == "undo"][-1]
    assert undo["decided_by"].startswith("jupyter-sidebar:") and undo["outcome"] == "ok"
    shot(page, "undo-02-reverted")


def test_a_change_whose_toolkit_is_gone_is_not_undone(lab: JupyterProcess, page: Any) -> None:
    gone = AuditEvent(
        tool="write_file",
        paths=["b.txt"],
        change_id="c0ffee",
        diff="--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-1\n+2\n",
        session_id="long-gone",
    )
    AuditLog(Path(lab.env["TINYAGENT_FS_AUDIT_DIR"]), session_id="long-gone").record(gone)
    open_event(page, gone.event_id)
    page.locator(f"{PANEL} .jp-TinyAgentFS-undoButton").click()
    status = page.locator(f"{PANEL} .jp-TinyAgentFS-undoStatus[data-state='gone']")
    status.wait_for(state="visible", timeout=15_000)
    assert "no longer running" in status.inner_text()
    assert "Nothing was undone" in status.inner_text()
    assert page.locator(PENDING_ROW).count() == 0
    shot(page, "undo-03-toolkit-gone")
