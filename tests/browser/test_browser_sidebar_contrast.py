"""Every text in the sidebar reads at WCAG AA contrast, light and dark (chromium).

The Pending section (a card with its trust boxes, Approve, Modify and Deny, the
editor and the reason box open), the status-bar badge, the audit list with its
badges, an event's detail with its diff, and the diff opened full width in both
views: each text measured as tests/browser/test_browser_contrast.py measures the card,
from the colours the browser resolves over what lies beneath.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_browser_audit_sidebar import choose_theme, shot
from tests.browser.test_browser_contrast import AA, LOW_CONTRAST, THEMES
from tests.jupyter_process import JupyterProcess
from tests.pending_support import (
    BADGE,
    SECTION,
    agent,
    lab_page,
    pending_lab,
    result_of,
    row_for,
)
from tinyagent_fs.audit.log import AuditEvent, AuditLog

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

PANEL = "#tinyagent-fs-audit"
OLD = 'import os\n\n\ndef greet(name):\n    return "Hello " + name  # greet\n'
NEW = OLD.replace("Hello", "Hi").replace("# greet", "# greet 0x1F")
DIFF = (
    "--- a/app.py\n+++ b/app.py\n@@ -4,2 +4,2 @@\n def greet(name):\n"
    '-    return "Hello " + name  # greet\n+    return "Hi " + name  # greet 0x1F\n'
)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    root = tmp_path_factory.mktemp("sidebar-contrast-root")
    with pending_lab(root, tmp_path_factory.mktemp("sidebar-contrast-home")) as process:
        yield process


@pytest.fixture(scope="module")
def page(lab: JupyterProcess) -> Iterator[Any]:
    with lab_page(lab) as tab:
        yield tab


def record_events(lab: JupyterProcess, theme: int) -> dict[str, AuditEvent]:
    """An approved edit with a diff, a denied write and an escape attempt."""
    events = {
        "edit": AuditEvent(
            tool="edit_file",
            paths=[f"app{theme}.py"],
            decision="proceed",
            decided_by="jupyter-sidebar:person",
            diff=DIFF.replace("app.py", f"app{theme}.py"),
            lines_added=1,
            lines_removed=1,
        ),
        "denied": AuditEvent(
            tool="write_file", paths=["notes.txt"], decision="deny", outcome="denied"
        ),
        "escape": AuditEvent(
            tool="read_file",
            paths=["../../etc/passwd"],
            outcome="error",
            security_violation=True,
            message="outside the root",
        ),
    }
    log = AuditLog(Path(lab.env["TINYAGENT_FS_AUDIT_DIR"]), session_id=f"s{theme}")
    for event in events.values():
        log.record(event)
    return events


def low_contrast(where: Any, least: int) -> list[dict[str, Any]]:
    measured = where.evaluate(LOW_CONTRAST)
    assert len(measured) >= least, measured  # the texts were there to measure
    return [m for m in measured if m["ratio"] < AA]


@pytest.mark.parametrize("index", range(len(THEMES)))
def test_every_text_in_the_sidebar_reaches_aa_contrast(
    lab: JupyterProcess, page: Any, index: int, tmp_path: Path
) -> None:
    theme = THEMES[index]
    choose_theme(page, theme)
    page.wait_for_function(
        "(theme) => document.body.dataset.jpThemeName === theme", arg=theme, timeout=30_000
    )
    page.wait_for_timeout(500)  # the theme's stylesheet applies
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "app.py").write_text(OLD)
    process = agent(lab, tmp_path / "p", "write_file", {"path": "app.py", "content": NEW})
    card = row_for(page, "app.py")
    section = page.locator(SECTION)
    assert card.locator("input[data-trust]").count() == 2
    failures = low_contrast(section, 10)
    failures += low_contrast(page.locator(BADGE), 1)
    card.locator("[data-action='modify']").click()
    card.locator("textarea[data-path='app.py']").wait_for()
    failures += low_contrast(section, 12)
    card.locator("[data-action='deny']").click()
    card.locator(".jp-TinyAgentFS-pendingReason").wait_for()
    failures += low_contrast(section, 12)
    shot(page, f"sidebar-contrast-pending-{index}")
    card.locator("[data-action='cancel']").click()
    card.locator("[data-action='approve']").click()
    assert result_of(process)["ok"]

    events = record_events(lab, index)
    panel = page.locator(PANEL)
    rows = panel.locator(".jp-TinyAgentFS-row")
    for event in events.values():
        panel.locator(f"[data-event-id='{event.event_id}']").wait_for()
    failures += low_contrast(panel, 20)
    for name in ("escape", "denied", "edit"):
        rows.and_(page.locator(f"[data-event-id='{events[name].event_id}']")).click()
        page.locator(f"{PANEL} .jp-TinyAgentFS-back").wait_for()
        failures += low_contrast(panel.locator(".jp-TinyAgentFS-detail"), 8)
        if name != "edit":
            page.locator(f"{PANEL} .jp-TinyAgentFS-back").click()
    assert panel.locator(".jp-TinyAgentFS-diffLine.jp-mod-added").count() == 1
    shot(page, f"sidebar-contrast-detail-{index}")

    panel.locator(".jp-TinyAgentFS-openDiff").click()
    tab = page.locator(".jp-TinyAgentFS-diffTab:visible")
    tab.locator(".taf-diff tr.taf-add .tok-s").first.wait_for()
    failures += low_contrast(tab, 15)
    tab.locator("button[data-view='side-by-side']").click()
    tab.locator(".taf-diff.taf-side-by-side .taf-code.taf-add").first.wait_for()
    failures += low_contrast(tab, 15)
    shot(page, f"sidebar-contrast-diff-{index}")
    tab.locator("button[data-view='unified']").click()
    page.locator(f"{PANEL} .jp-TinyAgentFS-back").click()
    worst = sorted(
        {(f["ratio"], f["text"], f["cls"], f["color"], f["background"]) for f in failures}
    )
    assert not worst, f"{theme}: {len(failures)} texts below {AA}:1, e.g. {worst[:20]}"
