"""The normalisations that tolerant matching is made of, shared by edits and patches.

Each tolerance forgives one way a model commonly misquotes a file: trailing
whitespace, indentation (tabs vs spaces, a uniformly shifted block) and
typographic punctuation. One ladder (``TOLERANCES``) says which, in what order:
edits apply it to text spans (``matching``), patch hunks to whole lines
(``LINE_STAGES``), so the two agree about what counts as "the same text".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

TYPOGRAPHY = {
    '"': "\u201c\u201d\u201e\u201f",
    "'": "\u2018\u2019\u201a\u201b",
    "-": "\u2010\u2011\u2012\u2013\u2014\u2015\u2212",
    " ": "\u00a0",
}
"""Each ASCII character and the typographic characters that fold to it."""
_FOLD = str.maketrans({fancy: plain for plain, chars in TYPOGRAPHY.items() for fancy in chars})
ELLIPSIS = "\u2026"


def fold_typography(text: str) -> str:
    """Typographic quotes, dashes, ellipsis and no-break spaces as their ASCII look-alikes."""
    return text.translate(_FOLD).replace(ELLIPSIS, "...")


def line_content(line: str) -> str:
    """A line from ``split_lines`` without its ending."""
    return line.rstrip("\r\n")


@dataclass(frozen=True)
class IndentShift:
    """How the file's indentation differs from the model's, uniformly over a match.

    Either the file has an extra prefix (``add``), or the model had one
    (``remove``), or the difference is a number of columns at some tab size
    (tabs vs spaces), rendered in the file's style. ``first_line`` is False when
    the matched text starts mid-line, where there is no indentation to adjust.
    """

    add: str = ""
    remove: str = ""
    delta: int = 0
    tab_size: int = 0
    use_tabs: bool = False
    first_line: bool = True

    @property
    def is_identity(self) -> bool:
        return not (self.add or self.remove or self.tab_size)

    def reindent(self, content: str) -> str:
        """One line (without its ending) moved into the file's indentation."""
        body = content.lstrip(" \t")
        if not body or self.is_identity:
            return content
        lead = content[: len(content) - len(body)]
        if self.add:
            return self.add + content
        if self.remove and lead.startswith(self.remove):
            return lead[len(self.remove) :] + body
        tab_size = self.tab_size or 4
        delta = self.delta if self.tab_size else -len(self.remove.expandtabs(tab_size))
        width = max(0, len(lead.expandtabs(tab_size)) + delta)
        if self.use_tabs:
            return "\t" * (width // tab_size) + " " * (width % tab_size) + body
        return " " * width + body


def indent_shift(
    needle_lines: Sequence[str], file_lines: Sequence[str], first_line: bool = True
) -> IndentShift | None:
    """The uniform indentation change that turns ``needle_lines`` into ``file_lines``.

    Lines are contents without endings, pairwise. Blank lines carry no evidence.
    None means the indentation differs in a way no single shift explains, so the
    match is refused: in indentation-sensitive code that is a different block.
    """
    pairs = [
        (leading_whitespace(needle), leading_whitespace(found))
        for index, (needle, found) in enumerate(zip(needle_lines, file_lines, strict=True))
        if needle.strip() and (first_line or index > 0)
    ]
    if all(n == f for n, f in pairs):
        return IndentShift(first_line=first_line)
    n0, f0 = pairs[0]
    if f0.endswith(n0):
        prefix = f0[: len(f0) - len(n0)]
        if all(f == prefix + n for n, f in pairs):
            return IndentShift(add=prefix, first_line=first_line)
    if n0.endswith(f0):
        prefix = n0[: len(n0) - len(f0)]
        if all(n == prefix + f for n, f in pairs):
            return IndentShift(remove=prefix, first_line=first_line)
    use_tabs = sum(f.startswith("\t") for _, f in pairs) * 2 > len(pairs)
    for tab_size in (4, 8, 2):
        deltas = {len(f.expandtabs(tab_size)) - len(n.expandtabs(tab_size)) for n, f in pairs}
        if len(deltas) == 1:
            return IndentShift(
                delta=deltas.pop(), tab_size=tab_size, use_tabs=use_tabs, first_line=first_line
            )
    return None


def leading_whitespace(content: str) -> str:
    return content[: len(content) - len(content.lstrip(" \t"))]


@dataclass(frozen=True)
class Tolerance:
    """One rung of the tolerance ladder that edits and patches both walk, strictest
    first; each rung forgives what every rung before it forgives too."""

    name: str
    ignores: str
    """What it disregards, as a result tells the model ("matched ignoring ...")."""
    normalize: Callable[[str], str]
    """A line (without its ending) as this rung compares it."""
    trailing: bool = False
    indentation: bool = False
    endings: bool = False
    typography: bool = False
    in_patches: bool = True
    """Line endings are not part of a line's content, so a patch, which compares whole
    lines, has no CRLF rung."""

    @property
    def note(self) -> str:
        return f"matched ignoring {self.ignores}" if self.ignores else "matched exactly"


def _unchanged(line: str) -> str:
    return line


def _folded(line: str) -> str:
    return fold_typography(line).strip()


TOLERANCES = (
    Tolerance("exact", "", _unchanged),
    Tolerance("trailing_whitespace", "trailing whitespace", str.rstrip, trailing=True),
    Tolerance(
        "indentation",
        "trailing whitespace and indentation",
        str.strip,
        trailing=True,
        indentation=True,
    ),
    Tolerance(
        "line_endings",
        "whitespace and line endings (CRLF/LF)",
        str.strip,
        trailing=True,
        indentation=True,
        endings=True,
        in_patches=False,
    ),
    Tolerance(
        "typography",
        "whitespace, line endings and typographic quotes/dashes",
        _folded,
        trailing=True,
        indentation=True,
        endings=True,
        typography=True,
    ),
)
"""The one ladder: edit matching walks every rung, patch hunks the ``LINE_STAGES``."""
BY_NAME = {tolerance.name: tolerance for tolerance in TOLERANCES}
LINE_STAGES = tuple(tolerance for tolerance in TOLERANCES if tolerance.in_patches)
