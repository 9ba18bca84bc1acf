"""Hide secrets from commands: cover denied files and directories in the worker's view.

The file tools refuse the policy's denied patterns (``.env``, keys, ``.ssh/``)
and the root's ``.tinyagentignore`` denials in the guard; a shell command
never meets the guard, so ``cat .env`` or ``grep -r SECRET .`` would print
them. The toolkit plans the masks (:func:`plan_masks`: one walk of every root
and readable directory, by descriptor, asking the pattern engine that listings and
searches ask, ``ops.ignore``) before
a worker starts and again before every command; a plan that differs from the
worker's replaces the worker. The worker mounts over every planned path
(:func:`mask_secrets`): a file gets a read-only bind of an empty mode-000 file,
a directory an empty read-only mode-000 directory.

Fail closed: a walk that cannot read a directory, a plan above the policy's
mount limit, or a mask that cannot be mounted refuses commands with a coded
error naming the path; file tools go on, as the guard refuses denied paths.
Not covered: a secret reached by a hard link or a symlink under a name that is
not denied, and secret content in files whose names are not denied.
"""

from __future__ import annotations

import errno
import os
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ...errors import ToolError
from ...guard.code_running import is_git_dir
from ...ops.ignore import IgnoreRules, load_ignore_rules
from . import kernel_calls as kc
from .protected_paths import GIT_DIR_OWN, MAX_SCAN_DEPTH

STAGING = "/.tinyagent-masks"
MASK_ATTRIBUTES = kc.MOUNT_ATTR_RDONLY | kc.MOUNT_ATTR_NOSUID | kc.MOUNT_ATTR_NODEV
MOUNTS_PER_NESTED_GIT = 7
"""A nested git directory is pinned and up to six entries bound read-only (``protected_paths``)."""
GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
"""A folder listed, then removed or swapped for a file or a symlink before it was
opened: nothing is left under that name to mask."""
WALK_ATTEMPTS = 3
"""Walks tried before a tree that keeps changing under the walk refuses commands."""


@dataclass
class MaskPlan:
    """What a worker must mount: denied entries, nested ``.git`` entries, or why it cannot."""

    masks: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)
    nested_git: dict[str, list[str]] = field(default_factory=dict)
    pinned: dict[str, list[str]] = field(default_factory=dict)
    """Folders above a secret whose denial depends on their names (``/config/prod.key``):
    bound onto themselves, so a command cannot rename them (EBUSY) and lift the denial."""
    identities: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    """Inode and ctime of each masked entry and pinned folder (an inode number can be
    reused at once): a mount stays on what it covered, so one a person replaced (an
    editor's save, ``git checkout``, ``rm -rf`` and ``mkdir``) is a new plan, and the
    worker is replaced."""
    refusal: dict[str, Any] | None = None
    """Why commands are refused (``message``, ``hint``, ``details``), or None."""
    entries_walked: int = 0
    seconds: float = 0.0

    def key(self) -> tuple[object, ...]:
        """Equal for two plans that mount the same paths (or refuse the same way)."""
        masks = tuple(sorted((root, tuple(sorted(found))) for root, found in self.masks.items()))
        nested = tuple(
            sorted((root, tuple(sorted(found))) for root, found in self.nested_git.items())
        )
        pinned = tuple(sorted((root, tuple(sorted(found))) for root, found in self.pinned.items()))
        identities = tuple(
            sorted((root, tuple(sorted(found))) for root, found in self.identities.items())
        )
        refused = None if self.refusal is None else self.refusal["message"]
        return masks, nested, pinned, identities, refused

    def secrets_key(self) -> tuple[object, ...]:
        """Equal for two plans that hide the same secrets, the very same files: what a
        running session's sandbox must still match (a new repository or a pinned
        folder's new entry changes ``key`` but hides nothing new)."""
        masks = tuple(sorted((root, tuple(sorted(found))) for root, found in self.masks.items()))
        hidden = {(root, path) for root, found in self.masks.items() for path, _ in found}
        identities = tuple(
            sorted(
                (root, tuple(sorted(entry for entry in found if (root, entry[0]) in hidden)))
                for root, found in self.identities.items()
            )
        )
        refused = None if self.refusal is None else self.refusal["message"]
        return masks, identities, refused

    def mounts(self) -> int:
        masks = sum(len(found) for found in self.masks.values())
        nested = sum(len(found) for found in self.nested_git.values())
        pinned = sum(len(found) for found in self.pinned.values())
        return masks + MOUNTS_PER_NESTED_GIT * nested + pinned


