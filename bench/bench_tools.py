"""What the full tool stack costs over doing the same job in plain Python.

Run: ``.venv/bin/python bench/bench_tools.py [--quick] [--only read4k,grep]
[--provider local|linux] [--output FILE]``.

Each case times ``FileTools`` as an agent gets it (auto-approve hook, audit log
on, undo journal on, the chosen provider) against the naive code a tool without
guard, review, journal or audit would run, measured in the same process on the
same files. Absolute numbers depend on the machine and its disk; the ratios are
what carries over. Times are the median and p90 of repeated runs after warm-up.
The figures with a target of issue 25 (writes, edits, patches) are in
``run_all``'s table instead; the baselines are ``baselines``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import inspect
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from baselines import READ_WINDOW, raw_edit, raw_read
from figure import mount_type, source_lines
from figures_files import flip, make_provider

import tinyagent_fs
from tinyagent_fs import FileTools, SandboxPolicy, ToolResult
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.guard.path_guard import PathGuard
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.journal.undo_journal import JOURNAL_ENV

try:
    from tinyagent_fs.providers.linux import LinuxSandboxProvider
except ImportError:
    LinuxSandboxProvider = None  # type: ignore[assignment,misc]

RG = Path(sys.executable).parent / "rg"
GREP_FILES = 20_000
GREP_EVERY = 100
GREP_PATTERN = r"needle_\d+_found"
Action = Callable[[], object]


@dataclass(frozen=True)
class Target:
    """A goal for one row: the tool's median below ``limit`` seconds, or its ratio below."""

    label: str
    limit: float
    on_ratio: bool = False

    def met(self, tool: float, ratio: float) -> bool:
        return ratio <= self.limit if self.on_ratio else tool < self.limit


@dataclass
class Row:
    name: str
    unit: str
    tool: list[float]
    base: list[float]
    target: Target | None = None


