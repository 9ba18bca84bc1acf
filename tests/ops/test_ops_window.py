"""The read_window primitive and its line index, against a whole-file decode.

The property tests scan with tiny checkpoint, read and block sizes, so that CRLF
pairs, multi-byte characters and long lines fall across every kind of boundary
the real sizes (16 KiB, 1 MiB) only meet in large files.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.ops import OPERATIONS, line_index
from tinyagent_fs.ops.window import read_window, window_lines
from tinyagent_fs.text.codec import decode_text, split_lines

PIECES = ["a", "bc", "é", "€", "𝄞", "\n", "\r\n", "\r", " ", "\t", "\x0c", "\u2028"]
"""Text made of these: every ending, 1- to 4-byte characters, and separators that
str.splitlines splits on but line numbers must not."""


@contextmanager
def opened(data: bytes) -> Iterator[int]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "file.txt"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            yield fd
        finally:
            os.close(fd)


def expected_window(data: bytes, first: int, limit: int) -> list[str]:
    return split_lines(decode_text(data).text)[first : first + limit]


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(st.sampled_from(PIECES), max_size=120).map("".join),
    bom=st.booleans(),
    step=st.integers(1, 9),
    read_bytes=st.integers(1, 23),
    block=st.integers(1, 11),
    first=st.integers(0, 40),
    limit=st.integers(1, 50),
    max_bytes=st.one_of(st.just(10**6), st.integers(1, 60)),
)
def test_any_window_matches_the_whole_file_decode(
    text: str,
    bom: bool,
    step: int,
    read_bytes: int,
    block: int,
    first: int,
    limit: int,
    max_bytes: int,
) -> None:
    data = (codecs.BOM_UTF8 if bom else b"") + text.encode()
    whole = decode_text(data)
    with opened(data) as fd:
        scan = line_index.scan_file(fd, len(data), digest=True, step=step, read_bytes=read_bytes)
        assert scan is not None
        index = scan.index
        assert scan.sha256 == hashlib.sha256(data).hexdigest()
        assert index.total_lines == len(split_lines(whole.text))
        assert index.newline == whole.newline
        assert index.text_start == len(whole.bom)
        lines, clipped = window_lines(fd, index, first, limit, 10**6, max_bytes, block)
    assert clipped == []
    got, expected = split_lines(lines.decode()), expected_window(data, first, limit)
    assert got == expected[: len(got)]
    if len(got) < len(expected):  # stopped by the byte cap, after at least one line
        assert got and len(lines) + len(expected[len(got)].encode()) > max_bytes
    assert len(lines) <= max_bytes or len(got) == 1


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.tuples(
            st.lists(st.sampled_from(["x", "é", "€", "𝄞"]), max_size=40).map("".join),
            st.sampled_from(["\n", "\r\n", "\r", ""]),
        ),
        min_size=1,
        max_size=12,
    ),
    clip=st.integers(4, 30),
    block=st.integers(1, 17),
)
def test_long_lines_come_back_cut_at_a_character_with_their_length(
    lines: list[tuple[str, str]], clip: int, block: int
) -> None:
    data = "".join(body + ending for body, ending in lines).encode()
    full = split_lines(data.decode())
    with opened(data) as fd:
        scan = line_index.scan_file(fd, len(data), digest=False, step=4, read_bytes=8)
        assert scan is not None
        window, clipped = window_lines(fd, scan.index, 0, 100, clip, 10**6, block)
    got = split_lines(window.decode())
    assert len(got) == len(full)
    cut = dict(clipped)
    for number, (line, original) in enumerate(zip(got, full, strict=True)):
        body, original_body = line.rstrip("\r\n"), original.rstrip("\r\n")
        assert line[len(body) :] == original[len(original_body) :]  # same ending
        if len(original_body.encode()) > clip:
            assert cut[number] == len(original_body)
            assert original_body.startswith(body) and len(body.encode()) <= clip
            assert len(body.encode()) > clip - 4  # only a split character was dropped
        else:
            assert number not in cut and body == original_body


@pytest.mark.parametrize(
    "data",
    [
        "ünïcödé\n".encode() * 3 + b"caf\xe9\n",  # UTF-8 until a latin-1 byte at the end
        codecs.BOM_UTF16_LE + "two\nlines\n".encode("utf-16-le"),
        b"abc\x00def\n",
        b"\x89PNG\r\n\x1a\n" + b"\x00" * 32,
        b"ok\n" + "€".encode()[:2],  # a character cut off by the end of the file
    ],
    ids=["legacy-at-the-end", "utf-16", "nul", "png", "truncated-character"],
)
def test_what_is_not_utf8_text_is_left_to_the_whole_file_decode(data: bytes) -> None:
    with opened(data) as fd:
        assert line_index.scan_file(fd, len(data), digest=False, step=2, read_bytes=3) is None


def test_a_file_changed_this_instant_is_not_trusted_by_identity() -> None:
    now = 10**18
    recent = SimpleNamespace(st_ctime_ns=now - line_index.SETTLE_NS + 1)
    old = SimpleNamespace(st_ctime_ns=now - line_index.SETTLE_NS)
    unknown = SimpleNamespace(st_ctime_ns=0)
    assert not line_index.settled(recent, now)  # type: ignore[arg-type]
    assert line_index.settled(old, now)  # type: ignore[arg-type]
    assert not line_index.settled(unknown, now)  # type: ignore[arg-type]


def test_the_index_cache_keeps_the_most_recently_used() -> None:
    cache = line_index.IndexCache(2)
    index = line_index.LineIndex(1, 0, 1, "\n", [0], [0])
    cache.put("a", index)
    cache.put("b", index)
    assert cache.get("a") is index  # "a" is now the most recent
    cache.put("c", index)
    assert cache.get("b") is None and cache.get("a") is index and cache.get("c") is index


def call_window(path: Path, **overrides: object) -> dict:
    request: dict = {
        "offset": 0,
        "limit": 10,
        "line_bytes": 100,
        "max_bytes": 10**6,
        "whole_up_to": 0,
        "max_window_file_bytes": 10**7,
        **overrides,
    }
    return read_window(str(path), **request)


def test_small_and_non_utf8_files_come_back_whole(tmp_path: Path) -> None:
    small, legacy = tmp_path / "small.txt", tmp_path / "legacy.txt"
    small.write_bytes(b"one\ntwo\n")
    legacy.write_bytes("Grüße\n".encode("latin-1") * 50)
    assert call_window(small, whole_up_to=8) == {"whole": b"one\ntwo\n"}
    assert call_window(legacy) == {"whole": legacy.read_bytes()}
    with pytest.raises(ToolError) as caught:
        call_window(legacy, max_bytes=100)
    assert caught.value.code is ErrorCode.TOO_LARGE


def test_a_window_names_the_version_it_read(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"".join(b"line %d\r\n" % i for i in range(30)))
    found = call_window(path, tail=3)
    assert found["lines"] == b"line 27\r\nline 28\r\nline 29\r\n"
    assert (found["first_line"], found["total_lines"], found["newline"]) == (27, 30, "\r\n")
    info = os.stat(path)
    proof = {key: found[key] for key in ("sha256", "identity") if key in found}
    # Just written, so hashed; by identity only if this machine stalled for seconds.
    assert proof in (
        {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()},
        {
            "identity": f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:"
            f"{info.st_ctime_ns}"
        },
    )


def test_a_window_stops_before_passing_the_byte_cap(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"0123456789\n" * 20)
    found = call_window(path, limit=20, max_bytes=35)
    assert found["lines"] == b"0123456789\n" * 3
    huge = call_window(path, limit=20, max_bytes=5)  # one line always comes
    assert huge["lines"] == b"0123456789\n"


def test_files_over_the_window_limit_are_too_large(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"x\n" * 100)
    with pytest.raises(ToolError) as caught:
        call_window(path, max_bytes=10, max_window_file_bytes=150)
    assert caught.value.code is ErrorCode.TOO_LARGE
    assert "150" in caught.value.message


@pytest.mark.parametrize(
    "overrides",
    [
        {"offset": -1},
        {"offset": True},
        {"offset": "3"},
        {"limit": 0},
        {"limit": 1.5},
        {"tail": 0},
        {"tail": 2, "offset": 1},
        {"line_bytes": None},
        {"max_bytes": -5},
        {"whole_up_to": []},
        {"max_window_file_bytes": False},
    ],
)
def test_bad_arguments_are_refused_before_anything_is_read(tmp_path: Path, overrides: dict) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"x\n")
    with pytest.raises(ToolError) as caught:
        call_window(path, **overrides)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    with pytest.raises(ToolError) as caught:
        call_window(tmp_path / "missing.txt", **overrides)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT  # arguments first, then the path


def test_the_primitive_is_in_the_provider_table() -> None:
    assert OPERATIONS["read_window"] is read_window


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ToolError) as caught:
        call_window(fifo)
    assert caught.value.code is ErrorCode.NOT_TEXT
