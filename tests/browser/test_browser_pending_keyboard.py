"""The sidebar's Pending section from the keyboard alone (Tab, Shift+Tab, Enter, Space,
Escape), in a real JupyterLab driven through Debian's chromium, answering real agents.

Issue 22 item 4: each card is a region named for the call; its controls come in
the order a person decides in (trust boxes, then Approve, Modify, Deny) with a
visible focus ring; after an answer the focus moves to the next card, or to the
section's heading when none is left, never to the page; and the status-bar badge
and the notification go once nothing waits. What the agents received (a script,
and ``tinyagent-fs mcp`` over JSON-RPC) is checked, not only the screen.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_browser_audit_sidebar import shot
from tests.jupyter_process import JupyterProcess
from tests.mcp_raw_client import RawServer
from tests.pending_support import (
    BADGE,
    SECTION,
    TOAST,
    agent,
    audit_events,
    lab_page,
    pending_lab,
    result_of,
    results_of,
    row_for,
    wait_no_rows,
    wait_no_toast,
)

pytestmark = [pytest.mark.browser, pytest.mark.jupyter]

HEADING = f"{SECTION} .jp-TinyAgentFS-pendingHeading"
FOCUSED = """() => {
    const el = document.activeElement;
    return el.dataset.trust ? 'trust-' + el.dataset.trust
        : el.dataset.action || el.dataset.approvalId && 'card:' + el.dataset.approvalId
        || el.tagName.toLowerCase() + '.' + el.className;
}"""
RING = """() => {
    const style = getComputedStyle(document.activeElement);
    return style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2;
}"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    root = tmp_path_factory.mktemp("pending-keys-root")
    with pending_lab(root, tmp_path_factory.mktemp("pending-keys-home")) as process:
        yield process


@pytest.fixture(scope="module")
def page(lab: JupyterProcess) -> Iterator[Any]:
    with lab_page(lab) as tab:
        yield tab


@pytest.fixture(autouse=True)
def nothing_pending_before(page: Any) -> None:
    """The keyboard walks start at the heading: no card a failed test left may come first."""
    wait_no_rows(page, timeout_ms=30_000)


def focused(page: Any) -> str:
    return str(page.evaluate(FOCUSED))


def tab_until(page: Any, target: str, limit: int = 12, key: str = "Tab") -> list[str]:
    """Press ``key`` until ``target`` has the focus; what had it on the way, in order."""
    seen = []
    for _ in range(limit):
        page.keyboard.press(key)
        seen.append(focused(page))
        if seen[-1] == target:
            assert page.evaluate(RING), f"no focus ring on {target}"
            return seen
    raise AssertionError(f"{key} never reached {target}: {seen}")


def controls(seen: list[str]) -> list[str]:
    """The controls among what had the focus (a scrollable diff may take it too)."""
    return [name for name in seen if not name.startswith("pre.")]


def start_at_heading(page: Any) -> None:
    """Where a keyboard user lands on the section: its heading."""
    page.locator(HEADING).focus()
    assert focused(page).startswith("h2.")


def wait_focus(page: Any, what: str) -> None:
    page.wait_for_function(f"() => ({FOCUSED})() === {json.dumps(what)}", timeout=15_000)


def nothing_waits(page: Any, what: str) -> None:
    """The focus on the heading that says so; the badge and the notification gone."""
    wait_focus(page, "h2.jp-TinyAgentFS-pendingHeading")
    assert page.locator(HEADING).inner_text() == "Pending: nothing waits for you"
    page.locator(BADGE).wait_for(state="hidden", timeout=15_000)
    wait_no_toast(page, what, 15_000)
    page.keyboard.press("Tab")  # on to the audit log: the empty section goes
    page.locator(SECTION).wait_for(state="hidden")
    assert focused(page) == "input.jp-mod-styled jp-TinyAgentFS-search", focused(page)


