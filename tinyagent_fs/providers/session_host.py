"""Interactive sessions: a command under a pseudo-terminal, served by a host process.

In the sandbox worker, :func:`spawn` opens a terminal from the worker's private
devpts and forks a *session host*, which inherits every wall of the worker. The
host makes itself a child subreaper (whatever the session starts stays below it,
``setsid`` or not), forks the command on the terminal's slave in a Landlock
domain of its own (``landlock_rules.scope_apart``: it cannot signal or read the
memory of any process outside it, another session's included, nor open any
terminal but its own) with the limits
of ``run_command``, and then serves the toolkit directly over a socketpair
whose other end the worker passes on (SCM_RIGHTS), so the worker stays free for
other calls while a session waits.

The host drains the terminal all the time into a ring of ``RING_BYTES``: a
program printing without end keeps running, and only its newest output is
kept (what fell out is counted). Each request ``{"input", "yield_ms"}`` types
its bytes, waits ``yield_ms`` (less when the command ends) and answers
``{"output", "dropped", "exit_code", "ended"}``. When the command exits, goes
idle past ``idle_s``, outlives ``lifetime_s`` or is closed, every process below
the host is killed, the rest of the output drained, and a last answer
(``ended`` set) is sent, unasked if need be, before the host exits.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import select
import signal
import socket
import struct
import termios
import time
import traceback
from collections.abc import Callable
from typing import Any

from ..errors import ErrorCode, ToolError
from ..ops.command import apply_rlimits, check_arguments, command_env, limit_lock, rlimits_for
from . import wire
from .sandbox import landlock_rules

TIOCGPTN = 0x80045430
"""_IOR('T', 0x30, unsigned int): a pseudo-terminal's number (not in ``termios``)."""
RING_BYTES = 256 * 1024
"""Unread terminal output a host keeps; older output is dropped and counted."""
READ_CHUNK = 65536
MAX_PENDING_INPUT = 1024 * 1024
"""Typed bytes a program has not read yet that a host holds; more is refused, counted."""
ROWS, COLS = 40, 120
"""The terminal's size: wide enough that most programs do not wrap or truncate."""
END_DRAIN_S = 0.2
"""How long output is still read after every process of the session was killed."""
PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4

HOSTS: set[int] = set()
"""The worker's live session hosts, spared by the cleanup after each command."""


def spawn(
    command: str,
    workdir: str,
    env: dict[str, str] | None = None,
    home: str | None = None,
    limits: dict[str, int | None] | None = None,
    idle_s: float = 1800.0,
    lifetime_s: float = 14400.0,
    scope: bool = True,
) -> dict[str, Any]:
    """Start ``command`` (``bash -c``) on a new terminal; ``fd`` in the answer is the
    toolkit's end of the host's socket (the worker passes it on and closes it)."""
    check_arguments(command, workdir, 1.0, env, 64, 2)
    if scope and landlock_rules.scopes_for(landlock_rules.abi_version()) == 0:
        raise ToolError(
            ErrorCode.SANDBOX_UNAVAILABLE,
            "interactive sessions need Landlock signal scoping (ABI 6, Linux 6.12 or newer) "
            "to keep sessions apart; this kernel does not have it",
            "use run_command instead",
            details={"cause": "landlock_abi"},
        )
    sessions_live()
    rlimits = rlimits_for(limits or {})
    lock = limit_lock(rlimits) if rlimits else None
    try:
        master, slave = os.openpty()
    except OSError as exc:
        raise ToolError(
            ErrorCode.SANDBOX_FAILURE,
            f"no pseudo-terminal could be opened in the sandbox: {exc.strerror or exc}",
            "use run_command instead (commands without a terminal still work)",
            details={"cause": "no_pty"},
        ) from None
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    toolkit_end, host_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    child_env = {**command_env(home or workdir, None), "TERM": "xterm-256color"}
    child_env.update(env or {})
    pid = os.fork()
    if pid == 0:  # the host
        status = 1
        try:
            toolkit_end.close()
            _close_all_but(2, master, slave, host_end.fileno())
            argv = [shell, "-c", command]
            status = _host(
                host_end,
                master,
                slave,
                argv,
                workdir,
                child_env,
                (rlimits, lock),
                idle_s,
                lifetime_s,
                scope,
            )
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(status)
    host_end.close()
    os.close(master)
    os.close(slave)
    HOSTS.add(pid)
    return {"host_pid": pid, "fd": toolkit_end.detach(), "rows": ROWS, "cols": COLS}


