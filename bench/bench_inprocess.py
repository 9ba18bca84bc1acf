"""In-process cost of listing, tree and small reads with both providers, beside plain Python.

Run: ``PYTHONPATH=. .venv/bin/python bench/bench_inprocess.py [--quick]
[--provider local,linux] [--output bench/results/inprocess.txt]``.

``FileTools.call`` as an agent gets it (auto-approve hook, audit log on, undo
journal on) against the plain Python a tool without guard, review or audit
would run, taken in turns in the same run (see ``bench_tools.Bench.pair``):

- ``list_directory`` of 1,000 files against ``os.scandir`` + ``lstat`` + sort;
- ``glob '**/*'`` over 5,000 files in 50 folders (the tree an MCP client asks
  for) against ``os.walk`` with sorted names;
- ``read_file`` of 4 KB against open/read/decode/number (``bench_tools.raw_read``).

Below the tool rows, the layers a read goes through: the provider's
``read_bytes`` alone against ``open().read()``, and the floor of one provider
hop: a ``ping`` request (no work at all) against one byte sent to an echo
process over a socketpair and back. For the sandbox the difference between
``read_file`` and ``ping`` is what the toolkit itself spends.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench_tools import (
    Bench,
    LinuxSandboxProvider,
    Row,
    Target,
    format_row,
    header,
    make_provider,
    raw_read,
    source_lines,
)

from tinyagent_fs import FileTools
from tinyagent_fs.audit import AuditLog
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.journal import JOURNAL_ENV

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
    read = await bench.pair(lambda: fs.read_file(SMALL), lambda: raw_read(root / SMALL), 400)
    return [
        Row(f"list_directory, {LIST_ENTRIES:,} entries", "ms", *listed, WITHIN),
        Row(f"glob '**/*', {TREE_FILES:,} files in {TREE_FOLDERS} folders", "ms", *tree, WITHIN),
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
            finally:
                await fs.close()
            lines = [f"[{fs.provider.name}]", *map(format_row, rows)]
            print("\n".join(lines), flush=True)
            out += lines
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tinyagent-bench-") as tmp:
        workdir = Path(tmp)
        head = [
            *header(" and ".join(args.provider), workdir)[:-1],
            "# times: median (p90) after warm-up; raw = the same job in plain Python, "
            "measured in turns with the tool in the same run; µs rows: 10 calls per sample",
        ]
        print("\n".join(head), flush=True)
        rows = asyncio.run(run(args, workdir))
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text("\n".join([*head, *rows]) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
