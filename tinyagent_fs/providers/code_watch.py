"""Around each sandboxed command, in the toolkit: the walks of ``sandbox.code_files``
turned into a refusal, a quarantine, and a result that says what happened."""

from __future__ import annotations

import os
from typing import Any

from ..errors import ErrorCode, ToolError
from .sandbox import code_files
from .sandbox.protected_paths import MAX_SCAN_DEPTH, QUARANTINE_SUFFIX


def scan(roots: list[str], before: code_files.CodeFiles | None = None) -> code_files.CodeFiles:
    """One walk of the roots; a walk that cannot finish refuses the call."""
    try:
        found = code_files.scan(roots, before)
    except (code_files.ScanFailed, OSError) as exc:
        when = "after" if before is not None else "before"
        raise ToolError(
            ErrorCode.SANDBOX_FAILURE,
            f"the files that make git or a shell run code could not be checked {when} "
            f"the command: {exc}",
            "make the folder readable (or remove it), then retry",
            details={"cause": "code_file_scan_failed"},
        ) from None
    return found


def refuse_unsearched(found: code_files.CodeFiles) -> None:
    """Before a command: a folder too deep to search refuses it (file tools go on)."""
    if found.too_deep:
        raise _too_deep(found.too_deep, None)


def _too_deep(folders: list[str], result: Any) -> ToolError:
    return ToolError(
        ErrorCode.SANDBOX_FAILURE,
        f"commands are refused: {len(folders)} folder(s) lie deeper than "
        f"{MAX_SCAN_DEPTH} levels, where files that make git or a shell run code could "
        f"not be checked; the first: {folders[0]}",
        "remove or flatten the deep folder (file tools still work), then retry",
        security_violation=True,
        details={"cause": "too_deep", "folders": folders[:10], "result": result},
    )


def settle(roots: list[str], before: code_files.CodeFiles, result: Any) -> bool:
    """Quarantine what the command wrote and note it in ``result``; True if anything changed.

    Raises SANDBOX_FAILURE (the command's result in its details) when an entry
    could be neither moved aside nor removed: it may still be in place.
    """
    after = scan(roots, before)
    changed = code_files.changed(before, after)
    outcomes = code_files.quarantine(code_files.to_quarantine(before, after))
    failed = [entry for entry in outcomes if "error" in entry]
    if failed:
        raise ToolError(
            ErrorCode.SANDBOX_FAILURE,
            "the command wrote files that make git or a shell run code, and these could not "
            "be moved aside or removed: "
            + ", ".join(f"{entry['path']} ({entry['error']})" for entry in failed),
            "remove them by hand before using git or a shell in the project",
            security_violation=True,
            details={"cause": "quarantine_failed", "outcomes": outcomes, "result": result},
        )
    if after.too_deep:
        raise _too_deep(after.too_deep, result)
    if not changed or not isinstance(result, dict):
        return bool(changed)
    result["protected_paths_changed"] = [os.path.join(*key) for key in changed]
    if outcomes:
        result["protected_paths_quarantined"] = outcomes
        result["protected_paths_message"] = _message(outcomes)
    return True


def _message(outcomes: list[dict[str, str]]) -> str:
    moved = sum("moved_to" in entry for entry in outcomes)
    parts = []
    if moved:
        parts.append(
            f"{moved} renamed aside with a '{QUARANTINE_SUFFIX}' suffix and made non-executable"
        )
    if moved < len(outcomes):
        parts.append(f"{len(outcomes) - moved} removed (they could not be renamed)")
    return (
        "the command created or changed files that make git or a shell run code "
        "(hooks, git config, .git pointers, rc files, .tinyagentignore): " + "; ".join(parts)
    )
