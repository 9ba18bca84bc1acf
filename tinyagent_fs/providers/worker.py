"""The sandboxed worker: confine this process, prove it, then serve primitives.

Started by :class:`~tinyagent_fs.providers.linux.LinuxSandboxProvider` with one
socket and nothing else. The order matters and is the point of this module:

1. import everything the primitives need (after Landlock most of the disk is
   unreadable, so a late import would fail);
2. check that this is the only thread (Landlock and seccomp bind the calling
   thread and its future children, never a sibling);
3. enter new mount and PID namespaces and fork: the child, PID 1 there, does
   the rest; the process the provider started only waits (``sandbox.namespaces``);
4. pivot into a fresh root holding only the system directories, the readable
   paths and the roots (``sandbox.mount_view``); mount the protected paths
   read-only and mask the secrets the toolkit planned, by descriptor
   (``sandbox.protected_paths``, ``sandbox.secret_masks``): Landlock forbids
   mounting afterwards, which is what makes those mounts stick. A mask or nested
   protection that cannot be mounted refuses commands; file primitives go on;
5. drop every capability (``sandbox.capabilities``), then Landlock, then seccomp;
6. self-check: a file outside every root must be absent, a system binary
   unchangeable, capabilities empty, this process PID 1, new sockets refused and
   the toolkit unreachable by signals. Anything short of that is reported as
   SANDBOX_FAILURE and the worker exits before serving.

Every request is ``{"op", "args"}``; every answer ``{"ok": value}`` or
``{"error": {...}}``. A commit sent with ``"hold": true`` checks its planned hashes,
then waits for one more message, ``{"go": true}`` (or false: called off, nothing
changed), which the toolkit sends once its undo journal is recorded. After each
command every other process of the namespace is killed (a ``setsid`` daemon
included; by the ``command_launcher`` that started it, or else by the worker); the
toolkit then checks the code-running files (``sandbox.code_files``). When the
worker exits, or is killed, the kernel ends whatever is left in its PID namespace.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
import threading
from typing import Any

from ..errors import ErrorCode, ToolError
from ..ops import OPERATIONS
from . import command_launcher, session_host, wire, worker_launch
from .sandbox import (
    capabilities,
    landlock_rules,
    mount_view,
    namespaces,
    protected_paths,
    seccomp_filter,
    secret_masks,
)


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
        _enter_namespaces(sock)
        report = _confine(config)
        report["module_files"] = worker_launch.loaded_module_files()
    except ToolError as exc:
        wire.send_message(sock, {"error": _tool_error(exc)})
        os._exit(1)
    except Exception as exc:
        wire.send_message(sock, {"error": _failure(f"the sandbox could not be set up: {exc}")})
        os._exit(1)
    wire.send_message(sock, {"ok": report})
    _serve(sock, report["commands_refused"])
    os._exit(0)  # as PID 1: the kernel kills whatever is left in the namespace


def _enter_namespaces(sock: socket.socket) -> None:
    """Become PID 1 of a new PID and mount namespace; the process outside only waits."""
    if threading.active_count() != 1 or len(os.listdir("/proc/self/task")) != 1:
        raise SelfCheckFailed("another thread is running; it would escape the sandbox")
    namespaces.enter_namespaces(hangup_fd=sock.fileno())


def _confine(config: dict[str, Any]) -> dict[str, Any]:
    """Build the view, protect and mask inside it, drop capabilities, then Landlock + seccomp."""
    view = mount_view.build_view(config["writable"], config["readable"], config["tmpdir"])
    os.environ["TMPDIR"] = config["tmpdir"]
    protection = protected_paths.protect(config["protect"])
    refusal, masks = _mask_and_protect_nested(config, protection)
    mount_view.seal_root()
    os.chdir(config["protect"][0])
    capabilities.drop_all()
    capability_sets = capabilities.capability_sets()
    if any(capability_sets.values()):
        raise SelfCheckFailed(f"capabilities remain after dropping them: {capability_sets}")
    status = landlock_rules.restrict_self(
        landlock_rules.LandlockRules(
            writable=tuple(path for path in config["writable"] if path != config["tmpdir"]),
            readable=tuple(config["readable"]),
            scratch=(config["tmpdir"],),
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
        "view": view.to_dict(),
        "masks": masks.to_dict(),
        "commands_refused": refusal,
        "capabilities": capability_sets,
    }


def _mask_and_protect_nested(
    config: dict[str, Any], protection: protected_paths.Protection
) -> tuple[dict[str, Any] | None, secret_masks.MaskReport]:
    """Mount the toolkit's plan; a mount that fails refuses commands, not file tools.

    The file primitives need none of these mounts: the guard refuses denied
    paths and ``.git`` writes before a request reaches this worker.
    """
    refusal = config.get("refuse_commands")
    masks = secret_masks.MaskReport()
    if refusal is not None:
        return refusal, masks
    try:
        secret_masks.pin_folders(config["pinned"], masks)
        protected_paths.protect_nested(config["nested_git"], protection)
        secret_masks.mask_secrets(
            {
                root: [(rel, is_dir) for rel, is_dir in found]
                for root, found in config["masks"].items()
            },
            masks,
        )
    except (OSError, secret_masks.MaskFailed) as exc:
        reason = str(exc) if isinstance(exc, secret_masks.MaskFailed) else _mount_failure(exc)
        return {
            "message": f"commands are refused: {reason}",
            "hint": "Remove the secret files (.env*, keys) or nested repositories the mount "
            "table cannot hold, then retry; file tools still work.",
            "details": {"cause": "mask_failed"},
        }, masks
    return None, masks


def _mount_failure(exc: OSError) -> str:
    where = f" {exc.filename}" if exc.filename else ""
    return f"a nested .git{where} could not be protected ({exc.strerror or exc})"


def _self_check(config: dict[str, Any], status: landlock_rules.LandlockStatus) -> None:
    """Probe every wall: a probe that succeeds, or fails the wrong way, stops the worker."""
    canary = config["canary"]
    if os.path.lexists(canary) or os.path.lexists(os.path.dirname(canary)):
        raise SelfCheckFailed("a directory outside the roots is visible in the worker's view")
    gone = (errno.ENOENT, errno.EACCES)
    _expect_denied("read a file outside the roots", gone, os.open, canary, os.O_RDONLY)
    _expect_denied(
        "create a file outside the roots",
        gone,
        os.open,
        canary + ".new",
        os.O_WRONLY | os.O_CREAT,
    )
    _expect_denied("chmod a system binary", (errno.EROFS,), os.chmod, "/usr/bin/env", 0o4777)
    _expect_denied("open an AF_INET socket", (errno.EPERM,), socket.socket, socket.AF_INET)
    _expect_denied("open an AF_UNIX socket", (errno.EPERM,), socket.socket, socket.AF_UNIX)
    _expect_denied(
        "signal the toolkit", (errno.ESRCH, errno.EPERM), os.kill, config["parent_pid"], 0
    )
    if os.getpid() != 1:
        raise SelfCheckFailed(f"the worker is pid {os.getpid()}, not 1 of its own PID namespace")


def _expect_denied(action: str, expected: tuple[int, ...], func: Any, *args: Any) -> None:
    try:
        result = func(*args)
    except OSError as exc:
        if exc.errno not in expected:
            wanted = " or ".join(errno.errorcode[code] for code in expected)
            raise SelfCheckFailed(f"{action}: failed with {exc!r}, not {wanted}") from None
        return
    if isinstance(result, int):
        os.close(result)
    elif isinstance(result, socket.socket):
        result.close()
    raise SelfCheckFailed(f"the sandbox let the worker {action}")


def _serve(sock: socket.socket, refusal: dict[str, Any] | None) -> None:
    while True:
        try:
            request = wire.recv_message(sock)
        except wire.WireError:
            return
        op = request.get("op") if isinstance(request, dict) else None
        if refusal is not None and op in COMMAND_OPS:
            response = {"error": _tool_error(_refused(refusal))}
        elif op in SESSION_OPS:
            response = _session(request)
        else:
            response = _answer(request, sock)
        passed = response["ok"].pop("fd") if op == "session_start" and "ok" in response else None
        try:
            wire.send_message(sock, response)
            if passed is not None:  # the session host's socket, for the toolkit
                socket.send_fds(sock, [b"F"], [passed])
        except (TypeError, ValueError) as exc:  # never end the worker over one answer
            wire.send_message(sock, {"error": _internal(f"unsendable result: {exc}")})
        except (wire.WireError, OSError):
            return
        finally:
            if passed is not None:
                os.close(passed)


COMMAND_OPS = frozenset({"run_command", "session_start"})
SESSION_OPS = frozenset({"session_start"})
"""Interactive sessions (``session_host``): a host process per session is forked
here, and its socket passed to the toolkit."""


def _session(request: dict[str, Any]) -> dict[str, Any]:
    args = request.get("args")
    if not isinstance(args, dict):
        return {"error": _internal("bad session request")}
    try:
        return {"ok": session_host.spawn(**args)}
    except ToolError as exc:
        return {"error": _tool_error(exc)}
    except Exception as exc:
        return {"error": _internal(f"{request['op']} failed: {type(exc).__name__}: {exc}")}


class _Held:
    """A held commit's wait for the toolkit's word, ``{"go": true}`` once its undo
    journal holds the old contents (``ready`` of ``ops.commit.commit_changes``). A
    toolkit gone meanwhile is a WireError, and nothing changes."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.asked = False

    def __call__(self) -> bool:
        self.asked = True
        word = wire.recv_message(self.sock)
        return isinstance(word, dict) and word.get("go") is True


