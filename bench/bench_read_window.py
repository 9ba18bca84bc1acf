"""read_file windows of a 6 MB text file against plain Python reading the same lines.

Run: ``.venv/bin/python bench/bench_read_window.py [--quick] [--provider local,linux]
[--output bench/results/read_window.txt]``.

For each provider, a 100-line window at the start, the middle and the end of the
file and ``tail=100`` are timed as an agent gets them (``FileTools.call`` with
audit on), in turns with the raw baseline: ``open`` + ``itertools.islice`` to the
same lines (a backwards seek for the tail) and ``cat -n`` numbering. Warm rows
read a file whose line index is cached (its first read is the "first window"
row, timed on fresh copies of the file, one per sample); the "whole-file path"
row is the same toolkit with windows switched off, as read_file worked before.
The target of issue 12 is a window under 2 ms wherever it lies.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from baselines import NUMBER_WIDTH
from bench_tools import (
    Bench,
    Row,
    Target,
    format_row,
    header,
    make_provider,
    provider_bench_args,
    write_table,
)

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.journal.undo_journal import JOURNAL_ENV
from tinyagent_fs.ops.line_index import SETTLE_NS

WINDOW = 100
TARGET = Target("< 2 ms", 2e-3)
TAIL_BLOCK = 1 << 16


def big_text() -> str:
    """About 6 MB of source-like lines of varying length (like bench_mcp's big file)."""
    return "".join(
        f"{i:06d}  value = transform(record_{i % 977}, {i * 7919 % 100_003}){' #' * (i % 9)}\n"
        for i in range(115_000)
    )


def raw_window(path: Path, offset: int) -> str:
    with open(path, "rb") as handle:
        lines = itertools.islice(handle, offset, offset + WINDOW)
        return "\n".join(
            f"{offset + i + 1:>{NUMBER_WIDTH}}\t{line.decode('utf-8').rstrip()}"
            for i, line in enumerate(lines)
        )


def raw_tail(path: Path) -> str:
    """The last lines by reading backwards from the end; numbered from 1, as ``tail -n``
    does not know the line numbers."""
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        data = b""
        while data.count(b"\n") <= WINDOW and end > 0:
            start = max(0, end - TAIL_BLOCK)
            handle.seek(start)
            data = handle.read(end - start) + data
            end = start
    lines = data.decode("utf-8").splitlines()[-WINDOW:]
    return "\n".join(f"{i + 1:>{NUMBER_WIDTH}}\t{line}" for i, line in enumerate(lines))


def settle(paths: list[Path]) -> None:
    """Wait until every file is old enough for its identity to be trusted (and cached)."""
    newest = max(path.stat().st_ctime_ns for path in paths)
    time.sleep(max(0.0, (newest + SETTLE_NS - time.time_ns()) / 1e9 + 0.05))


def toolkit(root: Path, provider: str, workdir: Path, policy: SandboxPolicy) -> FileTools:
    return FileTools(
        root,
        policy=policy,
        provider=make_provider(provider, root),
        hooks=[AutoApprovePolicy()],
        audit=AuditLog(workdir / "audit"),
    )


async def rows_for(provider: str, workdir: Path, quick: bool) -> list[str]:
    root = workdir / provider
    root.mkdir()
    text = big_text()
    path = root / "big.txt"
    path.write_text(text)
    total = text.count("\n")
    samples = 12 if quick else 40
    copies = [root / f"copy{i:02d}.txt" for i in range(samples // 2 + 8)]
    for copy in copies:
        copy.write_text(text)
    settle([path, *copies])
    fs = toolkit(root, provider, workdir, SandboxPolicy())
    before = toolkit(root, provider, workdir, SandboxPolicy(window_reads_above=2**62))
    bench = Bench(fs, root, 1, 2)
    size = f"{len(text) / 1e6:.1f} MB, {total} lines"
    cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        (
            f"{provider}: 100 lines at the start ({size})",
            lambda: fs.read_file("big.txt", limit=WINDOW),
            lambda: raw_window(path, 0),
        ),
        (
            f"{provider}: 100 lines in the middle",
            lambda: fs.read_file("big.txt", offset=total // 2, limit=WINDOW),
            lambda: raw_window(path, total // 2),
        ),
        (
            f"{provider}: 100 lines at the end",
            lambda: fs.read_file("big.txt", offset=total - WINDOW, limit=WINDOW),
            lambda: raw_window(path, total - WINDOW),
        ),
        (
            f"{provider}: tail=100",
            lambda: fs.read_file("big.txt", tail=WINDOW),
            lambda: raw_tail(path),
        ),
    ]
    out: list[str] = []
    try:
        assert (await fs.read_file("big.txt", tail=1)).ok  # the index, built once
        for name, tool, raw in cases:
            times = await bench.pair(tool, raw, samples)
            out.append(format_row(Row(name, "ms", *times, TARGET)))
            print(out[-1], flush=True)
        fresh = iter(copies)
        cold = await bench.pair(
            lambda: fs.read_file(next(fresh).name, limit=WINDOW), lambda: raw_window(path, 0), 8
        )
        out.append(format_row(Row(f"{provider}: first window of a file (scan)", "ms", *cold)))
        print(out[-1], flush=True)
        whole = await Bench(before, root, 1, 1).pair(
            lambda: before.read_file("big.txt", limit=WINDOW), lambda: raw_window(path, 0), 8
        )
        out.append(format_row(Row(f"{provider}: whole-file path (before)", "ms", *whole)))
        print(out[-1], flush=True)
    finally:
        await fs.close()
        await before.close()
    return out


async def run(providers: list[str], workdir: Path, quick: bool) -> list[str]:
    os.environ[JOURNAL_ENV] = str(workdir / "journal")
    rows: list[str] = []
    for provider in providers:
        rows.extend(await rows_for(provider, workdir, quick))
    return rows


def main(argv: list[str] | None = None) -> int:
    args = provider_bench_args(__doc__, argv)
    with tempfile.TemporaryDirectory(prefix="tinyagent-bench-") as tmp:
        workdir = Path(tmp)
        head = header(", ".join(args.provider), workdir)
        print("\n".join(head), flush=True)
        rows = asyncio.run(run(args.provider, workdir, args.quick))
    write_table(args.output, head, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
