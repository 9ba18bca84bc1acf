"""The approval card's form, filled in by a person in a real JupyterLab (chromium).

Issue 22: JupyterLab's widget manager sends a widget's state changes one at a
time, each held until the kernel reports idle; a cell that awaits the agent
never does. A card whose boxes and text fields were synced widget state thus
told the kernel only their FIRST change: a trust box ticked then unticked still
trusted, a typed Deny reason arrived as its first letter, an edited text as its
first character, the view switched once and never back.

Each test runs with the agent awaited in the cell (the tour's way) and as a
background task, fills the form the way a person does (clicks, keys typed one by
one with a delay), and checks what the KERNEL got: the tool results the agent
received (saved by the notebook to results/<name>.json), the file on disk and
the audit log. Controls are found by their role and name, as a person finds
them. Screenshots of failures go to test-artifacts/browser/.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser_audit_sidebar import ARTIFACTS, run_cell, shot
from tests.browser_support import notebook_tab, start_notebook_lab
from tests.jupyter_process import JupyterProcess

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

NOTEBOOK = "card_form.ipynb"
MODES = ("awaited", "background")
SCENARIOS = ("trust", "deny", "modify", "view")
WRITES = {"trust": 2, "deny": 1, "modify": 1, "view": 1}
SETUP = """\
import asyncio, json
from pathlib import Path
from tinyagent_fs import FileTools
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.providers import LocalProvider
from tinyagent_fs.ui import JupyterHook

tasks = []


async def writes(name, count):
    root = Path("projects") / name
    root.mkdir(parents=True)
    (root / "README.md").write_text("# Original\\n")
    fs = FileTools(
        root, provider=LocalProvider(), hooks=[JupyterHook()], audit=AuditLog(Path("audit") / name)
    )
    results = [await fs.write_file("README.md", f"# Proposed {i}\\n") for i in range(1, count + 1)]
    kept = [{"ok": r.ok, "text": r.text} for r in results]
    Path("results").mkdir(exist_ok=True)
    Path("results", name + ".json").write_text(json.dumps(kept))


print("ready:", JupyterHook().describe())"""


def cell_source(scenario: str, mode: str) -> str:
    call = f'writes("{scenario}-{mode}", {WRITES[scenario]})'
    return f"await {call}" if mode == "awaited" else f"tasks.append(asyncio.create_task({call}))"


CELLS = [SETUP] + [cell_source(s, m) for s in SCENARIOS for m in MODES]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    process = start_notebook_lab(tmp_path_factory, "card-form", NOTEBOOK, CELLS)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def page(lab: JupyterProcess) -> Iterator[Any]:
    with notebook_tab(lab, NOTEBOOK, ARTIFACTS) as tab:
        run_setup(tab)
        assert (
            "Approvals are interactive" in tab.locator(".jp-OutputArea-output").first.inner_text()
        )
        yield tab


def run_setup(page: Any) -> None:
    """Run the first cell. A Shift+Enter that lands while JupyterLab is still
    connecting the kernel can be lost (the cell keeps its empty prompt): press again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(4):
        dialog = page.locator(".jp-Dialog")
        if dialog.count():
            # Seen once on a loaded machine at startup; say what it was.
            shot(page, "card-form-startup-dialog")
            raise AssertionError(f"JupyterLab showed a dialog: {dialog.first.inner_text()}")
        run_cell(page, 0)
        try:
            page.wait_for_selector(".jp-OutputArea-output:has-text('ready:')", timeout=20_000)
            return
        except PlaywrightTimeout:
            if attempt == 3:
                shot(page, "failed-card-form-setup")
                raise


@pytest.fixture(autouse=True)
def screenshot_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    failed_before = request.session.testsfailed
    yield
    if request.session.testsfailed > failed_before and "page" in request.fixturenames:
        shot(request.getfixturevalue("page"), f"failed-{request.node.name}")


def start(page: Any, scenario: str, mode: str) -> Any:
    """Run the scenario's cell; returns that cell, where its approval cards appear."""
    index = CELLS.index(cell_source(scenario, mode))
    run_cell(page, index)
    return page.locator(".jp-Notebook .jp-CodeCell").nth(index)


def named(text: str) -> re.Pattern[str]:
    """A button's accessible name: ipywidgets' buttons put an icon glyph before it."""
    return re.compile(rf"^\W*{re.escape(text)}$")


def approve_button(cell: Any) -> Any:
    return cell.get_by_role("button", name=named("Approve"))


