"""apply_patch: a Codex envelope or a unified diff, as one all-or-nothing ChangeSet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._runtime.gc_pause import paused_gc
from ..changes.changeset import ChangeKind, ChangeSet, FileChange, PlannedDiff
from ..errors import ErrorCode, ToolError
from ..hooks.decision import Risk
from ..patch.planner import PlannedFile, parse_patch, plan_patch
from ..result import ToolResult
from ..text.codec import UTF8_LF, DecodedText, decode_text, encode_text, has_escaped_bytes
from .context import ToolContext
from .plan import Plan
from .spec import ToolSpec, schema, string


async def plan_apply_patch(ctx: ToolContext, args: dict[str, Any]) -> Plan:
    with paused_gc():  # resolving too: a collection in it would scan every hunk line
        parsed = parse_patch(args["patch"])
        if not parsed.files:
            raise ToolError(ErrorCode.INVALID_ARGUMENT, "the patch changes no files")
        raws = list(
            dict.fromkeys(
                raw
                for section in parsed.files
                for raw in (section.path, section.move_to)
                if raw is not None
            )
        )
        paths = dict(zip(raws, ctx.resolve_all(raws, for_write=True), strict=True))
    current, formats = await _read_current(ctx, list(dict.fromkeys(paths.values())))

    def read_text(raw: str) -> tuple[str, str] | None:
        decoded = formats.get(paths[raw])
        return None if decoded is None else (decoded.text, decoded.newline)

    def encoding_of(raw: str) -> str | None:
        decoded = formats.get(paths[raw])
        return None if decoded is None else decoded.encoding

    with paused_gc():
        planned = plan_patch(parsed, read_text, encoding_of)
    # Every hunk line's text: nothing needs them through review and commit.
    style = parsed.style
    del parsed
    new_dirs = await ctx.missing_folders(  # the folders the files land in
        [paths[item.dest if item.dest is not None else item.path].parent for item in planned]
    )
    kept_modes = await _modes(
        ctx, [paths[item.path] for item in planned if item.kind == "move" and item.mode is None]
    )
    changes: list[FileChange] = []
    notes: list[str] = []
    for item in planned:
        source = paths[item.path]
        target = paths[item.dest] if item.dest is not None else source
        like = formats.get(source, UTF8_LF)
        new_bytes = _encoded(item.new_text, like, source in formats)
        notes.extend(f"{item.path}: {note}" for note in item.notes)
        if item.mode is not None:
            notes.append(f"{item.path}: mode set to {item.mode:o}")
        old = current[source]
        mode = item.mode
        if mode is None and item.kind == "move":  # a renamed file keeps its mode
            mode = kept_modes.get(source)
        common = {
            "old_text": item.old_text,
            "new_text": item.new_text,
            "mode": mode,
            "line_opcodes": item.alignment,
            "planned_diff": _planned_diff(item),
        }
        if item.kind == "add":
            if old is not None:
                raise ToolError(
                    ErrorCode.ALREADY_EXISTS,
                    f"{item.path} already exists; the patch adds it as a new file",
                    "use an Update File section to change an existing file",
                )
            changes.append(FileChange(ChangeKind.CREATE, source, None, new_bytes, **common))
        elif item.kind == "delete":
            changes.append(FileChange(ChangeKind.DELETE, source, old, None, **common))
        elif item.kind == "move":
            changes.append(
                FileChange(
                    ChangeKind.MOVE,
                    source,
                    old,
                    new_bytes,
                    dest=target,
                    dest_old_bytes=current.get(target),
                    **common,
                )
            )
        else:
            changes.append(FileChange(ChangeKind.MODIFY, source, old, new_bytes, **common))
    mkdirs = [FileChange(ChangeKind.MKDIR, d, None, None) for d in new_dirs]
    changeset = ChangeSet(
        "apply_patch", (*mkdirs, *changes), ctx.root, summary=f"patch {len(changes)} file(s)"
    )

    def render(final: ChangeSet, report: dict[str, Any]) -> ToolResult:
        added, removed = final.line_counts()
        files = [f for f in final.describe()["files"] if f["kind"] != "mkdir"]
        lines = [f"Applied patch to {len(files)} file(s), +{added} -{removed} lines:"]
        for f in files:
            where = f"{f['path']} -> {f['dest']}" if f["dest"] else f["path"]
            lines.append(f"  {f['kind']:<6} {where} (+{f['added']} -{f['removed']})")
        lines.extend(f"note: {note}" for note in notes)
        return ToolResult.success(
            "\n".join(lines),
            {
                "files": files,
                "lines_added": added,
                "lines_removed": removed,
                "notes": notes,
                "format": style,
            },
        )

    return Plan(changeset, render, formats)


PATCH_TOOLS = (
    ToolSpec(
        name="apply_patch",
        description=(
            "Apply a patch to one or more files, all or nothing. Accepts the Codex format "
            "('*** Begin Patch' / '*** Add File: p' / '*** Update File: p' with '@@' hunks, "
            "'*** Move to: p', '*** Delete File: p', '*** End of File', '*** End Patch') and "
            "plain unified diffs (git diff output included). Context lines must match the "
            "file; small whitespace or quote differences are tolerated only where exactly one "
            "place fits. On NO_MATCH the error names the file, the hunk and the nearest lines: "
            "read the file there and regenerate that hunk."
        ),
        parameters=schema({"patch": string("The whole patch text.", minLength=1)}, ("patch",)),
        risk=Risk.WRITE,
        plan=plan_apply_patch,
    ),
)


async def _read_current(
    ctx: ToolContext, paths: list[Path]
) -> tuple[dict[Path, bytes | None], dict[Path, DecodedText]]:
    """Every file the patch names, read in one batch: its bytes (None: absent) and,
    for those that exist, the decoded text; each checked against what was last read."""
    current: dict[Path, bytes | None] = {}
    formats: dict[Path, DecodedText] = {}
    for path, data in zip(paths, await ctx.read_existing_files(paths), strict=True):
        await ctx.check_unchanged(path, data)
        current[path] = data
        if data is not None:
            formats[path] = decode_text(data, ctx.relative(path))
    return current, formats


async def _modes(ctx: ToolContext, paths: list[Path]) -> dict[Path, int]:
    """The permission bits of each path that exists, asked for all at once (one round
    trip to a sandbox worker, not one per file)."""
    found = await ctx.stat_each(paths)
    return {path: info["mode"] for path, info in zip(paths, found, strict=True) if info}


def _encoded(text: str | None, like: DecodedText, existed: bool) -> bytes | None:
    """A new file from a patch read off non-UTF-8 bytes gets exactly those bytes back
    (its surrogate escapes), as ``patch`` and ``git apply`` write them."""
    if text is None:
        return None
    if not existed and has_escaped_bytes(text):
        return text.encode("utf-8", "surrogateescape")
    return encode_text(text, like)


def _planned_diff(item: PlannedFile) -> PlannedDiff | None:
    if item.hunks is None or item.old_text is None or item.new_text is None:
        return None
    return PlannedDiff(item.old_text, item.new_text, item.hunks)
