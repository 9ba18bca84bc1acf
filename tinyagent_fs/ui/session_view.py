"""A live view of interactive sessions in a notebook: one pane per session, following
its terminal while it runs, between the model's calls too.

The view peeks at each session every ``interval_s`` (``session_peek``): the host's
new output is taken into the toolkit, where the model still reads it, and shown
here as the terminal would show it (``terminal_text``). A peek never types, never
waits and does not count as activity for the session's idle timeout. The pane
keeps its last ``max_lines`` lines.

    view = LiveSessionView(fs)   # before the agent starts sessions
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from ..text.display_safe import visible_html
from ..text.terminal_text import TerminalText

if TYPE_CHECKING:  # the shape only: the view follows what the toolkit's provider holds
    from ..providers.sessions import Session

PRE_STYLE = (
    "font-family: var(--jp-code-font-family, monospace); white-space: pre-wrap; margin: 0; "
    "max-height: 24em; overflow-y: auto; background: var(--jp-layout-color1); "
    "padding: 4px 8px; border: 1px solid var(--jp-border-color2)"
)


class SessionPane:
    """One session's pane: a heading and the terminal's last lines."""

    def __init__(self, session: Session, max_lines: int) -> None:
        self.session = session
        self.text = TerminalText()
        self.lines: deque[str] = deque(maxlen=max_lines)
        self.partial = ""
        self.widget = widgets.HTML()
        self._arrived: deque[bytes] = deque()
        self._lock = threading.Lock()
        self.render()

    def arrived(self, _: Session, output: bytes) -> None:
        """From any thread: a piece of output (b"" at the end)."""
        with self._lock:
            self._arrived.append(output)

    def render(self) -> None:
        """On the loop: feed what arrived and redraw."""
        with self._lock:
            pieces, self._arrived = list(self._arrived), deque()
        for piece in pieces:
            self.text.feed(piece)
        new = self.text.take()
        if new:
            parts = (self.partial + new).split("\n")
            self.partial = parts.pop()
            self.lines.extend(parts)
        session = self.session
        state = (
            "running"
            if session.live
            else f"exited with code {session.exit_code}"
            if session.ended == "exited"
            else f"ended ({session.ended})"
        )
        heading = f"session {session.id} · {state} · $ {session.command}"
        body = "\n".join([*self.lines, self.partial])
        self.widget.value = (
            f"<div><b>{visible_html(heading)}</b></div>"
            f'<pre style="{PRE_STYLE}">{visible_html(body, keep_newlines=True)}</pre>'
        )


class LiveSessionView:
    """Follows every session a toolkit starts from now on; ``box`` holds the panes."""

    def __init__(
        self, fs: Any, *, interval_s: float = 0.5, max_lines: int = 200, show: bool = True
    ) -> None:
        self.provider = fs.provider
        self.interval_s = interval_s
        self.max_lines = max_lines
        self.panes: dict[str, SessionPane] = {}
        self.box = widgets.VBox([])
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        with contextlib.suppress(RuntimeError):
            self._loop = asyncio.get_running_loop()
        self.provider.sessions.watchers.append(self._started)
        if show:
            with contextlib.suppress(ImportError):
                from IPython.display import display

                display(self.box)

    def _started(self, session: Session) -> None:
        """From the provider's thread: a session started; follow it on the loop."""
        pane = SessionPane(session, self.max_lines)
        session.listeners.append(pane.arrived)
        self.panes[session.id] = pane
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._follow, pane)

    def _follow(self, pane: SessionPane) -> None:
        self.box.children = (*self.box.children, pane.widget)
        task = asyncio.ensure_future(self._poll(pane))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _poll(self, pane: SessionPane) -> None:
        while pane.session.live:
            with contextlib.suppress(Exception):
                await self.provider.session_peek(pane.session.id)
            pane.render()
            await asyncio.sleep(self.interval_s)
        pane.render()

    def close(self) -> None:
        """Stop following (the sessions go on)."""
        with contextlib.suppress(ValueError):
            self.provider.sessions.watchers.remove(self._started)
        for task in list(self._tasks):
            task.cancel()
