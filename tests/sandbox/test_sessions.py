"""Interactive sessions (exec_command, write_stdin, close_session) in the real sandbox,
on a real terminal: REPLs, prompts, Ctrl-C, silence, floods, limits, review and audit."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import AutoApprovePolicy, Decision, RiskBasedPolicy
from tinyagent_fs.hooks.terminal import TerminalHook
from tinyagent_fs.providers import secret_watch, sessions
from tinyagent_fs.providers.linux import LinuxSandboxProvider
from tinyagent_fs.providers.local import LocalProvider

from ..conftest import audit_events
from ..sandbox_support import is_running, namespace_pids, require_sandbox

pytestmark = require_sandbox()


@pytest.fixture
async def fs(project: Path, audit: AuditLog) -> AsyncIterator[FileTools]:
    provider = LinuxSandboxProvider(project, SandboxPolicy())
    tools = FileTools(project, provider=provider, hooks=[AutoApprovePolicy()], audit=audit)
    yield tools
    await tools.close()


async def until_exit(fs: FileTools, session_id: str, timeout_s: float = 30) -> str:
    """Poll a session until its program exits; everything it showed meanwhile."""
    shown = []
    deadline = time.monotonic() + timeout_s
    while True:
        result = await fs.write_stdin(session_id, "", yield_time_ms=200)
        assert result.ok, result.text
        shown.append(result.data["output"])
        if not result.data["running"] and not result.data["bytes_waiting"]:
            return "\n".join(shown)
        assert time.monotonic() < deadline, "the session did not end"


async def test_a_python_repl_is_driven_over_several_calls(fs: FileTools) -> None:
    started = await fs.exec_command("python3 -q", yield_time_ms=1500)
    assert started.ok, started.text
    assert started.data["running"] and started.data["output"].endswith(">>> ")
    sid = started.data["session_id"]
    first = await fs.write_stdin(sid, "x = 6 * 7\n", yield_time_ms=300)
    assert first.data["running"] and first.data["exit_code"] is None
    second = await fs.write_stdin(sid, "print(x)\n", yield_time_ms=300)
    assert "42" in second.data["output"].splitlines()
    assert "x = 6 * 7" not in second.data["output"], "output since the last read only"
    third = await fs.write_stdin(sid, "import sys; sys.exit(3)\n", yield_time_ms=2000)
    assert not third.data["running"] and third.data["exit_code"] == 3
    assert "exited with code 3" in third.text


async def test_read_p_prompt_is_answered(fs: FileTools) -> None:
    started = await fs.exec_command("read -p 'Name? ' n; echo \"hello $n\"", yield_time_ms=500)
    assert started.data["output"] == "Name? " and started.data["running"]
    answered = await fs.write_stdin(started.data["session_id"], "Ada\n", yield_time_ms=1000)
    assert "hello Ada" in answered.data["output"]
    assert answered.data["exit_code"] == 0 and not answered.data["running"]


async def test_ctrl_c_stops_a_foreground_loop(fs: FileTools) -> None:
    started = await fs.exec_command("while :; do sleep 0.05; done", yield_time_ms=300)
    sid = started.data["session_id"]
    assert started.data["running"]
    stopped = await fs.write_stdin(sid, "\u0003", yield_time_ms=2000)
    assert not stopped.data["running"], stopped.text
    assert stopped.data["exit_code"] == 130  # 128 + SIGINT
    assert "^C" in stopped.data["output"]


async def test_a_program_that_never_prints(fs: FileTools) -> None:
    started = await fs.exec_command("sleep 60", yield_time_ms=300)
    assert started.ok and started.data["running"]
    assert "(no new output)" in started.text
    polled = await fs.write_stdin(started.data["session_id"], "", yield_time_ms=300)
    assert polled.data["running"] and polled.data["output"] == ""
    closed = await fs.close_session(started.data["session_id"])
    assert not closed.data["running"] and closed.data["ended"] == "closed"
    again = await fs.write_stdin(started.data["session_id"], "x")
    assert not again.data["running"]


async def test_progress_bars_and_colours_become_plain_text(fs: FileTools) -> None:
    command = (
        "for i in 10 50 100; do printf '\\r\\033[32m%3d%%\\033[0m' $i; sleep 0.02; done;"
        " printf '\\n\\033]0;title\\007done\\n'"
    )
    result = await fs.exec_command(command, yield_time_ms=3000)
    assert result.data["output"] == "100%\ndone"


async def test_a_flood_keeps_only_the_newest_output_with_a_marker(fs: FileTools) -> None:
    result = await fs.exec_command(
        "yes flood | head -c 20000000; echo; echo END", yield_time_ms=100
    )
    await asyncio.sleep(5)  # unread meanwhile: the host keeps only its ring
    polled = await fs.write_stdin(result.data["session_id"], "", yield_time_ms=100)
    assert polled.data["bytes_dropped"] > 10_000_000
    assert "bytes of earlier output were dropped unread" in polled.text
    shown = polled.data["output"] + await until_exit(fs, result.data["session_id"], 60)
    assert "END" in shown
    assert len(shown) < 1_000_000


async def test_output_over_the_cap_says_how_to_read_on(fs: FileTools) -> None:
    result = await fs.exec_command("seq 1 20000", yield_time_ms=2000, max_output_tokens=500)
    assert result.data["bytes_waiting"] > 0
    assert "more bytes are waiting" in result.text and "empty chars to read on" in result.text
    assert len(result.data["output"]) <= 2000
    rest = await until_exit(fs, result.data["session_id"])
    assert "20000" in rest


async def test_a_session_cannot_signal_another_sessions_processes(fs: FileTools) -> None:
    other = await fs.exec_command("sleep 300 & echo PID=$!; wait", yield_time_ms=500)
    pid = other.data["output"].split("PID=")[1].split()[0]
    probe = await fs.exec_command(
        f"kill -0 {pid}; echo kill=$?; cat /proc/{pid}/environ >/dev/null; echo read=$?;"
        " sleep 30 & kill $!; echo own=$?",
        yield_time_ms=2000,
    )
    out = probe.data["output"]
    assert "kill=1" in out and "read=1" in out, out
    assert "own=0" in out, out
    still = await fs.write_stdin(other.data["session_id"], "", yield_time_ms=100)
    assert still.data["running"]


async def terminal_of(fs: FileTools, session_id: str) -> str:
    """The device path of a session's terminal, as its own shell names it."""
    shown = await fs.write_stdin(session_id, "tty\n", yield_time_ms=500)
    (path,) = [line.strip() for line in shown.data["output"].splitlines() if "/dev/pts/" in line]
    return path


