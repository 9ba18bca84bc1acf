"""What a parsed patch is: file sections made of hunks made of lines.

One model serves both formats, so applying a patch does not care which one the
model wrote; the format only decides a few semantics, which ``FilePatch.style``
carries (line-number hints and no-newline markers exist only in unified diffs).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from tinyagent_fs.errors import ErrorCode, ToolError

PatchLine = tuple[int, str]
"""(1-based line number in the patch text, the line without its ending)."""

CODEX_FORMAT = """\
*** Begin Patch
*** Update File: src/app.py
@@ def handler(request):
     context line (starts with a space)
-    removed line
+    added line
*** Add File: notes.txt
+every line of a new file starts with +
*** Delete File: old.txt
*** End Patch"""

UNIFIED_FORMAT = """\
--- a/src/app.py
+++ b/src/app.py
@@ -12,3 +12,3 @@
     context line (starts with a space)
-    removed line
+    added line"""


class HunkLine(NamedTuple):
    """One line of a hunk, as ``Hunk.lines`` shows it: ``op`` is " " (context), "-"
    (removed) or "+" (added); ``text`` has no ending.

    ``no_newline`` records a following ``\\ No newline at end of file``; ``ending``
    is the line break the patch itself gives an added line ("" when it states none).
    """

    op: str
    text: str
    no_newline: bool = False
    ending: str = ""


@dataclass(frozen=True)
class Hunk:
    """One contiguous change.

    Its lines are kept in columns, not as one record per line: ``ops`` holds each
    line's op character, ``texts`` each line's text without its ending. A real
    patch has tens of thousands of lines, and a record for each costs more to make
    than parsing the line did (``lines`` builds the records on demand, for error
    messages). ``no_newline`` holds the indices of the lines followed by
    ``\\ No newline at end of file``; ``endings`` the line break the patch gives
    each line, when it states any (a unified diff of a CRLF file; None otherwise).

    ``anchors`` are Codex ``@@ <line>`` contexts, found in order before the hunk.
    ``old_start`` (1-based) is a unified diff's position hint: content decides,
    the hint only breaks ties. ``end_of_file`` pins the hunk to the file's end.
    """

    ops: str
    texts: tuple[str, ...]
    header: str
    patch_line: int
    anchors: tuple[str, ...] = ()
    old_start: int | None = None
    end_of_file: bool = False
    no_newline: frozenset[int] = frozenset()
    endings: tuple[str, ...] | None = None

    @classmethod
    def of(
        cls,
        lines: Sequence[HunkLine],
        header: str,
        patch_line: int,
        anchors: tuple[str, ...] = (),
        old_start: int | None = None,
        end_of_file: bool = False,
    ) -> Hunk:
        """A hunk made of line records."""
        stated = tuple(line.ending for line in lines)
        return cls(
            "".join(line.op for line in lines),
            tuple(line.text for line in lines),
            header,
            patch_line,
            anchors,
            old_start,
            end_of_file,
            frozenset(index for index, line in enumerate(lines) if line.no_newline),
            stated if any(stated) else None,
        )

    @property
    def lines(self) -> tuple[HunkLine, ...]:
        endings = self.endings or ("",) * len(self.texts)
        rows = zip(self.ops, self.texts, endings, strict=True)
        return tuple(
            HunkLine(op, text, index in self.no_newline, ending)
            for index, (op, text, ending) in enumerate(rows)
        )

    @functools.cached_property
    def old_lines(self) -> list[str]:
        if "+" not in self.ops:
            return list(self.texts)
        return [text for op, text in zip(self.ops, self.texts, strict=True) if op != "+"]

    @property
    def new_lines(self) -> list[str]:
        return [text for op, text in zip(self.ops, self.texts, strict=True) if op != "-"]


@dataclass(frozen=True)
class FilePatch:
    """One file section: ``kind`` is "add", "delete" or "update" (a rename is an update
    with ``move_to``)."""

    kind: str
    path: str
    move_to: str | None = None
    hunks: tuple[Hunk, ...] = ()
    style: str = "codex"
    patch_line: int = 0
    mode: int | None = None
    """Permission bits git's ``new file mode`` / ``new mode`` line sets (None: keep)."""


def malformed(line: int, problem: str, style: str) -> ToolError:
    """INVALID_ARGUMENT for a patch that cannot be read, with the format it should have."""
    example = UNIFIED_FORMAT if style == "unified" else CODEX_FORMAT
    return ToolError(
        ErrorCode.INVALID_ARGUMENT,
        f"patch line {line}: {problem}",
        "expected format:\n" + example,
        details={"patch_line": line},
    )
