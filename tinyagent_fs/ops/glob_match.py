"""Globs: translation to a regex, and matching that stays linear on any input.

Python's ``re`` backtracks, so the translation of ``*a*a*a*a*a*a*a*a*b`` takes
minutes against one long name that does not match. Globs come from a model
(glob, grep's include) or from files a command can write (``.gitignore``), so a
glob with more than ``_MAX_REGEX_WILDCARDS`` wildcards is matched instead by a
set-of-states simulation (Thompson's construction): every character of the name
is looked at once per state, so the cost is O(len(name) x len(glob)). Globs with
few wildcards keep the compiled regex, which is faster per name and cannot blow up.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from typing import Union

_GLOB_SPECIALS = "*?[\\{"
_STAR = "[^/]*"  # '*': any run within one segment
DIRS = "(?:.*/)?"  # '**/': any number of whole directories, none included
_ALL = ".*"  # a trailing '**': anything
_WILDCARDS = (_STAR, DIRS, _ALL)
_MAX_REGEX_WILDCARDS = 2
_MAX_ALTERNATIVES = 1024

Token = Union[str, "list[list[Token]]"]
"""Regex source matching exactly one character, a wildcard, or a brace group."""


def glob_tokens(pattern: str, *, braces: bool) -> list[Token]:
    """The glob as tokens. ``**`` as a whole segment spans directories; ``*``, ``?``
    and ``[...]`` stay within one segment. Braces (``{a,b}``) are an extension of
    search globs that gitignore does not have."""
    out: list[Token] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            whole_segment = (i == 0 or pattern[i - 1] == "/") and (
                i + 2 == n or (i + 2 < n and pattern[i + 2] == "/")
            )
            if pattern.startswith("**", i) and whole_segment:
                out.append(_ALL if i + 2 == n else DIRS)
                i += 3
                continue
            while i < n and pattern[i] == "*":
                i += 1
            out.append(_STAR)
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
            out.append([glob_tokens(option, braces=True) for option in options])
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return out


def _render(tokens: list[Token]) -> str:
    return "".join(
        t if isinstance(t, str) else "(?:" + "|".join(_render(o) for o in t) + ")" for t in tokens
    )


class GlobMatcher:
    """``fullmatch`` for one glob (optionally behind a fixed regex prefix), linear-time."""

    def __init__(self, pattern: str, *, braces: bool, prefix: list[Token] | None = None) -> None:
        self.tokens = [*(prefix or []), *glob_tokens(pattern, braces=braces)]
        self.source = _render(self.tokens)
        alternatives = list(itertools.islice(_expand(self.tokens), _MAX_ALTERNATIVES + 1))
        if len(alternatives) > _MAX_ALTERNATIVES:
            raise ValueError(f"the glob expands to more than {_MAX_ALTERNATIVES} alternatives")
        wildcards = max(sum(t in _WILDCARDS for t in alt) for alt in alternatives)
        self.linear = wildcards > _MAX_REGEX_WILDCARDS
        self._regex = re.compile(self.source, re.DOTALL)
        self._programs = [_program(alt) for alt in alternatives] if self.linear else []

    def fullmatch(self, text: str) -> bool:
        if not self.linear:
            return self._regex.fullmatch(text) is not None
        return any(_run(program, text) for program in self._programs)


def _expand(tokens: list[Token]) -> Iterator[list[str]]:
    """Every brace-free alternative of ``tokens``, lazily (the count can be huge)."""
    if not tokens:
        yield []
        return
    head, rest = tokens[0], tokens[1:]
    heads = [[head]] if isinstance(head, str) else [list(a) for o in head for a in _expand(o)]
    for first in heads:
        for tail in _expand(rest):
            yield [*first, *tail]


_Step = tuple[str, Callable[[str], object] | None]


def _program(tokens: list[str]) -> list[_Step]:
    return [
        (t, None) if t in _WILDCARDS else ("one", re.compile(t, re.DOTALL).fullmatch)
        for t in tokens
    ]


def _run(program: list[_Step], text: str) -> bool:
    """Simulate the glob's automaton on ``text``; state ``i`` means "before token i",
    ``i + inside`` means "part-way through the directories of the ``**/`` at i"."""
    end = len(program)
    inside = end + 1
    states = _closure({0}, program)
    for char in text:
        following: set[int] = set()
        for state in states:
            if state >= inside:
                following.add(state)
                if char == "/":
                    following.add(state - inside + 1)
                continue
            if state == end:
                continue
            kind, test = program[state]
            if kind == "one":
                assert test is not None
                if test(char):
                    following.add(state + 1)
            elif kind == _STAR:
                if char != "/":
                    following.add(state)
            elif kind == _ALL:
                following.add(state)
            else:
                following.add(state + inside)
                if char == "/":
                    following.add(state + 1)
        if not following:
            return False
        states = _closure(following, program)
    return end in states


def _closure(states: set[int], program: list[_Step]) -> set[int]:
    """Add the states reachable without reading: past a wildcard that matches nothing."""
    pending = list(states)
    while pending:
        state = pending.pop()
        if state < len(program) and program[state][0] in _WILDCARDS and state + 1 not in states:
            states.add(state + 1)
            pending.append(state + 1)
    return states


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
