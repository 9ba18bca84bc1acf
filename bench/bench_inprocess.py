"""In-process cost of listing, tree and small reads with both providers, beside plain Python.

Run: ``PYTHONPATH=. .venv/bin/python bench/bench_inprocess.py [--quick]
[--provider local,linux] [--output bench/results/inprocess.txt]``.

``FileTools.call`` as an agent gets it (auto-approve hook, audit log on, undo
journal on) against the plain Python a tool without guard, review or audit
would run, taken in turns in the same run (see ``bench_tools.Bench.pair``):

- ``list_directory`` of 1,000 files against ``os.scandir`` + ``lstat`` + sort;
- ``glob '**/*'`` over 5,000 files in 50 folders (the tree an MCP client asks
  for) against ``os.walk`` with sorted names; glob also stats every match for
  its modification time (recent files come first), which ``os.walk`` does not,
  so part of that ratio is the tool's ordering rather than overhead: a second
  row takes a raw walk that stats and orders the same way;
- ``read_file`` of 4 KB against open/read/decode/number (``bench_tools.raw_read``).

Below the tool rows, the layers a read goes through: the provider's
``read_bytes`` alone against ``open().read()``, and the floor of one provider
hop: a ``ping`` request (no work at all) against one byte sent to an echo
process over a socketpair and back. Then where one ``read_file`` call's time
goes: each part timed on its own, all parts in turns in the same loop, and
what is left of the whole call after them (validation, hooks, read state,
result building).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import socket
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from baselines import raw_read
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
from figure import source_lines

from tinyagent_fs import FileTools
from tinyagent_fs.audit.log import AuditEvent, AuditLog, summarise_arguments
from tinyagent_fs.changes.changeset import content_hash
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.journal.undo_journal import JOURNAL_ENV
from tinyagent_fs.text.codec import decode_text, split_lines
from tinyagent_fs.tools.format import number_lines

LIST_ENTRIES = 1_000
TREE_FILES = 5_000
TREE_FOLDERS = 50
SMALL = "small.py"
WITHIN = Target("<= 1.5x raw", 1.5, on_ratio=True)
ECHO = "import os,sys\nfd=int(sys.argv[1])\nwhile b:=os.read(fd,64): os.write(fd,b)\n"


def make_files(root: Path) -> None:
    (root / SMALL).write_text("".join(source_lines(80))[:4096])
    many = root / "many"
    many.mkdir()
    for index in range(LIST_ENTRIES):
        (many / f"f{index:04d}.txt").write_text("x")
    per_folder = TREE_FILES // TREE_FOLDERS
    for index in range(TREE_FILES):
        folder = root / "tree" / f"d{index // per_folder:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index:04d}.txt").write_text("x")


def raw_list(directory: Path) -> str:
    """What a bare listing does: read the entries, stat each, sort, one line per entry."""
    with os.scandir(directory) as scan:
        found = sorted((entry.name, entry.stat(follow_symlinks=False)) for entry in scan)
    return "\n".join(name + ("/" if stat.S_ISDIR(info.st_mode) else "") for name, info in found)


def raw_tree(directory: Path) -> str:
    """Every file below ``directory`` in sorted tree order, as ``os.walk`` finds them."""
    found: list[str] = []
    for current, folders, files in os.walk(directory):
        folders.sort()
        found.extend(os.path.join(current, name) for name in sorted(files))
    return "\n".join(found)


def raw_tree_by_recency(directory: Path) -> str:
    """``raw_tree``, each file also stat'ed and the last day's files put first, newest
    first: the order glob gives, at the price glob pays for it."""
    found: list[tuple[str, float]] = []
    for current, folders, files in os.walk(directory):
        folders.sort()
        for name in sorted(files):
            path = os.path.join(current, name)
            found.append((path, os.lstat(path).st_mtime))
    cutoff = time.time() - 24 * 60 * 60
    recent = sorted((item for item in found if item[1] >= cutoff), key=lambda item: -item[1])
    return "\n".join(path for path, _ in recent + [item for item in found if item[1] < cutoff])


def raw_bytes(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


@contextmanager
def echo_process() -> Iterator[Callable[[], bytes]]:
    """A one-byte round trip to another process over a socketpair: the floor of any hop."""
    mine, theirs = socket.socketpair()
    child = subprocess.Popen(
        [sys.executable, "-c", ECHO, str(theirs.fileno())], pass_fds=(theirs.fileno(),)
    )
    theirs.close()

    def round_trip() -> bytes:
        mine.sendall(b"x")
        return mine.recv(64)

    try:
        yield round_trip
    finally:
        mine.close()
        child.wait()


async def tool_rows(bench: Bench) -> list[Row]:
    fs, root = bench.fs, bench.root
    listed = await bench.pair(
        lambda: fs.call("list_directory", {"path": "many", "limit": LIST_ENTRIES}),
        lambda: raw_list(root / "many"),
        60,
    )
    tree = await bench.pair(
        lambda: fs.call("glob", {"pattern": "**/*", "path": "tree", "limit": TREE_FILES + 1000}),
        lambda: raw_tree(root / "tree"),
        30,
    )
    ordered = await bench.pair(
        lambda: fs.call("glob", {"pattern": "**/*", "path": "tree", "limit": TREE_FILES + 1000}),
        lambda: raw_tree_by_recency(root / "tree"),
        30,
    )
    read = await bench.pair(lambda: fs.read_file(SMALL), lambda: raw_read(root / SMALL), 400)
    return [
        Row(f"list_directory, {LIST_ENTRIES:,} entries", "ms", *listed, WITHIN),
        Row(f"glob '**/*', {TREE_FILES:,} files in {TREE_FOLDERS} folders", "ms", *tree, WITHIN),
        Row("  the same; raw also stats each file and puts recent ones first", "ms", *ordered),
        Row("read_file 4 KB (full stack)", "ms", *read),
    ]


async def layer_rows(bench: Bench, round_trip: Callable[[], bytes]) -> list[Row]:
    provider, path = bench.fs.provider, bench.root / SMALL
    size = path.stat().st_size
    read = await bench.pair(
        lambda: provider.call("read_bytes", path=str(path), max_bytes=size),
        lambda: raw_bytes(path),
        400,
        inner=10,
    )
    ping = await bench.pair(lambda: provider.call("ping"), round_trip, 400, inner=10)
    return [
        Row("  provider read_bytes 4 KB (raw: open().read())", "µs", *read),
        Row("  provider ping, no work (raw: 1-byte socketpair echo)", "µs", *ping),
    ]


async def read_breakdown(bench: Bench, audit: AuditLog, rounds: int) -> list[str]:
    """Median µs of each part of one read_file call, the parts timed in turns."""
    fs, path = bench.fs, bench.root / SMALL
    data = path.read_bytes()
    args = {"path": SMALL, "offset": 0, "limit": None}

    def text_work() -> str:
        lines = split_lines(decode_text(data, SMALL).text)
        return number_lines(lines, 1, fs.policy.max_line_chars)[0]

    def guard_twice() -> Path:
        fs.guard.resolve(SMALL)
        return fs.guard.resolve(SMALL)

    def audit_work() -> None:
        event = AuditEvent(
            tool="read_file", arguments=summarise_arguments(args), paths=[SMALL], root=str(path)
        )
        audit.record(event)

    parts: dict[str, Callable[[], object]] = {
        "provider read_bytes (hop + open/read)": lambda: fs.provider.call(
            "read_bytes", path=str(path), max_bytes=fs.policy.max_file_bytes
        ),
        "path guard, twice (pipeline check + tool)": lambda: (
            [fs.guard.resolve(SMALL)] * 2 and fs.guard.resolve(SMALL)
        ),
        "decode, split, cat -n numbering": text_work,
        "audit event built and appended": audit_work,
        "content hash kept for conflict checks": lambda: content_hash(data),
    }
    whole = "read_file, whole call"
    samples: dict[str, list[float]] = {name: [] for name in [whole, *parts]}
    actions = {whole: lambda: fs.call("read_file", args), **parts}
    for _ in range(rounds):
        fs.new_round()
        for name, action in actions.items():
            started = time.perf_counter()
            result = action()
            if inspect.isawaitable(result):
                await result
            samples[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(times) * 1e6 for name, times in samples.items()}
    medians["the rest: validation, hooks, read state, result"] = medians[whole] - sum(
        medians[name] for name in parts
    )
    return [f"  where read_file 4 KB goes (medians of {rounds} rounds, parts timed in turns)"] + [
        f"    {name:<54}{value:>9.1f} µs  {value / medians[whole]:>4.0%}"
        for name, value in medians.items()
    ]


async def run(args: argparse.Namespace, workdir: Path) -> list[str]:
    os.environ[JOURNAL_ENV] = str(workdir / "journal")
    out: list[str] = []
    with echo_process() as round_trip:
        for name in args.provider:
            root = workdir / name
            root.mkdir()
            make_files(root)
            fs = FileTools(
                root,
                provider=make_provider(name, root),
                hooks=[AutoApprovePolicy()],
                audit=AuditLog(workdir / "audit"),
            )
            bench = Bench(fs, fs.root, 5 if args.quick else 1, 1 if args.quick else 3)
            try:
                rows = [*await tool_rows(bench), *await layer_rows(bench, round_trip)]
                parts = await read_breakdown(
                    bench, AuditLog(workdir / "audit-parts"), 100 if args.quick else 500
                )
            finally:
                await fs.close()
            lines = [f"[{fs.provider.name}]", *map(format_row, rows), *parts]
            print("\n".join(lines), flush=True)
            out += lines
    return out


def main(argv: list[str] | None = None) -> int:
    args = provider_bench_args(__doc__, argv)
    with tempfile.TemporaryDirectory(prefix="tinyagent-bench-") as tmp:
        workdir = Path(tmp)
        head = [
            *header(" and ".join(args.provider), workdir)[:-1],
            "# times: median (p90) after warm-up; raw = the same job in plain Python, "
            "measured in turns with the tool in the same run; µs rows: 10 calls per sample",
        ]
        print("\n".join(head), flush=True)
        rows = asyncio.run(run(args, workdir))
    write_table(args.output, head, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
