"""Folders that git takes for a git directory by what they hold, not by their name.

git's discovery asks, at each level up from where it runs, for ``dir/.git`` and then
whether ``dir`` itself holds ``HEAD`` with ``objects/`` and ``refs/`` (looked up
through ``commondir``): a bare repository, whose ``config`` git reads. Each test makes
one through ``FileTools.run_command`` on the real sandbox, then runs the person's git
(outside the sandbox, on a terminal) and checks that the planted config ran nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider

from ..person_git import person_uses_git, planted_config, write_command
from ..sandbox_support import git, require_sandbox
from ..sandbox_support import quarantined as moved
from ..sandbox_support import run_ok as run

pytestmark = require_sandbox()

BARE = "mkdir -p {0}/objects {0}/refs {0}/src && echo 'ref: refs/heads/main' > {0}/HEAD"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    made = tmp_path / "home"
    made.mkdir()
    return made


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "pwned"


def toolkit(root: Path) -> FileTools:
    return FileTools(
        root,
        provider=LinuxSandboxProvider(root, SandboxPolicy()),
        hooks=[AutoApprovePolicy()],
        audit=False,
    )


@pytest.fixture
async def root(tmp_path: Path) -> Path:
    made = tmp_path / "project"
    made.mkdir()
    return made.resolve()


@pytest.fixture
async def tools(root: Path) -> AsyncIterator[FileTools]:
    fs = toolkit(root)
    try:
        yield fs
    finally:
        await fs.close()


@pytest.mark.parametrize("commands", ["one", "two"])
async def test_a_folder_made_a_bare_repository_does_not_run_its_config(
    tools: FileTools, root: Path, home: Path, marker: Path, commands: str
) -> None:
    """``evil/`` gets HEAD, objects, refs and a config, in one command or with the
    config written first, while the folder was not yet a git directory."""
    config = write_command("evil/config", planted_config(marker, root / "evil"))
    if commands == "one":
        result = await run(tools, BARE.format("evil") + " && " + config)
    else:
        await run(tools, config)
        result = await run(tools, BARE.format("evil"))
    assert moved(result) == [str(root / "evil/config")]
    assert not (root / "evil/config").exists()
    person_uses_git(root / "evil/src", home)
    assert not marker.exists()


async def test_a_root_inside_the_persons_repository_made_a_git_directory(
    tmp_path: Path, home: Path, marker: Path
) -> None:
    """The root is ``repo/sub``: git run anywhere under it would take ``sub`` for the
    repository before reaching ``repo/.git``."""
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    assert git(repo, "init", "-q", ".").returncode == 0
    root = (repo / "sub").resolve()
    fs = toolkit(root)
    try:
        result = await run(
            fs, BARE.format(".") + " && " + write_command("config", planted_config(marker, root))
        )
    finally:
        await fs.close()
    assert moved(result) == [str(root / "config")]
    person_uses_git(root / "src", home)
    assert not marker.exists()


async def test_a_head_whose_commondir_points_at_a_folder_with_the_config(
    tools: FileTools, root: Path, home: Path, marker: Path
) -> None:
    """``wt/`` holds HEAD and ``commondir`` naming ``common/``, which holds objects, refs
    and the config git reads for ``wt`` (no HEAD of its own)."""
    result = await run(
        tools,
        "mkdir -p common/objects common/refs wt/src && echo 'ref: refs/heads/main' > wt/HEAD"
        " && echo ../common > wt/commondir && "
        + write_command("common/config", planted_config(marker)),
    )
    assert sorted(moved(result)) == [str(root / "common/config"), str(root / "wt/commondir")]
    person_uses_git(root / "wt/src", home)
    assert not marker.exists()


@pytest.mark.parametrize("when", ["before the toolkit", "between two commands"])
async def test_a_persons_bare_repository_is_read_only_for_commands(
    tools: FileTools, root: Path, home: Path, marker: Path, when: str
) -> None:
    """``backup.git`` is the person's: its config and hooks are bound read-only and the
    folder pinned, as a ``.git`` is, whether it was there when the worker started or
    made by the person since (the worker is replaced first)."""
    if when == "between two commands":
        await run(tools, "true")
    assert git(root, "init", "-q", "--bare", "backup.git").returncode == 0
    mine = (root / "backup.git/config").read_bytes()
    result = await tools.run_command(
        f"printf '\\tpager = touch {marker}; cat\\n' >> backup.git/config; "
        "echo 'touch pwned' > backup.git/hooks/post-checkout; true"
    )
    assert result.ok, result.text
    assert result.data["stderr"].count("Read-only file system") == 2, result.data
    assert (root / "backup.git/config").read_bytes() == mine
    assert not (root / "backup.git/hooks/post-checkout").exists()
    person_uses_git(root / "backup.git", home)
    assert not marker.exists()
    result = await tools.run_command(
        "mv backup.git/config backup.git/config.old; mv backup.git elsewhere; true"
    )
    assert result.data["stderr"].count("Device or resource busy") == 2, result.data
    assert (root / "backup.git/config").read_bytes() == mine


async def test_a_submodule_git_dir_nested_by_path_is_read_only_and_watched(
    tmp_path: Path, home: Path, marker: Path
) -> None:
    upstream, root = tmp_path / "upstream", (tmp_path / "super").resolve()
    for folder in (upstream, root):
        folder.mkdir()
        git(folder, "init", "-q")
        (folder / "f").write_text("f\n")
        git(folder, "add", "f")
        git(folder, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qm", "one")
    git(
        root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "lib/foo"
    )
    module = ".git/modules/lib/foo"
    assert (root / module / "config").exists()
    async with toolkit(root) as fs:
        blocked = await fs.run_command(
            f"printf '[core]\\n\\tfsmonitor = touch {marker}\\n' >> {module}/config;"
            f" echo '#!/bin/sh' > {module}/hooks/post-checkout; ls -d {module}/hooks/*"
        )
        assert "Read-only file system" in blocked.data["stderr"], blocked.data
        made = await fs.run_command(
            f"mkdir -p .git/modules/x/y && git init -q --bare .git/modules/x/y && "
            f"printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > .git/modules/x/y/config"
        )
    assert "Read-only file system" in made.data["stderr"], made.data
    person_uses_git(root, home)
    person_uses_git(root / "lib" / "foo", home)
    assert not marker.exists()


async def test_a_git_dir_made_inside_a_dot_git_folder_has_its_config_quarantined(
    root: Path, tools: FileTools, home: Path, marker: Path
) -> None:
    result = await run(
        tools,
        "mkdir -p cache/.git && git init -q --bare cache/.git/x && "
        + write_command("cache/.git/x/config", planted_config(marker, root)),
    )
    assert str(root / "cache/.git/x/config") in moved(result)
    pointer = await tools.write_file(".git", "gitdir: cache/.git/x\n")
    assert pointer.error is not None and pointer.error.code == "DENIED_PATTERN", pointer.text
    await run(tools, "printf 'gitdir: cache/.git/x\\n' > .git")  # quarantined as a new .git
    person_uses_git(root, home)
    assert not marker.exists()


@pytest.mark.parametrize("path", [".git", "sub/.git"])
async def test_file_tools_never_write_a_git_pointer_file(
    root: Path, tools: FileTools, path: str
) -> None:
    (root / "sub").mkdir()
    for result in (
        await tools.write_file(path, "gitdir: ../elsewhere\n"),
        await tools.call(
            "apply_patch",
            {"patch": f"*** Begin Patch\n*** Add File: {path}\n+gitdir: x\n*** End Patch"},
        ),
    ):
        assert result.error is not None and result.error.code == "DENIED_PATTERN", result.text
    (root / "pointer.txt").write_text("gitdir: ../elsewhere\n")
    copied = await tools.copy_path("pointer.txt", path)
    assert copied.error is not None and copied.error.code == "DENIED_PATTERN", copied.text
    assert not (root / path).exists()


async def test_a_folder_symlink_into_a_git_directorys_objects_is_quarantined(
    root: Path, tools: FileTools, home: Path, marker: Path
) -> None:
    git(root, "init", "-q")
    hidden = ".git/objects/zz/.git"
    result = await run(
        tools,
        f"mkdir -p {hidden}/objects {hidden}/refs/heads && echo 'ref: refs/heads/main' > "
        f"{hidden}/HEAD && "
        + write_command(f"{hidden}/config", planted_config(marker))
        + " && ln -s .git/objects/zz docs",
    )
    assert str(root / "docs") in moved(result), result.data
    assert not (root / "docs").exists()
    person_uses_git(root, home)
    assert not marker.exists()
