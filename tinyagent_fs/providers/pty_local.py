"""An unconfined session host for ``LocalProvider`` (``allow_unconfined_commands``):
``session_host`` run in a fresh interpreter of its own, not forked from the
toolkit (forking a process with threads is unsafe). It ends the session when
the toolkit's socket closes, so a session does not outlive its toolkit, but
unconfined, a process that left the command's process group (``setsid``) may."""

from __future__ import annotations

import os
import socket
import subprocess

from ..errors import ErrorCode, ToolError
from . import session_host, wire
from .worker_launch import bare_argv


def start(args: dict[str, object]) -> tuple[socket.socket, subprocess.Popen[bytes]]:
    """A host started for ``args`` (``session_host.spawn``'s) and the toolkit's end of its
    socket."""
    toolkit_end, host_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        process = subprocess.Popen(
            bare_argv("pty_local", host_end.fileno()),
            pass_fds=(host_end.fileno(),),
            close_fds=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        toolkit_end.close()
        raise ToolError(ErrorCode.IO_ERROR, f"cannot start the session: {exc}") from None
    finally:
        host_end.close()
    wire.send_message(toolkit_end, args)
    return toolkit_end, process


def main(fd: int) -> None:
    session_host.host_here(fd)
