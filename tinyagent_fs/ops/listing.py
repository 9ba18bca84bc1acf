"""The directory tree a model sees: pre-order, capped, never into secrets or ``.git``."""

from __future__ import annotations

import os
import stat as stat_module
from typing import Any

from ..errors import ErrorCode, ToolError
from .ignore import GIT_DIR_NAME, IgnoreRules, load_ignore_rules

COUNT_FACTOR = 100
"""Past the limit we keep counting, but only up to this many times the limit."""


def list_tree(
    root: str,
    path: str,
    depth: int,
    include_hidden: bool,
    limit: int,
    denied_patterns: list[str],
) -> dict[str, Any]:
    """Entries below ``path`` down to ``depth`` levels, in tree order.

    Denied entries are hidden outright. Gitignored entries are shown, because a
    listing describes the tree, but flagged ``ignored`` and not expanded: a
    ``node_modules`` or ``.venv`` would otherwise spend the whole limit. ``total``
    keeps counting past the limit so the model knows how much it did not see, but
    that count stops at ``COUNT_FACTOR * limit`` entries and then is a lower bound.
    """
    if depth < 1:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "depth must be at least 1", "use depth=1")
    if limit < 1:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "limit must be at least 1", "use limit=200")
    if not os.path.exists(path):
        raise ToolError(
            ErrorCode.NOT_FOUND, f"{_relative(root, path)} does not exist", "list its parent"
        )
    if not os.path.isdir(path):
        raise ToolError(
            ErrorCode.NOT_A_DIRECTORY,
            f"{_relative(root, path)} is not a directory",
            "use read_file for files",
        )
    listing = _Listing(root, load_ignore_rules(root, denied_patterns), include_hidden, limit)
    start = _relative(root, path)
    listing.visit(start if start != "." else "", depth, 1)
    omitted = listing.total - len(listing.entries)
    return {
        "entries": listing.entries,
        "total": listing.total,
        "omitted": omitted,
        "omitted_is_lower_bound": listing.stopped,
    }


class _Listing:
    """Accumulates entries until the limit, then only counts, then stops."""

    def __init__(self, root: str, rules: IgnoreRules, include_hidden: bool, limit: int) -> None:
        self.root = root
        self.rules = rules
        self.include_hidden = include_hidden
        self.limit = limit
        self.entries: list[dict[str, Any]] = []
        self.total = 0
        self.stopped = False

    def visit(self, rel_dir: str, depth_left: int, level: int) -> None:
        directory = os.path.join(self.root, rel_dir) if rel_dir else self.root
        try:
            with os.scandir(directory) as scan:
                children = sorted(scan, key=lambda entry: entry.name)
        except OSError:
            return
        prefix = rel_dir + "/" if rel_dir else ""
        for child in children:
            if self.stopped:
                return
            if child.name.startswith(".") and not self.include_hidden:
                continue
            rel = prefix + child.name
            kind, size = _describe(child)
            if self._denied(rel, kind):
                continue
            ignored = child.name == GIT_DIR_NAME or self.rules.is_gitignored(
                rel, kind == "directory"
            )
            self._add(rel, child.name, kind, size, level, ignored)
            if kind == "directory" and depth_left > 1 and not ignored:
                self.visit(rel, depth_left - 1, level + 1)

    def _denied(self, rel: str, kind: str) -> bool:
        if kind == "symlink":
            return self.rules.is_denied(rel, False) or self.rules.is_denied(rel, True)
        return self.rules.is_denied(rel, kind == "directory")

    def _add(
        self, rel: str, name: str, kind: str, size: int | None, level: int, ignored: bool
    ) -> None:
        if self.total >= COUNT_FACTOR * self.limit:
            self.stopped = True
            return
        self.total += 1
        if len(self.entries) < self.limit:
            self.entries.append(
                {
                    "path": rel,
                    "name": name,
                    "type": kind,
                    "size": size,
                    "depth": level,
                    "ignored": ignored,
                }
            )


def _describe(entry: os.DirEntry[str]) -> tuple[str, int | None]:
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return "other", None
    if stat_module.S_ISLNK(info.st_mode):
        return "symlink", None
    if stat_module.S_ISDIR(info.st_mode):
        return "directory", None
    if stat_module.S_ISREG(info.st_mode):
        return "file", info.st_size
    return "other", None


def _relative(root: str, path: str) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")
