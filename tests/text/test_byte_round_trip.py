"""Every mutating tool keeps a file's bytes outside what it changes: encoding, BOM,
each untouched line ending and the final-newline state, checked byte for byte."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.providers import LocalProvider

STYLES: dict[str, tuple[str, str, str]] = {
    # name: (encoding, line ending of the file, final text after the lines)
    "utf-8": ("utf-8", "\n", "\n"),
    "utf-8-bom": ("utf-8-sig", "\n", "\n"),
    "utf-8-bom-crlf": ("utf-8-sig", "\r\n", "\r\n"),
    "utf-16-le": ("utf-16-le-bom", "\n", "\n"),
    "utf-16-be-crlf": ("utf-16-be-bom", "\r\n", "\r\n"),
    "cp1252-crlf": ("cp1252", "\r\n", "\r\n"),
    "latin-1": ("latin-1", "\n", "\n"),
    "shift-jis": ("shift_jis", "\n", "\n"),
    "crlf-no-final-newline": ("utf-8", "\r\n", ""),
    "lf-no-final-newline": ("utf-8", "\n", ""),
}
LINES = ["first line caf\u00e9 \u00a0nbsp", "  target = 1", "last line"]
NON_LATIN = {"shift-jis": ["\u65e5\u672c\u8a9e first", "  target = 1", "last \u30c6\u30b9\u30c8"]}


def encode(text: str, encoding: str) -> bytes:
    if encoding == "utf-16-le-bom":
        return b"\xff\xfe" + text.encode("utf-16-le")
    if encoding == "utf-16-be-bom":
        return b"\xfe\xff" + text.encode("utf-16-be")
    return text.encode(encoding)


def file_bytes(style: str, lines: list[str]) -> bytes:
    encoding, ending, final = STYLES[style]
    return encode(ending.join(lines) + final, encoding)


def original_lines(style: str) -> list[str]:
    return NON_LATIN.get(style, LINES)


def expected_bytes(style: str) -> bytes:
    lines = original_lines(style)
    return file_bytes(style, [lines[0], "  target = 2", lines[2]])


Edit = Callable[[FileTools, str], Awaitable[object]]


async def edit_file(fs: FileTools, name: str) -> object:
    return await fs.edit_file(name, "target = 1", "target = 2")


async def multi_edit(fs: FileTools, name: str) -> object:
    edits = [
        {"old_string": "target = 1", "new_string": "target = 9"},
        {"old_string": "target = 9", "new_string": "target = 2"},
    ]
    return await fs.multi_edit(name, edits)


async def regex_edit(fs: FileTools, name: str) -> object:
    return await fs.call(
        "edit_file",
        {"path": name, "old_string": r"target = \d", "new_string": "target = 2", "regex": True},
    )


async def update_file(fs: FileTools, name: str) -> object:
    return await fs.call(
        "update_file",
        {"file_path": name, "old_content": "target = 1", "new_content": "target = 2"},
    )


async def apply_patch(fs: FileTools, name: str) -> object:
    patch = (
        f"*** Begin Patch\n*** Update File: {name}\n@@\n-  target = 1\n+  target = 2\n"
        "*** End Patch\n"
    )
    return await fs.apply_patch(patch)


async def undo_of_a_change(fs: FileTools, name: str) -> object:
    """Undo must bring back the original bytes exactly (checked by the caller)."""
    return await fs.undo()


TOOLS: dict[str, Edit] = {
    "edit_file": edit_file,
    "multi_edit": multi_edit,
    "regex_edit": regex_edit,
    "update_file": update_file,
    "apply_patch": apply_patch,
}


@pytest.fixture(params=["local", "linux"])
def provider_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def make_tools(root: Path, provider_name: str) -> FileTools:
    provider = LocalProvider() if provider_name == "local" else None
    return FileTools(root, provider=provider, hooks=[AutoApprovePolicy()], audit=False)


@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.parametrize("tool", sorted(TOOLS))
async def test_mutating_tools_keep_every_untouched_byte(
    tmp_path: Path, tool: str, style: str
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    path = root / "file.txt"
    path.write_bytes(file_bytes(style, original_lines(style)))
    async with make_tools(root, "local") as fs:
        await fs.read_file("file.txt")
        result = await TOOLS[tool](fs, "file.txt")
        assert getattr(result, "ok", False), getattr(result, "text", result)
    assert path.read_bytes() == expected_bytes(style)


@pytest.mark.parametrize("style", sorted(STYLES))
async def test_undo_restores_the_exact_bytes(
    tmp_path: Path, style: str, provider_name: str
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    path = root / "file.txt"
    original = file_bytes(style, original_lines(style))
    path.write_bytes(original)
    async with make_tools(root, provider_name) as fs:
        await fs.read_file("file.txt")
        assert (await edit_file(fs, "file.txt")).ok  # type: ignore[attr-defined]
        assert path.read_bytes() == expected_bytes(style)
        result = await undo_of_a_change(fs, "file.txt")
        assert result.ok, result.text  # type: ignore[attr-defined]
    assert path.read_bytes() == original


@pytest.mark.parametrize("tool", sorted(TOOLS))
async def test_the_sandboxed_provider_keeps_bytes_too(tmp_path: Path, tool: str) -> None:
    root = tmp_path / "project"
    root.mkdir()
    path = root / "file.txt"
    style = "utf-8-bom-crlf"
    path.write_bytes(file_bytes(style, original_lines(style)))
    async with make_tools(root, "linux") as fs:
        await fs.read_file("file.txt")
        result = await TOOLS[tool](fs, "file.txt")
        assert getattr(result, "ok", False), getattr(result, "text", result)
    assert path.read_bytes() == expected_bytes(style)


@pytest.mark.parametrize("tool", sorted(TOOLS))
async def test_mixed_line_endings_stay_as_they_were(tmp_path: Path, tool: str) -> None:
    root = tmp_path / "project"
    root.mkdir()
    path = root / "file.txt"
    path.write_bytes(b"one\r\n  target = 1\ntwo\r\nthree")
    async with make_tools(root, "local") as fs:
        await fs.read_file("file.txt")
        result = await TOOLS[tool](fs, "file.txt")
        assert getattr(result, "ok", False), getattr(result, "text", result)
    assert path.read_bytes() == b"one\r\n  target = 2\ntwo\r\nthree"


async def test_lines_added_to_a_crlf_file_get_crlf(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    path = root / "file.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\n  target = 1\r\nlast")
    async with make_tools(root, "local") as fs:
        await fs.read_file("file.txt")
        result = await fs.edit_file("file.txt", "  target = 1", "  target = 2\n  added = 3")
        assert result.ok, result.text
    assert path.read_bytes() == b"\xef\xbb\xbfone\r\n  target = 2\r\n  added = 3\r\nlast"