def test_two_cards_answered_by_keyboard_the_focus_follows(
    lab: JupyterProcess, page: Any, tmp_path: Path
) -> None:
    first = agent(
        lab, tmp_path / "a", "write_file", {"path": "a.txt", "content": "a\n"}, "--calls", "2"
    )
    row_for(page, "a.txt")
    second = agent(lab, tmp_path / "b", "write_file", {"path": "b.txt", "content": "b\n"})
    row_for(page, "b.txt")
    region_a = page.get_by_role("region", name="Approve or deny write_file a.txt", exact=True)
    region_b = page.get_by_role("region", name="Approve or deny write_file b.txt", exact=True)
    card_b = f"card:{region_b.get_attribute('data-approval-id')}"
    page.locator(TOAST, has_text="b.txt").wait_for(state="visible")

    start_at_heading(page)
    order = controls(tab_until(page, "deny"))
    assert order == ["trust-paths", "trust-tool", "approve", "modify", "deny"], order
    tab_until(page, "trust-tool", key="Shift+Tab")
    page.keyboard.press("Space")
    assert region_a.locator("input[data-trust='tool']").is_checked()
    tab_until(page, "approve")
    shot(page, "pending-keyboard-approve")
    page.keyboard.press("Enter")
    # The agent's first call is approved and its second passes as trusted, unasked.
    assert [r["ok"] for r in results_of(first)] == [True, True]
    assert (tmp_path / "a" / "a.txt").read_text() == "a\n"
    decided = [e["decided_by"] for e in audit_events(lab) if e["paths"] == ["a.txt"]]
    assert decided[0].startswith("jupyter-sidebar:"), decided
    assert decided[1] == "jupyter (trusted for this session)", decided
    wait_focus(page, card_b)
    assert page.evaluate(RING), "no focus ring on the next card"
    # The notification counts what still waits (it said "2 ... wait" after an answer).
    wait_no_toast(page, "2 agent changes", 10_000)
    assert page.locator(TOAST).all_inner_texts() == [
        "An agent waits for your approval: write_file b.txt"
    ]

    assert controls(tab_until(page, "deny"))[-3:] == ["approve", "modify", "deny"]
    page.keyboard.press("Enter")
    wait_focus(page, "input.jp-mod-styled jp-TinyAgentFS-pendingReason")
    page.keyboard.type("changed my mind")
    page.keyboard.press("Escape")  # the reason box closes, the focus goes back to Deny
    wait_focus(page, "deny")
    assert region_b.locator(".jp-TinyAgentFS-pendingReason").count() == 0
    page.keyboard.press("Space")
    wait_focus(page, "input.jp-mod-styled jp-TinyAgentFS-pendingReason")
    reason = "not b.txt, ask me first"
    page.keyboard.type(reason)
    page.keyboard.press("Enter")
    result = result_of(second)
    assert not result["ok"] and reason in result["text"], result
    assert not (tmp_path / "b" / "b.txt").exists()
    nothing_waits(page, "b.txt")


def test_modify_by_keyboard_reaches_the_mcp_client(
    lab: JupyterProcess, page: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "mcp-project"
    project.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", lab.env["JUPYTER_RUNTIME_DIR"])
    with RawServer([project], tmp_path / "mcp-audit", "--approve-in", "jupyter") as server:
        server.initialize()
        ident = server.send_request(
            "tools/call",
            {"name": "write_file", "arguments": {"path": "m.txt", "content": "agent\n"}},
        )
        region = page.get_by_role("region", name="Approve or deny write_file m.txt", exact=True)
        region.wait_for()
        start_at_heading(page)
        tab_until(page, "modify")
        page.keyboard.press("Enter")
        wait_focus(page, "textarea.jp-mod-styled jp-TinyAgentFS-pendingEdit")
        assert region.locator("[data-action='modify']").get_attribute("aria-expanded") == "true"
        page.keyboard.press("Control+a")
        page.keyboard.type("per")
        # Another agent asks meanwhile: its card comes, the focus stays in the editor.
        other = agent(lab, tmp_path / "c", "write_file", {"path": "c.txt", "content": "c\n"})
        card_c = f"card:{row_for(page, 'c.txt').get_attribute('data-approval-id')}"
        page.keyboard.type("son\n")
        assert focused(page) == "textarea.jp-mod-styled jp-TinyAgentFS-pendingEdit"
        assert controls(tab_until(page, "confirm-modify")) == ["confirm-modify"]
        page.keyboard.press("Space")
        answer = server.receive()
        assert answer["id"] == ident and not answer["result"].get("isError"), answer
        wait_focus(page, card_c)
        tab_until(page, "approve")
        page.keyboard.press("Enter")
        assert result_of(other)["ok"]
        nothing_waits(page, "c.txt")
        assert server.close() == 0
    assert (project / "m.txt").read_text() == "person\n"
    assert (tmp_path / "c" / "c.txt").read_text() == "c\n"


def test_an_agent_that_gives_up_takes_its_card_badge_and_notification_away(
    lab: JupyterProcess, page: Any, tmp_path: Path
) -> None:
    process = agent(
        lab, tmp_path / "p", "write_file", {"path": "late.txt", "content": "z\n"}, "--timeout", "3"
    )
    row_for(page, "late.txt")
    page.locator(BADGE).wait_for(state="visible")
    page.locator(TOAST, has_text="late.txt").wait_for(state="visible")
    wait_no_rows(page)
    page.locator(BADGE).wait_for(state="hidden", timeout=10_000)
    wait_no_toast(page, "late.txt", 10_000)
    assert not result_of(process)["ok"]
