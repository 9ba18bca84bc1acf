"""From an agent's request to the row in JupyterLab's Pending section, and back.

Run: ``.venv/bin/python bench/bench_pending.py [--rounds N] [--output FILE]``.

A real ``jupyter lab`` (isolated directories) and Debian's chromium (Playwright)
with the audit sidebar open. Each round a toolkit in this process
(``FileTools`` + ``WebApprovalHook``, which finds the server through Jupyter's
runtime files) asks for a write; the page stamps, with a MutationObserver,
the wall-clock moment the proposal's row appears. The agent then cancels the
call (which withdraws the proposal) and the moment the row disappears is
stamped too. Both clocks are this machine's (``time.time()`` and the page's
``performance.timeOrigin + performance.now()``). Target: row visible < 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.browser_support import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.jupyter_process import start_jupyter  # noqa: E402
from tinyagent_fs import FileTools  # noqa: E402
from tinyagent_fs.hooks.web import WebApprovalHook  # noqa: E402

ROW = "#tinyagent-fs-audit .jp-TinyAgentFS-pendingRow"
OBSERVER = """(selector) => {
    window.__stamps = {};
    const seen = new Set();
    const now = () => performance.timeOrigin + performance.now();
    new MutationObserver(() => {
        const rows = new Set();
        for (const row of document.querySelectorAll(selector)) {
            rows.add(row.dataset.approvalId);
            if (!seen.has(row.dataset.approvalId)) {
                seen.add(row.dataset.approvalId);
                window.__stamps[row.dataset.approvalId] = {shown: now()};
            }
        }
        for (const id of seen) {
            if (!rows.has(id) && !window.__stamps[id].gone) {
                window.__stamps[id].gone = now();
            }
        }
    }).observe(document.body, {childList: true, subtree: true, attributes: true});
}"""


async def one_round(fs: FileTools, page: Any, index: int) -> tuple[float, float]:
    before = set(await page.evaluate("() => Object.keys(window.__stamps)"))
    asked = time.time() * 1000
    task = asyncio.ensure_future(fs.write_file(f"f{index}.txt", f"{index}\n"))
    approval_id = ""
    while not approval_id:
        await asyncio.sleep(0.01)
        stamps = await page.evaluate("() => Object.keys(window.__stamps)")
        fresh = [key for key in stamps if key not in before]
        approval_id = fresh[0] if fresh else ""
    shown = await page.evaluate("(id) => window.__stamps[id].shown", approval_id)
    cancelled = time.time() * 1000
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await page.wait_for_function("(id) => window.__stamps[id].gone", arg=approval_id)
    gone = await page.evaluate("(id) => window.__stamps[id].gone", approval_id)
    return shown - asked, gone - cancelled


async def run(rounds: int) -> list[tuple[float, float]]:
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory() as scratch:
        home, root = Path(scratch) / "home", Path(scratch) / "root"
        home.mkdir()
        root.mkdir()
        news = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
        news.mkdir(parents=True)
        (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
        ours = home / "lab-settings" / "tinyagent-fs"
        ours.mkdir(parents=True)
        (ours / "plugin.jupyterlab-settings").write_text('{"openOnStart": true}')
        lab = start_jupyter(
            "lab",
            root,
            home,
            env={
                "TINYAGENT_FS_AUDIT_DIR": str(home / "audit"),
                "TINYAGENT_FS_JOURNAL_DIR": str(home / "journal"),
            },
        )
        os.environ["JUPYTER_RUNTIME_DIR"] = lab.env["JUPYTER_RUNTIME_DIR"]
        os.environ["TINYAGENT_FS_AUDIT_DIR"] = str(home / "audit")
        os.environ["TINYAGENT_FS_JOURNAL_DIR"] = str(home / "journal")
        try:
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
                )
                page = await browser.new_page(viewport={"width": 1400, "height": 900})
                page.set_default_timeout(60_000)
                await page.goto(lab.url("lab"))
                await page.wait_for_selector("#tinyagent-fs-audit", state="visible")
                await page.evaluate(OBSERVER, ROW)
                hook = WebApprovalHook(project=root, origin="bench")
                async with FileTools(root, hooks=[hook]) as fs:
                    await one_round(fs, page, -1)  # warm-up: first fetch, first render
                    samples = [await one_round(fs, page, i) for i in range(rounds)]
                await browser.close()
        finally:
            lab.stop()
    return samples


def report(samples: list[tuple[float, float]], command: str) -> str:
    shown = sorted(s[0] for s in samples)
    gone = sorted(s[1] for s in samples)

    def row(name: str, values: list[float]) -> str:
        p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
        return (
            f"{name:<44}{statistics.median(values):>9.1f}{p95:>9.1f}"
            f"{min(values):>9.1f}{max(values):>9.1f}"
        )

    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join(
        [
            f"# command: {command}",
            f"# {when}, {platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, chromium headless, {len(samples)} rounds",
            "# times in ms, wall clock of this machine; target: row visible < 300 ms",
            f"{'measure':<44}{'median':>9}{'p95':>9}{'min':>9}{'max':>9}",
            row("agent asks -> Pending row visible", shown),
            row("agent cancels -> Pending row gone", gone),
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--output", type=Path, default=None)
    options = parser.parse_args()
    samples = asyncio.run(run(options.rounds))
    command = " ".join([".venv/bin/python", *sys.argv])
    text = report(samples, command)
    print(text, end="")
    if options.output:
        options.output.write_text(text)


if __name__ == "__main__":
    main()
