"""list_tree: tree order, depth, hidden entries, denials, limits."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.ops.dir_entries import DIRECTORY, FILE, SYMLINK
from tinyagent_fs.ops.listing import list_tree
from tinyagent_fs.ops.packed_paths import unpack_paths

from ..ops_tree import DENIED, build_tree


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return build_tree(tmp_path / "project").resolve()


def listing(root: Path, path: str = "", **options: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {"depth": 1, "include_hidden": False, "limit": 1000}
    arguments.update(options)
    start = path or "."
    return list_tree(str(root), str(root / path), start, denied_patterns=DENIED, **arguments)


def names(result: dict[str, Any]) -> list[str]:
    return unpack_paths(result["paths"])


def test_depth_one_lists_direct_children_sorted_without_hidden_or_denied(tree: Path) -> None:
    assert names(listing(tree)) == [
        "README.md",
        "app.log",
        "build",
        "certs",
        "docs",
        "link_to_main.py",
        "linked_src",
        "src",
        "top_only.txt",
        "vendor",
    ]


def test_deeper_listing_is_a_preorder_tree(tree: Path) -> None:
    (tree / "src" / "app.txt").write_text("file sorting between dir 'app' and 'important.log'\n")
    result = listing(tree, "src", depth=2, include_hidden=True)
    assert names(result) == [
        "src/.gitignore",
        "src/app",
        "src/app/bom.txt",
        "src/app/data.bin",
        "src/app/main.py",
        "src/app/util.py",
        "src/app/win.txt",
        "src/app/x.tmp",
        "src/app.txt",
        "src/debug.log",
        "src/generated",
        "src/important.log",
        "src/top_only.txt",
    ]
    assert result["total"] == 13
    assert result["omitted"] == 0


def test_entries_describe_type_size_and_ignored(tree: Path) -> None:
    listed = listing(tree, depth=2, include_hidden=True, sizes=True)
    paths = names(listed)
    assert len(listed["types"]) == len(listed["sizes"]) == len(paths)
    types = dict(zip(paths, listed["types"], strict=True))
    sizes = dict(zip(paths, listed["sizes"], strict=True))
    assert types["README.md"] == FILE
    assert sizes["README.md"] == len(b"Needle at the top\n")
    assert types["docs"] == DIRECTORY
    assert sizes["docs"] is None
    assert types["link_to_main.py"] == types["linked_src"] == SYMLINK
    ignored = set(listed["ignored"])
    assert {"app.log", "build", "vendor/lib.txt", ".git"} <= ignored
    assert not {"README.md", "src/important.log", "vendor/keep.txt"} & ignored
    assert ignored <= set(paths)


def test_hidden_entries_appear_only_when_asked_and_git_is_never_expanded(tree: Path) -> None:
    shown = names(listing(tree, depth=3, include_hidden=True))
    assert ".hidden/config.txt" in shown
    assert ".gitignore" in shown and ".tinyagentignore" in shown
    assert ".git" in shown and ".git/HEAD" not in shown
    hidden = names(listing(tree, depth=3))
    assert not any(part.startswith(".") for path in hidden for part in path.split("/"))


def test_denied_entries_are_never_shown(tree: Path) -> None:
    shown = names(listing(tree, depth=5, include_hidden=True))
    for denied in [".env", "private", "private/secret.txt", "certs/server.pem"]:
        assert denied not in shown
    assert "certs" in shown


def test_gitignored_directories_are_shown_but_not_expanded(tree: Path) -> None:
    shown = names(listing(tree, depth=3))
    assert "build" in shown and "build/out.txt" not in shown
    assert "src/generated" in shown and "src/generated/gen.py" not in shown
    assert names(listing(tree, "build")) == ["build/out.txt"]


def test_symlinked_directories_are_not_followed(tree: Path) -> None:
    shown = names(listing(tree, depth=3))
    assert "linked_src" in shown
    assert not any(path.startswith("linked_src/") for path in shown)


def test_limit_counts_what_it_leaves_out(tree: Path) -> None:
    result = listing(tree, depth=3, limit=4)
    assert names(result) == ["README.md", "app.log", "build", "certs"]
    assert result["total"] == len(names(listing(tree, depth=3)))
    assert result["omitted"] == result["total"] - 4
    assert result["omitted_is_lower_bound"] is False


def test_counting_stops_at_a_bound_and_says_so(tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for index in range(250):
        (root / f"f{index:03}").write_text("")
    result = list_tree(str(root), str(root), ".", 1, False, 2, [])
    assert names(result) == ["f000", "f001"]
    assert result["total"] == 200
    assert result["omitted"] == 198
    assert result["omitted_is_lower_bound"] is True
    exact = list_tree(str(root), str(root), ".", 1, False, 3, [])
    assert exact["total"] == 250
    assert exact["omitted_is_lower_bound"] is False


def test_listing_a_file_or_missing_path_is_an_error(tree: Path) -> None:
    with pytest.raises(ToolError) as caught:
        listing(tree, "README.md")
    assert caught.value.code is ErrorCode.NOT_A_DIRECTORY
    with pytest.raises(ToolError) as caught:
        listing(tree, "nope")
    assert caught.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(ToolError) as caught:
        listing(tree, depth=0)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT


def test_a_directory_that_is_a_link_by_now_is_refused_not_followed(tree: Path) -> None:
    with pytest.raises(ToolError) as caught:
        listing(tree, "linked_src")
    assert caught.value.code is ErrorCode.SYMLINK_ESCAPE
    assert caught.value.security_violation


def test_sizes_only_when_asked(tree: Path) -> None:
    listed = listing(tree, depth=2, include_hidden=True)
    assert names(listed) and "sizes" not in listed


def test_only_names_starting_with_a_dot_are_hidden(tmp_path: Path) -> None:
    latin = os.fsdecode(b"\xe9t\xe9")
    created = ["!bang", "#hash", "-dash", ".a", ".z", "..dots", "0zero", "_under", "~tilde", latin]
    for name in created:
        (tmp_path / name).write_text("")
    shown = names(list_tree(str(tmp_path), str(tmp_path), ".", 1, False, 100, []))
    assert shown == ["!bang", "#hash", "-dash", "0zero", "_under", "~tilde", latin]
    every = names(list_tree(str(tmp_path), str(tmp_path), ".", 1, True, 100, []))
    assert every == sorted(created)
