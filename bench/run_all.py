"""Every figure with a target, in one run and one table: ``make bench``.

Run: ``.venv/bin/python bench/run_all.py [--only local.write4k,mcp] [--rounds 9]
[--quick] [--output bench/results/summary.txt]``.

Each figure is timed in alternating turns against its baseline (``rounds``); the
table gives the medians, the median per-round ratio with its min and max, and
the target's verdict, or "noisy" where the rounds spread more than 30 %.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import figures_files
import figures_mcp
import figures_sandbox
from figure import Figure, Kind, baseline_name, mount_type
from rounds import MIN_ROUNDS, NOISY_SPREAD, Rounds, alternate

from tinyagent_fs.journal.undo_journal import JOURNAL_ENV
from tinyagent_fs.providers.linux import LinuxSandboxProvider

REPO = Path(__file__).resolve().parent.parent


def all_figures() -> tuple[list[Figure], list[str]]:
    """The figures this machine can measure, and a note for each group it cannot."""
    out = figures_files.figures("local")
    notes: list[str] = []
    sandbox, why = LinuxSandboxProvider.available()
    if sandbox:
        out += figures_files.figures("linux") + figures_sandbox.figures()
    else:
        notes.append(f"no linux sandbox figures: {why}")
    if figures_mcp.reference_installed():
        out += figures_mcp.figures()
    else:
        notes.append(
            "no mcp figures: the reference server is not installed (npm ci --prefix bench/node)"
        )
    return out, notes


def matches(key: str, prefix: str) -> bool:
    return key == prefix or key.startswith(prefix + ".")


def selected(figures: list[Figure], only: list[str]) -> list[Figure]:
    """The figures ``--only`` names; one naming none stops the run before it starts."""
    unknown = [p for p in only if not any(matches(f.key, p) for f in figures)]
    if unknown:
        keys = ", ".join(f.key for f in figures)
        raise SystemExit(f"no figure matches {', '.join(unknown)}; figures: {keys}")
    return [f for f in figures if not only or any(matches(f.key, p) for p in only)]


def run_output(*command: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    return done.stdout.strip() or "?"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def disk_latency(folder: Path, count: int = 31) -> str:
    """The medians of an fsync of a new 4 KB file and of its folder here: the write
    and patch figures hinge on them (ours makes both durable, most baselines only
    the file), so a run on a disk slower or faster at that moment moves their ratios."""
    folder.mkdir(parents=True, exist_ok=True)
    files, folders = [], []
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for index in range(count):
            path = folder / f"probe-{index}"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, b"x" * 4096)
                began = time.perf_counter()
                os.fsync(fd)
                files.append(time.perf_counter() - began)
            finally:
                os.close(fd)
            os.replace(path, folder / "probe")
            began = time.perf_counter()
            os.fsync(descriptor)
            folders.append(time.perf_counter() - began)
    finally:
        os.close(descriptor)
    return (
        f"fsync of a new 4 KB file {statistics.median(files) * 1e3:.3f} ms, "
        f"of its folder {statistics.median(folders) * 1e3:.3f} ms"
    )


def machine_lines(workdir: Path) -> list[str]:
    """The command, commit, date, machine, software and disk a result was made with."""
    usable = len(os.sched_getaffinity(0))
    return [
        f"# command: {shlex.join(['python', *sys.argv])}",
        f"# commit: {run_output('git', 'describe', '--always', '--dirty')} "
        f"({run_output('git', 'rev-parse', 'HEAD')})",
        f"# date: {datetime.now(timezone.utc).isoformat(timespec='seconds')}",
        f"# machine: {cpu_model()}, {os.cpu_count()} cores ({usable} usable); "
        f"{platform.system()} {platform.release()} {platform.machine()}; "
        f"load {os.getloadavg()[0]:.2f}",
        f"# software: Python {platform.python_version()}; {run_output('git', '--version')}; "
        f"node {run_output('node', '--version')}; file system: {mount_type(workdir)}",
        f"# disk at the start: {disk_latency(workdir / 'disk-probe')}",
    ]


def header(workdir: Path, args: argparse.Namespace) -> list[str]:
    return [
        *machine_lines(workdir),
        f"# method: per figure {args.rounds} rounds after 1 warm-up, ours and the baseline in "
        "alternating turns (who goes first alternates); a turn is the median of its calls "
        "(15, or 7 for 1 MB and 50 files, 3 for start-up, 45 for MCP); ratio = median of per-round "
        f"ratios [min-max]; 'noisy' = (max-min)/median > {NOISY_SPREAD:.0%}, not claimed",
    ]


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:9.3f} ms"


def verdict(figure: Figure, rounds: Rounds) -> str:
    if figure.target is None:
        return "noisy" if rounds.noisy else ""
    shown = figure.target.label
    if figure.target.kind is Kind.OVERHEAD:
        shown += f" (+{rounds.overhead * 1e3:.2f} ms)"
    if rounds.noisy:
        return f"{shown}: noisy"
    return f"{shown}: {'PASS' if figure.target.met(rounds) else 'MISS'}"


def row(figure: Figure, rounds: Rounds) -> str:
    ratios = rounds.ratios
    return (
        f"{figure.name:<50} {ms(statistics.median(rounds.ours))} "
        f"{ms(statistics.median(rounds.base))} "
        f"{rounds.ratio:6.2f}x [{min(ratios):5.2f}-{max(ratios):5.2f}]  "
        f"{verdict(figure, rounds):<28} {baseline_name(figure.baseline)}"
    )


COLUMNS = (
    f"{'figure':<50} {'ours':>12} {'baseline':>12} {'ratio [min-max]':>22}  "
    f"{'target: verdict':<28} baseline"
)


def legend(figures: list[Figure]) -> list[str]:
    """Each baseline used, once, with what it includes (its docstring)."""
    import baselines

    lines = ["# baselines:"]
    for baseline in dict.fromkeys(f.baseline for f in figures):
        if isinstance(baseline, str):
            lines.append(f"#   reference_server: {baselines.REFERENCE_SERVER}")
            continue
        words = " ".join((baseline.__doc__ or "").split())
        lines.append(f"#   {baseline_name(baseline)}: {words}")
    return lines


async def measure(figures: list[Figure], workdir: Path, rounds: int, scale: int) -> list[str]:
    lines = []
    for figure in figures:
        folder = workdir / figure.key
        async with figure.prepare(folder) as (ours, base):
            calls = max(1, figure.calls // scale)
            result = await alternate(ours, base, rounds, calls)
        line = row(figure, result)
        print(line, flush=True)
        lines.append(line)
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--only",
        type=lambda text: [part.strip() for part in text.split(",") if part.strip()],
        default=[],
        help="comma-separated figure keys or their prefixes (local, linux.patch50, mcp.sdk)",
    )
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="3 rounds, fewer calls: not a claim")
    parser.add_argument("--output", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 3
    elif args.rounds < MIN_ROUNDS:
        parser.error(f"a claimed ratio needs at least {MIN_ROUNDS} rounds")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    figures, notes = all_figures()
    chosen = selected(figures, args.only)
    compileall.compile_dir(REPO / "tinyagent_fs", quiet=1)  # as installing it does
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tinyagent-bench-") as tmp:
        workdir = Path(tmp)
        os.environ[JOURNAL_ENV] = str(workdir / "journal")
        head = header(workdir, args)
        print("\n".join([*head, COLUMNS]), flush=True)
        rows = asyncio.run(measure(chosen, workdir, args.rounds, 3 if args.quick else 1))
        disk = f"# disk at the end: {disk_latency(workdir / 'disk-probe')}"
    took = f"# took {time.perf_counter() - began:.0f} s"
    tail = [disk, *(f"# {note}" for note in notes), *legend(chosen), took]
    print("\n".join(tail))
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text("\n".join([*head, COLUMNS, *rows, *tail]) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
