"""What every browser test gets: a screenshot when it fails, and no agent process
outliving the test that started it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser.test_browser_audit_sidebar import shot
from tests.pending_support import stop_agents


@pytest.fixture(autouse=True)
def no_agent_left() -> Iterator[None]:
    """Set up before the screenshot, so ended after it: the shot shows what failed."""
    yield
    stop_agents()


@pytest.fixture(autouse=True)
def screenshot_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    """What the browser showed when a test failed, beside the other screenshots."""
    failed_before = request.session.testsfailed
    yield
    if request.session.testsfailed > failed_before and "page" in request.fixturenames:
        shot(request.getfixturevalue("page"), f"failed-{request.node.name}")
