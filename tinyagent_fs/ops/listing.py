"""The directory tree a model sees: pre-order, capped, never into secrets or ``.git``."""

from __future__ import annotations

import operator
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
    start: str,
    depth: int,
    include_hidden: bool,
    limit: int,
    denied_patterns: list[str],
) -> dict[str, Any]:
    """Entries below ``path`` down to ``depth`` levels, in tree order.

    ``start`` is the listed directory relative to ``root`` as the guard resolved it
    ("." for the root): the rules are matched against it, while ``path`` is
    where the directory is read, which may be a descriptor path a provider pinned.

    Denied entries are hidden outright. Gitignored entries are shown, because a
    listing describes the tree, but flagged ``ignored`` and not expanded: a
    ``node_modules`` or ``.venv`` would otherwise spend the whole limit. ``total``
    keeps counting past the limit so the model knows how much it did not see, but
    that count stops at ``COUNT_FACTOR * limit`` entries and then is a lower bound.
    Kinds come from the directory entries themselves (``d_type``); only regular
    files are stat'ed, for their size.
    """
    if depth < 1:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "depth must be at least 1", "use depth=1")
    if limit < 1:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "limit must be at least 1", "use limit=200")
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise ToolError(ErrorCode.NOT_FOUND, f"{start} does not exist", "list its parent") from None
    if not stat_module.S_ISDIR(mode):
        raise ToolError(
            ErrorCode.NOT_A_DIRECTORY, f"{start} is not a directory", "use read_file for files"
        )
    start = "" if start == "." else start
    listing = _Listing(load_ignore_rules(root, denied_patterns), include_hidden, limit)
    listing.visit(path, start, depth, 1)
    omitted = listing.total - len(listing.entries)
    return {
        "entries": listing.entries,
        "total": listing.total,
        "omitted": omitted,
        "omitted_is_lower_bound": listing.stopped,
    }


class _Listing:
    """Accumulates entries until the limit, then only counts, then stops."""

    def __init__(self, rules: IgnoreRules, include_hidden: bool, limit: int) -> None:
        self.rules = rules
        self.include_hidden = include_hidden
        self.limit = limit
        self.cap = COUNT_FACTOR * limit
        self.entries: list[dict[str, Any]] = []
        self.total = 0
        self.stopped = False

    def visit(self, directory: str, rel_dir: str, depth_left: int, level: int) -> None:
        try:
            with os.scandir(directory) as scan:
                children = sorted(scan, key=_NAME)
        except OSError:
            return
        prefix = rel_dir + "/" if rel_dir else ""
        rules, entries = self.rules, self.entries
        for child in children:
            name = child.name
            if name.startswith(".") and not self.include_hidden:
                continue
            rel = prefix + name
            kind, size = _describe(child)
            if self._denied(rel, kind):
                continue
            is_dir = kind == "directory"
            ignored = name == GIT_DIR_NAME or rules.is_gitignored(rel, is_dir)
            if self.total >= self.cap:
                self.stopped = True
                return
            self.total += 1
            if len(entries) < self.limit:
                entries.append(
                    {
                        "path": rel,
                        "name": name,
                        "type": kind,
                        "size": size,
                        "depth": level,
                        "ignored": ignored,
                    }
                )
            if is_dir and depth_left > 1 and not ignored:
                self.visit(os.path.join(directory, name), rel, depth_left - 1, level + 1)
                if self.stopped:
                    return

    def _denied(self, rel: str, kind: str) -> bool:
        if kind == "symlink":
            return self.rules.is_denied(rel, False) or self.rules.is_denied(rel, True)
        return self.rules.is_denied(rel, kind == "directory")


_NAME = operator.attrgetter("name")


def _describe(entry: os.DirEntry[str]) -> tuple[str, int | None]:
    try:
        if entry.is_symlink():
            return "symlink", None
        if entry.is_dir(follow_symlinks=False):
            return "directory", None
        if entry.is_file(follow_symlinks=False):
            return "file", entry.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return "other", None
