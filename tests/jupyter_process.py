"""A real Jupyter Server or JupyterLab in a subprocess, for tests that talk to it over HTTP.

A subprocess rather than an in-process app: the server then runs exactly as a
person starts it (installed config, extension discovery, its own event loop),
and the test's event loop stays out of the server's way. Each server gets its
own config, data, runtime, settings and workspace directories, so tests never
read or write the user's.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STARTUP_TIMEOUT_S = 90.0


@dataclass
class JupyterProcess:
    process: subprocess.Popen[bytes]
    port: int
    token: str
    root: Path
    home: Path
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def url(self, path: str, params: dict[str, Any] | None = None, *, token: bool = True) -> str:
        query = dict(params or {})
        if token:
            query["token"] = self.token
        encoded = urllib.parse.urlencode(query, doseq=True)
        return self.base_url + path.lstrip("/") + (f"?{encoded}" if encoded else "")

    def get(
        self, path: str, params: dict[str, Any] | None = None, *, token: bool = True
    ) -> tuple[int, bytes]:
        """Status and body of a GET; redirects are not followed, so a login redirect shows."""
        request = urllib.request.Request(self.url(path, params, token=token))
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def redirect_location(self, path: str) -> str:
        """Where a GET of ``path`` (with the token) is redirected to; empty if it is not."""
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(self.url(path), timeout=30):
                return ""
        except urllib.error.HTTPError as error:
            return str(error.headers.get("Location", ""))

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        status, body = self.get(path, params)
        assert status == 200, f"GET {path} {params} -> {status}: {body[:500]!r}"
        return json.loads(body)

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def isolated_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The test's environment with every Jupyter user directory moved under ``home``."""
    env = dict(os.environ)
    for variable, name in (
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTERLAB_SETTINGS_DIR", "lab-settings"),
        ("JUPYTERLAB_WORKSPACES_DIR", "lab-workspaces"),
        ("IPYTHONDIR", "ipython"),
    ):
        path = home / name
        path.mkdir(parents=True, exist_ok=True)
        env[variable] = str(path)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def start_jupyter(
    app: str,
    root: Path,
    home: Path,
    *,
    extra_args: list[str] | None = None,
    env: dict[str, str] | None = None,
    python: str = sys.executable,
) -> JupyterProcess:
    """Start ``jupyter server`` or ``jupyter lab`` (``app``) and wait until it answers.

    ``python`` is the interpreter of the environment to run it from.
    """
    module = {"server": "jupyter_server", "lab": "jupyterlab"}[app]
    port = free_port()
    token = secrets.token_hex(16)
    log_path = home / f"jupyter-{app}-{port}.log"
    full_env = isolated_env(home, env)
    command = [
        python,
        "-m",
        module,
        "--no-browser",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        *(["--allow-root"] if os.geteuid() == 0 else []),
        *(extra_args or []),
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=full_env, cwd=root
        )
    server = JupyterProcess(process, port, token, root, home, log_path, full_env)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter {app} exited early:\n{server.log_tail()}")
        try:
            status, _ = server.get("api/status")
        except OSError:
            status = 0
        if status == 200:
            return server
        time.sleep(0.2)
    server.stop()
    raise RuntimeError(
        f"jupyter {app} gave no answer in {STARTUP_TIMEOUT_S}s:\n{server.log_tail()}"
    )
