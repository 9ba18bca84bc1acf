"""Which paths a listing or a search skips: denied patterns, ``.tinyagentignore``, ``.gitignore``.

Search results must agree with ripgrep and with git, so patterns are matched the way
git matches them: against the path itself, never its descendants, with pruned
directories taking their contents with them. That is why this module translates
gitignore lines itself instead of using a spec that also matches descendants.
Nested ``.gitignore`` files are read lazily, the first time the walk reaches their
directory, so building the rules costs two small reads.
"""

from __future__ import annotations

import functools
import operator
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..config_file import MAX_CONFIG_FILE_BYTES, UnsafeConfigFile, config_lines, read_config_file
from ..durable import DIRECTORY_FLAGS
from ..errors import ErrorCode, ToolError
from ..policy import IGNORE_FILE_NAME
from .glob_match import DIRS, GlobMatcher, Token, escape_glob

GIT_DIR_NAME = ".git"
GITIGNORE_NAME = ".gitignore"


@dataclass(frozen=True)
class IgnoreLine:
    """One meaningful gitignore line, split into what git reads from it."""

    body: str
    negated: bool
    dir_only: bool
    anchored: bool

    @classmethod
    def parse(cls, line: str) -> IgnoreLine | None:
        if not line or line.startswith("#"):
            return None
        text = line.rstrip(" ")
        if text.endswith("\\") and len(text) < len(line):
            text += line[len(text)]
        negated = text.startswith("!")
        if negated:
            text = text[1:]
        dir_only = text.endswith("/")
        text = text.rstrip("/")
        if not text:
            return None
        anchored = "/" in text
        return cls(text.lstrip("/"), negated, dir_only, anchored)

    def matcher(self) -> GlobMatcher:
        prefix: list[Token] = [] if self.anchored else [DIRS]
        return GlobMatcher(self.body, braces=False, prefix=prefix)

    def rerooted(self, directory: str) -> str:
        """This line as it would read in the root's ignore file, for ripgrep."""
        prefix = f"/{escape_glob(directory)}/" if directory else "/"
        body = prefix + (self.body if self.anchored else "**/" + self.body)
        return ("!" if self.negated else "") + body + ("/" if self.dir_only else "")


class RuleSet:
    """The lines of one ignore file, matched relative to its directory; the last match wins.

    ``strict`` (for denials) refuses a file with a line that does not compile, naming
    only the line number, since the file's content may be anything; otherwise such a
    line is skipped, as git skips it.
    """

    def __init__(self, lines: Iterable[str], source: str = "", *, strict: bool = False) -> None:
        self.lines: list[IgnoreLine] = []
        matchers: list[GlobMatcher] = []
        for number, text in enumerate(lines, 1):
            parsed = IgnoreLine.parse(text)
            if parsed is None:
                continue
            try:
                matchers.append(parsed.matcher())
            except (re.error, ValueError) as exc:
                if strict:
                    raise ToolError(
                        ErrorCode.INVALID_ARGUMENT,
                        f"Invalid pattern on line {number} of {source}.",
                        "Fix the pattern (gitignore syntax); nothing is listed until it is valid.",
                    ) from exc
                continue
            self.lines.append(parsed)
        self._rules = [
            (matcher, line.negated, line.dir_only)
            for matcher, line in reversed(list(zip(matchers, self.lines, strict=True)))
        ]
        self.has_negation = any(line.negated for line in self.lines)
        # A screen per kind of path answers the common "no line matches" in one or two
        # regex calls (a file is never matched by a directory-only line); it is only
        # safe when no line needed the linear-time matcher.
        self.screenable = not any(matcher.linear for matcher in matchers)
        self.screen_lines = {
            is_dir: [
                (line, matcher)
                for matcher, line in zip(matchers, self.lines, strict=True)
                if is_dir or not line.dir_only
            ]
            for is_dir in (False, True)
        }
        self._screens = {is_dir: Screen(self.screen_lines[is_dir]) for is_dir in (False, True)}

    def decide(self, rel_path: str, is_dir: bool) -> bool | None:
        """True when ignored, False when re-included by ``!``, None when no line matches."""
        if not self._rules:
            return None
        if self.screenable and not self._screens[is_dir].matches(rel_path):
            return None
        for matcher, negated, dir_only in self._rules:
            if dir_only and not is_dir:
                continue
            if matcher.fullmatch(rel_path):
                return not negated
        return None


