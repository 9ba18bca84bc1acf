"""Which paths a listing or a search skips: denied patterns, ``.tinyagentignore``, ``.gitignore``.

Every decision is the one gitignore engine's (``gitignore.py``), the guard's too, so a
listing, a glob and both grep backends hide exactly what the guard refuses. Patterns
are matched the way git matches them: against the path itself, with pruned
directories taking their contents with them. Nested ``.gitignore`` files are read
lazily, the first time the walk reaches their directory, and only by the toolkit
(ripgrep is handed the files to search, never an ignore file).
"""

from __future__ import annotations

import functools
import operator
import os
from collections.abc import Iterable, Iterator

from .._runtime.durable import DIRECTORY_FLAGS
from ..errors import ErrorCode, ToolError
from ..guard.config_file import (
    MAX_CONFIG_FILE_BYTES,
    UnsafeConfigFile,
    config_lines,
    read_config_file,
)
from ..guard.gitignore import (
    MAX_MATCH_COST,
    CostlyPatterns,
    PatternList,
    Screen,
    name_key,
    root_folds_case,
)
from ..policy import IGNORE_FILE_NAME

GIT_DIR_NAME = ".git"
GITIGNORE_NAME = ".gitignore"

_COMPILED_MAX_SETS = 64
_COMPILED_MAX_CHARS = 64 * 1024
"""Rule sets kept compiled by content; larger ignore files are compiled on every use."""


def compiled_rules(lines: Iterable[str], source: str, *, fold: bool = False) -> PatternList:
    """The ``PatternList`` of these lines, compiled once per process while they stay the same.

    Keyed by the lines themselves, not a file's stat signature: an ignore file a
    command rewrites within one timestamp tick is still seen as it is now. A
    ``PatternList`` never changes after it is built, so sharing one (across threads
    too) is safe.
    """
    key = tuple(lines)
    if sum(map(len, key)) > _COMPILED_MAX_CHARS:
        return PatternList(key, source, fold=fold)
    return _cached_rules(source, fold, key)


@functools.lru_cache(maxsize=_COMPILED_MAX_SETS)
def _cached_rules(source: str, fold: bool, lines: tuple[str, ...]) -> PatternList:
    return PatternList(lines, source, fold=fold)


def _gitignore_lines(path: str) -> list[str] | None:
    """A ``.gitignore``'s lines; one that is a symlink, a FIFO or too large is skipped
    (as git skips a symlinked one): it only ever hides files from searches."""
    try:
        data = read_config_file(path)
    except UnsafeConfigFile:
        return None
    return None if data is None else config_lines(data)


def _denial_lines(root: str) -> list[str]:
    """The root's ``.tinyagentignore``; one the toolkit will not read fails closed."""
    try:
        data = read_config_file(os.path.join(root, IGNORE_FILE_NAME))
    except UnsafeConfigFile as exc:
        raise ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"{IGNORE_FILE_NAME} in the root is not read: {exc}.",
            f"Nothing is listed or searched until {IGNORE_FILE_NAME} is a regular file "
            f"under {MAX_CONFIG_FILE_BYTES} bytes (or is removed).",
        ) from exc
    return [] if data is None else config_lines(data)


def _denial_rules(root: str, fold: bool) -> PatternList:
    """The root's ``.tinyagentignore`` compiled; one too costly to match fails closed."""
    try:
        return compiled_rules(_denial_lines(root), IGNORE_FILE_NAME, fold=fold)
    except CostlyPatterns as exc:
        raise ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"{IGNORE_FILE_NAME} in the root is not used: {exc}.",
            f"Nothing is listed or searched until {IGNORE_FILE_NAME} has fewer lines with "
            "several wildcards (a person must edit it).",
            details={"cause": "ignore_file_too_costly"},
        ) from None


