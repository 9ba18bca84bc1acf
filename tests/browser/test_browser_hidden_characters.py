"""Hidden characters in a real JupyterLab: the approval card and the sidebar show markers.

A notebook writes a file named ``report\\u202etxt\\u200b.py`` with ESC sequences and
bidi overrides in it; the DOM text of the card (heading, diff, trust label, Modify
label, record) and of the sidebar (row, detail, diff) must hold ``⟨U+202E⟩``-style
markers and none of the raw characters. A read the policy let through is badged
"allowed by policy", the person's approval "approved".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_browser_audit_sidebar import (
    ARTIFACTS,
    PANEL,
    ROW,
    run_cell,
    shot,
    show_audit_panel,
    wait_for_audit,
)
from tests.browser_support import notebook_tab, start_notebook_lab
from tests.jupyter_process import JupyterProcess

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

NOTEBOOK = "hidden_characters.ipynb"
HIDDEN = "\u202e\u200b\x1b\u2066\u200d"
CELLS = [
    """\
from pathlib import Path
from tinyagent_fs import FileTools
from tinyagent_fs.ui import JupyterHook

NAME = "report\\u202etxt\\u200b.py"
CONTENT = "x = 1\\n# \\u202e evil \\x1b[2K ok\\u2066\\u200d\\n"
root = Path("project")
root.mkdir(exist_ok=True)
hook = JupyterHook()
fs = FileTools(root, hooks=[hook])
print("ready:", hook.describe())""",
    """\
result = await fs.write_file(NAME, CONTENT)
print("write:", result.ok)""",
    """\
result = await fs.read_file(NAME)
print("read:", result.ok)""",
]


@pytest.fixture(scope="module")
def audit_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hidden-audit") / "audit.jsonl"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, audit_log: Path) -> Iterator[JupyterProcess]:
    process = start_notebook_lab(
        tmp_path_factory, "hidden", NOTEBOOK, CELLS, audit_dir=audit_log.parent
    )
    yield process
    process.stop()


@pytest.fixture(scope="module")
def page(lab: JupyterProcess) -> Iterator[Any]:
    with notebook_tab(lab, NOTEBOOK, ARTIFACTS) as tab:
        yield tab


def assert_marked(text: str, tokens: list[str]) -> None:
    raw = sorted({f"U+{ord(c):04X}" for c in text if c in HIDDEN})
    assert not raw, f"raw hidden characters {raw} in {text!r}"
    for token in tokens:
        assert token in text, f"no {token} in {text!r}"


def run_first_cell(page: Any) -> None:
    """Run the set-up cell, again if a layout change JupyterLab was still making ate the
    keypress (it only defines names, so running it twice is harmless)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(3):
        run_cell(page, 0)
        try:
            page.wait_for_selector(".jp-OutputArea-output:has-text('ready:')", timeout=15_000)
            return
        except PlaywrightTimeout:
            if attempt == 2:
                raise


def dom_text(locator: Any) -> str:
    """The element's DOM text, without ipywidgets' own ZWSP placeholder of an empty label."""
    return locator.evaluate(
        """node => {
            const copy = node.cloneNode(true);
            for (const label of copy.querySelectorAll('label')) {
                if (label.textContent === '\\u200b') label.remove();
            }
            return copy.textContent;
        }"""
    )


NAME_TOKENS = ["report⟨U+202E⟩txt⟨U+200B⟩.py"]
CONTENT_TOKENS = ["⟨U+202E⟩ evil ⟨U+001B⟩[2K ok⟨U+2066⟩⟨U+200D⟩"]


def test_the_card_and_the_sidebar_mark_hidden_characters(
    lab: JupyterProcess, page: Any, audit_log: Path
) -> None:
    show_audit_panel(page)
    page.wait_for_selector(f"{PANEL} .jp-TinyAgentFS-status:not([data-mode='connecting'])")
    run_first_cell(page)
    run_cell(page, 1)
    card = page.locator(".jp-Notebook .jp-CodeCell").nth(1).locator(".jp-OutputArea")
    card.locator("button:has-text('Approve')").first.wait_for(state="visible")
    assert_marked(dom_text(card), NAME_TOKENS + CONTENT_TOKENS)
    assert card.locator(".taf-hidden-char").count() >= 5  # heading, file row, diff lines
    assert_marked(dom_text(card.locator("label:has-text('Trust report')").first), NAME_TOKENS)
    shot(page, "hidden-01-card")

    card.locator("button:has-text('Modify')").first.click()
    card.locator(".taf-editor").first.wait_for(state="visible")
    assert_marked(dom_text(card.locator("label.taf-label").first), NAME_TOKENS)
    card.locator("button:has-text('Cancel')").first.click()
    card.locator("button:has-text('Approve')").first.click()
    written = wait_for_audit(audit_log, lambda e: e["tool"] == "write_file")
    record = card.locator(".taf-record:has-text('Approved')").first
    record.wait_for(state="visible")
    assert_marked(dom_text(record), NAME_TOKENS)
    assert record.locator(".taf-hidden-char").count() == 2

    run_cell(page, 2)
    read = wait_for_audit(audit_log, lambda e: e["tool"] == "read_file")
    read_row = page.locator(f"{ROW}[data-event-id='{read['event_id']}']")
    read_row.wait_for(state="visible")
    assert read_row.locator("[data-kind='decision']").text_content() == "allowed by policy"
    row = page.locator(f"{ROW}[data-event-id='{written['event_id']}']")
    assert row.locator("[data-kind='decision']").text_content() == "approved"
    assert_marked(row.text_content() or "", NAME_TOKENS)
    assert row.locator(".jp-TinyAgentFS-path .jp-TinyAgentFS-hiddenChar").count() == 2
    shot(page, "hidden-02-sidebar")

    row.click()
    detail = page.locator(f"{PANEL} .jp-TinyAgentFS-detail")
    detail.locator(".jp-TinyAgentFS-diff").wait_for(state="visible")
    assert_marked(detail.locator("h3").text_content() or "", NAME_TOKENS)
    assert_marked(detail.text_content() or "", NAME_TOKENS + CONTENT_TOKENS)
    added = detail.locator(".jp-TinyAgentFS-diffLine.jp-mod-added").last
    assert added.locator(".jp-TinyAgentFS-hiddenChar").count() == 4
    shot(page, "hidden-03-sidebar-detail")
