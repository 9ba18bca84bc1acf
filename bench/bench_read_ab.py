"""A sandboxed 4 KB read or a guard check, this tree against an earlier commit, in one run.

Run: ``.venv/bin/python bench/bench_read_ab.py --baseline <commit> [--what read|guard]``.
The baseline commit is exported (``git archive``) to a temporary directory;
each pair runs one measurement process per tree, one after the other, so load
from other work on the machine falls on both alike. For ``read`` each process
starts a LinuxSandboxProvider, warms it up and reports the median of
``--calls`` 4 KB reads; for ``guard`` it reports the median of ``--calls``
``PathGuard.resolve`` calls on a nested path. The figure that matters is the
ratio of the medians over all pairs. Results go to stdout and to
bench/results/read_ab.txt (guard_ab.txt for the guard).
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
RESULTS = {
    "read": Path(__file__).parent / "results" / "read_ab.txt",
    "guard": Path(__file__).parent / "results" / "guard_ab.txt",
}
TARGET_RATIO = 1.10
"""Either may cost at most 10% more than the baseline's."""
MEASURE_READ = """\
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
MEASURE_GUARD = """\
import statistics, sys, tempfile, time
from pathlib import Path
from tinyagent_fs.guard.path_guard import PathGuard
from tinyagent_fs.policy import SandboxPolicy

with tempfile.TemporaryDirectory() as folder:
    (Path(folder) / "src" / "pkg").mkdir(parents=True)
    (Path(folder) / "src" / "pkg" / "mod.py").write_text("x = 1\\n")
    guard = PathGuard(folder, SandboxPolicy())
    for _ in range(200):
        guard.resolve("src/pkg/mod.py")
    samples = []
    for _ in range(int(sys.argv[1])):
        started = time.perf_counter()
        guard.resolve("src/pkg/mod.py")
        samples.append(time.perf_counter() - started)
    print(statistics.median(samples) * 1e6)
"""
MEASURES = {"read": MEASURE_READ, "guard": MEASURE_GUARD}
WHAT = {"read": "sandboxed 4 KB reads", "guard": "PathGuard.resolve calls"}


def export(commit: str, into: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(HERE), "archive", commit, "tinyagent_fs"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")


def measure(tree: Path, what: str, calls: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", MEASURES[what], str(calls)],
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
    parser.add_argument("--what", choices=sorted(MEASURES), default="read")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        baseline = Path(folder)
        export(args.baseline, baseline)
        pairs = [
            (measure(baseline, args.what, args.calls), measure(HERE, args.what, args.calls))
            for _ in range(args.pairs)
        ]
    before = statistics.median(b for b, _ in pairs)
    after = statistics.median(a for _, a in pairs)
    ratio = after / before
    lines = [
        f"$ python bench/bench_read_ab.py --baseline {args.baseline} --pairs {args.pairs}"
        f" --what {args.what}",
        f"# {args.pairs} interleaved pairs, median of {args.calls} {WHAT[args.what]} each",
        *(
            f"pair {i + 1}: baseline {b:7.1f} µs   this tree {a:7.1f} µs"
            for i, (b, a) in enumerate(pairs)
        ),
        f"median: baseline {before:.1f} µs, this tree {after:.1f} µs, ratio x{ratio:.2f}",
        f"target: ratio < x{TARGET_RATIO:.2f}: {'ok' if ratio < TARGET_RATIO else 'MISSED'}",
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    RESULTS[args.what].write_text(text)


if __name__ == "__main__":
    main()
