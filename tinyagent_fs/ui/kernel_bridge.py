"""Where a click comes from in a Jupyter kernel, and how to keep clicks coming.

A click is a ``comm_msg`` on the shell channel. Which thread handles it, and
whether it is handled while a cell is still running, depends on ipykernel:

- **ipykernel >= 7.4** dispatches comm messages concurrently with a running
  async cell, on the thread that published the widget (the main shell thread,
  or the subshell a cell ran on). An agent awaited at the top level of a cell
  waits on that same event loop, which is free while it waits: clicks arrive.
- **ipykernel 7.0 - 7.3** queues them behind the running cell (unless the
  frontend routes them to a subshell, which then handles them on its own
  thread). A top-level awaited agent gets its clicks only from such a
  frontend; a background task (``asyncio.create_task``) gets them always.
- **ipykernel 6** keeps shell messages in ``kernel.msg_queue`` while a cell
  runs. ``pump_comm_messages`` takes the comm messages out of that queue and
  dispatches them (restoring the cell's parent header after each, so the
  cell's output stays in the cell), and puts everything else back in order.

Whatever the version, a thread that is blocked cannot deliver a click: a
synchronous wait on a shell thread, or an agent in a worker thread while the
cell that started it blocks the main thread. ``unresponsive`` notices the
second case so the wait ends with a default decision instead of hanging.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

PUMP_INTERVAL_S = 0.05
PROBE_INTERVAL_S = 0.25
SESSION_ENV = "JPY_SESSION_NAME"
"""Set by Jupyter Server for a kernel it started for a notebook or console."""


@dataclass(frozen=True)
class KernelSide:
    """The running ipykernel as the approval widgets need to know it."""

    kernel: Any
    main_thread: threading.Thread
    main_loop: asyncio.AbstractEventLoop | None
    version: tuple[int, int]

    @property
    def comms_flow_during_cells(self) -> bool:
        """True when a click is handled while an async cell on the same thread awaits."""
        return self.version >= (7, 4)

    def on_shell_thread(self) -> bool:
        """True on a thread that handles shell messages (main shell or a subshell)."""
        current = threading.current_thread()
        if current is self.main_thread:
            return True
        channel = getattr(self.kernel, "shell_channel_thread", None)
        manager = getattr(channel, "manager", None) if channel is not None else None
        finder = getattr(manager, "subshell_id_from_thread_id", None)
        if finder is None:
            return False
        try:
            return finder(current.ident) is not None
        except Exception:  # a subshell being torn down: not one we can wait on
            return False

    def on_main_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.main_loop
        except RuntimeError:
            return False

    def cell_running(self) -> bool:
        """True while the main shell thread is busy with an execute request."""
        lock = getattr(self.kernel, "_main_asyncio_lock", None)
        if lock is not None:
            return bool(lock.locked())
        queue = getattr(self.kernel, "msg_queue", None)
        # ipykernel 6: an idle kernel's dispatcher is parked in msg_queue.get().
        return queue is not None and not getattr(queue, "_getters", None)


def current_kernel() -> KernelSide | None:
    """The ipykernel this code runs in, or None (plain Python, terminal IPython)."""
    if "ipykernel" not in sys.modules:
        return None
    try:
        from ipykernel.kernelbase import Kernel
    except ImportError:
        return None
    if not Kernel.initialized():
        return None
    kernel = Kernel.instance()
    if getattr(kernel, "session", None) is None:
        return None
    channel = getattr(kernel, "shell_channel_thread", None)
    main_thread = getattr(channel, "parent_thread", None) or threading.main_thread()
    io_loop = getattr(kernel, "io_loop", None)
    main_loop = getattr(io_loop, "asyncio_loop", None)
    return KernelSide(kernel, main_thread, main_loop, _version())


def _version() -> tuple[int, int]:
    import ipykernel

    parts = str(getattr(ipykernel, "__version__", "0.0")).split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return 0, 0


def frontend_evidence() -> str:
    """Why we believe a person can click, or "" when nothing says so."""
    if os.environ.get(SESSION_ENV):
        return f"kernel started by Jupyter Server (${SESSION_ENV})"
    widget_module = sys.modules.get("ipywidgets.widgets.widget")
    widget_class = getattr(widget_module, "Widget", None)
    if getattr(widget_class, "_control_comm", None) is not None:
        return "a widget frontend opened the jupyter.widget.control comm"
    return ""


async def pump_comm_messages(side: KernelSide, until: asyncio.Future[Any]) -> None:
    """On ipykernel 6, dispatch queued comm messages while a cell awaits ``until``.

    Does nothing on kernels that dispatch comm messages themselves.
    """
    queue = getattr(side.kernel, "msg_queue", None)
    if side.version >= (7, 0) or queue is None:
        return
    held: list[Any] = []
    try:
        while not until.done():
            if side.cell_running():
                while not queue.empty():
                    item = queue.get_nowait()
                    if _is_comm_message(side.kernel, item):
                        await _dispatch_in_cell(side.kernel, item)
                    else:
                        held.append(item)
            await asyncio.wait({until}, timeout=PUMP_INTERVAL_S)
    finally:
        while not queue.empty():
            held.append(queue.get_nowait())
        for item in held:
            queue.put_nowait(item)


def _is_comm_message(kernel: Any, item: Any) -> bool:
    try:
        _, dispatch, args = item
        if dispatch != kernel.dispatch_shell:
            return False
        _, frames = kernel.session.feed_identities(args[0], copy=False)
        header = kernel.session.deserialize(frames, content=False, copy=False)["header"]
    except Exception:  # anything we cannot read goes back to the kernel untouched
        return False
    return header.get("msg_type") in ("comm_msg", "comm_open", "comm_close")


async def _dispatch_in_cell(kernel: Any, item: Any) -> None:
    """Handle one comm message, then give the running cell its parent header back."""
    _, dispatch, args = item
    parent = kernel.get_parent("shell")
    ident = getattr(kernel, "_parent_ident", {}).get("shell")
    try:
        result = dispatch(*args)
        if asyncio.iscoroutine(result):
            await result
    finally:
        kernel.set_parent(ident, parent, "shell")


async def unresponsive(loop: asyncio.AbstractEventLoop, grace_s: float) -> float:
    """Return once ``loop`` has not run a callback for ``grace_s`` seconds.

    Used while waiting on another loop: the loop that delivers clicks being
    stuck (a cell blocking the main thread) means no click can arrive.
    """
    last_seen = time.monotonic()

    def seen() -> None:
        nonlocal last_seen
        last_seen = time.monotonic()

    while True:
        try:
            loop.call_soon_threadsafe(seen)
        except RuntimeError:  # the loop is closed: nothing will ever answer
            return time.monotonic() - last_seen
        await asyncio.sleep(PROBE_INTERVAL_S)
        silent = time.monotonic() - last_seen
        if silent > grace_s:
            return silent


def responds(loop: asyncio.AbstractEventLoop | None, within_s: float) -> bool:
    """For blocking waits: does ``loop`` run a callback within ``within_s``?"""
    if loop is None or loop.is_closed():
        return False
    answered = threading.Event()
    try:
        loop.call_soon_threadsafe(answered.set)
    except RuntimeError:
        return False
    return answered.wait(within_s)
