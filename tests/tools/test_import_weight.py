"""What an import loads: the package face and the audit log stay light.

The Jupyter server extension and the MCP server import ``tinyagent_fs.audit.log``
and the version; neither may pull in the tools, the providers and the hooks
behind the package face (it once loaded 71 of 119 modules).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("tinyagent_fs.tools", "tinyagent_fs.providers", "tinyagent_fs.hooks", "tinyagent_fs.ui")


def loaded_by(statement: str) -> list[str]:
    script = (
        f"import json, sys\n{statement}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('tinyagent_fs'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    "statement",
    ["import tinyagent_fs", "import tinyagent_fs.audit.log", "import tinyagent_fs.server"],
)
def test_light_imports_load_no_tools_providers_hooks_or_widgets(statement: str) -> None:
    heavy = [m for m in loaded_by(statement) if m.startswith(HEAVY)]
    assert not heavy, f"{statement} loaded {heavy}"


def test_the_package_face_loads_its_names_on_first_use() -> None:
    assert loaded_by("import tinyagent_fs") == ["tinyagent_fs", "tinyagent_fs._version"]
    names = loaded_by("from tinyagent_fs import FileTools, ToolResult, __version__")
    assert "tinyagent_fs.tools.facade" in names
    import tinyagent_fs

    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = tinyagent_fs.nothing  # type: ignore[attr-defined]


def test_the_guards_security_tests_need_no_widget_library() -> None:
    """They run where Jupyter is not installed (``pip install tinyagent-fs`` alone)."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, tests.escapes.test_escape_guard\n"
            "widgets = ('ipywidgets', 'anywidget', 'traitlets')\n"
            "print(sorted(m for m in widgets if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "[]", done.stdout
