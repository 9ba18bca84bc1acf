"""``tinyagent-fs mcp`` as a third-party client sees it: the MCP Inspector CLI (Node).

The SDK client in test_mcp_server.py shares our Python stack; the Inspector is
the reference tool MCP client authors check their servers with, so a schema or
result shape it rejects fails here. It is installed with ``npm ci`` from
bench/node/package-lock.json (the versions of it and of everything it needs are
locked) into bench/node/node_modules, where bench/bench_mcp.py looks too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
NODE_PREFIX = REPO / "bench" / "node"
INSPECTOR_BIN = NODE_PREFIX / "node_modules" / ".bin" / "mcp-inspector"
INSTALLED_LOCK = NODE_PREFIX / "node_modules" / ".package-lock.json"


def inspector() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are needed for the MCP Inspector test (apt-get install nodejs)")
    lock = NODE_PREFIX / "package-lock.json"
    if not INSTALLED_LOCK.exists() or INSTALLED_LOCK.stat().st_mtime < lock.stat().st_mtime:
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--prefix", str(NODE_PREFIX)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"npm ci in {NODE_PREFIX} failed:\n{done.stderr[-4000:]}"
    return INSPECTOR_BIN


def inspect(root: Path, audit_dir: Path, *method: str) -> dict[str, Any]:
    server = [sys.executable, "-m", "tinyagent_fs", "mcp", "--root", str(root)]
    done = subprocess.run(
        [str(inspector()), "--cli", *server, "--policy", "auto-approve", "--method", *method],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO), "TINYAGENT_FS_AUDIT_DIR": str(audit_dir)},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_inspector_lists_titled_tools_with_destructive_hints_and_output_schemas(
    project: Path, isolated_audit_dir: Path
) -> None:
    tools = {t["name"]: t for t in inspect(project, isolated_audit_dir, "tools/list")["tools"]}
    assert all(tool["title"] and "outputSchema" in tool for tool in tools.values())
    assert tools["edit_file"]["annotations"]["destructiveHint"] is True
    assert tools["read_file"]["annotations"]["readOnlyHint"] is True
    assert '"null"' not in json.dumps([tool["inputSchema"] for tool in tools.values()])


def test_the_inspector_calls_a_tool_and_gets_structured_content(
    project: Path, isolated_audit_dir: Path
) -> None:
    call = ("tools/call", "--tool-name", "read_file")
    read = inspect(project, isolated_audit_dir, *call, "--tool-arg", "path=README.md")
    missing = inspect(project, isolated_audit_dir, *call, "--tool-arg", "path=gone.md")
    assert read["structuredContent"]["ok"] is True
    assert "# Sample" in read["content"][0]["text"]
    assert missing["isError"] is True
    assert missing["structuredContent"]["error"]["message"] == "gone.md does not exist"
