"""Tools that change the tree: delete_path, move_path, copy_path, create_directory.

Like every mutating tool they only plan: each file becomes a FileChange with the
bytes it was planned against, so review shows what goes, the commit is all or
nothing, and the journal can put every byte back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..changes.changeset import ChangeKind, ChangeSet, FileChange
from ..errors import ErrorCode, ToolError
from ..hooks.decision import Risk
from ..result import ToolResult
from .context import ToolContext
from .plan import Plan
from .spec import PathIntent, ToolSpec, boolean, schema, string


async def _tree(ctx: ToolContext, directory: Path) -> tuple[list[Path], list[Path]]:
    """Files and directories under ``directory`` (parents first), all allowed to change."""
    found = await ctx.provider.call("walk_all", path=str(directory))
    if found["symlinks"]:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"{ctx.relative(directory)} contains symbolic links "
            f"({ctx.relative(Path(found['symlinks'][0]))}); they are not moved, copied or "
            "deleted as part of a directory",
            "handle the files one by one, or ask the person to remove the links",
        )
    files = [Path(p) for p in found["files"]]
    dirs = [Path(p) for p in found["dirs"]]
    for path in files + dirs:
        rel = ctx.relative(path)
        pattern = ctx.guard.denied_pattern(rel, for_write=True, is_dir=path in dirs)
        if pattern is not None:
            raise ToolError(
                ErrorCode.DENIED_PATTERN,
                f"{ctx.relative(directory)} contains {rel}, which is protected ({pattern})",
                "leave protected files alone; handle the other files one by one",
            )
    return files, dirs


async def _require(ctx: ToolContext, path: Path) -> dict[str, Any]:
    info = await ctx.stat(path)
    if info is None:
        raise ToolError(
            ErrorCode.NOT_FOUND, f"{ctx.relative(path)} does not exist", "check the path with glob"
        )
    return info


def _refuse_root(ctx: ToolContext, path: Path, verb: str) -> None:
    if path == ctx.root:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"the project root itself can never be {verb}",
            "name a file or directory inside the root",
            security_violation=True,
        )


async def _file_bytes(ctx: ToolContext, path: Path) -> bytes:
    data = await ctx.read_bytes(path)
    await ctx.check_unchanged(path, data)
    return data


async def plan_delete_path(ctx: ToolContext, args: dict[str, Any]) -> Plan:
    path = ctx.resolve(args["path"], for_write=True)
    _refuse_root(ctx, path, "deleted")
    shown = ctx.relative(path)
    info = await _require(ctx, path)
    changes: list[FileChange] = []
    if info["type"] == "directory":
        files, dirs = await _tree(ctx, path)
        if (files or len(dirs) > 1) and not args["recursive"]:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"{shown}/ is not empty ({len(files)} files, {len(dirs) - 1} subdirectories)",
                "pass recursive=true to delete it with everything inside",
            )
        for file in files:
            changes.append(FileChange(ChangeKind.DELETE, file, await _file_bytes(ctx, file), None))
        changes.extend(FileChange(ChangeKind.RMDIR, d, None, None) for d in reversed(dirs))
        counts = {"type": "directory", "files": len(files), "directories": len(dirs)}
    else:
        changes.append(FileChange(ChangeKind.DELETE, path, await _file_bytes(ctx, path), None))
        counts = {"type": info["type"], "files": 1, "directories": 0}
    changeset = ChangeSet("delete_path", tuple(changes), ctx.root, summary=f"delete {shown}")

    def render(final: ChangeSet, report: dict[str, Any]) -> ToolResult:
        detail = (
            f"{counts['files']} files and {counts['directories']} directories"
            if counts["type"] == "directory"
            else counts["type"]
        )
        return ToolResult.success(f"Deleted {shown} ({detail})", {"path": shown, **counts})

    return Plan(changeset, render)


def _destination(ctx: ToolContext, src: Path, raw_dst: str, dst_info: dict | None) -> Path:
    dst = ctx.resolve(raw_dst, for_write=True)
    if raw_dst.endswith("/") or (dst_info is not None and dst_info["type"] == "directory"):
        return ctx.resolve(f"{ctx.relative(dst)}/{src.name}", for_write=True)
    return dst


async def _transfer(ctx: ToolContext, args: dict[str, Any], *, move: bool) -> Plan:
    tool = "move_path" if move else "copy_path"
    src = ctx.resolve(args["src"], for_write=move)
    _refuse_root(ctx, src, "moved" if move else "copied")
    info = await _require(ctx, src)
    dst_raw = await ctx.stat(ctx.resolve(args["dst"], for_write=True))
    dst = _destination(ctx, src, args["dst"], dst_raw)
    if dst == src or dst.is_relative_to(src):
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"cannot {'move' if move else 'copy'} {ctx.relative(src)} into itself",
        )
    if info["type"] == "directory":
        files, dirs = await _tree(ctx, src)
    else:
        files, dirs = [src], []
    top = dst if dirs else dst.parent
    changes = [
        FileChange(ChangeKind.MKDIR, d, None, None) for d in await ctx.missing_directories(top)
    ]
    for directory in dirs[1:]:
        changes.append(FileChange(ChangeKind.MKDIR, dst / directory.relative_to(src), None, None))
    for file in files:
        target = dst / file.relative_to(src) if dirs else dst
        data = await _file_bytes(ctx, file)
        mode = (await _require(ctx, file))["mode"]
        existing = await ctx.stat(target)
        if existing is not None and existing["type"] == "directory":
            raise ToolError(ErrorCode.IS_A_DIRECTORY, f"{ctx.relative(target)} is a directory")
        if existing is not None and not args["overwrite"]:
            raise ToolError(
                ErrorCode.ALREADY_EXISTS,
                f"{ctx.relative(target)} already exists",
                "pass overwrite=true to replace it, or choose another destination",
            )
        old_target = await ctx.read_existing(target) if existing is not None else None
        if move:
            changes.append(
                FileChange(
                    ChangeKind.MOVE,
                    file,
                    data,
                    data,
                    dest=target,
                    dest_old_bytes=old_target,
                    mode=mode,
                )
            )
        else:
            kind = ChangeKind.CREATE if old_target is None else ChangeKind.MODIFY
            changes.append(FileChange(kind, target, old_target, data, mode=mode))
    if move:
        changes.extend(FileChange(ChangeKind.RMDIR, d, None, None) for d in reversed(dirs))
    shown_src, shown_dst = ctx.relative(src), ctx.relative(dst)
    verb = "Moved" if move else "Copied"
    changeset = ChangeSet(tool, tuple(changes), ctx.root, summary=f"{tool} {shown_src}")

    def render(final: ChangeSet, report: dict[str, Any]) -> ToolResult:
        return ToolResult.success(
            f"{verb} {shown_src} to {shown_dst} ({len(files)} files)",
            {"src": shown_src, "dst": shown_dst, "files": len(files), "directories": len(dirs)},
        )

    return Plan(changeset, render)


async def plan_move_path(ctx: ToolContext, args: dict[str, Any]) -> Plan:
    return await _transfer(ctx, args, move=True)


async def plan_copy_path(ctx: ToolContext, args: dict[str, Any]) -> Plan:
    return await _transfer(ctx, args, move=False)


async def plan_create_directory(ctx: ToolContext, args: dict[str, Any]) -> Plan:
    path = ctx.resolve(args["path"], for_write=True)
    shown = ctx.relative(path)
    info = await ctx.stat(path)
    if info is not None and info["type"] != "directory":
        raise ToolError(ErrorCode.ALREADY_EXISTS, f"{shown} exists and is not a directory")
    missing = await ctx.missing_directories(path)
    changes = tuple(FileChange(ChangeKind.MKDIR, d, None, None) for d in missing)
    changeset = ChangeSet("create_directory", changes, ctx.root, summary=f"mkdir {shown}")

    def render(final: ChangeSet, report: dict[str, Any]) -> ToolResult:
        if not changes:
            return ToolResult.success(f"{shown}/ already exists", {"path": shown, "created": False})
        return ToolResult.success(f"Created directory {shown}/", {"path": shown, "created": True})

    return Plan(changeset, render)


PATH = string("Path relative to the project root.", minLength=1)
OVERWRITE = boolean("Replace an existing destination file.", False)

PATH_TOOLS = (
    ToolSpec(
        name="delete_path",
        description=(
            "Delete a file, or a directory with recursive=true (a non-empty directory "
            "without it is refused; the project root can never be deleted). The person "
            "reviewing always sees what goes, and the change can be reverted with undo. "
            "Protected files (secrets, .git) inside a directory block the delete."
        ),
        parameters=schema(
            {"path": PATH, "recursive": boolean("Delete a directory and its contents.", False)},
            ("path",),
        ),
        risk=Risk.DESTRUCTIVE,
        plan=plan_delete_path,
        path_arguments={"path": PathIntent.WRITE},
        never_trusted="deletes always ask and cannot be trusted for the session",
    ),
    ToolSpec(
        name="move_path",
        description=(
            "Move or rename a file or directory. If dst is an existing directory (or ends "
            "with '/'), src moves inside it. An existing destination file is refused unless "
            "overwrite=true. Revert with undo."
        ),
        parameters=schema({"src": PATH, "dst": PATH, "overwrite": OVERWRITE}, ("src", "dst")),
        risk=Risk.WRITE,
        plan=plan_move_path,
        path_arguments={"src": PathIntent.WRITE, "dst": PathIntent.WRITE},
    ),
    ToolSpec(
        name="copy_path",
        description=(
            "Copy a file or directory (recursively), keeping file modes. If dst is an "
            "existing directory (or ends with '/'), the copy goes inside it. An existing "
            "destination file is refused unless overwrite=true."
        ),
        parameters=schema({"src": PATH, "dst": PATH, "overwrite": OVERWRITE}, ("src", "dst")),
        risk=Risk.WRITE,
        plan=plan_copy_path,
        path_arguments={"src": PathIntent.READ, "dst": PathIntent.WRITE},
    ),
    ToolSpec(
        name="create_directory",
        description=(
            "Create a directory and any missing parents. Succeeds without change if it "
            "already exists; refused if a file is in the way."
        ),
        parameters=schema({"path": PATH}, ("path",)),
        risk=Risk.WRITE,
        plan=plan_create_directory,
        path_arguments={"path": PathIntent.WRITE},
        idempotent=True,
    ),
)
