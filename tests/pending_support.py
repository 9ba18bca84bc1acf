"""The Pending section's harness: a real JupyterLab, a chromium page on it, and agent
processes whose requests reach the sidebar (shared by the pending browser tests)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.browser.test_browser_audit_sidebar import ARTIFACTS, show_audit_panel
from tests.browser_support import CHROMIUM, CHROMIUM_ARGS, require_browser
from tests.jupyter_process import JupyterProcess, start_jupyter

REPO = Path(__file__).resolve().parent.parent
SECTION = "#tinyagent-fs-audit .jp-TinyAgentFS-pending"
ROW = f"{SECTION} .jp-TinyAgentFS-pendingRow"
BADGE = ".jp-TinyAgentFS-pendingBadge"
TOAST = ".jp-toast-message"

_running_agents: list[subprocess.Popen[str]] = []


@contextmanager
def pending_lab(root: Path, home: Path) -> Iterator[JupyterProcess]:
    """JupyterLab without the news toast, its audit log in ``home``; a proposal no
    agent waits for is dropped after 5 s (soon, yet with room for a slow machine)."""
    require_browser()
    news = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    process = start_jupyter(
        "lab",
        root,
        home,
        extra_args=["--TinyAgentFSServer.approval_abandon_s=5"],
        env={
            "TINYAGENT_FS_AUDIT_DIR": str(home / "audit"),
            "TINYAGENT_FS_JOURNAL_DIR": str(home / "journal"),
        },
    )
    try:
        yield process
    finally:
        process.stop()


@contextmanager
def lab_page(lab: JupyterProcess) -> Iterator[Any]:
    """A chromium tab on JupyterLab with the audit sidebar shown."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        tab = context.new_page()
        tab.set_default_timeout(60_000)
        tab.goto(lab.url("lab"))
        tab.wait_for_selector(".jp-LabShell", state="visible")
        wait_lab_started(tab)
        show_audit_panel(tab)
        yield tab
        context.close()
        browser.close()


def wait_lab_started(page: Any) -> None:
    """Until JupyterLab has done starting, not only shown its shell.

    The file browser restores on the first route (after the splash goes) and an
    empty main area then gets a Launcher, which takes the focus: on a loaded
    machine that lands seconds later, in the middle of a keyboard walk (Enter
    and Tab went to a Launcher card instead of the Pending section). A tab in
    the main area, the Launcher or a restored one, says that start is over."""
    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=60_000)
    page.locator("#jp-main-dock-panel .lm-TabBar-tab").first.wait_for(
        state="visible", timeout=60_000
    )


def agent(lab: JupyterProcess, project: Path, tool: str, args: dict, *extra: str) -> Any:
    """``tests.approval_agent`` asking this JupyterLab; its results come on stdout."""
    project.mkdir(exist_ok=True)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.approval_agent",
            str(project),
            tool,
            json.dumps(args),
            *extra,
        ],
        cwd=REPO,
        env=lab.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _running_agents.append(process)
    return process


def stop_agents() -> None:
    """End the agents a test started, so one that failed leaves no card for the next.

    An interrupted agent withdraws its proposal, as a person's Ctrl+C would; one
    that does not end in 15 s is killed (the server then drops its card)."""
    while _running_agents:
        process = _running_agents.pop()
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        process.communicate()


def results_of(process: Any, timeout: float = 60) -> list[dict[str, Any]]:
    """Every tool result the agent printed, once it has ended."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return [dict(json.loads(line)) for line in out.splitlines()]


def result_of(process: Any, timeout: float = 60) -> dict[str, Any]:
    (result,) = results_of(process, timeout)
    return result


def audit_events(lab: JupyterProcess) -> list[dict[str, Any]]:
    path = Path(lab.env["TINYAGENT_FS_AUDIT_DIR"]) / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def last_audit(lab: JupyterProcess) -> dict[str, Any]:
    return audit_events(lab)[-1]


def row_for(page: Any, path: str) -> Any:
    row = page.locator(ROW, has_text=path)
    row.wait_for(state="visible", timeout=30_000)
    return row


def wait_no_toast(page: Any, text: str, timeout_ms: int = 15_000) -> None:
    """Until no notification names ``text``: every one, not only the first (the same
    call can be announced twice while a poll and an answer cross)."""
    page.wait_for_function(
        "([selector, text]) => ![...document.querySelectorAll(selector)]"
        ".some(el => el.textContent.includes(text))",
        arg=[TOAST, text],
        timeout=timeout_ms,
    )


def wait_no_rows(page: Any, timeout_ms: int = 15_000) -> None:
    page.wait_for_function(
        f"() => document.querySelectorAll({json.dumps(ROW)}).length === 0", timeout=timeout_ms
    )