class IgnoreRules:
    """Everything a walk below ``root`` must skip, asked one path (relative to root) at a time.

    Denials (the policy's patterns and the root's ``.tinyagentignore``) hide a path
    everywhere; ``.gitignore`` files only hide it from searches. The two kinds of
    denial are separate rule sets, each asked on its own: a ``!`` line in
    ``.tinyagentignore`` can re-include what that file excluded, never what the
    policy denies. The caller is expected to prune: a path below an ignored
    directory is never asked about. ``case_insensitive`` None asks the root's
    file system, as the guard does.
    """

    def __init__(
        self, root: str, denied_patterns: Iterable[str], case_insensitive: bool | None = None
    ) -> None:
        self.root = root
        self.fold = root_folds_case(root) if case_insensitive is None else case_insensitive
        self.denial_sets = (
            compiled_rules(denied_patterns, "the sandbox policy", fold=self.fold),
            _denial_rules(root, self.fold),
        )
        self._gitignores: dict[str, PatternList | None] = {}
        self._chains: dict[str, list[tuple[int, PatternList]]] = {}
        # Without a '!' line in either set, "denied" is "some line matches": one
        # screen over both sets answers it per path.
        self._screenable = all(s.screenable for s in self.denial_sets)
        self._fused = self._screenable and not any(s.has_negation for s in self.denial_sets)
        self._denial_screens = {
            is_dir: Screen(
                p for s in self.denial_sets for p in s.patterns if is_dir or not p.dir_only
            )
            for is_dir in (False, True)
        }

    @property
    def denials_follow_folders(self) -> bool:
        """Whether renaming a folder can lift a denial below it: a line with a ``/`` in it
        decides by the folders' names, a ``!`` line may re-include under another name."""
        return any(not p.basename or p.negated for s in self.denial_sets for p in s.patterns)

    def is_denied(self, rel_path: str, is_dir: bool) -> bool:
        if self._fused:
            return self._denial_screens[is_dir].matches(name_key(rel_path, self.fold))
        return any(rules.decide(rel_path, is_dir) is True for rules in self.denial_sets)

    def denial_candidates(self, names: Iterable[str]) -> set[str] | None:
        """Of the names in one directory, those a denial may hide (``is_denied`` decides);
        None when names alone cannot tell, so every entry must be asked.

        In a big directory most names match no denial line at all, and the
        screen finds the few that may without a Python call per name.
        """
        screen = self._denial_screens[True]  # a directory is asked about every line
        if not self._screenable or screen.paths is not None:
            return None
        names = list(names)
        if not self.fold and all(map(str.isascii, names)):
            return screen.names_matched(names)
        spellings: dict[str, list[str]] = {}
        for name in names:
            spellings.setdefault(name_key(name, self.fold), []).append(name)
        matched = screen.names_matched(list(spellings))
        return {name for key in matched for name in spellings[key]}

    def gitignores_apply(self, rel_dir: str) -> bool:
        """Whether any ``.gitignore`` speaks for the entries of ``rel_dir``; when none
        does, a walk skips asking about each entry."""
        return bool(self._chain(rel_dir))

    def is_gitignored(self, rel_path: str, is_dir: bool) -> bool:
        """Deepest ``.gitignore`` with a matching line decides, as in git."""
        for offset, rules in self._chain(rel_path.rpartition("/")[0]):
            decision = rules.decide(rel_path[offset:], is_dir)
            if decision is not None:
                return decision
        return False

    def is_ignored(self, rel_path: str, is_dir: bool) -> bool:
        """Skipped by searches: denied, gitignored, or part of a ``.git`` directory."""
        if rel_path.rpartition("/")[2] == GIT_DIR_NAME:
            return True
        return self.is_denied(rel_path, is_dir) or self.is_gitignored(rel_path, is_dir)

    def denies_path_or_parent(self, rel_path: str, is_dir: bool) -> bool:
        """Whether a walk from the root would hide this path, checking each ancestor."""
        parts = rel_path.split("/")
        for depth in range(1, len(parts)):
            if self.is_denied("/".join(parts[:depth]), True):
                return True
        return self.is_denied(rel_path, is_dir)

    def _load(self, rel_dir: str) -> PatternList | None:
        if rel_dir not in self._gitignores:
            lines = _gitignore_lines(os.path.join(self.root, rel_dir, GITIGNORE_NAME))
            try:
                found = compiled_rules(lines, GITIGNORE_NAME, fold=self.fold) if lines else None
            except CostlyPatterns:
                found = None  # only ever hides files from searches: skipped, as a huge one is
            self._gitignores[rel_dir] = found
        return self._gitignores[rel_dir]

    def _chain(self, rel_dir: str) -> list[tuple[int, PatternList]]:
        """Rule sets that apply inside ``rel_dir``, deepest first, with the prefix length
        that makes a path relative to each one's directory."""
        missing = []
        directory = rel_dir
        while directory not in self._chains:  # up to the nearest known one, without recursion
            missing.append(directory)
            if not directory:
                break
            directory = directory.rpartition("/")[0]
        for directory in reversed(missing):
            parent = self._chains[directory.rpartition("/")[0]] if directory else []
            own = self._load(directory)
            if own is not None and own.cost + sum(r.cost for _, r in parent) > MAX_MATCH_COST:
                own = None  # a path is matched against the whole chain: skipped like a huge one
            chain = ([(len(directory) + 1 if directory else 0, own)] if own else []) + parent
            self._chains[directory] = chain
        return self._chains[rel_dir]


