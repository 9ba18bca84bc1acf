"""Finding the person's running Jupyter server, and talking to it with its token.

Jupyter Server writes ``jpserver-<pid>.json`` (url, token, root_dir, pid) into
its runtime directory; this reads those files the way ``jupyter_server``'s
``list_running_servers`` does, without importing Jupyter, so a plain script or
``tinyagent-fs mcp`` can reach the server. The token travels only in the
``Authorization`` header and is never part of a URL, a repr or a message.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOKEN_ENV = "TINYAGENT_FS_JUPYTER_TOKEN"
URL_ENV = "TINYAGENT_FS_JUPYTER_URL"


class JupyterUnreachable(Exception):
    """No running Jupyter server could be found or reached; the message says why."""


@dataclass(frozen=True)
class JupyterServer:
    """A server's base URL (ending in ``/``) and its token (kept out of reprs)."""

    url: str
    token: str = field(default="", repr=False)
    root_dir: str = ""

    def request(
        self, method: str, path: str, body: Any = None, *, timeout_s: float = 30.0
    ) -> tuple[int, Any]:
        """Status and decoded JSON body of one request to ``<url><path>``."""
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        request = urllib.request.Request(self.url + path.lstrip("/"), data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return response.status, _json(response.read())
        except urllib.error.HTTPError as error:
            return error.code, _json(error.read())
        except (OSError, ValueError) as exc:
            raise JupyterUnreachable(
                f"the Jupyter server at {self.url} did not answer: {exc}"
            ) from None


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError:
        return {"message": raw[:200].decode("utf-8", "replace")}


def runtime_dir() -> Path:
    """Jupyter's runtime directory, as ``jupyter_core.paths.jupyter_runtime_dir`` finds it."""
    env = os.environ
    if env.get("JUPYTER_RUNTIME_DIR"):
        return Path(env["JUPYTER_RUNTIME_DIR"])
    if env.get("JUPYTER_DATA_DIR"):
        return Path(env["JUPYTER_DATA_DIR"]) / "runtime"
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Jupyter" / "runtime"
    if sys.platform == "win32":
        return Path(env.get("APPDATA") or home / ".jupyter" / "data") / "jupyter" / "runtime"
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    return data / "jupyter" / "runtime"


def running_servers(directory: Path | None = None) -> list[dict[str, Any]]:
    """The server info files whose process still runs, newest first."""
    directory = directory or runtime_dir()
    try:
        files = sorted(
            directory.glob("jpserver-*.json"), key=lambda p: p.stat().st_mtime, reverse=True
        )
    except OSError:
        return []
    found = []
    for path in files:
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # being written, or not ours to read
        if isinstance(info, dict) and _alive(info.get("pid")) and info.get("url"):
            found.append(info)
    return found


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def find_server(
    project: Path | str | None = None, *, url: str | None = None, token: str | None = None
) -> JupyterServer:
    """The server to ask: the one given (``url`` or ``$TINYAGENT_FS_JUPYTER_URL``, token
    from ``token`` or ``$TINYAGENT_FS_JUPYTER_TOKEN``), else a running one, preferring the
    one whose root folder holds ``project``."""
    url = url or os.environ.get(URL_ENV)
    if url:
        if "?" in url or "#" in url:
            raise JupyterUnreachable(
                "give the Jupyter server's URL without a query (the token goes in "
                f"${TOKEN_ENV}, never in a URL)"
            )
        token = token if token is not None else os.environ.get(TOKEN_ENV, "")
        return JupyterServer(url.rstrip("/") + "/", token)
    servers = [info for info in running_servers() if not info.get("sock")]
    if not servers:
        raise JupyterUnreachable(
            f"no running Jupyter server was found in {runtime_dir()}; start JupyterLab "
            f"(jupyter lab) or give its URL (${URL_ENV}) and token (${TOKEN_ENV})"
        )
    if project is not None:
        here = Path(project).resolve()
        for info in servers:
            root = Path(str(info.get("root_dir") or "/")).expanduser().resolve()
            if here == root or root in here.parents:
                return _from_info(info)
    return _from_info(servers[0])


def _from_info(info: dict[str, Any]) -> JupyterServer:
    url = str(info["url"]).rstrip("/") + "/"  # the connection URL, base_url included
    return JupyterServer(url, str(info.get("token") or ""), str(info.get("root_dir") or ""))
