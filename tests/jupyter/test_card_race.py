"""The notebook card in a FirstAnswer race (without a kernel): whichever place answers first
decides; the card that lost becomes the record of where it was decided."""

from __future__ import annotations

import asyncio
from pathlib import Path

import ipywidgets as widgets

from tinyagent_fs.hooks.decision import Decision, ToolCall, Verdict
from tinyagent_fs.hooks.race import FirstAnswer
from tinyagent_fs.ui import JupyterHook

from ..card_support import from_page
from ..jupyter.test_jupyter_widgets import change_call


class Sidebar:
    """Stands where WebApprovalHook does: answers when told to, notes that it lost."""

    def __init__(self) -> None:
        self.verdict: asyncio.Future[Decision] | None = None
        self.withdrawn: list[Decision | None] = []

    async def answer(self, call: ToolCall) -> Decision:
        self.verdict = asyncio.get_running_loop().create_future()
        return await self.verdict

    def withdraw(self, call: ToolCall, winner: Decision | None) -> None:
        self.withdrawn.append(winner)


def card_hook() -> JupyterHook:
    return JupyterHook("risk-based", 0, frontend="widgets", container=widgets.VBox())


async def until(condition: object) -> None:
    for _ in range(200):
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the race never got there")


async def test_an_answer_in_the_sidebar_turns_the_card_into_its_record(tmp_path: Path) -> None:
    hook, sidebar = card_hook(), Sidebar()
    call = change_call(tmp_path)
    race = asyncio.create_task(FirstAnswer(hook, sidebar).before_tool_execution(call))
    await until(lambda: call.call_id in hook.pending and sidebar.verdict is not None)
    card = hook.pending[call.call_id].card
    assert sidebar.verdict is not None
    sidebar.verdict.set_result(Decision.proceed(decided_by="jupyter-sidebar:ana"))
    decision = await asyncio.wait_for(race, 5)
    assert decision.decided_by == "jupyter-sidebar:ana"
    assert card.closed and card.widget.closed
    record = card.widget.record
    assert "Approved" in record and "answered first in the JupyterLab sidebar" in record
    assert "jupyter-sidebar:ana" in record
    assert call.call_id not in hook.pending
    from_page(card, "deny", reason="too late")  # a click that no longer counts
    assert card.widget.record == record


async def test_an_answer_on_the_card_withdraws_the_sidebar(tmp_path: Path) -> None:
    hook, sidebar = card_hook(), Sidebar()
    call = change_call(tmp_path)
    race = asyncio.create_task(FirstAnswer(hook, sidebar).before_tool_execution(call))
    await until(lambda: call.call_id in hook.pending and sidebar.verdict is not None)
    from_page(hook.pending[call.call_id].card, "deny", reason="not this file")
    decision = await asyncio.wait_for(race, 5)
    assert decision.verdict is Verdict.DENY and decision.message == "not this file"
    assert sidebar.withdrawn == [decision]
    assert sidebar.verdict is not None and sidebar.verdict.cancelled()


async def test_where_no_card_can_be_clicked_the_other_place_alone_decides(
    tmp_path: Path,
) -> None:
    hook, sidebar = JupyterHook("risk-based", 0, frontend="none"), Sidebar()
    call = change_call(tmp_path)
    race = asyncio.create_task(FirstAnswer(hook, sidebar).before_tool_execution(call))
    await until(lambda: sidebar.verdict is not None)
    await asyncio.sleep(0.1)
    assert not race.done(), "the card's absence decided nothing"
    assert sidebar.verdict is not None
    sidebar.verdict.set_result(Decision.proceed(decided_by="jupyter-sidebar:ana"))
    assert (await asyncio.wait_for(race, 5)).verdict is Verdict.PROCEED
