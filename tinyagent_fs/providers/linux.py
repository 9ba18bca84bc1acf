"""LinuxSandboxProvider: primitives run in a worker confined by Landlock and seccomp.

The worker is started on first use and kept; every call is one request and one
answer over a socketpair (see ``wire``), serialized by a lock. Calls run on a
thread of the provider's own, so any event loop (or a plain thread) may call;
only a stat or a read on an idle, running worker is answered inline, as the
in-process provider would. The toolkit process itself is never restricted.

A worker that dies, stalls past its deadline, or answers with something that
is not a frame is killed; the call in flight gets SANDBOX_FAILURE, and the next
call starts a fresh worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..errors import ErrorCode, ToolError
from ..ops.command import KILL_GRACE_S
from ..policy import SandboxPolicy
from ..sandbox.probe import sandbox_support
from . import wire
from .base import Provider

SYSTEM_READ_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_READ_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/gitconfig",
    "/etc/mime.types",
    "/etc/locale.alias",
)
"""What the interpreter, the shell and common tools read; no other part of /etc."""
WORKER_DEPENDENCIES = ("pyseccomp", "pathspec", "charset_normalizer")

BOOTSTRAP = """\
import sys, types
fd, package = int(sys.argv[1]), sys.argv[2]
sys.path[:0] = sys.argv[3:]
bare = types.ModuleType("tinyagent_fs")
bare.__path__ = [package]
sys.modules["tinyagent_fs"] = bare
from tinyagent_fs.providers.worker import main
main(fd)
"""
"""Loads ``tinyagent_fs`` as a bare package so the worker imports only the
primitives, not the toolkit facade that the package's ``__init__`` pulls in."""

COMMAND_MARGIN_S = 5.0
EXIT_WAIT_S = 0.5
"""How long a worker whose socket closed gets to be reaped, to tell a crash from a stall."""
WORKER_STDERR_LOG = "worker-stderr.log"
"""In the private TMPDIR: kept out of the toolkit's terminal (a tty in the
worker's hands could be fed input) but there to explain a crash."""
QUICK_OPS = frozenset({"read_bytes", "stat_path"})
QUICK_TIMEOUT_S = 30.0