def _host(
    sock: socket.socket,
    master: int,
    slave: int,
    argv: list[str],
    workdir: str,
    env: dict[str, str],
    limits: tuple[Any, Any],
    idle_s: float,
    lifetime_s: float,
    scope: bool,
) -> int:
    if scope:
        landlock_rules.scope_self()  # the session's domain: kill(-1) reaches it only
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_DUMPABLE, 0)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    child = os.fork()
    if child == 0:
        _exec_on_terminal(master, slave, argv, workdir, env, limits, scope, sock.fileno())
    os.close(slave)
    os.set_blocking(master, False)
    return _HostLoop(sock, master, child, idle_s, lifetime_s, scope).run()


def _exec_on_terminal(
    master: int,
    slave: int,
    argv: list[str],
    workdir: str,
    env: dict[str, str],
    limits: tuple[Any, Any],
    scope: bool,
    sock_fd: int,
) -> None:
    try:
        terminal = _terminal_path(master)
        os.close(master)
        os.close(sock_fd)
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        if slave > 2:
            os.close(slave)
        os.closerange(3, 65536)
        os.chdir(workdir)
        for signum in signal.valid_signals():  # Python ignores SIGPIPE and SIGXFSZ
            with contextlib.suppress(OSError, ValueError):
                signal.signal(signum, signal.SIG_DFL)
        rlimits, lock = limits
        if rlimits:
            apply_rlimits(rlimits, lock)
        if scope:  # nested below the host's: no signal to its host, no other terminal
            landlock_rules.scope_apart(terminal)
        os.execve(argv[0], argv, env)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(2, f"the session could not start: {exc}\r\n".encode())
    os._exit(127)


class _HostLoop:
    """The host's one loop: drain the terminal, answer the toolkit, end on time."""

    def __init__(
        self,
        sock: socket.socket,
        master: int,
        child: int,
        idle_s: float,
        lifetime_s: float,
        scoped: bool,
    ) -> None:
        self.scoped = scoped
        self.sock = sock
        self.master: int | None = master
        self.child = child
        self.child_fd = os.pidfd_open(child)
        self.ring = bytearray()
        self.dropped = 0
        self.pending_input = bytearray()
        self.input_refused = 0
        self.exit_code: int | None = None
        self.ended: str | None = None
        self.reply_at: float | None = None
        self.started = self.last_request = time.monotonic()
        self.idle_s = idle_s
        self.lifetime_s = lifetime_s

    def run(self) -> int:
        poller = select.poll()
        while True:
            now = time.monotonic()
            if self.ended is None:
                if now - self.last_request > self.idle_s and self.reply_at is None:
                    self._end("idle_timeout")
                elif now - self.started > self.lifetime_s:
                    self._end("lifetime_exceeded")
            if self.ended is not None:
                self._finish()
                return 0
            if self.reply_at is not None and now >= self.reply_at and not self._reply():
                return 0
            poller = select.poll()
            poller.register(self.sock.fileno(), select.POLLIN)
            poller.register(self.child_fd, select.POLLIN)
            if self.master is not None:
                mask = select.POLLIN | (select.POLLOUT if self.pending_input else 0)
                poller.register(self.master, mask)
            wait = self._next_wakeup(now)
            for fd, event in poller.poll(wait):
                if fd == self.master:
                    if event & select.POLLOUT:
                        self._type()
                    if event & (select.POLLIN | select.POLLHUP | select.POLLERR):
                        self._drain()
                elif fd == self.child_fd:
                    self._child_exited()
                elif fd == self.sock.fileno() and not self._request():
                    self._end("closed")

    def _next_wakeup(self, now: float) -> int:
        deadlines = [self.started + self.lifetime_s, self.last_request + self.idle_s]
        if self.reply_at is not None:
            deadlines.append(self.reply_at)
        return max(0, int((min(deadlines) - now) * 1000) + 1)

    def _request(self) -> bool:
        """Take one request; False when the toolkit hung up or asked to close."""
        try:
            request = wire.recv_message(self.sock, time.monotonic() + 5)
        except wire.WireError:
            return False
        if not isinstance(request, dict) or request.get("close"):
            return False
        if not request.get("peek"):  # a person's live view does not keep a session alive
            self.last_request = time.monotonic()
        data = request.get("input") or b""
        if isinstance(data, bytes) and data:
            room = max(0, MAX_PENDING_INPUT - len(self.pending_input))
            self.input_refused += max(0, len(data) - room)
            self.pending_input += data[:room]
            self._type()
        yield_ms = max(0, min(int(request.get("yield_ms", 0)), 600_000))
        self.reply_at = time.monotonic() + yield_ms / 1000
        return True

    def _type(self) -> None:
        if self.master is None or not self.pending_input:
            return
        try:
            written = os.write(self.master, self.pending_input)
        except BlockingIOError:
            return
        except OSError:
            self.pending_input.clear()
            return
        del self.pending_input[:written]

    def _drain(self) -> bool:
        """Read what the terminal has; False at its end (every slave closed)."""
        if self.master is None:
            return False
        while True:
            try:
                data = os.read(self.master, READ_CHUNK)
            except BlockingIOError:
                return True
            except OSError as exc:
                if exc.errno != errno.EIO:
                    raise
                data = b""
            if not data:
                os.close(self.master)
                self.master = None
                return False
            self.ring += data
            excess = len(self.ring) - RING_BYTES
            if excess > 0:
                del self.ring[:excess]
                self.dropped += excess

    def _child_exited(self) -> None:
        _, status = os.waitpid(self.child, 0)
        code = os.waitstatus_to_exitcode(status)
        self.exit_code = 128 - code if code < 0 else code
        self._end("exited")

    def _end(self, why: str) -> None:
        self.ended = why
        _end_domain(self.scoped, self.child)
        deadline = time.monotonic() + END_DRAIN_S
        while self.master is not None and time.monotonic() < deadline:
            if select.select([self.master], [], [], max(0, deadline - time.monotonic()))[0]:
                self._drain()
        if self.exit_code is None:
            with contextlib.suppress(ChildProcessError):
                _, status = os.waitpid(self.child, os.WNOHANG)
                if status:
                    code = os.waitstatus_to_exitcode(status)
                    self.exit_code = 128 - code if code < 0 else code

    def _finish(self) -> None:
        """The last answer, asked for or not; the toolkit reads it even after we exit."""
        self._reply()
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)

    def _reply(self) -> bool:
        output, self.ring = bytes(self.ring), bytearray()
        message = {
            "output": output,
            "dropped": self.dropped,
            "exit_code": self.exit_code,
            "ended": self.ended,
            "input_refused": self.input_refused,
        }
        self.dropped = 0
        self.input_refused = 0
        self.reply_at = None
        try:
            wire.send_message(self.sock, message)
        except wire.WireError:
            return False
        return True


