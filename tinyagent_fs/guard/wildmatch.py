"""git's wildmatch (``WM_PATHNAME``) on bytes, matched in time linear in the name.

The syntax is git's exactly: ``*`` and ``?`` stay within one name, ``**`` as a
whole segment spans folders, ``[...]`` with ranges, ``!``/``^`` negation, POSIX
classes (``[[:digit:]]``) and backslash escapes; braces are literal. A malformed
class (unclosed, an unknown ``[:name:]``) or a trailing lone backslash makes git
give up on the pattern, so such a pattern matches nothing.

Python's ``re`` backtracks: ``*a*a*a*a*a*a*a*a*b`` takes minutes against one long
name. A pattern with more than ``_MAX_REGEX_WILDCARDS`` unbounded wildcards is
therefore matched by a set-of-states simulation, O(len(name) x len(pattern)).
"""

from __future__ import annotations

import re

STAR = "*"
"""Any run of bytes within one name."""
ANY = "**"
"""Any run of bytes, slashes included (a trailing ``/**``)."""
DIRS = "**/"
"""Nothing, or any run of bytes that ends with a slash (``**/``)."""
_MAX_REGEX_WILDCARDS = 2
_SLASH, _BACKSLASH, _ASTERISK = 0x2F, 0x5C, 0x2A

Token = int | bytes | str
"""A literal byte, a class (a 256-byte table, 1 for a member), or a wildcard."""


def _table(members: range | bytes | list[int]) -> bytearray:
    table = bytearray(256)
    for member in members:
        table[member] = 1
    return table


_ASCII_PUNCT = b"!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_POSIX_CLASSES: dict[bytes, bytes] = {
    b"alnum": bytes(_table(b"0123456789" + bytes(range(65, 91)) + bytes(range(97, 123)))),
    b"alpha": bytes(_table(bytes(range(65, 91)) + bytes(range(97, 123)))),
    b"blank": bytes(_table(b" \t")),
    b"cntrl": bytes(_table([*range(32), 127])),
    b"digit": bytes(_table(b"0123456789")),
    b"graph": bytes(_table(range(33, 127))),
    b"lower": bytes(_table(range(97, 123))),
    b"print": bytes(_table(range(32, 127))),
    b"punct": bytes(_table(_ASCII_PUNCT)),
    b"space": bytes(_table(b" \t\n\r")),
    b"upper": bytes(_table(range(65, 91))),
    b"xdigit": bytes(_table(b"0123456789ABCDEFabcdef")),
}
"""git's own ctype (ASCII only; ``space`` leaves out \\v and \\f)."""
_ANY_BUT_SLASH = bytes(1 if byte != _SLASH else 0 for byte in range(256))


def parse(pattern: bytes, *, folded: bool = False) -> list[Token] | None:
    """The pattern as tokens, or None when git would never match it. ``**`` at the
    very start counts as a whole segment, as git counts it after a literal prefix.
    ``folded``: names are case-folded, so ``[:upper:]`` and ``[:lower:]`` mean letters."""
    out: list[Token] = []
    i, n = 0, len(pattern)
    while i < n:
        byte = pattern[i]
        if byte == _ASTERISK:
            j = i
            while j < n and pattern[j] == _ASTERISK:
                j += 1
            if j - i >= 2 and (i == 0 or pattern[i - 1] == _SLASH):
                if j == n:
                    out.append(ANY)
                    i = j
                    continue
                if pattern[j] == _SLASH:
                    out.append(DIRS)
                    i = j + 1
                    continue
                if pattern[j : j + 2] == b"\\/":
                    out.append(ANY)
                    i = j
                    continue
            out.append(STAR)
            i = j
            continue
        if byte == 0x3F:  # '?'
            out.append(_ANY_BUT_SLASH)
        elif byte == 0x5B:  # '['
            parsed = _char_class(pattern, i, folded)
            if parsed is None:
                return None
            table, i = parsed
            out.append(table)
            continue
        elif byte == _BACKSLASH:
            i += 1
            if i == n:
                return None
            out.append(pattern[i])
        else:
            out.append(byte)
        i += 1
    return out


