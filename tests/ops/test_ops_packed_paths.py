"""pack_paths / unpack_paths: every path comes back as it went, over the worker's wire too."""

from __future__ import annotations

import os
import socket

from tinyagent_fs.ops.packed_paths import pack_paths, pack_runs, unpack_paths
from tinyagent_fs.providers import wire

PATHS = [
    "a.txt",
    "dir/with space/b.md",
    "line\nbreak",
    "ünïcødé/名前.txt",
    os.fsdecode(b"caf\xe9.txt"),
    "\ud800lone-high-surrogate",
]


def test_paths_round_trip_exactly() -> None:
    blob = pack_paths(PATHS)
    assert isinstance(blob, bytes)
    assert unpack_paths(blob) == PATHS
    assert os.fsencode(unpack_paths(blob)[4]) == b"caf\xe9.txt"


def test_no_paths_is_an_empty_blob_and_back() -> None:
    assert pack_paths([]) == b""
    assert unpack_paths(b"") == []


def test_packed_paths_cross_the_wire_as_one_raw_blob() -> None:
    left, right = socket.socketpair()
    with left, right:
        blob = pack_paths(PATHS)
        frame = wire.encode({"ok": {"paths": blob}})
        assert frame[2:] == [blob]
        wire.send_message(left, {"ok": {"paths": blob}})
        assert unpack_paths(wire.recv_message(right)["ok"]["paths"]) == PATHS


def test_a_common_prefix_is_cut_from_every_path() -> None:
    blob = pack_paths(["src/a.py", "src/b\nc", "src/src/d", os.fsdecode(b"src/caf\xe9")])
    assert unpack_paths(blob, "src/") == ["a.py", "b\nc", "src/d", os.fsdecode(b"caf\xe9")]
    assert unpack_paths(b"", "src/") == []


def test_runs_of_names_pack_as_their_paths() -> None:
    runs = [("", ["a", "b"]), ("b/", []), ("b/", ["c\nd"]), ("b/e/", [os.fsdecode(b"\xe9")])]
    paths = ["a", "b", "b/c\nd", os.fsdecode(b"b/e/\xe9")]
    assert pack_runs(runs) == pack_paths(paths)
    assert unpack_paths(pack_runs(runs)) == paths
    assert pack_runs([]) == pack_runs([("x/", [])]) == b""
