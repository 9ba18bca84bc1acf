"""The command launcher: a process of the worker that holds a command's limits, so that
commands start without Python code between fork and exec.

Setting the limits in each command's child (``preexec_fn``) forbids ``vfork``: the
worker, a Python process of tens of megabytes, was forked for every command and paid
its copy-on-write faults (3 ms a command). The launcher is forked once, lowers its own
rlimits to the command limits and loads their lock (``ops.limit_lock``); every command
it starts (``vfork`` + exec) inherits both, as it inherits the worker's walls. It is a
child subreaper, so whatever a command leaves is its child, and its ``kill(-1)`` after
the command ends every process of the namespace but the worker and itself.

Fail closed: a launcher that cannot start, or limits it does not hold, leave the
command to ``ops.command``'s own path, which sets the limits in the child; a launcher
lost during a command ends the command with a SANDBOX_FAILURE, and the worker's own
``kill(-1)`` runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import socket
import subprocess
import traceback
from typing import Any

from ..errors import ErrorCode, ToolError
from ..ops.command import apply_rlimits, limit_lock
from . import wire
from .sandbox import namespaces

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
ANSWER_S = 1.0
"""How long the launcher may take to answer (it answers in a millisecond); a stopped
or dead one is replaced. Kept short so that a lost launcher is reported well within
the toolkit's own wait for the command (its timeout plus 6 s)."""
MIN_MEMORY_BYTES = 1024**3
"""Below this address-space limit the launcher (a copy of the worker) might fail to
allocate after it started a command; such commands keep the old path."""
RETIRE_CPU_SHARE = 0.5
"""The launcher's own CPU limit is the command's: it is replaced at this share of it."""

Rlimits = list[tuple[int, int, int]]


