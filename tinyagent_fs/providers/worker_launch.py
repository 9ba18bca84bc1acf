"""What the sandbox worker runs and reads, and proof that what it runs is not writable.

The worker imports code before it confines itself, so anything on its import
path that a command could have written would run unconfined in the next worker
(a ``pyseccomp.py`` dropped into the project, a ``.pth`` in a project-local
venv). The worker is therefore started with the real interpreter binary, ``-I
-S`` (no current directory, no site, no ``PYTHON*`` variables, no ``.pth``),
and an import path of exactly the stdlib, the directory of ``tinyagent_fs``
and the directories holding its few dependencies. Start-up is refused when
any of those, or any module the worker ended up loading, lies under a root
that commands may write.

The worker uses this module too, before confining itself.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

from ..errors import ErrorCode, ToolError

SYSTEM_READ_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_READ_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/gitconfig",
    "/etc/mime.types",
    "/etc/locale.alias",
)
"""What the interpreter, the shell and common tools read; no other part of /etc."""
WORKER_DEPENDENCIES = ("pyseccomp", "charset_normalizer")
"""Third-party modules the worker's primitives import; they import only the stdlib."""

BOOTSTRAP = """\
import importlib, sys, types
module, fd, package = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.extend(sys.argv[4:])
bare = types.ModuleType("tinyagent_fs")
bare.__path__ = [package]
sys.modules["tinyagent_fs"] = bare
importlib.import_module("tinyagent_fs.providers." + module).main(fd)
"""
"""Loads ``tinyagent_fs`` as a bare package so the worker (and the settle guardian)
import only what they run, not the toolkit facade that the package's ``__init__``
pulls in. The dependency directories go after the stdlib, never in front of it."""


def interpreter() -> str:
    """The interpreter binary itself, not a venv's link to it (whose folder may be writable)."""
    return os.path.realpath(sys.executable)


def package_dir() -> str:
    return str(Path(__file__).resolve().parent.parent)


def dependency_dirs() -> list[str]:
    """The directory each dependency is imported from, and nothing else of ``sys.path``."""
    dirs = []
    for name in WORKER_DEPENDENCIES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin:
            continue
        origin = Path(spec.origin).resolve()
        dirs.append(str(origin.parent.parent if spec.submodule_search_locations else origin.parent))
    return list(dict.fromkeys(dirs))


def bare_argv(module: str, fd: int) -> list[str]:
    """Run ``tinyagent_fs.providers.<module>.main(fd)`` in a fresh isolated interpreter."""
    start = [interpreter(), "-I", "-S", "-c", BOOTSTRAP]
    return [*start, module, str(fd), package_dir(), *dependency_dirs()]


def worker_argv(fd: int) -> list[str]:
    return bare_argv("worker", fd)


def readable_paths() -> list[str]:
    """Read-only paths the worker and ordinary commands need to start and run."""
    paths = [*SYSTEM_READ_DIRS, *SYSTEM_READ_FILES]
    paths += [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    paths += [package_dir(), *dependency_dirs()]
    return list(dict.fromkeys(os.path.realpath(p) for p in paths if os.path.exists(p)))


def trusted_paths() -> list[str]:
    """Everything the worker is started from: interpreter, stdlib, package, dependencies."""
    stdlib = sysconfig.get_paths()
    return [
        interpreter(),
        stdlib["stdlib"],
        stdlib["platstdlib"],
        package_dir(),
        *dependency_dirs(),
    ]


def first_writable(paths: Iterable[str], writable_roots: Iterable[str]) -> tuple[str, str] | None:
    """The first of ``paths`` at or beneath one of ``writable_roots``, with that root."""
    roots = [os.path.realpath(root) for root in writable_roots]
    for path in paths:
        real = os.path.realpath(path)
        for root in roots:
            if real == root or real.startswith(root.rstrip("/") + "/"):
                return path, root
    return None


def loaded_module_files() -> list[str]:
    """The files of every module this process has imported (built-ins have none)."""
    files = {getattr(module, "__file__", None) for module in list(sys.modules.values())}
    return sorted(file for file in files if isinstance(file, str))


def refusal(path: str, root: str, what: str) -> str:
    """The start-up error naming the writable path: the reader must be able to act on it."""
    return (
        f"refusing to start the sandbox worker: {what} {path} lies under the writable root "
        f"{root}, so a command could replace code the worker runs before it is confined; "
        "install tinyagent_fs and its dependencies outside every writable root"
    )


def refuse_writable(paths: Iterable[str], writable_roots: Iterable[str], what: str) -> None:
    """SANDBOX_FAILURE naming the first of ``paths`` a command could write."""
    found = first_writable(paths, writable_roots)
    if found is not None:
        raise ToolError(
            ErrorCode.SANDBOX_FAILURE,
            refusal(*found, what),
            details={"path": found[0], "writable_root": found[1]},
        )
