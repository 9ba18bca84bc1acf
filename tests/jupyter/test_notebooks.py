"""The demo notebooks run top to bottom, offline, with no widget frontend (nbval).

nbval runs in a child pytest so that ``make test`` (whose testpaths is
``tests``) covers the notebooks without collecting ``.ipynb`` files itself.
The child gets the environment CI gives a notebook: the auto-approve policy,
private audit and journal directories, and no model API keys, so the cells
that call a real model skip themselves.

The notebooks are stored clean (no outputs, no prompt numbers), so a person
opening the tour sees nothing that has not run. The outputs nbval compares
(cells marked ``# NBVAL_CHECK_OUTPUT``) live in ``notebook_outputs.json`` and are
put into copies of the notebooks that nbval runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.jupyter

NOTEBOOKS = Path(__file__).resolve().parent.parent.parent / "notebooks"
EXPECTED_OUTPUTS = Path(__file__).resolve().parent.parent / "notebook_outputs.json"
CHECKED = "# NBVAL_CHECK_OUTPUT"


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def expected_outputs() -> dict[str, dict[str, str]]:
    """Per notebook, per checked cell id, the text the cell prints."""
    return json.loads(EXPECTED_OUTPUTS.read_text())


def test_notebooks_are_stored_clean_and_every_checked_cell_has_its_output() -> None:
    assert [p.name for p in notebook_paths()] == ["01_tour.ipynb", "02_agent_loop.ipynb"]
    expected = expected_outputs()
    assert sorted(expected) == [p.name for p in notebook_paths()]
    for path in notebook_paths():
        notebook = nbformat.read(path, as_version=4)
        code = [c for c in notebook.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code), path.name
        assert all("execution" not in c.metadata for c in code), path.name
        assert "widgets" not in notebook.metadata
        # What ipykernel reports: JupyterLab rewrites any other kernelspec on opening, and
        # the notebook opens marked as changed.
        assert notebook.metadata.kernelspec == {
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
            "name": "python3",
        }
        checked = {c.id for c in code if CHECKED in c.source}
        assert checked, f"{path.name} checks no output"
        assert set(expected[path.name]) == checked, f"{path.name}: expected outputs out of date"


def copies_with_expected_outputs(folder: Path) -> list[Path]:
    """The notebooks as nbval reads them: each checked cell holds the output it must print."""
    folder.mkdir()
    expected = expected_outputs()
    copies = []
    for path in notebook_paths():
        notebook = nbformat.read(path, as_version=4)
        for number, cell in enumerate(notebook.cells, 1):
            text = expected[path.name].get(cell.get("id", ""))
            if text is not None:  # nbval compares only cells that ran and have an output
                cell.execution_count = number
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        copy = folder / path.name
        nbformat.write(notebook, copy)
        copies.append(copy)
    return copies


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
        *map(str, copies_with_expected_outputs(tmp_path / "notebooks")),
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
