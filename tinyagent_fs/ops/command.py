"""The shell-command primitive: one command, bounded in time and in output.

In the sandboxed worker this is forked from the already-confined process, so
the command and everything it starts inherit the same Landlock domain and
seccomp filter; nothing here needs to know about the sandbox. The worker's
socket never reaches the command: every descriptor but the three pipes is
closed in the child.

The command runs in its own session (process group). When it times out the
whole group gets SIGTERM, then SIGKILL after a grace period; when it exits,
whatever it left running in the group is killed too, so a command cannot leave
a server or a watcher behind.

``limits`` become the command's rlimits (soft and hard, set in the child
before exec): CPU seconds, address space, file size, processes. A seccomp
filter then keeps the command from setting those resources again (root could
raise a hard limit). A command stopped by one says so in ``limit_exceeded``
and ``limit_message``.
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from ..errors import ErrorCode, ToolError

KILL_GRACE_S = 1.0
"""Between SIGTERM and SIGKILL when a command times out."""
DRAIN_AFTER_EXIT_S = 0.2
"""How long output is still read once the shell has exited (background writers)."""
POLL_S = 0.05
"""How often the exit of the shell is checked while a background child holds a pipe."""
WORKDIR_REFUSED = "workdir_not_a_directory"
"""The cause of the refusal of a workdir that is missing or not a folder (checked
here, where the shell starts, not asked of the worker first)."""
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
RLIMITS = {
    "cpu_s": resource.RLIMIT_CPU,
    "memory_bytes": resource.RLIMIT_AS,
    "file_bytes": resource.RLIMIT_FSIZE,
    "processes": resource.RLIMIT_NPROC,
}
CPU_HARD_MARGIN_S = 1
"""SIGXCPU at the soft CPU limit, SIGKILL this much later for a command that ignores it."""
SIGNAL_LIMITS = {signal.SIGXCPU: "cpu_time", signal.SIGXFSZ: "file_size"}
ALLOCATION_FAILURES = (
    "MemoryError",
    "Cannot allocate memory",
    "std::bad_alloc",
    "out of memory",
    "JavaScript heap out of memory",
)
"""How common runtimes report a refused allocation: RLIMIT_AS sends no signal,
so an address-space limit shows only as one of these in stderr."""


def run_command(
    command: str,
    workdir: str,
    timeout_s: float,
    env: dict[str, str] | None = None,
    max_output_bytes: int = 8192,
    max_output_lines: int = 200,
    home: str | None = None,
    limits: dict[str, int | None] | None = None,
    spawn: Spawn | None = None,
) -> dict[str, Any]:
    """Run ``command`` with ``/bin/bash -c`` (``/bin/sh`` without bash) in ``workdir``.

    stdout and stderr are captured separately; each keeps its head and its
    tail within ``max_output_bytes`` and ``max_output_lines``, with a marker
    saying how much was cut from the middle (the end of a test run matters as
    much as the start). ``exit_code`` follows the shell: 128+N for signal N.
    The environment is minimal (PATH, HOME, LANG, TERM=dumb, pagers off, TMPDIR
    when this process has one) plus ``env``; HOME defaults to ``workdir`` so
    tools do not go looking for the person's dotfiles. ``spawn`` (the sandbox
    worker's command launcher) may start the shell with the limits already in
    place; when it declines, the limits are set here, in the child.
    """
    check_arguments(command, workdir, timeout_s, env, max_output_bytes, max_output_lines)
    rlimits = rlimits_for(limits or {})
    shell_path = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    started = time.monotonic()
    try:
        shell = _start(
            [shell_path, "-c", command], workdir, command_env(home or workdir, env), rlimits, spawn
        )
    except OSError as exc:
        raise ToolError(ErrorCode.IO_ERROR, f"cannot start {shell_path}: {exc.strerror}") from None
    stdout = _Capture(max_output_bytes)
    stderr = _Capture(max_output_bytes)
    try:
        timed_out = _pump(shell, {shell.stdout: stdout, shell.stderr: stderr}, timeout_s)
        returncode = shell.wait()
    finally:
        _signal_group(shell.pid, signal.SIGKILL)
        shell.stdout.close()
        shell.stderr.close()
    out_text, out_cut = stdout.render("stdout", max_output_lines)
    err_text, err_cut = stderr.render("stderr", max_output_lines)
    exit_code = 128 - returncode if returncode < 0 else returncode
    result = {
        "exit_code": exit_code,
        "stdout": out_text,
        "stderr": err_text,
        "duration_ms": round((time.monotonic() - started) * 1000, 1),
        "timed_out": timed_out,
        "stdout_truncated": out_cut,
        "stderr_truncated": err_cut,
    }
    exceeded = _limit_exceeded(exit_code, timed_out, shell.cpu_s(), err_text, limits or {})
    if exceeded:
        result["limit_exceeded"] = exceeded
        result["limit_message"] = f"the command was stopped by its {exceeded} limit"
    return result


class Shell(Protocol):
    """A started shell as the pump sees it: a subprocess of this process, or one the
    sandbox worker's launcher started."""

    pid: int
    stdout: Any
    stderr: Any

    def exit_fd(self) -> int | None:
        """Readable once the shell has exited; None: poll."""

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def cpu_s(self) -> float:
        """CPU seconds of the shell and the children it reaped."""


