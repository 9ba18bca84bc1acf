"""Git and shell files that would run code the next time the person uses git.

Each test plants one through ``FileTools.run_command`` on the real sandbox, however
it is placed, and checks that after the call nothing the command wrote is where git
(or a shell) would use it, that the person's git runs no planted code, and that the
result says truthfully what was done.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider
from tinyagent_fs.result import ToolResult

from ..sandbox_support import git, require_sandbox

pytestmark = require_sandbox()

HOOK = shlex.quote('#!/bin/sh\ntouch "$(git rev-parse --show-toplevel)/pwned"\n')
PLANT = f"printf %s {HOOK} > {{0}}/pre-commit && chmod +x {{0}}/pre-commit"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    made = tmp_path / "project"
    made.mkdir()
    return made.resolve()


@pytest.fixture
async def tools(root: Path) -> AsyncIterator[FileTools]:
    fs = FileTools(
        root,
        provider=LinuxSandboxProvider(root, SandboxPolicy()),
        hooks=[AutoApprovePolicy()],
        audit=False,
    )
    try:
        yield fs
    finally:
        await fs.close()


async def run(tools: FileTools, command: str) -> ToolResult:
    result = await tools.run_command(command)
    assert result.ok, result.text
    assert result.data["exit_code"] == 0, result.data
    return result


def quarantined(result: ToolResult) -> dict[str, dict[str, str]]:
    return {entry["path"]: entry for entry in result.data["protected_paths_quarantined"]}


def commit_runs_no_hook(repo: Path, top: Path) -> None:
    committed = git(repo, "commit", "-q", "--allow-empty", "-m", "person's commit")
    assert committed.returncode == 0, committed.stderr
    assert not (top / "pwned").exists()


async def test_a_symlinked_dot_git_to_a_repository_made_by_the_command(
    tools: FileTools, root: Path
) -> None:
    result = await run(
        tools,
        "git init -q realrepo && "
        + PLANT.format("realrepo/.git/hooks")
        + " && ln -s realrepo/.git .git",
    )
    moved = quarantined(result)
    assert str(root / ".git") in moved and str(root / "realrepo/.git/hooks/pre-commit") in moved
    assert not (root / ".git").is_symlink() and not (root / ".git").exists()
    assert not (root / "realrepo/.git/hooks/pre-commit").exists()
    assert result.data["security_violation"] is True and "renamed aside" in result.text
    commit_runs_no_hook(root / "realrepo", root / "realrepo")


async def test_hooks_replaced_by_a_symlink_to_a_folder_in_the_root(
    tools: FileTools, root: Path
) -> None:
    result = await run(
        tools,
        "git init -q . && rm -rf .git/hooks && mkdir myhooks && "
        + PLANT.format("myhooks")
        + " && ln -s ../myhooks .git/hooks",
    )
    assert str(root / ".git/hooks") in quarantined(result)
    assert not (root / ".git/hooks").is_symlink()
    assert (root / ".git/hooks.quarantined").is_symlink()
    commit_runs_no_hook(root, root)


async def test_hooks_created_as_a_symlink_in_a_repository_that_had_none(
    root: Path, tools: FileTools
) -> None:
    assert git(root, "init", "-q", ".").returncode == 0
    for sample in (root / ".git/hooks").iterdir():
        sample.unlink()
    (root / ".git/hooks").rmdir()
    result = await run(
        tools, "mkdir myhooks && " + PLANT.format("myhooks") + " && ln -s ../myhooks .git/hooks"
    )
    assert list(quarantined(result)) == [str(root / ".git/hooks")]
    assert not (root / ".git/hooks").exists()
    commit_runs_no_hook(root, root)


@pytest.mark.parametrize("lock", ["chmod 0555 .git/hooks", "chmod 0555 .git", "chmod 0 .git/hooks"])
async def test_a_folder_made_read_only_does_not_keep_a_hook_in_place(
    tools: FileTools, root: Path, lock: str
) -> None:
    result = await run(
        tools,
        "git init -q . && git config core.fsmonitor 'touch pwned; false' && "
        + PLANT.format(".git/hooks")
        + f" && {lock}",
    )
    moved = quarantined(result)
    for name in (".git/hooks/pre-commit", ".git/config"):
        assert moved[str(root / name)]["moved_to"] == str(root / name) + ".quarantined"
        assert not (root / name).exists() and (root / (name + ".quarantined")).exists()
    assert "renamed aside" in result.text
    commit_runs_no_hook(root, root)
    git(root, "status")
    assert not (root / "pwned").exists()


async def test_a_config_that_reads_two_ways_is_not_judged_but_quarantined(
    tools: FileTools, root: Path
) -> None:
    """A ``\\r`` ends a line for a naive parser, not for git: ``remote.origin.fetch``
    to one, ``pager.fetch`` (a command git runs) to the other."""
    config = '[core]\\n\\trepositoryformatversion = 0\\n[pager]\\n# \\r[remote "origin"]\\n'
    result = await run(
        tools, f"git init -q . && printf '{config}\\tfetch = touch pwned && cat\\n' > .git/config"
    )
    assert list(quarantined(result)) == [str(root / ".git/config")]
    aside = git(root, "config", "--file", ".git/config.quarantined", "pager.fetch")
    assert aside.stdout == "touch pwned && cat\n"  # what git would have run
    assert git(root, "config", "pager.fetch").stdout == ""


async def test_a_persons_git_config_does_not_leave_the_config_writable(
    root: Path, tools: FileTools
) -> None:
    assert git(root, "init", "-q", ".").returncode == 0
    await run(tools, "true")  # the worker binds .git/config read-only
    assert git(root, "config", "user.name", "person").returncode == 0  # a new file, renamed in
    mine = (root / ".git/config").read_bytes()
    result = await tools.run_command(
        "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> .git/config"
    )
    assert "Read-only file system" in result.data["stderr"], result.data
    assert (root / ".git/config").read_bytes() == mine
    assert not result.data["protected_paths_quarantined"]
    git(root, "status")
    assert not (root / "pwned").exists()


@pytest.mark.parametrize("make", ["mkdir .tinyagentignore", "echo '!*' > .tinyagentignore"])
async def test_a_tinyagentignore_made_by_a_command_is_quarantined(
    tools: FileTools, root: Path, make: str
) -> None:
    (root / "notes.txt").write_text("hello\n")
    result = await run(tools, make)
    assert list(quarantined(result)) == [str(root / ".tinyagentignore")]
    assert not (root / ".tinyagentignore").exists()
    read = await tools.read_file("notes.txt")
    assert read.ok, read.text


DEEP = "python3 -c \"import os; os.makedirs('/'.join(['deep'] + ['d'] * {levels}))\""


async def test_a_hook_beside_a_tree_too_deep_to_search_is_quarantined_and_the_call_fails(
    tools: FileTools, root: Path
) -> None:
    """A command that makes a tree deeper than the scans enter, beside a planted hook:
    the hook is still moved aside, the call fails naming the deep folder, and later
    commands are refused until it is gone while file tools keep working."""
    result = await tools.run_command(
        "git init -q . && " + PLANT.format(".git/hooks") + " && " + DEEP.format(levels=300)
    )
    assert not result.ok and result.error is not None
    assert result.error.code == "SANDBOX_FAILURE" and "deeper than 256 levels" in result.text
    assert not (root / ".git/hooks/pre-commit").exists()
    commit_runs_no_hook(root, root)
    refused = await tools.run_command("true")
    assert not refused.ok and "deeper than 256 levels" in refused.text
    assert (await tools.write_file("notes.txt", "still here\n")).ok
    assert (await tools.read_file("notes.txt")).ok
    subprocess.run(["rm", "-rf", str(root / "deep")], check=True)
    assert (await run(tools, "true")).ok


async def test_a_secret_moved_into_hooks_stays_secret_after_the_quarantine(
    tools: FileTools, root: Path
) -> None:
    """A command moves the folder holding a masked key to where hooks go; the rename
    aside must not give the key a name the denied patterns miss."""
    (root / "certs").mkdir()
    (root / "certs/server.key").write_text("TOPSECRET-KEY\n")
    moved = await tools.run_command("mkdir -p nr/.git && mv certs nr/.git/hooks")
    assert moved.ok, moved.text
    aside = list((root / "nr/.git/hooks").iterdir())
    assert aside and all(".quarantined" in entry.name for entry in aside), aside
    shown = await tools.run_command("cat nr/.git/hooks/* 2>&1; echo done")
    assert "TOPSECRET" not in shown.text, shown.text
    for entry in aside:
        read = await tools.read_file(str(entry.relative_to(root)))
        assert not read.ok and "TOPSECRET" not in read.text