def _char_class(pattern: bytes, start: int, folded: bool) -> tuple[bytes, int] | None:
    """The class opening at ``start`` and the index after it, parsed as wildmatch.c does."""
    n = len(pattern)
    i = start + 1
    if i >= n:
        return None
    negated = pattern[i] in b"!^"
    if negated:
        i += 1
        if i >= n:
            return None
    members = bytearray(256)
    previous = 0
    while True:
        byte = pattern[i]
        if byte == _BACKSLASH:
            i += 1
            if i >= n:
                return None
            byte = pattern[i]
            members[byte] = 1
        elif byte == 0x2D and previous and i + 1 < n and pattern[i + 1] != 0x5D:  # a range
            i += 1
            byte = pattern[i]
            if byte == _BACKSLASH:
                i += 1
                if i >= n:
                    return None
                byte = pattern[i]
            for member in range(previous, byte + 1):
                members[member] = 1
            byte = 0
        elif byte == 0x5B and pattern[i + 1 : i + 2] == b":":
            name_start = i + 2
            end = pattern.find(b"]", name_start)
            if end < 0:
                return None
            if end - name_start - 1 < 0 or pattern[end - 1] != 0x3A:
                members[byte] = 1  # no ":]": the '[' is an ordinary member
            else:
                name = pattern[name_start : end - 1]
                if folded and name in (b"upper", b"lower"):
                    name = b"alpha"
                table = _POSIX_CLASSES.get(name)
                if table is None:
                    return None
                for member, is_member in enumerate(table):
                    members[member] |= is_member
                i = end
                byte = 0
        else:
            members[byte] = 1
        previous = byte
        i += 1
        if i >= n:
            return None
        if pattern[i] == 0x5D:
            break
    if negated:
        members = bytearray(1 - member for member in members)
    members[_SLASH] = 0
    return bytes(members), i + 1


def literal_prefix(tokens: list[Token]) -> bytes:
    """The literal bytes the tokens start with."""
    prefix = bytearray()
    for token in tokens:
        if not isinstance(token, int):
            break
        prefix.append(token)
    return bytes(prefix)


def render(tokens: list[Token]) -> bytes:
    """A regex (bytes, DOTALL) for the tokens; only safe to run with few wildcards."""
    parts: list[bytes] = []
    for token in tokens:
        if isinstance(token, int):
            parts.append(re.escape(bytes([token])))
        elif isinstance(token, bytes):
            parts.append(_render_class(token))
        elif token == STAR:
            parts.append(rb"[^/]*")
        elif token == ANY:
            parts.append(rb".*")
        else:
            parts.append(rb"(?:.*/)?")
    return b"".join(parts)


def _render_class(table: bytes) -> bytes:
    members = [byte for byte in range(256) if table[byte]]
    if not members:
        return rb"(?!)"
    if len(members) == 256 - 1 and not table[_SLASH]:
        return rb"[^/]"
    return b"[" + b"".join(b"\\x%02x" % byte for byte in members) + b"]"


class Wildmatch:
    """``fullmatch`` of one token list against a name's bytes, never slower than linear."""

    __slots__ = ("_program", "_regex", "linear", "source", "wildcards")

    def __init__(self, parsed: list[Token] | None) -> None:
        self._program: list[Token] = [] if parsed is None else parsed
        wildcards = sum(isinstance(token, str) for token in self._program)
        self.wildcards = wildcards
        self.linear = parsed is not None and wildcards > _MAX_REGEX_WILDCARDS
        """Matched by simulation: no regex of it may run."""
        self.source: bytes | None = None if parsed is None or self.linear else render(parsed)
        """The regex source, when a regex is safe; None also when nothing matches."""
        self._regex = None if self.source is None else re.compile(self.source, re.DOTALL)

    @property
    def states(self) -> int:
        """The simulation's states: what one byte of a name costs it."""
        return len(self._program) + 1

    def fullmatch(self, name: bytes) -> bool:
        if self._regex is not None:
            return self._regex.fullmatch(name) is not None
        return self.linear and _simulate(self._program, name)


def _simulate(program: list[Token], text: bytes) -> bool:
    """Run the pattern's automaton over ``text``: state ``i`` is "before token i",
    ``i + inside`` is "part-way through the folders of the ``**/`` at i"."""
    end = len(program)
    inside = end + 1
    states = _closure({0}, program)
    for byte in text:
        following: set[int] = set()
        for state in states:
            if state >= inside:
                following.add(state)
                if byte == _SLASH:
                    following.add(state - inside + 1)
                continue
            if state == end:
                continue
            token = program[state]
            if isinstance(token, int):
                if token == byte:
                    following.add(state + 1)
            elif isinstance(token, bytes):
                if token[byte]:
                    following.add(state + 1)
            elif token == STAR:
                if byte != _SLASH:
                    following.add(state)
            elif token == ANY:
                following.add(state)
            else:
                following.add(state + inside)
                if byte == _SLASH:
                    following.add(state + 1)
        if not following:
            return False
        states = _closure(following, program)
    return end in states


def _closure(states: set[int], program: list[Token]) -> set[int]:
    """Add the states reachable without reading: past a wildcard that matches nothing."""
    pending = list(states)
    while pending:
        state = pending.pop()
        if state < len(program) and isinstance(program[state], str) and state + 1 not in states:
            states.add(state + 1)
            pending.append(state + 1)
    return states
