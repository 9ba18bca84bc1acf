"""Debian's chromium driven by Playwright, for the tests that need a real browser.

A machine without chromium or playwright fails these tests with what to
install: they are never skipped.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

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