def load_ignore_rules(root: str, denied_patterns: Iterable[str]) -> IgnoreRules:
    return IgnoreRules(root, denied_patterns)


MAX_WALK_DEPTH = 128
"""Directory levels a walk enters (its start is level 1). It keeps a descriptor open
per level, and no tool can name a path that deep (``max_path_depth``), so a deeper
directory is reported to the caller instead of entered."""


def walk_files(
    root: str,
    start_rel: str,
    rules: IgnoreRules,
    max_depth: int | None = None,
    too_deep: list[str] | None = None,
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Regular files below ``start_rel`` in tree order (names sorted per directory,
    children right after their parent), skipping ignored paths and every symlink.

    Each directory is read through a descriptor opened beneath its parent without
    following links, so an entry's ``stat()`` (valid while the walk is on its
    directory) resolves one name, not the whole path. Kinds come from the
    entries themselves (``d_type``), and ``.gitignore`` files are asked only in
    directories where one applies. The walk keeps its own stack, so no depth can
    exhaust Python's; directories below ``MAX_WALK_DEPTH`` go to ``too_deep``.
    """
    directory = os.path.join(root, start_rel) if start_rel else root
    try:
        # No link at the start either: the caller's path was resolved, so one is new.
        fd = os.open(directory, DIRECTORY_FLAGS | os.O_NOFOLLOW)
    except OSError:
        return
    levels = max_depth or MAX_WALK_DEPTH + 1
    stack = [(fd, iter(_kept_entries(fd, start_rel, rules, levels > 1)))]
    try:
        while stack:
            parent, children = stack[-1]
            for rel, entry, is_dir in children:
                if not is_dir:
                    yield rel, entry
                    continue
                if len(stack) >= MAX_WALK_DEPTH:
                    if too_deep is not None:
                        too_deep.append(rel)
                    continue
                child = open_subdirectory(parent, entry.name)
                if child is not None:
                    descend = len(stack) + 1 < levels
                    stack.append((child, iter(_kept_entries(child, rel, rules, descend))))
                    break
            else:
                os.close(stack.pop()[0])
    finally:
        for opened, _ in stack:
            os.close(opened)


def _kept_entries(
    fd: int, rel_dir: str, rules: IgnoreRules, descend: bool
) -> Iterator[tuple[str, os.DirEntry[str], bool]]:
    """The files (and, when ``descend``, directories) of one directory a walk keeps."""
    entries = sorted_entries(fd)
    prefix = rel_dir + "/" if rel_dir else ""
    is_denied = rules.is_denied
    suspects = rules.denial_candidates([entry.name for entry in entries])
    gitignores = rules.gitignores_apply(rel_dir)
    for entry in entries:
        name = entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                if not descend:
                    continue
                is_dir = True
            elif entry.is_file(follow_symlinks=False):
                is_dir = False
            else:
                continue
        except OSError:
            continue
        rel = prefix + name
        if name == GIT_DIR_NAME or (
            (suspects is None or name in suspects) and is_denied(rel, is_dir)
        ):
            continue
        if gitignores and rules.is_gitignored(rel, is_dir):
            continue
        yield rel, entry, is_dir


_NAME = operator.attrgetter("name")


def sorted_entries(fd: int) -> list[os.DirEntry[str]]:
    """The entries of the directory open on ``fd``, by name; none when it cannot be read."""
    try:
        with os.scandir(fd) as scan:
            return sorted(scan, key=_NAME)
    except OSError:
        return []


def open_subdirectory(fd: int, name: str) -> int | None:
    """A descriptor for directory ``name`` beneath ``fd``; None for a link swapped in
    since the entry was read, or anything else that is no longer a directory."""
    try:
        return os.open(name, DIRECTORY_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
    except OSError:
        return None
