"""The worker's framing: raw bytes travel unescaped, malformed frames are refused."""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from tinyagent_fs.providers import wire


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


def test_nested_bytes_round_trip_as_raw_blobs(pair: tuple[socket.socket, socket.socket]) -> None:
    left, right = pair
    payload = bytes(range(256)) * 3
    message = {
        "ok": {"data": payload, "parts": [b"", b"\x00\xff", {"inner": b"x"}], "n": 1.5},
        "text": "héllo \x00 \u2028",
        "flag": None,
    }
    frame = b"".join(wire.encode(message))
    header_len, blob_len = struct.unpack(">IQ", frame[:12])
    assert blob_len == len(payload) + 3
    assert payload in frame, "file bytes must appear verbatim, not escaped"
    assert len(frame) < len(payload) + 300
    json.loads(frame[12 : 12 + header_len])
    wire.send_message(left, message)
    assert wire.recv_message(right, time.monotonic() + 5) == {
        "ok": {"data": payload, "parts": [b"", b"\x00\xff", {"inner": b"x"}], "n": 1.5},
        "text": "héllo \x00 \u2028",
        "flag": None,
    }


def test_large_message_survives_partial_writes(pair: tuple[socket.socket, socket.socket]) -> None:
    left, right = pair
    payload = bytes(range(256)) * (16 * 1024)
    sender = threading.Thread(target=wire.send_message, args=(left, {"ok": [payload, payload]}))
    sender.start()
    received = wire.recv_message(right, time.monotonic() + 10)
    sender.join()
    assert received == {"ok": [payload, payload]}


