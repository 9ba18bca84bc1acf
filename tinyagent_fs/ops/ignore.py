"""Which paths a listing or a search skips: denied patterns, ``.tinyagentignore``, ``.gitignore``.

Search results must agree with ripgrep and with git, so patterns are matched the way
git matches them: against the path itself, never its descendants, with pruned
directories taking their contents with them. That is why this module translates
gitignore lines itself instead of using a spec that also matches descendants.
Nested ``.gitignore`` files are read lazily, the first time the walk reaches their
directory, so building the rules costs two small reads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..policy import IGNORE_FILE_NAME

GIT_DIR_NAME = ".git"
GITIGNORE_NAME = ".gitignore"
_GLOB_SPECIALS = "*?[\\{"


def glob_to_regex(pattern: str, *, braces: bool) -> str:
    """Regex source for a slash-separated glob, meant for ``fullmatch`` on a posix path.

    ``**`` as a whole segment spans any number of directories (none included);
    ``*``, ``?`` and ``[...]`` stay within one segment. Braces (``{a,b}``) are an
    extension of search globs that gitignore does not have.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            whole_segment = (i == 0 or pattern[i - 1] == "/") and (
                i + 2 == n or (i + 2 < n and pattern[i + 2] == "/")
            )
            if pattern.startswith("**", i) and whole_segment:
                out.append(".*" if i + 2 == n else "(?:.*/)?")
                i += 3
                continue
            while i < n and pattern[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append(re.escape(char))
            else:
                out.append(_class_to_regex(pattern[i + 1 : end]))
                i = end
        elif char == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        elif char == "{" and braces and (end := _brace_end(pattern, i)) > 0:
            options = _split_top_level(pattern[i + 1 : end])
            out.append("(?:" + "|".join(glob_to_regex(o, braces=True) for o in options) + ")")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def glob_problem(pattern: str) -> str | None:
    """Why ripgrep would refuse this search glob, so both grep backends refuse it."""
    depth, i = 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 1
        elif char == "[":
            end = _class_end(pattern, i)
            if end < 0:
                return "unclosed character class; missing ']'"
            i = end
        elif char in "{}":
            depth += 1 if char == "{" else -1
            if depth < 0:
                return "unopened alternate group; missing '{'"
        i += 1
    return "unclosed alternate group; missing '}'" if depth else None


def _class_end(pattern: str, start: int) -> int:
    j = start + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern):
        if pattern[j] == "\\":
            j += 2
            continue
        if pattern[j] == "]":
            return j
        j += 1
    return -1


def _class_to_regex(body: str) -> str:
    negated = body[:1] in ("!", "^")
    if negated:
        body = body[1:]
    parts: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            i += 1
            parts.append(re.escape(body[i]))
        elif char in "[]^\\&~|":
            parts.append("\\" + char)
        else:
            parts.append(char)
        i += 1
    inner = "".join(parts)
    return f"[^/{inner}]" if negated else f"(?!/)[{inner}]"


