"""TinyAgent's tool names (update_file, search_files) keep working as real tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import Decision, ToolCall
from tinyagent_fs.tools.alias_tools import in_update_file_words, include_glob

from ..conftest import audit_events


async def test_update_file_edits_like_edit_file_and_is_audited_under_its_own_name(
    fs: FileTools, project: Path, audit: AuditLog
) -> None:
    result = await fs.call(
        "update_file",
        {
            "file_path": str(project / "src/pkg/core.py"),
            "old_content": "return a + b",
            "new_content": "return a + b + 0",
        },
    )

    assert result.ok, result.text
    assert result.text.startswith("Edited src/pkg/core.py: 1 replacement(s)")
    assert "return a + b + 0" in (project / "src/pkg/core.py").read_text()
    [event] = audit_events(audit)
    assert (event["tool"], event["paths"]) == ("update_file", ["src/pkg/core.py"])
    assert "+    return a + b + 0" in event["diff"]


async def test_update_file_errors_name_update_files_own_arguments(fs: FileTools) -> None:
    result = await fs.call(
        "update_file",
        {"file_path": "src/pkg/core.py", "old_content": "return a", "new_content": "x"},
    )

    assert result.error.code == "AMBIGUOUS_MATCH"
    assert "expected_matches" in result.text
    assert "old_string" not in result.text and "expected_replacements" not in result.text


async def test_update_file_replaces_every_expected_match(fs: FileTools, project: Path) -> None:
    result = await fs.call(
        "update_file",
        {
            "file_path": "src/pkg/core.py",
            "old_content": "(a, b)",
            "new_content": "(x, y)",
            "expected_matches": 2,
        },
    )

    assert result.ok, result.text
    assert (project / "src/pkg/core.py").read_text().count("(x, y)") == 2


async def test_a_persons_modify_of_update_file_is_replanned_in_its_own_words(
    project: Path, audit: AuditLog
) -> None:
    class Reviewer:
        def before_tool_execution(self, call: ToolCall) -> Decision:
            if call.args["new_content"] == "return a * b":
                return Decision.proceed()
            return Decision.modify(args={**call.args, "new_content": "return a * b"})

    fs = FileTools(project, hooks=[Reviewer()], audit=audit)
    args = {"file_path": "src/pkg/core.py", "old_content": "return a + b", "new_content": "no"}
    result = await fs.call("update_file", args)
    await fs.close()

    assert result.ok, result.text
    assert "return a * b" in (project / "src/pkg/core.py").read_text()
    assert "modified this call" in result.text


async def test_search_files_ignores_case_and_reads_pattern_as_text_by_default(
    fs: FileTools, project: Path
) -> None:
    (project / "notes.txt").write_text("ADD(1, 2) is three\n")

    result = await fs.call("search_files", {"pattern": "add("})

    assert result.ok, result.text
    lines = result.text.splitlines()
    assert "notes.txt:1:ADD(1, 2) is three" in lines
    assert "docs/guide.md:3:Use add() to add." in lines


async def test_search_files_keeps_only_the_given_file_types(fs: FileTools) -> None:
    result = await fs.call(
        "search_files", {"pattern": "add", "file_types": ["py"], "directory": "src"}
    )

    assert result.text.splitlines() == ["src/pkg/core.py:1:def add(a, b):"]


async def test_search_files_regex_and_case_sensitive(fs: FileTools) -> None:
    result = await fs.call(
        "search_files",
        {"pattern": "^def [a-z]+", "regex": True, "case_sensitive": True, "file_types": [".py"]},
    )

    assert result.text.splitlines() == [
        "src/pkg/core.py:1:def add(a, b):",
        "src/pkg/core.py:5:def sub(a, b):",
    ]


async def test_search_files_refuses_a_file_type_that_is_not_an_extension(fs: FileTools) -> None:
    result = await fs.call("search_files", {"pattern": "x", "file_types": ["../*"]})

    assert result.error.code == "INVALID_ARGUMENT"
    assert "'../*' is not a file type" in result.text


def test_aliases_are_registered_tools_with_schemas(fs: FileTools) -> None:
    schemas = {s["function"]["name"]: s["function"] for s in fs.tool_schemas("openai")}
    assert list(schemas["update_file"]["parameters"]["properties"]) == [
        "file_path",
        "old_content",
        "new_content",
        "expected_matches",
    ]
    assert list(schemas["search_files"]["parameters"]["properties"]) == [
        "pattern",
        "directory",
        "file_types",
        "case_sensitive",
        "regex",
    ]
    assert fs.tools["update_file"].plan is not None
    assert fs.tools["search_files"].read_only


@pytest.mark.parametrize(
    ("types", "glob"),
    [(None, None), ([], None), (["py"], "*.py"), (["py", ".md", "*.txt", "py"], "*.{py,md,txt}")],
)
def test_file_types_become_one_include_glob(types: list[str] | None, glob: str | None) -> None:
    assert include_glob(types) == glob


def test_error_words_are_renamed_but_file_names_are_left_alone() -> None:
    text = "old_string not found in docs/old_string.txt; set expected_replacements"
    assert in_update_file_words(text) == (
        "old_content not found in docs/old_string.txt; set expected_matches"
    )
