"""Secret masks never lapse: each attack tries to make a command read a masked secret.

The tree is made unmaskable (more secrets than the mount table holds, more nested
repositories than the mount limit, a folder past PATH_MAX or unreadable), the
secret sits where no mask used to reach (a readable directory), or appears after
the worker started (a new ``.env``, a ``.tinyagentignore`` line). Each test passes
only if the secret stays unreadable by commands or the command is refused with a
coded error, and file tools keep working meanwhile.
"""

from __future__ import annotations

import shlex
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider
from tinyagent_fs.result import ToolResult

from ..sandbox_support import SECRET, require_sandbox

pytestmark = require_sandbox()

SECRET_TEXT = SECRET.decode().strip()
MOUNT_MAX = int(Path("/proc/sys/fs/mount-max").read_text())


async def open_tools(root: Path, policy: SandboxPolicy) -> AsyncIterator[FileTools]:
    fs = FileTools(
        root,
        policy,
        provider=LinuxSandboxProvider(root, policy),
        hooks=[AutoApprovePolicy()],
        audit=False,
        journal=False,
    )
    try:
        yield fs
    finally:
        await fs.close()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "config").mkdir(parents=True)
    (root / "config" / ".env").write_text(f"SECRET={SECRET_TEXT}\n")
    (root / "notes.txt").write_text("plain\n")
    return root.resolve()


def assert_not_served(result: ToolResult) -> None:
    shown = result.text + str(result.data)
    assert SECRET_TEXT not in shown, shown


def assert_refused(result: ToolResult, *named: str) -> None:
    assert not result.ok, result.text
    assert result.error is not None and result.error.code == "SANDBOX_FAILURE", result.text
    assert result.error.message.startswith("commands are refused"), result.text
    for text in named:
        assert text in result.error.message, result.text
    assert_not_served(result)


async def assert_file_tools_work(fs: FileTools) -> None:
    """File tools need none of the per-secret mounts: the guard refuses secrets itself."""
    read = await fs.read_file("notes.txt")
    assert read.ok and "plain" in read.text, read.text
    written = await fs.write_file("made.txt", "made\n")
    assert written.ok, written.text
    secret = await fs.read_file("config/.env")
    assert not secret.ok and secret.error is not None
    assert secret.error.code == "DENIED_PATTERN"


async def test_more_secrets_than_the_mount_table_holds_refuse_commands(root: Path) -> None:
    """The root's own ``.env.N`` files are masked before ``config/``: the table is full
    by the time ``config/.env`` comes, in the next worker."""
    policy = SandboxPolicy(max_mask_mounts=10 * MOUNT_MAX)
    async for fs in open_tools(root, policy):
        made = await fs.run_command(
            f"python3 -c \"[open(f'.env.{{n}}', 'w').close() for n in range({MOUNT_MAX + 200})]\"",
            timeout_s=60,
        )
        assert made.ok and made.data["exit_code"] == 0, made.text
    async for fs in open_tools(root, policy):
        result = await fs.run_command("cat config/.env; grep -r SECRET config", timeout_s=60)
        assert_refused(result, "could not be masked")
        again = await fs.run_command("cat config/.env", timeout_s=60)
        assert_refused(again, "could not be masked")
        await assert_file_tools_work(fs)


async def test_more_secrets_than_the_mount_limit_refuse_commands_naming_the_folder(
    root: Path,
) -> None:
    async for fs in open_tools(root, SandboxPolicy()):
        made = await fs.run_command(
            "python3 -c \"[open(f'config/.env.{n}', 'w').close() for n in range(5000)]\""
        )
        assert made.ok, made.text
        started = time.monotonic()
        result = await fs.run_command("cat config/.env")
        assert time.monotonic() - started < 60  # refused, not stalled
        assert_refused(result, str(root / "config"), "limit of 4096")
        await assert_file_tools_work(fs)
        for extra in (root / "config").glob(".env.*"):
            extra.unlink()
        result = await fs.run_command("cat config/.env; echo done")
        assert result.ok and result.data["stdout"] == "done\n", result.text


