"""The one gitignore engine: which line of an ignore file decides a path, as git decides.

The guard, listings, glob, grep (both backends) and the secret masks all ask this
module, so no two of them can disagree about what is denied or ignored. Lines are
read as git's dir.c reads them, globs matched as its wildmatch matches them
(``wildmatch.py``), on UTF-8 bytes, after NFC normalisation of both the pattern
and the name (a name written in NFD must not pass a pattern written in NFC) and,
on a case-insensitive root, case folding of both.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .wildmatch import Wildmatch, parse

_WILDCARD_CHARS = frozenset("*?[\\")
MAX_MATCH_COST = 5000
"""What the lines of one ignore file may cost to match against one path, in units of
about 10 µs (so about 50 ms): see :func:`match_cost`. More, and a walk of a few
hundred long paths would hold the caller for minutes."""


class CostlyPatterns(ValueError):
    """Lines that could take too long to match (an agent's ``.gitignore`` built to stall)."""


"""What ends git's literal prefix of a pattern (``simple_length``)."""
_NUL = "\0"


def name_key(text: str, fold: bool) -> str:
    """``text`` as patterns and names are compared: NFC, and case-folded when ``fold``."""
    if text.isascii():
        return text.lower() if fold else text
    if fold:
        return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())
    return unicodedata.normalize("NFC", text)


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _trim_trailing_spaces(line: str) -> str:
    """git's ``trim_trailing_spaces``: unescaped trailing spaces (not tabs) go."""
    last_space: int | None = None
    i = 0
    while i < len(line):
        char = line[i]
        if char == " ":
            if last_space is None:
                last_space = i
        elif char == "\\":
            i += 1
            if i == len(line):
                return line
            last_space = None
        else:
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def _literal_length(body: str) -> int:
    return next((i for i, char in enumerate(body) if char in _WILDCARD_CHARS), len(body))


@dataclass(frozen=True)
class GitPattern:
    """One meaningful line of an ignore file."""

    text: str
    """The line as written, for messages."""
    negated: bool
    dir_only: bool
    basename: bool
    """No slash but a trailing one: matched against the last name at any depth."""
    body: str
    """The glob, normalised, without ``!``, the trailing ``/`` and one leading ``/``."""
    glob: Wildmatch

    @classmethod
    def parse(cls, line: str, *, fold: bool = False) -> GitPattern | None:
        """The pattern of one line, or None for a blank line or a comment."""
        if not line or line.startswith("#"):
            return None
        text = _trim_trailing_spaces(name_key(line, fold))
        negated = text.startswith("!")
        body = text[1:] if negated else text
        dir_only = body.endswith("/")
        if dir_only:
            body = body[:-1]
        if not body:
            return None
        basename = "/" not in body
        if basename:
            tokens = parse(_encoded(body), folded=fold)
        else:
            body = body.removeprefix("/")
            # git compares the literal prefix on its own and wildmatches the rest,
            # where a leading ``**`` counts as a whole segment.
            cut = _literal_length(body)
            rest = parse(_encoded(body[cut:]), folded=fold)
            tokens = None if rest is None else [*_encoded(body[:cut]), *rest]
        return cls(line, negated, dir_only, basename, body, Wildmatch(tokens))

    def matches(self, path: bytes, name: bytes, is_dir: bool) -> bool:
        """Whether this line matches ``path`` (relative to the ignore file's folder),
        ``name`` being its last component; both as ``name_key`` bytes."""
        if self.dir_only and not is_dir:
            return False
        return self.glob.fullmatch(name if self.basename else path)


class PatternList:
    """The lines of one ignore file (or the policy's patterns); the last match wins."""

    def __init__(self, lines: Iterable[str], source: str = "", *, fold: bool = False) -> None:
        self.source = source
        self.fold = fold
        parsed = (GitPattern.parse(line, fold=fold) for line in lines)
        self.patterns = [pattern for pattern in parsed if pattern is not None]
        self.cost = cost = sum(match_cost(pattern) for pattern in self.patterns)
        """What matching one path against these lines may cost (see :func:`match_cost`)."""
        if cost > MAX_MATCH_COST:
            raise CostlyPatterns(
                f"its lines could cost about {cost * 10 // 1000} ms to match against one "
                f"path (more than {MAX_MATCH_COST * 10 // 1000} ms): too many lines with "
                "several wildcards"
            )
        self._last_first = self.patterns[::-1]
        self.has_negation = any(pattern.negated for pattern in self.patterns)
        self.screenable = not any(pattern.glob.linear for pattern in self.patterns)
        """No line needs the simulation, so one regex may stand for several."""
        self.screens = {
            is_dir: Screen(p for p in self.patterns if is_dir or not p.dir_only)
            for is_dir in (False, True)
        }

    def last_match(self, rel: str, is_dir: bool) -> GitPattern | None:
        """The last line that matches ``rel`` (posix, relative to the list's folder),
        negated or not; None when none does."""
        if not self.patterns:
            return None
        key = name_key(rel, self.fold)
        if self.screenable and not self.screens[is_dir].matches(key):
            return None
        path = _encoded(key)
        name = path.rpartition(b"/")[2]
        for pattern in self._last_first:
            if pattern.matches(path, name, is_dir):
                return pattern
        return None

    def decide(self, rel: str, is_dir: bool) -> bool | None:
        """True when ignored, False when re-included by ``!``, None when no line matches."""
        pattern = self.last_match(rel, is_dir)
        return None if pattern is None else not pattern.negated

    def excluding(self, rel: str, is_dir: bool) -> GitPattern | None:
        """The line that excludes ``rel`` or one of its folders, as git decides: a folder
        excluded takes everything below it, whatever later lines re-include."""
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            pattern = self.last_match("/".join(parts[:depth]), True)
            if pattern is not None and not pattern.negated:
                return pattern
        pattern = self.last_match(rel, is_dir)
        return None if pattern is None or pattern.negated else pattern


