"""Tools that read: read_file, read_many_files, file_exists, get_file_info."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import ErrorCode, ToolError
from ..hooks.decision import Risk
from ..ops.packed_paths import unpack_paths
from ..result import ToolResult
from ..text.codec import decode_text, detect_binary_type, split_lines
from .context import ToolContext
from .format import number_lines
from .search_tools import too_deep_notes
from .spec import PathIntent, ToolSpec, integer, schema, string


@dataclass(frozen=True)
class _Window:
    """The lines read_file shows, wherever they came from: a whole-file decode or a
    provider window. One formatter for both keeps their output identical."""

    lines: list[str]
    first: int
    """0-based index of ``lines[0]`` in the file."""
    total: int
    full_lengths: dict[int, int]
    """Real length of lines the provider cut short, by index in ``lines``."""
    encoding: str
    bom: bool
    newline: str
    size: int


async def read_file(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    path = ctx.resolve(args["path"])
    shown = ctx.relative(path)
    offset: int | None = args.get("offset")
    tail: int | None = args.get("tail")
    if offset is not None and tail is not None:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            "read_file: offset and tail cannot be combined",
            "use tail=N alone for the last N lines, or offset (and limit) to read from a line",
        )
    policy = ctx.policy
    limit: int = min(args.get("limit") or policy.max_read_lines, policy.max_read_lines)
    found = await ctx.read_window(
        path,
        offset=offset or 0,
        tail=tail,
        limit=limit,
        line_bytes=4 * policy.max_line_chars + 4,  # always more characters than are shown
        max_bytes=policy.max_file_bytes,
        whole_up_to=policy.window_reads_above,
        max_window_file_bytes=policy.max_window_file_bytes,
    )
    if "whole" in found:
        window = _whole_file_window(ctx, path, found["whole"], offset or 0, limit, tail)
    else:
        window = _provider_window(ctx, path, found)
    return _numbered(window, shown, policy.max_line_chars, tail is not None)


def _whole_file_window(
    ctx: ToolContext, path: Path, data: bytes, offset: int, limit: int, tail: int | None
) -> _Window:
    decoded = decode_text(data, ctx.relative(path))
    lines = split_lines(decoded.text)
    ctx.read_state.remember(path, data, decoded=replace(decoded, lines=len(lines)))
    first = offset if tail is None else max(0, len(lines) - tail)
    return _Window(
        lines=lines[first : first + limit],
        first=first,
        total=len(lines),
        full_lengths={},
        encoding=decoded.encoding,
        bom=bool(decoded.bom),
        newline=decoded.newline,
        size=len(data),
    )


def _provider_window(ctx: ToolContext, path: Path, found: dict[str, Any]) -> _Window:
    try:
        text = found["lines"].decode("utf-8")
    except UnicodeDecodeError:  # the file was rewritten between the scan and the window
        raise ToolError(
            ErrorCode.IO_ERROR,
            f"{ctx.relative(path)} changed while it was being read",
            "read it again",
        ) from None
    ctx.read_state.remember_window(path, found)
    return _Window(
        lines=split_lines(text),
        first=found["first_line"],
        total=found["total_lines"],
        full_lengths=dict(found["clipped"]),
        encoding="utf-8",
        bom=found["bom"],
        newline=found["newline"],
        size=found["size"],
    )


def _numbered(window: _Window, shown: str, max_line_chars: int, tail: bool) -> ToolResult:
    offset, total = window.first, window.total
    if offset > total or (offset == total and total > 0):
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"offset {offset} is past the end of {shown}, which has {total} lines",
            f"use an offset below {total}",
        )
    body, cut = number_lines(window.lines, offset + 1, max_line_chars, window.full_lengths)
    last_shown = offset + len(window.lines)
    notes: list[str] = []
    if last_shown < total:
        notes.append(
            f"[... file continues: lines {last_shown + 1}-{total} not shown; "
            f"call read_file with offset={last_shown} to read on]"
        )
    if cut:
        notes.append(
            f"[{cut} line(s) longer than {max_line_chars} characters were cut; "
            "use grep to find text in them]"
        )
    if total == 0:
        body = "(empty file)"
    elif tail and offset > 0:
        lead = f"[lines 1-{offset} not shown; these are lines {offset + 1}-{last_shown} of {total}]"
        body = f"{lead}\n{body}"
    text = "\n".join([body, *notes]) if notes else body
    return ToolResult.success(
        text,
        {
            "path": shown,
            "total_lines": total,
            "first_line": offset + 1 if window.lines else 0,
            "last_line": last_shown,
            "truncated": last_shown < total or cut > 0,
            "encoding": window.encoding,
            "bom": window.bom,
            "newline": window.newline,
            "bytes": window.size,
        },
    )


async def read_many_files(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    max_files = ctx.policy.max_many_files
    budget = ctx.policy.max_many_bytes
    targets, deep = await _expand(ctx, args["paths"], max_files + 1)
    sections: list[str] = []
    files: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    used = 0
    for path in targets[:max_files]:
        shown = ctx.relative(path)
        try:
            data, decoded = await ctx.read_text(path)
        except ToolError as error:
            skipped.append({"path": shown, "reason": f"{error.code.value}: {error.message}"})
            continue
        if used + len(data) > budget:
            skipped.append({"path": shown, "reason": f"over the {budget}-byte total budget"})
            continue
        used += len(data)
        ctx.read_state.remember(path, data)
        lines = split_lines(decoded.text)
        body, _ = number_lines(lines, 1, ctx.policy.max_line_chars)
        sections.append(f"==> {shown} ({len(lines)} lines) <==\n{body}")
        files.append({"path": shown, "lines": len(lines), "bytes": len(data)})
    notes = [f"[skipped {s['path']}: {s['reason']}]" for s in skipped] + deep
    if len(targets) > max_files:
        notes.append(f"[more than {max_files} files matched; name fewer paths or patterns]")
    if not sections and not notes:
        raise ToolError(
            ErrorCode.NOT_FOUND,
            "no files matched the given paths or patterns",
            "check the names with glob or list_directory",
        )
    return ToolResult.success(
        "\n\n".join(sections + notes),
        {"files": files, "skipped": skipped, "bytes": used, "capped": len(targets) > max_files},
    )


async def _expand(ctx: ToolContext, patterns: list[str], cap: int) -> tuple[list[Path], list[str]]:
    """The paths named or matched, and the notes of globs that left deep folders out."""
    seen: dict[Path, None] = {}
    deep: list[str] = []
    for raw in patterns:
        if any(ch in raw for ch in "*?["):
            found = await ctx.provider.call(
                "glob_files",
                root=str(ctx.root),
                base=str(ctx.root),
                pattern=raw,
                denied_patterns=list(ctx.policy.denied_patterns),
                limit=cap,
            )
            beyond = 0
            for match in unpack_paths(found["matches"]):
                try:
                    seen.setdefault(ctx.resolve(match), None)
                except ToolError as error:
                    if error.code is not ErrorCode.PATH_TOO_DEEP:
                        raise
                    beyond += 1
            if beyond:
                deep.append(f"[{beyond} matched file(s) lie beyond the path limit; not read]")
            deep += too_deep_notes(found)
        else:
            seen.setdefault(ctx.resolve(raw), None)
        if len(seen) >= cap:
            break
    return list(seen)[:cap], deep


async def file_exists(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    path = ctx.resolve(args["path"])
    info = await ctx.stat(path)
    shown = ctx.relative(path)
    if info is None:
        return ToolResult.success(f"{shown} does not exist", {"path": shown, "exists": False})
    return ToolResult.success(
        f"{shown} exists ({info['type']})",
        {"path": shown, "exists": True, "type": info["type"]},
    )


async def get_file_info(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    path = ctx.resolve(args["path"])
    shown = ctx.relative(path)
    info = await ctx.stat(path)
    if info is None:
        raise ToolError(ErrorCode.NOT_FOUND, f"{shown} does not exist", "check the path with glob")
    data: dict[str, Any] = {
        "path": shown,
        "type": info["type"],
        "size": info["size"],
        "modified": _iso(info["mtime"]),
        "created": _iso(info["birthtime"]) if info["birthtime"] else None,
        "changed": _iso(info["ctime"]),
        "permissions": info["permissions"],
        "mode": oct(info["mode"]),
    }
    if info["type"] == "file" and info["size"] <= ctx.policy.max_file_bytes:
        raw = await ctx.read_bytes(path)
        kind = detect_binary_type(raw, shown)
        data["content_type"] = kind or "text"
        if kind is None:
            try:
                decoded = decode_text(raw, shown)
            except ToolError:
                data["content_type"] = "binary data"
            else:
                data["line_count"] = len(split_lines(decoded.text))
                data["encoding"] = decoded.encoding
    lines = [f"{key}: {value}" for key, value in data.items() if value is not None]
    return ToolResult.success("\n".join(lines), data)


def _iso(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, tz=dt.timezone.utc).isoformat(timespec="seconds")


PATH = string("File path, relative to the project root (or absolute inside it).", minLength=1)

READ_TOOLS = (
    ToolSpec(
        name="read_file",
        description=(
            "Read a text file and return its lines numbered like `cat -n`. Shows at most "
            "2000 lines per call and 2000 characters per line; when the output ends with a "
            "'file continues' marker, call again with the offset it gives. For part of a long "
            "file give offset (and limit); for its end, such as the latest lines of a log, "
            "give tail=N alone: the numbers shown are the real line numbers. Only the lines "
            "asked for are read, so windows of large files are cheap. The encoding is "
            "detected (UTF-8, UTF-16, legacy encodings). Binary files, images and files over "
            "the size limit (10 MB; 1 GB for UTF-8 text) are refused with the reason: use "
            "grep or get_file_info for those. Read a file before editing it: edits are "
            "checked against what you read."
        ),
        parameters=schema(
            {
                "path": PATH,
                "offset": integer(
                    "Lines to skip from the start (default 0 = from the first line).", minimum=0
                ),
                "limit": {
                    "type": ["integer", "null"],
                    "description": "How many lines to return (at most 2000; default all).",
                    "minimum": 1,
                    "default": None,
                },
                "tail": integer(
                    "Show the last N lines instead (not together with offset).", minimum=1
                ),
            },
            ("path",),
        ),
        risk=Risk.READ,
        run=read_file,
        path_arguments={"path": PathIntent.READ},
        idempotent=True,
    ),
    ToolSpec(
        name="read_many_files",
        description=(
            "Read several text files at once, each under a '==> path <==' header with numbered "
            "lines. Accepts paths and glob patterns (e.g. 'src/**/*.py'). Capped at 50 files "
            "and 1 MB in total; files that are skipped (binary, too large, over the budget) "
            "are listed with the reason. Use read_file with offset for long files."
        ),
        parameters=schema(
            {
                "paths": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                    "description": "Paths or glob patterns relative to the project root.",
                }
            },
            ("paths",),
        ),
        risk=Risk.READ,
        run=read_many_files,
        path_arguments={"paths": PathIntent.READ},
        idempotent=True,
    ),
    ToolSpec(
        name="file_exists",
        description="Tell whether a path exists and whether it is a file or a directory.",
        parameters=schema({"path": PATH}, ("path",)),
        risk=Risk.READ,
        run=file_exists,
        path_arguments={"path": PathIntent.READ},
        idempotent=True,
    ),
    ToolSpec(
        name="get_file_info",
        description=(
            "Metadata of a file or directory: size, modified/created times, type, "
            "permissions, and for text files the encoding and line count. Use it to check a "
            "file's size or type before reading it."
        ),
        parameters=schema({"path": PATH}, ("path",)),
        risk=Risk.READ,
        run=get_file_info,
        path_arguments={"path": PathIntent.READ},
        idempotent=True,
    ),
)
