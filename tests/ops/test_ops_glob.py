"""glob_files: glob semantics, ignore rules (checked against git itself), ordering, limits."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.ops.ignore import IgnoreRules
from tinyagent_fs.ops.packed_paths import unpack_paths
from tinyagent_fs.ops.search import glob_files

from ..ops_tree import DENIED, build_git_cases, build_tree

DAY = 24 * 60 * 60


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = build_tree(tmp_path / "project").resolve()
    old = time.time() - 10 * DAY
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path, (old, old))
    return root


def paths(root: Path, pattern: str, base: str = "", limit: int = 1000) -> list[str]:
    result = glob_files(str(root), str(root / base), pattern, DENIED, limit)
    return unpack_paths(result["matches"])


def test_double_star_spans_directories_and_single_star_stays_in_one(tree: Path) -> None:
    assert paths(tree, "**/*.py") == ["src/app/main.py", "src/app/util.py"]
    assert paths(tree, "*.md") == ["README.md"]
    assert paths(tree, "src/**/*.txt") == [
        "src/app/bom.txt",
        "src/app/win.txt",
        "src/top_only.txt",
    ]
    assert paths(tree, "src/*/*.py") == ["src/app/main.py", "src/app/util.py"]
    assert paths(tree, "docs/guide.m?") == ["docs/guide.md"]
    assert paths(tree, "docs/[gl]*") == ["docs/guide.md", "docs/long.txt"]
    assert paths(tree, "**/*.{py,md}") == [
        "README.md",
        "docs/guide.md",
        "src/app/main.py",
        "src/app/util.py",
    ]


def test_pattern_is_relative_to_base(tree: Path) -> None:
    assert paths(tree, "*.py", base="src/app") == ["src/app/main.py", "src/app/util.py"]
    assert paths(tree, "app/**", base="src") == [
        "src/app/bom.txt",
        "src/app/data.bin",
        "src/app/main.py",
        "src/app/util.py",
        "src/app/win.txt",
    ]


def test_glob_skips_ignored_denied_git_and_symlinks_but_not_hidden(tree: Path) -> None:
    found = paths(tree, "**")
    assert ".hidden/config.txt" in found
    assert "vendor/keep.txt" in found
    assert "src/important.log" in found
    for hidden in [
        ".env",
        ".git/HEAD",
        "app.log",
        "build/out.txt",
        "vendor/lib.txt",
        "private/secret.txt",
        "certs/server.pem",
        "src/debug.log",
        "src/generated/gen.py",
        "src/app/x.tmp",
        "top_only.txt",
        "link_to_main.py",
    ]:
        assert hidden not in found
    assert not any(path.startswith("linked_src/") for path in found)
    assert "src" not in found and "src/app" not in found


def test_literal_directory_that_is_ignored_yields_nothing(tree: Path) -> None:
    assert paths(tree, "build/*.txt") == []
    assert paths(tree, "private/*") == []
    assert paths(tree, "missing/*.py") == []
    assert paths(tree, "linked_src/**") == []


def test_recent_files_come_first_newest_first_then_alphabetical(tree: Path) -> None:
    now = time.time()
    os.utime(tree / "docs/long.txt", (now - 100, now - 100))
    os.utime(tree / "src/app/util.py", (now - 10, now - 10))
    assert paths(tree, "**/*.{py,txt,md}") == [
        "src/app/util.py",
        "docs/long.txt",
        ".hidden/config.txt",
        "README.md",
        "docs/guide.md",
        "src/app/bom.txt",
        "src/app/main.py",
        "src/app/win.txt",
        "src/top_only.txt",
        "vendor/keep.txt",
    ]


def test_limit_reports_total_and_omitted(tree: Path) -> None:
    result = glob_files(str(tree), str(tree), "**/*.txt", DENIED, 2)
    assert unpack_paths(result["matches"]) == [".hidden/config.txt", "docs/long.txt"]
    assert result["total"] == 6
    assert result["omitted"] == 4


def test_trailing_slash_means_everything_below(tree: Path) -> None:
    assert paths(tree, "docs/") == ["docs/guide.md", "docs/long.txt"]


@pytest.mark.parametrize("pattern", ["../*", "/etc/*", "src/../../x", "", "  ", "[ab", "{a,b"])
def test_patterns_leaving_base_are_refused(tree: Path, pattern: str) -> None:
    with pytest.raises(ToolError) as caught:
        glob_files(str(tree), str(tree), pattern, DENIED, 10)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT


def test_base_must_be_an_existing_directory(tree: Path) -> None:
    with pytest.raises(ToolError) as caught:
        glob_files(str(tree), str(tree / "README.md"), "*", DENIED, 10)
    assert caught.value.code is ErrorCode.NOT_A_DIRECTORY
    with pytest.raises(ToolError) as caught:
        glob_files(str(tree), str(tree / "nope"), "*", DENIED, 10)
    assert caught.value.code is ErrorCode.NOT_FOUND


def test_ignore_rules_agree_with_git(tmp_path: Path) -> None:
    assert shutil.which("git"), "this test compares with git: install git (apt-get install git)"
    root = build_git_cases(tmp_path / "repo")
    git = ["git", "-c", "core.excludesFile=/dev/null", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    listed = subprocess.run(
        [*git, "ls-files", "--others", "--exclude-standard", "-z"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    expected = sorted(p for p in listed.split("\0") if p)
    found = sorted(unpack_paths(glob_files(str(root), str(root), "**", [], 1000)["matches"]))
    assert found == expected
    rules = IgnoreRules(str(root), [])
    assert rules.is_gitignored("build", True) and not rules.is_gitignored("build", False)
    assert rules.is_gitignored("a/sub", True)
