"""The audit sidebar in a real JupyterLab, driven through Debian's chromium by Playwright.

A notebook asks an agent's file tools to edit a file; a person approves it in
the approval widget and the edit appears in the sidebar, diff and all; a write
the person denies, and an escape attempt, appear marked. Screenshots go to
test-artifacts/browser/. A machine without chromium or playwright fails here
with what to install: these tests are never skipped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_support import notebook_tab, start_notebook_lab
from tests.jupyter_process import JupyterProcess

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

ARTIFACTS = Path(__file__).resolve().parent.parent.parent / "test-artifacts" / "browser"
NOTEBOOK = "agent_edits.ipynb"
PANEL = "#tinyagent-fs-audit"
ROW = f"{PANEL} .jp-TinyAgentFS-row"
LIVE_LIMIT_S = 1.0

CELLS = [
    """\
from pathlib import Path
from tinyagent_fs import FileTools
from tinyagent_fs.ui import JupyterHook

root = Path("project")
root.mkdir(exist_ok=True)
(root / "app.py").write_text("x = 1\\n")
hook = JupyterHook()
fs = FileTools(root, hooks=[hook])
print("ready:", hook.describe())""",
    """\
result = await fs.edit_file("app.py", "x = 1", "x = 2")
print("edit:", result.text)""",
    """\
result = await fs.write_file("notes.txt", "hello\\n")
print("write:", result.text)""",
    """\
result = await fs.read_file("../../etc/passwd")
print("escape:", result.text)""",
]


@pytest.fixture(scope="module")
def audit_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("browser-audit") / "audit.jsonl"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, audit_log: Path) -> Iterator[JupyterProcess]:
    process = start_notebook_lab(
        tmp_path_factory, "browser", NOTEBOOK, CELLS, audit_dir=audit_log.parent
    )
    yield process
    process.stop()


@pytest.fixture(scope="module")
def page(lab: JupyterProcess) -> Iterator[Any]:
    with notebook_tab(lab, NOTEBOOK, ARTIFACTS) as tab:
        yield tab


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def choose_theme(page: Any, theme: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
    page.locator(".lm-Menu-itemLabel", has_text="Theme").first.hover()
    page.locator(".lm-Menu-itemLabel", has_text=theme).first.click()


PALETTE_ATTEMPTS = 4
PALETTE_TIMEOUT_MS = 10_000


def run_palette_command(page: Any, label: str) -> None:
    """Open the command palette from the View menu, search ``label`` and run it.

    While JupyterLab is still settling (restoring the layout, starting the
    kernel) a focus change can close the palette right after it opens; then it
    is opened again instead of failing on the first try.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    palette = page.locator(".lm-CommandPalette-input")
    item = page.locator(".lm-CommandPalette-item.lm-mod-active", has_text=label)
    for attempt in range(PALETTE_ATTEMPTS):
        page.locator(".lm-MenuBar-itemLabel", has_text="View").click()
        page.locator(".lm-Menu-itemLabel", has_text="Activate Command Palette").click()
        try:
            palette.fill(label, timeout=PALETTE_TIMEOUT_MS)
            item.wait_for(state="visible", timeout=PALETTE_TIMEOUT_MS)
            palette.press("Enter", timeout=PALETTE_TIMEOUT_MS)
            return
        except PlaywrightTimeout:
            if attempt == PALETTE_ATTEMPTS - 1:
                raise


def show_audit_panel(page: Any) -> None:
    """Run "Show Agent Audit Log" until the panel is visible: on a loaded machine the
    layout JupyterLab restores can land after the command and fold the side area."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(PALETTE_ATTEMPTS):
        run_palette_command(page, "Show Agent Audit Log")
        try:
            page.locator(PANEL).wait_for(state="visible", timeout=PALETTE_TIMEOUT_MS)
            return
        except PlaywrightTimeout:
            if attempt == PALETTE_ATTEMPTS - 1:
                raise


def fail_on_dialog(page: Any) -> None:
    """A JupyterLab dialog (a lost server connection under load, a kernel choice) would
    swallow every click until a minute's timeout: fail at once saying what it says."""
    dialog = page.locator(".jp-Dialog")
    if dialog.count():
        shot(page, "unexpected-dialog")
        raise AssertionError(f"JupyterLab showed a dialog: {dialog.first.inner_text()!r}")


