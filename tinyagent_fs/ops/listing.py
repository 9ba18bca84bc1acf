"""The directory tree a model sees: pre-order, capped, never into secrets or ``.git``."""

from __future__ import annotations

import os
from typing import Any

from ..errors import ErrorCode, ToolError
from .ignore import (
    DIRECTORY_FLAGS,
    GIT_DIR_NAME,
    IgnoreRules,
    load_ignore_rules,
    open_subdirectory,
    sorted_entries,
)

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
    sizes: bool = False,
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
    Kinds come from the directory entries themselves (``d_type``), so a listing
    needs no stat at all; with ``sizes`` regular files are stat'ed for their size,
    by name beneath their directory's descriptor (most of a big listing's cost).
    Subdirectories are opened beneath it without following links.
    """
    if depth < 1:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "depth must be at least 1", "use depth=1")
    if limit < 1:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "limit must be at least 1", "use limit=200")
    try:
        # O_NOFOLLOW: the guard resolved every link, so a link here was swapped in since.
        fd = os.open(path, DIRECTORY_FLAGS | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise ToolError(ErrorCode.NOT_FOUND, f"{start} does not exist", "list its parent") from None
    except NotADirectoryError:
        if os.path.islink(path):
            raise ToolError(
                ErrorCode.SYMLINK_ESCAPE,
                f"{start} is a symlink now; it was not when the path was checked",
                "check the path again; nothing was listed",
                security_violation=True,
            ) from None
        raise ToolError(
            ErrorCode.NOT_A_DIRECTORY, f"{start} is not a directory", "use read_file for files"
        ) from None
    try:
        rules = load_ignore_rules(root, denied_patterns)
        listing = _Listing(rules, include_hidden, limit, sizes)
        listing.visit(fd, "" if start == "." else start, depth)
    finally:
        os.close(fd)
    result: dict[str, Any] = {
        "paths": listing.paths,
        "types": listing.types,
        "ignored": listing.ignored,
        "total": listing.total,
        "omitted": listing.total - len(listing.paths),
        "omitted_is_lower_bound": listing.stopped,
    }
    if sizes:
        result["sizes"] = listing.sizes
    return result


class _Listing:
    """Accumulates entries as parallel columns until the limit, then only counts, then stops.

    Columns, not one dict per entry: a listing of thousands of entries then
    crosses the sandbox wire and the MCP answer as a few flat JSON arrays.
    """

    def __init__(self, rules: IgnoreRules, include_hidden: bool, limit: int, sizes: bool) -> None:
        self.rules = rules
        self.with_sizes = sizes
        self.include_hidden = include_hidden
        self.limit = limit
        self.cap = COUNT_FACTOR * limit
        self.paths: list[str] = []
        self.types: list[str] = []
        self.ignored: list[str] = []
        self.sizes: list[int | None] = []
        self.total = 0
        self.stopped = False

    def visit(self, fd: int, rel_dir: str, depth_left: int) -> None:
        prefix = rel_dir + "/" if rel_dir else ""
        rules, paths, types, limit = self.rules, self.paths, self.types, self.limit
        is_denied = rules.is_denied
        skip_hidden = not self.include_hidden
        gitignores = rules.gitignores_apply(rel_dir)
        descend = depth_left > 1
        children = sorted_entries(fd)
        suspects = rules.denial_candidates([child.name for child in children])
        for child in children:
            name = child.name
            if skip_hidden and name[0] == ".":
                continue
            rel = prefix + name
            kind = _kind(child)
            is_dir = kind is DIRECTORY
            if (suspects is None or name in suspects) and (
                is_denied(rel, is_dir) or (kind is SYMLINK and is_denied(rel, True))
            ):
                continue
            ignored = name == GIT_DIR_NAME or (gitignores and rules.is_gitignored(rel, is_dir))
            if self.total >= self.cap:
                self.stopped = True
                return
            self.total += 1
            if len(paths) < limit:
                paths.append(rel)
                types.append(kind)
                if ignored:
                    self.ignored.append(rel)
                if self.with_sizes:
                    self.sizes.append(_size(child) if kind is FILE else None)
            if is_dir and descend and not ignored:
                subdirectory = open_subdirectory(fd, name)
                if subdirectory is None:
                    continue
                try:
                    self.visit(subdirectory, rel, depth_left - 1)
                finally:
                    os.close(subdirectory)
                if self.stopped:
                    return


FILE, DIRECTORY, SYMLINK, OTHER = "file", "directory", "symlink", "other"


def _kind(entry: os.DirEntry[str]) -> str:
    """From the entry's ``d_type``; ``follow_symlinks=False`` keeps a link a link."""
    try:
        if entry.is_file(follow_symlinks=False):
            return FILE
        if entry.is_dir(follow_symlinks=False):
            return DIRECTORY
        if entry.is_symlink():
            return SYMLINK
    except OSError:
        pass
    return OTHER


def _size(entry: os.DirEntry[str]) -> int | None:
    try:
        return entry.stat(follow_symlinks=False).st_size
    except OSError:
        return None  # gone since it was listed