async def test_a_session_cannot_open_another_sessions_terminal(fs: FileTools) -> None:
    victim = await fs.exec_command("bash --norc -i", yield_time_ms=500)
    victim_id = victim.data["session_id"]
    pts = await terminal_of(fs, victim_id)
    probe = await fs.exec_command(
        f"echo FAKE > {pts}; echo write=$?; head -c1 {pts} </dev/null; echo read=$?;"
        f" stty -F {pts} -echo intr a; echo stty=$?; echo mine > /dev/tty; echo own=$?",
        yield_time_ms=2000,
    )
    out = probe.data["output"]
    assert "write=1" in out and "read=1" in out and "stty=1" in out, out
    assert "mine" in out and "own=0" in out, out  # its own terminal still works
    typed = await fs.write_stdin(victim_id, "echo secret-typed-$((6*7))\n", yield_time_ms=500)
    assert "secret-typed-42" in typed.data["output"], "the victim lost what was typed"
    assert "FAKE" not in typed.data["output"]


async def test_run_command_beside_a_session_cannot_open_its_terminal(fs: FileTools) -> None:
    session = await fs.exec_command("bash --norc -i", yield_time_ms=500)
    pts = await terminal_of(fs, session.data["session_id"])
    ran = await fs.run_command(
        f"echo FAKE > {pts}; echo write=$?; stty -F {pts}; echo stty=$?; : </dev/tty; echo tty=$?"
    )
    out = ran.data["stdout"]
    assert "write=1" in out and "stty=1" in out and "tty=1" in out, ran.text
    assert "No such device or address" in ran.data["stderr"], "a command has no terminal"
    shown = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=200)
    assert "FAKE" not in shown.data["output"]


async def test_a_secret_added_while_a_session_runs_never_reaches_the_model(
    fs: FileTools, project: Path
) -> None:
    shell = await fs.exec_command("bash --norc -i", yield_time_ms=500)
    other = await fs.exec_command("cat", yield_time_ms=100)
    (project / "deploy.pem").write_text("person-secret-9999\n")  # the person, meanwhile
    read = await fs.write_stdin(shell.data["session_id"], "cat deploy.pem\n", yield_time_ms=500)
    assert read.ok, read.text
    assert "person-secret-9999" not in read.text
    assert read.data["ended"] == "secrets_changed" and "withheld" in read.text
    after = await fs.write_stdin(other.data["session_id"], "", yield_time_ms=50)
    assert after.data["ended"] == "secrets_changed", "every session in that sandbox ends"
    again = await fs.exec_command("cat deploy.pem", yield_time_ms=1000)
    assert "person-secret-9999" not in again.text and again.data["exit_code"] != 0


