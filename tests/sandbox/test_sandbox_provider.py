"""LinuxSandboxProvider: the worker's life cycle, its rules, and the primitives through it."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tinyagent_fs.changes.changeset import content_hash
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.ops.packed_paths import unpack_paths
from tinyagent_fs.policy import SandboxPolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider
from tinyagent_fs.providers.sandbox import landlock_rules

from ..sandbox_support import (
    OPEN_FDS_PROBE,
    SECRET,
    Sandbox,
    is_running,
    namespace_pids,
    open_sandbox,
    require_sandbox,
    served_pid,
)

pytestmark = require_sandbox()


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    async for opened in open_sandbox(tmp_path):
        yield opened


def test_available_reports_landlock_and_seccomp() -> None:
    supported, reason = LinuxSandboxProvider.available()
    assert supported, reason
    assert "Landlock ABI" in reason


async def test_the_worker_starts_without_importing_asyncio_or_the_local_provider(
    sandbox: Sandbox,
) -> None:
    """It serves a socket synchronously; importing them cost every start-up ~12 ms."""
    await sandbox.provider.call("stat_path", path=str(sandbox.root))
    loaded = sandbox.provider.report["module_files"]
    assert not [path for path in loaded if "/asyncio/" in path or path.endswith("/local.py")]
    assert any(path.endswith("/providers/worker.py") for path in loaded)


async def test_primitives_work_inside_the_root(sandbox: Sandbox) -> None:
    target = sandbox.root / "sub" / "new.txt"
    await sandbox.provider.call(
        "commit_changes",
        change_id="c1",
        changes=[
            {
                "kind": "create",
                "path": str(target),
                "expected_hash": content_hash(None),
                "new_bytes": b"\x00binary\xff\n",
            }
        ],
    )
    assert target.read_bytes() == b"\x00binary\xff\n"
    data = await sandbox.provider.call("read_bytes", path=str(target), max_bytes=100)
    assert data == b"\x00binary\xff\n"
    info = await sandbox.provider.call("stat_path", path=str(target))
    assert info["type"] == "file" and info["size"] == 9


async def test_a_commit_and_a_read_of_more_files_than_one_sendmsg_takes(
    sandbox: Sandbox,
) -> None:
    """Over a thousand file contents in one request and in one answer (IOV_MAX is 1024)."""
    paths = [sandbox.root / "many" / f"f{index}.txt" for index in range(1100)]
    changes = [
        {
            "kind": "create",
            "path": str(path),
            "expected_hash": content_hash(None),
            "new_bytes": f"{index}\n".encode(),
        }
        for index, path in enumerate(paths)
    ]
    await sandbox.provider.call("commit_changes", change_id="many", changes=changes)
    found = await sandbox.provider.call(
        "read_files", paths=[str(path) for path in paths], max_bytes=100
    )
    assert found == [f"{index}\n".encode() for index in range(1100)]
    assert sandbox.provider.worker_pid is not None


async def test_tool_errors_cross_with_code_hint_and_details(sandbox: Sandbox) -> None:
    big = sandbox.root / "big.bin"
    big.write_bytes(b"x" * 50)
    with pytest.raises(ToolError) as caught:
        await sandbox.provider.call("read_bytes", path=str(big), max_bytes=10)
    assert caught.value.code is ErrorCode.TOO_LARGE
    assert caught.value.hint
    assert caught.value.details == {"size": 50, "limit": 10}
    with pytest.raises(ToolError) as missing:
        await sandbox.provider.call("read_bytes", path=str(sandbox.root / "nope"), max_bytes=10)
    assert missing.value.code is ErrorCode.NOT_FOUND


async def test_worker_reports_every_right_of_the_running_abi(sandbox: Sandbox) -> None:
    await sandbox.provider.call("stat_path", path=str(sandbox.root))
    report = sandbox.provider.report["landlock"]
    abi = landlock_rules.abi_version()
    assert report["abi"] == abi >= 3
    assert report["handled_fs"] == landlock_rules.fs_rights_for(abi)
    assert report["handled_fs"] & landlock_rules.TRUNCATE
    if abi >= 5:
        assert report["handled_fs"] & landlock_rules.IOCTL_DEV
    if abi >= 4:
        assert report["handled_net"] == landlock_rules.NET_BIND_TCP | landlock_rules.NET_CONNECT_TCP
    if abi >= 6:
        assert report["scoped"] == (
            landlock_rules.SCOPE_SIGNAL | landlock_rules.SCOPE_ABSTRACT_UNIX_SOCKET
        )
    assert sandbox.provider.report["seccomp"]["mode"] == "filter"
    described = sandbox.provider.describe()
    assert described["kernel_enforced"] is True and described["landlock_abi"] == abi


async def test_worker_is_started_once_and_reused(sandbox: Sandbox) -> None:
    assert sandbox.provider.worker_pid is None
    await sandbox.provider.call("stat_path", path=str(sandbox.root))
    first = sandbox.provider.worker_pid
    for _ in range(5):
        await sandbox.provider.call(
            "read_bytes", path=str(sandbox.root / "inside.txt"), max_bytes=9
        )
    assert sandbox.provider.worker_pid == first


async def test_ping_is_answered_by_the_running_worker_and_changes_nothing(
    sandbox: Sandbox,
) -> None:
    before = sorted(path.name for path in sandbox.root.iterdir())
    assert await sandbox.provider.call("ping") is None
    first = sandbox.provider.worker_pid
    assert first is not None
    assert await sandbox.provider.call("ping") is None
    assert sandbox.provider.worker_pid == first
    assert sorted(path.name for path in sandbox.root.iterdir()) == before


async def test_worker_holds_only_its_socket_and_a_minimal_environment(sandbox: Sandbox) -> None:
    await sandbox.provider.call("stat_path", path=str(sandbox.root))
    pid = served_pid(sandbox.provider)
    outer = sandbox.provider.worker_pid
    fds = sorted(int(fd) for fd in os.listdir(f"/proc/{pid}/fd"))
    assert len(fds) == 4 and fds[:3] == [0, 1, 2], fds
    socket = os.readlink(f"/proc/{pid}/fd/{fds[3]}")
    assert socket.startswith("socket:")
    watched = sorted(
        os.readlink(f"/proc/{outer}/fd/{fd}") for fd in os.listdir(f"/proc/{outer}/fd")
    )
    assert watched == sorted(  # the outer process watches the socket and its child, no more
        [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1, 2)] + [socket, "anon_inode:[pidfd]"]
    )
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    names = sorted(item.split(b"=")[0].decode() for item in environ if item)
    assert set(names) <= {"PATH", "LANG", "TMPDIR"}
    status = Path(f"/proc/{pid}/status").read_text()
    assert "NoNewPrivs:\t1" in status and "Seccomp:\t2" in status


async def test_concurrent_calls_each_get_their_own_answer(sandbox: Sandbox) -> None:
    for index in range(30):
        (sandbox.root / f"f{index}.txt").write_bytes(f"content {index}".encode() * (index + 1))
    command = sandbox.run("sleep 0.2; echo done")
    reads = [
        sandbox.provider.call("read_bytes", path=str(sandbox.root / f"f{i}.txt"), max_bytes=10**6)
        for i in range(30)
    ]
    results = await asyncio.gather(command, *reads)
    assert results[0]["stdout"] == "done\n"
    assert results[1:] == [f"content {i}".encode() * (i + 1) for i in range(30)]


async def test_command_runs_sandboxed_with_a_private_tmpdir(sandbox: Sandbox) -> None:
    result = await sandbox.run(
        'echo "$TMPDIR"; echo data > "$TMPDIR/scratch" && cat "$TMPDIR/scratch"'
    )
    tmpdir, content = result["stdout"].splitlines()
    assert content == "data"
    assert Path(tmpdir).is_dir() and not Path(tmpdir).is_relative_to(sandbox.root)
    await sandbox.provider.close()
    assert not Path(tmpdir).exists()


async def test_command_child_does_not_inherit_the_worker_socket(sandbox: Sandbox) -> None:
    (sandbox.root / "fds.py").write_text(OPEN_FDS_PROBE)
    result = await sandbox.run(f"{sys.executable} -I fds.py")
    assert result["stdout"].strip() == "[]", result


async def test_commands_cannot_kill_the_worker(sandbox: Sandbox) -> None:
    await sandbox.provider.call("stat_path", path=str(sandbox.root))
    first = sandbox.provider.worker_pid
    result = await sandbox.run("kill -9 1; kill -STOP 1; echo still here")
    assert result["stdout"] == "still here\n", result
    # Its parent is the command launcher: killing it ends the command, not the worker.
    with pytest.raises(ToolError) as lost:
        await sandbox.run("kill -9 $PPID; echo still here")
    assert lost.value.details["cause"] == "launcher_lost"
    assert (await sandbox.run("echo again"))["stdout"] == "again\n"
    data = await sandbox.provider.call(
        "read_bytes", path=str(sandbox.root / "inside.txt"), max_bytes=100
    )
    assert data == b"inside\n"
    assert sandbox.provider.worker_pid == first


async def test_worker_crash_is_sandbox_failure_then_recovers(sandbox: Sandbox) -> None:
    await sandbox.provider.call("stat_path", path=str(sandbox.root))
    first = sandbox.provider.worker_pid
    pending = asyncio.ensure_future(sandbox.run("sleep 3", timeout_s=60))
    await asyncio.sleep(0.3)
    os.kill(served_pid(sandbox.provider), signal.SIGKILL)
    with pytest.raises(ToolError) as caught:
        await asyncio.wait_for(pending, 10)
    assert caught.value.code is ErrorCode.SANDBOX_FAILURE
    assert "killed by signal 9" in caught.value.message
    data = await sandbox.provider.call(
        "read_bytes", path=str(sandbox.root / "inside.txt"), max_bytes=100
    )
    assert data == b"inside\n"
    assert sandbox.provider.worker_pid not in (None, first)


async def test_worker_killed_from_outside_fails_the_call_in_flight(sandbox: Sandbox) -> None:
    await sandbox.provider.call("stat_path", path=str(sandbox.root))
    pending = asyncio.ensure_future(sandbox.run("sleep 3", timeout_s=60))
    await asyncio.sleep(0.3)
    os.kill(sandbox.provider.worker_pid, 9)
    with pytest.raises(ToolError) as caught:
        await asyncio.wait_for(pending, 10)
    assert caught.value.code is ErrorCode.SANDBOX_FAILURE
    assert (await sandbox.run("echo back"))["stdout"] == "back\n"


async def test_stalled_worker_times_out_and_is_replaced(tmp_path: Path) -> None:
    async for sandbox in open_sandbox(tmp_path, call_timeout_s=0.5):
        await sandbox.provider.call("stat_path", path=str(sandbox.root))
        stalled = served_pid(sandbox.provider)
        os.kill(stalled, signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(ToolError) as caught:
            await sandbox.provider.call("stat_path", path=str(sandbox.root))
        assert caught.value.code is ErrorCode.SANDBOX_FAILURE
        assert "stopped answering" in caught.value.message
        assert time.monotonic() - started < 5
        deadline = time.monotonic() + 5
        while is_running(stalled) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert not is_running(stalled)
        info = await sandbox.provider.call("stat_path", path=str(sandbox.root / "inside.txt"))
        assert info["size"] == 7


async def test_a_handed_over_quick_call_never_waits_behind_a_call_blocked_on_the_lock(
    tmp_path: Path,
) -> None:
    """A read sent from the loop whose answer is still arriving is finished on another
    thread, so a call that was queued on the provider's thread first (from a thread or
    another loop) and now waits for the lock cannot deadlock it (it did: both sat on
    one thread, the lock holder behind the waiter)."""
    async for sandbox in open_sandbox(tmp_path):
        provider = sandbox.provider
        await provider.call("stat_path", path=str(sandbox.root))
        big = sandbox.root / "big.bin"
        big.write_bytes(os.urandom(1 << 20) * 48)  # far more than the socket buffer holds
        loop = asyncio.get_running_loop()
        gate = threading.Event()
        busy = loop.run_in_executor(provider._thread(), gate.wait)
        command = {"command": "echo queued", "workdir": str(sandbox.root), "timeout_s": 20}
        queued = loop.run_in_executor(
            provider._thread(), provider.call_sync, "run_command", command
        )
        await asyncio.sleep(0)
        quick = asyncio.ensure_future(
            provider.call("read_bytes", path=str(big), max_bytes=big.stat().st_size)
        )
        await asyncio.sleep(0)
        assert provider._lock.locked(), "the quick call was not sent from the loop"
        gate.set()
        await busy
        try:
            command, data = await asyncio.wait_for(asyncio.gather(queued, quick), 20)
        except asyncio.TimeoutError:
            provider._lock.release()  # undo the deadlock so the test can end
            raise AssertionError("the queued call and the quick call deadlocked") from None
        assert command["stdout"] == "queued\n"
        assert data == big.read_bytes()


async def test_toolkit_process_stays_unrestricted(sandbox: Sandbox, tmp_path: Path) -> None:
    await sandbox.run("true")
    free = tmp_path / "free.txt"
    free.write_bytes(b"toolkit can write anywhere")
    assert sandbox.secret.read_bytes() == SECRET
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
    status = Path("/proc/self/status").read_text()
    assert "Seccomp:\t0" in status
    assert landlock_rules.abi_version() > 0
    assert os.listdir("/")


async def test_extra_read_dirs_are_readable_not_writable(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "doc.txt").write_bytes(b"shared doc")
    async for sandbox in open_sandbox(tmp_path, read_roots=[shared]):
        data = await sandbox.provider.call(
            "read_bytes", path=str(shared / "doc.txt"), max_bytes=100
        )
        assert data == b"shared doc"
        result = await sandbox.run(f"echo x >> {shared}/doc.txt; truncate -s 0 {shared}/doc.txt")
        assert result["exit_code"] != 0
    assert (shared / "doc.txt").read_bytes() == b"shared doc"


async def test_extra_writable_dirs_are_writable(tmp_path: Path) -> None:
    build = tmp_path / "build"
    build.mkdir()
    async for sandbox in open_sandbox(tmp_path, writable_roots=[build]):
        result = await sandbox.run(f"echo built > {build}/out.txt")
        assert result["exit_code"] == 0, result
    assert (build / "out.txt").read_bytes() == b"built\n"


async def test_dropped_provider_releases_worker_and_tmpdir(tmp_path: Path) -> None:
    provider = LinuxSandboxProvider(tmp_path, SandboxPolicy())
    tmpdir = (
        await provider.call(
            "run_command", command="echo $TMPDIR", workdir=str(tmp_path), timeout_s=10
        )
    )["stdout"].strip()
    pid = provider.worker_pid
    assert pid is not None and Path(tmpdir).is_dir()
    del provider
    deadline = time.monotonic() + 5
    while Path(tmpdir).exists() and time.monotonic() < deadline:
        gc.collect()  # the executor thread may still hold the last call for a moment
        await asyncio.sleep(0.05)
    assert not Path(tmpdir).exists()
    assert not Path(f"/proc/{pid}").exists()


async def test_daemons_escaping_the_process_group_die_with_the_worker(sandbox: Sandbox) -> None:
    await sandbox.provider.call("stat_path", path=str(sandbox.root))
    pending = asyncio.ensure_future(
        sandbox.run("setsid sleep 300 >/dev/null 2>&1 & sleep 30", timeout_s=60)
    )
    deadline = time.monotonic() + 10
    while len(namespace_pids(sandbox.provider)) < 4 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    inside = namespace_pids(sandbox.provider)
    assert len(inside) >= 4, "worker, shell, sleep 30 and the daemon should be running"
    os.kill(sandbox.provider.worker_pid, signal.SIGKILL)
    with pytest.raises(ToolError) as caught:
        await asyncio.wait_for(pending, 10)
    assert caught.value.code is ErrorCode.SANDBOX_FAILURE
    deadline = time.monotonic() + 5
    while any(is_running(pid) for pid in inside) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not any(is_running(pid) for pid in inside)


def ops_on_the_thread(provider: Any) -> list[str]:
    """The ops ``provider`` runs through its thread from now on (they still run)."""
    threaded: list[str] = []
    call_sync = provider.call_sync

    def counted(op: str, kwargs: dict, held: Any = None) -> object:
        threaded.append(op)
        return call_sync(op, kwargs, held)

    provider.call_sync = counted
    return threaded


async def test_quick_calls_from_the_loop_each_get_their_answer_without_a_thread(
    sandbox: Sandbox,
) -> None:
    """Reads sent ahead of each other's answers come back to the right callers, and
    none of them takes the provider's thread."""
    provider = sandbox.provider
    for index in range(30):
        (sandbox.root / f"f{index}.txt").write_bytes(b"file %d\n" % index)
    await provider.call("ping")
    threaded = ops_on_the_thread(provider)
    answers = await asyncio.gather(
        *(
            provider.call("read_bytes", path=str(sandbox.root / f"f{index}.txt"), max_bytes=99)
            for index in range(30)
        )
    )
    assert answers == [b"file %d\n" % index for index in range(30)]
    assert threaded == [], "a quick call from the loop took the provider's thread"


