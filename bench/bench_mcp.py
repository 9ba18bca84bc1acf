"""Our MCP server against the reference filesystem MCP server: start-up, big reads, throughput.

Run: ``.venv/bin/python bench/bench_mcp.py [--rounds N] [--output FILE]``.

The reference server (Node) is used when it is installed:
``npm ci --prefix bench/node`` (the version locked in bench/node/package-lock.json;
bench/node/node_modules is gitignored). Without it only our figures are printed.

Both servers serve copies of the same generated files; each operation is timed
on both in alternating order within every round (ours first in even rounds,
theirs first in odd ones), so drift on a shared machine hits both alike. A
round times each call ``CALLS_PER_ROUND`` times and keeps the median; figures
are medians over rounds; the ratio is ours / reference (below 1 means we are
faster).
Our server runs with ``--policy auto-approve`` and the budgets off, as a bulk
client would start it.

Throughput is measured twice: through the SDK client, and through a bare
JSON-RPC client (each answer read sends the next request) on a fresh server
process, since the SDK client spends more per call than either server does and
caps the first figure for both.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
REFERENCE_BIN = REPO / "bench" / "node" / "node_modules" / ".bin" / "mcp-server-filesystem"
BIG_LINES = 120_000  # about 6 MB of text
LIST_ENTRIES = 1_000
TREE_FILES = 5_000
CONCURRENCY = 10
BURST = 200
RAW_BURST = 2000
RAW_WARM_UP = 50
CALLS_PER_ROUND = 9
"""Each operation is timed this many times per server and round; the round keeps the
median, so one call that met a busy moment on the shared machine does not stand
for the round."""
TIMED_HERE = ("read 100 lines at the start of 6 MB", "tree of 5,000 files")
"""The single calls this script times; a 4 KB read, a 1,000-entry listing and a new
4 KB file are ``run_all``'s figures (``figures_mcp``), with both clients."""


@dataclass
class Server:
    """How to start one server and how to phrase each operation for it."""

    name: str
    params: Callable[[Path], StdioServerParameters]
    calls: dict[str, Callable[[int], tuple[str, dict[str, Any]]]]
    client: Client | None = None
    stack: AsyncExitStack = field(default_factory=AsyncExitStack)


def ours() -> Server:
    def params(root: Path) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "tinyagent_fs",
                "mcp",
                "--root",
                str(root),
                "--policy",
                "auto-approve",
                "--max-requests-per-minute",
                "0",
                "--max-bytes-per-minute",
                "0",
            ],
            env={
                **os.environ,
                "PYTHONPATH": str(REPO),
                "TINYAGENT_FS_AUDIT_DIR": str(root.parent / "audit"),
            },
        )

    return Server(
        "tinyagent-fs",
        params,
        {
            "read 4 KB": lambda i: ("read_file", {"path": "small.txt"}),
            "read 100 lines at the start of 6 MB": lambda i: (
                "read_file",
                {"path": "big.txt", "offset": 0, "limit": 100},
            ),
            "list 1,000 entries": lambda i: ("list_directory", {"path": "many", "limit": 1000}),
            "tree of 5,000 files": lambda i: (
                "glob",
                {"pattern": "**/*", "path": "tree", "limit": 6000},
            ),
            "write new 4 KB": lambda i: (
                "write_file",
                {"path": f"out/ours-{i}.txt", "content": "x" * 4096},
            ),
        },
    )


def reference() -> Server:
    def params(root: Path) -> StdioServerParameters:
        return StdioServerParameters(command=str(REFERENCE_BIN), args=[str(root)])

    return Server(
        "reference",
        params,
        {
            "read 4 KB": lambda i: ("read_text_file", {"path": "small.txt"}),
            "read 100 lines at the start of 6 MB": lambda i: (
                "read_text_file",
                {"path": "big.txt", "head": 100},
            ),
            "list 1,000 entries": lambda i: ("list_directory", {"path": "many"}),
            "tree of 5,000 files": lambda i: ("directory_tree", {"path": "tree"}),
            "write new 4 KB": lambda i: (
                "write_file",
                {"path": f"out/ref-{i}.txt", "content": "x" * 4096},
            ),
        },
    )


def make_files(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "small.txt").write_text(("0123456789abcdef" * 4 + "\n") * 63)
    (root / "big.txt").write_text(
        "".join(f"line {i:08d} " + "x" * 36 + "\n" for i in range(BIG_LINES))
    )
    (root / "many").mkdir()
    for i in range(LIST_ENTRIES):
        (root / "many" / f"f{i:04d}.txt").write_text("x")
    for i in range(TREE_FILES):
        folder = root / "tree" / f"d{i // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:04d}.txt").write_text("x")
    (root / "out").mkdir()


