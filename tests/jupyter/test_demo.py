"""The demo commands: the terminal walk-through and the JupyterLab launcher behind `make demo`."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def test_terminal_demo_walks_through_every_step(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tinyagent_fs.demo", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "+        raise ValueError" in out  # the edit's diff was shown for review
    assert "Edited src/inventory.py" in out
    assert "PATH_OUTSIDE_ROOT" in out and "DENIED_PATTERN" in out
    assert "edit_file       ok" in out  # the audit tail
    assert "raise ValueError" in (tmp_path / "demo/src/inventory.py").read_text()


def test_lab_demo_starts_jupyterlab_on_the_tour(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    project = tmp_path / "demo-project"
    env = {**os.environ, "HOME": str(tmp_path), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    lab = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "demo/lab.py"),
            "--no-browser",
            f"--port={port}",
            f"--project={project}",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        status = _wait_for(f"http://127.0.0.1:{port}/lab", timeout=60)
        assert status in (200, 302), status
        assert (project / "src/inventory.py").exists()
        settings = REPO / "build/demo-lab/settings/tinyagent-fs/plugin.jupyterlab-settings"
        assert json.loads(settings.read_text())["openOnStart"] is True
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        lab.wait(timeout=30)


def _wait_for(url: str, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        try:
            request = urllib.request.Request(url)
            opener = urllib.request.build_opener(_NoRedirect)
            with opener.open(request, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"JupyterLab did not answer on {url}") from None
            time.sleep(0.5)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None