def audit(lab: JupyterProcess, name: str) -> list[dict[str, Any]]:
    path = lab.root / "audit" / name / "audit.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def results(lab: JupyterProcess, name: str, timeout: float = 30) -> list[dict[str, Any]]:
    """The tool results the agent got, once its last call has returned."""
    path = lab.root / "results" / f"{name}.json"
    deadline = time.monotonic() + timeout
    while True:
        try:  # the kernel writes the file in place: it can be there and still empty
            found: list[dict[str, Any]] = json.loads(path.read_text())
            return found
        except (FileNotFoundError, json.JSONDecodeError):
            assert time.monotonic() < deadline, f"the agent never finished: {audit(lab, name)}"
            time.sleep(0.05)


@pytest.mark.parametrize("mode", MODES)
def test_a_trust_box_ticked_then_unticked_trusts_nothing(
    lab: JupyterProcess, page: Any, mode: str
) -> None:
    name = f"trust-{mode}"
    cell = start(page, "trust", mode)
    first = approve_button(cell)
    first.wait_for()
    for label in ("Trust README.md for this session", "Trust every write_file call"):
        box = cell.get_by_role("checkbox", name=label)
        box.click()
        box.click()
        assert not box.is_checked()
    card = first.element_handle()
    first.click()
    card.wait_for_element_state("hidden")
    deadline = time.monotonic() + 30
    while not approve_button(cell).is_visible():
        events = audit(lab, name)
        assert len(events) < 2, f"the second write ran without asking: {events[-1]['decided_by']}"
        assert time.monotonic() < deadline, "no second card and no second write"
        time.sleep(0.05)
    approve_button(cell).click()
    got = results(lab, name)
    assert [r["ok"] for r in got] == [True, True]
    events = audit(lab, name)
    assert [e["decision"] for e in events] == ["proceed", "proceed"]
    assert all(e["decided_by"].endswith("(notebook)") for e in events), events
    assert (lab.root / "projects" / name / "README.md").read_text() == "# Proposed 2\n"


@pytest.mark.parametrize("mode", MODES)
def test_a_deny_reason_typed_key_by_key_reaches_the_model_whole(
    lab: JupyterProcess, page: Any, mode: str
) -> None:
    name = f"deny-{mode}"
    reason = "not in this project"
    cell = start(page, "deny", mode)
    cell.get_by_role("button", name=named("Deny")).click()
    box = cell.get_by_placeholder("optional: why")
    box.click()
    page.keyboard.type(reason, delay=40)
    cell.get_by_role("button", name=named("Deny")).click()
    (got,) = results(lab, name)
    assert not got["ok"]
    assert reason in got["text"], got["text"]
    (event,) = audit(lab, name)
    assert (event["decision"], event["outcome"]) == ("deny", "denied")
    assert event["message"] == f"Error [DENIED_BY_HOOK]: {reason}"
    assert (lab.root / "projects" / name / "README.md").read_text() == "# Original\n"


@pytest.mark.parametrize("mode", MODES)
def test_text_edited_key_by_key_is_written_whole(lab: JupyterProcess, page: Any, mode: str) -> None:
    name = f"modify-{mode}"
    edited = "# Edited by a person\nwith a second line\n"
    cell = start(page, "modify", mode)
    cell.get_by_role("button", name=named("Modify")).click()
    editor = cell.locator("textarea")
    editor.click()
    editor.press("Control+a")
    page.keyboard.type(edited, delay=20)
    cell.get_by_role("button", name=named("Apply")).click()
    (got,) = results(lab, name)
    assert got["ok"], got["text"]
    assert "a person edited the proposed content of README.md" in got["text"]
    assert (lab.root / "projects" / name / "README.md").read_text() == edited
    assert audit(lab, name)[-1]["decision"] == "modify"


@pytest.mark.parametrize("mode", MODES)
def test_the_diff_view_follows_every_switch(lab: JupyterProcess, page: Any, mode: str) -> None:
    from playwright.sync_api import expect

    name = f"view-{mode}"
    cell = start(page, "view", mode)
    approve_button(cell).wait_for()
    # Side by side pairs old and new in one row: removed text is a cell, not a row.
    paired = cell.locator(".taf-diff td.taf-code.taf-del")
    unified = cell.locator(".taf-diff tr.taf-del")
    expect(unified).to_have_count(1)
    # Twice with the mouse, then from the keyboard (Enter, then Space).
    for view, key in (
        ("Side by side", ""),
        ("Unified", ""),
        ("Side by side", "Enter"),
        ("Unified", " "),
    ):
        toggle = cell.get_by_role("button", name=named(view))
        if key:
            toggle.focus()
            page.keyboard.press(key)
        else:
            toggle.click()
        if view == "Unified":
            expect(unified).to_have_count(1)
            expect(paired).to_have_count(0)
        else:
            expect(paired).to_have_count(1)
            expect(unified).to_have_count(0)
    approve_button(cell).click()
    (got,) = results(lab, name)
    assert got["ok"]
    assert (lab.root / "projects" / name / "README.md").read_text() == "# Proposed 1\n"
