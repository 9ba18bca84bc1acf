"""Putting files back: the changes that bring paths to given bytes, and crash recovery."""

from __future__ import annotations

from pathlib import Path

from ..changes.changeset import ChangeKind, ChangeSet, FileChange, content_hash
from ..errors import ErrorCode, ToolError
from ..journal.undo_journal import JournalEntry, UndoJournal
from .context import ToolContext


def check_entry_paths(ctx: ToolContext, entry: JournalEntry) -> None:
    """Every path of a journal entry, guarded again as a write before anything is planned.

    The journal is verified, but the guard is the authority on what may be written
    now (a denial added since, a symlink swapped in since), so undo asks it again.
    """
    for item in entry.files:
        for raw in (item.path, item.dest):
            if raw is not None and ctx.resolve(raw, for_write=True) != Path(raw):
                raise ToolError(
                    ErrorCode.PATH_OUTSIDE_ROOT,
                    f"Change {entry.change_id} names a path that no longer resolves to itself.",
                    "Fix the file by hand with edit_file or write_file.",
                )


async def change_to(
    ctx: ToolContext, path: Path, wanted: bytes | None, mode: int | None, landed_hash: str
) -> FileChange | None:
    """The change that makes ``path`` hold ``wanted`` (None: absent) again.

    None when it already does, or when it holds neither ``wanted`` nor the bytes
    the change landed (``landed_hash``): those are someone else's, and are kept.
    """
    info = await ctx.stat(path)
    if info is not None and info["type"] == "directory":
        raise ToolError(ErrorCode.CONFLICT, f"{ctx.relative(path)} is now a directory")
    current = await ctx.read_existing(path) if info is not None else None
    if current == wanted or content_hash(current) != landed_hash:
        return None
    if wanted is None:
        return FileChange(ChangeKind.DELETE, path, current, None)
    kind = ChangeKind.CREATE if current is None else ChangeKind.MODIFY
    return FileChange(kind, path, current, wanted, mode=mode)


async def directory_change(
    ctx: ToolContext, path: Path, should_exist: bool, removing: set[Path]
) -> FileChange | None:
    """MKDIR or RMDIR as needed; a directory is removed only if all it holds is in
    ``removing`` (entries the same change removes first)."""
    info = await ctx.stat(path)
    if should_exist:
        return None if info is not None else FileChange(ChangeKind.MKDIR, path, None, None)
    if info is None:
        return None
    found = await ctx.provider.call("walk_all", path=str(path))
    inside = {Path(p) for p in found["files"] + found["symlinks"] + found["dirs"][1:]}
    if not inside <= removing:
        raise ToolError(
            ErrorCode.CONFLICT,
            f"{ctx.relative(path)}/ has new content since the change; it cannot be removed",
        )
    return FileChange(ChangeKind.RMDIR, path, None, None)


async def changes_back_to_old(ctx: ToolContext, entry: JournalEntry) -> list[FileChange]:
    """Changes that return every path of ``entry`` to its bytes before the entry."""
    changes: list[FileChange] = []
    removing: set[Path] = set()
    for item in reversed(entry.files):
        path = Path(item.path)
        if item.kind in (ChangeKind.MKDIR.value, ChangeKind.RMDIR.value):
            wanted_dir = item.kind == ChangeKind.RMDIR.value
            change = await directory_change(ctx, path, wanted_dir, removing)
            if change is not None:
                changes.append(change)
                removing.add(path)
            continue
        if item.dest is None:
            targets = [(path, item.old_bytes, item.new_hash)]
        else:  # a move landed the bytes at dest and left nothing at path
            targets = [
                (Path(item.dest), item.dest_old_bytes, item.new_hash),
                (path, item.old_bytes, content_hash(None)),
            ]
        for target, wanted, landed in targets:
            change = await change_to(ctx, target, wanted, item.mode, landed)
            if change is not None:
                changes.append(change)
                if wanted is None:
                    removing.add(target)
    return changes


