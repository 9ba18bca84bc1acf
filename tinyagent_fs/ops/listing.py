"""The directory tree a model sees: pre-order, capped, never into secrets or ``.git``."""

from __future__ import annotations

import bisect
import os
from typing import Any

from ..errors import ErrorCode, ToolError
from .dir_entries import DIRECTORY, FILE, SYMLINK, read_entries
from .ignore import (
    DIRECTORY_FLAGS,
    GIT_DIR_NAME,
    IgnoreRules,
    load_ignore_rules,
    open_subdirectory,
)
from .packed_paths import pack_runs

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
    needs no stat at all, and a directory unchanged since it was last read is not
    read again (``dir_entries``); with ``sizes`` regular files are stat'ed for their size,
    by name beneath their directory's descriptor (most of a big listing's cost).
    Subdirectories are opened beneath it without following links.

    The entries come as columns: ``paths`` (relative to ``root``, packed: see
    ``packed_paths``), ``types`` (one string, a letter per entry: ``FILE`` and the
    rest), ``ignored`` (the shown paths that are flagged) and, with ``sizes``,
    ``sizes`` (None for anything but a regular file).
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
        "paths": pack_runs(listing.runs),
        "types": "".join(listing.types),
        "ignored": listing.ignored,
        "total": listing.total,
        "omitted": listing.total - len(listing.types),
        "omitted_is_lower_bound": listing.stopped,
    }
    if sizes:
        result["sizes"] = listing.sizes
    return result


class _Listing:
    """Accumulates entries as parallel columns until the limit, then only counts, then stops.

    Columns, not one dict per entry: a listing of thousands of entries then
    crosses the sandbox wire as one packed blob and one string of letters. A
    directory is filtered as a whole and its entries are added in runs (up to
    each subdirectory that is expanded), so the work per entry is a few
    list operations rather than a pass through the loop body.
    """

    def __init__(self, rules: IgnoreRules, include_hidden: bool, limit: int, sizes: bool) -> None:
        self.rules = rules
        self.with_sizes = sizes
        self.include_hidden = include_hidden
        self.limit = limit
        self.cap = COUNT_FACTOR * limit
        self.runs: list[tuple[str, list[str]]] = []
        """Names shown, in runs that share a directory: (its path and a slash, names)."""
        self.types: list[str] = []
        """One kind letter per name shown: its length is how many are shown."""
        self.ignored: list[str] = []
        self.sizes: list[int | None] = []
        self.total = 0
        self.stopped = False

    def visit(self, fd: int, rel_dir: str, depth_left: int) -> None:
        prefix = rel_dir + "/" if rel_dir else ""
        names, kinds = self._shown_entries(fd, prefix)
        ignored = self._ignored(prefix, names, kinds)
        start = 0
        if depth_left > 1:
            for index, kind in enumerate(kinds):
                if kind is not DIRECTORY or names[index] in ignored:
                    continue
                self._add(fd, prefix, names, kinds, ignored, start, index + 1)
                start = index + 1
                if self.stopped:
                    return
                subdirectory = open_subdirectory(fd, names[index])
                if subdirectory is None:
                    continue
                try:
                    self.visit(subdirectory, prefix + names[index], depth_left - 1)
                finally:
                    os.close(subdirectory)
                if self.stopped:
                    return
        self._add(fd, prefix, names, kinds, ignored, start, len(names))

    def _shown_entries(self, fd: int, prefix: str) -> tuple[list[str], list[str]]:
        """The names of a directory's entries a listing may show, and their kinds.

        Hidden entries go unless asked for; denied ones always go, a link when
        its name is denied for files or for directories.
        """
        names, kinds = read_entries(fd)
        if not self.include_hidden:
            # Sorted by code point, the names that start with "." are one run: those
            # from "." up to "/" (the next code point, which no name contains).
            first, end = bisect.bisect_left(names, "."), bisect.bisect_left(names, "/")
            del names[first:end], kinds[first:end]
        suspects = self.rules.denial_candidates(names)
        if suspects is None or suspects:
            is_denied = self.rules.is_denied
            kept = [
                index
                for index, (name, kind) in enumerate(zip(names, kinds, strict=True))
                if (suspects is not None and name not in suspects)
                or not (
                    is_denied(prefix + name, kind is DIRECTORY)
                    or (kind is SYMLINK and is_denied(prefix + name, True))
                )
            ]
            if len(kept) < len(names):
                names = [names[index] for index in kept]
                kinds = [kinds[index] for index in kept]
        return names, kinds

    def _ignored(self, prefix: str, names: list[str], kinds: list[str]) -> set[str]:
        """Names shown but flagged and never expanded: ``.git``, and what a
        ``.gitignore`` matches."""
        ignored = {GIT_DIR_NAME} if GIT_DIR_NAME in names else set()
        if self.rules.gitignores_apply(prefix.removesuffix("/")):
            is_gitignored = self.rules.is_gitignored
            ignored.update(
                name
                for name, kind in zip(names, kinds, strict=True)
                if is_gitignored(prefix + name, kind is DIRECTORY)
            )
        return ignored

    def _add(
        self,
        fd: int,
        prefix: str,
        names: list[str],
        kinds: list[str],
        ignored: set[str],
        start: int,
        end: int,
    ) -> None:
        """Count ``[start, end)`` of the entries of the directory open on ``fd``, and
        show what fits the limit."""
        room = self.cap - self.total
        if end - start > room:
            end = start + room
            self.stopped = True
        self.total += end - start
        shown = min(end, start + self.limit - len(self.types))
        if shown <= start:
            return
        self.runs.append((prefix, names[start:shown]))
        self.types += kinds[start:shown]
        if ignored:
            self.ignored += [prefix + name for name in names[start:shown] if name in ignored]
        if self.with_sizes:
            self.sizes += [
                _size(fd, name) if kind is FILE else None
                for name, kind in zip(names[start:shown], kinds[start:shown], strict=True)
            ]


def _size(fd: int, name: str) -> int | None:
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False).st_size
    except OSError:
        return None  # gone since it was listed
