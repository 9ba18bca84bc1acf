"""Tools that change file contents: write_file, edit_file, multi_edit.

Each one only plans: it reads through the provider, computes the new bytes and
returns a Plan. Review, commit, journal and audit are the pipeline's job.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from functools import cache, partial
from pathlib import Path
from typing import Any

from .._runtime.digest import hash_ahead
from ..changes.changeset import ChangeKind, ChangeSet, FileChange
from ..edit.planner import EditResult, apply_edit, apply_edits
from ..errors import ErrorCode, ToolError
from ..hooks.decision import Risk
from ..result import ToolResult
from ..text.codec import UTF8_LF, DecodedText, decode_text, encode_text, encoded_view, line_count
from .context import ToolContext
from .format import short_diff, snippet
from .plan import Plan
from .spec import PathIntent, ToolSpec, boolean, integer, schema, string


async def _current(ctx: ToolContext, path: Path) -> tuple[bytes | None, DecodedText | None, bool]:
    """The file's bytes and decoding (None for a missing or undecodable file), and
    whether those bytes are the model's last view rather than a fresh read.

    The model's last view of the file, when the toolkit still holds it and the
    file is a regular file of that size, is planned against without reading the
    file again (5 MB cross a sandbox boundary in milliseconds): the commit checks
    the file against the planned-against bytes before it writes, so a file
    changed since is a CONFLICT there, as the read-state check would have made
    it here. Otherwise the file is read, and its digest starts on another thread
    at once: the check that the file did not change since the model read it
    (``_unless_changed``) waits for it after the new content is planned.
    """
    seen = ctx.read_state.last_seen(path)
    if seen is not None:
        info = await ctx.stat(path)
        if info is not None and info["type"] == "file" and info["size"] == len(seen):
            known = ctx.read_state.decoded(path, seen)
            return seen, known or _decoded(ctx, path, seen), True
    try:
        old = await ctx.read_existing(path)
    except ToolError as error:
        if error.code is not ErrorCode.IS_A_DIRECTORY:
            raise
        raise ToolError(
            ErrorCode.IS_A_DIRECTORY,
            f"{ctx.relative(path)} is a directory",
            "give a file path inside it",
        ) from None
    hash_ahead(old)
    return old, _decoded(ctx, path, old), False


def _decoded(ctx: ToolContext, path: Path, data: bytes | None) -> DecodedText | None:
    if data is None:
        return None
    try:
        return decode_text(data, ctx.relative(path))
    except ToolError:
        return None


@contextlib.asynccontextmanager
async def _unless_changed(
    ctx: ToolContext, path: Path, old: bytes | None, last_view: bool
) -> AsyncIterator[None]:
    """Plan against ``old``, then refuse with CONFLICT if the file changed since the
    model last read it; that error outranks any the planning raised, since a stale
    view is what the model must fix first. Planned against the model's ``last_view``
    (see ``_current``), a failed plan reads the file to tell which error it is."""
    try:
        yield
    except ToolError:
        await ctx.check_unchanged(path, await ctx.read_existing(path) if last_view else old)
        raise
    await ctx.check_unchanged(path, old)


def _with_file_newlines(text: str, like: DecodedText) -> str:
    """Text written as LF into a CRLF (or CR) file gets the file's line ending."""
    if like.newline != "\n" and "\r" not in text:
        return text.replace("\n", like.newline)
    return text


def _new_line_count(change: FileChange, old: DecodedText | None) -> int:
    """The new text's line count: the old text's moved by the diff (which the result
    and the audit show anyway) when that is known, else counted."""
    if change.old_bytes is None:  # a new file: its diff adds every line
        return change.line_counts()[0]
    if old is None or old.lines is None:
        return line_count(change.new_text or "")
    added, removed = change.line_counts()
    return old.lines + added - removed


def _views(
    change: FileChange, like: DecodedText, lines: Callable[[], int]
) -> dict[Path, tuple[bytes, Callable[[], DecodedText | None]]]:
    """``Plan.new_views`` for one file, so that the next change of it needs no
    decoding; the view is made once the change is committed, when the diff that
    gives its line count (``lines``) has been computed."""
    assert change.new_bytes is not None and change.new_text is not None
    new, text = change.new_bytes, change.new_text
    return {change.path: (new, lambda: encoded_view(text, new, like, lines()))}


