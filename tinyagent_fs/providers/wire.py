"""Framing between the toolkit and its sandboxed worker.

A frame is ``>IQ`` (header length, blob length), a JSON header, then raw blobs.
``bytes`` values anywhere in the message travel as blobs and are named in the
header by ``{"\\u0000b": [offset, length]}``, so file contents cross the socket
as they are: no base64, no JSON escaping, one copy on each side.

JSON, never pickle: the worker runs code an agent influences, and the parent
must be able to read whatever it sends without that being a way out. Sizes are
capped before anything is allocated, and a malformed frame is a ``WireError``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import socket
import struct
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

T = TypeVar("T")

PREFIX = struct.Struct(">IQ")
TIMEVAL = struct.Struct("@ll")
BLOB_KEY = "\x00b"
MAX_HEADER_BYTES = 64 * 1024 * 1024
MAX_BLOB_BYTES = 1024 * 1024 * 1024
TAKE_AHEAD_BYTES = 256 * 1024
"""The most ``take_queued`` looks at: a socketpair's buffer holds about this much."""
FIRST_LOOK_BYTES = 32 * 1024
"""What ``take_queued`` looks at first: several small answers, in memory from the heap.
A first look of ``TAKE_AHEAD_BYTES`` maps and unmaps memory on every call, which costs
tens of µs in a process with threads (each unmap is a TLB shootdown on every CPU)."""
SPIN_S = 0.0002
"""How long ``wait_readable`` polls before it sleeps, unless told: a quick answer
comes within it."""
IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 16
"""The most buffers one ``sendmsg`` takes (1024 on Linux; 16 is the POSIX floor)."""
_PEEK = socket.MSG_PEEK | socket.MSG_DONTWAIT
"""Built once: or-ing the flag enums runs Python code on every call."""
_SCALARS = frozenset({str, int, float, bool, type(None)})
_NUL_ESCAPE = "\\u0000"
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
"""Built once: ``json.dumps`` with options builds an encoder per message."""


class WireError(Exception):
    """The peer went away, was too slow, or sent something that is not a frame."""


def encode(message: Any) -> list[bytes]:
    """The frame for ``message`` as buffers to hand to ``sendmsg`` without joining."""
    lifted = _Lifted()
    payload = lifted.lift(message) if _holds_bytes(message) else message
    # A lone surrogate is a file name byte that is not UTF-8 (Python's surrogateescape):
    # it crosses as is, so the peer gets the very name back.
    header = _JSON.encode(payload).encode("utf-8", "surrogatepass")
    if len(header) > MAX_HEADER_BYTES or lifted.size > MAX_BLOB_BYTES:
        raise TypeError("message too large for one frame")
    return [PREFIX.pack(len(header), lifted.size), header, *lifted.blobs]


