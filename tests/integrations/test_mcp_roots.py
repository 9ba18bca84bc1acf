"""Which folders ``tinyagent-fs mcp`` serves: several ``--root`` folders, narrowed by MCP roots.

The server tests use the SDK's client; its ``list_roots_callback`` plays a
client application whose person opened some folders. Roots are asked for by
``roots/list`` after ``initialize`` (2025-11-25, ``mode="legacy"``) or by an
``input_required`` answer to the first call (2026-07-28, ``mode="auto"``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import MCPDeprecationWarning, types

from tinyagent_fs.integrations.mcp.roots import directory_of_uri, narrowed

from ..mcp_sdk import connect, error_code, events


@pytest.fixture
def other(tmp_path: Path) -> Path:
    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "notes.txt").write_text("second root\n")
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("not served\n")
    return folder


def roots_of(*folders: Path):
    """A client's roots callback answering ``folders``; ``asked`` counts the questions."""

    async def list_roots(context: object) -> types.ListRootsResult:
        list_roots.asked += 1  # type: ignore[attr-defined]
        return types.ListRootsResult(roots=[types.Root(uri=f.as_uri()) for f in folders])

    list_roots.asked = 0  # type: ignore[attr-defined]
    return list_roots


def served(result: types.CallToolResult) -> list[str]:
    return result.structured_content["data"]["roots"]


async def test_relative_paths_go_to_the_first_root_and_absolute_ones_to_either(
    project: Path, other: Path, isolated_audit_dir: Path
) -> None:
    async with connect([project, other], isolated_audit_dir, "auto-approve") as client:
        listed = await client.call_tool("list_allowed_directories", {})
        first = await client.call_tool("read_file", {"path": "README.md"})
        second = await client.call_tool("read_file", {"path": str(other / "notes.txt")})
        new = {"path": str(other / "new.txt"), "content": "hi\n"}
        written = await client.call_tool("write_file", new)

    assert served(listed) == [str(project.resolve()), str(other.resolve())]
    assert "relative paths start here" in listed.content[0].text
    assert "# Sample" in first.content[0].text
    assert "second root" in second.content[0].text
    assert not written.is_error and (other / "new.txt").read_text() == "hi\n"
    roots = [(e["tool"], e["root"]) for e in events(isolated_audit_dir)]
    assert roots == [
        ("read_file", str(project.resolve())),
        ("read_file", str(other.resolve())),
        ("write_file", str(other.resolve())),
    ]


async def test_paths_outside_every_root_are_refused_and_audited_as_escapes(
    project: Path, other: Path, outside: Path, isolated_audit_dir: Path
) -> None:
    async with connect([project, other], isolated_audit_dir, "auto-approve") as client:
        absolute = await client.call_tool("read_file", {"path": str(outside / "secret.txt")})
        evil = {"path": "../outside/evil.txt", "content": "x"}
        climbing = await client.call_tool("write_file", evil)
        across = {"src": "README.md", "dst": str(other / "README.md")}
        copied = await client.call_tool("copy_path", across)

    assert error_code(absolute) == error_code(climbing) == "PATH_OUTSIDE_ROOT"
    message = absolute.structured_content["error"]["message"]
    assert str(project.resolve()) in message and str(other.resolve()) in message
    assert error_code(copied) == "INVALID_ARGUMENT"
    assert "two served folders" in copied.content[0].text
    assert not (outside / "evil.txt").exists() and not (other / "README.md").exists()
    logged = events(isolated_audit_dir)
    assert [(e["tool"], e["outcome"], e["security_violation"]) for e in logged] == [
        ("read_file", "error", True),
        ("write_file", "error", True),
        ("copy_path", "error", False),
    ]


async def test_the_per_minute_budget_is_shared_by_all_roots(
    project: Path, other: Path, isolated_audit_dir: Path
) -> None:
    limited = ("--max-requests-per-minute", "2")
    async with connect(
        [project, other], isolated_audit_dir, "auto-approve", extra_args=limited
    ) as client:
        calls = [
            await client.call_tool("file_exists", {"path": "README.md"}),
            await client.call_tool("file_exists", {"path": str(other / "notes.txt")}),
            await client.call_tool("file_exists", {"path": str(other / "notes.txt")}),
        ]
    assert [error_code(call) for call in calls] == [None, None, "RATE_LIMITED"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_client_roots_narrow_what_is_served_and_never_widen_it(
    project: Path, other: Path, outside: Path, isolated_audit_dir: Path, mode: str
) -> None:
    list_roots = roots_of(project / "src", outside)
    async with connect(
        [project, other], isolated_audit_dir, "auto-approve", mode=mode, list_roots=list_roots
    ) as client:
        listed = await client.call_tool("list_allowed_directories", {})
        inside = await client.call_tool("read_file", {"path": "pkg/core.py"})
        narrowed_away = await client.call_tool("read_file", {"path": str(project / "README.md")})
        other_root = await client.call_tool("read_file", {"path": str(other / "notes.txt")})
        not_a_root = await client.call_tool("read_file", {"path": str(outside / "secret.txt")})

    assert served(listed) == [str((project / "src").resolve())]
    assert "def sub(a, b):" in inside.content[0].text
    for refused in (narrowed_away, other_root, not_a_root):
        assert error_code(refused) == "PATH_OUTSIDE_ROOT"
    assert list_roots.asked == 1  # type: ignore[attr-defined]


async def test_a_roots_change_is_fetched_before_the_next_call(
    project: Path, isolated_audit_dir: Path
) -> None:
    folders = [project / "src"]

    async def list_roots(context: object) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f.as_uri()) for f in folders])

    readme = {"path": str(project / "README.md")}
    async with connect(
        project, isolated_audit_dir, "auto-approve", mode="legacy", list_roots=list_roots
    ) as client:
        before = await client.call_tool("read_file", readme)
        folders[:] = [project]
        with pytest.warns(MCPDeprecationWarning):
            await client.send_roots_list_changed()
        after = await client.call_tool("read_file", readme)

    assert error_code(before) == "PATH_OUTSIDE_ROOT"
    assert not after.is_error


