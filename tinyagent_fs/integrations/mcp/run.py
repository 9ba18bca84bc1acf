"""What ``tinyagent-fs mcp`` runs: check the command line, serve over stdio, clean up.

The toolkits are built on a thread while the server already answers: probing
the kernel sandbox and compiling each folder's guard would otherwise delay the
client's handshake; only tool calls wait for them. A toolkit that cannot be
built (no sandbox where one was required) ends the server with a usage error.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...audit.log import AuditLog
from ...hooks.policies import policy_from_name
from ...hooks.web import WebApprovalHook
from ...limits import ResourceLimiter
from ...policy import SandboxPolicy
from ...providers import make_provider
from ...providers.base import Provider
from ...tools.facade import FileTools
from .approval import ElicitationApprover
from .roots import ServedRoots
from .server import McpServer
from .stdio import StdioLines
from .wire import JsonRpcConnection

USAGE_ERROR = 2


def main(
    roots: Sequence[str],
    policy: str | None = None,
    provider: str = "auto",
    audit_dir: str | None = None,
    *,
    max_requests_per_minute: int = SandboxPolicy.max_requests_per_round,
    max_bytes_per_minute: int = SandboxPolicy.max_bytes_per_round,
    allow_unconfined_commands: bool = False,
    approve_in: str = "client",
    jupyter_url: str | None = None,
    approval_timeout_s: float = 600.0,
) -> int:
    """Serve the folders until stdin closes; 0, or USAGE_ERROR for a bad command line.

    The served folders share one provider (one sandbox worker whose writable
    roots are exactly them, see ``mcp_roots``); the per-minute budgets (0 = off)
    are shared. Without the kernel sandbox run_command is refused unless
    ``allow_unconfined_commands``. ``approve_in="jupyter"`` puts changes to the
    person in JupyterLab's sidebar instead of the client (``hooks.web``).
    """
    if max_requests_per_minute < 0 or max_bytes_per_minute < 0:
        return _usage("per-minute limits must be 0 (off) or more")
    folders = [Path(root) for root in roots] or [Path(".")]
    missing = [str(folder) for folder in folders if not folder.is_dir()]
    if missing:
        return _usage(f"not an existing directory: {', '.join(missing)}")
    try:
        hook = policy_from_name(
            policy, approver=_approver(approve_in, folders[0], jupyter_url, approval_timeout_s)
        )
    except ValueError as exc:
        return _usage(str(exc))
    limits = SandboxPolicy(
        max_requests_per_round=max_requests_per_minute,
        max_bytes_per_round=max_bytes_per_minute,
        allow_unconfined_commands=allow_unconfined_commands,
    )
    # Everything imported so far lives until exit: freezing it keeps the collector
    # from walking it on every pass and at interpreter shutdown.
    gc.freeze()
    return asyncio.run(_serve(folders, limits, provider, hook, AuditLog(audit_dir)))


def _approver(where: str, project: Path, url: str | None, timeout_s: float) -> Any:
    if where == "client":
        return ElicitationApprover()
    if where != "jupyter":
        raise ValueError(f"--approve-in must be client or jupyter, not {where!r}")
    if timeout_s <= 0:
        raise ValueError("--approval-timeout must be more than 0 seconds")
    return WebApprovalHook(
        url=url,
        project=project,
        timeout_s=timeout_s,
        origin=f"tinyagent-fs mcp (pid {os.getpid()})",
    )


def _usage(message: str) -> int:
    print(f"tinyagent-fs mcp: {message}", file=sys.stderr)
    return USAGE_ERROR


async def _serve(
    folders: list[Path], limits: SandboxPolicy, provider: str, hook: Any, audit: AuditLog
) -> int:
    loop = asyncio.get_running_loop()
    limiter = ResourceLimiter(limits.max_requests_per_round, limits.max_bytes_per_round)
    built = loop.run_in_executor(None, _build, folders, limits, provider, hook, audit, limiter)
    roots = asyncio.ensure_future(_roots_of(built))
    configured = [os.path.realpath(folder) for folder in folders]
    server = McpServer(configured, roots, limiter, audit)
    stop = asyncio.Event()
    failure: list[BaseException] = []

    def check(done: asyncio.Future[Any]) -> None:
        if done.exception() is not None:
            failure.append(done.exception())  # type: ignore[arg-type]
            stop.set()

    built.add_done_callback(check)
    try:
        await serve_stdio(server, stop)
    finally:
        if built.done() and not built.exception():
            with contextlib.suppress(Exception):
                await built.result().provider.close()
    if failure:
        return _usage(str(failure[0]))
    return 0


def _build(
    folders: list[Path],
    limits: SandboxPolicy,
    provider: str,
    hook: Any,
    audit: AuditLog,
    limiter: ResourceLimiter,
) -> ServedRoots:
    def policy(served: Sequence[str]) -> SandboxPolicy:
        return dataclasses.replace(limits, extra_writable_dirs=tuple(map(Path, served[1:])))

    def shared(served: Sequence[str]) -> Provider:
        return make_provider(provider, Path(served[0]), policy(served))

    def toolkit(folder: Path, shared: Provider, served: Sequence[str]) -> FileTools:
        return FileTools(folder, policy(served), shared, [hook], audit, limiter=limiter)

    return ServedRoots(folders, shared, toolkit)


async def _roots_of(built: asyncio.Future[ServedRoots]) -> ServedRoots:
    return await built


async def serve_stdio(server: McpServer, stop: asyncio.Event) -> None:
    """Serve over stdin/stdout until the client closes stdin, SIGTERM arrives or ``stop``.

    On end of input, calls still running finish and are answered; on a signal,
    reads and commands are stopped and only changes under way finish.
    """
    lines = StdioLines()
    connection = JsonRpcConnection(lines.write, server.on_request, server.on_notification)
    server.connection = connection
    loop = asyncio.get_running_loop()
    signals = _on_signals(loop, stop.set)
    try:
        await lines.start(connection.feed, connection.eof)
        ended = [
            asyncio.ensure_future(connection.closed.wait()),
            asyncio.ensure_future(stop.wait()),
        ]
        await asyncio.wait(ended, return_when=asyncio.FIRST_COMPLETED)
        for waiter in ended:
            waiter.cancel()
        await connection.shut_down(interrupt=stop.is_set())
        await lines.flush()
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)
        lines.close()


def _on_signals(loop: asyncio.AbstractEventLoop, stop: Callable[[], None]) -> list[int]:
    """Stop on SIGTERM and SIGINT where the loop can take signals (not on Windows)."""
    taken = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(signum, stop)
        except NotImplementedError:
            break
        taken.append(signum)
    return taken
