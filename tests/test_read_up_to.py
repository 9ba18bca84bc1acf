"""Reading a whole file no further than its limit allows, with or without the size it
was measured at: what is read is what the file holds (up to one byte over the limit),
whether it grew or shrank since it was measured."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tinyagent_fs.config_file import CHUNK, read_up_to

SIZES = [0, 1, 10, 4096, CHUNK - 1, CHUNK, CHUNK + 7, 3 * CHUNK + 5]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("measured", ["none", "exact", "smaller", "larger", "zero"])
def test_the_whole_file_is_read_whatever_size_was_expected(
    tmp_path: Path, size: int, measured: str
) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    path = tmp_path / "file.bin"
    path.write_bytes(data)
    expected = {
        "none": None,
        "exact": size,
        "smaller": max(size - 3, 0),  # the file grew after it was measured
        "larger": size + 100,  # it shrank
        "zero": 0,
    }[measured]
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_up_to(fd, 4 * CHUNK, expected) == data
    finally:
        os.close(fd)


@pytest.mark.parametrize("expected", [None, 10, 100, 5000])
def test_no_more_than_one_byte_over_the_limit_is_read(tmp_path: Path, expected: int | None) -> None:
    path = tmp_path / "big.bin"
    path.write_bytes(b"x" * 5000)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_up_to(fd, 99, expected) == b"x" * 100
    finally:
        os.close(fd)


def test_a_pipe_that_delivers_in_pieces_is_read_to_its_end() -> None:
    """Short reads that are not the end (a pipe): reading goes on until there is none."""
    read_end, write_end = os.pipe()

    def second_piece() -> None:  # after the reader saw the first, short, read
        time.sleep(0.2)
        os.write(write_end, b"b" * 10)
        os.close(write_end)

    os.write(write_end, b"a" * 10)
    writer = threading.Thread(target=second_piece)
    writer.start()
    try:
        assert read_up_to(read_end, 1000, 10) == b"a" * 10 + b"b" * 10
    finally:
        writer.join()
        os.close(read_end)
