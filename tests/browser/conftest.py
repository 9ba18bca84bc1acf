"""What every browser test gets: no agent process outlives the test that started it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pending_support import stop_agents


@pytest.fixture(autouse=True)
def no_agent_left() -> Iterator[None]:
    yield
    stop_agents()
