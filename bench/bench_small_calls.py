"""What the small calls agents mostly make cost, against their plain baselines.

Run: ``.venv/bin/python bench/bench_small_calls.py [--quick] [--providers local,linux]
[--only files,mcp] [--mcp-rounds 9] [--output FILE]``.

``files`` (per provider, through ``FileTools`` as an agent gets it: auto-approve,
audit log on, undo journal on): a 4 KB ``write_file``, a one-line ``edit_file``
of a 4 KB file and a 1 MB ``write_file`` against temp + write + fsync + rename
in plain Python; a 1-, 5- and 50-file ``apply_patch`` of a ``git diff`` against
``git apply`` of the same patch followed by an fsync of each file it wrote (the
fair floor of a durable apply), with plain ``git apply`` shown beside it. The
tool and its baseline run in alternating turns (``bench_tools.Bench.pair``:
the first one alternating), each sample one call; medians (p90) and their ratio.

``mcp``: ``tinyagent-fs mcp`` against the reference filesystem server
(``npm ci --prefix bench/node``) for a 4 KB read, a listing of 1,000 entries and
a new 4 KB file, once with a bare JSON-RPC client over stdio (one request, wait
for its answer) and once with the MCP SDK's client; in every round each
operation is timed ``CALLS_PER_ROUND`` times on each server, the servers
alternating which goes first; figures are medians over rounds of per-round
medians; ratio = ours / reference.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench_mcp import CALLS_PER_ROUND, REFERENCE_BIN, make_files, ours, reference
from bench_tools import (
    Bench,
    LinuxSandboxProvider,
    Row,
    Target,
    flip,
    format_row,
    make_provider,
    mount_type,
    raw_atomic_write,
    raw_edit,
    source_lines,
)

from tinyagent_fs import FileTools
from tinyagent_fs.audit import AuditLog
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.journal import JOURNAL_ENV

SMALL = 4096
PATCH_SIZES = (1, 5, 50)
SMALL_REPS = 41
LARGE_REPS = 21
MCP_OPS = ("read 4 KB", "list 1,000 entries", "write new 4 KB")


def small_text(tag: str) -> str:
    return (tag + "\n" + "".join(source_lines(80)))[:SMALL]


def git_diff(names: list[str], hunk: tuple[str, str, str], old: str, new: str, at: int) -> str:
    """A ``git diff`` of one changed line (one line of context each side) per file."""
    before, _, after = hunk
    return "".join(
        f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n"
        f"@@ -{at},3 +{at},3 @@\n {before}\n-{old}\n+{new}\n {after}\n"
        for name in names
    )


def fsync_files(paths: list[Path]) -> None:
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def git_apply(patch_file: Path, cwd: Path) -> None:
    done = subprocess.run(["git", "apply", str(patch_file)], cwd=cwd, capture_output=True)
    if done.returncode:
        raise SystemExit(f"git apply failed: {done.stderr.decode(errors='replace')}")


async def case_patch(bench: Bench, files: int) -> list[Row]:
    lines = source_lines(200)
    middle = [line.rstrip("\n") for line in lines[99:102]]
    edited = middle[1] + "  # patched"
    names = [f"p{files}/mod{i:02d}.py" for i in range(files)]
    raw_root = bench.root / f"raw{files}"
    for root in (bench.root, raw_root):
        (root / f"p{files}").mkdir(parents=True)
        for name in names:
            (root / name).write_text("".join(lines))
    hunk = (middle[0], middle[1], middle[2])
    forward = git_diff(names, hunk, middle[1], edited, 100)
    back = git_diff(names, hunk, edited, middle[1], 100)
    patch_files = [
        bench.root.parent / f"forward{files}.diff",
        bench.root.parent / f"back{files}.diff",
    ]
    for path, text in zip(patch_files, (forward, back), strict=True):
        path.write_text(text)
    raw_paths = [raw_root / name for name in names]
    patches, raw_turn = flip(forward, back), flip(*patch_files)

    def applied_and_synced() -> None:
        git_apply(raw_turn(), raw_root)
        fsync_files(raw_paths)

    reps = LARGE_REPS if files > 5 else SMALL_REPS
    tool = lambda: bench.fs.apply_patch(patches())  # noqa: E731
    durable = await bench.pair(tool, applied_and_synced, reps)
    plain = await bench.pair(tool, lambda: git_apply(raw_turn(), raw_root), reps)
    limit = 2.0 if files > 5 else 1.5
    word = "file" if files == 1 else "files"
    return [
        Row(
            f"apply_patch {files} {word} vs git apply + fsync",
            "ms",
            *durable,
            Target(f"<= {limit:g}x", limit, on_ratio=True),
        ),
        Row("  the same vs plain git apply (no fsync)", "ms", *plain),
    ]


async def case_writes(bench: Bench) -> list[Row]:
    fs, root = bench.fs, bench.root
    small = (small_text("A"), small_text("B"))
    body = "".join(source_lines(20_000))
    big = ("# version A\n" + body, "# version B\n" + body)
    rows: list[Row] = []
    for label, versions, reps, limit in (
        ("write_file 4 KB", small, SMALL_REPS, 2.0),
        ("write_file 1 MB", big, LARGE_REPS, 1.5),
    ):
        name = f"w{len(versions[0])}.txt"
        (root / name).write_text(versions[1])
        raw_path = root / f"raw_{name}"
        raw_path.write_text(versions[1])
        turn, raw_turn = flip(*versions), flip(*versions)
        times = await bench.pair(
            lambda n=name, t=turn: fs.write_file(n, t()),
            lambda p=raw_path, t=raw_turn: raw_atomic_write(p, t().encode()),
            reps,
        )
        rows.append(Row(label, "ms", *times, Target(f"<= {limit:g}x", limit, on_ratio=True)))
        durable = await bench.pair(
            lambda n=name, t=turn: fs.write_file(n, t()),
            lambda p=raw_path, t=raw_turn: raw_atomic_write(p, t().encode(), sync_directory=True),
            reps,
        )
        rows.append(Row("  the same; raw also fsyncs the folder, as the tool does", "ms", *durable))
    text = small[0]
    line = text.splitlines()[40]
    other = line + "  # edited"
    (root / "e.py").write_text(text)
    (root / "raw_e.py").write_text(text)
    turn, raw_turn = flip((line, other), (other, line)), flip((line, other), (other, line))
    times = await bench.pair(
        lambda: fs.edit_file("e.py", *turn()),
        lambda: raw_edit(root / "raw_e.py", *raw_turn()),
        SMALL_REPS,
    )
    rows.append(Row("edit_file one line of 4 KB", "ms", *times, Target("<= 2x", 2.0, True)))
    return rows


async def files_rows(provider: str, workdir: Path, scale: int) -> list[str]:
    root = (workdir / f"files-{provider}").resolve()
    root.mkdir()
    fs = FileTools(
        root,
        provider=make_provider(provider, root),
        hooks=[AutoApprovePolicy()],
        audit=AuditLog(workdir / "audit"),
    )
    bench = Bench(fs, fs.root, scale, 3)
    out = [f"## provider: {provider}"]
    print(out[0], flush=True)
    try:
        rows: list[Row] = await case_writes(bench)
        for files in PATCH_SIZES:
            rows += await case_patch(bench, files)
    finally:
        await fs.close()
    for row in rows:
        line = format_row(row)
        print(line, flush=True)
        out.append(line)
    return out


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


def with_journal(params: Any, journal: Path) -> Any:
    env = dict(params.env or os.environ)
    env[JOURNAL_ENV] = str(journal)
    return params.model_copy(update={"env": env})


async def mcp_rows(workdir: Path, rounds: int) -> list[str]:
    from mcp import Client

    if not (REFERENCE_BIN.exists() and shutil.which("node")):
        return ["## mcp: reference server not installed (npm ci --prefix bench/node)"]
    compileall.compile_dir(Path(__file__).resolve().parent.parent / "tinyagent_fs", quiet=1)
    servers = [ours(), reference()]
    roots = {s.name: workdir / f"mcp-{s.name}" for s in servers}
    for root in roots.values():
        make_files(root)
    samples: dict[tuple[str, str, str], list[float]] = {}

    def phrase(server: Any, op: str, i: int) -> tuple[str, dict[str, Any]]:
        tool, args = server.calls[op](i)
        if server.name == "reference":
            args = {**args, "path": str(roots[server.name] / args["path"])}
        return tool, args

    async def connect(kind: str, server: Any, stack: AsyncExitStack) -> Any:
        params = with_journal(server.params(roots[server.name]), workdir / "mcp-journal")
        if kind == "sdk":
            return await stack.enter_async_context(Client(params))
        client = await RawClient.start(params.command, params.args, params.env)
        stack.push_async_callback(client.close)
        return client

    for kind in ("raw", "sdk"):
        for r in range(rounds):
            order = servers if r % 2 == 0 else servers[::-1]
            async with AsyncExitStack() as stack:
                clients = {s.name: await connect(kind, s, stack) for s in order}
                for op in MCP_OPS:
                    for server in order:
                        client = clients[server.name]
                        if op not in ("write new 4 KB",):
                            await client.call_tool(*phrase(server, op, 0))
                        times = []
                        for k in range(CALLS_PER_ROUND):
                            tool, args = phrase(server, op, (r * 2 + (kind == "sdk")) * 100 + k)
                            began = time.perf_counter()
                            result = await client.call_tool(tool, args)
                            times.append(time.perf_counter() - began)
                            if getattr(result, "is_error", False):
                                raise SystemExit(f"{server.name} {op} failed: {result}")
                        samples.setdefault((kind, op, server.name), []).append(
                            statistics.median(times)
                        )
            print(f"mcp {kind} round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    out = [
        f"## mcp: ours vs reference server, {rounds} rounds of {CALLS_PER_ROUND} calls; ms",
    ]
    for kind in ("raw", "sdk"):
        client = "raw JSON-RPC client" if kind == "raw" else "SDK client"
        for op in MCP_OPS:
            mine = statistics.median(samples[(kind, op, "tinyagent-fs")])
            theirs = statistics.median(samples[(kind, op, "reference")])
            ratio = mine / theirs
            verdict = "PASS" if ratio <= 1.0 else "MISS"
            line = (
                f"{'mcp ' + op + ', ' + client:<58}  ours {mine * 1e3:>7.3f}  "
                f"reference {theirs * 1e3:>7.3f}  {ratio:>5.2f}x  target <= 1x: {verdict}"
            )
            print(line, flush=True)
            out.append(line)
    return out


def header(workdir: Path, args: argparse.Namespace) -> list[str]:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    git = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    return [
        f"# command: {shlex.join(getattr(sys, 'orig_argv', [sys.executable, *sys.argv]))}",
        f"# date: {datetime.now(timezone.utc).isoformat(timespec='seconds')}",
        f"# cpus: {os.cpu_count()} (usable: {affinity}); {git.stdout.strip()}; "
        f"file system: {mount_type(workdir)}",
        "# files: FileTools with audit log, undo journal and auto-approve; each row is the "
        "tool and its baseline in alternating turns, median (p90) of "
        f"{max(3, SMALL_REPS // args.scale)} (small) / {max(3, LARGE_REPS // args.scale)} "
        "(1 MB, 50 files) samples after 3 warm-ups; raw = temp + write + fsync + rename "
        "(writes, edits) or git apply + fsync of each file it wrote (patches)",
    ]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    available = ["local"] + (["linux"] if LinuxSandboxProvider is not None else [])
    split = lambda text: [part.strip() for part in text.split(",") if part.strip()]  # noqa: E731
    parser.add_argument("--providers", type=split, default=available)
    parser.add_argument("--only", type=split, default=["files", "mcp"])
    parser.add_argument("--mcp-rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    args.scale = 4 if args.quick else 1
    return args


async def run(args: argparse.Namespace, workdir: Path) -> list[str]:
    os.environ[JOURNAL_ENV] = str(workdir / "journal")
    out: list[str] = []
    if "files" in args.only:
        for provider in args.providers:
            out += await files_rows(provider, workdir, args.scale)
    if "mcp" in args.only:
        out += await mcp_rows(workdir, max(3, args.mcp_rounds // args.scale))
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tinyagent-bench-small-") as tmp:
        workdir = Path(tmp)
        head = header(workdir, args)
        print("\n".join(head), flush=True)
        rows = asyncio.run(run(args, workdir))
    if args.output is not None:
        args.output.write_text("\n".join([*head, *rows]) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
