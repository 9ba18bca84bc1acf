"""write_file, edit_file, multi_edit: planned, reviewed, committed atomically."""

from __future__ import annotations

import os
from pathlib import Path

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import Decision

from ..conftest import make_provider


async def test_write_file_creates_with_parents_and_reports_it(fs: FileTools, project: Path) -> None:
    result = await fs.write_file("new/dir/a.txt", "hello\n")
    assert result.ok
    assert result.data["created"] is True and result.data["bytes"] == 6
    assert (project / "new/dir/a.txt").read_text() == "hello\n"
    assert result.text.startswith("Created new/dir/a.txt")


async def test_write_file_without_create_dirs_refuses_missing_parent(fs: FileTools) -> None:
    result = await fs.write_file("nodir/a.txt", "x", create_dirs=False)
    assert result.error.code == "NOT_FOUND"
    assert "create_dirs=true" in result.error.hint


async def test_write_file_under_a_file_names_that_file_and_writes_nothing(
    fs: FileTools, project: Path
) -> None:
    (project / "notes.txt").write_text("keep\n")
    before = sorted(os.listdir(project))
    cases = [
        ("notes.txt/a.txt", True, "NOT_A_DIRECTORY"),
        ("notes.txt/a.txt", False, "NOT_A_DIRECTORY"),
        ("notes.txt/deeper/a.txt", True, "NOT_A_DIRECTORY"),
        ("notes.txt/deeper/a.txt", False, "NOT_FOUND"),  # its folder is not there to make
    ]
    for target, create_dirs, code in cases:
        result = await fs.write_file(target, "x", create_dirs=create_dirs)
        assert not result.ok and result.error is not None
        assert result.error.code == code, result.text
        assert "notes.txt" in result.error.message
    assert (project / "notes.txt").read_text() == "keep\n"
    assert sorted(os.listdir(project)) == before


async def test_write_file_overwrites_and_keeps_mode(fs: FileTools, project: Path) -> None:
    target = project / "run.sh"
    target.write_text("echo old\n")
    target.chmod(0o751)
    result = await fs.write_file("run.sh", "echo new\n")
    assert result.data["created"] is False
    assert target.read_text() == "echo new\n"
    assert (target.stat().st_mode & 0o777) == 0o751


async def test_write_file_keeps_crlf_and_bom_of_existing_file(fs: FileTools, project: Path) -> None:
    target = project / "win.txt"
    target.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    assert (await fs.write_file("win.txt", "uno\ndos\n")).ok
    assert target.read_bytes() == b"\xef\xbb\xbfuno\r\ndos\r\n"


async def test_write_file_leaves_no_temp_files(fs: FileTools, project: Path) -> None:
    await fs.write_file("docs/guide.md", "new guide\n")
    assert sorted(os.listdir(project / "docs")) == ["guide.md"]


async def test_write_into_git_dir_is_refused(fs: FileTools, project: Path) -> None:
    (project / ".git").mkdir()
    result = await fs.write_file(".git/config", "[core]\n")
    assert result.error.code == "DENIED_PATTERN"
    assert not (project / ".git/config").exists()


async def test_edit_file_replaces_exact_text_and_shows_snippet(
    fs: FileTools, project: Path
) -> None:
    result = await fs.edit_file("src/pkg/core.py", "return a - b", "return a - b  # minus")
    assert result.ok, result.text
    assert "# minus" in (project / "src/pkg/core.py").read_text()
    assert "     6\t    return a - b  # minus" in result.text
    assert result.data["replacements"] == 1


async def test_edit_file_no_match_points_at_nearest_lines(fs: FileTools, project: Path) -> None:
    before = (project / "src/pkg/core.py").read_bytes()
    result = await fs.edit_file("src/pkg/core.py", "def subtract(a, b):", "x")
    assert result.error.code == "NO_MATCH"
    assert "5" in result.error.message
    assert (project / "src/pkg/core.py").read_bytes() == before


async def test_edit_file_ambiguous_lists_candidate_lines(fs: FileTools, project: Path) -> None:
    result = await fs.edit_file("src/pkg/core.py", "(a, b):", "(x, y):")
    assert result.error.code == "AMBIGUOUS_MATCH"
    assert "1" in result.error.message and "5" in result.error.message


async def test_edit_file_expected_replacements_replaces_all(fs: FileTools, project: Path) -> None:
    result = await fs.edit_file("src/pkg/core.py", "(a, b):", "(x, y):", expected_replacements=2)
    assert result.ok
    assert (project / "src/pkg/core.py").read_text().count("(x, y):") == 2


async def test_edit_file_with_empty_old_string_creates_file(fs: FileTools, project: Path) -> None:
    result = await fs.edit_file("fresh.py", "", "print('hi')\n")
    assert result.ok and (project / "fresh.py").read_text() == "print('hi')\n"


async def test_edit_file_with_empty_old_string_on_existing_content_is_refused(
    fs: FileTools,
) -> None:
    result = await fs.edit_file("README.md", "", "x")
    assert result.error.code == "INVALID_ARGUMENT"


