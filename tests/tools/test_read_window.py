"""read_file by line windows: the same result as decoding the whole file, for less.

Each comparison reads one file through two toolkits: one that reads every file
by windows (``window_reads_above=0``) and one that reads every file whole.
Their results must be equal: text, numbers, markers, data and errors.
"""

from __future__ import annotations

import codecs
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.changes.changeset import content_hash
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.ops import line_index
from tinyagent_fs.ops.window import BLOCK_BYTES

from ..conftest import make_provider
from ..sandbox_support import require_sandbox

WINDOWED = SandboxPolicy(window_reads_above=0)
WHOLE = SandboxPolicy(window_reads_above=10**12)
NUMBERED = "".join(f"line {i}: déjà vu ✓ {'x' * (i % 17)}\n" for i in range(300))
CLIP = 4 * WHOLE.max_line_chars + 4


def mixed_endings() -> bytes:
    endings = ["\n", "\r\n", "\r", "\r\n", "\n"]
    return "".join(f"entry {i}{endings[i % 5]}" for i in range(200)).encode()


def long_lines() -> bytes:
    """Lines around the display cap and the byte cut, ASCII and multi-byte, one past a block."""
    return b"".join(
        [
            b"x" * 2500 + b"\n",  # truncated on display, not cut by the provider
            "é".encode() * 5000 + b"\r\n",  # 10,000 bytes: cut by the provider
            "€".encode() * 3000 + b"\n",
            "𝄞".encode() * 2001 + b"\n",  # exactly the cut in bytes: not cut, still truncated
            b"short\n",
            b"a" * (BLOCK_BYTES * 3 + 17) + b"\r\n",  # longer than a read block
            "b€".encode() * 40_000 + b"\r",
            b"\n",
            "tail 𝄞".encode() * 3000,  # a long last line without a newline
        ]
    )


def boundaries() -> bytes:
    """Over two read chunks of ASCII lines, with the awkward cases on the real boundaries:
    a CRLF across a checkpoint and across a chunk, a lone CR just before a checkpoint,
    an LF on one, and a 3-byte character across a chunk."""
    out = bytearray()

    def fill_to(position: int) -> None:
        while len(out) < position - 40:
            out.extend(f"filler {len(out):08d} {'y' * (len(out) % 23)}\n".encode())
        out.extend(b"z" * (position - len(out)))

    step, chunk = line_index.STEP, line_index.READ_BYTES
    fill_to(step - 1)
    out += b"\r\n"
    fill_to(2 * step - 1)
    out += b"\rnext\n"
    fill_to(3 * step)
    out += b"\n"
    fill_to(chunk - 1)
    out += b"\r\n"
    fill_to(2 * chunk - 1)
    out += "€ end of the straddle\n".encode()
    fill_to(2 * chunk + 5000)
    return bytes(out) + b"last line\n"


def corpus() -> dict[str, bytes]:
    return {
        "lf.txt": NUMBERED.encode(),
        "bom.txt": codecs.BOM_UTF8 + NUMBERED.encode(),
        "crlf.txt": NUMBERED.replace("\n", "\r\n").encode(),
        "cr.txt": NUMBERED.replace("\n", "\r").encode(),
        "mixed.txt": mixed_endings(),
        "no_final_newline.txt": NUMBERED.rstrip("\n").encode(),
        "ends_in_cr.txt": b"first\r\nsecond\r",
        "tie_lf_first.txt": b"one\ntwo\r\nthree\r\nfour\n",
        "tie_crlf_first.txt": b"a\r\nb\nc\r\nd\n",
        "blank_lines.txt": b"\n\n\r\n\r\r\n\n",
        "separators.txt": "form\x0cfeed\u2028line sep\x1cfile sep\n".encode() * 20,
        "latin1.txt": "Grüße aus Köln, très bien\n".encode("latin-1") * 50,
        "utf16.txt": codecs.BOM_UTF16_LE + NUMBERED.encode("utf-16-le"),
        "utf8_then_latin1.txt": NUMBERED.encode() + "caf\xe9\n".encode("latin-1"),
        "long_lines.txt": long_lines(),
        "empty.txt": b"",
        "only_bom.txt": codecs.BOM_UTF8,
        "nul.txt": b"abc\x00def\n" * 10,
        "image.png": b"\x89PNG\r\n\x1a\n" + b"\x00" * 64,
        "boundaries.txt": boundaries(),
    }


