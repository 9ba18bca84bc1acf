"""The demo notebooks run top to bottom, offline, with no widget frontend (nbval).

nbval runs in a child pytest so that ``make test`` (whose testpaths is
``tests``) covers the notebooks without collecting ``.ipynb`` files itself.
The child gets the environment CI gives a notebook: the auto-approve policy,
private audit and journal directories, and no model API keys, so the cells
that call a real model skip themselves.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
CHECKED = "# NBVAL_CHECK_OUTPUT"


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def test_every_notebook_checks_some_output_and_stores_no_widget_state() -> None:
    assert [p.name for p in notebook_paths()] == ["01_tour.ipynb", "02_agent_loop.ipynb"]
    for path in notebook_paths():
        notebook = nbformat.read(path, as_version=4)
        checked = [c for c in notebook.cells if c.cell_type == "code" and CHECKED in c.source]
        assert checked, f"{path.name} checks no output"
        assert all(c.outputs for c in checked), f"{path.name} lacks an expected output"
        assert "widgets" not in notebook.metadata


def test_notebooks_run_under_nbval_with_the_non_interactive_policy(tmp_path: Path) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TINYAGENT_FS_", "JPY_", "PYTEST_"))
        and not key.endswith(("_API_KEY", "_API_TOKEN"))
    }
    env.update(
        TINYAGENT_FS_POLICY="auto-approve",
        TINYAGENT_FS_AUDIT_DIR=str(tmp_path / "audit"),
        TINYAGENT_FS_JOURNAL_DIR=str(tmp_path / "journal"),
    )
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--nbval-lax",
        "--nbval-current-env",
        "-p",
        "no:cacheprovider",
        "-q",
        *map(str, notebook_paths()),
    ]
    done = subprocess.run(
        command,
        cwd=NOTEBOOKS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    cells = sum(
        sum(1 for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code")
        for p in notebook_paths()
    )
    assert re.search(rf"\b{cells} passed\b", report), report