async def _missing_folders(ctx: ToolContext, path: Path, create_dirs: bool) -> list[Path]:
    """The folders to create for a new file at ``path``; NOT_FOUND when there are
    some and ``create_dirs`` is off, NOT_A_DIRECTORY when its parent is a file."""
    parent = await ctx.stat(path.parent)
    if parent is None and not create_dirs:
        raise ToolError(
            ErrorCode.NOT_FOUND,
            f"the directory of {ctx.relative(path)} does not exist",
            "call again with create_dirs=true",
        )
    if parent is not None and parent["type"] != "directory":
        raise ToolError(
            ErrorCode.NOT_A_DIRECTORY, f"{ctx.relative(path.parent)} is not a directory"
        )
    return [] if parent is not None else await ctx.missing_directories(path.parent)


async def plan_write_file(ctx: ToolContext, args: dict[str, Any]) -> Plan:
    path = ctx.resolve(args["path"], for_write=True)
    shown = ctx.relative(path)
    # The file first: one that exists needs no look at its folder (a round trip
    # less to a sandboxed worker). Any error of the folder outranks the file's.
    try:
        old, decoded, last_view = await _current(ctx, path)
    except ToolError:
        await _missing_folders(ctx, path, args["create_dirs"])
        raise
    missing = [] if old is not None else await _missing_folders(ctx, path, args["create_dirs"])
    like = decoded or UTF8_LF
    async with _unless_changed(ctx, path, old, last_view):
        text = _with_file_newlines(args["content"], like) if decoded else args["content"]
        new = encode_text(text, like)
    hash_ahead(new)
    kind = ChangeKind.CREATE if old is None else ChangeKind.MODIFY
    change = FileChange(
        kind, path, old, new, old_text=decoded.text if decoded else None, new_text=text
    )
    new_lines = cache(partial(_new_line_count, change, decoded))  # the result's and the view's
    parents = [FileChange(ChangeKind.MKDIR, d, None, None) for d in missing]
    changeset = ChangeSet("write_file", (*parents, change), ctx.root, summary=f"write {shown}")

    def render(final: ChangeSet, report: dict[str, Any]) -> ToolResult:
        done = final.changes[-1]
        size = len(done.new_bytes or b"")
        total = new_lines() if done is change else _new_line_count(done, decoded)
        verb = "Created" if done.kind is ChangeKind.CREATE else "Overwrote"
        added, removed = done.line_counts()
        return ToolResult.success(
            f"{verb} {shown} ({size} bytes, {total} lines)",
            {
                "path": shown,
                "created": done.kind is ChangeKind.CREATE,
                "bytes": size,
                "lines": total,
                "lines_added": added,
                "lines_removed": removed,
                "encoding": like.encoding,
            },
        )

    return Plan(changeset, render, {path: like}, new_views=_views(change, like, new_lines))


async def plan_edit_file(ctx: ToolContext, args: dict[str, Any]) -> Plan:
    path = ctx.resolve(args["path"], for_write=True)
    old, decoded, last_view = await _current(ctx, path)
    if args["old_string"] == "" and (old is None or old == b""):
        return await plan_write_file(
            ctx, {"path": args["path"], "content": args["new_string"], "create_dirs": True}
        )
    async with _unless_changed(ctx, path, old, last_view):
        return _planned_edit(ctx, path, old, decoded, args)


def _planned_edit(
    ctx: ToolContext,
    path: Path,
    old: bytes | None,
    decoded: DecodedText | None,
    args: dict[str, Any],
) -> Plan:
    shown = ctx.relative(path)
    if old is None:
        raise ToolError(
            ErrorCode.NOT_FOUND,
            f"{shown} does not exist",
            "check the path, or pass old_string='' to create the file",
        )
    decoded = decoded or decode_text(old, shown)
    if args["old_string"] == "":
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"old_string is empty but {shown} already has content",
            "give the exact text to replace, or use write_file to replace the whole file",
        )
    result = apply_edit(
        decoded.text,
        args["old_string"],
        args["new_string"],
        expected_replacements=args["expected_replacements"],
        replace_all=args["replace_all"],
        regex=args["regex"],
        file_newline=decoded.newline,
    )
    return _edit_plan(ctx, "edit_file", path, old, decoded, result)


async def plan_multi_edit(ctx: ToolContext, args: dict[str, Any]) -> Plan:
    path = ctx.resolve(args["path"], for_write=True)
    shown = ctx.relative(path)
    old, decoded, last_view = await _current(ctx, path)
    async with _unless_changed(ctx, path, old, last_view):
        if old is None:
            raise ToolError(ErrorCode.NOT_FOUND, f"{shown} does not exist", "check the path")
        decoded = decoded or decode_text(old, shown)
        result = apply_edits(decoded.text, args["edits"], file_newline=decoded.newline)
        return _edit_plan(ctx, "multi_edit", path, old, decoded, result)