NESTED_GIT = (
    "import os\n"
    "for n in range({count}):\n"
    "    git = f'vendor/r{{n}}/.git'\n"
    "    for d in ('hooks', 'info', 'worktrees'): os.makedirs(f'{{git}}/{{d}}')\n"
    "    for f in ('config', 'config.worktree', 'commondir'): open(f'{{git}}/{{f}}', 'w').close()\n"
)


async def test_nested_repositories_past_the_mount_table_leave_file_tools_working(
    root: Path,
) -> None:
    """Enough nested ``.git`` folders (7 mounts each) to fill the mount table: the next
    worker still serves file tools, and refuses commands at once, naming the folder."""
    count = MOUNT_MAX // 7 + 100
    async for fs in open_tools(root, SandboxPolicy()):
        made = await fs.run_command(
            f"python3 -c {shlex.quote(NESTED_GIT.format(count=count))}", timeout_s=60
        )
        assert made.ok and made.data["exit_code"] == 0, made.text
    async for fs in open_tools(root, SandboxPolicy()):
        started = time.monotonic()
        await assert_file_tools_work(fs)
        result = await fs.run_command("cat config/.env")
        assert time.monotonic() - started < 60  # refused, not stalled
        assert_refused(result, str(root / "vendor"), "nested .git")


@pytest.mark.parametrize("folder_chars", [4080, 4100])
async def test_a_secret_moved_past_path_max_stays_masked(root: Path, folder_chars: int) -> None:
    """The folder holding ``.env`` is renamed so its path nears or passes PATH_MAX;
    the next worker must still mask it."""
    depth, left = divmod(folder_chars - len(str(root)) - 1, 201)
    parts = ["d" * 200] * depth + (["e" * (left - 1)] if left > 1 else [])
    deep = "/".join(parts)
    async for fs in open_tools(root, SandboxPolicy()):
        moved = await fs.run_command(f"mkdir -p {deep} && mv config {deep}/config && echo moved")
        assert moved.ok and moved.data["stdout"] == "moved\n", moved.text
        assert len(f"{root}/{deep}/config") >= folder_chars
    steps = " && ".join(f"cd {part}" for part in parts)
    async for fs in open_tools(root, SandboxPolicy()):
        result = await fs.run_command(f"{steps} && cat config/.env; grep -r SECRET config; echo x")
        assert_not_served(result)
        assert result.ok and result.data["stdout"] == "x\n", result.text


async def test_a_secret_in_a_folder_made_unsearchable_stays_masked(root: Path) -> None:
    """``chmod 000`` on the folder, then a new worker: whoever cannot search it (the
    toolkit's walk, or the worker's mask) refuses; nothing reads the secret."""
    async for fs in open_tools(root, SandboxPolicy()):
        locked = await fs.run_command("chmod 000 config && echo locked")
        assert locked.ok and locked.data["stdout"] == "locked\n", locked.text
    try:
        async for fs in open_tools(root, SandboxPolicy()):
            result = await fs.run_command("chmod 755 config; cat config/.env; echo x")
            assert_not_served(result)
            if not result.ok:
                assert_refused(result, str(root / "config"))
            await assert_file_tools_work(fs)
    finally:
        (root / "config").chmod(0o755)


async def test_secrets_in_extra_read_dirs_are_masked(root: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / ".ssh").mkdir(parents=True)
    (shared / ".env").write_text(f"SECRET={SECRET_TEXT}\n")
    (shared / ".ssh" / "id_rsa").write_text(f"{SECRET_TEXT}\n")
    (shared / "readme.txt").write_text("shared\n")
    policy = SandboxPolicy(extra_read_dirs=(shared,))
    async for fs in open_tools(root, policy):
        result = await fs.run_command(
            f"cd {shared.resolve()} && cat readme.txt .env .ssh/id_rsa; grep -r SECRET .;"
            " tar cf - . | strings | grep SECRET; echo done"
        )
        assert_not_served(result)
        assert result.data["stdout"].startswith("shared\n"), result.text
        assert result.data["stdout"].endswith("done\n"), result.text


