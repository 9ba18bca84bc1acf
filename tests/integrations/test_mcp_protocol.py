"""The MCP server on the wire: JSON-RPC strictness, both protocol eras, concurrency, shutdown.

Each test starts the real server process and speaks raw JSON-RPC lines to it
(``mcp_raw_client.RawServer``). Result shapes are checked against the MCP SDK's own
per-version schemas: ``serialize_server_result`` drops whatever a version does
not define and fills what it requires, so a result it leaves unchanged is
exactly what the SDK's server would have sent at that version.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_types.methods import serialize_server_result

from tinyagent_fs import __version__

from ..mcp_raw_client import REPO, RawServer, envelope

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
READ = {"name": "read_file", "arguments": {"path": "README.md"}}
EDIT = {
    "name": "edit_file",
    "arguments": {"path": "src/pkg/core.py", "old_string": "a - b", "new_string": "b - a"},
}
APPROVE = {"action": "accept", "content": {"approve": True}}


def serve(project: Path, audit_dir: Path, policy: str = "auto-approve") -> RawServer:
    return RawServer([project], audit_dir, "--policy", policy)


def error_of(answer: dict[str, Any]) -> tuple[int, Any]:
    return answer["error"]["code"], answer["id"]


def audited(audit_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (audit_dir / "audit.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_each_handshake_version_is_agreed_and_answered_in_the_sdks_shapes(
    project: Path, isolated_audit_dir: Path, version: str
) -> None:
    with serve(project, isolated_audit_dir) as server:
        initialized = server.initialize(version)
        listed = server.request("tools/list")["result"]
        read = server.request("tools/call", READ)["result"]
        assert server.close() == 0

    assert initialized["protocolVersion"] == version
    assert initialized["serverInfo"] == {"name": "tinyagent-fs", "version": __version__}
    shown = {"initialize": initialized, "tools/list": listed, "tools/call": read}
    for method, result in shown.items():
        assert serialize_server_result(method, version, result) == result
    assert read["structuredContent"]["ok"] is True


def test_an_unknown_version_is_answered_with_the_newest_handshake_version(
    project: Path, isolated_audit_dir: Path
) -> None:
    with serve(project, isolated_audit_dir) as server:
        assert server.initialize("1999-01-01")["protocolVersion"] == "2025-11-25"
        assert server.initialize("2026-07-28")["protocolVersion"] == "2025-11-25"


def test_a_2026_client_discovers_lists_and_calls_without_a_handshake(
    project: Path, isolated_audit_dir: Path
) -> None:
    meta = {"_meta": envelope()}
    with serve(project, isolated_audit_dir) as server:
        discovered = server.request("server/discover", meta)["result"]
        listed = server.request("tools/list", meta)["result"]
        read = server.request("tools/call", {**READ, **meta})["result"]
        ping = server.request("ping", meta)
        old = server.request("tools/list", {"_meta": envelope("2025-11-25")})
        bare = server.request("tools/list")
        handshake = server.request(
            "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}}
        )

    stamp = {"io.modelcontextprotocol/serverInfo": {"name": "tinyagent-fs", "version": __version__}}
    assert discovered["supportedVersions"] == ["2026-07-28"]
    for method, result in (("server/discover", discovered), ("tools/list", listed)):
        assert serialize_server_result(method, "2026-07-28", result) == result
        assert (result["resultType"], result["ttlMs"], result["_meta"]) == ("complete", 0, stamp)
    assert serialize_server_result("tools/call", "2026-07-28", read) == read
    assert (read["resultType"], read["_meta"]) == ("complete", stamp)
    assert error_of(ping)[0] == -32601  # ping is not a 2026-07-28 method
    assert old["error"] == {
        "code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"},
    }
    assert error_of(bare)[0] == -32602
    assert error_of(handshake)[0] == -32022


def test_what_is_not_a_request_gets_a_json_rpc_error_and_the_server_goes_on(
    project: Path, isolated_audit_dir: Path
) -> None:
    cases = [
        ("{bad json", -32700, None),
        ("[]", -32600, None),
        ('[{"jsonrpc":"2.0","id":3,"method":"ping"}]', -32600, None),
        ('{"jsonrpc":"1.0","id":7,"method":"ping"}', -32600, 7),
        ('{"id":7,"method":"ping"}', -32600, 7),
        ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600, None),
        ('{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, None),
        ('{"jsonrpc":"2.0","id":8,"method":5}', -32600, 8),
        ('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":[1]}', -32602, 9),
    ]
    with serve(project, isolated_audit_dir) as server:
        server.initialize()
        for line, code, ident in cases:
            server.send(line)
            assert error_of(server.receive()) == (code, ident), line
        server.send('{"jsonrpc":"2.0","method":"notifications/whatever","params":5}')
        server.send('{"jsonrpc":"2.0","id":12345,"result":{}}')  # an answer to nothing asked
        assert server.request("ping")["result"] == {}  # the next line: nothing else was written


def test_unknown_methods_and_malformed_params_are_told_apart(
    project: Path, isolated_audit_dir: Path
) -> None:
    with serve(project, isolated_audit_dir) as server:
        server.initialize()
        unknown = server.request("resources/list")
        discover = server.request("server/discover", {})
        nameless = server.request("tools/call", {"arguments": {}})
        listed_args = server.request("tools/call", {"name": "read_file", "arguments": [1]})
        enveloped = server.request("ping", {"_meta": envelope()})
        no_args = server.request("tools/call", {"name": "read_file"})["result"]

    not_found = {"code": -32601, "message": "Method not found", "data": "resources/list"}
    assert unknown["error"] == not_found
    assert error_of(discover)[0] == -32601  # a 2026-07-28 method on a handshake connection
    assert error_of(nameless)[0] == error_of(listed_args)[0] == -32602
    assert "name" in nameless["error"]["data"]
    assert error_of(enveloped)[0] == -32600
    assert no_args["structuredContent"]["error"]["code"] == "INVALID_ARGUMENT"


def test_only_ping_is_served_before_initialize(project: Path, isolated_audit_dir: Path) -> None:
    with serve(project, isolated_audit_dir) as server:
        assert server.request("ping")["result"] == {}
        assert error_of(server.request("tools/list"))[0] == -32602
        assert error_of(server.request("tools/call", READ))[0] == -32602
        assert error_of(server.request("foo/bar"))[0] == -32601


def test_a_message_may_come_in_pieces_and_several_in_one_write(
    project: Path, isolated_audit_dir: Path
) -> None:
    with serve(project, isolated_audit_dir) as server:
        server.initialize()
        first = json.dumps({"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": READ})
        second = json.dumps({"jsonrpc": "2.0", "id": "b", "method": "ping"})
        server.write(first[:17].encode())
        server.write(first[17:].encode() + b"\n" + second.encode() + b"\r\n")
        answers = {answer["id"]: answer for answer in (server.receive(), server.receive())}

    assert "# Sample" in answers["a"]["result"]["content"][0]["text"]
    assert answers["b"]["result"] == {}


def test_a_file_name_that_is_not_utf8_reaches_the_client_as_an_escape(
    project: Path, isolated_audit_dir: Path
) -> None:
    """A lone surrogate (an undecodable byte kept by surrogateescape) cannot be sent
    as UTF-8; the answer escapes it rather than failing. (Local provider: the sandbox
    worker cannot list such a name yet.)"""
    Path(os.fsdecode(bytes(project) + b"/caf\xe9.txt")).write_text("x")
    with RawServer(
        [project], isolated_audit_dir, "--policy", "auto-approve", "--provider", "local"
    ) as server:
        server.initialize()
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "list_directory", "arguments": {}},
            }
        )
        line = server.receive_line()

    assert b"caf\\udce9.txt" in line
    assert json.loads(line)["result"]["isError"] is False


def test_calls_are_served_while_another_waits_for_a_persons_answer(
    project: Path, isolated_audit_dir: Path
) -> None:
    with serve(project, isolated_audit_dir, "risk-based") as server:
        server.initialize(capabilities={"elicitation": {}})
        edit = server.send_request("tools/call", EDIT)
        question = server.receive()
        read = server.request("tools/call", READ)
        server.send({"jsonrpc": "2.0", "id": question["id"], "result": APPROVE})
        edited = server.receive()

    assert question["method"] == "elicitation/create"
    assert question["params"]["mode"] == "form"
    assert "edit_file on src/pkg/core.py" in question["params"]["message"]
    assert read["result"]["isError"] is False
    assert edited["id"] == edit and edited["result"]["isError"] is False
    assert "return b - a" in (project / "src/pkg/core.py").read_text()


def test_a_cancelled_call_withdraws_its_question_is_never_answered_and_changes_nothing(
    project: Path, isolated_audit_dir: Path
) -> None:
    before = (project / "src/pkg/core.py").read_text()
    with serve(project, isolated_audit_dir, "risk-based") as server:
        server.initialize(capabilities={"elicitation": {}})
        edit = server.send_request("tools/call", EDIT)
        question = server.receive()
        cancel = {"requestId": edit, "reason": "the person pressed stop"}
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        withdrawn = server.receive()
        server.send({"jsonrpc": "2.0", "id": question["id"], "result": APPROVE})  # too late
        assert server.request("ping")["result"] == {}  # and no answer to the edit before it
        assert server.close() == 0

    assert withdrawn["method"] == "notifications/cancelled"
    assert withdrawn["params"]["requestId"] == question["id"]
    assert (project / "src/pkg/core.py").read_text() == before
    assert audited(isolated_audit_dir)[-1]["outcome"] == "denied"


def test_a_cancelled_command_is_never_answered_is_audited_and_the_next_calls_are(
    project: Path, isolated_audit_dir: Path
) -> None:
    slow = {"name": "run_command", "arguments": {"command": "touch started; sleep 1"}}
    with serve(project, isolated_audit_dir) as server:
        server.initialize()
        command = server.send_request("tools/call", slow)
        wait_for(project / "started")
        cancel = {"requestId": command, "reason": "the person pressed stop"}
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        assert server.request("ping")["result"] == {}
        read = server.request("tools/call", READ)  # in a new worker: the command's was killed
        assert server.close() == 0

    assert read["result"]["isError"] is False
    logged = [(e["tool"], e["outcome"], e["message"]) for e in audited(isolated_audit_dir)]
    assert logged == [
        (
            "run_command",
            "error",
            "cancelled by the client before it ended; "
            "the command was killed with every process it started",
        ),
        ("read_file", "ok", logged[1][2]),
    ]


def wait_for(path: Path) -> None:
    """Until ``path`` exists (a command has got that far); a guard against a hang, not a timer."""
    for _ in range(6000):
        if path.exists():
            return
        time.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


def test_end_of_input_still_answers_the_calls_in_flight(
    project: Path, isolated_audit_dir: Path
) -> None:
    with serve(project, isolated_audit_dir) as server:
        server.initialize()
        read = server.send_request("tools/call", READ)
        assert server.process.stdin is not None
        server.process.stdin.close()
        answer = server.receive()
        assert server.process.wait(timeout=60) == 0

    assert answer["id"] == read and answer["result"]["isError"] is False


def test_a_script_may_pipe_requests_from_a_file_into_a_file(
    project: Path, isolated_audit_dir: Path, tmp_path: Path
) -> None:
    """Regular files cannot be watched by the event loop: read on a thread, written in place."""
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "sh"}}
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": READ},
    ]
    script, answers = tmp_path / "requests.jsonl", tmp_path / "answers.jsonl"
    script.write_text("".join(json.dumps(r) + "\n" for r in requests))
    with script.open("rb") as stdin, answers.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "tinyagent_fs", "mcp", "--root", str(project)],
            stdin=stdin,
            stdout=stdout,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=60,
        )

    assert done.returncode == 0
    initialized, read = (json.loads(line) for line in answers.read_text().splitlines())
    assert initialized["result"]["serverInfo"]["name"] == "tinyagent-fs"
    assert read["id"] == 2 and "# Sample" in read["result"]["content"][0]["text"]


def test_sigterm_ends_the_server_cleanly(project: Path, isolated_audit_dir: Path) -> None:
    with serve(project, isolated_audit_dir) as server:
        server.initialize()
        server.request("tools/call", READ)
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=60) == 0


def test_nothing_but_the_server_can_read_or_write_the_wire(
    project: Path, isolated_audit_dir: Path
) -> None:
    """While serving, fd 0 reads /dev/null and fd 1 goes to stderr: a stray print or a
    child process can neither corrupt an answer nor swallow a request."""
    with serve(project, isolated_audit_dir) as server:
        server.initialize()
        fds = Path(f"/proc/{server.process.pid}/fd")
        stdin, stdout, stderr = (os.readlink(fds / str(n)) for n in (0, 1, 2))

    assert stdin == os.devnull
    assert stdout == stderr


def test_the_server_does_not_load_the_mcp_sdk() -> None:
    """The SDK's import cost most of a second of start-up; only the tests use it."""
    probe = (
        "import sys, tinyagent_fs.cli, tinyagent_fs.integrations.mcp.run\n"
        "heavy = {'mcp', 'mcp_types', 'pydantic', 'anyio', 'starlette', 'httpx'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.stdout.strip() == "[]"
