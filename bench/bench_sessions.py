"""What interactive sessions cost, against run_command, and what a flood costs the toolkit.

Run: ``.venv/bin/python bench/bench_sessions.py [--rounds 30] [--output FILE]``.

Through ``FileTools`` with the Linux sandbox (auto-approve, audit log on):

- ``exec_command("true")`` (start a session, wait for its exit, after-walk) against
  ``run_command("true")``, in alternating turns; medians (p90);
- a ``write_stdin`` echo round trip in a ``cat`` session, with ``yield_time_ms`` 0
  and 50: the time beyond the yield (the host answers at the end of its yield);
- a session printing 100 MB (``yes | head -c 100000000``) polled every 200 ms until
  it exits: the toolkit's resident memory before and at its highest meanwhile
  (``VmHWM`` is reset first), and how long the flood took.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tinyagent_fs import FileTools
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider

RESULTS = Path(__file__).resolve().parent / "results" / "sessions.txt"


def rss_kb(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"{statistics.median(ordered):8.2f} ms (p90 {p90:.2f})"


async def timed(call) -> float:
    started = time.perf_counter()
    result = await call
    elapsed = (time.perf_counter() - started) * 1000
    assert result.ok, result.text
    return elapsed


async def main(rounds: int) -> list[str]:
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        (root / "a.txt").write_text("hello\n")
        provider = LinuxSandboxProvider(root, SandboxPolicy())
        audit = AuditLog(Path(tmp) / "audit")
        async with FileTools(
            root, provider=provider, hooks=[AutoApprovePolicy()], audit=audit
        ) as fs:
            await fs.run_command("true")  # the worker and the guardian started
            execs, runs = [], []
            for turn in range(rounds):
                pair = [
                    ("exec", fs.exec_command("true", yield_time_ms=5000)),
                    ("run", fs.run_command("true")),
                ]
                for name, call in pair if turn % 2 else pair[::-1]:
                    (execs if name == "exec" else runs).append(await timed(call))
            lines.append(f"exec_command('true')       {summary(execs)}")
            lines.append(f"run_command('true')        {summary(runs)}")
            lines.append(
                f"  ratio exec/run: {statistics.median(execs) / statistics.median(runs):.2f}"
            )

            cat = await fs.exec_command("cat", yield_time_ms=100)
            sid = cat.data["session_id"]
            for yield_ms in (0, 50):
                beyond = []
                for _ in range(rounds):
                    elapsed = await timed(fs.write_stdin(sid, "ping\n", yield_time_ms=yield_ms))
                    beyond.append(elapsed - yield_ms)
                lines.append(
                    f"write_stdin echo in cat, yield {yield_ms:2d} ms: beyond the yield "
                    f"{summary(beyond)}"
                )
            await fs.close_session(sid)

            before = rss_kb()
            reset_peak()
            started = time.perf_counter()
            flood = await fs.exec_command("yes | head -c 100000000; echo END", yield_time_ms=200)
            sid = flood.data["session_id"]
            dropped = 0
            while True:
                polled = await fs.write_stdin(sid, "", yield_time_ms=200)
                dropped += polled.data["bytes_dropped"]
                if not polled.data["running"] and not polled.data["bytes_waiting"]:
                    break
            took = time.perf_counter() - started
            peak = rss_kb("VmHWM")
            lines.append(
                f"100 MB flood: toolkit RSS {before / 1024:.1f} MB before, peak "
                f"{peak / 1024:.1f} MB (+{(peak - before) / 1024:.1f} MB); {took:.1f} s; "
                f"{dropped / 1e6:.1f} MB dropped unread"
            )
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--output", type=Path, default=RESULTS)
    options = parser.parse_args()
    rows = asyncio.run(main(options.rounds))
    command = "$ .venv/bin/python " + shlex.join(["bench/bench_sessions.py", *sys.argv[1:]])
    text = "\n".join([command, *rows]) + "\n"
    print(text, end="")
    options.output.write_text(text)
