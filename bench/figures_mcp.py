"""Our MCP server against the reference filesystem server, over stdio.

Each figure starts both servers (ours with auto-approve and the budgets off, as
a bulk client would) on copies of the same files and times one operation, once
with a bare JSON-RPC client (one request, wait for its answer) and once with the
MCP SDK's client, which spends more per call than either server does.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from baselines import REFERENCE_SERVER
from bench_mcp import REFERENCE_BIN, Server, make_files, ours, reference
from figure import Figure, Prepare, at_most
from rounds import Side

OPERATIONS = {"read": "read 4 KB", "list": "list 1,000 entries", "write": "write new 4 KB"}
CLIENTS = {"raw": "raw JSON-RPC client", "sdk": "SDK client"}
CALLS = 45
"""Calls per turn: a call is short and its time swings with two processes' scheduling
on a shared machine (with 15, most figures' rounds spread more than 30 %)."""


class RawClient:
    """A bare JSON-RPC client over a server's stdio: one request, then its answer."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.ident = 0

    @classmethod
    async def start(cls, command: str, args: list[str], env: dict[str, str] | None) -> RawClient:
        process = await asyncio.create_subprocess_exec(
            command,
            *args,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=1 << 24,
        )
        client = cls(process)
        me = {"name": "bench", "version": "1"}
        await client.request(
            "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": me}
        )
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return client

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ident += 1
        self.send({"jsonrpc": "2.0", "id": self.ident, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            reply = json.loads(await self.process.stdout.readline())
            if reply.get("id") == self.ident:
                break
        if "error" in reply or reply["result"].get("isError"):
            raise SystemExit(f"call failed: {str(reply)[:300]}")
        return reply["result"]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> object:
        return await self.request("tools/call", {"name": name, "arguments": arguments})

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        await self.process.wait()


async def connect(kind: str, server: Server, root: Path, stack: AsyncExitStack) -> Any:
    params = server.params(root)
    if kind == "sdk":
        from mcp import Client
        from mcp.client.stdio import stdio_client

        quiet = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115 (closed by the stack)
        return await stack.enter_async_context(Client(stdio_client(params, errlog=quiet)))
    client = await RawClient.start(params.command, params.args, params.env)
    stack.push_async_callback(client.close)
    return client


def server_side(
    client: Any, server: Server, root: Path, operation: str, changed: bool = False
) -> Side:
    """Times one call; a write names a new file every time. ``changed``: before each
    call (untimed), one listed file is renamed, so the directory is read anew."""
    counter = itertools.count()

    async def side() -> float:
        index = next(counter)
        if changed:
            names = (root / "many" / "f0000.txt", root / "many" / "f0000.txu")
            names[index % 2].rename(names[1 - index % 2])
        name, args = server.calls[operation](index)
        if server.name == "reference":
            args = {**args, "path": str(root / args["path"])}
        began = time.perf_counter()
        result = await client.call_tool(name, args)
        elapsed = time.perf_counter() - began
        if getattr(result, "is_error", False):
            raise SystemExit(f"{server.name} {operation} failed: {result}")
        return elapsed

    return side


def servers(kind: str, operation: str, changed: bool = False) -> Prepare:
    @asynccontextmanager
    async def prepare(folder: Path) -> AsyncIterator[tuple[Side, Side]]:
        sides: list[Side] = []
        async with AsyncExitStack() as stack:
            for server in (ours(), reference()):
                root = folder / server.name
                make_files(root)
                client = await connect(kind, server, root, stack)
                sides.append(server_side(client, server, root, operation, changed))
                if operation != OPERATIONS["write"]:  # warm caches, as a second look would
                    await sides[-1]()
            yield sides[0], sides[1]

    return prepare


def figures() -> list[Figure]:
    """Each operation with each client; after each listing, the same listing of a
    directory changed before every call, which no server can have kept (context)."""
    out = []
    for kind, client in CLIENTS.items():
        for short, operation in OPERATIONS.items():
            out.append(
                Figure(
                    f"mcp.{kind}.{short}",
                    f"mcp {operation}, {client}",
                    REFERENCE_SERVER,
                    servers(kind, operation),
                    at_most(1),
                    calls=CALLS,
                )
            )
            if short == "list":
                out.append(
                    Figure(
                        f"mcp.{kind}.list-changed",
                        "  the same, the directory changed before each call",
                        REFERENCE_SERVER,
                        servers(kind, operation, changed=True),
                        calls=CALLS,
                    )
                )
    return out


def reference_installed() -> bool:
    """``npm ci --prefix bench/node`` installs it; without node there is no baseline."""
    return REFERENCE_BIN.exists() and shutil.which("node") is not None