async def test_the_loop_runs_while_the_worker_answers(sandbox: Sandbox) -> None:
    big = sandbox.root / "big.bin"
    big.write_bytes(os.urandom(1 << 20) * 32)
    await sandbox.provider.call("ping")
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticking = asyncio.ensure_future(ticker())
    try:
        data = await sandbox.provider.call("read_bytes", path=str(big), max_bytes=1 << 26)
    finally:
        ticking.cancel()
    assert data == big.read_bytes()
    assert ticks > 10, "the loop stood still while the worker read 32 MB"


async def test_calls_from_one_loop_keep_their_order_around_a_command(sandbox: Sandbox) -> None:
    """Reads started before a command see the file as it was; reads started after it
    wait for it, though the command cannot be sent ahead like a read."""
    inside = str(sandbox.root / "inside.txt")
    await sandbox.provider.call("ping")

    def read() -> Any:
        return sandbox.provider.call("read_bytes", path=inside, max_bytes=99)

    before = [read() for _ in range(5)]
    command = sandbox.run("printf changed > inside.txt")
    after = [read() for _ in range(5)]
    answers = await asyncio.gather(*before, command, *after)
    assert answers[5]["exit_code"] == 0
    assert answers[:5] == [b"inside\n"] * 5
    assert answers[6:] == [b"changed"] * 5


