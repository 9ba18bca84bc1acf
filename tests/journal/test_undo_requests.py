"""Undo asked for by a person, run by the toolkit that made the change, reviewed like any call.

Against a real Jupyter Server over its REST API: the test answers as the sidebar
does (token in the Authorization header); the toolkit is a real FileTools with
WebApprovalHook and an UndoListener in this process. The queue's own rules
(a toolkit gone before or after a request) are checked on ``UndoRequests`` itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.jupyter_process import JupyterProcess, start_jupyter
from tests.server.test_approval_broker import call, decide, wait_pending
from tinyagent_fs import FileTools
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks.web import WebApprovalHook
from tinyagent_fs.integrations.undo_listener import UndoListener
from tinyagent_fs.journal.undo_journal import UndoJournal
from tinyagent_fs.server.undo_requests import TOOLKIT_GONE, UndoRequestError, UndoRequests

pytestmark = pytest.mark.jupyter


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    root = tmp_path_factory.mktemp("undo-root")
    home = tmp_path_factory.mktemp("undo-home")
    process = start_jupyter(
        "server", root, home, extra_args=["--TinyAgentFSServer.approval_abandon_s=1"]
    )
    yield process
    process.stop()


@pytest.fixture
async def toolkit(server: JupyterProcess, tmp_path: Path) -> AsyncIterator[FileTools]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("old\n")
    web = WebApprovalHook(url=server.base_url, token=server.token, timeout_s=60)
    tools = FileTools(
        project,
        hooks=[web],
        audit=AuditLog(tmp_path / "audit"),
        journal=UndoJournal(tmp_path / "journal"),
    )
    listener = UndoListener(tools, url=server.base_url, token=server.token).start()
    yield tools
    await listener.stop()
    await tools.close()


async def person(server: JupyterProcess, method: str, path: str, body: Any = None) -> Any:
    return await asyncio.to_thread(call, server, method, path, body)


async def approved_write(server: JupyterProcess, tools: FileTools) -> str:
    write = asyncio.create_task(tools.write_file("a.txt", "new\n"))
    (row,) = await asyncio.to_thread(wait_pending, server)
    await asyncio.to_thread(decide, server, row, verdict="proceed")
    result = await write
    assert result.ok, result.text
    return str(result.data["change_id"])


async def ask_undo(server: JupyterProcess, tools: FileTools, change_id: str) -> dict[str, Any]:
    assert tools.audit is not None
    body = {"session_id": tools.audit.session_id, "change_id": change_id, "event_id": "e1"}
    for _ in range(100):  # the listener's first long-poll may still be on its way
        status, reply = await person(server, "POST", "tinyagent-fs/undo-requests", body)
        if status != 409:
            break
        await asyncio.sleep(0.05)
    assert status == 201, reply
    return dict(reply)


async def settled(server: JupyterProcess, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status, reply = await person(server, "GET", f"tinyagent-fs/undo-requests/{request_id}")
        assert status == 200, reply
        if reply["state"] in ("done", "failed"):
            return dict(reply)
        await asyncio.sleep(0.05)
    raise AssertionError(f"undo request {request_id} never settled")


async def test_the_toolkit_undoes_only_after_the_undo_is_approved(
    server: JupyterProcess, toolkit: FileTools
) -> None:
    change_id = await approved_write(server, toolkit)
    request = await ask_undo(server, toolkit, change_id)
    (row,) = await asyncio.to_thread(wait_pending, server)
    assert row["tool"] == "undo" and row["args"] == {"change_id": change_id}
    assert row["can_trust"] is False, "undo is never trusted"
    assert (toolkit.root / "a.txt").read_text() == "new\n", "nothing undone before approval"
    await asyncio.to_thread(decide, server, row, verdict="proceed")
    outcome = await settled(server, request["id"])
    assert outcome["state"] == "done" and outcome["result"]["ok"] is True
    assert f"Reverted change {change_id}" in outcome["result"]["text"]
    assert (toolkit.root / "a.txt").read_text() == "old\n"


async def test_a_denied_undo_changes_nothing_and_says_so(
    server: JupyterProcess, toolkit: FileTools
) -> None:
    change_id = await approved_write(server, toolkit)
    request = await ask_undo(server, toolkit, change_id)
    (row,) = await asyncio.to_thread(wait_pending, server)
    await asyncio.to_thread(decide, server, row, verdict="deny", reason="keep it")
    outcome = await settled(server, request["id"])
    assert outcome["state"] == "failed"
    assert outcome["result"]["error_code"] == "DENIED_BY_HOOK"
    assert "keep it" in outcome["result"]["text"]
    assert (toolkit.root / "a.txt").read_text() == "new\n"


async def test_a_session_no_toolkit_listens_for_is_refused_with_a_code(
    server: JupyterProcess,
) -> None:
    body = {"session_id": "nobody-listens", "change_id": "c1", "event_id": "e1"}
    status, reply = await person(server, "POST", "tinyagent-fs/undo-requests", body)
    assert status == 409 and reply["code"] == TOOLKIT_GONE
    assert "nothing was undone" in reply["message"]


async def test_a_toolkit_that_stops_listening_is_gone_before_or_after_a_request() -> None:
    desk = UndoRequests(gone_after_s=0.2)
    assert await desk.listen("s1", 0) == []
    request = desk.request({"session_id": "s1", "change_id": "c1"}, "ana")
    (taken,) = await desk.listen("s1", 0)
    assert taken is request and request.state == "taken"
    await asyncio.sleep(0.3)
    assert desk.get(request.id).state == "failed", "taken, never reported: the toolkit is gone"
    assert request.result is not None and request.result["error_code"] == TOOLKIT_GONE
    with pytest.raises(UndoRequestError) as refused:
        desk.request({"session_id": "s1", "change_id": "c2"}, "ana")
    assert refused.value.code == TOOLKIT_GONE and refused.value.status == 409


async def test_a_result_is_taken_once_and_only_for_its_session() -> None:
    desk = UndoRequests()
    listening = asyncio.create_task(desk.listen("s1", 5))
    await asyncio.sleep(0.01)
    request = desk.request({"session_id": "s1", "change_id": "c1"}, "ana")
    assert [r.id for r in await asyncio.wait_for(listening, 1)] == [request.id]
    with pytest.raises(UndoRequestError, match="another session"):
        desk.report(request.id, {"session_id": "s2", "ok": True, "text": "x"})
    desk.report(request.id, {"session_id": "s1", "ok": True, "text": "Reverted"})
    with pytest.raises(UndoRequestError, match="already done"):
        desk.report(request.id, {"session_id": "s1", "ok": False, "text": "again"})