def _answer(request: Any, sock: socket.socket) -> dict[str, Any]:
    op, args = request.get("op"), request.get("args")
    operation = OPERATIONS.get(op) if isinstance(op, str) else None
    if operation is None or not isinstance(args, dict):
        return {"error": _internal(f"unknown provider operation {op!r}")}
    if op == "run_command" and session_host.sessions_live():
        response = session_host.apart(lambda: _respond(op, operation, args, sock))
        if response is None:  # the command killed its keeper: end it all, sessions too
            namespaces.end_other_processes()
            message = "the command killed the process that watched it; it was ended, and "
            return {"error": _failure(message + "every interactive session with it")}
        return response
    if op != "run_command":
        return _respond(op, operation, args, sock)
    response = _respond(op, operation, {**args, "spawn": LAUNCHER.spawn}, sock)
    if not LAUNCHER.end_others():
        namespaces.end_other_processes()
    return response


LAUNCHER = command_launcher.CommandLauncher()
"""Starts commands with their limits already set (``command_launcher``); not while
sessions live, when each command runs apart, in a keeper of its own."""


def _respond(op: str, operation: Any, args: dict[str, Any], sock: socket.socket) -> dict[str, Any]:
    held = None
    if op == "commit_changes" and args.pop("hold", False) is True:
        held = args["ready"] = _Held(sock)
    try:
        response: dict[str, Any] = {"ok": operation(**args)}
    except ToolError as exc:
        response = {"error": _tool_error(exc)}
    except PermissionError as exc:
        response = {"error": _os_error(ErrorCode.PERMISSION_DENIED, exc)}
    except OSError as exc:
        walled = exc.errno == errno.EROFS
        code = ErrorCode.PERMISSION_DENIED if walled else ErrorCode.IO_ERROR
        response = {"error": _os_error(code, exc)}
    except Exception as exc:
        response = {"error": _internal(f"{op} failed: {type(exc).__name__}: {exc}")}
    if held is not None and not held.asked:  # failed before asking: the word is still due
        with contextlib.suppress(wire.WireError):
            held()
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


def _refused(refusal: dict[str, Any]) -> ToolError:
    return ToolError(
        ErrorCode.SANDBOX_FAILURE,
        refusal["message"],
        refusal["hint"],
        details=refusal["details"],
    )


def _internal(message: str) -> dict[str, Any]:
    return _tool_error(ToolError(ErrorCode.INTERNAL_ERROR, message))


def _failure(message: str) -> dict[str, Any]:
    return _tool_error(ToolError(ErrorCode.SANDBOX_FAILURE, message))


if __name__ == "__main__":
    main(int(sys.argv[1]))
