"""Audit events as a table: HTML in a notebook, aligned text anywhere else.

The text form leaves out times and ids, so a notebook can check it as output
(nbval) and get the same table on every run. Both forms mark hidden characters.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..audit.log import AuditEvent
from ..text.display_safe import visible, visible_html

_HEADERS = ("time", "tool", "paths", "decision", "decided by", "outcome", "+/−")
_TEXT_HEADERS = ("tool", "paths", "decision", "decided by", "outcome", "+/-")


class AuditTable:
    """Display ``AuditTable(reader.tail(20))`` as a cell's last expression."""

    def __init__(self, events: Sequence[AuditEvent]) -> None:
        self.events = list(events)

    def rows(self) -> list[tuple[str, ...]]:
        """Each event's cells as recorded: mark them before showing them."""
        return [
            (
                event.tool,
                ", ".join(event.paths) or "-",
                event.decision,
                event.decided_by or "-",
                event.outcome + (" SECURITY" if event.security_violation else ""),
                f"+{event.lines_added} -{event.lines_removed}",
            )
            for event in self.events
        ]

    def text(self) -> str:
        rows = [_TEXT_HEADERS, *(tuple(map(visible, row)) for row in self.rows())]
        widths = [max(len(row[i]) for row in rows) for i in range(len(_TEXT_HEADERS))]
        return "\n".join(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in rows
        )

    def __str__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        printer.text(self.text())  # type: ignore[attr-defined]

    def _repr_html_(self) -> str:
        cell = (
            "padding: 2px 8px; text-align: left; "
            "border-bottom: 1px solid var(--jp-border-color2, #ddd)"
        )
        head = "".join(f'<th style="{cell}">{html.escape(h)}</th>' for h in _HEADERS)
        body = []
        for event, row in zip(self.events, self.rows(), strict=True):
            warn = event.security_violation or event.outcome == "denied"
            colour = "var(--jp-error-color1, #d32f2f)" if warn else "inherit"
            time = event.timestamp[11:19]
            cells = "".join(f'<td style="{cell}">{visible_html(v)}</td>' for v in (time, *row))
            body.append(f'<tr style="color: {colour}">{cells}</tr>')
        return (
            '<table style="border-collapse: collapse; font-family: var(--jp-ui-font-family); '
            'color: var(--jp-ui-font-color1); font-size: var(--jp-ui-font-size1)">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        )
