"""delete_path, move_path, copy_path, create_directory."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.ops import dir_entries


async def test_delete_file_reports_what_was_removed(fs: FileTools, project: Path) -> None:
    result = await fs.delete_path("README.md")
    assert result.ok
    assert result.data == {
        "path": "README.md",
        "type": "file",
        "files": 1,
        "directories": 0,
        "change_id": result.data["change_id"],
    }
    assert not (project / "README.md").exists()


async def test_non_empty_directory_needs_recursive(fs: FileTools, project: Path) -> None:
    result = await fs.delete_path("src")
    assert result.error.code == "INVALID_ARGUMENT"
    assert "recursive=true" in result.error.hint
    assert (project / "src/pkg/core.py").exists()


async def test_recursive_delete_counts_files_and_directories(fs: FileTools, project: Path) -> None:
    result = await fs.delete_path("src", recursive=True)
    assert result.ok, result.text
    assert result.data["files"] == 2 and result.data["directories"] == 2
    assert not (project / "src").exists()
    assert sorted(p.name for p in project.iterdir()) == [".env", "README.md", "docs"]


async def test_empty_directory_deletes_without_recursive(fs: FileTools, project: Path) -> None:
    (project / "empty").mkdir()
    assert (await fs.delete_path("empty")).ok
    assert not (project / "empty").exists()


async def test_root_can_never_be_deleted(fs: FileTools, project: Path) -> None:
    for spelling in (".", "", str(project), "src/.."):
        result = await fs.delete_path(spelling, recursive=True)
        assert not result.ok
        assert result.error.code in ("INVALID_ARGUMENT",)
    assert (project / "README.md").exists()


async def test_directory_holding_a_secret_is_not_deleted(fs: FileTools, project: Path) -> None:
    (project / "conf").mkdir()
    (project / "conf" / ".env").write_text("TOKEN=1\n")
    (project / "conf" / "app.toml").write_text("x = 1\n")
    result = await fs.delete_path("conf", recursive=True)
    assert result.error.code == "DENIED_PATTERN"
    assert (project / "conf" / "app.toml").exists()


async def test_move_file_renames_and_keeps_mode(fs: FileTools, project: Path) -> None:
    (project / "tool.sh").write_text("echo hi\n")
    (project / "tool.sh").chmod(0o755)
    result = await fs.move_path("tool.sh", "bin/tool.sh")
    assert result.ok, result.text
    assert not (project / "tool.sh").exists()
    assert (project / "bin/tool.sh").read_text() == "echo hi\n"
    assert (project / "bin/tool.sh").stat().st_mode & 0o777 == 0o755


async def test_move_into_existing_directory(fs: FileTools, project: Path) -> None:
    assert (await fs.move_path("README.md", "docs")).ok
    assert (project / "docs/README.md").read_text() == "# Sample\n"


async def test_move_onto_existing_file_needs_overwrite(fs: FileTools, project: Path) -> None:
    result = await fs.move_path("README.md", "docs/guide.md")
    assert result.error.code == "ALREADY_EXISTS"
    assert (project / "README.md").exists()
    assert (await fs.move_path("README.md", "docs/guide.md", overwrite=True)).ok
    assert (project / "docs/guide.md").read_text() == "# Sample\n"


async def test_move_directory_moves_everything(fs: FileTools, project: Path) -> None:
    result = await fs.move_path("src", "lib")
    assert result.ok, result.text
    assert (project / "lib/pkg/core.py").exists()
    assert not (project / "src").exists()


async def test_move_into_itself_is_refused(fs: FileTools) -> None:
    result = await fs.move_path("src", "src/pkg/inner")
    assert result.error.code == "INVALID_ARGUMENT"


async def test_copy_directory_keeps_source(fs: FileTools, project: Path) -> None:
    assert (await fs.copy_path("src", "backup")).ok
    assert (project / "backup/pkg/core.py").read_bytes() == (
        project / "src/pkg/core.py"
    ).read_bytes()
    assert (project / "src/pkg/core.py").exists()


async def test_copy_onto_existing_needs_overwrite(fs: FileTools, project: Path) -> None:
    assert (await fs.copy_path("README.md", "docs/guide.md")).error.code == "ALREADY_EXISTS"


async def test_create_directory_is_idempotent(fs: FileTools, project: Path) -> None:
    first = await fs.create_directory("a/b/c")
    assert first.ok and first.data["created"] is True
    assert (project / "a/b/c").is_dir()
    again = await fs.create_directory("a/b/c")
    assert again.ok and again.data["created"] is False


async def test_create_directory_over_a_file_is_refused(fs: FileTools) -> None:
    assert (await fs.create_directory("README.md")).error.code == "ALREADY_EXISTS"
    assert (await fs.create_directory("README.md/sub")).error.code in (
        "NOT_A_DIRECTORY",
        "PATH_OUTSIDE_ROOT",
        "INVALID_ARGUMENT",
    )


async def test_a_file_name_that_is_not_utf8_is_listed_found_and_read(
    fs: FileTools, project: Path
) -> None:
    """Linux names are bytes: one in latin-1 crosses the sandbox wire as the
    surrogate-escaped name Python gives it, both ways, on both providers."""
    folder = project / "legacy"
    folder.mkdir()
    name = os.fsdecode(b"caf\xe9.txt")
    (folder / name).write_bytes(b"menu\n")
    listing = await fs.call("list_directory", {"path": "legacy"})
    assert listing.ok, listing.text
    assert "caf" in listing.text
    found = await fs.call("glob", {"pattern": "legacy/*"})
    assert found.ok and "caf" in found.text, found.text
    read = await fs.call("read_file", {"path": f"legacy/{name}"})
    assert read.ok, read.text
    assert "menu" in read.text


async def test_list_directory_shows_file_sizes_when_asked(fs: FileTools, project: Path) -> None:
    plain = await fs.list_directory(".")
    assert "README.md\n" in plain.text + "\n" and "bytes" not in plain.text
    sized = await fs.list_directory(".", sizes=True)
    size = len((project / "README.md").read_bytes())
    assert f"README.md  ({size:,} bytes)" in sized.text
    assert {"README.md": size}.items() <= dict(
        zip(sized.data["paths"], sized.data["sizes"], strict=True)
    ).items()


async def test_list_directory_draws_a_tree_and_returns_parallel_columns(
    fs: FileTools, project: Path
) -> None:
    (project / ".gitignore").write_text("docs/\n")
    os.symlink("README.md", project / "readme-link")
    os.mkfifo(project / "pipe")
    listing = await fs.list_directory(".", depth=3)
    assert listing.text.splitlines() == [
        "./ (8 entries)",
        "README.md",
        "docs/",
        "pipe",
        "readme-link@",
        "src/",
        "  pkg/",
        "    __init__.py",
        "    core.py",
    ]
    assert listing.data == {
        "path": ".",
        "paths": [
            "README.md",
            "docs",
            "pipe",
            "readme-link",
            "src",
            "src/pkg",
            "src/pkg/__init__.py",
            "src/pkg/core.py",
        ],
        "directories": ["docs", "src", "src/pkg"],
        "symlinks": ["readme-link"],
        "others": ["pipe"],
        "ignored": ["docs"],
        "total": 8,
        "omitted": 0,
    }
    below = await fs.list_directory("src", depth=2, limit=1)
    assert below.text.splitlines() == [
        "src/ (3 entries)",
        "pkg/",
        "[... 2 more entries not shown; raise limit or list a subdirectory]",
    ]
    assert below.data["paths"] == ["src/pkg"] and below.data["omitted"] == 2


async def test_a_listing_shows_every_change_since_the_last_one(
    fs: FileTools, project: Path
) -> None:
    """The entries of a directory still for a while are kept between listings
    (``ops.dir_entries``); whoever changes it, the next listing shows the change."""
    time.sleep(dir_entries.RACY_NS / 1e9 + 0.05)

    async def shown() -> list[str]:
        listing = await fs.list_directory(".")
        assert listing.ok, listing.text
        return listing.data["paths"]

    assert await shown() == ["README.md", "docs", "src"]
    assert (await fs.write_file("made-by-tool.txt", "x\n")).ok
    assert await shown() == ["README.md", "docs", "made-by-tool.txt", "src"]
    before = os.stat(project)
    (project / "docs").rename(project / "manual")  # by someone else, the mtime put back
    os.utime(project, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert await shown() == ["README.md", "made-by-tool.txt", "manual", "src"]
    assert (await fs.delete_path("made-by-tool.txt")).ok
    assert await shown() == ["README.md", "manual", "src"]


async def test_each_toolkit_hides_what_its_own_policy_denies(project: Path) -> None:
    """Two toolkits in one process share the kept entries of a directory, never a
    decision on what to hide."""
    time.sleep(dir_entries.RACY_NS / 1e9 + 0.05)
    policy = SandboxPolicy()
    strict = replace(policy, denied_patterns=(*policy.denied_patterns, "*.md"))
    lenient_fs, strict_fs = FileTools(project), FileTools(project, strict)
    try:
        for _ in range(2):
            assert "README.md" in (await lenient_fs.list_directory(".")).data["paths"]
            assert "README.md" not in (await strict_fs.list_directory(".")).data["paths"]
    finally:
        await lenient_fs.close()
        await strict_fs.close()
