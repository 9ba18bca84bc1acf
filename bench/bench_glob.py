"""Glob matching on hostile input: the linear-time matcher against backtracking baselines.

Run: ``.venv/bin/python bench/bench_glob.py [--output FILE] [--timeout S]``.

``*a*a*a*a*a*a*a*a*b`` against a 200-character name of ``a`` (no match) is what
made the toolkit hang: the regex translation backtracks through every way of
placing eight stars. Measured in the same run: our ``GlobMatcher``, the old
regex translation (run in a child process with a short timeout, since it does
not finish), and ``fnmatch.fnmatchcase``. A common glob (``**/*.py``) is timed
too, to show the usual case keeps the compiled regex and its speed.
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tinyagent_fs.ops.glob_match import GlobMatcher

PATHOLOGICAL = "*a*a*a*a*a*a*a*a*b"
NAME = "a" * 200
COMMON = "**/*.py"
COMMON_PATHS = [f"src/pkg{i % 50}/module_{i}.{'py' if i % 3 else 'txt'}" for i in range(5000)]


def median_seconds(job: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        job()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def backtracking_seconds(timeout: float) -> float | None:
    """The old translation, in a child so a runaway match can be stopped; None: timed out."""
    source = GlobMatcher(PATHOLOGICAL, braces=True).source
    code = (
        "import re, time, sys\n"
        f"regex = re.compile({source!r}, re.DOTALL)\n"
        "started = time.perf_counter()\n"
        f"regex.fullmatch({NAME!r})\n"
        "print(time.perf_counter() - started)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", type=Path)
    parser.add_argument("--timeout", type=float, default=10.0)
    options = parser.parse_args()

    ours = GlobMatcher(PATHOLOGICAL, braces=True)
    assert ours.linear and not ours.fullmatch(NAME)
    ours_s = median_seconds(lambda: ours.fullmatch(NAME), 50)
    fnmatch_s = median_seconds(lambda: fnmatch.fnmatchcase(NAME, PATHOLOGICAL), 50)
    old_s = backtracking_seconds(options.timeout)

    common = GlobMatcher(COMMON, braces=True)
    old_common = re.compile(common.source, re.DOTALL)
    assert not common.linear
    common_s = median_seconds(lambda: [common.fullmatch(p) for p in COMMON_PATHS], 20)
    old_common_s = median_seconds(
        lambda: [old_common.fullmatch(p) is not None for p in COMMON_PATHS], 20
    )

    old_text = (
        f"> {options.timeout:.0f} s (stopped; > {options.timeout / ours_s:,.0f}x ours)"
        if old_s is None
        else f"{old_s * 1e3:.3f} ms ({old_s / ours_s:,.1f}x ours)"
    )
    rows = [
        f"# command: python bench/bench_glob.py --timeout {options.timeout:g}",
        f"# date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}",
        f"# python: {platform.python_implementation()} {platform.python_version()}",
        f"# glob {PATHOLOGICAL!r} against a {len(NAME)}-char name of 'a' (no match), median",
        f"ours (linear-time GlobMatcher)          {ours_s * 1e3:10.3f} ms",
        f"fnmatch.fnmatchcase baseline            {fnmatch_s * 1e3:10.3f} ms"
        f"   ({fnmatch_s / ours_s:.2f}x ours)",
        f"old regex translation (backtracking)    {old_text}",
        f"# common glob {COMMON!r} over {len(COMMON_PATHS)} paths (keeps the compiled regex)",
        f"ours                                    {common_s * 1e3:10.3f} ms",
        f"old regex translation                   {old_common_s * 1e3:10.3f} ms"
        f"   (ours / old = {common_s / old_common_s:.2f}x)",
    ]
    text = "\n".join(rows) + "\n"
    print(text, end="")
    if options.output:
        options.output.parent.mkdir(parents=True, exist_ok=True)
        options.output.write_text(text)


if __name__ == "__main__":
    main()
