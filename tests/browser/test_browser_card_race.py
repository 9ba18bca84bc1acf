"""The first answer wins, card or sidebar: a notebook agent awaited in its cell with
``FirstAnswer(JupyterHook(), WebApprovalHook())`` shows its card and a Pending row in the
sidebar at once, in a real JupyterLab driven through Debian's chromium. Answered in the
sidebar, the card becomes the record of where it was decided; answered on the card, the
sidebar row goes. What the kernel got is checked in the cell's output, on disk and in the
audit log. Screenshots go to test-artifacts/browser/.
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

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

NOTEBOOK = "race.ipynb"
PENDING_ROW = "#tinyagent-fs-audit .jp-TinyAgentFS-pending .jp-TinyAgentFS-pendingRow"
CELLS = [
    """\
from pathlib import Path
from tinyagent_fs import FileTools
from tinyagent_fs.hooks.race import FirstAnswer
from tinyagent_fs.hooks.web import WebApprovalHook
from tinyagent_fs.ui import JupyterHook

root = Path("project")
root.mkdir(exist_ok=True)
fs = FileTools(root, hooks=[FirstAnswer(JupyterHook(), WebApprovalHook(project=root))])
print("ready")""",
    """\
result = await fs.write_file("sidebar.txt", "from the sidebar\\n")
print("sidebar-answered:", result.ok)""",
    """\
result = await fs.write_file("card.txt", "from the card\\n")
print("card-answered:", result.ok)""",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    process = start_notebook_lab(tmp_path_factory, "race", NOTEBOOK, CELLS)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def page(lab: JupyterProcess) -> Iterator[Any]:
    with notebook_tab(lab, NOTEBOOK, ARTIFACTS) as tab:
        show_audit_panel(tab)
        run_cell(tab, 0)
        tab.wait_for_selector(".jp-OutputArea-output:has-text('ready')", timeout=30_000)
        yield tab


def last_audit(lab: JupyterProcess) -> dict[str, Any]:
    path = Path(lab.env["TINYAGENT_FS_AUDIT_DIR"]) / "audit.jsonl"
    return dict(json.loads(path.read_text().splitlines()[-1]))


def asked_in_both(page: Any, index: int, path: str) -> tuple[Any, Any]:
    """Run the cell; its card and its sidebar row, once both are up."""
    run_cell(page, index)
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(index)
    card = cell.locator(".taf-card")
    card.locator("button:has-text('Approve')").wait_for(state="visible")
    row = page.locator(PENDING_ROW, has_text=path)
    row.wait_for(state="visible", timeout=30_000)
    return cell, row


def test_answered_in_the_sidebar_the_card_says_where(lab: JupyterProcess, page: Any) -> None:
    cell, row = asked_in_both(page, 1, "sidebar.txt")
    shot(page, "race-01-card-and-row")
    row.locator("[data-action='approve']").click()
    cell.locator(".jp-OutputArea-output:has-text('sidebar-answered: True')").wait_for()
    record = cell.locator(".taf-card .taf-record")
    record.wait_for(state="visible")
    text = record.inner_text()
    assert "answered first in the JupyterLab sidebar" in text, text
    assert "Approved" in text and "jupyter-sidebar:" in text, text
    assert cell.locator(".taf-card button:has-text('Approve'):visible").count() == 0
    assert (lab.root / "project" / "sidebar.txt").read_text() == "from the sidebar\n"
    assert last_audit(lab)["decided_by"].startswith("jupyter-sidebar:")
    shot(page, "race-02-card-withdrawn")


def test_answered_on_the_card_the_sidebar_row_goes(lab: JupyterProcess, page: Any) -> None:
    cell, row = asked_in_both(page, 2, "card.txt")
    cell.locator(".taf-card button:has-text('Approve')").click()
    cell.locator(".jp-OutputArea-output:has-text('card-answered: True')").wait_for()
    row.wait_for(state="detached", timeout=15_000)
    assert page.locator(PENDING_ROW).count() == 0
    assert (lab.root / "project" / "card.txt").read_text() == "from the card\n"
    assert last_audit(lab)["decided_by"].endswith(" (notebook)")
    shot(page, "race-03-row-withdrawn")
