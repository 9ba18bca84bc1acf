"""read_file, read_many_files, file_exists, get_file_info through the whole pipeline."""

from __future__ import annotations

from pathlib import Path

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.hooks import AutoApprovePolicy

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


async def test_read_file_numbers_lines_like_cat_n(fs: FileTools) -> None:
    result = await fs.read_file("src/pkg/core.py")
    assert result.ok
    assert result.text.splitlines()[0] == "     1\tdef add(a, b):"
    assert result.data["total_lines"] == 6
    assert result.data["truncated"] is False


async def test_read_file_offset_and_limit_show_real_line_numbers(fs: FileTools) -> None:
    result = await fs.read_file("src/pkg/core.py", offset=4, limit=1)
    assert result.text.splitlines()[0] == "     5\tdef sub(a, b):"
    assert "call read_file with offset=5 to read on" in result.text


async def test_read_file_caps_at_2000_lines_with_a_marker(fs: FileTools, project: Path) -> None:
    (project / "big.txt").write_text("".join(f"line {i}\n" for i in range(2500)))
    result = await fs.read_file("big.txt")
    assert result.data["last_line"] == 2000
    assert result.data["total_lines"] == 2500
    assert "lines 2001-2500 not shown; call read_file with offset=2000" in result.text


async def test_read_file_cuts_long_lines_and_says_so(fs: FileTools, project: Path) -> None:
    (project / "wide.txt").write_text("x" * 2500 + "\nshort\n")
    result = await fs.read_file("wide.txt")
    first = result.text.splitlines()[0]
    assert "[... line truncated: 500 more characters]" in first
    assert "longer than 2000 characters were cut" in result.text


async def test_read_file_decodes_utf16_and_latin1(fs: FileTools, project: Path) -> None:
    (project / "u16.txt").write_bytes(b"\xff\xfe" + "héllo wörld\n".encode("utf-16-le"))
    result = await fs.read_file("u16.txt")
    assert result.ok and "héllo wörld" in result.text
    assert result.data["encoding"].startswith("utf-16")
    (project / "l1.txt").write_bytes("Grüße aus Köln, très bien\n".encode("latin-1"))
    result = await fs.read_file("l1.txt")
    assert result.ok and "Grüße aus Köln" in result.text


async def test_read_file_refuses_images_naming_the_type(fs: FileTools, project: Path) -> None:
    (project / "pic.png").write_bytes(PNG)
    result = await fs.read_file("pic.png")
    assert not result.ok
    assert result.error.code == "NOT_TEXT"
    assert "PNG" in result.error.message


async def test_read_file_refuses_files_over_the_size_limit(project: Path, audit) -> None:
    (project / "large.txt").write_text("a" * 5000)
    fs = FileTools(
        project, policy=SandboxPolicy(max_file_bytes=4096), hooks=[AutoApprovePolicy()], audit=audit
    )
    result = await fs.read_file("large.txt")
    assert result.error.code == "TOO_LARGE"
    assert "4096" in result.error.message


async def test_read_file_errors_for_missing_and_directories(fs: FileTools) -> None:
    assert (await fs.read_file("nope.txt")).error.code == "NOT_FOUND"
    assert (await fs.read_file("src")).error.code == "IS_A_DIRECTORY"


async def test_read_file_past_the_end_is_a_clear_error(fs: FileTools) -> None:
    result = await fs.read_file("README.md", offset=10)
    assert result.error.code == "INVALID_ARGUMENT"
    assert "has 1 lines" in result.error.message


async def test_read_file_of_empty_file_says_empty(fs: FileTools, project: Path) -> None:
    result = await fs.read_file("src/pkg/__init__.py")
    assert result.ok and result.text == "(empty file)"


async def test_read_many_files_expands_globs_under_headers(fs: FileTools) -> None:
    result = await fs.read_many_files(["README.md", "src/**/*.py"])
    assert result.ok
    assert "==> README.md (1 lines) <==" in result.text
    assert "==> src/pkg/core.py (6 lines) <==" in result.text
    assert result.data["files"][0]["path"] == "README.md"


async def test_read_many_files_lists_skipped_files_with_reason(
    fs: FileTools, project: Path
) -> None:
    (project / "pic.png").write_bytes(PNG)
    result = await fs.read_many_files(["README.md", "pic.png"])
    assert result.ok
    assert result.data["skipped"][0]["path"] == "pic.png"
    assert "NOT_TEXT" in result.text


async def test_read_many_files_caps_files_and_bytes(project: Path, audit) -> None:
    for i in range(5):
        (project / f"n{i}.txt").write_text("z" * 100)
    policy = SandboxPolicy(max_many_files=3, max_many_bytes=250)
    fs = FileTools(project, policy=policy, hooks=[AutoApprovePolicy()], audit=audit)
    result = await fs.read_many_files(["n*.txt"])
    assert len(result.data["files"]) == 2
    assert result.data["capped"] is True
    assert "over the 250-byte total budget" in result.text


async def test_file_exists_reports_type(fs: FileTools) -> None:
    assert (await fs.file_exists("src")).data == {
        "path": "src",
        "exists": True,
        "type": "directory",
    }
    assert (await fs.file_exists("missing")).data["exists"] is False


async def test_get_file_info_reports_lines_and_permissions(fs: FileTools, project: Path) -> None:
    (project / "README.md").chmod(0o640)
    result = await fs.get_file_info("README.md")
    assert result.data["line_count"] == 1
    assert result.data["permissions"] == "-rw-r-----"
    assert result.data["size"] == len("# Sample\n")
    assert result.data["content_type"] == "text"


async def test_secrets_are_refused_for_reading(fs: FileTools) -> None:
    result = await fs.read_file(".env")
    assert result.error.code == "DENIED_PATTERN"
    assert result.error.security_violation


async def test_errors_name_paths_relative_to_the_root_on_every_provider(
    fs: FileTools, project: Path
) -> None:
    """The model never learns where the project lives, and both providers say the same."""
    missing = await fs.read_file("src/nope.py")
    assert missing.error.code == "NOT_FOUND"
    assert missing.error.message == "src/nope.py does not exist"
    through_file = await fs.read_file("README.md/inner.txt")
    assert through_file.error.code == "NOT_A_DIRECTORY"
    assert through_file.error.message.startswith("README.md/inner.txt: ")
    many = await fs.call("read_many_files", {"paths": ["gone.txt", "README.md/x"]})
    for result in (missing, through_file, many):
        assert str(project) not in result.text
        assert "Errno" not in result.text and "read_bytes" not in result.text


async def test_writing_below_a_file_is_not_a_directory_without_os_text(
    fs: FileTools, project: Path
) -> None:
    result = await fs.write_file("README.md/sub/child.txt", "x")
    assert result.error.code == "NOT_A_DIRECTORY"
    assert str(project) not in result.text and "Errno" not in result.text
    assert (project / "README.md").read_text() == "# Sample\n"