async def test_edit_file_refuses_binary_files(fs: FileTools, project: Path) -> None:
    (project / "blob.bin").write_bytes(b"\x00\x01\x02binary\x00")
    result = await fs.edit_file("blob.bin", "binary", "text")
    assert result.error.code == "NOT_TEXT"


async def test_multi_edit_is_all_or_nothing(fs: FileTools, project: Path) -> None:
    before = (project / "src/pkg/core.py").read_bytes()
    result = await fs.multi_edit(
        "src/pkg/core.py",
        [
            {"old_string": "def add", "new_string": "def plus"},
            {"old_string": "does not exist", "new_string": "x"},
        ],
    )
    assert result.error.code == "NO_MATCH"
    assert "2" in result.error.message  # names the failing edit
    assert (project / "src/pkg/core.py").read_bytes() == before


async def test_multi_edit_applies_edits_in_order(fs: FileTools, project: Path) -> None:
    result = await fs.multi_edit(
        "src/pkg/core.py",
        [
            {"old_string": "def add", "new_string": "def plus"},
            {"old_string": "def plus(a, b):", "new_string": "def plus(a, b, c=0):"},
        ],
    )
    assert result.ok, result.text
    assert "def plus(a, b, c=0):" in (project / "src/pkg/core.py").read_text()


async def test_stale_write_after_read_is_a_conflict(fs: FileTools, project: Path) -> None:
    await fs.read_file("README.md")
    (project / "README.md").write_text("# Changed by someone else\n")
    result = await fs.write_file("README.md", "# Mine\n")
    assert result.error.code == "CONFLICT"
    assert (project / "README.md").read_text() == "# Changed by someone else\n"
    assert (await fs.read_file("README.md")).ok
    assert (await fs.write_file("README.md", "# Mine\n")).ok


async def test_a_stale_view_is_reported_before_a_failed_match(fs: FileTools, project: Path) -> None:
    await fs.read_file("README.md")
    (project / "README.md").write_text("# Changed by someone else\n")
    result = await fs.edit_file("README.md", "not in the file", "x")
    assert result.error.code == "CONFLICT"


async def test_file_changed_during_review_is_a_conflict(project: Path, audit) -> None:
    target = project / "README.md"

    class SlowReviewer:
        def before_tool_execution(self, call):
            target.write_text("# edited while the person was deciding\n")
            return Decision.proceed("person")

    fs = FileTools(project, hooks=[SlowReviewer()], audit=audit)
    result = await fs.edit_file("README.md", "# Sample", "# Mine")
    assert result.error.code == "CONFLICT"
    assert target.read_text() == "# edited while the person was deciding\n"


async def test_same_size_change_during_review_is_a_conflict_with_either_provider(
    project: Path, audit, provider_name: str
) -> None:
    """The commit compares the file with the planned bytes (in process) or their hash
    (sandbox worker): a change of the same size is caught either way."""
    target = project / "README.md"

    class SlowReviewer:
        def before_tool_execution(self, call):
            target.write_text("# Sampl3\n")
            return Decision.proceed("person")

    provider = make_provider(provider_name, project)
    fs = FileTools(project, provider=provider, hooks=[SlowReviewer()], audit=audit)
    result = await fs.edit_file("README.md", "# Sample", "# Mine")
    assert result.error.code == "CONFLICT"
    assert target.read_text() == "# Sampl3\n"
    await fs.close()


async def test_edit_file_regex_with_template(fs: FileTools, project: Path) -> None:
    result = await fs.edit_file(
        "src/pkg/core.py",
        r"def (\w+)\(a, b\)",
        r"def \1(x, y)",
        expected_replacements=2,
        regex=True,
    )
    assert result.ok, result.text
    assert (project / "src/pkg/core.py").read_text().count("(x, y)") == 2


async def test_edit_file_replace_all(fs: FileTools, project: Path) -> None:
    result = await fs.edit_file("src/pkg/core.py", "a, b", "left, right", replace_all=True)
    assert result.ok and result.data["replacements"] == 2


async def test_catastrophic_regex_is_stopped(fs: FileTools, project: Path) -> None:
    (project / "aaa.txt").write_text("a" * 40 + "!\n")
    result = await fs.edit_file("aaa.txt", r"(a+)+$", "x", regex=True)
    assert not result.ok
    assert result.error.code == "TIMEOUT"
    assert (project / "aaa.txt").read_text() == "a" * 40 + "!\n"


async def test_tolerant_match_says_which_tolerance(fs: FileTools, project: Path) -> None:
    (project / "ws.py").write_text("def f():   \n    return 1  \n")
    result = await fs.edit_file("ws.py", "def f():\n    return 1\n", "def f():\n    return 2\n")
    assert result.ok, result.text
    assert result.data["tolerance"] == "trailing_whitespace"
    assert "tolerance 'trailing_whitespace'" in result.text
