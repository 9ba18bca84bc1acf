"""What a parsed patch is: file sections made of hunks made of lines.

One model serves both formats, so applying a patch does not care which one the
model wrote; the format only decides a few semantics, which ``FilePatch.style``
carries (line-number hints and no-newline markers exist only in unified diffs).
"""

from __future__ import annotations

import functools
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
    """``op`` is " " (context), "-" (removed) or "+" (added); ``text`` has no ending.

    ``no_newline`` records a following ``\\ No newline at end of file``; ``ending``
    is the line break the patch itself gives an added line ("" when it states none).
    A named tuple: a real patch has tens of thousands of these, and no record is
    cheaper to make.
    """

    op: str
    text: str
    no_newline: bool = False
    ending: str = ""


@dataclass(frozen=True)
class Hunk:
    """One contiguous change.

    ``anchors`` are Codex ``@@ <line>`` contexts, found in order before the hunk.
    ``old_start`` (1-based) is a unified diff's position hint: content decides,
    the hint only breaks ties. ``end_of_file`` pins the hunk to the file's end.
    """

    lines: tuple[HunkLine, ...]
    header: str
    patch_line: int
    anchors: tuple[str, ...] = ()
    old_start: int | None = None
    end_of_file: bool = False

    @functools.cached_property
    def old_lines(self) -> list[str]:
        return [line.text for line in self.lines if line.op != "+"]

    @property
    def new_lines(self) -> list[str]:
        return [line.text for line in self.lines if line.op != "-"]


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
