"""What writing and editing cost with review, audit and the undo journal, against plain Python.

Run: ``.venv/bin/python bench/bench_write.py [--quick] [--only journal4k,edit100k]
[--provider local|linux] [--output FILE]``.

Edits of large files (the 4 KB write and edit, the 1 MB write and the patches
are ``run_all``'s figures), the undo journal's cost as it fills (a 4 KB write
with an empty journal and with 220 entries, and the two against each other) and
a 500-file commit through the provider's commit primitive against a loop of
plain temp + fsync + rename.
Same harness and format as ``bench_tools.py``: the tool and its baseline are
measured in turns in one run; medians (p90) and their ratio.
"""

from __future__ import annotations

import sys

from baselines import raw_atomic_write
from bench_tools import (
    Bench,
    Cases,
    Row,
    Target,
    case_edit,
    flip,
    main,
    make_provider,
)
from figure import source_lines

from tinyagent_fs import FileTools
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.changes.changeset import content_hash
from tinyagent_fs.hooks import AutoApprovePolicy

JOURNAL_FILL = 220
"""More than the 200 entries the journal keeps, so that pruning is part of the run."""
COMMIT_FILES = 500
SMALL = 4096


async def case_edit100k_target(bench: Bench) -> list[Row | str]:
    rows = await case_edit(100_000, 10, bench)
    for row in rows:
        if isinstance(row, Row):
            row.target = Target("< 30 ms", 30e-3)
    return rows


def small_versions() -> tuple[str, str]:
    body = "".join(source_lines(80))[: SMALL - 2]
    return "A\n" + body, "B\n" + body


async def case_journal(bench: Bench) -> list[Row | str]:
    """4 KB writes through a toolkit whose journal is empty and through one whose
    journal holds ``JOURNAL_FILL`` entries, each against a raw write and against
    each other."""
    empty_root = bench.root.with_name(bench.root.name + "-empty-journal")
    empty_root.mkdir()
    empty = FileTools(
        empty_root,
        provider=make_provider(
            "linux" if bench.fs.provider.kernel_enforced else "local", empty_root
        ),
        hooks=[AutoApprovePolicy()],
        audit=AuditLog(bench.root.parent / "audit-empty-journal"),
    )
    full = bench.fs
    for index in range(JOURNAL_FILL):
        filled = await full.write_file(f"fill/{index % 20}.txt", f"entry {index}\n")
        assert filled.ok, filled.text
    versions = small_versions()
    raw_path = bench.root / "small_raw.txt"
    for root in (bench.root, empty_root):
        (root / "small.txt").write_text(versions[1])
    raw_path.write_text(versions[1])
    full_turn, empty_turn, raw_turn = (flip(*versions) for _ in range(3))

    def write_full() -> object:
        return full.write_file("small.txt", full_turn())

    def write_empty() -> object:
        return empty.write_file("small.txt", empty_turn())

    def write_raw() -> None:
        raw_atomic_write(raw_path, raw_turn().encode())

    try:
        alone = await bench.pair(write_empty, write_raw, 200)
        filled_rows = await bench.pair(write_full, write_raw, 200)
        against = await bench.pair(write_full, write_empty, 200)
    finally:
        await empty.close()
    return [
        Row("write 4 KB, empty undo journal", "ms", *alone),
        Row(f"write 4 KB, undo journal of {JOURNAL_FILL} entries", "ms", *filled_rows),
        Row(
            f"write 4 KB: journal of {JOURNAL_FILL} vs empty (raw = empty)",
            "ms",
            *against,
            Target("<= 1.15x", 1.15, on_ratio=True),
        ),
    ]


async def case_commit500(bench: Bench) -> list[Row | str]:
    """One change of ``COMMIT_FILES`` files through the provider's commit primitive
    (no review, journal or audit: what a big patch's commit costs) against writing
    the same files one by one with temp + fsync + rename."""
    versions = small_versions()
    contents = [version.encode() for version in versions]
    folders = [bench.root / "commit" / f"d{i}" for i in range(10)]
    raw_folder = bench.root / "commit_raw"
    raw_folder.mkdir(parents=True)
    paths = [folders[i % 10] / f"f{i:03d}.txt" for i in range(COMMIT_FILES)]
    raw_paths = [raw_folder / f"f{i:03d}.txt" for i in range(COMMIT_FILES)]
    for folder in folders:
        folder.mkdir(parents=True)
    for path, raw_path in zip(paths, raw_paths, strict=True):
        path.write_bytes(contents[1])
        raw_path.write_bytes(contents[1])
    turns, raw_turns = flip(0, 1), flip(0, 1)

    async def commit() -> None:
        new = turns()
        changes = [
            {
                "kind": "modify",
                "path": str(path),
                "dest": None,
                "expected_hash": content_hash(contents[1 - new]),
                "dest_expected_hash": content_hash(None),
                "new_bytes": contents[new],
                "mode": None,
            }
            for path in paths
        ]
        await bench.fs.provider.call("commit_changes", change_id="0" * 12, changes=changes)

    def raw_commit() -> None:
        new = contents[raw_turns()]
        for path in raw_paths:
            raw_atomic_write(path, new)

    times = await bench.pair(commit, raw_commit, 12)
    return [Row(f"commit {COMMIT_FILES} files x 4 KB (provider primitive)", "ms", *times)]


CASES: Cases = {
    "journal4k": case_journal,
    "edit10k": lambda bench: case_edit(10_000, 30, bench),
    "edit100k": case_edit100k_target,
    "commit500": case_commit500,
}


if __name__ == "__main__":
    sys.exit(main(cases=CASES, doc=__doc__ or ""))