Spawn = Callable[[list[str], str, dict[str, str], list[tuple[int, int, int]]], "Shell | None"]


def _start(
    argv: list[str],
    workdir: str,
    env: dict[str, str],
    rlimits: list[tuple[int, int, int]],
    spawn: Spawn | None,
) -> Shell:
    """The shell from ``spawn``, or else a subprocess whose child sets the limits."""
    if spawn is not None:
        launched = spawn(argv, workdir, env, rlimits)
        if launched is not None:
            return launched
    return _Subprocess(argv, workdir, env, rlimits)


class _Subprocess:
    """The shell as a subprocess of this process, its exit seen through a pidfd."""

    def __init__(
        self,
        argv: list[str],
        workdir: str,
        env: dict[str, str],
        rlimits: list[tuple[int, int, int]],
    ) -> None:
        self._cpu_before = _children_cpu_s()
        self.process = subprocess.Popen(
            argv,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            start_new_session=True,
            preexec_fn=partial(apply_rlimits, rlimits, limit_lock(rlimits)) if rlimits else None,
        )
        self.pid = self.process.pid
        self.stdout, self.stderr = self.process.stdout, self.process.stderr
        self._pidfd = _pidfd(self.pid)

    def exit_fd(self) -> int | None:
        return self._pidfd

    def poll(self) -> int | None:
        return self.process.poll()

    def wait(self, timeout: float | None = None) -> int:
        returncode = self.process.wait(timeout)
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        return returncode

    def cpu_s(self) -> float:
        return _children_cpu_s() - self._cpu_before


def rlimits_for(limits: dict[str, int | None]) -> list[tuple[int, int, int]]:
    """(resource, soft, hard) for every limit given; an unknown or bad one is INVALID_ARGUMENT."""
    rlimits = []
    for name, value in limits.items():
        if name not in RLIMITS:
            raise ToolError(ErrorCode.INVALID_ARGUMENT, f"unknown command limit {name!r}")
        if value is None:
            continue
        if type(value) is not int or value < 1:
            raise ToolError(ErrorCode.INVALID_ARGUMENT, f"limit {name} must be a positive int")
        hard = value + CPU_HARD_MARGIN_S if name == "cpu_s" else value
        rlimits.append((RLIMITS[name], value, hard))
    return rlimits


def limit_lock(rlimits: list[tuple[int, int, int]]) -> Any:
    """The filter that freezes these limits, compiled before the fork (loaded lazily: see
    ``limit_lock``)."""
    from .limit_lock import CompiledLimitLock

    return CompiledLimitLock([which for which, _, _ in rlimits])


def apply_rlimits(rlimits: list[tuple[int, int, int]], lock: Any) -> None:
    """In the child, before exec: lower soft and hard limits, then forbid setting them again."""
    for which, soft, hard in rlimits:
        current_hard = resource.getrlimit(which)[1]
        if current_hard != resource.RLIM_INFINITY:
            hard = min(hard, current_hard)
        resource.setrlimit(which, (min(soft, hard), hard))
    lock.load()