class CommandLauncher:
    """The worker's handle on its launcher (at most one, started on first use)."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.sock: socket.socket | None = None
        self.rlimits: Rlimits | None = None
        self.cpu_s = 0.0
        self.launched: Launched | None = None

    def spawn(
        self, argv: list[str], workdir: str, env: dict[str, str], rlimits: Rlimits
    ) -> Launched | None:
        """``argv`` started by the launcher with these limits, or None: run it another way."""
        if not rlimits:
            return None  # nothing to set in the child: it is vforked already
        if any(w == resource.RLIMIT_AS and soft < MIN_MEMORY_BYTES for w, soft, _ in rlimits):
            return None
        if self.sock is None or rlimits != self.rlimits or self._worn(rlimits):
            self.stop()
            if not self._start(rlimits):
                return None
        assert self.sock is not None
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            socket.send_fds(self.sock, [b"R"], [out_w, err_w])
            wire.send_message(self.sock, {"argv": argv, "cwd": workdir, "env": env})
            answer = self._answer()
        except (OSError, wire.WireError):
            answer = None
        finally:
            os.close(out_w)
            os.close(err_w)
        if not isinstance(answer, dict) or "pid" not in answer:
            os.close(out_r)
            os.close(err_r)
            if isinstance(answer, dict) and "error" in answer:
                raise OSError(answer.get("errno") or 0, answer["error"])
            self.stop()  # the command may have started: never run it a second time
            raise _lost()
        self.launched = Launched(self, answer["pid"], out_r, err_r)
        return self.launched

    def end_others(self) -> bool:
        """After a command it started: every process but the worker and the launcher
        killed and reaped. False (the worker must do it) when it did not start the
        last command or cannot answer."""
        launched, self.launched = self.launched, None
        if launched is None or self.sock is None or launched.lost:
            return False
        try:
            self.sock.sendall(b"E")
            return self._answer() == {"ended": True}
        except (OSError, wire.WireError):
            self.stop()
            return False

    def stop(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, 9)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = None

    def _worn(self, rlimits: Rlimits) -> bool:
        cpu = [soft for which, soft, _ in rlimits if which == resource.RLIMIT_CPU]
        return bool(cpu) and self.cpu_s >= cpu[0] * RETIRE_CPU_SHARE

    def _start(self, rlimits: Rlimits) -> bool:
        lock = limit_lock(rlimits)
        worker_end, launcher_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                worker_end.close()
                os.closerange(3, launcher_end.fileno())
                os.closerange(launcher_end.fileno() + 1, 65536)
                status = _serve(launcher_end, rlimits, lock)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(status)
        launcher_end.close()
        self.pid, self.sock, self.rlimits, self.cpu_s = pid, worker_end, rlimits, 0.0
        try:
            ready = self._answer()
        except (OSError, wire.WireError):
            ready = None
        if ready != {"ready": True}:
            self.stop()
            return False
        return True

    def _answer(self) -> Any:
        assert self.sock is not None
        if not wire.wait_readable(self.sock.fileno(), ANSWER_S, spin=0):
            raise wire.WireError("the command launcher did not answer")
        return wire.recv_message(self.sock)


class Launched:
    """A shell the launcher started, as ``ops.command`` pumps it: its exit is the
    launcher's status message, readable on the launcher's socket."""

    def __init__(self, launcher: CommandLauncher, pid: int, out_r: int, err_r: int) -> None:
        self.launcher = launcher
        self.pid = pid
        self.stdout = os.fdopen(out_r, "rb", buffering=0)
        self.stderr = os.fdopen(err_r, "rb", buffering=0)
        self.returncode: int | None = None
        self.lost = False
        self._cpu_s = 0.0

    def exit_fd(self) -> int | None:
        sock = self.launcher.sock
        return sock.fileno() if sock is not None else None

    def poll(self) -> int | None:
        if self.returncode is None:
            sock = self.launcher.sock
            if sock is None or wire.wait_readable(sock.fileno(), 0, 0):
                self._status()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        sock = self.launcher.sock
        if self.returncode is None and sock is not None:
            limit = ANSWER_S if timeout is None else timeout
            if not wire.wait_readable(sock.fileno(), limit, spin=0) and timeout is not None:
                raise subprocess.TimeoutExpired("launched command", timeout)
        if self.returncode is None:
            self._status()
        assert self.returncode is not None
        return self.returncode

    def cpu_s(self) -> float:
        return self._cpu_s

    def _status(self) -> None:
        sock = self.launcher.sock
        try:
            if sock is None or not wire.wait_readable(sock.fileno(), 0, 0):
                raise wire.WireError("no status")
            status = wire.recv_message(sock)
            self.returncode, self._cpu_s = status["returncode"], status["cpu_s"]
            self.launcher.cpu_s = status["launcher_cpu_s"]
        except (OSError, KeyError, TypeError, wire.WireError):
            self.lost = True
            self.launcher.stop()
            raise _lost() from None


def _lost() -> ToolError:
    return ToolError(
        ErrorCode.SANDBOX_FAILURE,
        "the process that started the command was lost (the command may have killed or "
        "stopped it); the command and everything it started were ended",
        details={"cause": "launcher_lost"},
    )


def _serve(sock: socket.socket, rlimits: Rlimits, lock: Any) -> int:
    """The launcher: its limits and their lock, then one command at a time."""
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    apply_rlimits(rlimits, lock)
    wire.send_message(sock, {"ready": True})
    while True:
        try:
            kind, fds, _, _ = socket.recv_fds(sock, 1, 2)
            if kind == b"R" and len(fds) == 2:
                _launch(sock, wire.recv_message(sock), fds)
                continue
        except (OSError, wire.WireError):
            return 0
        for fd in fds:
            os.close(fd)
        if kind != b"E":
            return 0
        namespaces.end_other_processes()
        wire.send_message(sock, {"ended": True})


def _launch(sock: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """Start the shell (vfork: no Python code in the child), report its pid, then its end."""
    out_w, err_w = fds
    try:
        process = subprocess.Popen(
            request["argv"],
            cwd=request["cwd"],
            env=request["env"],
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            close_fds=True,
            start_new_session=True,
        )
    except OSError as exc:
        wire.send_message(sock, {"error": exc.strerror or str(exc), "errno": exc.errno})
        return
    finally:
        os.close(out_w)
        os.close(err_w)
    wire.send_message(sock, {"pid": process.pid})
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    own = resource.getrusage(resource.RUSAGE_SELF)
    wire.send_message(
        sock,
        {
            "returncode": process.returncode,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "launcher_cpu_s": own.ru_utime + own.ru_stime,
        },
    )


def _prctl(option: int, value: int) -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed in the command launcher")
