"""run_command as a plain primitive: capture, caps, timeouts, process groups, environment."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.ops.command import run_command

from ..sandbox_support import OPEN_FDS_PROBE


def test_exit_code_and_streams_are_captured_separately(tmp_path: Path) -> None:
    result = run_command("echo out; echo err >&2; exit 3", str(tmp_path), 10)
    assert result["exit_code"] == 3
    assert result["stdout"] == "out\n"
    assert result["stderr"] == "err\n"
    assert result["timed_out"] is False
    assert result["stdout_truncated"] is False and result["stderr_truncated"] is False
    assert result["duration_ms"] >= 0


def test_command_runs_in_workdir(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    result = run_command("pwd", str(tmp_path / "sub"), 10)
    assert result["stdout"].strip() == str(tmp_path / "sub")


def test_long_output_keeps_head_and_tail_with_a_marker(tmp_path: Path) -> None:
    result = run_command("seq 1 100000", str(tmp_path), 10, max_output_bytes=1000)
    text = result["stdout"]
    assert result["stdout_truncated"] is True
    assert text.startswith("1\n2\n3\n")
    assert text.rstrip().endswith("99999\n100000")
    assert "[... stdout truncated:" in text
    cut = int(text.split("truncated: ")[1].split(" bytes")[0])
    total = len("".join(f"{n}\n" for n in range(1, 100001)).encode())
    kept = len(text.replace(text[text.index("[...") : text.index("...]\n") + 5], "").encode())
    assert cut == total - kept
    assert len(text.encode()) < 1200


def test_many_short_lines_are_capped_by_line_count(tmp_path: Path) -> None:
    result = run_command("seq 1 500", str(tmp_path), 10, max_output_lines=20)
    lines = result["stdout"].splitlines()
    assert result["stdout_truncated"] is True
    assert lines[:10] == [str(n) for n in range(1, 11)]
    assert lines[-10:] == [str(n) for n in range(491, 501)]
    assert "480 lines cut" in result["stdout"]


def test_stderr_is_capped_independently(tmp_path: Path) -> None:
    result = run_command("echo small; seq 1 5000 >&2", str(tmp_path), 10, max_output_bytes=500)
    assert result["stdout"] == "small\n" and result["stdout_truncated"] is False
    assert result["stderr_truncated"] is True
    assert "[... stderr truncated:" in result["stderr"]


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    result = run_command(f"sleep 60 & echo $! > {pid_file}; wait", str(tmp_path), 0.5)
    assert result["timed_out"] is True
    assert time.monotonic() - started < 5
    assert _gone(int(pid_file.read_text()))


def test_command_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run_command("trap '' TERM; sleep 60", str(tmp_path), 0.3)
    assert result["timed_out"] is True
    assert time.monotonic() - started < 5


def test_timeout_applies_when_the_command_closed_its_output(tmp_path: Path) -> None:
    result = run_command("exec >/dev/null 2>&1; sleep 60", str(tmp_path), 0.3)
    assert result["timed_out"] is True


def test_background_process_left_behind_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "bg.pid"
    result = run_command(f"sleep 60 & echo $! > {pid_file}", str(tmp_path), 10)
    assert result["exit_code"] == 0 and result["timed_out"] is False
    assert _gone(int(pid_file.read_text()))


def test_signal_death_reports_shell_style_exit_code(tmp_path: Path) -> None:
    assert run_command("kill -9 $$", str(tmp_path), 10)["exit_code"] == 128 + 9


def test_environment_is_minimal_plus_what_is_given(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TINYAGENT_FS_SECRET_TOKEN", "leak")
    result = run_command("env", str(tmp_path), 10, env={"EXTRA": "1"})
    env = dict(line.split("=", 1) for line in result["stdout"].splitlines() if "=" in line)
    assert "TINYAGENT_FS_SECRET_TOKEN" not in env
    assert env["EXTRA"] == "1"
    assert env["HOME"] == str(tmp_path)
    assert env["TERM"] == "dumb"
    assert os.path.dirname(sys.executable) in env["PATH"].split(":")


def test_command_gets_no_inherited_descriptors(tmp_path: Path) -> None:
    leaked = os.open(str(tmp_path), os.O_RDONLY)
    os.set_inheritable(leaked, True)
    try:
        (tmp_path / "probe.py").write_text(OPEN_FDS_PROBE)
        result = run_command(f"{sys.executable} -I probe.py", str(tmp_path), 10)
    finally:
        os.close(leaked)
    assert result["stdout"].strip() == "[]", result


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"command": "  "}, ErrorCode.INVALID_ARGUMENT),
        ({"command": "echo \x00"}, ErrorCode.INVALID_ARGUMENT),
        ({"timeout_s": 0}, ErrorCode.INVALID_ARGUMENT),
        ({"env": {"A=B": "x"}}, ErrorCode.INVALID_ARGUMENT),
        ({"workdir": "/nonexistent/dir"}, ErrorCode.NOT_FOUND),
    ],
)
def test_invalid_arguments_are_tool_errors(tmp_path: Path, kwargs: dict, code: ErrorCode) -> None:
    arguments = {"command": "true", "workdir": str(tmp_path), "timeout_s": 5.0, **kwargs}
    with pytest.raises(ToolError) as caught:
        run_command(**arguments)
    assert caught.value.code is code


def _gone(pid: int) -> bool:
    """True once ``pid`` no longer runs (a zombie awaiting its reaper counts as gone)."""
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().split(") ")[1].startswith("Z"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_exit_after_closing_output_is_seen_without_polling(tmp_path: Path, monkeypatch) -> None:
    """The shell's pidfd wakes the pump; a sleeping wait() would add a millisecond a command."""

    def no_sleeping_wait(self, timeout=None):  # type: ignore[no-untyped-def]
        if timeout is not None:
            raise AssertionError("the pump polled the shell's exit")
        return original(self)

    original = subprocess.Popen.wait
    monkeypatch.setattr(subprocess.Popen, "wait", no_sleeping_wait)
    result = run_command("exec >&- 2>&-; sleep 0.2; exit 3", str(tmp_path), timeout_s=10)
    assert result["exit_code"] == 3