class _Lifted:
    """The blobs taken out of a message so far, and where the next one starts (kept
    as it grows: a commit of 500 files would otherwise sum 500 lengths 500 times).
    Holds no reference back to itself, so no cycle keeps a sent blob alive until the
    garbage collector happens by."""

    __slots__ = ("blobs", "size")

    def __init__(self) -> None:
        self.blobs: list[bytes] = []
        self.size = 0

    def lift(self, value: Any) -> Any:
        """``value`` with its bytes moved to ``blobs``."""
        if type(value) in _SCALARS:  # most values: looked up by exact type first
            return value
        if isinstance(value, (bytes, bytearray, memoryview)):
            blob = bytes(value)
            ref = {BLOB_KEY: [self.size, len(blob)]}
            self.blobs.append(blob)
            self.size += len(blob)
            return ref
        if isinstance(value, dict):
            if BLOB_KEY in value:
                raise TypeError(f"dict key {BLOB_KEY!r} is reserved by the wire format")
            # Scalars, most of a message, are kept without a call each.
            return {
                key if type(key) is str else _key(key): item
                if type(item) in _SCALARS
                else self.lift(item)
                for key, item in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [item if type(item) in _SCALARS else self.lift(item) for item in value]
        if isinstance(value, (str, int, float)):
            return value
        raise TypeError(f"{type(value).__name__} cannot cross the sandbox boundary")


def _holds_bytes(value: Any) -> bool:
    """Whether ``value`` holds bytes, so it must be lifted; TypeError for what cannot cross.

    The common answer (a listing of thousands of entries: no bytes) is found by
    type, not item by item: the distinct types of a container's items, and the
    distinct keys of a list of dicts, are collected in C, so the Python work grows
    with the shape of the message, not its length. A True here leaves the full
    check to ``_Lifted.lift``.
    """
    kind = type(value)
    if kind in _SCALARS:
        return False
    if kind is dict:
        return _dicts_hold_bytes([value])
    if kind is list or kind is tuple:
        return _items_hold_bytes(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return True
    if isinstance(value, dict):
        return _dicts_hold_bytes([value])
    if isinstance(value, (list, tuple)):
        return _items_hold_bytes(value)
    if isinstance(value, (str, int, float)):
        return False
    raise TypeError(f"{kind.__name__} cannot cross the sandbox boundary")


def _items_hold_bytes(items: Any) -> bool:
    kinds = set(map(type, items))
    if kinds <= _SCALARS:
        return False
    if kinds == {dict}:
        return _dicts_hold_bytes(items)
    return any(map(_holds_bytes, items))


def _dicts_hold_bytes(dicts: Any) -> bool:
    keys = set(itertools.chain.from_iterable(dicts))
    for key in keys:
        _key(key)
    if BLOB_KEY in keys:
        raise TypeError(f"dict key {BLOB_KEY!r} is reserved by the wire format")
    return _items_hold_bytes(list(itertools.chain.from_iterable(map(dict.values, dicts))))


def decode(header: bytes, blob_area: bytes) -> Any:
    """The message a frame carries; references outside the blob area are a WireError."""

    def resolve(obj: dict[str, Any]) -> Any:
        if BLOB_KEY not in obj:
            return obj
        ref = obj[BLOB_KEY]
        if len(obj) != 1 or not _is_span(ref, len(blob_area)):
            raise WireError("malformed blob reference")
        start, length = ref
        if start == 0 and length == len(blob_area):
            return blob_area
        return bytes(memoryview(blob_area)[start : start + length])

    try:
        text = header.decode("utf-8", "surrogatepass")
        # A blob reference is a key holding a NUL, which JSON can only spell as an
        # escape: without one in the header, no object needs looking at.
        if _NUL_ESCAPE not in text:
            return json.loads(text)
        return json.loads(text, object_hook=resolve)
    except (ValueError, RecursionError) as exc:
        raise WireError(f"undecodable frame header: {exc}") from None


def send_message(sock: socket.socket, message: Any) -> None:
    """Send a whole frame; partial writes of large blobs are resumed, not dropped, and
    a frame of more buffers than one ``sendmsg`` takes (``IOV_MAX``: a commit of a
    thousand files) goes in several."""
    buffers = [memoryview(buf) for buf in encode(message)]
    first = 0
    try:
        while first < len(buffers):
            sent = sock.sendmsg(buffers[first : first + IOV_MAX])
            while first < len(buffers) and sent >= len(buffers[first]):
                sent -= len(buffers[first])
                first += 1
            if sent:
                buffers[first] = buffers[first][sent:]
    except OSError as exc:
        raise WireError(f"cannot send to the peer: {exc}") from None


def recv_message(sock: socket.socket, deadline: float | None = None) -> Any:
    """Receive one frame; ``deadline`` (time.monotonic) bounds the whole frame.

    The socket is used in blocking mode with a kernel receive timeout, so the
    blob area can arrive in one ``recv(MSG_WAITALL)`` straight into the bytes
    object that is returned: a file read crosses with no copy on this side.
    """
    if sock.gettimeout() is not None:
        sock.settimeout(None)
    header_len, blob_len = PREFIX.unpack(_recv_all(sock, PREFIX.size, deadline))
    if header_len > MAX_HEADER_BYTES or blob_len > MAX_BLOB_BYTES:
        raise WireError(f"frame of {header_len}+{blob_len} bytes is over the limit")
    header = _recv_all(sock, header_len, deadline)
    return decode(header, _recv_all(sock, blob_len, deadline) if blob_len else b"")


def wait_readable(fd: int, timeout: float, spin: float = SPIN_S) -> bool:
    """Whether ``fd`` turns readable within ``timeout`` seconds.

    Polled, yielding the CPU between looks, for up to ``spin`` seconds first, then
    slept on. An answer that comes within the spin is seen at once; one that comes
    to a sleeping process waits for its wake-up, which on a virtual machine whose
    CPU went idle costs more than a quick answer itself (50-100 µs measured here).
    """
    watched = [fd]
    spin = min(timeout, spin)
    spin_until = time.monotonic() + spin
    while not select.select(watched, (), (), 0)[0]:
        if time.monotonic() >= spin_until:
            return timeout > spin and bool(select.select(watched, (), (), timeout - spin)[0])
        os.sched_yield()
    return True


def take_queued(sock: socket.socket, limit: int = TAKE_AHEAD_BYTES) -> tuple[list[Any], str | None]:
    """Every whole frame queued on ``sock`` (within ``limit`` bytes), taken without waiting.

    One look (``MSG_PEEK``) and one receive for all of them, where reading frame
    by frame costs several system calls each. The first look is ``FIRST_LOOK_BYTES``,
    a second one up to ``limit`` only when a frame goes on beyond it. Also returned,
    what comes next: ``"arriving"``, a frame whose rest is still being sent (or is
    larger than ``limit``: ``recv_message`` reads it, with no copy of its blobs);
    ``"closed"``, the peer is gone; None, nothing yet.
    """
    look = min(limit, FIRST_LOOK_BYTES)
    try:
        data = sock.recv(look, _PEEK)
    except BlockingIOError:
        return [], None
    except OSError:
        return [], "closed"
    if not data:
        return [], "closed"
    messages: list[Any] = []
    start, state = _take_frames(data, 0, messages)
    if state == "arriving" and len(data) == look < limit:
        with contextlib.suppress(OSError):  # still "arriving": recv_message will tell
            data = sock.recv(limit, _PEEK)  # at least the first look: it is still queued
            start, state = _take_frames(data, start, messages)
    if start:
        sock.recv(start, socket.MSG_WAITALL)  # what was looked at is queued: this cannot wait
    return messages, state


def _take_frames(data: bytes, start: int, messages: list[Any]) -> tuple[int, str | None]:
    """Decode the whole frames in ``data`` from ``start`` into ``messages``; where they
    end, and ``"arriving"`` when a frame is cut short there."""
    while len(data) - start >= PREFIX.size:
        header_len, blob_len = PREFIX.unpack_from(data, start)
        if header_len > MAX_HEADER_BYTES or blob_len > MAX_BLOB_BYTES:
            raise WireError(f"frame of {header_len}+{blob_len} bytes is over the limit")
        blobs = start + PREFIX.size + header_len
        if blobs + blob_len > len(data):
            return start, "arriving"
        messages.append(decode(data[start + PREFIX.size : blobs], data[blobs : blobs + blob_len]))
        start = blobs + blob_len
    return start, None


def _recv_all(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    """``size`` bytes, in the common case from one ``recv(MSG_WAITALL)`` straight into
    the bytes object returned; resumed when a signal or the timeout cuts it short."""
    first = _receive(sock, deadline, partial(sock.recv, size, socket.MSG_WAITALL))
    if len(first) == size:
        return first
    if not first:
        raise WireError("the peer closed the connection")
    return first + bytes(_recv_exact(sock, size - len(first), deadline))


def _recv_exact(sock: socket.socket, size: int, deadline: float | None) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    received = 0
    while received < size:
        count = _receive(sock, deadline, partial(sock.recv_into, view[received:]))
        if count == 0:
            raise WireError("the peer closed the connection")
        received += count
    return buffer


def _receive(sock: socket.socket, deadline: float | None, action: Callable[[], T]) -> T:
    """Run one receive under the kernel timeout SO_RCVTIMEO set to what is left.

    Without a deadline the socket's timeout is left as it is (the worker never
    sets one), which spares a syscall per read on that side.
    """
    if deadline is not None:
        seconds = deadline - time.monotonic()
        if seconds <= 0:
            raise WireError("timed out waiting for the peer")
        whole = int(seconds)
        timeval = TIMEVAL.pack(whole, int((seconds - whole) * 1e6))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
    try:
        return action()
    except BlockingIOError:
        raise WireError("timed out waiting for the peer") from None
    except OSError as exc:
        raise WireError(f"cannot receive from the peer: {exc}") from None


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"dict keys must be str, not {type(key).__name__}")
    return key


def _is_span(ref: Any, limit: int) -> bool:
    """Whether ``ref`` is ``[start, length]`` within ``limit`` (checked once per blob: a
    read of 500 files has 500, so no generator and no call per part)."""
    if type(ref) is not list or len(ref) != 2:
        return False
    start, length = ref
    return type(start) is int and type(length) is int and 0 <= start <= start + length <= limit
