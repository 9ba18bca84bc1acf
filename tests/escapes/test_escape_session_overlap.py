"""A hook planted by one session and hidden while its after-walk runs, by another session
that started after the plant: the later session's walk must not take the hook as given;
nor may the next walk, when a session's after-walk failed.

Each session's after-walk compares the tree with the walk made when it started. A
session started while another ran begins from a tree the other may already have
changed, so when the earlier one is settled, the later one takes over its older
walk: whatever either planted is judged against a tree no session had touched.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.providers import code_watch
from tinyagent_fs.providers.linux import LinuxSandboxProvider

from ..sandbox_support import require_sandbox

pytestmark = require_sandbox()


def nested_git_dir_without_hooks(folder: Path) -> None:
    (folder / "objects").mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "HEAD").write_text("ref: refs/heads/main\n")


def project_with_a_hookless_nested_git_dir(tmp_path: Path) -> Path:
    """A repository holding ``a/g``, a git dir with no hooks folder, and ``hk``, the
    folder a planted ``a/g/hooks`` link will point to."""
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    nested_git_dir_without_hooks(root / "a" / "g")
    (root / "hk").mkdir()
    return root


def hide_during_the_next_after_walk(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """``folder`` renamed away while the next after-walk runs, and back: what a live
    session's rename loop achieves when it wins the race (1 in 25 tries by hand)."""
    real_scan = code_watch.scan
    armed = [True]

    def scan(roots: list[str], before: Any = None) -> Any:
        if before is None or not armed[0]:
            return real_scan(roots, before)
        armed[0] = False
        away = folder.parent.parent / "away"  # beside the project: out of every walk
        folder.rename(away)
        try:
            return real_scan(roots, before)
        finally:
            away.rename(folder)

    monkeypatch.setattr(code_watch, "scan", scan)


async def test_a_hook_hidden_during_the_first_sessions_walk_is_still_quarantined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project_with_a_hookless_nested_git_dir(tmp_path)
    (root / "hk" / "pre-commit").write_text("#!/bin/sh\necho pwned\n")
    (root / "hk" / "pre-commit").chmod(0o755)
    provider = LinuxSandboxProvider(root, SandboxPolicy())
    async with FileTools(root, provider=provider, hooks=[AutoApprovePolicy()]) as fs:
        first = await fs.exec_command("bash --norc -i", yield_time_ms=300)
        first_id = first.data["session_id"]
        planted = await fs.write_stdin(first_id, "ln -s ../../hk a/g/hooks\n", yield_time_ms=300)
        assert planted.ok, planted.text
        assert (root / "a" / "g" / "hooks").is_symlink()
        second = await fs.exec_command("bash --norc -i", yield_time_ms=300)
        second_id = second.data["session_id"]
        hide_during_the_next_after_walk(monkeypatch, root / "a")
        closed = await fs.close_session(first_id)
        assert "hooks" not in str(closed.data), "the first after-walk was to miss the hook"
        await fs.write_stdin(second_id, "exit\n", yield_time_ms=1000)
        await fs.close_session(second_id)
        # Any later call finishes what is pending.
        await fs.run_command("true")
    hooks = root / "a" / "g" / "hooks"
    assert not hooks.is_symlink(), "the planted hooks folder survived every after-walk"
    assert [p.name for p in (root / "a" / "g").iterdir() if p.name.startswith("hooks")] == [
        "hooks.quarantined"
    ]


async def test_a_session_whose_after_walk_failed_is_walked_again_before_the_next_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project_with_a_hookless_nested_git_dir(tmp_path)
    provider = LinuxSandboxProvider(root, SandboxPolicy())
    async with FileTools(root, provider=provider, hooks=[AutoApprovePolicy()]) as fs:
        session = await fs.exec_command("ln -s ../../hk a/g/hooks; sleep 60", yield_time_ms=500)
        assert (root / "a" / "g" / "hooks").is_symlink(), session.text
        real_scan = code_watch.scan

        def failing_scan(roots: list[str], before: Any = None) -> Any:
            if before is not None:
                raise ToolError(ErrorCode.SANDBOX_FAILURE, "cannot walk")
            return real_scan(roots, before)

        monkeypatch.setattr(code_watch, "scan", failing_scan)
        closed = await fs.close_session(session.data["session_id"])
        assert "cannot walk" in closed.text, closed.text
        assert (root / "a" / "g" / "hooks").is_symlink()
        monkeypatch.setattr(code_watch, "scan", real_scan)
        ran = await fs.run_command("true")
        assert ran.ok, ran.text
    assert not (root / "a" / "g" / "hooks").is_symlink(), "taken for the person's own"
    assert (root / "a" / "g" / "hooks.quarantined").is_symlink()
