"""Every text in the approval card reads at WCAG AA contrast, light and dark (chromium).

Issue 22 measured line numbers at 2.68:1, hunk headers at 3.06:1 and syntax
colours on the removed and added backgrounds at 3.74:1. Here the colours are the
ones the browser actually uses: JupyterLab's theme variables resolved by
getComputedStyle, the translucent line backgrounds composed over what lies
beneath them. Every visible text of the card (open in both diff views, then as a
record with its details unfolded) must reach 4.5:1, except disabled controls,
which WCAG exempts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_browser_audit_sidebar import ARTIFACTS, choose_theme, run_cell, shot
from tests.browser_support import notebook_tab, start_notebook_lab
from tests.jupyter.test_jupyter_card_form import named, results, run_setup
from tests.jupyter_process import JupyterProcess

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

NOTEBOOK = "contrast.ipynb"
AA = 4.5
THEMES = ("JupyterLab Light", "JupyterLab Dark")
CODE = '''\
import os

@decorator
class Thing(Base):
    """Doc string."""

    def method(self, value=1.5):
        # a comment
        return len(value) + 0x1F and not None or {"key": [1, 2]}
'''
SETUP = f"""\
import json
from pathlib import Path
from tinyagent_fs import FileTools
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.providers import LocalProvider
from tinyagent_fs.ui import JupyterHook

CODE = {CODE!r}
CHANGED = "".join(
    line.rstrip() + "  # x\\n" if line.strip() else line for line in CODE.splitlines(True)
)


async def write(name):
    root = Path("projects") / name
    root.mkdir(parents=True)
    (root / "app.py").write_text(CODE + "\\n" + CODE)
    hook = JupyterHook()
    hook.settings.diff_preview_lines = 24
    audit = AuditLog(Path("audit") / name)
    fs = FileTools(root, provider=LocalProvider(), hooks=[hook], audit=audit)
    result = await fs.write_file("app.py", CHANGED + "\\n" + CODE)
    Path("results").mkdir(exist_ok=True)
    Path("results", name + ".json").write_text(json.dumps([{{"ok": result.ok, "text": ""}}]))


print("ready:", JupyterHook().describe())"""
CELLS = [SETUP, *(f'await write("theme-{index}")' for index in range(len(THEMES)))]

LOW_CONTRAST = """(root) => {
    const parse = (text) => {
        // rgb(0-255 ...) or, from color-mix(), color(srgb 0-1 ...)
        const parts = text.match(/[\\d.]+/g).map(Number);
        const scale = text.startsWith('color(') ? 255 : 1;
        return [parts[0] * scale, parts[1] * scale, parts[2] * scale,
                parts.length > 3 ? parts[3] : 1];
    };
    const over = (top, below) => top.slice(0, 3).map(
        (value, i) => value * top[3] + below[i] * (1 - top[3])).concat(1);
    const backdrop = (el) => {
        const chain = [];
        for (let at = el; at; at = at.parentElement) chain.unshift(at);
        return chain.reduce((below, at) => {
            const colour = parse(getComputedStyle(at).backgroundColor);
            return colour[3] > 0 ? over(colour, below) : below;
        }, [255, 255, 255, 1]);
    };
    const luminance = (rgb) => {
        const [r, g, b] = rgb.slice(0, 3).map((v) => {
            const s = v / 255;
            return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const found = [];
    for (const el of [root, ...root.querySelectorAll('*')]) {
        const text = [...el.childNodes]
            .filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent).join('').trim();
        const empty = (el.matches('input, textarea') && !el.value) ? el.placeholder : '';
        if (!(text || empty) || !el.getClientRects().length || el.closest(':disabled')) continue;
        const style = getComputedStyle(el, empty ? '::placeholder' : null);
        if (style.visibility === 'hidden') continue;
        const below = backdrop(el);
        const fg = over(parse(style.color), below);
        const [light, dark] = [luminance(fg), luminance(below)].sort((a, b) => b - a);
        const ratio = (light + 0.05) / (dark + 0.05);
        found.push({ text: (text || empty).slice(0, 30), cls: el.className,
                     ratio: Math.round(ratio * 100) / 100, color: style.color,
                     background: below.map(Math.round).join(',') });
    }
    return found;
}"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    process = start_notebook_lab(tmp_path_factory, "contrast", NOTEBOOK, CELLS)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def page(lab: JupyterProcess) -> Iterator[Any]:
    with notebook_tab(lab, NOTEBOOK, ARTIFACTS) as tab:
        run_setup(tab)
        yield tab


def low_contrast(card: Any) -> list[dict[str, Any]]:
    measured = card.evaluate(LOW_CONTRAST)
    assert len(measured) > 20, measured  # the card was measured, not an empty box
    return [m for m in measured if m["ratio"] < AA]


@pytest.mark.parametrize("index", range(len(THEMES)))
def test_every_text_in_the_card_reaches_aa_contrast(
    lab: JupyterProcess, page: Any, index: int
) -> None:
    theme = THEMES[index]
    choose_theme(page, theme)
    page.wait_for_function(
        "(theme) => document.body.dataset.jpThemeName === theme", arg=theme, timeout=30_000
    )
    page.wait_for_timeout(500)  # the theme's stylesheet applies
    run_cell(page, index + 1)
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(index + 1)
    cell.locator(".taf-card[data-state='open']").wait_for()
    card = cell.locator(".taf-card")
    # Every kind of syntax colour is on a removed and on an added line.
    for token in ("k", "nf", "nc", "nd", "s", "m", "c", "o", "ow", "p", "nb"):
        assert card.locator(f"tr.taf-del .tok-{token}").count(), token
        assert card.locator(f"tr.taf-add .tok-{token}").count(), token
    failures = low_contrast(card)
    card.get_by_role("button", name=named("Side by side")).click()
    card.locator(".taf-diff.taf-side-by-side").wait_for()
    failures += low_contrast(card)
    card.get_by_role("button", name=named("Approve")).click()
    card.locator(".taf-record").wait_for()
    card.locator(".taf-folded summary").click()
    failures += low_contrast(card)
    results(lab, f"theme-{index}")
    if failures:
        shot(page, f"contrast-{index}")
    worst = sorted({(f["ratio"], f["cls"], f["color"], f["background"]) for f in failures})
    assert not worst, f"{theme}: {len(failures)} texts below {AA}:1, e.g. {worst[:12]}"
