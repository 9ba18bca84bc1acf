"""The demo notebooks open in a real JupyterLab as stored: clean, unmodified, nothing shown
that has not run (a person starting the tour must not see stale results)."""

from __future__ import annotations

import json
import platform
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_support import CHROMIUM, CHROMIUM_ARGS, require_browser
from tests.jupyter_process import JupyterProcess, start_jupyter

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

NOTEBOOKS = Path(__file__).resolve().parent.parent.parent / "notebooks"
SETTLE_S = 3.0
"""How long a freshly opened notebook is watched for a change JupyterLab makes by itself."""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    require_browser()
    root = tmp_path_factory.mktemp("tour-root")
    shutil.copytree(NOTEBOOKS, root / "notebooks")
    for path in (root / "notebooks").glob("*.ipynb"):
        _record_this_python(path)
    home = tmp_path_factory.mktemp("tour-home")
    news = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    process = start_jupyter("lab", root, home)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def browser(lab: JupyterProcess) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_a_demo_notebook_opens_clean_and_unmodified(
    lab: JupyterProcess, browser: Any, name: str
) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.goto(lab.url(f"lab/tree/notebooks/{name}"))
        page.wait_for_selector(".jp-Notebook .jp-Cell", state="visible")
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
        time.sleep(SETTLE_S)
        tab = page.locator(".lm-TabBar-tab.lm-mod-current", has_text=name)
        assert tab.count() == 1, page.locator(".lm-TabBar-tab").all_inner_texts()
        assert "jp-mod-dirty" not in (tab.get_attribute("class") or "")
        assert page.locator(".jp-Notebook .jp-OutputArea-output").count() == 0
        prompts = page.locator(".jp-Notebook .jp-InputArea-prompt").all_inner_texts()
        assert prompts and all(text.strip() in ("", "[ ]:") for text in prompts), prompts
    finally:
        context.close()


def _record_this_python(path: Path) -> None:
    """JupyterLab writes the kernel's Python version into the notebook when it connects;
    the stored one is the development interpreter's, so a copy records this machine's."""
    notebook = json.loads(path.read_text())
    notebook["metadata"]["language_info"]["version"] = platform.python_version()
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
