"""The JSON-RPC connection under the MCP server, in process: framing and questions to the client.

The process-level tests (test_mcp_protocol.py) cover what a client sees; these
cover what is awkward to provoke through a pipe: a message over the size limit,
a line cut at every byte, and the matching of the client's answers to the
server's own requests.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tinyagent_fs.integrations.mcp.wire import (
    CONNECTION_CLOSED,
    JsonRpcConnection,
    JsonRpcError,
    Request,
)


class Wire:
    """A connection whose handlers echo, and whose output is kept as decoded messages."""

    def __init__(self, max_message_bytes: int = 1 << 20) -> None:
        self.sent: list[dict[str, Any]] = []
        self.notified: list[str] = []
        self.connection = JsonRpcConnection(
            lambda data: self.sent.append(json.loads(data)),
            self.answer,
            lambda method, params: self.notified.append(method),
            max_message_bytes=max_message_bytes,
        )

    def answer(self, request: Request) -> dict[str, Any]:
        return {"echo": request.params}

    def line(self, message: dict[str, Any]) -> bytes:
        return json.dumps(message).encode() + b"\n"


def ping(ident: int, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": "ping", "params": params}


def test_a_message_over_the_limit_is_refused_once_and_the_next_one_served() -> None:
    wire = Wire(max_message_bytes=100)
    big = wire.line(ping(1, pad="x" * 300))
    for start in range(0, len(big), 64):  # arrives in pieces, as through a pipe
        wire.connection.feed(big[start : start + 64])
    wire.connection.feed(wire.line(ping(2, small=True)))

    refused, served = wire.sent
    assert (refused["id"], refused["error"]["code"]) == (None, -32600)
    assert "longer than 100 bytes" in refused["error"]["data"]
    assert served == {"jsonrpc": "2.0", "id": 2, "result": {"echo": {"small": True}}}


def test_lines_cut_anywhere_or_sent_together_are_served_in_order() -> None:
    wire = Wire()
    data = b"".join(wire.line(ping(i, n=i)) for i in range(3))
    data += b'{"jsonrpc":"2.0","method":"notifications/initialized"}'  # no newline before EOF
    for byte in range(len(data)):
        wire.connection.feed(data[byte : byte + 1])
    wire.connection.eof()

    assert [m["id"] for m in wire.sent] == [0, 1, 2]
    assert wire.notified == ["notifications/initialized"]
    assert wire.connection.closed.is_set()


async def test_answers_from_the_client_are_matched_to_the_questions_by_id() -> None:
    wire = Wire()
    connection = wire.connection
    first = asyncio.ensure_future(connection.request("roots/list"))
    second = asyncio.ensure_future(connection.request("elicitation/create", {"message": "ok?"}))
    await asyncio.sleep(0)
    asked_first, asked_second = wire.sent
    connection.feed(wire.line({"jsonrpc": "2.0", "id": asked_second["id"], "result": {"a": 2}}))
    connection.feed(wire.line({"jsonrpc": "2.0", "id": 999, "result": {}}))  # never asked
    error = {"code": -32601, "message": "Method not found"}
    connection.feed(wire.line({"jsonrpc": "2.0", "id": asked_first["id"], "error": error}))

    assert await second == {"a": 2}
    with pytest.raises(JsonRpcError) as refused:
        await first
    assert refused.value.code == -32601
    assert asked_second["params"] == {"message": "ok?"}
    assert len(wire.sent) == 2  # nothing was written for the stray answer


async def test_questions_still_open_fail_when_the_connection_shuts_down() -> None:
    wire = Wire()
    question = asyncio.ensure_future(wire.connection.request("roots/list"))
    await asyncio.sleep(0)
    await wire.connection.shut_down(interrupt=False)

    with pytest.raises(JsonRpcError) as closed:
        await question
    assert closed.value.code == CONNECTION_CLOSED


def test_a_handler_that_fails_gets_an_internal_error_and_the_next_line_is_served() -> None:
    wire = Wire()

    def answer(request: Request) -> dict[str, Any]:
        if request.id == 1:
            raise KeyError("a bug")
        return {"echo": request.params}

    wire.connection = JsonRpcConnection(
        lambda data: wire.sent.append(json.loads(data)), answer, lambda method, params: None
    )
    wire.connection.feed(wire.line(ping(1)) + wire.line(ping(2, after=True)))

    failed, served = wire.sent
    assert (failed["id"], failed["error"]["code"]) == (1, -32603)
    assert served == {"jsonrpc": "2.0", "id": 2, "result": {"echo": {"after": True}}}