WHOLE_ONLY = {"latin1.txt", "utf16.txt", "utf8_then_latin1.txt", "empty.txt"}
"""Read whole even when windows are asked for: only a whole-file decode can judge them."""
REFUSED = {"nul.txt", "image.png"}
NOTES = "".join(f"note {i}\n" for i in range(1000))
"""Two files the settled corpus holds besides ``corpus()``, for the tests that change them."""


def windows(total: int) -> Iterator[dict[str, int | None]]:
    """Windows at the start, middle and end, one line, past the end, and tails."""
    ends = {0, 1, 2, total // 3, total // 2, total - 2, total - 1, total, total + 3}
    for offset in sorted(end for end in ends if end >= 0):
        for limit in (None, 1, 3):
            yield {"offset": offset, "limit": limit}
    for tail in sorted({1, 2, max(1, total // 2), max(1, total), total + 5}):
        yield {"tail": tail, "limit": None}
    yield {"tail": 5, "limit": 2}


def line_total(data: bytes) -> int:
    return data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n") + 2


async def compare(windowed: FileTools, whole: FileTools, name: str, args: dict) -> None:
    request = {"path": name, **args}
    got, expected = (
        await windowed.call("read_file", request),
        await whole.call("read_file", request),
    )
    assert got == expected, (name, args)


def toolkits(root: Path, provider: str = "local") -> tuple[FileTools, FileTools]:
    return tuple(  # type: ignore[return-value]
        FileTools(
            root,
            policy=policy,
            provider=make_provider(provider, root),
            hooks=[AutoApprovePolicy()],
            audit=False,
            journal=False,
        )
        for policy in (WINDOWED, WHOLE)
    )


def write_corpus(root: Path) -> dict[str, bytes]:
    files = corpus()
    for name, data in files.items():
        (root / name).write_bytes(data)
    return files


@pytest.fixture(scope="module")
def settled_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus, old enough that its file identities are trusted (and cached)."""
    root = tmp_path_factory.mktemp("settled")
    write_corpus(root)
    for name in ("conflict.txt", "editable.txt"):
        (root / name).write_text(NOTES)
    newest = max(os.stat(path).st_ctime_ns for path in root.iterdir())
    time.sleep(max(0.0, (newest + line_index.SETTLE_NS - time.time_ns()) / 1e9 + 0.05))
    return root


@pytest.mark.parametrize("name", sorted(set(corpus()) - {"boundaries.txt"}))
async def test_windows_of_fresh_files_match_whole_reads(tmp_path: Path, name: str) -> None:
    data = write_corpus(tmp_path)[name]
    windowed, whole = toolkits(tmp_path)
    for args in windows(line_total(data)):
        await compare(windowed, whole, name, args)
    # A file changed this instant is vouched for by its hash, as a whole read is.
    assert windowed.context.read_state.seen.get(tmp_path / name) == (
        whole.context.read_state.seen.get(tmp_path / name)
    )


@pytest.mark.parametrize("name", sorted(corpus()))
async def test_windows_of_settled_files_match_whole_reads_twice(
    settled_root: Path, name: str
) -> None:
    data = (settled_root / name).read_bytes()
    windowed, whole = toolkits(settled_root)
    for args in [*windows(line_total(data)), *windows(line_total(data))]:  # cold, then cached
        await compare(windowed, whole, name, args)
    known, path = windowed.context.read_state, settled_root / name
    if name in REFUSED:
        assert path not in known.seen
    elif name in WHOLE_ONLY:
        assert known.seen[path] == content_hash(data)
    else:
        assert known.identity_of(path) is not None  # read by windows, not whole


async def test_the_chunk_and_checkpoint_boundaries_match_whole_reads(settled_root: Path) -> None:
    data = (settled_root / "boundaries.txt").read_bytes()
    windowed, whole = toolkits(settled_root)
    step, chunk = line_index.STEP, line_index.READ_BYTES
    for position in (step - 1, 2 * step - 1, 3 * step, chunk - 1, 2 * chunk - 1, len(data) - 1):
        line = line_total(data[:position]) - 2
        for offset in range(max(0, line - 2), line + 3):
            await compare(windowed, whole, "boundaries.txt", {"offset": offset, "limit": 3})
    await compare(windowed, whole, "boundaries.txt", {"tail": 3})


@require_sandbox()
async def test_the_sandbox_worker_reads_the_same_windows(settled_root: Path) -> None:
    windowed, whole = toolkits(settled_root, "linux")
    try:
        for name in ("crlf.txt", "long_lines.txt", "boundaries.txt", "latin1.txt", "bom.txt"):
            data = (settled_root / name).read_bytes()
            total = line_total(data)
            for args in ({"offset": total // 2, "limit": 3}, {"tail": 4}, {"offset": total + 3}):
                await compare(windowed, whole, name, args)
    finally:
        await windowed.close()
        await whole.close()


@pytest.fixture
async def big(tmp_path: Path) -> AsyncIterator[tuple[FileTools, Path]]:
    """A 600 KB UTF-8 file, above the default window threshold, with the default policy."""
    path = tmp_path / "big.log"
    path.write_text("".join(f"{i:06d} event\n" for i in range(48_000)))
    tools = FileTools(tmp_path, hooks=[AutoApprovePolicy()], audit=False, journal=False)
    yield tools, path
    await tools.close()


async def test_tail_shows_the_last_lines_with_their_numbers(big: tuple[FileTools, Path]) -> None:
    fs, _ = big
    result = await fs.read_file("big.log", tail=3)
    assert result.text.splitlines() == [
        "[lines 1-47997 not shown; these are lines 47998-48000 of 48000]",
        " 47998\t047997 event",
        " 47999\t047998 event",
        " 48000\t047999 event",
    ]
    assert (result.data["first_line"], result.data["last_line"]) == (47998, 48000)


async def test_tail_with_limit_starts_that_far_from_the_end_and_says_how_to_read_on(
    big: tuple[FileTools, Path],
) -> None:
    fs, _ = big
    result = await fs.read_file("big.log", tail=10, limit=2)
    assert result.text.splitlines()[1:] == [
        " 47991\t047990 event",
        " 47992\t047991 event",
        "[... file continues: lines 47993-48000 not shown; "
        "call read_file with offset=47992 to read on]",
    ]


async def test_tail_longer_than_the_file_shows_it_from_the_first_line(
    fs: FileTools,
) -> None:
    result = await fs.read_file("src/pkg/core.py", tail=100)
    assert result.text.splitlines()[0] == "     1\tdef add(a, b):"
    assert result.data["last_line"] == 6


async def test_offset_and_tail_together_are_refused(fs: FileTools) -> None:
    result = await fs.call("read_file", {"path": "README.md", "offset": 0, "tail": 2})
    assert result.error.code == "INVALID_ARGUMENT"
    assert "offset and tail cannot be combined" in result.error.message
    assert (await fs.call("read_file", {"path": "README.md", "tail": 0})).error.code == (
        "INVALID_ARGUMENT"
    )


def test_the_schema_offers_tail_without_a_nullable_union(fs: FileTools) -> None:
    exported = {tool["name"]: tool for tool in fs.tool_schemas("anthropic")}["read_file"]
    properties = exported["input_schema"]["properties"]
    assert properties["tail"] == {
        "type": "integer",
        "description": "Show the last N lines instead (not together with offset).",
        "minimum": 1,
    }
    assert "default" not in properties["offset"]  # left out means from the first line
    assert exported["input_schema"]["required"] == ["path"]
    assert "tail=N" in exported["description"]


async def test_a_window_costs_its_own_bytes_not_the_files(big: tuple[FileTools, Path]) -> None:
    fs, path = big
    fs.new_round()
    assert (await fs.read_file("big.log", offset=20_000, limit=10)).ok
    assert 0 < fs.limiter.bytes <= 10 * len("047999 event\n")
    assert fs.limiter.bytes < path.stat().st_size


async def test_utf8_files_over_the_whole_file_limit_are_read_by_windows(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"row {i}\n" for i in range(20_000)))
    (tmp_path / "big_latin1.txt").write_bytes("ligne été\n".encode("latin-1") * 20_000)
    policy = SandboxPolicy(max_file_bytes=64 * 1024, window_reads_above=16 * 1024)
    fs = FileTools(tmp_path, policy=policy, hooks=[AutoApprovePolicy()], audit=False)
    result = await fs.read_file("big.txt", offset=19_998)
    assert result.text.splitlines() == [" 19999\trow 19998", " 20000\trow 19999"]
    refused = await fs.read_file("big_latin1.txt")
    assert refused.error.code == "TOO_LARGE"
    small_cap = SandboxPolicy(max_file_bytes=64 * 1024, max_window_file_bytes=100 * 1024)
    capped = FileTools(tmp_path, policy=small_cap, hooks=[AutoApprovePolicy()], audit=False)
    assert (await capped.read_file("big.txt")).error.code == "TOO_LARGE"


async def test_a_long_window_stops_at_the_byte_cap_and_says_where_to_read_on(
    tmp_path: Path,
) -> None:
    (tmp_path / "wide.txt").write_text(("w" * 900 + "\n") * 400)
    policy = SandboxPolicy(max_file_bytes=100 * 1024, window_reads_above=0)
    fs = FileTools(tmp_path, policy=policy, hooks=[AutoApprovePolicy()], audit=False)
    result = await fs.read_file("wide.txt")
    assert result.data["last_line"] == 113  # 113 lines of 901 bytes fit in 100 KB
    assert "call read_file with offset=113 to read on" in result.text


async def check_a_change_between_read_and_edit_is_a_conflict(root: Path, trusted: bool) -> None:
    path = root / "conflict.txt"
    fs = FileTools(root, policy=WINDOWED, hooks=[AutoApprovePolicy()], audit=False)
    assert (await fs.read_file("conflict.txt", offset=500, limit=5)).ok
    assert (fs.context.read_state.identity_of(path) is not None) == trusted
    path.write_text(path.read_text().replace("note 999", "NOTE 999"))  # same size
    result = await fs.edit_file("conflict.txt", "note 500\n", "note five hundred\n")
    assert result.error.code == "CONFLICT"
    assert "note 500\n" in path.read_text()
    assert "  1000\tNOTE 999" in (await fs.read_file("conflict.txt", tail=1)).text
    assert (await fs.edit_file("conflict.txt", "note 500\n", "note five hundred\n")).ok


async def test_a_change_after_a_window_read_of_a_settled_file_is_a_conflict(
    settled_root: Path,
) -> None:
    await check_a_change_between_read_and_edit_is_a_conflict(settled_root, trusted=True)


async def test_a_change_after_a_window_read_of_a_fresh_file_is_a_conflict(
    tmp_path: Path,
) -> None:
    (tmp_path / "conflict.txt").write_text(NOTES)
    await check_a_change_between_read_and_edit_is_a_conflict(tmp_path, trusted=False)


async def test_an_unchanged_file_read_by_windows_can_be_edited(settled_root: Path) -> None:
    fs = FileTools(settled_root, policy=WINDOWED, hooks=[AutoApprovePolicy()], audit=False)
    assert (await fs.read_file("editable.txt", tail=2)).ok
    assert fs.context.read_state.identity_of(settled_root / "editable.txt") is not None
    result = await fs.edit_file("editable.txt", "note 999\n", "note the last\n")
    assert result.ok, result.text
    assert (settled_root / "editable.txt").read_text().endswith("note 998\nnote the last\n")
