"""The approval broker's sweeper: an agent that stops waiting loses its proposal, and
time the server's own loop was blocked is not held against an agent.

A blocked loop (a slow handler, a long pause) holds every long-poll that arrived
meanwhile in the socket; when the loop runs again the sweeper's late tick may run
before them. Counting absence in wall time would then drop proposals whose agents
were there all along, and their rows would vanish from the person's sidebar.
"""

from __future__ import annotations

import asyncio
import time

from tinyagent_fs.server.approvals import ApprovalBroker

TICK_S = 0.05
ABANDON_S = 0.3


def ask(broker: ApprovalBroker) -> str:
    body = {"session_id": "s", "tool": "write_file", "args": {"path": "a.txt"}}
    return broker.ask(body, "tester").id


async def test_a_proposal_nobody_waits_for_is_dropped_after_abandon_s() -> None:
    announced: list[tuple[str, str]] = []
    broker = ApprovalBroker(lambda action, p: announced.append((action, p.id)), abandon_s=ABANDON_S)
    broker.start(TICK_S)
    try:
        approval_id = ask(broker)
        await asyncio.sleep(ABANDON_S / 2)
        assert broker.get(approval_id).state == "pending"
        deadline = time.monotonic() + 10  # ticks, not seconds: a loaded machine has fewer
        while ("abandoned", approval_id) not in announced and time.monotonic() < deadline:
            await asyncio.sleep(TICK_S)
        assert ("abandoned", approval_id) in announced
        assert broker.listing() == []
    finally:
        await broker.stop()


async def test_a_waiting_agent_keeps_its_proposal_past_abandon_s() -> None:
    broker = ApprovalBroker(abandon_s=ABANDON_S)
    broker.start(TICK_S)
    try:
        approval_id = ask(broker)
        waited = await broker.wait(approval_id, 3 * ABANDON_S)
        assert waited.state == "pending"
        assert [row["id"] for row in broker.listing()] == [approval_id]
    finally:
        await broker.stop()


async def test_a_blocked_server_loop_does_not_abandon_an_agent_that_came_meanwhile() -> None:
    loop = asyncio.get_running_loop()
    broker = ApprovalBroker(abandon_s=ABANDON_S)
    broker.start(TICK_S)
    await asyncio.sleep(0)  # the sweeper is in its sleep, its next tick due
    try:
        approval_id = ask(broker)
        waiter: list[asyncio.Task] = []
        # The agent's long-poll arrives while the loop is blocked; it is handled
        # after the sweeper's overdue tick, as a socket read queued behind it would be.
        loop.call_later(
            TICK_S * 2,
            lambda: waiter.append(asyncio.ensure_future(broker.wait(approval_id, ABANDON_S))),
        )
        time.sleep(3 * ABANDON_S)  # the server's loop, blocked
        await asyncio.sleep(TICK_S / 5)
        while not waiter:
            await asyncio.sleep(TICK_S / 5)
        assert broker.get(approval_id).state == "pending"
        assert (await waiter[0]).state == "pending"
    finally:
        await broker.stop()