class LinuxSandboxProvider(Provider):
    """Runs ``ops`` primitives in a Landlock + seccomp confined worker process.

    Writes are allowed beneath ``root``, ``policy.extra_writable_dirs`` and
    ``writable_roots`` (plus a private TMPDIR the provider owns); reads beneath
    those, ``policy.extra_read_dirs``, ``read_roots`` and what the interpreter
    and common tools need (/usr, the Python prefixes, a few files of /etc).
    Metadata (stat, existence) is not hidden by Landlock; contents are.

    Inside writable roots, git hooks, git config and shell rc files stay
    read-only for commands (see ``sandbox.protected_paths``). A ``run_command``
    result carries ``protected_paths_changed`` when one of them appeared or
    changed anyway (it did not exist, or was a symlink, when the worker
    started); the worker is then replaced so the next call protects it.
    """

    name = "linux-sandbox"
    kernel_enforced = True

    def __init__(
        self,
        root: Path,
        policy: SandboxPolicy,
        writable_roots: Sequence[Path] = (),
        read_roots: Sequence[Path] = (),
        *,
        call_timeout_s: float = 300.0,
        start_timeout_s: float = 15.0,
    ) -> None:
        self.root = Path(root).resolve()
        self.policy = policy
        self.call_timeout_s = call_timeout_s
        self.start_timeout_s = start_timeout_s
        writable = [self.root, *policy.extra_writable_dirs, *writable_roots]
        self._protect = _unique(str(Path(p).resolve()) for p in writable)
        self._readable = (
            _unique(str(Path(p).resolve()) for p in [*policy.extra_read_dirs, *read_roots])
            + _interpreter_paths()
        )
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._slot = _WorkerSlot()
        self._finalizer = weakref.finalize(self, self._slot.release)
        self.report: dict[str, Any] = {}
        """What the current worker reported at start: Landlock ABI and sets, protection."""

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether Landlock (ABI 3 or newer) and seccomp are usable here, and why not."""
        return sandbox_support()

    @property
    def worker_pid(self) -> int | None:
        process = self._slot.process
        return process.pid if process is not None else None

    async def call(self, op: str, **kwargs: Any) -> Any:
        """Quick primitives go inline when the worker is up and idle, the rest via a thread.

        A stat or a small read is a ~50 µs round trip, less than the hop to a
        thread and back; the in-process provider blocks the loop for the same
        work. Starting the worker, commands, searches and commits never do.
        """
        if op in QUICK_OPS and self._worker_alive() and self._lock.acquire(blocking=False):
            try:
                return self._exchange(op, kwargs, min(self.call_timeout_s, QUICK_TIMEOUT_S))
            finally:
                self._lock.release()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread(), self.call_sync, op, kwargs)

    def call_sync(self, op: str, kwargs: dict[str, Any]) -> Any:
        """The blocking form of :meth:`call`, for callers that have no event loop."""
        timeout = self.call_timeout_s
        if op == "run_command":
            timeout = float(kwargs.get("timeout_s", 0)) + KILL_GRACE_S + COMMAND_MARGIN_S
        with self._lock:
            return self._exchange(op, kwargs, timeout)

    def _exchange(self, op: str, kwargs: dict[str, Any], timeout: float) -> Any:
        """One request and its reply; the caller holds the lock."""
        sock = self._ensure_worker()
        try:
            wire.send_message(sock, {"op": op, "args": kwargs})
            reply = wire.recv_message(sock, time.monotonic() + timeout)
        except TypeError as exc:
            raise ToolError(ErrorCode.INVALID_ARGUMENT, f"{op}: {exc}") from None
        except wire.WireError as exc:
            raise self._worker_lost(op, str(exc)) from None
        if not isinstance(reply, dict) or ("ok" not in reply and "error" not in reply):
            raise self._worker_lost(op, "it answered with something that is not a reply")
        if reply.get("restart") is True:
            self._slot.stop()
        if "error" in reply:
            raise _tool_error(reply["error"])
        return reply["ok"]

    async def close(self) -> None:
        """Stop the worker and drop the private TMPDIR; a later call starts afresh."""
        executor, self._executor = self._executor, None
        if executor is not None:
            await asyncio.get_running_loop().run_in_executor(executor, self.close_sync)
            executor.shutdown(wait=False)
        else:
            self.close_sync()

    def _thread(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="tinyagent-fs-sandbox")
        return self._executor

    def close_sync(self) -> None:
        with self._lock:
            self._slot.release()

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        landlock = self.report.get("landlock", {})
        info.update(
            landlock_abi=landlock.get("abi"),
            protected_paths=self.report.get("protection", {}).get("mode"),
            worker_pid=self.worker_pid,
        )
        return info

    def _worker_alive(self) -> bool:
        process = self._slot.process
        return self._slot.sock is not None and process is not None and process.poll() is None

    def _ensure_worker(self) -> socket.socket:
        slot = self._slot
        if self._worker_alive():
            assert slot.sock is not None
            return slot.sock
        slot.stop()
        if slot.tmpdir is None:
            slot.tmpdir = tempfile.mkdtemp(prefix="tinyagent-fs-tmp-")
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        package = str(Path(__file__).resolve().parent.parent)
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        log = open(slot.stderr_log(), "ab")  # noqa: SIM115 - the child keeps its own copy
        try:
            slot.process = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    "-c",
                    BOOTSTRAP,
                    str(child_end.fileno()),
                    package,
                    *paths,
                ],
                pass_fds=(child_end.fileno(),),
                close_fds=True,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                cwd=str(self.root),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        except OSError as exc:
            parent_end.close()
            raise ToolError(
                ErrorCode.SANDBOX_FAILURE, f"cannot start the sandbox worker: {exc}"
            ) from None
        finally:
            child_end.close()
            log.close()
        slot.sock = parent_end
        canary_dir = tempfile.mkdtemp(prefix="tinyagent-fs-canary-")
        try:
            canary = os.path.join(canary_dir, "canary")
            Path(canary).write_bytes(b"must stay unreadable from the sandbox\n")
            config = {
                "writable": [*self._protect, slot.tmpdir],
                "readable": self._readable,
                "protect": self._protect,
                "denied": list(self.policy.denied_patterns),
                "tmpdir": slot.tmpdir,
                "canary": canary,
                "parent_pid": os.getpid(),
            }
            wire.send_message(parent_end, config)
            reply = wire.recv_message(parent_end, time.monotonic() + self.start_timeout_s)
        except wire.WireError as exc:
            raise self._worker_lost("start-up", str(exc)) from None
        finally:
            shutil.rmtree(canary_dir, ignore_errors=True)
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), dict):
            slot.stop()
            error = reply.get("error") if isinstance(reply, dict) else None
            raise _tool_error(error) if error else self._worker_lost("start-up", "bad greeting")
        self.report = reply["ok"]
        return parent_end

    def _worker_lost(self, op: str, reason: str) -> ToolError:
        status = None
        if self._slot.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                status = self._slot.process.wait(timeout=EXIT_WAIT_S)
        self._slot.stop()
        if status is not None and status < 0:
            what = f"the sandbox worker was killed by signal {-status}"
        elif status is not None:
            what = f"the sandbox worker exited with status {status}"
        else:
            what = f"the sandbox worker stopped answering ({reason})"
        return ToolError(
            ErrorCode.SANDBOX_FAILURE,
            f"{what} during {op}; a new worker will be started on the next call",
            "retry the call once; if it fails again, report the failure",
            details={"op": op, "reason": reason, "worker_stderr": self._slot.stderr_tail()},
        )


class _WorkerSlot:
    """The worker, its socket and the private TMPDIR: what must not outlive the provider.

    Kept apart from the provider so a finalizer can release it when a provider
    is dropped without ``close()`` (a notebook kernel that just goes away).
    """

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.tmpdir: str | None = None

    def stop(self) -> None:
        """Close the socket (the worker then clears its sandbox and exits) and reap it."""
        sock, process = self.sock, self.process
        self.sock = self.process = None
        if sock is not None:
            sock.close()
        if process is not None:
            try:
                process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def release(self) -> None:
        self.stop()
        if self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = None

    def stderr_log(self) -> str:
        assert self.tmpdir is not None
        return os.path.join(self.tmpdir, WORKER_STDERR_LOG)

    def stderr_tail(self) -> str:
        """The end of what workers wrote to stderr: a traceback when one crashed."""
        if self.tmpdir is None:
            return ""
        try:
            with open(self.stderr_log(), "rb") as handle:
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - 2000))
                return handle.read().decode("utf-8", "replace")
        except OSError:
            return ""


def _tool_error(payload: Any) -> ToolError:
    """A ToolError from the worker's description of one, checked field by field."""
    if not isinstance(payload, dict):
        return ToolError(ErrorCode.SANDBOX_FAILURE, "the sandbox worker sent a malformed error")
    try:
        code = ErrorCode(payload.get("code"))
    except ValueError:
        return ToolError(ErrorCode.SANDBOX_FAILURE, "the sandbox worker sent an unknown error code")
    details = payload.get("details")
    violation = payload.get("security_violation")
    return ToolError(
        code,
        str(payload.get("message", "")),
        str(payload.get("hint", "")),
        security_violation=violation if isinstance(violation, bool) else None,
        details=details if isinstance(details, dict) else None,
    )


def _interpreter_paths() -> list[str]:
    """Read-only paths the worker and ordinary commands need to start and run."""
    paths = [*SYSTEM_READ_DIRS, *SYSTEM_READ_FILES]
    paths += [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    paths.append(str(Path(__file__).resolve().parent.parent))
    for name in WORKER_DEPENDENCIES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            origin = Path(spec.origin)
            paths.append(str(origin.parent if spec.submodule_search_locations else origin))
    return _unique(os.path.realpath(p) for p in paths if os.path.exists(p))


def _unique(paths: Any) -> list[str]:
    return list(dict.fromkeys(paths))