def _end_domain(scoped: bool, child: int, wait_s: float = 2.0) -> None:
    """SIGKILL every process of this session and reap them (orphans come to us).

    ``kill(-1)`` from inside the session's own Landlock domain reaches exactly the
    processes of that domain and the ones nested in it: the worker, the toolkit and
    other sessions lie outside. Unscoped, only the command's process group is reached.
    """
    deadline = time.monotonic() + wait_s
    while True:
        with contextlib.suppress(OSError):
            if scoped:
                os.kill(-1, signal.SIGKILL)
            else:
                os.killpg(child, signal.SIGKILL)
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if not pid:
                break
        if time.monotonic() > deadline:
            return
        time.sleep(0.001)


def apart(respond: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    """``respond()`` (a ``run_command``) in a keeper process of its own Landlock domain,
    which then kills whatever the command left: while sessions live, the worker cannot
    use ``kill(-1)`` (it would end them too). None when the command killed its keeper."""
    worker_end, keeper_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            worker_end.close()
            landlock_rules.scope_apart(None)  # and no session's terminal
            _prctl(PR_SET_CHILD_SUBREAPER, 1)
            response = respond()
            _end_domain(True, 0)
            wire.send_message(keeper_end, response)
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(0)
    keeper_end.close()
    try:
        response = wire.recv_message(worker_end)
    except wire.WireError:
        response = None
    finally:
        worker_end.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    return response if isinstance(response, dict) else None


def sessions_live() -> bool:
    """Whether a session host is still running (the exited ones are reaped here)."""
    for pid in list(HOSTS):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            HOSTS.discard(pid)
    return bool(HOSTS)


def _terminal_path(master: int) -> str:
    """The path of ``master``'s terminal, from its number (``/proc`` may be out of reach)."""
    (number,) = struct.unpack("I", fcntl.ioctl(master, TIOCGPTN, b"\0" * 4))
    return f"{landlock_rules.TERMINALS}/{number}"


def _close_all_but(*keep: int) -> None:
    """Close every descriptor above stderr but ``keep`` (the worker's socket above all)."""
    low = 3
    for fd in sorted(k for k in keep if k >= 3):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 65536)


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def host_here(fd: int) -> None:
    """Be the host of one unconfined session (``LocalProvider`` with
    ``allow_unconfined_commands``): the request comes over ``fd``, as ``spawn``'s
    arguments. No Landlock domain: only the command's process group is ended."""
    sock = socket.socket(fileno=fd)
    args = wire.recv_message(sock, time.monotonic() + 30)
    workdir = args["workdir"]
    env = args.get("env")
    check_arguments(args["command"], workdir, 1.0, env, 64, 2)
    master, slave = os.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    child_env = {**command_env(args.get("home") or workdir, None), "TERM": "xterm-256color"}
    child_env.update(env or {})
    argv = [shell, "-c", args["command"]]
    idle_s, lifetime_s = args.get("idle_s", 1800.0), args.get("lifetime_s", 14400.0)
    _host(sock, master, slave, argv, workdir, child_env, ([], None), idle_s, lifetime_s, False)
