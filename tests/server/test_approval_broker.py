"""The Jupyter server as approval broker, over its real REST API, without a browser.

A real ``jupyter server`` and real script processes (``tests.approval_agent``)
with ``WebApprovalHook``: the script finds the server through Jupyter's runtime
files and waits; the test answers as a web frontend would (token in the
Authorization header). Refusals (no token, stale hash), timeout, a killed agent
and the race with a terminal prompt are checked on both sides.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.jupyter_process import JupyterProcess, start_jupyter

pytestmark = pytest.mark.jupyter

REPO = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    root = tmp_path_factory.mktemp("broker-root")
    home = tmp_path_factory.mktemp("broker-home")
    process = start_jupyter(
        "server",
        root,
        home,
        extra_args=["--TinyAgentFSServer.approval_abandon_s=1"],
        env={
            "TINYAGENT_FS_AUDIT_DIR": str(home / "audit"),
            "TINYAGENT_FS_JOURNAL_DIR": str(home / "journal"),
        },
    )
    yield process
    process.stop()


def call(
    server: JupyterProcess,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: bool = True,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.base_url + path, data=data, method=method)
    if token:
        request.add_header("Authorization", f"token {server.token}")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return error.code, json.loads(raw or b"null")
        except ValueError:
            return error.code, raw.decode(errors="replace")


def pending(server: JupyterProcess) -> list[dict[str, Any]]:
    status, body = call(server, "GET", "tinyagent-fs/approvals")
    assert status == 200, body
    return list(body["approvals"])


def wait_pending(server: JupyterProcess, count: int = 1, timeout: float = 30) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = pending(server)
        if len(rows) == count:
            return rows
        time.sleep(0.05)
    raise AssertionError(f"expected {count} pending, have {pending(server)}")


def agent(
    server: JupyterProcess, project: Path, tool: str, args: dict, *extra: str
) -> subprocess.Popen[str]:
    project.mkdir(exist_ok=True)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.approval_agent",
            str(project),
            tool,
            json.dumps(args),
            *extra,
        ],
        cwd=REPO,
        env=server.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def results(process: subprocess.Popen[str], timeout: float = 60) -> tuple[list[dict], str]:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return [json.loads(line) for line in out.splitlines() if line.strip()], err


def audit_events(server: JupyterProcess) -> list[dict[str, Any]]:
    path = Path(server.env["TINYAGENT_FS_AUDIT_DIR"]) / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def decide(server: JupyterProcess, row: dict, **fields: Any) -> tuple[int, Any]:
    body = {
        "proposal_hash": row["proposal_hash"],
        "session_id": row["session_id"],
        "surface": "test-frontend",
        **fields,
    }
    return call(server, "POST", f"tinyagent-fs/approvals/{row['id']}/decision", body)


def test_a_script_found_through_the_runtime_files_waits_for_the_answer(
    server: JupyterProcess, tmp_path: Path
) -> None:
    process = agent(server, tmp_path / "p", "write_file", {"path": "a.txt", "content": "hi\n"})
    (row,) = wait_pending(server)
    assert row["tool"] == "write_file" and row["paths"] == ["a.txt"]
    assert "+hi" in row["diff"] and row["editable"] == [{"path": "a.txt", "text": "hi\n"}]
    assert row["origin"] == "approval test" and row["can_trust"] is True
    status, outcome = decide(server, row, verdict="proceed")
    assert status == 200 and outcome["state"] == "decided"
    (result,), _ = results(process)
    assert result["ok"], result
    assert (tmp_path / "p" / "a.txt").read_text() == "hi\n"
    event = audit_events(server)[-1]
    assert event["decided_by"].startswith("test-frontend:") and event["decision"] == "proceed"
    assert event["session_id"] == row["session_id"]
    assert pending(server) == []


def test_without_the_token_nothing_is_listed_asked_or_decided(
    server: JupyterProcess, tmp_path: Path
) -> None:
    process = agent(server, tmp_path / "p", "write_file", {"path": "b.txt", "content": "x\n"})
    (row,) = wait_pending(server)
    assert call(server, "GET", "tinyagent-fs/approvals", token=False)[0] == 403
    assert call(server, "POST", "tinyagent-fs/approvals", {"tool": "x"}, token=False)[0] == 403
    body = {"proposal_hash": row["proposal_hash"], "session_id": row["session_id"]}
    status, _ = call(
        server,
        "POST",
        f"tinyagent-fs/approvals/{row['id']}/decision",
        {**body, "verdict": "proceed"},
        token=False,
    )
    assert status == 403
    assert call(server, "DELETE", f"tinyagent-fs/approvals/{row['id']}", token=False)[0] == 403
    # A wrong token is no token.
    status, _ = call(
        server,
        "GET",
        "tinyagent-fs/approvals",
        token=False,
        headers={"Authorization": "token not-the-token"},
    )
    assert status == 403
    assert [r["id"] for r in pending(server)] == [row["id"]]
    assert not (tmp_path / "p" / "b.txt").exists()
    decide(server, row, verdict="deny", reason="cleanup")
    results(process)


def test_a_decision_for_a_changed_proposal_is_refused_and_changes_nothing(
    server: JupyterProcess, tmp_path: Path
) -> None:
    process = agent(server, tmp_path / "p", "write_file", {"path": "c.txt", "content": "1\n"})
    (row,) = wait_pending(server)
    stale = dict(row, proposal_hash="0" * 64)
    status, body = decide(server, stale, verdict="proceed")
    assert status == 409, body
    other_session = dict(row, session_id="someone-else")
    assert decide(server, other_session, verdict="proceed")[0] == 409
    assert [r["id"] for r in pending(server)] == [row["id"]]
    assert not (tmp_path / "p" / "c.txt").exists()
    status, _ = decide(server, row, verdict="deny", reason="no thanks")
    assert status == 200
    assert decide(server, row, verdict="proceed")[0] in (404, 409)  # one answer only
    (result,), _ = results(process)
    assert not result["ok"] and "no thanks" in result["text"]
    assert not (tmp_path / "p" / "c.txt").exists()


def test_modify_writes_the_edited_content(server: JupyterProcess, tmp_path: Path) -> None:
    process = agent(server, tmp_path / "p", "write_file", {"path": "m.txt", "content": "a\n"})
    (row,) = wait_pending(server)
    status, _ = decide(server, row, verdict="modify", content={"m.txt": "edited\n"})
    assert status == 200
    (result,), _ = results(process)
    assert result["ok"] and "edited in JupyterLab" in result["text"]
    assert (tmp_path / "p" / "m.txt").read_text() == "edited\n"
    assert audit_events(server)[-1]["decision"] == "modify"


def test_trust_granted_once_lets_the_next_write_of_that_file_through(
    server: JupyterProcess, tmp_path: Path
) -> None:
    process = agent(
        server, tmp_path / "p", "write_file", {"path": "t.txt", "content": "t\n"}, "--calls", "2"
    )
    (row,) = wait_pending(server)
    decide(server, row, verdict="proceed", trust={"paths": ["t.txt"]})
    first, second = results(process)[0]
    assert first["ok"] and second["ok"]
    assert audit_events(server)[-1]["decided_by"] == "jupyter (trusted for this session)"


def test_the_agents_timeout_withdraws_the_proposal(server: JupyterProcess, tmp_path: Path) -> None:
    process = agent(
        server,
        tmp_path / "p",
        "write_file",
        {"path": "late.txt", "content": "z\n"},
        "--timeout",
        "1.5",
    )
    (row,) = wait_pending(server)
    (result,), _ = results(process)
    assert not result["ok"] and "no answer in JupyterLab within 1.5 s" in result["text"]
    assert pending(server) == []
    assert decide(server, row, verdict="proceed")[0] in (404, 409)
    assert not (tmp_path / "p" / "late.txt").exists()


def test_a_killed_agents_proposal_goes_away(server: JupyterProcess, tmp_path: Path) -> None:
    process = agent(server, tmp_path / "p", "write_file", {"path": "k.txt", "content": "k\n"})
    wait_pending(server)
    process.kill()
    process.communicate()
    wait_pending(server, 0, timeout=10)


def test_sidebar_wins_the_race_and_the_terminal_prompt_is_withdrawn(
    server: JupyterProcess, tmp_path: Path
) -> None:
    process = agent(
        server,
        tmp_path / "p",
        "write_file",
        {"path": "r.txt", "content": "r\n"},
        "--race-terminal",
    )
    (row,) = wait_pending(server)
    decide(server, row, verdict="proceed")
    assert process.stdout is not None
    result = json.loads(process.stdout.readline())  # stdin stays open: no end of input
    _, err = results(process)
    assert result["ok"]
    assert "Apply this change?" in err
    assert "Answered elsewhere by test-frontend:" in err and "(proceed)" in err
    assert audit_events(server)[-1]["decided_by"].startswith("test-frontend:")


def test_terminal_wins_the_race_and_the_pending_row_is_withdrawn(
    server: JupyterProcess, tmp_path: Path
) -> None:
    process = agent(
        server,
        tmp_path / "p",
        "write_file",
        {"path": "s.txt", "content": "s\n"},
        "--race-terminal",
    )
    (row,) = wait_pending(server)
    assert process.stdin is not None
    process.stdin.write("y\n")
    process.stdin.flush()
    (result,), _ = results(process)
    assert result["ok"]
    assert pending(server) == []
    assert decide(server, row, verdict="deny")[0] in (404, 409)
    assert audit_events(server)[-1]["decided_by"] == "terminal"
