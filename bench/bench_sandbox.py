"""What the kernel sandbox costs per call and in memory, beside the in-process provider.

Run: ``.venv/bin/python bench/bench_sandbox.py [--rounds N]``. Every figure is a
median over ``rounds`` runs measured in this process; ratios are against the raw
Python baseline measured in the same run, so the numbers compare on any machine.
A new toolkit's start-up and a command's overhead are ``run_all``'s figures.
Results go to stdout and to bench/results/sandbox.txt.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shlex
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider
from tinyagent_fs.providers.local import LocalProvider

RESULTS = Path(__file__).parent / "results" / "sandbox.txt"
TARGETS = {
    "small read": ("µs", 1000.0),
    "small read / local": ("x", 3.0),
    "worker RSS": ("MB", 30.0),
}


def median_of(rounds: int, action: Callable[[], object]) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def amedian_of(rounds: int, action: Callable[[], Awaitable[object]]) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        await action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def process_round_trip(rounds: int) -> float:
    """One byte to a forked echo process and back: the floor under any process hop."""
    left, right = socket.socketpair()
    child = os.fork()
    if child == 0:
        left.close()
        while data := right.recv(64):
            right.sendall(data)
        os._exit(0)
    right.close()

    def ping() -> None:
        left.sendall(b"x")
        left.recv(64)

    try:
        return median_of(rounds, ping)
    finally:
        left.close()
        os.waitpid(child, 0)


def raw_read(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


async def measure(root: Path, rounds: int) -> tuple[list[tuple[str, float, str]], dict]:
    rows: list[tuple[str, float, str]] = []
    policy = SandboxPolicy()
    sandboxed = LinuxSandboxProvider(root, policy)
    local = LocalProvider()
    await sandboxed.call("stat_path", path=str(root))
    measured: dict[str, float] = {}
    for label, size in (("4 KB", 4096), ("1 MB", 1 << 20)):
        path = root / f"file-{size}.bin"
        path.write_bytes(os.urandom(size))
        raw = median_of(rounds, lambda path=path: raw_read(path))

        async def via(provider: object, path: Path = path, size: int = size) -> bytes:
            call = provider.call  # type: ignore[attr-defined]
            return await call("read_bytes", path=str(path), max_bytes=size)

        in_process = await amedian_of(rounds, lambda: via(local))
        confined = await amedian_of(rounds, lambda: via(sandboxed))
        rows += [
            (f"read {label}: raw open().read()", raw * 1e6, "µs"),
            (f"read {label}: LocalProvider", in_process * 1e6, f"µs  x{in_process / raw:.1f} raw"),
            (
                f"read {label}: LinuxSandboxProvider",
                confined * 1e6,
                f"µs  x{confined / raw:.1f} raw, x{confined / in_process:.1f} local",
            ),
        ]
        if size == 4096:
            measured["small read"] = confined * 1e6
            measured["small read / local"] = confined / in_process

    rss_kb = _rss_kb(sandboxed.worker_pid)
    measured["worker RSS"] = rss_kb / 1024
    rows.append(("worker RSS after the runs above", rss_kb / 1024, "MB"))
    report = sandboxed.report
    await sandboxed.close()
    return rows, {"measured": measured, "report": report}


def _rss_kb(pid: int | None) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS line")


def render(rows: list[tuple[str, float, str]], extra: dict, rounds: int) -> str:
    report = extra["report"]
    lines = [
        f"$ {shlex.join([Path(sys.executable).name, *sys.argv])}",
        f"# {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, Landlock ABI {report['landlock']['abi']}, "
        f"protected paths: {report['protection']['mode']}, medians of {rounds} rounds",
        "",
    ]
    width = max(len(name) for name, _, _ in rows)
    lines += [f"{name:<{width}}  {value:>10.1f} {unit}" for name, value, unit in rows]
    lines += ["", "targets:"]
    for name, (unit, limit) in TARGETS.items():
        value = extra["measured"][name]
        verdict = "ok" if value < limit else "MISSED"
        lines.append(f"  {name:<17} {value:>8.1f} {unit} < {limit:g} {unit}: {verdict}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    options = parser.parse_args()
    supported, reason = LinuxSandboxProvider.available()
    if not supported:
        raise SystemExit(f"cannot benchmark the sandbox here: {reason}")
    floor = process_round_trip(options.rounds * 5)
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as directory:
        rows, extra = asyncio.run(measure(Path(directory), options.rounds))
    rows.insert(0, ("1-byte round trip to a forked process (floor)", floor * 1e6, "µs"))
    text = render(rows, extra, options.rounds)
    print(text, end="")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()
