"""TinyAgent's tool names, kept working on top of our tools.

People coming from TinyAgent have prompts and habits built around
``update_file`` and ``search_files``. Rather than a second implementation, each
alias translates its arguments and hands them to the tool it stands for, so it
gets the same matching, guard, review, undo and audit as that tool; only the
audit line carries the alias name.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import ErrorCode, ToolError
from ..hooks.decision import Risk
from ..result import ToolResult
from .context import ToolContext
from .plan import Plan
from .search_tools import grep
from .spec import PathIntent, ToolSpec, boolean, integer, schema, string
from .write_tools import plan_edit_file

_FILE_TYPE = re.compile(r"[A-Za-z0-9_+\-]+")
SEARCH_LIMIT = 200
EDIT_WORDS = {
    "edit_file": "update_file",
    "old_string": "old_content",
    "new_string": "new_content",
    "expected_replacements": "expected_matches",
}
# Whole words only, and never inside a file name such as ``docs/old_string.txt``.
_EDIT_WORD = re.compile(r"(?<![\w./-])(" + "|".join(EDIT_WORDS) + r")(?![\w/-]|\.\w)")


def edit_arguments(args: dict[str, Any]) -> dict[str, Any]:
    """update_file's arguments in edit_file's words."""
    return {
        "path": args["file_path"],
        "old_string": args["old_content"],
        "new_string": args["new_content"],
        "expected_replacements": args["expected_matches"],
        "replace_all": False,
        "regex": False,
    }


def in_update_file_words(text: str) -> str:
    """edit_file's error text, naming update_file's arguments, so the model can act on it."""
    return _EDIT_WORD.sub(lambda m: EDIT_WORDS[m.group(1)], text)


async def plan_update_file(ctx: ToolContext, args: dict[str, Any]) -> Plan:
    try:
        return await plan_edit_file(ctx, edit_arguments(args))
    except ToolError as error:
        raise ToolError(
            error.code,
            in_update_file_words(error.message),
            in_update_file_words(error.hint),
            security_violation=error.security_violation,
            details=error.details,
        ) from error


def include_glob(file_types: list[str] | None) -> str | None:
    """``["py", ".md", "*.txt"]`` -> ``"*.{py,md,txt}"``: one glob grep can take."""
    if not file_types:
        return None
    extensions: list[str] = []
    for raw in file_types:
        extension = raw.strip().removeprefix("*").removeprefix(".")
        if not _FILE_TYPE.fullmatch(extension):
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"search_files: {raw!r} is not a file type",
                "give extensions such as 'py' or '.md', or use grep with an include glob",
            )
        if extension not in extensions:
            extensions.append(extension)
    if len(extensions) == 1:
        return f"*.{extensions[0]}"
    return "*.{" + ",".join(extensions) + "}"


def grep_arguments(args: dict[str, Any]) -> dict[str, Any]:
    """search_files' arguments in grep's words (every grep argument given)."""
    return {
        "pattern": args["pattern"],
        "path": args["directory"],
        "include": include_glob(args["file_types"]),
        "literal": not args["regex"],
        "case_sensitive": args["case_sensitive"],
        "context": 0,
        "limit": SEARCH_LIMIT,
    }


async def search_files(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return await grep(ctx, grep_arguments(args))


ALIAS_TOOLS = (
    ToolSpec(
        name="update_file",
        description=(
            "TinyAgent-compatible name for edit_file: replace old_content with new_content "
            "in file_path. old_content must match the file exactly (whitespace included) "
            "and occur exactly expected_matches times; include surrounding lines to make it "
            "unique. On NO_MATCH read the file and copy the text exactly; on AMBIGUOUS_MATCH "
            "add context or set expected_matches."
        ),
        parameters=schema(
            {
                "file_path": string(
                    "File path, relative to the project root (or absolute inside it).",
                    minLength=1,
                ),
                "old_content": string(
                    "Exact text to replace, copied from read_file output without the "
                    "line-number prefix."
                ),
                "new_content": string("Replacement text."),
                "expected_matches": integer(
                    "How many occurrences old_content must have.", 1, minimum=1
                ),
            },
            ("file_path", "old_content", "new_content"),
        ),
        risk=Risk.WRITE,
        plan=plan_update_file,
        path_arguments={"file_path": PathIntent.WRITE},
    ),
    ToolSpec(
        name="search_files",
        description=(
            "TinyAgent-compatible name for grep: search file contents under directory and "
            "print 'path:line:text'. pattern is plain text unless regex is true (Rust regex "
            "syntax); matching ignores case unless case_sensitive is true. file_types keeps "
            "only files with those extensions, e.g. ['py', 'md']. Respects .gitignore; at "
            f"most {SEARCH_LIMIT} matching lines."
        ),
        parameters=schema(
            {
                "pattern": string("Text (or regular expression) to search for.", minLength=1),
                "directory": {
                    **string("Directory relative to the project root."),
                    "default": ".",
                },
                "file_types": {
                    "type": ["array", "null"],
                    "items": {"type": "string", "minLength": 1},
                    "description": "File extensions to search, e.g. ['py', 'md'].",
                    "default": None,
                },
                "case_sensitive": boolean("Match case exactly.", False),
                "regex": boolean("Treat pattern as a regular expression.", False),
            },
            ("pattern",),
        ),
        risk=Risk.READ,
        run=search_files,
        path_arguments={"directory": PathIntent.READ},
        idempotent=True,
    ),
)
