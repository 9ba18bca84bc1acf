"""Debian's chromium driven by Playwright, for the tests that need a real browser.

A machine without chromium or playwright fails these tests with what to
install: they are never skipped.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.jupyter_process import JupyterProcess, start_jupyter

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def require_browser() -> None:
    missing = []
    if not CHROMIUM.exists():
        missing.append("Debian's chromium (apt-get install -y chromium)")
    if importlib.util.find_spec("playwright") is None:
        missing.append("the Python package playwright (pip install playwright)")
    if missing:
        pytest.fail("browser tests need " + " and ".join(missing), pytrace=False)


def start_notebook_lab(
    factory: pytest.TempPathFactory,
    name: str,
    notebook: str,
    cells: list[str],
    audit_dir: Path | None = None,
) -> JupyterProcess:
    """A real JupyterLab in fresh folders serving ``notebook`` (made of ``cells``), with
    no news toast over the page; the audit log goes to ``audit_dir`` (a fresh folder
    by default)."""
    require_browser()
    root = factory.mktemp(f"{name}-root")
    home = factory.mktemp(f"{name}-home")
    made = nbformat.v4.new_notebook()
    made.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    made.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(made, root / notebook)
    news = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    env = {
        "TINYAGENT_FS_AUDIT_DIR": str(audit_dir or home / "audit"),
        "TINYAGENT_FS_JOURNAL_DIR": str(home / "journal"),
    }
    return start_jupyter("lab", root, home, env=env)


@contextmanager
def notebook_tab(
    lab: JupyterProcess, notebook: str, artifacts: Path, size: tuple[int, int] = (1400, 900)
) -> Iterator[Any]:
    """Chromium showing ``notebook`` in ``lab``, its kernel idle; closed afterwards.
    Screenshots go to ``artifacts``."""
    from playwright.sync_api import sync_playwright

    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": size[0], "height": size[1]})
        try:
            tab = context.new_page()
            tab.set_default_timeout(60_000)
            tab.goto(lab.url(f"lab/tree/{notebook}"))
            tab.wait_for_selector(".jp-Notebook .jp-Cell", state="visible")
            tab.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
            yield tab
        finally:
            context.close()
            browser.close()