async def test_secrets_added_after_the_worker_started_are_masked(root: Path) -> None:
    (root / "private").mkdir()
    (root / "private" / "notes.txt").write_text(f"{SECRET_TEXT}\n")
    async for fs in open_tools(root, SandboxPolicy()):
        first = await fs.run_command("cat notes.txt")
        assert first.ok and first.data["stdout"] == "plain\n", first.text
        (root / ".tinyagentignore").write_text("private/\n")
        (root / ".env.local").write_text(f"{SECRET_TEXT}\n")
        result = await fs.run_command("cat private/notes.txt .env.local; grep -r SECRET .; echo x")
        assert_not_served(result)
        assert result.data["stdout"].endswith("x\n"), result.text


EXCHANGE = (
    "python3 -c 'import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True);"
    " r = libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2);"
    ' print("exchange", r, ctypes.get_errno())\' {} {}'
)
"""renameat2(RENAME_EXCHANGE): swap a folder above a secret with another one."""


@pytest.mark.parametrize(
    ("ignore", "secret", "moves"),
    [
        ("/deploy/app/prod.cfg\n", "deploy/app/prod.cfg", ["deploy/app deploy/b", "deploy d2"]),
        ("deploy/**/token\n", "deploy/x/y/token", ["deploy deploy2", "deploy/x deploy/z"]),
        ("*.cfg\n!/keep/prod.cfg\n", "other/prod.cfg", ["other keep"]),
    ],
)
async def test_a_secret_denied_by_its_path_stays_masked_when_a_folder_above_is_renamed(
    tmp_path: Path, ignore: str, secret: str, moves: list[str]
) -> None:
    root = (tmp_path / "root").resolve()
    (root / secret).parent.mkdir(parents=True)
    (root / secret).write_text(f"{SECRET_TEXT}\n")
    (root / "spare").mkdir()
    (root / ".tinyagentignore").write_text(ignore)
    async for fs in open_tools(root, SandboxPolicy()):
        tries = [f"mv {move}" for move in moves]
        tries.append(EXCHANGE.format(shlex.quote(secret.split("/")[0]), "spare"))
        tries.append("cat $(find . -name prod.cfg -o -name token) </dev/null")
        result = await fs.run_command("; ".join(tries))
        assert_not_served(result)
        assert "Device or resource busy" in result.data["stderr"], result.data
        assert "exchange -1 16" in result.data["stdout"], result.data  # EBUSY
        assert (root / secret).exists(), "a folder above the secret was renamed"
        again = await fs.run_command("cat $(find . -name prod.cfg -o -name token)")
        assert_not_served(again)
        for path in (secret, *(move.split()[1] for move in moves)):
            assert_not_served(await fs.read_file(path))


@pytest.mark.parametrize("how", ["rename over", "delete and recreate", "folder remade"])
async def test_a_secret_the_person_replaces_between_commands_stays_masked(
    root: Path, how: str
) -> None:
    async for fs in open_tools(root, SandboxPolicy()):
        (root / ".ssh").mkdir()
        (root / ".ssh" / "id_x").write_text("old key\n")
        first = await fs.run_command("cat config/.env .ssh/id_x")
        assert_not_served(first)
        if how == "rename over":  # an editor's save, sed -i, git checkout
            (root / "config" / ".env.tmp").write_text(f"SECRET={SECRET_TEXT}\n")
            (root / "config" / ".env.tmp").rename(root / "config" / ".env")
        elif how == "delete and recreate":
            (root / "config" / ".env").unlink()
            (root / "config" / ".env").write_text(f"SECRET={SECRET_TEXT}\n")
        else:
            shutil.rmtree(root / ".ssh")
            (root / ".ssh").mkdir()
            (root / ".ssh" / "id_x").write_text(f"{SECRET_TEXT}\n")
        again = await fs.run_command("cat config/.env .ssh/id_x")
        assert_not_served(again)
