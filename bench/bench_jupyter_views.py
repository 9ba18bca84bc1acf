"""How fast the person sees what to decide: the notebook's card and the audit sidebar.

Run: ``.venv/bin/python bench/bench_jupyter_views.py [--rounds N] [--output FILE]``.

A real ``jupyter lab`` (isolated directories) and Debian's chromium (Playwright).

- *Card*: a notebook cell awaits ``fs.write_file`` of a new 1,000-line file with
  ``JupyterHook`` (the tour's mode). The page stamps the Shift+Enter that runs
  the cell and, with a MutationObserver, the moment that cell's approval card
  shows its diff; the bench then approves it by a click and waits for the cell.
  Target: < 300 ms.
- *Sidebar*: an audit log of 100,000 events (written directly, as a long-lived
  user's log would be) and the sidebar closed; the page stamps the moment the
  sidebar's tab is clicked and the moment the first row is there. Each round
  reloads the page with a fresh layout. Target: < 1 s.

Both stamps of a figure come from the page's own clock.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import nbformat

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.browser.test_browser_audit_sidebar import PANEL, ROW  # noqa: E402
from tests.browser_support import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.jupyter_process import start_jupyter  # noqa: E402
from tinyagent_fs.audit.log import AUDIT_FILE_NAME, AuditEvent  # noqa: E402

NOTEBOOK = "card.ipynb"
EVENTS = 100_000
SETUP = """\
from pathlib import Path
from tinyagent_fs import FileTools
from tinyagent_fs.providers import LocalProvider
from tinyagent_fs.ui import JupyterHook