@dataclass
class MaskReport:
    """Which paths were covered, which one could not be, and what the walk cost."""

    masked: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    pinned: list[str] = field(default_factory=list)
    entries_walked: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "masked": self.masked,
            "failed": self.failed,
            "pinned": self.pinned,
            "entries_walked": self.entries_walked,
            "seconds": round(self.seconds, 4),
        }


class MaskFailed(Exception):
    """A planned mask could not be mounted: commands must not run in this worker."""


def plan_masks(
    roots: list[str], denied_patterns: tuple[str, ...], protected: set[str], max_mounts: int
) -> MaskPlan:
    """Walk every root (symlinks not followed, denied folders not entered).

    ``protected``: the writable roots, whose git directories (a nested ``.git``,
    or a folder git would take for one, the root itself included) are protected
    too (the same walk finds them; a ``.git`` and the git directories of a git
    directory, its modules and worktrees, are protected with it). The plan refuses when a
    directory cannot be walked or when it needs more than ``max_mounts`` mounts.

    A walk is a snapshot only if no folder changed while it ran: a folder renamed, or
    a secret moved from a folder not yet listed into one already listed, would be
    missed. So each folder's inode and change time are taken as it is listed and
    checked again when the walk is done (a program can set a modification time
    back, not a change time); a change means walking again, and a tree that keeps
    changing (``WALK_ATTEMPTS`` walks) refuses commands.
    """
    started = time.perf_counter()
    for _ in range(WALK_ATTEMPTS):
        plan = MaskPlan()
        try:
            for root in roots:
                rules = load_ignore_rules(root, denied_patterns)
                _walk(root, rules, plan, plan.masks.setdefault(root, []), root in protected)
            break
        except _Changing as exc:  # not a snapshot: walk again
            plan.refusal = exc.refusal
        except (_Unreadable, _TooDeep) as exc:
            plan.refusal = exc.refusal
            break
        except ToolError as exc:
            plan.refusal = {
                "message": f"commands are refused: {exc.message}",
                "hint": exc.hint,
                "details": {"cause": "ignore_file", **exc.details},
            }
            break
    if plan.refusal is None and plan.mounts() > max_mounts:
        plan.refusal = _too_many(plan, max_mounts)
    plan.seconds = time.perf_counter() - started
    return plan


class _Unreadable(Exception):
    def __init__(self, path: str, exc: OSError) -> None:
        super().__init__(path)
        self.refusal = {
            "message": (
                f"commands are refused: the folder {path} cannot be searched for secrets "
                f"({exc.strerror or exc}), so a secret in it could not be masked"
            ),
            "hint": "Make the folder readable, shorten its path or remove it, then retry; "
            "file tools still work.",
            "details": {"cause": "scan_failed", "path": path, "errno": exc.errno},
        }


class _Changing(Exception):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.refusal = {
            "message": (
                f"commands are refused: the folder {path} kept changing while it was "
                "searched for secrets, so what to mask could not be known"
            ),
            "hint": "Stop whatever keeps renaming or filling folders in the project, then "
            "retry; file tools still work.",
            "details": {"cause": "tree_changing", "path": path},
        }