async def test_a_secret_read_by_a_session_that_ended_never_reaches_the_model(
    fs: FileTools, project: Path
) -> None:
    exits = await fs.exec_command("sleep 1; cat deploy.pem; echo done", yield_time_ms=100)
    closed = await fs.exec_command("sleep 1; cat deploy.pem; sleep 60", yield_time_ms=100)
    (project / "deploy.pem").write_text("person-secret-9999\n")  # the person, meanwhile
    await asyncio.sleep(2)
    after_exit = await fs.write_stdin(exits.data["session_id"], "", yield_time_ms=100)
    after_close = await fs.close_session(closed.data["session_id"])
    for result in (after_exit, after_close):
        assert "person-secret-9999" not in result.text
        assert result.data["ended"] == "secrets_changed", result.text
        withheld = [result.data[key] for key in ("exit_code", "session_output_bytes")]
        assert withheld == [None, None], "an exit code or a length can spell a secret"


async def test_output_that_arrives_while_the_masks_are_checked_waits_for_the_next_check(
    fs: FileTools, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = fs.provider
    # the watch's thread would end the session as the secret appears: here it lags
    monkeypatch.setattr(secret_watch.SecretWatch, "_run", lambda self: None)
    loop = "while :; do cat deploy.pem 2>/dev/null; sleep 0.02; done"
    session = await fs.exec_command(loop, yield_time_ms=100)
    sid = session.data["session_id"]
    plan = provider._plan_masks

    def person_acts_during_the_check():  # the race: a secret appears, a live view peeks
        planned = plan()
        (project / "deploy.pem").write_text("person-secret-9999\n")
        time.sleep(0.2)
        live = provider.sessions.get(sid)
        with live.lock:
            sessions.exchange(live, b"", 0, peek=True)
        assert b"person-secret-9999" in live.unread
        monkeypatch.setattr(provider, "_plan_masks", plan)
        return planned

    monkeypatch.setattr(provider, "_plan_masks", person_acts_during_the_check)
    first = await fs.write_stdin(sid, "", yield_time_ms=0)
    assert "person-secret-9999" not in first.text
    second = await fs.write_stdin(sid, "", yield_time_ms=0)
    assert "person-secret-9999" not in second.text
    assert second.data["ended"] == "secrets_changed"


FLIPPER = """\
import os, sys, time
names = ["config", *(f"c{i}" for i in range(1, 16))]
while not os.path.exists("config/deploy.pem"):
    time.sleep(0.01)
print("GOT:", open("config/deploy.pem").read().strip(), flush=True)
at = 0
while not os.path.exists("stop"):
    os.rename(names[at], names[(at + 1) % len(names)])
    at = (at + 1) % len(names)
while at:
    os.rename(names[at], names[(at + 1) % len(names)])
    at = (at + 1) % len(names)
print("settled", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("reader", ["the session itself", "run_command"])
async def test_a_folder_renamed_round_and_round_never_hides_a_new_secret(
    fs: FileTools, project: Path, reader: str
) -> None:
    (project / "config").mkdir()
    for index in range(3000):  # a walk long enough for many renames meanwhile
        (project / f"note{index}.txt").write_text("")
    (project / "flip.py").write_text(FLIPPER)
    session = await fs.exec_command("python3 flip.py", yield_time_ms=300)
    (project / "config" / "deploy.pem").write_text("person-secret-9999\n")  # the person
    await asyncio.sleep(1)
    if reader == "run_command":
        ran = await fs.run_command("touch stop; sleep 0.3; cat config/deploy.pem")
        assert "person-secret-9999" not in ran.text
        assert not ran.ok or ran.data["exit_code"] != 0, ran.text
    else:
        read = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=0)
        assert "person-secret-9999" not in read.text
        assert read.data["ended"] == "secrets_changed", read.text


async def test_run_command_beside_a_session_leaves_it_running_and_cleans_its_own(
    fs: FileTools, project: Path
) -> None:
    session = await fs.exec_command("cat", yield_time_ms=200)
    ran = await fs.run_command("setsid sleep 100 & echo ok")
    assert ran.ok and "ok" in ran.data["stdout"]
    provider = fs.provider
    inside = namespace_pids(provider)
    sleepers = [pid for pid in inside if "sleep" in Path(f"/proc/{pid}/cmdline").read_text()]
    assert not sleepers, "the command's daemon outlived it"
    echoed = await fs.write_stdin(session.data["session_id"], "still here\n", yield_time_ms=300)
    assert echoed.data["running"] and "still here" in echoed.data["output"]


async def test_a_hook_planted_by_a_session_is_quarantined_when_it_ends(
    fs: FileTools, project: Path
) -> None:
    plant = (
        "git init -q planted && printf '#!/bin/sh\\ntouch ran\\n' > planted/.git/hooks/pre-commit"
        " && chmod +x planted/.git/hooks/pre-commit && read -p 'go? ' x"
    )
    started = await fs.exec_command(plant, yield_time_ms=3000)
    assert started.data["running"], started.text
    hook = project / "planted/.git/hooks/pre-commit"
    assert hook.exists()
    ended = await fs.write_stdin(started.data["session_id"], "\n", yield_time_ms=2000)
    assert not ended.data["running"]
    assert not hook.exists()
    assert ended.data["protected_paths_quarantined"], ended.text
    assert "WARNING" in ended.text and ended.data["security_violation"]


async def test_sessions_are_limited_per_toolkit(project: Path) -> None:
    provider = LinuxSandboxProvider(project, SandboxPolicy(max_sessions=1))
    fs = FileTools(project, provider=provider, hooks=[AutoApprovePolicy()], audit=False)
    try:
        first = await fs.exec_command("sleep 30", yield_time_ms=0)
        second = await fs.exec_command("sleep 30", yield_time_ms=0)
        assert second.error is not None and second.error.code == "RATE_LIMITED"
        assert "close_session" in second.text
        await fs.close_session(first.data["session_id"])
        third = await fs.exec_command("echo ok", yield_time_ms=1000)
        assert third.ok and "ok" in third.data["output"]
    finally:
        await fs.close()


async def test_closing_the_toolkit_ends_its_sessions_at_once(project: Path) -> None:
    provider = LinuxSandboxProvider(project, SandboxPolicy())
    fs = FileTools(project, provider=provider, hooks=[AutoApprovePolicy()], audit=False)
    await fs.exec_command("sleep 300", yield_time_ms=200)
    inside = namespace_pids(provider)
    assert len(inside) >= 3
    await fs.close()
    assert not [pid for pid in inside if is_running(pid)]


async def test_exec_command_is_refused_without_the_kernel_sandbox(project: Path) -> None:
    fs = FileTools(project, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False)
    result = await fs.exec_command("touch made; echo hi")
    assert result.error is not None and result.error.code == "SANDBOX_UNAVAILABLE"
    assert "Nothing was run" in result.text
    await asyncio.sleep(0.2)
    assert not (project / "made").exists()
    await fs.close()


async def test_exec_command_runs_unconfined_where_the_person_opted_in(project: Path) -> None:
    fs = FileTools(
        project,
        SandboxPolicy(allow_unconfined_commands=True),
        provider=LocalProvider(),
        hooks=[AutoApprovePolicy()],
        audit=False,
    )
    try:
        started = await fs.exec_command("read -p 'go? ' x; echo got $x", yield_time_ms=500)
        assert started.data["output"] == "go? " and not started.data["sandboxed"]
        done = await fs.write_stdin(started.data["session_id"], "y\n", yield_time_ms=1000)
        assert "got y" in done.data["output"] and done.data["exit_code"] == 0
        left = await fs.exec_command("sleep 300", yield_time_ms=100)
        assert left.data["running"]
    finally:
        await fs.close()
    assert not fs.provider.sessions.live()


async def test_review_asks_for_the_command_and_typed_text_and_audits_them(
    project: Path, audit: AuditLog
) -> None:
    asked: list[tuple[str, dict]] = []

    class Person:
        def before_tool_execution(self, call):
            asked.append((call.tool, dict(call.args)))
            return Decision.proceed("person")

    policy = RiskBasedPolicy(approver=Person())
    provider = LinuxSandboxProvider(project, SandboxPolicy())
    fs = FileTools(project, provider=provider, hooks=[policy], audit=audit)
    try:
        started = await fs.exec_command("cat", yield_time_ms=200)
        sid = started.data["session_id"]
        await fs.write_stdin(sid, "typed\n", yield_time_ms=200)
        await fs.write_stdin(sid, "", yield_time_ms=50)  # a poll types nothing: not asked
        policy.trust_session(sid)
        await fs.write_stdin(sid, "trusted\n", yield_time_ms=200)
        await fs.close_session(sid)
    finally:
        await fs.close()
    assert [tool for tool, _ in asked] == ["exec_command", "write_stdin"]
    assert asked[1][1]["chars"] == "typed\n"
    events = [e for e in audit_events(audit) if e["tool"] in ("exec_command", "write_stdin")]
    assert [e["arguments"].get("chars") for e in events[1:]] == ["typed\n", "", "trusted\n"]
    assert events[1]["bytes_read"] > 0, "each output's size is audited"


async def test_trust_in_one_session_never_reaches_another_toolkits(project: Path) -> None:
    asked: list[str] = []

    class Person:
        def before_tool_execution(self, call):
            asked.append(call.tool)
            return Decision.proceed("person")

    policy = RiskBasedPolicy(approver=Person())
    ids = []
    for _ in range(2):  # one policy shared by two toolkits in turn, as after a restart
        provider = LinuxSandboxProvider(project, SandboxPolicy())
        fs = FileTools(project, provider=provider, hooks=[policy], audit=False)
        try:
            started = await fs.exec_command("cat", yield_time_ms=100)
            ids.append(started.data["session_id"])
            policy.trust_session(ids[0])
            await fs.write_stdin(ids[-1], "typed\n", yield_time_ms=100)
        finally:
            await fs.close()
    assert ids[0] != ids[1]
    assert asked == ["exec_command", "exec_command", "write_stdin"], asked


async def test_policy_denial_runs_nothing(project: Path) -> None:
    class Person:
        def before_tool_execution(self, call):
            return Decision.deny("no", "person")

    fs = FileTools(project, hooks=[RiskBasedPolicy(approver=Person())], audit=False)
    try:
        result = await fs.exec_command("touch made")
        assert result.error is not None and result.error.code == "DENIED_BY_HOOK"
        await asyncio.sleep(0.2)
        assert not (project / "made").exists()
    finally:
        await fs.close()


async def test_an_idle_session_is_ended_and_says_so(project: Path) -> None:
    provider = LinuxSandboxProvider(project, SandboxPolicy(session_idle_s=1))
    fs = FileTools(project, provider=provider, hooks=[AutoApprovePolicy()], audit=False)
    try:
        started = await fs.exec_command("echo waiting; sleep 300", yield_time_ms=300)
        await asyncio.sleep(2.5)
        later = await fs.write_stdin(started.data["session_id"], "", yield_time_ms=100)
        assert not later.data["running"] and later.data["ended"] == "idle_timeout"
        assert "idle too long" in later.text
        assert len(namespace_pids(provider)) == 1, "only the worker is left"
    finally:
        await fs.close()


async def test_a_session_has_the_limits_of_run_command(project: Path) -> None:
    policy = SandboxPolicy(max_command_file_bytes=4096)
    provider = LinuxSandboxProvider(project, policy)
    fs = FileTools(project, policy, provider=provider, hooks=[AutoApprovePolicy()], audit=False)
    try:
        result = await fs.exec_command("head -c 100000 /dev/zero > big.bin", yield_time_ms=3000)
        assert result.data["limit_exceeded"] == "file_size", result.text
        assert "file_size limit" in result.text
        assert (project / "big.bin").stat().st_size <= 4096
    finally:
        await fs.close()


async def test_the_terminal_prompt_shows_the_command_and_typed_control_characters(
    project: Path,
) -> None:
    shown = io.StringIO()
    person = TerminalHook(input_stream=io.StringIO("y\ny\n"), output_stream=shown)
    provider = LinuxSandboxProvider(project, SandboxPolicy())
    hooks = [RiskBasedPolicy(approver=person)]
    fs = FileTools(project, provider=provider, hooks=hooks, audit=False)
    try:
        session = await fs.exec_command("cat # \x1b[2J", yield_time_ms=100)
        assert session.ok, session.text
        await fs.write_stdin(session.data["session_id"], "\u0003", yield_time_ms=100)
    finally:
        await fs.close()
    text = shown.getvalue()
    assert "$ cat # ⟨U+001B⟩[2J" in text
    assert "chars: ⟨U+0003⟩" in text


async def test_input_a_program_does_not_read_is_bounded(fs: FileTools) -> None:
    started = await fs.exec_command("stty raw -echo; sleep 60", yield_time_ms=300)
    sid = started.data["session_id"]
    refused = 0
    for _ in range(40):
        typed = await fs.write_stdin(sid, "x" * 65536, yield_time_ms=0)
        refused += typed.data["input_refused"]
    assert refused > 0 and "typed bytes were refused" in typed.text
    assert typed.data["running"]
