"""A diff the audit log recorded, as the same coloured table the approval card shows.

The log keeps only the unified diff text (capped at 64 KB), not the files, so
each side is coloured from the lines the diff holds: the context and removed
lines of a file make its old fragment, the context and added lines its new one.
A string that starts outside a hunk is then coloured as code; everything else
reads as in the card. Every text is escaped and its hidden characters marked.
"""

from __future__ import annotations

from ..text.display_safe import visible_html
from .diff_render import (
    COLUMNS,
    HIGHLIGHT_MAX_BYTES,
    ColouredLines,
    DiffTable,
    RenderedDiff,
    check_view,
)
from .diff_sections import FileDiff, split_file_diffs


def render_recorded_diff(
    diff: str,
    view: str = "unified",
    max_lines: int | None = None,
    *,
    highlight_max_bytes: int = HIGHLIGHT_MAX_BYTES,
) -> RenderedDiff:
    """The whole recorded diff as one table, one header row per file it names."""
    check_view(view)
    table = DiffTable(view, max_lines)
    for section in split_file_diffs(diff):
        name = section_name(section)
        if name:
            label = f"{visible_html(name)}  +{section.added} −{section.removed}"
            table.rows.append(f'<tr class="taf-file"><td colspan="{COLUMNS}">{label}</td></tr>')
        table.add(section, _Fragments(section, name, highlight_max_bytes))
    return table.rendered()


def section_name(section: FileDiff) -> str:
    """The file a section changes: its new name, or its old one when it was deleted."""
    names = [_strip_side(name) for name in section.names if name != "/dev/null"]
    return names[-1] if names else ""


def _strip_side(name: str) -> str:
    return name[2:] if name.startswith(("a/", "b/")) else name


class _Fragments:
    """Colour by the lines the diff holds of each side, looked up by line number."""

    def __init__(self, section: FileDiff, name: str, max_bytes: int) -> None:
        old = [line for line in section.lines if line.kind in ("context", "del")]
        new = [line for line in section.lines if line.kind in ("context", "add")]
        self._old_index = {line.old_no: i for i, line in enumerate(old, 1)}
        self._new_index = {line.new_no: i for i, line in enumerate(new, 1)}
        filename = name.rsplit("/", 1)[-1] or "diff.txt"
        self._old = ColouredLines("\n".join(line.text for line in old), filename, max_bytes)
        self._new = ColouredLines("\n".join(line.text for line in new), filename, max_bytes)

    def old_line(self, number: int | None, fallback: str) -> str:
        return self._old.line(self._old_index.get(number), fallback)

    def new_line(self, number: int | None, fallback: str) -> str:
        return self._new.line(self._new_index.get(number), fallback)