async def test_a_stopped_worker_fails_every_call_sent_ahead_then_is_replaced(
    tmp_path: Path,
) -> None:
    async for sandbox in open_sandbox(tmp_path, call_timeout_s=0.5):
        inside = str(sandbox.root / "inside.txt")
        await sandbox.provider.call("ping")
        os.kill(served_pid(sandbox.provider), signal.SIGSTOP)
        outcomes = await asyncio.wait_for(
            asyncio.gather(
                *(sandbox.provider.call("stat_path", path=inside) for _ in range(5)),
                return_exceptions=True,
            ),
            10,
        )
        assert all(isinstance(outcome, ToolError) for outcome in outcomes), outcomes
        assert {outcome.code for outcome in outcomes} == {ErrorCode.SANDBOX_FAILURE}
        info = await sandbox.provider.call("stat_path", path=inside)
        assert info["size"] == 7


async def test_a_cancelled_call_from_the_loop_never_hands_its_answer_to_the_next(
    sandbox: Sandbox,
) -> None:
    provider = sandbox.provider
    inside = sandbox.root / "inside.txt"
    await provider.call("ping")
    for _ in range(20):
        abandoned = asyncio.ensure_future(provider.call("stat_path", path=str(sandbox.root)))
        await asyncio.sleep(0)
        abandoned.cancel()
        assert await provider.call("read_bytes", path=str(inside), max_bytes=100) == b"inside\n"


