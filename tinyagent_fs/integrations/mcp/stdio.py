"""The process's stdin and stdout as the MCP wire, kept away from everything else.

Serving reads and writes private duplicates of fd 0 and 1; fd 0 then reads
/dev/null and fd 1 writes to stderr, so a stray ``print`` or a child process can
never put bytes on the wire or eat a request. Pipes are watched by the event
loop; what it cannot watch (a regular file a script redirected, or any stdin on
Windows) is read on a thread and written in place.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable

from ..._runtime.durable import write_all

if sys.platform != "win32":
    import fcntl

FLUSH_LIMIT_S = 5.0
"""How long the last answers may wait at exit for a client that stopped reading."""


class StdioLines:
    """Lines in from stdin, bytes out to stdout; ``close`` gives fd 0 and 1 back."""

    def __init__(self) -> None:
        self.read_fd = _private_copy(0)
        self.write_fd = _private_copy(1)
        sys.stdout.flush()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        self._reading: asyncio.BaseTransport | asyncio.Task[None] | None = None
        self._transport: asyncio.WriteTransport | None = None

    async def start(self, on_data: Callable[[bytes], None], on_eof: Callable[[], None]) -> None:
        if sys.platform == "win32":
            self._reading = asyncio.ensure_future(_read_on_thread(self.read_fd, on_data, on_eof))
            return
        loop = asyncio.get_running_loop()
        reader = os.fdopen(self.read_fd, "rb", buffering=0, closefd=False)
        try:
            self._reading, _ = await loop.connect_read_pipe(lambda: _Feed(on_data, on_eof), reader)
        except ValueError:
            self._reading = asyncio.ensure_future(_read_on_thread(self.read_fd, on_data, on_eof))
        writer = os.fdopen(self.write_fd, "wb", buffering=0, closefd=False)
        try:
            self._transport, _ = await loop.connect_write_pipe(asyncio.Protocol, writer)
        except ValueError:
            self._transport = None

    def write(self, data: bytes) -> None:
        if self._transport is None:
            write_all(self.write_fd, data)
        elif not self._transport.is_closing():
            self._transport.write(data)

    async def flush(self) -> None:
        """Wait until what was written has left, so the client sees it before we exit."""
        transport = self._transport
        give_up = time.monotonic() + FLUSH_LIMIT_S
        while transport is not None and not transport.is_closing():
            if transport.get_write_buffer_size() == 0 or time.monotonic() > give_up:
                return
            await asyncio.sleep(0.001)

    def close(self) -> None:
        """Stop reading and writing (before the descriptors go), then give fd 0 and 1 back."""
        if isinstance(self._reading, asyncio.Task):
            self._reading.cancel()
        elif self._reading is not None:
            self._reading.close()
        if self._transport is not None:
            self._transport.close()
        for fd, std in ((self.read_fd, 0), (self.write_fd, 1)):
            try:
                os.dup2(fd, std)
                os.close(fd)
            except OSError:
                pass


class _Feed(asyncio.Protocol):
    def __init__(self, on_data: Callable[[bytes], None], on_eof: Callable[[], None]) -> None:
        self.on_data = on_data
        self.on_eof = on_eof

    def data_received(self, data: bytes) -> None:
        self.on_data(data)

    def eof_received(self) -> bool:
        self.on_eof()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.on_eof()


def _private_copy(fd: int) -> int:
    """A duplicate of ``fd`` that children do not inherit, above the standard three."""
    if sys.platform == "win32":
        return os.dup(fd)  # not inheritable either
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


async def _read_on_thread(
    fd: int, on_data: Callable[[bytes], None], on_eof: Callable[[], None]
) -> None:
    while chunk := await asyncio.to_thread(os.read, fd, 1 << 16):
        on_data(chunk)
    on_eof()