def run_cell(page: Any, index: int) -> None:
    """Shift+Enter in the cell until its prompt shows it queued or run: while JupyterLab
    still settles its layout on a loaded machine, a first keypress can land elsewhere."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(index)
    prompt = cell.locator(".jp-InputArea-prompt")
    for attempt in range(PALETTE_ATTEMPTS):
        try:
            cell.locator(".jp-InputArea-editor").click(timeout=PALETTE_TIMEOUT_MS)
            page.keyboard.press("Shift+Enter")
            page.wait_for_function(
                "(el) => el.textContent.trim() !== '[ ]:'",
                arg=prompt.element_handle(),
                timeout=PALETTE_TIMEOUT_MS,
            )
            return
        except PlaywrightTimeout:
            fail_on_dialog(page)
            if attempt == PALETTE_ATTEMPTS - 1:
                raise


def audit_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_for_audit(path: Path, predicate: Callable[[dict], bool], timeout: float = 30) -> dict:
    """Wait until the kernel has written a matching event; returns it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in audit_lines(path):
            if predicate(event):
                return event
        time.sleep(0.02)
    raise AssertionError(f"no matching audit event in {path}: {audit_lines(path)[-3:]}")


def wait_for_only_row(page: Any, event_id: str) -> None:
    """Wait until a filter leaves one row, that event's (the filter before may also
    have left one row, another one, until this filter is applied)."""
    page.wait_for_function(
        """([rows, id]) => {
            const shown = document.querySelectorAll(rows);
            return shown.length === 1 && shown[0].dataset.eventId === id;
        }""",
        arg=[ROW, event_id],
        timeout=5000,
    )


def seconds_until_row(page: Any, event_id: str) -> float:
    """How long after the event reached the log its row took to show in the sidebar.

    Each measurement is also kept in test-artifacts/browser/latency.jsonl.
    """
    started = time.monotonic()
    page.wait_for_selector(
        f"{ROW}[data-event-id='{event_id}']", state="visible", timeout=LIVE_LIMIT_S * 1000 + 500
    )
    elapsed = time.monotonic() - started
    with (ARTIFACTS / "latency.jsonl").open("a") as record:
        record.write(json.dumps({"event_id": event_id, "seconds": round(elapsed, 3)}) + "\n")
    return elapsed


def test_the_sidebar_follows_approved_and_denied_calls(
    lab: JupyterProcess, page: Any, audit_log: Path
) -> None:
    show_audit_panel(page)
    page.wait_for_selector(f"{PANEL} .jp-TinyAgentFS-status:not([data-mode='connecting'])")
    shot(page, "01-panel-open")

    run_cell(page, 0)
    page.wait_for_selector(".jp-OutputArea-output:has-text('ready:')")

    run_cell(page, 1)
    approve = page.locator(".taf-card button:has-text('Approve')").first
    approve.wait_for(state="visible")
    shot(page, "02-approval-widget")
    approve.click()
    edit = wait_for_audit(audit_log, lambda e: e["tool"] == "edit_file")
    latency = seconds_until_row(page, edit["event_id"])
    assert latency <= LIVE_LIMIT_S, f"the approved edit showed after {latency:.2f}s"
    # announced on the event bus, not found by the fallback poll
    page.wait_for_selector(f"{PANEL} .jp-TinyAgentFS-status[data-mode='live']", timeout=2000)
    assert edit["decision"] == "proceed" and edit["outcome"] == "ok"
    assert (lab.root / "project" / "app.py").read_text() == "x = 2\n"
    row = page.locator(f"{ROW}[data-event-id='{edit['event_id']}']")
    assert "edit_file" in row.inner_text() and "app.py" in row.inner_text()
    shot(page, "03-edit-in-sidebar")

    row.click()
    diff = page.locator(f"{PANEL} .jp-TinyAgentFS-diff")
    diff.wait_for(state="visible")
    assert diff.locator(".jp-mod-added").inner_text().strip() == "+x = 2"
    assert diff.locator(".jp-mod-removed").inner_text().strip() == "-x = 1"
    shot(page, "04-event-with-diff")
    page.locator(f"{PANEL} .jp-TinyAgentFS-back").click()

    run_cell(page, 2)
    card = page.locator(".taf-card:has(button:has-text('Approve'))").last
    card.locator("button:has-text('Deny')").first.click()
    reason = card.locator("input[placeholder*='optional']")
    reason.wait_for(state="visible")
    reason.fill("not in this project")
    card.locator("button.taf-confirm:has-text('Deny')").click()
    denied = wait_for_audit(audit_log, lambda e: e["tool"] == "write_file")
    latency = seconds_until_row(page, denied["event_id"])
    assert latency <= LIVE_LIMIT_S, f"the denied write showed after {latency:.2f}s"
    assert denied["outcome"] == "denied"
    assert not (lab.root / "project" / "notes.txt").exists()
    denied_row = page.locator(f"{ROW}[data-event-id='{denied['event_id']}']")
    assert "jp-mod-denied" in (denied_row.get_attribute("class") or "")
    assert denied_row.locator("[data-kind='outcome-denied']").inner_text() == "denied"

    run_cell(page, 3)
    escape = wait_for_audit(audit_log, lambda e: e["tool"] == "read_file")
    latency = seconds_until_row(page, escape["event_id"])
    assert latency <= LIVE_LIMIT_S, f"the escape attempt showed after {latency:.2f}s"
    assert escape["security_violation"] is True
    escape_row = page.locator(f"{ROW}[data-event-id='{escape['event_id']}']")
    assert "jp-mod-security" in (escape_row.get_attribute("class") or "")
    ids = [row.get_attribute("data-event-id") for row in page.locator(ROW).all()]
    assert ids[:3] == [escape["event_id"], denied["event_id"], edit["event_id"]], "newest first"
    shot(page, "05-denied-and-escape")

    page.locator(f"{PANEL} select[data-filter='outcome']").select_option("denied")
    wait_for_only_row(page, denied["event_id"])
    page.locator(f"{PANEL} select[data-filter='outcome']").select_option("")
    page.locator(f"{PANEL} .jp-TinyAgentFS-search").fill("app.py")
    wait_for_only_row(page, edit["event_id"])
    page.locator(f"{PANEL} .jp-TinyAgentFS-search").fill("")
    page.wait_for_function("n => document.querySelectorAll(n).length >= 3", arg=ROW)