root = Path("project")
root.mkdir(exist_ok=True)
fs = FileTools(root, provider=LocalProvider(), hooks=[JupyterHook()], audit=False)
turn = 0
print("ready")
"""
WRITE = """\
turn += 1
text = "".join(f"line {i} of turn {turn}\\n" for i in range(1000))
result = await fs.write_file(f"big{turn}.txt", text)
print("done", turn, result.ok)
"""
CARD_OBSERVER = """() => {
    window.__card = {};
    window.__old = new WeakSet();
    const now = () => performance.timeOrigin + performance.now();
    document.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' && e.shiftKey) window.__card.pressed = now();
    }, true);
    new MutationObserver(() => {
        if (window.__card.shown) return;
        for (const diff of document.querySelectorAll('.jp-Notebook .taf-card .taf-diff')) {
            if (!window.__old.has(diff)) window.__card.shown = now();
        }
    }).observe(document.body, {childList: true, subtree: true});
}"""
FORGET_CARDS = """() => {
    window.__card = {};
    for (const diff of document.querySelectorAll('.jp-Notebook .taf-card .taf-diff')) {
        window.__old.add(diff);
    }
}"""
ROW_OBSERVER = """(selector) => {
    window.__row = {};
    const now = () => performance.timeOrigin + performance.now();
    document.addEventListener('pointerdown', () => {
        if (!window.__row.clicked) window.__row.clicked = now();
    }, true);
    const visible = () => [...document.querySelectorAll(selector)].some(
        (row) => row.checkVisibility());
    new MutationObserver(() => {
        if (window.__row.clicked && !window.__row.shown && visible()) {
            window.__row.shown = now();
        }
    }).observe(document.body, {childList: true, subtree: true, attributes: true});
}"""


def lab_home(scratch: Path) -> tuple[Path, Path]:
    home, root = scratch / "home", scratch / "root"
    news = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    root.mkdir()
    return home, root


def write_audit_log(directory: Path, count: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    sessions = [uuid.uuid4().hex[:12] for _ in range(20)]
    with (directory / AUDIT_FILE_NAME).open("w", encoding="utf-8") as log:
        for index in range(count):
            event = AuditEvent(
                tool=("read_file", "write_file", "edit_file", "run_command")[index % 4],
                paths=[f"src/module_{index % 500}.py"],
                session_id=sessions[index % len(sessions)],
                user="bench",
                decision="proceed",
                decided_by="risk-based",
                lines_added=index % 7,
            )
            log.write(json.dumps(event.__dict__) + "\n")


def card_rounds(page: Any, rounds: int) -> list[float]:
    page.evaluate(CARD_OBSERVER)
    cells = page.locator(".jp-Notebook .jp-CodeCell")
    cells.nth(0).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_selector(".jp-OutputArea-output:has-text('ready')")
    samples = []
    for turn in range(1, rounds + 2):  # the first is a warm-up
        page.evaluate(FORGET_CARDS)
        cells.nth(1).locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        page.wait_for_function("() => window.__card.shown")
        stamps = page.evaluate("() => window.__card")
        cells.nth(1).locator(".taf-card button:has-text('Approve')").last.click()
        page.wait_for_selector(f".jp-OutputArea-output:has-text('done {turn} True')")
        if turn > 1:
            samples.append(stamps["shown"] - stamps["pressed"])
    return samples


def sidebar_rounds(page: Any, url: str, rounds: int) -> list[float]:
    tab = page.locator(f'.lm-TabBar-tab[data-id="{PANEL[1:]}"]')
    samples = []
    for _ in range(rounds + 1):  # the first is a warm-up
        page.goto(url)  # "?reset": a fresh layout, the sidebar closed
        tab.wait_for(state="visible")
        page.evaluate(ROW_OBSERVER, ROW)
        assert not page.locator(PANEL).is_visible(), "the sidebar must start closed"
        tab.click()
        page.wait_for_function("() => window.__row.shown")
        samples.append(page.evaluate("() => window.__row.shown - window.__row.clicked"))
    return samples[1:]


def run(rounds: int) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as scratch:
        home, root = lab_home(Path(scratch))
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell(WRITE)]
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nbformat.write(notebook, root / NOTEBOOK)
        audit = home / "audit"
        write_audit_log(audit, EVENTS)
        env = {"TINYAGENT_FS_AUDIT_DIR": str(audit), "TINYAGENT_FS_JOURNAL_DIR": str(home / "j")}
        lab = start_jupyter("lab", root, home, env=env)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
                )
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.set_default_timeout(60_000)
                page.goto(lab.url(f"lab/tree/{NOTEBOOK}"))
                page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
                card = card_rounds(page, rounds)
                sidebar = sidebar_rounds(page, lab.url("lab?reset"), rounds)
                browser.close()
        finally:
            lab.stop()
    return {"card": card, "sidebar": sidebar}


def report(samples: dict[str, list[float]], command: str) -> str:
    def row(name: str, values: list[float], target: float) -> str:
        values = sorted(values)
        p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
        verdict = "PASS" if statistics.median(values) < target else "MISS"
        return (
            f"{name:<52}{statistics.median(values):>9.1f}{p95:>9.1f}"
            f"{min(values):>9.1f}{max(values):>9.1f}{target:>9.0f}  {verdict}"
        )

    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rounds = len(samples["card"])
    lines: list[str] = [
        f"# command: {command}",
        f"# {when}, {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, chromium headless, {rounds} rounds",
        "# times in ms on the page's clock; a figure passes when its median is under target",
        f"{'measure':<52}{'median':>9}{'p95':>9}{'min':>9}{'max':>9}{'target':>9}",
    ]
    figures: list[tuple[str, str, float]] = [
        ("card", "Shift+Enter -> card with a 1,000-line diff shown", 300),
        ("sidebar", f"open sidebar -> first of {EVENTS:,} events shown", 1000),
    ]
    lines += [row(name, samples[key], target) for key, name, target in figures]
    return "\n".join([*lines, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--output", type=Path, default=None)
    options = parser.parse_args()
    samples = run(options.rounds)
    text = report(samples, " ".join([".venv/bin/python", *sys.argv]))
    print(text, end="")
    if options.output:
        options.output.write_text(text)


if __name__ == "__main__":
    main()
