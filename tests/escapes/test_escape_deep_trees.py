"""A folder nested thousands of levels deep, made by a command or a person: every walk
(listing, glob, read_many_files, grep with either backend, delete/copy/move planning,
the sandbox's start-up scans) answers with a result that says what it left out, or a
coded error; never INTERNAL_ERROR, and the event loop keeps answering meanwhile."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.ops.ignore import MAX_WALK_DEPTH
from tinyagent_fs.ops.search import grep

from ..conftest import PROVIDERS, make_provider

DEPTHS = [1500, 5000]
"""Past Python's recursion limit, and past PATH_MAX (a path of 10,000 characters)."""


def build_deep_tree(top: Path, levels: int) -> None:
    """``top/d/d/.../d`` with a ``note.txt`` at every level, made by descriptor (no path
    this long could be opened whole)."""
    top.mkdir()
    fd = os.open(top, os.O_DIRECTORY)
    try:
        for _ in range(levels):
            with open(os.open("note.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd), "w") as f:
                f.write("needle\n")
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


def remove_deep_tree(top: Path) -> None:
    """Bottom up by descriptor, one level at a time (pytest's own cleanup recurses)."""
    fds = [os.open(top, os.O_DIRECTORY)]
    try:
        while True:
            try:
                fds.append(os.open("d", os.O_DIRECTORY, dir_fd=fds[-1]))
            except FileNotFoundError:
                break
        while fds:
            fd = fds.pop()
            for name in os.listdir(fd):
                os.unlink(name, dir_fd=fd)
            os.close(fd)
            if fds:
                os.rmdir("d", dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)
    os.rmdir(top)


@pytest.fixture(scope="module", params=DEPTHS)
def deep_project(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Path]:
    """One tree per depth for the whole module: every call on it is a read or refused."""
    root = tmp_path_factory.mktemp("deep") / "project"
    root.mkdir()
    (root / "README.md").write_text("needle\n")
    build_deep_tree(root / "deep", request.param)
    yield root
    remove_deep_tree(root / "deep")


@pytest.fixture(params=PROVIDERS)
async def deep_fs(deep_project: Path, request: pytest.FixtureRequest) -> AsyncIterator[FileTools]:
    tools = FileTools(
        deep_project,
        SandboxPolicy(),
        provider=make_provider(request.param, deep_project),
        hooks=[AutoApprovePolicy()],
        audit=False,
        journal=False,
    )
    yield tools
    await tools.close()


async def answered_while(call: asyncio.Future) -> int:  # type: ignore[type-arg]
    """How many times the event loop ran another task while ``call`` was under way."""
    ticks = 0
    while not call.done():
        await asyncio.sleep(0.001)
        ticks += 1
    return ticks


async def call_with_loop_alive(fs: FileTools, name: str, args: dict):  # type: ignore[no-untyped-def]
    call = asyncio.ensure_future(fs.call(name, args))
    ticks = await answered_while(call)
    result = await call
    assert ticks > 0, "the event loop never ran while the call was under way"
    assert result.error is None or result.error.code != "INTERNAL_ERROR", result.text
    return result


async def test_glob_stops_at_the_depth_cap_and_says_so(deep_fs: FileTools) -> None:
    result = await call_with_loop_alive(deep_fs, "glob", {"pattern": "**/*", "limit": 1000})
    assert result.ok, result.text
    assert result.data["too_deep"] == 1
    assert len(result.data["matches"]) == MAX_WALK_DEPTH  # README, a note per level below
    assert f"more than {MAX_WALK_DEPTH} levels deep were not searched" in result.text


async def test_read_many_files_reads_what_it_can_and_says_what_it_left(
    deep_fs: FileTools,
) -> None:
    paths = ["README.md", "**/*"]  # the glob lists the newest, deepest files first
    result = await call_with_loop_alive(deep_fs, "read_many_files", {"paths": paths})
    assert result.ok, result.text
    assert "needle" in result.text
    assert f"more than {MAX_WALK_DEPTH} levels deep were not searched" in result.text
    assert "beyond the path limit; not read" in result.text


async def test_grep_stops_at_the_depth_cap_and_says_so(deep_fs: FileTools) -> None:
    result = await call_with_loop_alive(deep_fs, "grep", {"pattern": "needle", "limit": 1000})
    assert result.ok, result.text
    assert result.data["match_count"] == MAX_WALK_DEPTH


def test_the_python_grep_walks_without_recursion_and_marks_the_cap(deep_project: Path) -> None:
    found = grep(
        str(deep_project), str(deep_project), "needle", None, False, True, 0, 10_000, [], "python"
    )
    assert found["match_count"] == MAX_WALK_DEPTH
    assert found["too_deep"] == 1 and found["too_deep_first"].endswith("/d")


async def test_list_directory_at_its_deepest(deep_fs: FileTools) -> None:
    result = await call_with_loop_alive(deep_fs, "list_directory", {"path": ".", "depth": 20})
    assert result.ok, result.text


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("delete_path", {"path": "deep"}),
        ("copy_path", {"src": "deep", "dst": "copy"}),
        ("move_path", {"src": "deep", "dst": "moved"}),
    ],
)
async def test_changing_a_tree_too_deep_to_plan_is_refused_and_changes_nothing(
    deep_fs: FileTools, name: str, args: dict
) -> None:
    result = await call_with_loop_alive(deep_fs, name, args)
    assert result.error is not None and result.error.code == "PATH_TOO_DEEP", result.text
    assert (deep_fs.root / "deep" / "note.txt").exists()
    assert not (deep_fs.root / "copy").exists() and not (deep_fs.root / "moved").exists()
