"""An audit event's diff opened full width in JupyterLab's main area, in a real JupyterLab
driven through Debian's chromium: unified and side by side, syntax-coloured, the title and
every line shown safely. Screenshots go to test-artifacts/browser/.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_browser_audit_sidebar import ARTIFACTS, shot, show_audit_panel
from tests.browser_support import CHROMIUM, CHROMIUM_ARGS, require_browser
from tests.jupyter_process import JupyterProcess, start_jupyter
from tinyagent_fs.audit.log import AuditEvent, AuditLog
from tinyagent_fs.changes.changeset import ChangeKind, ChangeSet, FileChange

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

PANEL = "#tinyagent-fs-audit"
TAB = ".jp-TinyAgentFS-diffTab"
NAME = "report\u202etxt.py"
OLD = 'def greet(name):\n    text = """Hello\n    {name}"""\n    return text\n'
NEW = OLD.replace("Hello", "Hi <img src=x onerror=window.__pwned=1>")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    require_browser()
    root = tmp_path_factory.mktemp("diffview-root")
    home = tmp_path_factory.mktemp("diffview-home")
    news = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    process = start_jupyter("lab", root, home, env={"TINYAGENT_FS_AUDIT_DIR": str(home / "audit")})
    yield process
    process.stop()


@pytest.fixture(scope="module")
def page(lab: JupyterProcess) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        tab = context.new_page()
        tab.set_default_timeout(60_000)
        tab.goto(lab.url("lab"))
        tab.wait_for_selector("#jupyterlab-splash", state="detached")
        yield tab
        context.close()
        browser.close()


def recorded_edit(audit_dir: Path) -> AuditEvent:
    root = Path("/project")
    change = FileChange(
        ChangeKind.MODIFY, root / NAME, OLD.encode(), NEW.encode(), old_text=OLD, new_text=NEW
    )
    diff = ChangeSet("edit_file", (change,), root).unified_diff()
    event = AuditEvent(
        tool="edit_file", paths=[NAME], decision="proceed", diff=diff, session_id="s1"
    )
    AuditLog(audit_dir, session_id="s1").record(event)
    return event


def test_an_events_diff_opens_full_width_in_both_views(lab: JupyterProcess, page: Any) -> None:
    event = recorded_edit(lab.home / "audit")
    show_audit_panel(page)
    row = page.locator(f"{PANEL} .jp-TinyAgentFS-row[data-event-id='{event.event_id}']")
    row.click()
    page.locator(f"{PANEL} .jp-TinyAgentFS-openDiff").click()

    tab = page.locator(TAB)
    tab.locator(".taf-diff").wait_for(state="visible")
    label = page.locator(".lm-DockPanel .lm-TabBar-tabLabel", has_text="Diff:")
    assert label.inner_text() == "Diff: report⟨U+202E⟩txt.py", "the title names the file, marked"
    heading = tab.locator(".jp-TinyAgentFS-diffHeading")
    assert heading.inner_text() == "edit_file report⟨U+202E⟩txt.py"
    assert heading.locator(".jp-TinyAgentFS-hiddenChar").count() == 1
    sidebar = page.locator(PANEL).bounding_box()
    width = tab.locator(".jp-TinyAgentFS-diffBody").bounding_box()["width"]
    assert width > 2 * sidebar["width"], f"the diff is {width}px wide beside a {sidebar}"

    body = tab.locator(".jp-TinyAgentFS-diffBody")
    assert body.locator(".tok-k", has_text="def").count() >= 1, "syntax-coloured"
    added = body.locator("tr.taf-add .taf-code")
    assert "Hi <img src=x onerror=window.__pwned=1>" in added.inner_text()
    strings = "".join(added.locator(".tok-s").all_inner_texts())
    assert "Hi <img" in strings, "the changed line is coloured as the string it is in"
    assert body.locator("img").count() == 0 and page.evaluate("window.__pwned") is None
    assert body.locator("tr.taf-del .taf-code").inner_text() == '    text = """Hello'
    assert tab.locator("[data-view='unified'][aria-pressed='true']").count() == 1
    shot(page, "diffview-01-unified")

    tab.locator("button[data-view='side-by-side']").click()
    side = body.locator("tr:has(.taf-code.taf-del):has(.taf-code.taf-add)")
    side.wait_for(state="visible")
    cells = side.locator(".taf-code")
    assert cells.nth(0).inner_text() == '    text = """Hello'
    assert cells.nth(1).inner_text().startswith('    text = """Hi <img')
    assert body.locator("tr.taf-add").count() == 0, "no unified rows are left"
    shot(page, "diffview-02-side-by-side")

    tab.locator("button[data-view='unified']").click()
    body.locator("tr.taf-add").wait_for(state="visible")

    # Opening the same event again shows the tab already there, not a second one.
    page.locator(f"{PANEL} .jp-TinyAgentFS-openDiff").click()
    time.sleep(0.5)
    assert page.locator(TAB).count() == 1