def test_more_blobs_than_one_sendmsg_takes_cross_in_one_frame(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    """A commit of thousands of files: more buffers than IOV_MAX, some of them empty."""
    left, right = pair
    files = [bytes([index % 251]) * (index % 7) for index in range(3 * wire.IOV_MAX)]
    message = {"ok": [{"path": f"f{index}", "data": data} for index, data in enumerate(files)]}
    sender = threading.Thread(target=wire.send_message, args=(left, message))
    sender.start()
    received = wire.recv_message(right, time.monotonic() + 10)
    sender.join()
    assert received == message


def test_a_large_listing_without_bytes_round_trips_unchanged(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    entries = [
        {"path": f"d/f{i}\u00e9", "size": i, "ratio": i / 3, "ignored": i % 2 == 0, "x": None}
        for i in range(3000)
    ]
    message = {"ok": {"entries": entries, "nested": [[1, "a\x00b"], {"k": ("t", 1)}]}}
    sender = threading.Thread(target=wire.send_message, args=(left, message))
    sender.start()
    received = wire.recv_message(right, time.monotonic() + 10)
    sender.join()
    assert received == {"ok": {"entries": entries, "nested": [[1, "a\x00b"], {"k": ["t", 1]}]}}


@pytest.mark.parametrize(
    "value",
    [
        {1: "non-str key"},
        {"x": object()},
        {wire.BLOB_KEY: [0, 0]},
        {1.5, 2.5},
        [{"a": 1}] * 50 + [{2: "non-str key deep in a list"}],
        {"ok": [{"a": 1}] * 50 + [{"a": [1, {wire.BLOB_KEY: 1}]}]},
        {"ok": [{"a": 1, "b": "x"}] * 50 + [{"a": 1, "b": {"c": object()}}]},
        [b"bytes first", {3: "then a bad key"}],
    ],
)
def test_values_that_cannot_cross_are_refused(value: object) -> None:
    with pytest.raises(TypeError):
        wire.encode(value)


@pytest.mark.parametrize(
    "header",
    [
        b'{"ok": {"\\u0000b": [0, 99]}}',
        b'{"ok": {"\\u0000b": [-1, 1]}}',
        b'{"ok": {"\\u0000b": [0, 1], "more": 1}}',
        b'{"ok": {"\\u0000b": "0"}}',
        b'{"ok": {"\\u0000\\u0062": [0, 99]}}',
        b'{"ok": "\xff not utf-8"}',
        b"not json",
        b"[" * 100_000,
    ],
)
def test_malformed_frames_are_wire_errors(
    pair: tuple[socket.socket, socket.socket], header: bytes
) -> None:
    left, right = pair
    left.sendall(struct.pack(">IQ", len(header), 4) + header + b"abcd")
    with pytest.raises(wire.WireError):
        wire.recv_message(right, time.monotonic() + 5)


def test_oversized_frame_is_refused_before_allocation(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    left.sendall(struct.pack(">IQ", 10, wire.MAX_BLOB_BYTES + 1))
    with pytest.raises(wire.WireError, match="over the limit"):
        wire.recv_message(right, time.monotonic() + 5)


def test_closed_peer_and_silent_peer_are_wire_errors(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    started = time.monotonic()
    with pytest.raises(wire.WireError, match="timed out"):
        wire.recv_message(right, time.monotonic() + 0.2)
    assert time.monotonic() - started < 2
    left.sendall(struct.pack(">IQ", 5, 0) + b"{")
    left.close()
    with pytest.raises(wire.WireError, match="closed"):
        wire.recv_message(right, time.monotonic() + 5)


def test_a_name_that_is_not_utf8_crosses_unchanged(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    name = os.fsdecode(b"caf\xe9.txt")
    wire.send_message(left, {"ok": {"entries": [{"name": name}], name: b"\xe9"}})
    received = wire.recv_message(right, time.monotonic() + 5)
    assert received == {"ok": {"entries": [{"name": name}], name: b"\xe9"}}
    assert os.fsencode(received["ok"]["entries"][0]["name"]) == b"caf\xe9.txt"


def test_take_queued_takes_every_whole_frame_at_once(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    assert wire.take_queued(right) == ([], None)
    messages = [{"ok": index, "data": b"x" * index} for index in range(5)]
    for message in messages:
        wire.send_message(left, message)
    assert wire.take_queued(right) == (messages, None)
    assert wire.take_queued(right) == ([], None), "the frames taken were not consumed"


def test_take_queued_leaves_a_frame_still_arriving_whole(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    frame = b"".join(wire.encode({"ok": b"y" * 1000}))
    left.sendall(b"".join(wire.encode({"ok": 1})) + frame[:500])
    assert wire.take_queued(right) == ([{"ok": 1}], "arriving")
    left.sendall(frame[500:])
    assert wire.recv_message(right, time.monotonic() + 5) == {"ok": b"y" * 1000}


def test_take_queued_looks_again_for_frames_beyond_its_first_look(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    """The first look is small; frames that go on past it but fit the limit are
    still taken, each once, and a frame cut short after them is left arriving."""
    left, right = pair
    third = wire.FIRST_LOOK_BYTES // 3
    messages = [{"ok": index, "data": bytes([index]) * third} for index in range(5)]
    for message in messages:
        wire.send_message(left, message)
    assert wire.take_queued(right) == (messages, None)
    last = b"".join(wire.encode({"ok": b"w" * wire.FIRST_LOOK_BYTES}))
    left.sendall(b"".join(wire.encode(messages[0])) + last[:-1])
    assert wire.take_queued(right) == ([messages[0]], "arriving")
    left.sendall(last[-1:])
    assert wire.take_queued(right) == ([{"ok": b"w" * wire.FIRST_LOOK_BYTES}], None)


def test_take_queued_leaves_a_frame_over_its_limit_to_recv_message(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    wire.send_message(left, {"ok": b"z" * 5000})
    assert wire.take_queued(right, limit=1000) == ([], "arriving")
    assert wire.recv_message(right, time.monotonic() + 5) == {"ok": b"z" * 5000}


def test_take_queued_reports_a_closed_peer_and_refuses_an_oversized_frame(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    left.sendall(struct.pack(">IQ", wire.MAX_HEADER_BYTES + 1, 0))
    with pytest.raises(wire.WireError, match="over the limit"):
        wire.take_queued(right)
    right.recv(64)
    left.close()
    assert wire.take_queued(right) == ([], "closed")


def test_wait_readable_sees_data_queued_while_spinning_and_while_asleep(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    assert not wire.wait_readable(right.fileno(), 0.0)
    assert not wire.wait_readable(right.fileno(), wire.SPIN_S / 2), "nothing was sent"
    left.sendall(b"x")
    assert wire.wait_readable(right.fileno(), 0.0)
    right.recv(1)
    late = threading.Timer(0.05, left.sendall, (b"y",))  # well after the spin: asleep by then
    late.start()
    try:
        assert wire.wait_readable(right.fileno(), 10.0)
    finally:
        late.join()
    assert right.recv(1) == b"y"
