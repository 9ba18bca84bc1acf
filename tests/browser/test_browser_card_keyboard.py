"""The approval card from the keyboard alone, in a real JupyterLab (chromium).

Issue 22: a new card did not take the focus (48 Tab presses through the sidebar
to reach Approve) and the focus fell to <body> after an answer. Here each cell is
run with Shift+Enter and answered with Tab, Enter, Space and typed keys only; the
test checks what the KERNEL got (the tool result the agent received, the file on
disk) and where the focus is. A card that appears while a person types in a cell
leaves the typing alone. Side by side, both columns stay inside the card at a
900 px wide window, however long the lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser_audit_sidebar import ARTIFACTS, run_cell
from tests.browser_support import notebook_tab, start_notebook_lab
from tests.jupyter.test_jupyter_card_form import named, results, run_setup
from tests.jupyter_process import JupyterProcess

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

NOTEBOOK = "card_keyboard.ipynb"
MAX_TABS = 8
"""From a new card to its Approve: the diff view's two toggles and two trust boxes first."""
LONG = "value = " + " + ".join(f"item_{i}" for i in range(60))
SETUP = f"""\
import asyncio, json
from pathlib import Path
from tinyagent_fs import FileTools
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.providers import LocalProvider
from tinyagent_fs.ui import JupyterHook

LONG = {LONG!r}
tasks = []


async def write(name, old, new, delay=0.0):
    root = Path("projects") / name
    root.mkdir(parents=True)
    (root / "app.py").write_text(old)
    await asyncio.sleep(delay)
    fs = FileTools(
        root, provider=LocalProvider(), hooks=[JupyterHook()], audit=AuditLog(Path("audit") / name)
    )
    result = await fs.write_file("app.py", new)
    Path("results").mkdir(exist_ok=True)
    kept = [{{"ok": result.ok, "text": result.text}}]
    Path("results", name + ".json").write_text(json.dumps(kept))


print("ready:", JupyterHook().describe())"""
CELLS = [
    SETUP,
    'await write("approve", "x = 1\\n", "x = 2\\n")',
    'await write("deny", "x = 1\\n", "x = 2\\n")',
    'await write("modify", "x = 1\\n", "x = 2\\n")',
    'tasks.append(asyncio.create_task(write("typing", "x = 1\\n", "x = 2\\n", delay=1.5)))',
    "",
    'await write("wide", "short = 1\\n" + LONG + " - 1\\n", "short = 2\\n" + LONG + " - 2\\n")',
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    process = start_notebook_lab(tmp_path_factory, "card-keys", NOTEBOOK, CELLS)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def page(lab: JupyterProcess) -> Iterator[Any]:
    with notebook_tab(lab, NOTEBOOK, ARTIFACTS, (900, 800)) as tab:
        run_setup(tab)
        yield tab


def cell(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-CodeCell").nth(index)


def active_index(page: Any) -> int:
    return page.evaluate(
        """() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')]
            .findIndex(c => c.classList.contains('jp-mod-active'))"""
    )


def go_to_cell(page: Any, index: int) -> None:
    """Command mode, then J / K to the cell, as a person does without a mouse."""
    page.keyboard.press("Escape")
    for _ in range(len(CELLS)):
        now = active_index(page)
        if now == index:
            return
        page.keyboard.press("j" if now < index else "k")
    raise AssertionError(f"cell {index} never became active ({active_index(page)} is)")


def run_from_keyboard(page: Any, index: int) -> Any:
    """Shift+Enter on cell ``index``; returns its open approval card."""
    go_to_cell(page, index)
    page.keyboard.press("Shift+Enter")
    cell(page, index).locator(".taf-card[data-state='open']").wait_for()
    return cell(page, index).locator(".taf-card")


def focus_is_in(page: Any, selector: str) -> bool:
    return page.evaluate(
        "(selector) => Boolean(document.activeElement?.closest(selector))", selector
    )


def tab_to(page: Any, name: str) -> int:
    """Press Tab until the focused control is the button ``name``; how many presses."""
    for presses in range(1, MAX_TABS + 1):
        page.keyboard.press("Tab")
        focused = page.evaluate("() => document.activeElement.textContent.trim()")
        if focused == name:
            return presses
    raise AssertionError(f"{name} not reached in {MAX_TABS} Tab presses")


def test_a_new_card_takes_the_focus_and_approve_is_a_few_tabs_away(
    lab: JupyterProcess, page: Any
) -> None:
    card = run_from_keyboard(page, 1)
    page.wait_for_function("() => document.activeElement.classList.contains('taf-card')")
    assert tab_to(page, "Approve") <= 5
    page.keyboard.press("Enter")
    (got,) = results(lab, "approve")
    assert got["ok"], got["text"]
    assert (lab.root / "projects" / "approve" / "app.py").read_text() == "x = 2\n"
    page.wait_for_function("() => document.activeElement.classList.contains('taf-record')")
    assert "Approved" in card.locator(".taf-record").inner_text()


def test_deny_from_the_keyboard_keeps_the_focus_on_the_record(
    lab: JupyterProcess, page: Any
) -> None:
    card = run_from_keyboard(page, 2)
    page.wait_for_function("() => document.activeElement.classList.contains('taf-card')")
    tab_to(page, "Deny")
    page.keyboard.press(" ")
    assert focus_is_in(page, ".taf-reason")
    page.keyboard.type("keep x", delay=30)
    page.keyboard.press("Enter")
    (got,) = results(lab, "deny")
    assert not got["ok"] and "keep x" in got["text"], got["text"]
    assert (lab.root / "projects" / "deny" / "app.py").read_text() == "x = 1\n"
    page.wait_for_function("() => document.activeElement.classList.contains('taf-record')")
    record = card.locator(".taf-record").inner_text()
    assert "Denied" in record and "nothing was changed" in record, record


def test_modify_from_the_keyboard_and_the_record_shows_what_was_written(
    lab: JupyterProcess, page: Any
) -> None:
    from playwright.sync_api import expect

    card = run_from_keyboard(page, 3)
    page.wait_for_function("() => document.activeElement.classList.contains('taf-card')")
    tab_to(page, "Modify")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.activeElement.matches('textarea.taf-editor')")
    page.keyboard.press("Control+a")
    page.keyboard.type("x = 3\ny = 4\n", delay=20)
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "Apply"
    page.keyboard.press("Enter")
    (got,) = results(lab, "modify")
    assert got["ok"], got["text"]
    assert (lab.root / "projects" / "modify" / "app.py").read_text() == "x = 3\ny = 4\n"
    page.wait_for_function("() => document.activeElement.classList.contains('taf-record')")
    assert "+2 −1" in card.locator(".taf-record").inner_text()
    page.keyboard.press("Tab")  # to the folded details
    page.keyboard.press("Enter")
    folded = card.locator(".taf-folded")
    expect(folded.locator(".taf-heading")).to_contain_text("What ran")
    expect(folded.locator(".taf-diff")).to_contain_text("y = 4")
    assert "Approval needed" not in folded.inner_text()


def test_a_card_appearing_while_a_cell_is_edited_leaves_the_typing_alone(
    lab: JupyterProcess, page: Any
) -> None:
    go_to_cell(page, 4)
    page.keyboard.press("Shift+Enter")  # the agent starts in the background
    assert active_index(page) == 5
    page.keyboard.press("Enter")  # edit cell 5
    page.keyboard.type("first = 1", delay=20)
    page.locator(".taf-card[data-state='open']").wait_for()
    card = page.locator(".taf-card[data-state='open']")
    page.wait_for_timeout(500)  # the card's own attempts to take the focus are over
    page.keyboard.type("  # typed on", delay=20)
    assert focus_is_in(page, ".jp-CodeCell .cm-content")
    assert cell(page, 5).locator(".cm-content").inner_text() == "first = 1  # typed on"
    card.get_by_role("button", name=named("Approve")).click()
    (got,) = results(lab, "typing")
    assert got["ok"], got["text"]


def test_side_by_side_columns_stay_inside_the_card(lab: JupyterProcess, page: Any) -> None:
    run_cell(page, 6)
    cell(page, 6).locator(".taf-card[data-state='open']").wait_for()
    card = cell(page, 6).locator(".taf-card")
    card.get_by_role("button", name=named("Side by side")).click()
    card.locator(".taf-diff.taf-side-by-side").wait_for()
    right = card.evaluate(
        """(card) => {
            const edge = card.getBoundingClientRect().right;
            const cells = [...card.querySelectorAll('.taf-diff td.taf-code')];
            return { edge, cells: cells.map(c => c.getBoundingClientRect().right) };
        }"""
    )
    assert right["cells"] and max(right["cells"]) <= right["edge"] + 0.5, right
    codes = card.locator(".taf-diff tr:has(td.taf-del)").nth(1).locator("td.taf-code")
    assert "item_59 - 1" in codes.nth(0).inner_text() and "item_59 - 2" in codes.nth(1).inner_text()
    card.get_by_role("button", name=named("Approve")).click()
    (got,) = results(lab, "wide")
    assert got["ok"], got["text"]