async def test_a_cancelled_slow_call_never_hands_its_answer_to_the_next(
    sandbox: Sandbox,
) -> None:
    """A read too slow to be taken at once is watched by the loop; cancelled there,
    its answer is read and dropped, and the next call gets its own."""
    provider = sandbox.provider
    big = sandbox.root / "big.bin"
    big.write_bytes(os.urandom(1 << 20) * 16)
    inside = str(sandbox.root / "inside.txt")
    await provider.call("ping")
    for _ in range(3):
        abandoned = asyncio.ensure_future(
            provider.call("read_bytes", path=str(big), max_bytes=1 << 25)
        )
        await asyncio.sleep(0)
        assert not abandoned.done(), "the slow read was answered before it could be cancelled"
        abandoned.cancel()
        assert await provider.call("read_bytes", path=inside, max_bytes=100) == b"inside\n"


async def test_listings_and_searches_from_the_loop_get_their_answers_without_a_thread(
    sandbox: Sandbox,
) -> None:
    """Scans go from the loop like reads, among reads sent ahead, each to its caller."""
    provider = sandbox.provider
    for index in range(40):
        (sandbox.root / f"f{index:02d}.txt").write_bytes(b"needle %d\n" % index)
    await provider.call("ping")
    threaded = ops_on_the_thread(provider)
    scan = {"root": str(sandbox.root), "denied_patterns": []}
    listing, found, *reads = await asyncio.gather(
        provider.call(
            "list_tree",
            path=str(sandbox.root),
            start=".",
            depth=1,
            include_hidden=False,
            limit=100,
            **scan,
        ),
        provider.call("glob_files", pattern="f1*.txt", base=str(sandbox.root), limit=100, **scan),
        *(
            provider.call("read_bytes", path=str(sandbox.root / f"f{index:02d}.txt"), max_bytes=99)
            for index in range(10)
        ),
    )
    assert listing["total"] == 41
    assert reads == [b"needle %d\n" % index for index in range(10)]
    assert sorted(unpack_paths(found["matches"])) == [f"f1{digit}.txt" for digit in range(10)]
    assert threaded == [], "a scan from the loop took the provider's thread"


async def test_concurrent_quick_calls_are_sent_ahead_not_answered_one_by_one(
    sandbox: Sandbox,
) -> None:
    """Only a lone call waits for its answer in place: with other callers ready on
    the loop, each request goes down the socket before any answer is read, so the
    worker answers them back to back."""
    provider = sandbox.provider
    inside = str(sandbox.root / "inside.txt")
    await provider.call("ping")
    calls = [
        asyncio.ensure_future(provider.call("read_bytes", path=inside, max_bytes=99))
        for _ in range(5)
    ]
    await asyncio.sleep(0)  # every call has run up to its send, no answer read yet
    queue = provider._queue
    assert queue is not None and len(queue._pending) == 5, "the calls did not go ahead"
    assert await asyncio.gather(*calls) == [b"inside\n"] * 5
