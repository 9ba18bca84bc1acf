"""The primitives a provider runs, by name: the whole sandbox boundary in one table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .command import run_command
from .commit import commit_changes, recover_commit
from .files import read_bytes, read_files, stat_path, stat_paths, walk_all
from .listing import list_tree
from .search import glob_files, grep
from .window import read_window


def ping() -> None:
    """Do nothing: one request and its answer cost what every primitive pays on top of
    its own work (the floor of a provider hop, for benchmarks and health checks)."""


OPERATIONS: dict[str, Callable[..., Any]] = {
    "read_bytes": read_bytes,
    "read_files": read_files,
    "read_window": read_window,
    "stat_path": stat_path,
    "stat_paths": stat_paths,
    "walk_all": walk_all,
    "list_tree": list_tree,
    "glob_files": glob_files,
    "grep": grep,
    "commit_changes": commit_changes,
    "recover_commit": recover_commit,
    "run_command": run_command,
    "ping": ping,
}