class _TooDeep(Exception):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.refusal = {
            "message": (
                f"commands are refused: the folder {path} lies deeper than {MAX_SCAN_DEPTH} "
                "levels and is not searched for secrets, so a secret in it could not be masked"
            ),
            "hint": "Remove or flatten the deep folder, then retry; file tools still work.",
            "details": {"cause": "too_deep", "path": path},
        }


def _walk(
    root: str, rules: IgnoreRules, plan: MaskPlan, masks: list[tuple[str, bool]], nested: bool
) -> None:
    nested_git = plan.nested_git.setdefault(root, []) if nested else []
    pinned: set[str] = set()
    identities = plan.identities.setdefault(root, [])
    follow = rules.denials_follow_folders
    root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    listed: list[tuple[str, tuple[int, int]]] = []
    try:
        pending = [("", False)]
        while pending:
            relative_dir, covered = pending.pop()
            entries, stamp = _entries(root_fd, relative_dir, root)
            listed.append((relative_dir, stamp))
            plan.entries_walked += len(entries)
            names = [name for name, _ in entries]
            suspects = rules.denial_candidates(names)
            git_dir = not covered and is_git_dir(set(names))
            if nested and git_dir:
                nested_git.append(relative_dir)
            for name, is_dir in entries:
                relative = f"{relative_dir}/{name}" if relative_dir else name
                if (suspects is None or name in suspects) and rules.is_denied(relative, is_dir):
                    masks.append((relative, is_dir))
                    if follow:
                        pinned.update(_folders_above(relative))
                    continue
                if nested and name == ".git" and relative_dir:
                    nested_git.append(relative)
                if is_dir and relative.count("/") >= MAX_SCAN_DEPTH:
                    raise _TooDeep(os.path.join(root, relative))
                if is_dir:
                    inside = name == ".git" or (git_dir and name in GIT_DIR_OWN)
                    pending.append((relative, covered or inside))
        for relative_dir, stamp in listed:
            if _identity(root_fd, relative_dir or ".") != stamp:
                raise _Changing(os.path.join(root, relative_dir))
        if pinned:
            plan.pinned[root] = sorted(pinned, key=lambda folder: (folder.count("/"), folder))
        for relative in [*(found for found, _ in masks), *pinned]:
            identities.append((relative, *_identity(root_fd, relative)))
    finally:
        os.close(root_fd)


def _identity(root_fd: int, relative: str) -> tuple[int, int]:
    """Inode and ctime of what is at ``relative`` now; (0, 0) when it is gone."""
    try:
        fd = kc.open_beneath(root_fd, relative, os.O_PATH)
    except OSError:
        return 0, 0
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    return info.st_ino, info.st_ctime_ns


def _folders_above(relative: str) -> list[str]:
    parts = relative.split("/")[:-1]
    return ["/".join(parts[: depth + 1]) for depth in range(len(parts))]


def _entries(
    root_fd: int, relative_dir: str, root: str
) -> tuple[list[tuple[str, bool]], tuple[int, int]]:
    """(name, is a directory) of each entry, read by descriptor beneath the root, and
    the folder's inode and change time taken before it was read."""
    try:
        fd = kc.open_beneath(root_fd, relative_dir or ".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            info = os.fstat(fd)
            with os.scandir(fd) as found:
                entries = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in found]
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno in GONE:  # listed a moment ago: it was renamed or replaced
            raise _Changing(os.path.join(root, relative_dir)) from None
        raise _Unreadable(os.path.join(root, relative_dir), exc) from None
    return entries, (info.st_ino, info.st_ctime_ns)