def _brace_end(pattern: str, start: int) -> int:
    depth = 0
    for j in range(start, len(pattern)):
        if pattern[j] == "{":
            depth += 1
        elif pattern[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _split_top_level(body: str) -> list[str]:
    options, depth, current = [], 0, []
    for char in body:
        if char == "," and depth == 0:
            options.append("".join(current))
            current = []
            continue
        depth += (char == "{") - (char == "}")
        current.append(char)
    options.append("".join(current))
    return options


def escape_glob(text: str) -> str:
    """A literal path made safe to embed in a glob (for directory names with ``[`` etc.)."""
    return "".join("\\" + c if c in _GLOB_SPECIALS + "]}," else c for c in text)


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

    def regex(self) -> str:
        body = glob_to_regex(self.body, braces=False)
        return body if self.anchored else "(?:.*/)?" + body

    def rerooted(self, directory: str) -> str:
        """This line as it would read in the root's ignore file, for ripgrep."""
        prefix = f"/{escape_glob(directory)}/" if directory else "/"
        body = prefix + (self.body if self.anchored else "**/" + self.body)
        return ("!" if self.negated else "") + body + ("/" if self.dir_only else "")


class RuleSet:
    """The lines of one ignore file, matched relative to its directory; the last match wins."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = [parsed for line in lines if (parsed := IgnoreLine.parse(line))]
        self._rules = [
            (re.compile(line.regex(), re.DOTALL), line.negated, line.dir_only)
            for line in reversed(self.lines)
        ]
        any_source = "|".join(f"(?:{line.regex()})" for line in self.lines)
        self._any = re.compile(any_source, re.DOTALL) if self.lines else None

    def decide(self, rel_path: str, is_dir: bool) -> bool | None:
        """True when ignored, False when re-included by ``!``, None when no line matches."""
        if self._any is None or self._any.fullmatch(rel_path) is None:
            return None
        for regex, negated, dir_only in self._rules:
            if dir_only and not is_dir:
                continue
            if regex.fullmatch(rel_path):
                return not negated
        return None

    @property
    def has_negation(self) -> bool:
        return any(line.negated for line in self.lines)


def _read_lines(path: str) -> list[str] | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(1 << 20)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace").lstrip("\ufeff").splitlines()


class IgnoreRules:
    """Everything a walk below ``root`` must skip, asked one path (relative to root) at a time.

    Denials (the policy's patterns plus the root's ``.tinyagentignore``) hide a path
    everywhere; ``.gitignore`` files only hide it from searches. The caller is
    expected to prune: a path below an ignored directory is never asked about.
    """

    def __init__(self, root: str, denied_patterns: Iterable[str]) -> None:
        self.root = root
        extra = _read_lines(os.path.join(root, IGNORE_FILE_NAME)) or []
        self.denied = RuleSet([*denied_patterns, *extra])
        self._gitignores: dict[str, RuleSet | None] = {}
        self._chains: dict[str, list[tuple[int, RuleSet]]] = {}

    def is_denied(self, rel_path: str, is_dir: bool) -> bool:
        return self.denied.decide(rel_path, is_dir) is True

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
            lines = _read_lines(os.path.join(self.root, rel_dir, GITIGNORE_NAME))
            self._gitignores[rel_dir] = RuleSet(lines) if lines else None
        return self._gitignores[rel_dir]

    def _chain(self, rel_dir: str) -> list[tuple[int, RuleSet]]:
        """Rule sets that apply inside ``rel_dir``, deepest first, with the prefix length
        that makes a path relative to each one's directory."""
        chain = self._chains.get(rel_dir)
        if chain is None:
            parent = self._chain(rel_dir.rpartition("/")[0]) if rel_dir else []
            own = self._load(rel_dir)
            chain = ([(len(rel_dir) + 1 if rel_dir else 0, own)] if own else []) + parent
            self._chains[rel_dir] = chain
        return chain


def load_ignore_rules(root: str, denied_patterns: Iterable[str]) -> IgnoreRules:
    return IgnoreRules(root, denied_patterns)


def walk_files(
    root: str, start_rel: str, rules: IgnoreRules, max_depth: int | None = None
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Regular files below ``start_rel`` in tree order (names sorted per directory,
    children right after their parent), skipping ignored paths and every symlink."""
    directory = os.path.join(root, start_rel) if start_rel else root
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError:
        return
    prefix = start_rel + "/" if start_rel else ""
    for entry in entries:
        rel = prefix + entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                if (max_depth is None or max_depth > 1) and not rules.is_ignored(rel, True):
                    deeper = None if max_depth is None else max_depth - 1
                    yield from walk_files(root, rel, rules, deeper)
            elif entry.is_file(follow_symlinks=False) and not rules.is_ignored(rel, False):
                yield rel, entry
        except OSError:
            continue