async def recover_interrupted(
    ctx: ToolContext, journal: UndoJournal, complete_landed: bool = False
) -> list[str]:
    """Deal with every commit the journal saw start but not finish (a killed process
    or worker). Returns the ids of the changes dealt with.

    Temp files and backups are dealt with first (backups renamed back), then any
    file still holding the change's new bytes is given its old bytes, so each
    interrupted change ends entirely undone; bytes that are neither old nor new
    belong to someone else and are left alone. With ``complete_landed``, a change
    whose every file already holds its new state is completed instead (its
    leftovers dropped, its entry marked committed): it was killed while cleaning
    up, or it finished and the mark that says so was lost (the journal does not
    flush that mark; this is what keeps a reported change after a power loss).
    """
    recovered: list[str] = []
    for entry in journal.pending():
        try:
            check_entry_paths(ctx, entry)
        except ToolError:
            journal.abandon(entry.change_id)
            continue
        directories = {str(Path(f.path).parent) for f in entry.files}
        directories |= {str(Path(f.dest).parent) for f in entry.files if f.dest}
        landed = complete_landed and await _landed_whole(ctx, entry)
        await ctx.provider.call(
            "recover_commit",
            change_id=entry.change_id,
            directories=sorted(directories),
            keep_new=landed,
        )
        recovered.append(entry.change_id)
        if landed:
            journal.finish(entry.change_id)
            continue
        changes = await changes_back_to_old(ctx, entry)
        if changes:
            restore = ChangeSet("recover", tuple(changes), ctx.root)
            await ctx.provider.call(
                "commit_changes", change_id=restore.change_id, changes=commit_payload(restore)
            )
        journal.abandon(entry.change_id)
    return recovered


async def _landed_whole(ctx: ToolContext, entry: JournalEntry) -> bool:
    """Whether every path of ``entry`` is in the state its commit gives it."""
    for item in entry.files:
        path = Path(item.path)
        info = await ctx.stat(path)
        if item.kind == ChangeKind.MKDIR.value:
            if info is None or info["type"] != "directory":
                return False
            continue
        if item.dest is not None:  # a move: the source is gone, the bytes are at dest
            if info is not None:
                return False
            path = Path(item.dest)
            info = await ctx.stat(path)
        if info is not None and info["type"] == "directory":
            return False
        try:
            current = await ctx.read_existing(path) if info is not None else None
        except ToolError:
            return False
        if content_hash(current) != item.new_hash:
            return False
    return True


def commit_payload(changeset: ChangeSet, with_old_bytes: bool = False) -> list[dict[str, object]]:
    """The commit primitive's arguments. ``with_old_bytes`` (for an in-process
    provider, where they are passed by reference) lets it compare the files with
    the planned bytes instead of hashing them again; otherwise the new bytes'
    digest (computed for the journal already) goes along, so that the next
    change of the same file is checked against the bytes the provider wrote."""
    payload: list[dict[str, object]] = []
    for c in changeset.changes:
        change: dict[str, object] = {
            "kind": c.kind.value,
            "path": str(c.path),
            "dest": str(c.dest) if c.dest is not None else None,
            "expected_hash": c.expected_hash,
            "dest_expected_hash": c.dest_expected_hash,
            "new_bytes": c.new_bytes,
            "mode": c.mode,
        }
        if with_old_bytes:
            change["expected_bytes"] = c.old_bytes
            change["dest_expected_bytes"] = c.dest_old_bytes
        elif c.new_bytes is not None:
            change["new_hash"] = c.new_hash
        payload.append(change)
    return payload


def unchanged_since(current: bytes | None, expected_hash: str, shown: str) -> None:
    if content_hash(current) != expected_hash:
        raise ToolError(
            ErrorCode.CONFLICT,
            f"{shown} changed since that change was made",
            "read the file and fix it by hand with edit_file",
        )
