"""Every handler the extension registers refuses a request the server has not authenticated.

The handlers are enumerated from a real ServerApp's routing table, so a handler
added later without authentication fails here instead of being forgotten.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jupyter_server.auth.decorator as auth_decorator
import pytest
import tornado.web
from jupyter_server.serverapp import ServerApp
from tornado.routing import PathMatches, Router

from tests.jupyter_process import JupyterProcess, isolated_env, start_jupyter

pytestmark = pytest.mark.jupyter

PREFIX = "/tinyagent-fs"
HTTP_METHODS = ("get", "head", "post", "put", "patch", "delete", "options")
AUTH_FILES = {
    os.path.normcase(tornado.web.__file__),
    os.path.normcase(auth_decorator.__file__),
}


@pytest.fixture(scope="module")
def extension_routes(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, type]]:
    """(pattern, handler class) of every route under /tinyagent-fs in an initialised ServerApp."""
    home = tmp_path_factory.mktemp("auth-home")
    with pytest.MonkeyPatch.context() as patch:
        for key, value in isolated_env(home).items():
            if key.startswith(("JUPYTER", "IPYTHON")):
                patch.setenv(key, value)
        app = ServerApp()
        app.initialize(
            argv=[f"--ServerApp.root_dir={home}", "--ServerApp.port=0", "--allow-root"],
            new_httpserver=False,
        )
    routes = [
        (pattern, handler)
        for pattern, handler in _walk(app.web_app.default_router)
        if pattern.startswith(PREFIX)
    ]
    return routes


def _walk(router: Router) -> Iterator[tuple[str, type]]:
    for rule in router.rules:  # type: ignore[attr-defined]
        if isinstance(rule.target, Router):
            yield from _walk(rule.target)
        elif isinstance(rule.matcher, PathMatches) and isinstance(rule.target, type):
            yield rule.matcher.regex.pattern.rstrip("$"), rule.target


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProcess]:
    root = tmp_path_factory.mktemp("auth-root")
    home = tmp_path_factory.mktemp("auth-server-home")
    audit = tmp_path_factory.mktemp("auth-audit")
    process = start_jupyter("server", root, home, env={"TINYAGENT_FS_AUDIT_DIR": str(audit)})
    yield process
    process.stop()


def _example_path(pattern: str) -> str:
    return re.sub(r"\([^)]*\)", "0123abcd", pattern)


def _is_guarded(method: Any) -> bool:
    """Whether ``method`` is wrapped by tornado's ``authenticated`` or Jupyter's ``authorized``."""
    while method is not None:
        code = getattr(method, "__code__", None)
        if code is not None and os.path.normcase(code.co_filename) in AUTH_FILES:
            return True
        method = getattr(method, "__wrapped__", None)
    return False


def test_the_extension_registers_its_routes(extension_routes: list[tuple[str, type]]) -> None:
    patterns = {pattern for pattern, _ in extension_routes}
    assert {f"{PREFIX}/audit", f"{PREFIX}/audit/([^/]+)", f"{PREFIX}/sessions"} <= patterns


def test_every_handler_method_is_authenticated(extension_routes: list[tuple[str, type]]) -> None:
    unguarded = []
    for pattern, handler in extension_routes:
        for name in HTTP_METHODS:
            method = getattr(handler, name, None)
            inherited = getattr(tornado.web.RequestHandler, name, None)
            if method is None or method is inherited:
                continue
            if not _is_guarded(method):
                unguarded.append(f"{handler.__name__}.{name} ({pattern})")
    assert not unguarded, f"handlers without authentication: {unguarded}"


def test_requests_without_a_valid_token_are_refused(
    server: JupyterProcess, extension_routes: list[tuple[str, type]]
) -> None:
    assert extension_routes
    for pattern, _ in extension_routes:
        path = _example_path(pattern)
        status, _ = server.get(path, token=False)
        assert status in (401, 403), f"{path} answered {status} without a token"
        status, _ = server.get(path + "?token=wrong", token=False)
        assert status in (401, 403), f"{path} answered {status} to a wrong token"
        status, _ = server.get(path)
        assert status in (200, 404), f"{path} answered {status} with the token"


def test_refused_even_where_the_server_allows_unauthenticated_access(
    tmp_path: Path, extension_routes: list[tuple[str, type]]
) -> None:
    """The guard is the handlers' own: it holds when the server-wide default does not."""
    process = start_jupyter(
        "server",
        tmp_path,
        tmp_path / "home",
        extra_args=["--ServerApp.allow_unauthenticated_access=True"],
    )
    try:
        for pattern, _ in extension_routes:
            status, _ = process.get(_example_path(pattern), token=False)
            assert status in (401, 403), f"{pattern} answered {status} without a token"
    finally:
        process.stop()
