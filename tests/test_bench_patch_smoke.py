"""The patch benchmarks still run end to end on a small corpus; timings are never asserted on."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def result_file(script: str, output: Path, *arguments: str) -> list[str]:
    """The lines ``script`` wrote to ``output``, whose first names the command run."""
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *arguments, "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    written = output.read_text(encoding="utf-8").splitlines()
    assert written[0].startswith("# command: ") and shlex.join(arguments) in written[0]
    return written


def test_small_patch_bench_checks_results_and_writes_ratios_under_its_command(
    tmp_path: Path,
) -> None:
    arguments = ("--files", "40", "--rounds", "1", "--providers", "local")
    written = result_file("bench_patch.py", tmp_path / "patch.txt", *arguments)
    row = next(line for line in written if line.startswith("apply_patch, local"))
    assert re.search(r"\d+\.\d+ ms .* \d+\.\d+x$", row)
    assert any(
        re.match(r"target apply_patch, local <= 2x git apply \(wall\): .* (PASS|MISS)$", line)
        for line in written
    )


def test_ab_bench_runs_both_trees_in_turns_and_reports_paired_ratios(tmp_path: Path) -> None:
    arguments = ("--baseline", "HEAD", "--rounds", "2", "--files", "30")
    written = result_file("bench_patch_ab.py", tmp_path / "patch_ab.txt", *arguments)
    assert len([line for line in written if line.startswith("round ")]) == 2
    assert any(
        re.match(r"wall: HEAD .* median of per-round ratios x\d+\.\d\d$", line) for line in written
    )
