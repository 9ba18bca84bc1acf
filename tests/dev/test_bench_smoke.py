"""The benchmarks (tools, in-process, patch) still run end to end; timings are never asserted on."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tinyagent_fs.providers.linux import LinuxSandboxProvider

SCRIPT = Path(__file__).resolve().parent.parent.parent / "bench" / "bench_tools.py"
INPROCESS = SCRIPT.with_name("bench_inprocess.py")


def run_bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def result_file(script: str, output: Path, *arguments: str) -> list[str]:
    """The lines ``script`` (in bench/) wrote to ``output``; the first names the command."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT.with_name(script)), *arguments, "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    written = output.read_text(encoding="utf-8").splitlines()
    assert written[0].startswith("# command: ") and shlex.join(arguments) in written[0]
    return written


def test_quick_read4k_prints_a_ratio_and_writes_the_table_with_its_header(
    tmp_path: Path,
) -> None:
    output = tmp_path / "results" / "tools.txt"
    done = run_bench("--quick", "--only", "read4k", "--output", str(output))
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("read 4 KB"))
    assert re.search(r"\s\d+\.\d+x\s", row)
    assert re.search(r"target < 1 ms: (PASS|MISS)$", row)
    written = output.read_text(encoding="utf-8").splitlines()
    assert written[0].startswith("# command: ") and "--only read4k" in written[0]
    assert any(line.startswith("# kernel: ") for line in written)
    assert row in written


def test_unknown_case_is_refused_before_anything_runs() -> None:
    done = run_bench("--quick", "--only", "read4k,nosuchcase")
    assert done.returncode == 2
    assert "nosuchcase" in done.stderr
    assert "read 4 KB" not in done.stdout


def test_in_process_bench_prints_each_row_and_the_read_breakdown(tmp_path: Path) -> None:
    arguments = ("--quick", "--provider", "local")
    written = result_file(INPROCESS.name, tmp_path / "inprocess.txt", *arguments)
    assert "bench_inprocess.py" in written[0]
    for row in ("list_directory, 1,000 entries", "glob '**/*'", "read_file 4 KB", "ping"):
        line = next(line for line in written if row in line)
        assert re.search(r"\s\d+\.\d+x(\s|$)", line), line
    assert any(line.strip().startswith("the rest:") for line in written)


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


@pytest.mark.skipif(not LinuxSandboxProvider.available()[0], reason="no kernel sandbox here")
def test_patch_bench_times_the_sandbox_with_a_new_worker_and_a_kept_one_where_told(
    tmp_path: Path,
) -> None:
    """Both sandboxed rows give results checked byte for byte (the bench stops
    otherwise), the kept worker's over several rounds; the trees go under --workdir."""
    workdir = tmp_path / "trees"
    workdir.mkdir()
    arguments = ("--files", "30", "--rounds", "2", "--providers", "linux", "--workdir")
    written = result_file("bench_patch.py", tmp_path / "patch.txt", *arguments, str(workdir))
    for name in ("apply_patch, linux, new worker", "apply_patch, linux, worker kept"):
        row = next(line for line in written if line.startswith(name))
        assert re.search(r"\d+\.\d+ ms .* \d+\.\d+x$", row), row
    assert list(workdir.iterdir()) == []  # built there, and removed


def test_ab_bench_runs_both_trees_in_turns_and_reports_paired_ratios(tmp_path: Path) -> None:
    arguments = ("--baseline", "HEAD", "--rounds", "2", "--files", "30")
    written = result_file("bench_patch_ab.py", tmp_path / "patch_ab.txt", *arguments)
    assert len([line for line in written if line.startswith("round ")]) == 2
    assert any(
        re.match(r"wall: HEAD .* median of per-round ratios x\d+\.\d\d$", line) for line in written
    )