def resolve(root: Path, server: Server, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The reference server wants absolute paths; ours takes root-relative ones."""
    if server.name == "reference" and "path" in args:
        return {**args, "path": str(root / args["path"])}
    return args


async def start(server: Server, root: Path) -> tuple[float, float]:
    """Seconds to spawn + initialize, and to list the tools after that."""
    began = time.perf_counter()
    server.client = await server.stack.enter_async_context(Client(server.params(root)))
    ready = time.perf_counter()
    await server.client.list_tools()
    return ready - began, time.perf_counter() - ready


async def stop(server: Server) -> float:
    began = time.perf_counter()
    await server.stack.aclose()
    server.stack = AsyncExitStack()
    return time.perf_counter() - began


async def timed(client: Client, tool: str, args: dict[str, Any]) -> float:
    """One call's wall time; a failed call stops the run rather than skew a median."""
    began = time.perf_counter()
    result = await client.call_tool(tool, args)
    elapsed = time.perf_counter() - began
    if getattr(result, "is_error", False):
        raise RuntimeError(f"call failed: {result.content[0].text[:200]}")
    return elapsed


async def throughput(server: Server, root: Path) -> float:
    """Requests per second with CONCURRENCY reads in flight at once."""
    tool, args = server.calls["read 4 KB"](0)
    args = resolve(root, server, tool, args)
    assert server.client is not None
    queue = list(range(BURST))

    async def worker() -> None:
        while queue:
            queue.pop()
            await server.client.call_tool(tool, args)

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return BURST / (time.perf_counter() - began)


async def raw_throughput(server: Server, root: Path) -> float:
    """Requests per second with CONCURRENCY reads in flight from a bare JSON-RPC client."""
    params = server.params(root)
    process = await asyncio.create_subprocess_exec(
        params.command,
        *params.args,
        env=params.env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=1 << 24,
    )
    assert process.stdin is not None and process.stdout is not None
    tool, args = server.calls["read 4 KB"](0)
    call = {"name": tool, "arguments": resolve(root, server, tool, args)}

    def send(ident: int | None, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if ident is not None:
            message["id"] = ident
        if params is not None:
            message["params"] = params
        process.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]

    async def answer() -> None:
        reply = json.loads(await process.stdout.readline())  # type: ignore[union-attr]
        if "error" in reply or reply["result"].get("isError"):
            raise RuntimeError(f"call failed: {str(reply)[:200]}")

    me = {"name": "bench", "version": "1"}
    send(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": me})
    await process.stdout.readline()
    send(None, "notifications/initialized")
    for i in range(RAW_WARM_UP):
        send(i + 1, "tools/call", call)
        await answer()
    began = time.perf_counter()
    for i in range(CONCURRENCY):
        send(RAW_WARM_UP + 1 + i, "tools/call", call)
    for i in range(RAW_BURST):
        await answer()
        if i + CONCURRENCY < RAW_BURST:
            send(RAW_WARM_UP + 1 + CONCURRENCY + i, "tools/call", call)
    rate = RAW_BURST / (time.perf_counter() - began)
    process.stdin.close()
    await process.wait()
    return rate


async def run(rounds: int) -> list[str]:
    servers = [ours()] + ([reference()] if REFERENCE_BIN.exists() and shutil.which("node") else [])
    base = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    roots = {s.name: base / s.name for s in servers}
    for root in roots.values():
        make_files(root)
    samples: dict[tuple[str, str], list[float]] = {}

    def add(op: str, who: str, value: float) -> None:
        samples.setdefault((op, who), []).append(value)

    try:
        for r in range(rounds):
            order = servers if r % 2 == 0 else servers[::-1]
            for server in order:
                ready, listed = await start(server, roots[server.name])
                add("start + initialize", server.name, ready)
                add("list_tools", server.name, listed)
                add("start + initialize + list_tools", server.name, ready + listed)
            for op in TIMED_HERE:
                for server in order:
                    client = server.client
                    assert client is not None
                    tool, args = server.calls[op](r)  # warm caches, as a second look would
                    await client.call_tool(tool, resolve(roots[server.name], server, tool, args))
                    times = []
                    for k in range(CALLS_PER_ROUND):
                        tool, args = server.calls[op](r * CALLS_PER_ROUND + k)
                        args = resolve(roots[server.name], server, tool, args)
                        times.append(await timed(client, tool, args))
                    add(op, server.name, statistics.median(times))
            for server in order:
                add(
                    f"req/s at {CONCURRENCY} concurrent 4 KB reads",
                    server.name,
                    await throughput(server, roots[server.name]),
                )
            for server in order[::-1]:  # anyio wants clients closed in reverse start order
                add("shutdown", server.name, await stop(server))
            for server in order:
                add(
                    f"req/s, {CONCURRENCY} concurrent 4 KB, raw JSON-RPC",
                    server.name,
                    await raw_throughput(server, roots[server.name]),
                )
    finally:
        for server in servers[::-1]:
            await server.stack.aclose()
        shutil.rmtree(base, ignore_errors=True)
    return report(samples, [s.name for s in servers])


def report(samples: dict[tuple[str, str], list[float]], names: list[str]) -> list[str]:
    ops = list(dict.fromkeys(op for op, _ in samples))
    lines = [
        f"# command: .venv/bin/python {' '.join(sys.argv)}",
        f"# {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, reference server "
        + ("installed" if len(names) > 1 else "not installed (see the docstring)"),
        "# our package is compiled to bytecode first, as installing it does;",
        f"# medians over rounds of per-round medians ({CALLS_PER_ROUND} calls each); times in ms;"
        " ratio = tinyagent-fs / reference (lower is better; for req/s higher is better)",
        f"{'operation':<40}"
        + "".join(f"{n:>14}" for n in names)
        + ("   ratio" if len(names) > 1 else ""),
    ]
    for op in ops:
        medians = [statistics.median(samples[(op, n)]) for n in names]
        rate = op.startswith("req/s")
        shown = [m if rate else m * 1000 for m in medians]
        row = f"{op:<40}" + "".join(f"{v:>14.1f}" if rate else f"{v:>14.2f}" for v in shown)
        if len(names) > 1:
            row += f"   {shown[0] / shown[1]:.2f}x"
        lines.append(row)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--output", type=Path, default=None)
    options = parser.parse_args()
    # As an install does: with PYTHONDONTWRITEBYTECODE set (this machine sets it) no
    # start would ever find bytecode, and each would compile every module (~140 ms).
    compileall.compile_dir(REPO / "tinyagent_fs", quiet=1)
    lines = asyncio.run(run(options.rounds))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if options.output:
        options.output.write_text(text)


if __name__ == "__main__":
    main()
