"""The sandboxed worker: confine this process, prove it, then serve primitives.

Started by :class:`~tinyagent_fs.providers.linux.LinuxSandboxProvider` with one
socket and nothing else. The order matters and is the point of this module:

1. import everything the primitives need (after Landlock most of the disk is
   unreadable, so a late import would fail);
2. check that this is the only thread (Landlock and seccomp bind the calling
   thread and its future children, never a sibling);
3. mount the protected paths read-only in a private namespace (Landlock
   forbids mounting afterwards, which is what makes those mounts stick);
4. Landlock, then seccomp;
5. self-check: a file outside every root must be unreadable and uncreatable,
   new sockets refused and the toolkit unreachable by signals. Anything short of
   that is reported as SANDBOX_FAILURE and the worker exits before serving.

Every request is ``{"op", "args"}``; every answer ``{"ok": value}`` or
``{"error": {...}}``. After every command, and when the parent closes the
socket, the worker kills and reaps what commands left in its Landlock domain
(signals are scoped to it; see ``sandbox.leftovers``). A worker that is itself
SIGKILLed cannot do that; the toolkit then kills what is left in the worker's
pids cgroup, where one could be made.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
import threading
from typing import Any

from ..errors import ErrorCode, ToolError
from ..ops import OPERATIONS
from ..sandbox import landlock_rules, leftovers, protected_paths, seccomp_filter
from . import wire, worker_launch


class SelfCheckFailed(Exception):
    """The kernel accepted the rules but a probe shows they do not hold."""


def main(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    sock.set_inheritable(False)
    config = wire.recv_message(sock)
    try:
        worker_launch.refuse_writable(
            worker_launch.loaded_module_files(), config["writable"], "the worker loaded"
        )
        report = _confine(config)
        report["module_files"] = worker_launch.loaded_module_files()
    except ToolError as exc:
        wire.send_message(sock, {"error": _tool_error(exc)})
        os._exit(1)
    except Exception as exc:
        wire.send_message(sock, {"error": _failure(f"the sandbox could not be set up: {exc}")})
        os._exit(1)
    wire.send_message(sock, {"ok": report})
    scoped = bool(report["landlock"]["scoped"] & landlock_rules.SCOPE_SIGNAL)
    leftovers.become_subreaper()
    _serve(sock, protected_paths.candidates(config["protect"]), scoped)
    if scoped:
        leftovers.kill_domain()
    os._exit(0)


def _confine(config: dict[str, Any]) -> dict[str, Any]:
    if threading.active_count() != 1 or len(os.listdir("/proc/self/task")) != 1:
        raise SelfCheckFailed("another thread is running; it would escape the sandbox")
    protection = protected_paths.protect(config["protect"])
    if config.get("tmpdir"):
        os.environ["TMPDIR"] = config["tmpdir"]
    status = landlock_rules.restrict_self(
        landlock_rules.LandlockRules(
            writable=tuple(config["writable"]), readable=tuple(config["readable"])
        )
    )
    skipped = seccomp_filter.install_filter()
    if seccomp_filter.filter_mode() != seccomp_filter.SECCOMP_MODE_FILTER:
        raise SelfCheckFailed("the kernel does not report the seccomp filter as active")
    _self_check(config, status)
    return {
        "pid": os.getpid(),
        "landlock": status.to_dict(),
        "seccomp": {"mode": "filter", "skipped": skipped},
        "protection": protection.to_dict(),
    }


def _self_check(config: dict[str, Any], status: landlock_rules.LandlockStatus) -> None:
    canary = config["canary"]
    _expect_denied("read a file outside the roots", errno.EACCES, os.open, canary, os.O_RDONLY)
    _expect_denied(
        "create a file outside the roots",
        errno.EACCES,
        os.open,
        canary + ".new",
        os.O_WRONLY | os.O_CREAT,
    )
    _expect_denied("open an AF_INET socket", errno.EPERM, socket.socket, socket.AF_INET)
    _expect_denied("open an AF_UNIX socket", errno.EPERM, socket.socket, socket.AF_UNIX)
    if status.scoped & landlock_rules.SCOPE_SIGNAL:
        _expect_denied("signal the toolkit", errno.EPERM, os.kill, config["parent_pid"], 0)


def _expect_denied(action: str, expected: int, func: Any, *args: Any) -> None:
    try:
        result = func(*args)
    except OSError as exc:
        if exc.errno != expected:
            wanted = errno.errorcode[expected]
            raise SelfCheckFailed(f"{action}: failed with {exc!r}, not {wanted}") from None
        return
    if isinstance(result, int):
        os.close(result)
    elif isinstance(result, socket.socket):
        result.close()
    raise SelfCheckFailed(f"the sandbox let the worker {action}")


def _serve(sock: socket.socket, watched: list[str], scoped: bool) -> None:
    """Answer requests until the toolkit closes the socket.

    After every command, whatever it left running (``setsid``, double fork,
    ``nohup``) is killed and reaped before the answer goes back, so nothing a
    command started outlives its call; that needs Landlock signal scoping
    (kill(-1) from here then reaches this sandbox only), and without it only
    the command's own process group is killed.
    """
    while True:
        try:
            request = wire.recv_message(sock)
        except wire.WireError:
            return
        response = _answer(request, watched)
        if scoped and isinstance(request, dict) and request.get("op") == "run_command":
            leftovers.kill_domain()
        try:
            wire.send_message(sock, response)
        except TypeError as exc:
            wire.send_message(sock, {"error": _internal(f"unsendable result: {exc}")})
        except wire.WireError:
            return


def _answer(request: Any, watched: list[str]) -> dict[str, Any]:
    op, args = request.get("op"), request.get("args")
    operation = OPERATIONS.get(op) if isinstance(op, str) else None
    if operation is None or not isinstance(args, dict):
        return {"error": _internal(f"unknown provider operation {op!r}")}
    before = protected_paths.snapshot(watched) if op == "run_command" else None
    try:
        response: dict[str, Any] = {"ok": operation(**args)}
    except ToolError as exc:
        response = {"error": _tool_error(exc)}
    except PermissionError as exc:
        response = {"error": _os_error(ErrorCode.PERMISSION_DENIED, exc)}
    except OSError as exc:
        response = {"error": _os_error(ErrorCode.IO_ERROR, exc)}
    except Exception as exc:
        response = {"error": _internal(f"{op} failed: {type(exc).__name__}: {exc}")}
    if before is not None:
        changed = protected_paths.changed(before, protected_paths.snapshot(watched))
        if changed:
            response["restart"] = True
            if isinstance(response.get("ok"), dict):
                response["ok"]["protected_paths_changed"] = changed
    return response


def _tool_error(exc: ToolError) -> dict[str, Any]:
    details = exc.details
    try:
        wire.encode(details)
    except TypeError:
        details = {key: repr(value) for key, value in details.items()}
    return {
        "code": exc.code.value,
        "message": exc.message,
        "hint": exc.hint,
        "security_violation": exc.security_violation,
        "details": details,
    }


def _os_error(code: ErrorCode, exc: OSError) -> dict[str, Any]:
    where = f"{exc.filename}: " if exc.filename else ""
    return _tool_error(
        ToolError(
            code,
            f"{where}{exc.strerror or exc}",
            "the sandbox allows reads only inside its roots and writes only in writable ones"
            if code is ErrorCode.PERMISSION_DENIED
            else "",
            details={"errno": exc.errno},
        )
    )


def _internal(message: str) -> dict[str, Any]:
    return _tool_error(ToolError(ErrorCode.INTERNAL_ERROR, message))


def _failure(message: str) -> dict[str, Any]:
    return _tool_error(ToolError(ErrorCode.SANDBOX_FAILURE, message))


if __name__ == "__main__":
    main(int(sys.argv[1]))
