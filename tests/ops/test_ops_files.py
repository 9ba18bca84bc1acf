"""Whole-file reads: one read(2) for a file that kept its size, and every byte of one
that did not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.ops.files import open_regular, read_bytes, read_open


def measured_as(size: int, path: Path) -> tuple[int, os.stat_result]:
    """A descriptor of ``path`` and its stat, with the size the file had when measured."""
    fd, info = open_regular(str(path))
    fields = list(info)
    fields[6] = size  # st_size
    return fd, os.stat_result(fields)


@pytest.mark.parametrize("measured", [0, 3, 9])
def test_a_file_that_grew_since_it_was_measured_is_read_whole(
    tmp_path: Path, measured: int
) -> None:
    path = tmp_path / "grows.txt"
    path.write_bytes(b"0123456789" * 300)
    fd, info = measured_as(measured, path)
    try:
        assert read_open(fd, str(path), info, 10_000) == path.read_bytes()
    finally:
        os.close(fd)


def test_growth_past_the_limit_since_the_measure_is_too_large(tmp_path: Path) -> None:
    path = tmp_path / "grows.txt"
    path.write_bytes(b"x" * 100)
    fd, info = measured_as(10, path)
    try:
        with pytest.raises(ToolError) as caught:
            read_open(fd, str(path), info, 50)
    finally:
        os.close(fd)
    assert caught.value.code is ErrorCode.TOO_LARGE
    assert caught.value.details == {"size": 51, "limit": 50}


def test_a_file_that_shrank_since_it_was_measured_gives_what_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "shrinks.txt"
    path.write_bytes(b"short\n")
    fd, info = measured_as(4096, path)
    try:
        assert read_open(fd, str(path), info, 10_000) == b"short\n"
    finally:
        os.close(fd)


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 1 << 20])
def test_files_are_read_byte_for_byte_at_every_size(tmp_path: Path, size: int) -> None:
    path = tmp_path / "file.bin"
    path.write_bytes(os.urandom(size))
    assert read_bytes(str(path), 2 << 20) == path.read_bytes()
    assert read_bytes(str(path), size) == path.read_bytes(), "exactly at the limit"


def test_a_byte_over_the_limit_is_too_large(tmp_path: Path) -> None:
    path = tmp_path / "file.bin"
    path.write_bytes(b"x" * 4097)
    with pytest.raises(ToolError) as caught:
        read_bytes(str(path), 4096)
    assert caught.value.code is ErrorCode.TOO_LARGE


def test_a_file_that_kept_its_size_is_read_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "file.txt"
    path.write_bytes(b"line\n" * 2000)
    sizes: list[int] = []
    real_read = os.read

    def counted(fd: int, size: int) -> bytes:
        sizes.append(size)
        return real_read(fd, size)

    monkeypatch.setattr(os, "read", counted)
    data = read_bytes(str(path), 50 << 20)
    monkeypatch.undo()
    assert data == path.read_bytes()
    assert sizes == [len(data) + 1], "one read, of one byte more than the file"