def match_cost(pattern: GitPattern) -> int:
    """Worst cost of matching one line against a path, in units of about 10 µs, as measured
    on names of 255 bytes and paths of 4096: a name, a prefix or a suffix costs nothing
    worth counting, a regex a unit per wildcard (with two, backtracking makes it 16), a
    simulated line its states times the bytes it reads."""
    glob = pattern.glob
    if glob.linear:
        return glob.states * (4 if pattern.basename else 60)
    return 16 if glob.wildcards >= 2 else glob.wildcards


class Screen:
    """Whether any of some lines matches a path, in a few string tests and at most two
    regex calls; only exact for lines none of which ``linear`` (the caller checks).

    A line without ``/`` matches the last name alone; most such lines are a name, a
    prefix (``id_rsa*``) or a suffix (``*.pem``), which are string comparisons
    (on ``name_key`` text, where they agree with the bytes git compares).
    """

    def __init__(self, patterns: Iterable[GitPattern]) -> None:
        exact: set[str] = set()
        prefixes: list[str] = []
        suffixes: list[str] = []
        names: list[bytes] = []
        paths: list[bytes] = []
        for pattern in patterns:
            source = pattern.glob.source
            if source is None:
                continue  # matches nothing, or not screenable at all
            body = pattern.body
            literal = body[1:] if body.startswith("*") else body[:-1] if body.endswith("*") else ""
            if not pattern.basename:
                paths.append(source)
            elif _literal_length(body) == len(body):
                exact.add(body)
            elif literal and _literal_length(literal) == len(literal):
                (suffixes if body.startswith("*") else prefixes).append(literal)
            else:
                names.append(source)
        self._exact = frozenset(exact)
        self._prefixes = tuple(prefixes)
        self._suffixes = tuple(suffixes)
        self._names = _alternation(names)
        self.paths = _alternation(paths)

    def matches(self, key: str) -> bool:
        name = key.rpartition("/")[2]
        if name in self._exact or name.startswith(self._prefixes) or name.endswith(self._suffixes):
            return True
        if self._names is not None and self._names.fullmatch(_encoded(name)):
            return True
        return self.paths is not None and self.paths.fullmatch(_encoded(key)) is not None

    def names_matched(self, keys: list[str]) -> set[str]:
        """Those of ``keys`` (single names as ``name_key`` gives them) a line without
        ``/`` matches. Prefixes and suffixes are found by ``str.find`` in all the keys
        joined by NUL, which no name holds: a few scans instead of a call per name."""
        found = set(self._exact.intersection(keys))
        if self._prefixes or self._suffixes:
            joined = _NUL + _NUL.join(keys) + _NUL
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
            names = self._names
            found.update(key for key in keys if names.fullmatch(_encoded(key)))
        return found


def _alternation(sources: list[bytes]) -> re.Pattern[bytes] | None:
    if not sources:
        return None
    return re.compile(b"|".join(b"(?:" + source + b")" for source in sources), re.DOTALL)


def root_folds_case(root: str) -> bool:
    """Whether the root's file system ignores case: the root under a case-swapped
    name is the same directory. A root with no cased letter in its name is asked
    through its first entry that has one; none at all means case-sensitive."""
    parent, name = os.path.split(root)
    for directory, entry in itertools.chain([(parent, name)], _entries(root)):
        swapped = entry.swapcase()
        if swapped == entry:
            continue
        try:
            return os.path.samestat(
                os.lstat(os.path.join(directory, entry)), os.lstat(os.path.join(directory, swapped))
            )
        except OSError:
            return False
    return False


def _entries(root: str) -> Iterator[tuple[str, str]]:
    """Up to 64 entries of the root, read only when the root's own name has no case."""
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        yield from ((root, e.name) for e in itertools.islice(entries, 64))