async def test_client_roots_that_share_nothing_with_the_roots_serve_nothing(
    project: Path, outside: Path, isolated_audit_dir: Path
) -> None:
    async with connect(
        project, isolated_audit_dir, "auto-approve", mode="legacy", list_roots=roots_of(outside)
    ) as client:
        listed = await client.call_tool("list_allowed_directories", {})
        relative = await client.call_tool("read_file", {"path": "README.md"})
        theirs = await client.call_tool("read_file", {"path": str(outside / "secret.txt")})

    assert served(listed) == []
    assert error_code(relative) == error_code(theirs) == "PATH_OUTSIDE_ROOT"
    assert "no folder is served" in relative.content[0].text
    assert [e["security_violation"] for e in events(isolated_audit_dir)] == [True, True]


def test_narrowing_keeps_the_overlap_and_the_outermost_folders() -> None:
    roots = ["/srv/a", "/srv/b"]
    assert narrowed(roots, ["/srv/a/x", "/srv/c", "/srv/ab"]) == ["/srv/a/x"]
    assert narrowed(roots, ["/srv"]) == roots  # a client root holding both serves both
    assert narrowed(roots, ["/srv/b/y", "/srv/b"]) == ["/srv/b"]
    assert narrowed(roots, ["/elsewhere", "/"]) == roots
    assert narrowed(roots, ["/elsewhere"]) == []


def test_only_file_uris_of_existing_folders_are_roots(tmp_path: Path) -> None:
    spaced = tmp_path / "with space"
    spaced.mkdir()
    (tmp_path / "file.txt").write_text("x")
    assert directory_of_uri(spaced.as_uri()) == str(spaced.resolve())
    assert directory_of_uri(f"file://localhost{tmp_path}") == str(tmp_path.resolve())
    for uri in (
        f"https://example.org{tmp_path}",
        f"file://otherhost{tmp_path}",
        (tmp_path / "file.txt").as_uri(),
        (tmp_path / "missing").as_uri(),
        "file:relative/path",
        42,
    ):
        assert directory_of_uri(uri) is None, uri


async def test_each_tools_declared_paths_pick_its_folder(
    project: Path, other: Path, isolated_audit_dir: Path
) -> None:
    """An alias's own path argument (search_files' directory) and every entry of a list
    (read_many_files' paths) choose the folder, as the tools' specs declare them."""
    async with connect([project, other], isolated_audit_dir, "auto-approve") as client:
        searched = await client.call_tool(
            "search_files", {"pattern": "second", "directory": str(other)}
        )
        both = {"paths": ["README.md", str(other / "notes.txt")]}
        mixed = await client.call_tool("read_many_files", both)

    assert not searched.is_error and "notes.txt" in searched.content[0].text
    assert error_code(mixed) == "INVALID_ARGUMENT"
    assert "two served folders" in mixed.content[0].text
    logged = [(e["tool"], e["root"], e["paths"]) for e in events(isolated_audit_dir)]
    assert logged == [
        ("search_files", str(other.resolve()), [str(other)]),
        ("read_many_files", str(project.resolve()), both["paths"]),
    ]


async def test_undo_works_in_the_folder_whose_journal_holds_the_change(
    project: Path, other: Path, isolated_audit_dir: Path
) -> None:
    async with connect([project, other], isolated_audit_dir, "auto-approve") as client:
        new = {"path": str(other / "new.txt"), "content": "hi\n"}
        written = await client.call_tool("write_file", new)
        change_id = written.structured_content["data"]["change_id"]
        undone = await client.call_tool("undo", {"change_id": change_id})

    assert not undone.is_error, undone.content[0].text
    assert not (other / "new.txt").exists()
    assert [e["root"] for e in events(isolated_audit_dir)] == [str(other.resolve())] * 2
