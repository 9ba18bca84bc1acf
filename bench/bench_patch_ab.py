"""apply_patch on the real-patch corpus: this tree against an earlier commit, in turns.

Run: ``PYTHONPATH=. .venv/bin/python bench/bench_patch_ab.py --baseline main
[--rounds 7] [--files 870] [--provider local|linux] [--output bench/results/patch_ab.txt]
[--workdir /dev/shm]``.

The patch is ``bench_patch``'s (``git diff -M`` of a standard-library tree, about
500 files). The baseline commit's package is exported (``git archive``); every
round applies the patch to a fresh copy of the old tree once with each package,
each in a process of its own (``patch_apply_once``: the provider asked for, audit
and undo journal on), in alternating order, and checks both results against the new tree.
On a machine whose load drifts, the median of the per-round ratios is the figure
to trust; wall and CPU time are both given.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_patch import Corpus, Run, header
from bench_read_ab import HERE, export
from bench_tools import write_table

from tinyagent_fs.journal.undo_journal import JOURNAL_ENV

ONCE = Path(__file__).with_name("patch_apply_once.py")


def apply_once(package: Path, corpus: Corpus, label: str, provider: str) -> Run:
    tree = corpus.fresh_copy()
    env = {**os.environ, "PYTHONPATH": str(package)}
    done = subprocess.run(
        [
            sys.executable,
            str(ONCE),
            str(tree),
            str(corpus.patch_file),
            str(corpus.workdir / "audit"),
            provider,
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{label}: {done.stderr[-2000:]}")
    corpus.check(label, tree)
    shutil.rmtree(tree)
    wall, cpu = json.loads(done.stdout)
    return Run(wall, cpu)


def rows(baseline: str, pairs: list[tuple[Run, Run]]) -> list[str]:
    lines = [
        f"round {index + 1}: {baseline} {base.wall * 1e3:7.1f} ms (cpu {base.cpu * 1e3:7.1f})"
        f"   this tree {ours.wall * 1e3:7.1f} ms (cpu {ours.cpu * 1e3:7.1f})"
        f"   x{ours.wall / base.wall:.2f}"
        for index, (base, ours) in enumerate(pairs)
    ]
    for field in ("wall", "cpu"):
        before = statistics.median(getattr(base, field) for base, _ in pairs)
        after = statistics.median(getattr(ours, field) for _, ours in pairs)
        paired = statistics.median(getattr(o, field) / getattr(b, field) for b, o in pairs)
        lines.append(
            f"{field}: {baseline} {before * 1e3:.1f} ms, this tree {after * 1e3:.1f} ms; "
            f"median of per-round ratios x{paired:.2f}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="commit to compare against")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--files", type=int, default=870, help="modules in the old tree")
    parser.add_argument("--provider", choices=["local", "linux"], default="local")
    parser.add_argument("--output", type=Path, help="also write the table here, with a header")
    parser.add_argument(
        "--workdir", type=Path, help="build the trees beneath this folder (e.g. a tmpfs)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tinyagent-bench-patch-ab-", dir=args.workdir) as tmp:
        workdir = Path(tmp)
        os.environ[JOURNAL_ENV] = str(workdir / "journal")
        package = workdir / "baseline"
        export(args.baseline, package)
        corpus = Corpus(workdir, args.files)
        head = header(workdir, corpus, args.rounds)[:-1]
        head.append(f"# this tree ({HERE}) against {args.baseline}, {args.provider}, in turns")
        print("\n".join(head), flush=True)
        pairs: list[tuple[Run, Run]] = []
        for index in range(args.rounds):
            trees = [(package, args.baseline), (HERE, "this tree")]
            order = trees if index % 2 else trees[::-1]
            runs = {label: apply_once(tree, corpus, label, args.provider) for tree, label in order}
            pairs.append((runs[args.baseline], runs["this tree"]))
    table = rows(args.baseline, pairs)
    print("\n".join(table), flush=True)
    write_table(args.output, head, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