@dataclass
class Bench:
    fs: FileTools
    root: Path
    scale: int
    warmup: int

    async def pair(
        self, tool: Action, raw: Action, reps: int, inner: int = 1
    ) -> tuple[list[float], list[float]]:
        """Seconds per call of the tool and of its baseline, measured in turns.

        Other processes share the machine and come and go; taking the two sides in
        turns (the first one alternating) lets both see the same load, so the ratio
        holds even when absolute numbers drift. ``inner`` calls per sample give
        resolution for calls of a few µs. A failed tool call stops the run: the
        figure would otherwise time an error message. What the toolkit left to a
        background thread (the undo journal's committed mark) is finished after
        each sample, untimed, so that it never runs while the other side is timed.
        """

        async def sample(action: Action) -> float:
            started = time.perf_counter()
            for _ in range(inner):
                result = action()
                if inspect.isawaitable(result):
                    result = await result
            elapsed = time.perf_counter() - started
            if self.fs.journal is not None:
                self.fs.journal.settle()
            if isinstance(result, ToolResult) and not result.ok:
                raise SystemExit(f"tool call failed during the benchmark: {result.text}")
            return elapsed / inner

        times: tuple[list[float], list[float]] = ([], [])
        gc.collect()
        for index in range(self.warmup + max(3, reps // self.scale)):
            self.fs.new_round()
            if index % 2:
                raw_time, tool_time = await sample(raw), await sample(tool)
            else:
                tool_time, raw_time = await sample(tool), await sample(raw)
            if index >= self.warmup:
                times[0].append(tool_time)
                times[1].append(raw_time)
        return times


def p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


async def case_read4k(bench: Bench) -> list[Row | str]:
    path = bench.root / "small.py"
    path.write_text("".join(source_lines(80))[:4096])
    fs = bench.fs
    tool, base = await bench.pair(lambda: fs.read_file("small.py"), lambda: raw_read(path), 400)
    return [Row("read 4 KB", "ms", tool, base, Target("< 1 ms", 1e-3))]


async def case_read1m(bench: Bench) -> list[Row | str]:
    path = bench.root / "big.py"
    text = "".join(source_lines(20_000))
    path.write_text(text)
    fs, end, target = bench.fs, 20_000 - READ_WINDOW, Target("< 10 ms", 10e-3)
    first = await bench.pair(lambda: fs.read_file("big.py"), lambda: raw_read(path), 60)
    last = await bench.pair(
        lambda: fs.read_file("big.py", offset=end), lambda: raw_read(path, end), 60
    )
    size = f"{len(text) / 1e6:.2f} MB, 20k lines"
    return [
        Row(f"read 1 MB, first 2000 lines ({size})", "ms", *first, target),
        Row("read 1 MB, last 2000 lines (offset)", "ms", *last, target),
    ]


async def case_edit(lines: int, reps: int, bench: Bench) -> list[Row | str]:
    text = "".join(source_lines(lines))
    tool_path, base_path = bench.root / f"edit{lines}.py", bench.root / f"edit{lines}_raw.py"
    tool_path.write_text(text)
    base_path.write_text(text)
    line = source_lines(lines // 2 + 1)[-1].rstrip("\n")
    edited = line + "  # edited"
    tool_turn, base_turn = (flip((line, edited), (edited, line)) for _ in range(2))
    times = await bench.pair(
        lambda: bench.fs.edit_file(tool_path.name, *tool_turn()),
        lambda: raw_edit(base_path, *base_turn()),
        reps,
    )
    size = f"{len(text) / 1e6:.1f} MB"
    return [Row(f"edit, {lines // 1000}k-line file ({size})", "ms", *times)]


def grep_tree(root: Path) -> None:
    """20,000 small files in 100 folders; every 100th holds one matching line."""
    lines = "".join(source_lines(16))
    for i in range(GREP_FILES):
        folder = root / f"d{i // 200:03d}"
        if i % 200 == 0:
            folder.mkdir(parents=True)
        extra = f"    flag = 'needle_{i}_found'\n" if i % GREP_EVERY == 0 else ""
        (folder / f"f{i:05d}.py").write_text(f"# file {i}\n{lines}{extra}")


def raw_rg(root: Path) -> int:
    done = subprocess.run(
        [str(RG), "--no-config", "-n", GREP_PATTERN, "tree"],
        cwd=root,
        capture_output=True,
        check=True,
    )
    return done.stdout.count(b"\n")


async def case_grep(bench: Bench) -> list[Row | str]:
    if not RG.is_file():
        return [f"grep: no rg at {RG}"]
    grep_tree(bench.root / "tree")
    expected = GREP_FILES // GREP_EVERY
    found = raw_rg(bench.root)
    check = await bench.fs.grep(GREP_PATTERN, path="tree", limit=1000)
    if found != expected or check.data.get("match_count") != expected:
        raise SystemExit(f"grep found {found} / {check.data.get('match_count')}, not {expected}")
    times = await bench.pair(
        lambda: bench.fs.grep(GREP_PATTERN, "tree", limit=1000), lambda: raw_rg(bench.root), 15
    )
    name = f"grep, {GREP_FILES} files, {expected} matches (backend {check.data['backend']})"
    return [Row(name, "ms", *times, Target("<= 1.3x rg", 1.3, on_ratio=True))]


async def case_guard(bench: Bench) -> list[Row | str]:
    (bench.root / "src" / "pkg").mkdir(parents=True)
    (bench.root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    guard = PathGuard(bench.root, SandboxPolicy())
    joined = os.path.join(str(bench.root), "src/pkg/mod.py")
    times = await bench.pair(
        lambda: guard.resolve("src/pkg/mod.py"), lambda: os.path.realpath(joined), 40, inner=500
    )
    return [Row("path guard resolve (per call)", "µs", *times, Target("< 20 µs", 20e-6))]


Cases = dict[str, Callable[[Bench], Awaitable[list[Row | str]]]]
CASES: Cases = {
    "read4k": case_read4k,
    "read1m": case_read1m,
    "edit10k": functools.partial(case_edit, 10_000, 30),
    "edit100k": functools.partial(case_edit, 100_000, 10),
    "grep": case_grep,
    "guard": case_guard,
}
SCALE = {"ms": 1e3, "µs": 1e6}


def format_row(row: Row) -> str:
    scale = SCALE[row.unit]
    tool, base = statistics.median(row.tool), statistics.median(row.base)
    ratio = tool / base if base > 0 else math.inf
    cells = [
        f"{row.name:<58}",
        f"{tool * scale:>9.3f} {row.unit} (p90 {p90(row.tool) * scale:>9.3f})",
        f"raw {base * scale:>9.3f} (p90 {p90(row.base) * scale:>9.3f})",
        f"{ratio:>7.2f}x",
    ]
    if row.target is not None:
        verdict = "PASS" if row.target.met(tool, ratio) else "MISS"
        cells.append(f"target {row.target.label}: {verdict}")
    return "  ".join(cells)


def header(provider: str, workdir: Path) -> list[str]:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    return [
        f"# command: {shlex.join(getattr(sys, 'orig_argv', [sys.executable, *sys.argv]))}",
        f"# date: {datetime.now(timezone.utc).isoformat(timespec='seconds')}",
        f"# python: {platform.python_implementation()} {platform.python_version()}",
        f"# cpus: {os.cpu_count()} (usable: {affinity})",
        f"# kernel: {platform.system()} {platform.release()} {platform.machine()}",
        f"# package: {Path(tinyagent_fs.__file__).parent} (PYTHONPATH picks the checkout)",
        f"# provider: {provider}; audit on; undo journal on; file system: {mount_type(workdir)}",
        "# times: median (p90) of repeated runs after warm-up; raw = the same job in plain "
        "Python (rg for grep), measured in turns with the tool in the same run",
    ]


async def run(args: argparse.Namespace, workdir: Path, cases: Cases = CASES) -> list[str]:
    """Each case gets its own root, toolkit and (through the root) undo journal, so a
    figure does not depend on which cases ran before it."""
    os.environ[JOURNAL_ENV] = str(workdir / "journal")
    out: list[str] = []
    for name in args.only:
        root = workdir / name
        root.mkdir()
        fs = FileTools(
            root,
            provider=make_provider(args.provider, root),
            hooks=[AutoApprovePolicy()],
            audit=AuditLog(workdir / "audit"),
        )
        bench = Bench(fs, fs.root, 5 if args.quick else 1, 1 if args.quick else 3)
        try:
            rows = await cases[name](bench)
        finally:
            await fs.close()
        for row in rows:
            line = row if isinstance(row, str) else format_row(row)
            print(line, flush=True)
            out.append(line)
    return out


def provider_bench_args(doc: str, argv: list[str] | None) -> argparse.Namespace:
    """``--output``, ``--quick`` and ``--provider`` (comma-separated, default: every
    provider this machine has; unknown ones refused), for the per-provider benches."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--output", type=Path, help="also write the table here, with a header")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    available = ["local"] + (["linux"] if LinuxSandboxProvider is not None else [])
    parser.add_argument(
        "--provider",
        type=lambda text: [part.strip() for part in text.split(",") if part.strip()],
        default=available,
        help=f"comma-separated providers, of: {', '.join(available)}",
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.provider if name not in available]
    if unknown:
        parser.error(f"unknown provider(s) {', '.join(unknown)}; choose from {available}")
    return args


def parse_args(
    argv: list[str] | None, cases: Cases = CASES, doc: str = __doc__
) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--output", type=Path, help="also write the table here, with a header")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument(
        "--only",
        type=lambda text: [part.strip() for part in text.split(",") if part.strip()],
        default=list(cases),
        help=f"comma-separated cases to run, of: {', '.join(cases)}",
    )
    providers = ["local"] + (["linux"] if LinuxSandboxProvider is not None else [])
    parser.add_argument("--provider", choices=providers, default="local")
    args = parser.parse_args(argv)
    unknown = [name for name in args.only if name not in cases]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(cases)}")
    return args


def write_table(output: Path | None, head: list[str], rows: list[str]) -> None:
    """The header and rows as a result file (bench/results/...), when one is asked for."""
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text("\n".join([*head, *rows]) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None, cases: Cases = CASES, doc: str = __doc__) -> int:
    args = parse_args(argv, cases, doc)
    with tempfile.TemporaryDirectory(prefix="tinyagent-bench-") as tmp:
        workdir = Path(tmp)
        head = header(args.provider, workdir)
        print("\n".join(head), flush=True)
        rows = asyncio.run(run(args, workdir, cases))
    write_table(args.output, head, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