class Screen:
    """Whether any of some ignore lines matches a path, in at most two regex calls.

    A line without ``/`` matches a path exactly when it matches the path's last
    name (its regex is ``(?:.*/)?`` and then a body that never matches ``/``), so
    those lines are tried against the name alone: the regex engine then does not
    try every ``/`` of the path for each of them. Most such lines are a name, a
    prefix (``id_rsa*``) or a suffix (``*.pem``): those are string comparisons,
    and only the rest are left to a regex.
    """

    def __init__(self, lines: Iterable[tuple[IgnoreLine, GlobMatcher]]) -> None:
        exact: set[str] = set()
        prefixes: list[str] = []
        suffixes: list[str] = []
        names: list[str] = []
        paths: list[str] = []
        for line, matcher in lines:
            if line.anchored:
                paths.append(matcher.source)
                continue
            body = line.body
            literal = body.strip("*")
            if not literal or any(char in _LINE_SPECIALS for char in literal):
                names.append(matcher.source.removeprefix(DIRS))
            elif body == literal:
                exact.add(literal)
            elif body == "*" * (len(body) - len(literal)) + literal:
                suffixes.append(literal)
            elif body == literal + "*" * (len(body) - len(literal)):
                prefixes.append(literal)
            else:
                names.append(matcher.source.removeprefix(DIRS))
        self._exact = frozenset(exact)
        self._prefixes = tuple(prefixes)
        self._suffixes = tuple(suffixes)
        self._names = _alternation(names)
        self.paths = _alternation(paths)

    def matches(self, rel_path: str) -> bool:
        name = rel_path.rpartition("/")[2]
        if (
            name in self._exact
            or name.startswith(self._prefixes)
            or name.endswith(self._suffixes)
            or (self._names is not None and self._names.fullmatch(name))
        ):
            return True
        return self.paths is not None and self.paths.fullmatch(rel_path) is not None

    def names_matched(self, names: list[str]) -> set[str]:
        """Those of ``names`` (single names, no ``/``) that a line without ``/`` matches.

        Prefixes and suffixes are found by ``str.find`` in all the names joined by
        NUL, which no name holds: a few scans of one string instead of a call per name.
        """
        found = set(self._exact.intersection(names))
        if self._prefixes or self._suffixes:
            joined = _NUL + _NUL.join(names) + _NUL
            for prefix in self._prefixes:
                at = joined.find(_NUL + prefix)
                while at >= 0:
                    end = joined.index(_NUL, at + 1)
                    found.add(joined[at + 1 : end])
                    at = joined.find(_NUL + prefix, end)
            for suffix in self._suffixes:
                at = joined.find(suffix + _NUL)
                while at >= 0:
                    end = at + len(suffix)
                    found.add(joined[joined.rindex(_NUL, 0, at + 1) + 1 : end])
                    at = joined.find(suffix + _NUL, end)
        if self._names is not None:
            found.update(filter(self._names.fullmatch, names))
        return found


_LINE_SPECIALS = frozenset("*?[\\")
"""Characters that make an ignore line more than a literal name (braces are literal there)."""
_NUL = "\0"


def _alternation(sources: list[str]) -> re.Pattern[str] | None:
    if not sources:
        return None
    return re.compile("|".join(f"(?:{source})" for source in sources), re.DOTALL)


_COMPILED_MAX_SETS = 64
_COMPILED_MAX_CHARS = 64 * 1024
"""Rule sets kept compiled by content; larger ignore files are compiled on every use."""


def compiled_rules(lines: Iterable[str], source: str, *, strict: bool = False) -> RuleSet:
    """The ``RuleSet`` of these lines, compiled once per process while they stay the same.

    Keyed by the lines themselves, not a file's stat signature: an ignore file a
    command rewrites within one timestamp tick is still seen as it is now. A
    ``RuleSet`` never changes after it is built, so sharing one (across threads
    too) is safe.
    """
    key = tuple(lines)
    if sum(map(len, key)) > _COMPILED_MAX_CHARS:
        return RuleSet(key, source, strict=strict)
    return _cached_rules(source, strict, key)


@functools.lru_cache(maxsize=_COMPILED_MAX_SETS)
def _cached_rules(source: str, strict: bool, lines: tuple[str, ...]) -> RuleSet:
    return RuleSet(lines, source, strict=strict)


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


class IgnoreRules:
    """Everything a walk below ``root`` must skip, asked one path (relative to root) at a time.

    Denials (the policy's patterns and the root's ``.tinyagentignore``) hide a path
    everywhere; ``.gitignore`` files only hide it from searches. The two kinds of
    denial are separate rule sets, each asked on its own: a ``!`` line in
    ``.tinyagentignore`` can re-include what that file excluded, never what the
    policy denies. The caller is expected to prune: a path below an ignored
    directory is never asked about.
    """

    def __init__(self, root: str, denied_patterns: Iterable[str]) -> None:
        self.root = root
        self.denial_sets = (
            compiled_rules(denied_patterns, "the sandbox policy", strict=True),
            compiled_rules(_denial_lines(root), IGNORE_FILE_NAME, strict=True),
        )
        self._gitignores: dict[str, RuleSet | None] = {}
        self._chains: dict[str, list[tuple[int, RuleSet]]] = {}
        # Without a '!' line in either set, "denied" is "some line matches": one
        # regex over both sets answers it per path.
        self._screenable = all(s.screenable for s in self.denial_sets)
        self._fused = self._screenable and not any(s.has_negation for s in self.denial_sets)
        self._denial_screens = {
            is_dir: Screen(line for s in self.denial_sets for line in s.screen_lines[is_dir])
            for is_dir in (False, True)
        }

    def is_denied(self, rel_path: str, is_dir: bool) -> bool:
        if self._fused:
            return self._denial_screens[is_dir].matches(rel_path)
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
        return screen.names_matched(names)

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

    def gitignore_dirs_above(self, rel_dir: str) -> list[str]:
        """The root and each directory above ``rel_dir`` that has a ``.gitignore``."""
        parts = rel_dir.split("/") if rel_dir else []
        directories = ("/".join(parts[:depth]) for depth in range(len(parts)))
        return [directory for directory in directories if self._load(directory) is not None]

    def gitignore_lines_above(self, rel_dir: str) -> list[str]:
        """The ``.gitignore`` lines of ``gitignore_dirs_above(rel_dir)``, rewritten
        relative to the root, shallowest first (so later lines win)."""
        lines: list[str] = []
        for directory in self.gitignore_dirs_above(rel_dir):
            rules = self._load(directory)
            assert rules is not None
            lines.extend(line.rerooted(directory) for line in rules.lines)
        return lines

    def _load(self, rel_dir: str) -> RuleSet | None:
        if rel_dir not in self._gitignores:
            lines = _gitignore_lines(os.path.join(self.root, rel_dir, GITIGNORE_NAME))
            self._gitignores[rel_dir] = compiled_rules(lines, GITIGNORE_NAME) if lines else None
        return self._gitignores[rel_dir]

    def _chain(self, rel_dir: str) -> list[tuple[int, RuleSet]]:
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