def _limit_exceeded(
    exit_code: int, timed_out: bool, cpu_s: float, stderr: str, limits: dict[str, int | None]
) -> str | None:
    """Which limit ended the command, from how it died.

    SIGXCPU and SIGXFSZ name theirs (as the shell's own signal or its 128+N
    exit); a SIGKILL counts as the CPU cap only when the command's processes
    used that much CPU, so the OOM killer or a timeout is not mistaken for it;
    a failed exit whose stderr reports a refused allocation counts as memory.
    """
    if timed_out or exit_code == 0:
        return None
    sig = exit_code - 128 if exit_code > 128 else 0
    if sig in SIGNAL_LIMITS:
        return SIGNAL_LIMITS[signal.Signals(sig)]
    cpu_limit = limits.get("cpu_s")
    if sig == signal.SIGKILL and cpu_limit is not None and cpu_s >= cpu_limit:
        return "cpu_time"
    if limits.get("memory_bytes") and any(marker in stderr for marker in ALLOCATION_FAILURES):
        return "memory"
    return None


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class _Capture:
    """Head and rolling tail of one stream, with totals for the truncation marker."""

    def __init__(self, max_bytes: int) -> None:
        self.keep = max_bytes
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.newlines = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        self.newlines += data.count(b"\n")
        room = self.keep - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > 2 * self.keep:
                del self.tail[: len(self.tail) - self.keep]

    def render(self, name: str, max_lines: int) -> tuple[str, bool]:
        """The kept text and whether anything was cut."""
        head_keep = max_lines // 2
        tail_keep = max_lines - head_keep
        if self.total <= self.keep:
            lines = bytes(self.head).splitlines(keepends=True)
            if len(lines) <= max_lines:
                return _decode(self.head), False
            front, back = lines[:head_keep], lines[-tail_keep:]
        else:
            tail = (self.head + self.tail)[-(self.keep - self.keep // 2) :]
            front = bytes(self.head[: self.keep // 2]).splitlines(keepends=True)[:head_keep]
            back = bytes(tail).splitlines(keepends=True)[-tail_keep:]
        kept_front, kept_back = b"".join(front), b"".join(back)
        cut_bytes = self.total - len(kept_front) - len(kept_back)
        cut_lines = self.newlines - kept_front.count(b"\n") - kept_back.count(b"\n")
        text = _decode(kept_front)
        if text and not text.endswith("\n"):
            text += "\n"
        text += f"[... {name} truncated: {cut_bytes} bytes, {cut_lines} lines cut here ...]\n"
        return text + _decode(kept_back), True


def _decode(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", "replace")


def _pump(process: Shell, captures: dict[Any, _Capture], timeout_s: float) -> bool:
    """Read both pipes until the shell exits (plus a short drain) or the timeout ends it.

    The shell's exit (its pidfd, or the launcher's status) is readable in the same
    select as the pipes, so it is seen at once, not by polling.
    """
    deadline = time.monotonic() + timeout_s
    exit_deadline: float | None = None
    timed_out = False
    exit_fd = process.exit_fd()
    with selectors.DefaultSelector() as selector:
        for pipe in captures:
            selector.register(pipe, selectors.EVENT_READ)
        if exit_fd is not None:
            selector.register(exit_fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if exit_deadline is None and process.poll() is not None:
                exit_deadline = now + DRAIN_AFTER_EXIT_S
                if exit_fd is not None:
                    selector.unregister(exit_fd)
            pipes_open = any(key.fileobj in captures for key in selector.get_map().values())
            if exit_deadline is not None and (not pipes_open or now >= exit_deadline):
                break
            if now >= deadline:
                if timed_out:
                    break
                timed_out = True
                _signal_group(process.pid, signal.SIGTERM)
                deadline = now + KILL_GRACE_S
                continue
            wait = min(deadline, exit_deadline or deadline) - now
            if not selector.get_map():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=wait)
                continue
            for key, _ in selector.select(timeout=min(wait, POLL_S)):
                if key.fileobj not in captures:
                    continue  # the shell exited: seen by poll() above
                data = os.read(key.fd, 65536)
                if data:
                    captures[key.fileobj].add(data)
                else:
                    selector.unregister(key.fileobj)
    _signal_group(process.pid, signal.SIGKILL)
    return timed_out


def _pidfd(pid: int) -> int | None:
    """A descriptor readable once ``pid`` exits; None where the kernel or platform has none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def command_env(home: str, extra: dict[str, str] | None) -> dict[str, str]:
    env = {
        "PATH": f"{os.path.dirname(sys.executable)}:{SYSTEM_PATH}",
        "HOME": home,
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "NO_COLOR": "1",
    }
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    env.update(extra or {})
    return env


def check_arguments(
    command: str,
    workdir: str,
    timeout_s: float,
    env: dict[str, str] | None,
    max_output_bytes: int,
    max_output_lines: int,
) -> None:
    if not isinstance(command, str) or not command.strip() or "\x00" in command:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT, "command must be a non-empty string without NUL bytes"
        )
    if not os.path.isdir(workdir):
        raise ToolError(
            ErrorCode.NOT_FOUND if not os.path.exists(workdir) else ErrorCode.NOT_A_DIRECTORY,
            f"working directory {workdir} is not a directory",
            "run the command from the root or an existing directory inside it",
            details={"cause": WORKDIR_REFUSED},
        )
    if not timeout_s > 0:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "timeout_s must be positive")
    if max_output_bytes < 64 or max_output_lines < 2:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "output limits are too small to be useful")
    for key, value in (env or {}).items():
        if not key or "=" in key or "\x00" in key or "\x00" in str(value):
            raise ToolError(ErrorCode.INVALID_ARGUMENT, f"invalid environment variable {key!r}")
        if not isinstance(value, str):
            raise ToolError(ErrorCode.INVALID_ARGUMENT, f"environment value of {key} must be str")