def _too_many(plan: MaskPlan, max_mounts: int) -> dict[str, Any]:
    """The refusal for a plan above the limit, naming the folders that cost the most mounts."""
    cost: Counter[str] = Counter()
    for root, found in plan.masks.items():
        for relative, _ in found:
            cost[os.path.join(root, os.path.dirname(relative))] += 1
    for root, nested in plan.nested_git.items():
        for relative in nested:
            parent = os.path.dirname(os.path.dirname(relative))
            cost[os.path.join(root, parent)] += MOUNTS_PER_NESTED_GIT
    largest = [{"folder": folder.rstrip("/"), "mounts": n} for folder, n in cost.most_common(3)]
    named = ", ".join(f"{item['folder']} ({item['mounts']})" for item in largest)
    return {
        "message": (
            f"commands are refused: masking the secrets and protecting the nested .git "
            f"folders would take {plan.mounts()} mounts, more than the limit of {max_mounts}; "
            f"the folders needing the most: {named}"
        ),
        "hint": "Remove or move out of the root the secret files (.env*, keys) or nested "
        "repositories in those folders; file tools still work.",
        "details": {
            "cause": "too_many_masks",
            "mounts": plan.mounts(),
            "limit": max_mounts,
            "largest": largest,
        },
    }


def pin_folders(pinned: dict[str, list[str]], report: MaskReport) -> None:
    """Bind each folder onto itself, parents first, with what is mounted inside it (a
    mount point cannot be renamed); before the masks, which then sit on the pins."""
    for root, folders in pinned.items():
        root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for relative in folders:
                try:
                    target = kc.open_beneath(root_fd, relative, os.O_PATH | os.O_DIRECTORY)
                except OSError as exc:
                    if exc.errno in GONE:
                        continue  # renamed since it was planned: the next plan finds it
                    raise MaskFailed(_pin_failure(root, relative, exc)) from None
                try:
                    kc.bind_by_fd(target, target, 0, recursive=True)
                except OSError as exc:
                    raise MaskFailed(_pin_failure(root, relative, exc)) from None
                finally:
                    os.close(target)
                report.pinned.append(os.path.join(root, relative))
        finally:
            os.close(root_fd)


def _pin_failure(root: str, relative: str, exc: OSError) -> str:
    return (
        f"the folder {os.path.join(root, relative)}, above a secret denied by its path, "
        f"could not be made immovable ({exc.strerror or exc})"
    )


def mask_secrets(
    masks: dict[str, list[tuple[str, bool]]], report: MaskReport | None = None
) -> MaskReport:
    """Cover every planned path; runs after pivot_root, before the root is sealed.

    Stops at the first mask that cannot be mounted (:class:`MaskFailed`):
    the mount table is full or the tree changed, and commands must not run.
    """
    started = time.perf_counter()
    report = report if report is not None else MaskReport()
    os.mkdir(STAGING, 0o700)
    empty_file = os.path.join(STAGING, "file")
    empty_dir = os.path.join(STAGING, "dir")
    os.close(os.open(empty_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0))
    os.mkdir(empty_dir, 0)
    file_fd = os.open(empty_file, os.O_PATH | os.O_CLOEXEC)
    dir_fd = os.open(empty_dir, os.O_PATH | os.O_CLOEXEC)
    try:
        for root, found in masks.items():
            root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                for relative, is_dir in found:
                    _cover(root_fd, relative, dir_fd if is_dir else file_fd, root, report)
            finally:
                os.close(root_fd)
    finally:
        os.close(file_fd)
        os.close(dir_fd)
        shutil.rmtree(STAGING, ignore_errors=True)
        report.seconds = time.perf_counter() - started
    return report


def _cover(root_fd: int, relative: str, mask_fd: int, root: str, report: MaskReport) -> None:
    shown = os.path.join(root, relative)
    try:
        target = kc.open_beneath(root_fd, relative, os.O_PATH)
        try:
            kc.bind_by_fd(mask_fd, target, MASK_ATTRIBUTES)
        finally:
            os.close(target)
    except OSError as exc:
        if exc.errno in GONE:
            return  # removed or swapped since it was planned: the next plan finds it
        report.failed.append(shown)
        raise MaskFailed(
            f"the secret {shown} could not be masked ({exc.strerror or exc}) after "
            f"{len(report.masked)} masks"
        ) from None
    report.masked.append(shown)