def test_the_panel_is_restored_after_a_reload(page: Any) -> None:
    page.locator(PANEL).wait_for(state="visible")
    page.reload()
    page.wait_for_selector(".jp-Notebook .jp-Cell", state="visible")
    page.locator(PANEL).wait_for(state="visible", timeout=30_000)
    page.wait_for_function("n => document.querySelectorAll(n).length >= 3", arg=ROW)
    shot(page, "06-restored-after-reload")


def test_rows_are_buttons_the_keyboard_opens_and_returns_to(page: Any) -> None:
    """Issue 22: rows were announced as list items, the detail showed UTC, and the
    focus was lost when a row opened. Keyboard only from the search box."""
    panel = page.locator(PANEL)
    rows = panel.get_by_role("list").get_by_role("listitem").get_by_role("button")
    assert rows.count() >= 3
    panel.locator(".jp-TinyAgentFS-search").focus()
    for _ in range(6):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.matches('.jp-TinyAgentFS-row')"):
            break
    first = page.evaluate("() => document.activeElement.dataset.eventId")
    assert first, "Tab never reached a row"
    listed = page.locator(f"{ROW}[data-event-id='{first}'] .jp-TinyAgentFS-time").inner_text()
    for key in ("Enter", " "):
        page.keyboard.press(key)
        back = panel.get_by_role("button", name="All events", exact=True)
        back.wait_for(state="visible")
        page.wait_for_function("() => document.activeElement.matches('.jp-TinyAgentFS-back')")
        time_field = panel.locator(".jp-TinyAgentFS-fields dt:has-text('Time') + dd")
        assert time_field.inner_text() == listed, "the detail shows the time as the list does"
        page.keyboard.press(key)
        page.wait_for_function(
            "(id) => document.activeElement.dataset.eventId === id", arg=first, timeout=5000
        )


def test_the_dark_theme_keeps_denied_calls_distinct(page: Any) -> None:
    choose_theme(page, "JupyterLab Dark")
    page.wait_for_selector("body[data-jp-theme-light='false']", state="attached")
    page.wait_for_selector("#jupyterlab-splash", state="detached")
    denied = page.locator(f"{ROW}.jp-mod-denied").first
    denied.wait_for(state="visible")
    background = denied.evaluate("row => getComputedStyle(row).backgroundColor")
    plain = page.locator(f"{ROW}:not(.jp-mod-denied):not(.jp-mod-security)").first
    assert background != plain.evaluate("row => getComputedStyle(row).backgroundColor")
    shot(page, "07-dark-theme")
    choose_theme(page, "JupyterLab Light")
    page.wait_for_selector("body[data-jp-theme-light='true']", state="attached")