def _edit_plan(
    ctx: ToolContext,
    tool: str,
    path: Path,
    old: bytes,
    decoded: DecodedText,
    result: EditResult,
) -> Plan:
    shown = ctx.relative(path)
    new = encode_text(result.text, decoded)
    hash_ahead(new)
    change = FileChange(
        ChangeKind.MODIFY, path, old, new, old_text=decoded.text, new_text=result.text
    )
    changeset = ChangeSet(tool, (change,), ctx.root, summary=f"edit {shown}")

    def render(final: ChangeSet, report: dict[str, Any]) -> ToolResult:
        done = final.changes[0]
        new_text = done.new_text or ""
        windows = [(0, 0, 1)]  # a person rewrote the content: show its start
        if new_text == result.text:
            windows = [
                (first, last, line)
                for (line, _), (first, last) in zip(
                    result.changed_lines, result.changed_positions, strict=True
                )
            ]
        after_edit = "\n...\n".join(snippet(new_text, *window) for window in windows[:5])
        added, removed = done.line_counts()
        head = f"Edited {shown}: {result.replacements} replacement(s), +{added} -{removed} lines"
        if result.tolerance != "exact":
            head += (
                f" (no exact match; applied with tolerance '{result.tolerance}' "
                "at the one location that fits)"
            )
        return ToolResult.success(
            "\n".join((head, short_diff(final.unified_diff()), "After the edit:", after_edit)),
            {
                "path": shown,
                "replacements": result.replacements,
                "tolerance": result.tolerance,
                "lines_added": added,
                "lines_removed": removed,
            },
        )

    lines = partial(_new_line_count, change, decoded)
    return Plan(changeset, render, {path: decoded}, new_views=_views(change, decoded, lines))


FILE = string("File path relative to the project root.", minLength=1)
EDIT_FIELDS = {
    "old_string": string(
        "Exact text to replace, copied from read_file output without the "
        "line-number prefix. Empty to create a new file."
    ),
    "new_string": string("Replacement text."),
    "expected_replacements": integer("How many occurrences old_string must have.", 1, minimum=1),
}

WRITE_TOOLS = (
    ToolSpec(
        name="write_file",
        description=(
            "Create a file or replace its whole content. The write is atomic (the old file "
            "stays intact until the new one is complete) and keeps the file's mode, encoding "
            "and line endings. Missing parent directories are created unless "
            "create_dirs=false. For small changes prefer edit_file. A CONFLICT error means "
            "the file changed since you read it: read it again first."
        ),
        parameters=schema(
            {
                "path": FILE,
                "content": string("The complete new content of the file."),
                "create_dirs": boolean("Create missing parent directories.", True),
            },
            ("path", "content"),
        ),
        risk=Risk.WRITE,
        plan=plan_write_file,
        path_arguments={"path": PathIntent.WRITE},
    ),
    ToolSpec(
        name="edit_file",
        description=(
            "Replace old_string with new_string in a file. old_string must match the file "
            "exactly (whitespace included) and occur exactly expected_replacements times; "
            "include enough surrounding lines to make it unique. On NO_MATCH the error shows "
            "the nearest candidate lines: read the file there and copy the text exactly. On "
            "AMBIGUOUS_MATCH add context or set expected_replacements. old_string='' creates "
            "a new file with new_string. If no exact match exists, a match differing only in "
            "trailing whitespace, indentation, line endings or typographic quotes is used when "
            "exactly one place fits, and the result says so. replace_all replaces every "
            "occurrence; regex=true treats old_string as a Python regex."
        ),
        parameters=schema(
            {
                "path": FILE,
                **EDIT_FIELDS,
                "replace_all": boolean(
                    "Replace every exact occurrence, however many there are.", False
                ),
                "regex": boolean(
                    "old_string is a Python regular expression (use inline flags such as "
                    "(?m)); new_string is its replacement template (\\1, \\g<name>). "
                    "Stopped with TIMEOUT if it runs too long.",
                    False,
                ),
            },
            ("path", "old_string", "new_string"),
        ),
        risk=Risk.WRITE,
        plan=plan_edit_file,
        path_arguments={"path": PathIntent.WRITE},
    ),
    ToolSpec(
        name="multi_edit",
        description=(
            "Apply several edits to one file, in order, all or none: each edit sees the "
            "result of the previous one. Same matching rules as edit_file; if any edit fails "
            "nothing is written and the error names the failing edit."
        ),
        parameters=schema(
            {
                "path": FILE,
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "items": schema(EDIT_FIELDS, ("old_string", "new_string")),
                    "description": "Edits applied one after another.",
                },
            },
            ("path", "edits"),
        ),
        risk=Risk.WRITE,
        plan=plan_multi_edit,
        path_arguments={"path": PathIntent.WRITE},
    ),
)
