"""A root that is the person's home folder: the startup files git, a shell, ssh or the
desktop session run (``protected_paths.HOME_FILES``, ``ROOT_FOLDERS``).

Each test plants one through ``FileTools.run_command`` on the real sandbox and checks
that it is not where it would be used after the call (quarantined), that a person's own
is read-only for commands, and, for git, that the person's git runs nothing planted.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.guard.code_running import HOME_FILES, ROOT_FOLDERS
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.policy import DEFAULT_DENIED_PATTERNS, SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider

from ..person_git import person_uses_git, planted_config, write_command
from ..sandbox_support import quarantined as moved
from ..sandbox_support import require_sandbox
from ..sandbox_support import run_ok as run

pytestmark = require_sandbox()

NO_SSH_MASK = SandboxPolicy(
    denied_patterns=tuple(p for p in DEFAULT_DENIED_PATTERNS if p != ".ssh/")
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    made = tmp_path / "home"
    made.mkdir()
    return made.resolve()


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The person's repository, outside the root, where they run git with HOME = the root."""
    made = tmp_path / "repo"
    made.mkdir()
    subprocess.run(["git", "init", "-q", str(made)], check=True)
    return made


async def open_tools(home: Path, policy: SandboxPolicy) -> FileTools:
    return FileTools(
        home,
        provider=LinuxSandboxProvider(home, policy),
        hooks=[AutoApprovePolicy()],
        audit=False,
    )


@pytest.fixture
async def tools(home: Path) -> AsyncIterator[FileTools]:
    fs = await open_tools(home, SandboxPolicy())
    try:
        yield fs
    finally:
        await fs.close()


@pytest.mark.parametrize(
    "plant",
    [
        write_command(".gitconfig", "{config}"),
        write_command(".config/git/config", "{config}"),
        "mkdir -p evil/git && printf %s '{config}' > evil/git/config && ln -s evil .config",
        "mkdir -p .config evil && printf %s '{config}' > evil/config && ln -s ../evil .config/git",
    ],
    ids=[".gitconfig", ".config/git/config", ".config symlink", ".config/git symlink"],
)
async def test_a_git_config_planted_in_a_home_root_does_not_run(
    tools: FileTools, home: Path, repo: Path, marker: Path, plant: str
) -> None:
    result = await run(tools, plant.replace("{config}", planted_config(marker)))
    assert result.data["protected_paths_quarantined"], result.data
    person_uses_git(repo, home)
    assert not marker.exists()


async def test_bash_aliases_planted_in_a_home_root_are_not_sourced(
    tools: FileTools, home: Path, marker: Path
) -> None:
    """The person's ``.bashrc`` sources ``~/.bash_aliases``, as Debian's does."""
    (home / ".bashrc").write_text("[ -f ~/.bash_aliases ] && . ~/.bash_aliases\n")
    result = await run(tools, f"echo 'touch {marker}' > .bash_aliases")
    assert moved(result) == [str(home / ".bash_aliases")]
    subprocess.run(
        ["bash", "-ic", "true"],
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    assert not marker.exists()


NEW_FILES = [path for path in HOME_FILES if path != ".gitconfig"]


@pytest.mark.parametrize("policy", [SandboxPolicy(), NO_SSH_MASK], ids=["default", "no ssh mask"])
async def test_every_home_startup_file_a_command_creates_is_quarantined(
    home: Path, policy: SandboxPolicy
) -> None:
    fs = await open_tools(home, policy)
    try:
        plant = " && ".join(
            [write_command(path, "touch pwned\n") for path in NEW_FILES]
            + [
                write_command(f"{folder}/run.desktop", "Exec=touch pwned\n")
                for folder in ROOT_FOLDERS
            ]
        )
        result = await run(fs, plant)
    finally:
        await fs.close()
    planted = [*NEW_FILES, *(f"{folder}/run.desktop" for folder in ROOT_FOLDERS)]
    assert sorted(moved(result)) == sorted(str(home / path) for path in planted)
    for path in planted:
        assert not (home / path).exists(), path
        assert (home / (path + ".quarantined")).exists(), path


@pytest.mark.parametrize("policy", [SandboxPolicy(), NO_SSH_MASK], ids=["default", "no ssh mask"])
async def test_a_persons_home_startup_files_are_read_only_for_commands(
    home: Path, policy: SandboxPolicy
) -> None:
    """The person's own files cannot be written, replaced or moved; under the default
    policy ``.ssh/`` is masked as well (commands do not see it at all)."""
    for path in HOME_FILES:
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_text("mine\n")
    for folder in ROOT_FOLDERS:
        (home / folder).mkdir(parents=True, exist_ok=True)
    fs = await open_tools(home, policy)
    try:
        result = await fs.run_command(
            "; ".join(
                [f"echo 'touch pwned' >> {path}" for path in HOME_FILES]
                + [f"mv {path} {path}.old" for path in HOME_FILES]
                + [f"echo x > {folder}/run.desktop" for folder in ROOT_FOLDERS]
            )
            + "; true"
        )
    finally:
        await fs.close()
    assert result.ok, result.text
    assert not result.data["protected_paths_quarantined"], result.data
    for path in HOME_FILES:
        assert (home / path).read_text() == "mine\n", path
    for folder in ROOT_FOLDERS:
        assert not list((home / folder).iterdir()), folder
