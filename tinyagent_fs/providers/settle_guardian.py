"""The after-command check, done even when the toolkit dies during the command.

After every command the toolkit walks the roots and moves aside the files that
make git or a shell run code which the command wrote (``code_watch.settle``).
A toolkit killed while a command runs (SIGKILL, or SIGTERM without a handler)
never gets there: its worker dies with it, but a hook the command had already
planted would stay. So before each command the toolkit hands its before-walk to
a small guardian process of its own (unconfined, in its own session, started
at the first command); when the toolkit's pipe closes with a command still
pending, the guardian waits until the worker has exited (every process of the
command is gone by then), walks the roots again and quarantines, as the
toolkit would have.

The pipe carries JSON lines from the toolkit to the guardian only; its write end
is never inherited by the worker, so no command can reach the guardian.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import select
import signal
import subprocess
from typing import Any

from .sandbox import code_files
from .worker_launch import bare_argv

WORKER_EXIT_WAIT_S = 30.0
"""How long a pending worker gets to exit after the toolkit died; it is killed then.
It hears the hang-up at once, so this is only reached when it is wedged."""


class GuardianUnavailable(OSError):
    """The guardian could not be started or told about a command."""


class SettleGuardian:
    """The toolkit's side: one guardian process per provider, told about each command."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._pipe: int | None = None

    def pending(self, worker_pid: int, roots: list[str], before: code_files.CodeFiles) -> None:
        """Before a command is sent: settle for it if the toolkit dies before :meth:`settled`."""
        self._tell({"worker": worker_pid, "roots": roots, "before": _to_json(before)})

    def settled(self) -> None:
        """The toolkit did the after-walk itself (or the command never ran)."""
        with contextlib.suppress(GuardianUnavailable):
            self._tell(None)

    def close(self) -> None:
        """End the guardian with nothing pending; it exits at once."""
        pipe, self._pipe = self._pipe, None
        if pipe is not None:
            os.close(pipe)
        process, self._process = self._process, None
        if process is not None:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def _tell(self, pending: dict[str, Any] | None) -> None:
        line = (json.dumps({"pending": pending}) + "\n").encode()
        for attempt in range(2):
            if self._pipe is None or self._process is None or self._process.poll() is not None:
                self.close()
                self._start()
            assert self._pipe is not None
            try:
                _write_all(self._pipe, line)
                return
            except OSError as exc:
                if attempt:
                    raise GuardianUnavailable(
                        f"the guardian did not take the command: {exc}"
                    ) from None
                self.close()

    def _start(self) -> None:
        read_end, write_end = os.pipe()
        try:
            self._process = subprocess.Popen(
                bare_argv("settle_guardian", read_end),
                pass_fds=(read_end,),
                close_fds=True,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            os.close(write_end)
            raise GuardianUnavailable(f"the guardian could not start: {exc}") from None
        finally:
            os.close(read_end)
        self._pipe = write_end


def main(fd: int) -> None:
    """The guardian: follow the toolkit's pipe; at its end, settle what is still pending."""
    pending: dict[str, Any] | None = None
    worker: int | None = None
    with os.fdopen(fd, "rb") as pipe:
        for line in pipe:
            if worker is not None:
                os.close(worker)
                worker = None
            pending = json.loads(line)["pending"]
            if pending is not None:
                worker = _pidfd(pending["worker"])
    if pending is None:
        return
    if worker is not None:
        _wait_for_exit(worker)
    before = _from_json(pending["before"])
    after = code_files.scan(pending["roots"], before)
    code_files.quarantine(code_files.to_quarantine(before, after))


def _pidfd(pid: int) -> int | None:
    """A handle on the worker taken while the toolkit still lives, so its pid is not reused."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None


def _wait_for_exit(worker: int) -> None:
    poller = select.poll()
    poller.register(worker, select.POLLIN)
    if not poller.poll(WORKER_EXIT_WAIT_S * 1000):
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(worker, signal.SIGKILL)
        poller.poll(WORKER_EXIT_WAIT_S * 1000)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _to_json(found: code_files.CodeFiles) -> dict[str, Any]:
    """A walk as JSON: each keyed table as rows of (root, path, values...)."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(found):
        value = getattr(found, field.name)
        if isinstance(value, dict):
            out[field.name] = [[*key, list(item)] for key, item in value.items()]
        else:
            out[field.name] = list(value)
    return out


def _from_json(data: dict[str, Any]) -> code_files.CodeFiles:
    found = code_files.CodeFiles()
    for field in dataclasses.fields(found):
        value = getattr(found, field.name)
        rows = data.get(field.name, [])
        if isinstance(value, dict):
            value.update({(root, path): tuple(item) for root, path, item in rows})
        else:
            value.extend(rows)
    return found
