"""Where a write_file call's time goes, stage by stage, for the targets it misses.

Run: ``.venv/bin/python bench/profile_write.py [--calls 300] [--output
bench/results/write_phases.txt]``.

``FileTools.write_file`` as the summary table times it (auto-approve hook, audit
log and undo journal on; two versions of the file alternate), 4 KB and 1 MB, on
each provider. Each stage of the pipeline is timed inside the real calls, by
wrapping it for the run: the path guard, the plan (the provider's reads and
stats, encoding, the new content's digest started), the diff and the journal's
entry, the provider's commit (in process it holds the diff and the journal, run
while the disk writes; in the sandbox they come first, then the worker's round
trip), and the audit record. What is left of the whole call is
validation, review, the read state and the result. Medians of the calls, with
``raw_atomic_write`` and the disk's fsyncs measured in the same run for scale.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from baselines import raw_atomic_write
from figure import source_lines
from figures_files import small_text, toolkit
from run_all import disk_latency, machine_lines

from tinyagent_fs import FileTools
from tinyagent_fs.journal.undo_journal import JOURNAL_ENV
from tinyagent_fs.providers.linux import LinuxSandboxProvider
from tinyagent_fs.tools import pipeline

STAGES = (
    ("guard", "path guard"),
    ("plan", "plan (reads, stat, encode)"),
    ("commit", "provider commit"),
    ("before", "  of it: diff + journal entry"),
    ("audit", "audit record"),
)
"""Stage keys and labels, in the order they run; ``before`` runs inside ``commit``."""


class Stages:
    """Each stage's time in the current call, and every call's, by stage."""

    def __init__(self) -> None:
        self.calls: dict[str, list[float]] = defaultdict(list)
        self.current: dict[str, float] = defaultdict(float)

    def timed(self, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.current[stage] += time.perf_counter() - began

        return wrapper

    def timed_async(self, stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return await function(*args, **kwargs)
            finally:
                self.current[stage] += time.perf_counter() - began

        return wrapper

    def end_call(self, whole: float) -> None:
        for stage, _ in STAGES:
            self.calls[stage].append(self.current[stage])
        self.calls["whole"].append(whole)
        self.current.clear()


@contextmanager
def staged(fs: FileTools, stages: Stages) -> Iterator[None]:
    """The toolkit's stages wrapped for the run, put back after it."""
    spec = fs.tools["write_file"]
    provider = fs.context.provider
    saved = (pipeline.Pipeline._guard, pipeline.Pipeline._record, pipeline._before_commit)
    fs.tools["write_file"] = dataclasses.replace(spec, plan=stages.timed_async("plan", spec.plan))
    provider.commit = stages.timed_async("commit", provider.commit)  # type: ignore[method-assign]
    pipeline.Pipeline._guard = stages.timed("guard", saved[0])  # type: ignore[method-assign]
    pipeline.Pipeline._record = stages.timed("audit", saved[1])  # type: ignore[method-assign]
    pipeline._before_commit = stages.timed("before", saved[2])
    try:
        yield
    finally:
        pipeline.Pipeline._guard, pipeline.Pipeline._record, pipeline._before_commit = saved
        del provider.commit
        fs.tools["write_file"] = spec


async def profile(provider: str, size: str, calls: int, workdir: Path) -> list[str]:
    root = workdir / f"{provider}-{size}"
    root.mkdir()
    if size == "4 KB":
        versions = (small_text("A"), small_text("B"))
    else:
        body = "".join(source_lines(20_000))
        versions = ("# version A\n" + body, "# version B\n" + body)
    (root / "w.txt").write_text(versions[1])
    raw = root.parent / f"{root.name}-raw.txt"
    raw.write_text(versions[1])
    stages, raw_times = Stages(), []
    async with toolkit(root, provider) as fs:
        for index in range(20):  # warm-up: first reads, the worker's caches
            await fs.write_file("w.txt", versions[index % 2])
        with staged(fs, stages):
            for index in range(calls):
                fs.limiter.reset()
                began = time.perf_counter()
                result = await fs.write_file("w.txt", versions[index % 2])
                stages.end_call(time.perf_counter() - began)
                assert result.ok, result.text
                began = time.perf_counter()
                raw_atomic_write(raw, versions[index % 2].encode())
                raw_times.append(time.perf_counter() - began)
    whole = statistics.median(stages.calls["whole"])
    lines = [f"write_file {size}, {provider}: {whole * 1e3:.3f} ms a call"]
    for stage, label in STAGES:
        part = statistics.median(stages.calls[stage])
        lines.append(f"  {label:<36} {part * 1e3:7.3f} ms {part / whole:6.1%}")
    rest = statistics.median(
        call - sum(stages.calls[stage][i] for stage, _ in STAGES if stage != "before")
        for i, call in enumerate(stages.calls["whole"])
    )
    lines.append(
        f"  {'the rest (validate, review, result)':<36} {rest * 1e3:7.3f} ms {rest / whole:6.1%}"
    )
    base = statistics.median(raw_times)
    lines.append(
        f"  {'raw_atomic_write, same run':<36} {base * 1e3:7.3f} ms (ratio {whole / base:.2f}x)"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    providers = ["local"]
    if LinuxSandboxProvider.available()[0]:
        providers.append("linux")
    with tempfile.TemporaryDirectory(prefix="tinyagent-profile-") as tmp:
        workdir = Path(tmp)
        os.environ[JOURNAL_ENV] = str(workdir / "journal")
        lines = machine_lines(workdir)
        lines.append(
            "# method: each stage timed inside the same calls (medians); the diff and the "
            "journal's entry run inside the commit: in process while the disk writes the new "
            "content, in the sandbox before the request goes to the worker; 'the rest' is "
            "the whole call less the stages"
        )
        for provider in providers:
            for size in ("4 KB", "1 MB"):
                block = asyncio.run(profile(provider, size, args.calls, workdir))
                print("\n".join(block), flush=True)
                lines += block
        lines.append(f"# disk at the end: {disk_latency(workdir / 'disk-probe-end')}")
    if args.output:
        args.output.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
