"""The patch benchmark still runs end to end on a small corpus; timings are never asserted on."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "bench_patch.py"


def test_small_patch_bench_checks_results_and_writes_ratios_under_its_command(
    tmp_path: Path,
) -> None:
    output = tmp_path / "patch.txt"
    arguments = ["--files", "40", "--rounds", "1", "--providers", "local", "--output", str(output)]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    written = output.read_text(encoding="utf-8").splitlines()
    assert written[0].startswith("# command: ") and "--files 40" in written[0]
    row = next(line for line in written if line.startswith("apply_patch, local"))
    assert re.search(r"\d+\.\d+ ms .* \d+\.\d+x$", row)
    assert any(
        re.match(r"target apply_patch, local <= 2x git apply \(wall\): .* (PASS|MISS)$", line)
        for line in written
    )
