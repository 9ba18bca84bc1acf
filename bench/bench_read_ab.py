"""A sandboxed 4 KB read, this tree against an earlier commit, interleaved in one run.

Run: ``.venv/bin/python bench/bench_read_ab.py --baseline <commit> [--pairs N]``.
The baseline commit is exported (``git archive``) to a temporary directory;
each pair runs one measurement process per tree, one after the other, so load
from other work on the machine falls on both alike. Each process starts a
LinuxSandboxProvider, warms it up and reports the median of ``--calls`` reads.
The figure that matters is the ratio of the medians over all pairs. Results go
to stdout and to bench/results/read_ab.txt.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "read_ab.txt"
TARGET_RATIO = 1.10
"""The read may cost at most 10% more than the baseline's."""
MEASURE = """\
import asyncio, statistics, sys, tempfile, time
from pathlib import Path
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider

async def main(calls):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "file"
        path.write_bytes(b"x" * 4096)
        provider = LinuxSandboxProvider(Path(folder), SandboxPolicy())
        for _ in range(50):
            await provider.call("read_bytes", path=str(path), max_bytes=4096)
        samples = []
        for _ in range(calls):
            started = time.perf_counter()
            await provider.call("read_bytes", path=str(path), max_bytes=4096)
            samples.append(time.perf_counter() - started)
        await provider.close()
        print(statistics.median(samples) * 1e6)

asyncio.run(main(int(sys.argv[1])))
"""


def export(commit: str, into: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(HERE), "archive", commit, "tinyagent_fs"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")


def measure(tree: Path, calls: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(calls)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    return float(out.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="commit to compare against")
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        baseline = Path(folder)
        export(args.baseline, baseline)
        pairs = [
            (measure(baseline, args.calls), measure(HERE, args.calls)) for _ in range(args.pairs)
        ]
    before = statistics.median(b for b, _ in pairs)
    after = statistics.median(a for _, a in pairs)
    ratio = after / before
    lines = [
        f"$ python bench/bench_read_ab.py --baseline {args.baseline} --pairs {args.pairs}",
        f"# {args.pairs} interleaved pairs, median of {args.calls} sandboxed 4 KB reads each",
        *(
            f"pair {i + 1}: baseline {b:7.1f} µs   this tree {a:7.1f} µs"
            for i, (b, a) in enumerate(pairs)
        ),
        f"median: baseline {before:.1f} µs, this tree {after:.1f} µs, ratio x{ratio:.2f}",
        f"target: ratio < x{TARGET_RATIO:.2f}: {'ok' if ratio < TARGET_RATIO else 'MISSED'}",
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()
