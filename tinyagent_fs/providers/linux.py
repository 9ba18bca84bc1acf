"""LinuxSandboxProvider: primitives run in a worker confined by Landlock and seccomp.

The worker is started on first use and kept; every call is one request and one
answer over a socketpair (see ``wire``), answered in order; a lock gives the
socket to one caller at a time. Reads (files, stats, listings, searches) from
an event loop are sent from the loop, several ahead of their answers, and
answered there without blocking it (``reply_queue``); a lone one takes its
quick answer at once. The rest (a busy or absent worker, commands, commits,
reads of many files) run on a thread of the provider's own, so any event loop
(or a plain thread) may call. Calls from one loop keep their order:
one that cannot be sent ahead waits for the queue to drain, and later ones wait
behind it. The toolkit process itself is never restricted.

Every request has a deadline. A worker that dies, is stopped (SIGSTOP), stalls
past its deadline, or answers with something that is not a frame is killed;
the call in flight gets SANDBOX_FAILURE, and the next call starts a fresh worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import ErrorCode, ToolError
from ..ops.command import KILL_GRACE_S
from ..policy import SandboxPolicy
from . import code_watch, sessions, wire, worker_launch
from .base import Provider
from .hang_up import COMMAND_KILLED, HangUp
from .reply_queue import STALL_CHECK_S, ReplyQueue, WorkerStalled
from .sandbox.code_files import CodeFiles
from .sandbox.pids_cgroup import PidsCgroup, processes_of_this_user
from .sandbox.probe import sandbox_support
from .sandbox.secret_masks import MaskPlan, plan_masks
from .sandbox_sessions import SandboxSessions
from .secret_guard import SecretGuard
from .settle_guardian import GuardianUnavailable, SettleGuardian
from .worker_slot import WorkerSlot

COMMAND_MARGIN_S = 5.0
EXIT_WAIT_S = 0.5
"""How long a worker whose socket closed gets to be reaped, to tell a crash from a stall."""
QUICK_OPS = frozenset({"read_bytes", "read_window", "stat_path", "stat_paths", "ping"})
"""Sent from the loop: small requests, answered by bounded work."""
QUICK_TIMEOUT_S = 30.0
HELD_FROM = 32
"""Files in a commit from which it is held while the journal is recorded (see
:meth:`LinuxSandboxProvider.commit`). Measured in turns: a held one-file write was
0.13 ms (4 KB) to 0.25 ms (1 MB) slower than one sent after its journal, the word
costing a loop wake-up and a thread hand-off more than the overlap saves; a patch of
hundreds of files gains the milliseconds its checks take."""
HELD_FROM_BYTES = 256 * 1024
"""New bytes from which a commit of fewer files is held too: the worker writes them,
unnamed, while the journal is recorded and the new content's digest computed here
(a 1 MB write_file 2.35-2.54x ``raw_atomic_write`` against 2.73-2.90x, in turns)."""
LOOP_COMMIT_BYTES = 64 * 1024
"""New bytes up to which a commit not held (see ``HELD_FROM``) is sent from the loop, as
a quick call is, rather than from the provider's thread: it spares the hop to the
thread and back (measured in turns, a 4 KB write_file 1.18-1.32 ms against 1.34-1.46).
Its request stays far below what the socket buffers (about 208 KB), so the loop's send
never waits for a worker busy sending answers."""
SCAN_OPS = frozenset({"list_tree", "glob_files", "grep", "walk_all"})
"""Sent from the loop too: small requests that only read, though their work and
answer can be large (a large answer is read on a thread); they keep the full deadline."""


class LinuxSandboxProvider(SandboxSessions, SecretGuard, Provider):
    """Runs ``ops`` primitives in a Landlock + seccomp confined worker process.

    Writes are allowed beneath ``root``, ``policy.extra_writable_dirs`` and
    ``writable_roots`` (plus a private TMPDIR the provider owns); reads beneath
    those, ``policy.extra_read_dirs``, ``read_roots`` and what the interpreter
    and common tools need (/usr, the Python prefixes, a few files of /etc).
    Metadata (stat, existence) is not hidden by Landlock; contents are.

    Inside writable roots, git hooks, git config and shell rc files stay
    read-only for commands (see ``sandbox.protected_paths``). Around each
    command the toolkit walks the roots itself (``code_watch``): a
    ``run_command`` result carries ``protected_paths_changed`` when one of
    them appeared or changed anyway, and ``protected_paths_quarantined`` for
    what was moved aside; the worker is then replaced so the next call
    protects it. Before every command the secret masks are planned again (see
    ``sandbox.secret_masks``); a worker whose masks differ is replaced first.
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
        read_dirs = _unique(str(Path(p).resolve()) for p in [*policy.extra_read_dirs, *read_roots])
        self._readable = read_dirs + worker_launch.readable_paths()
        self._masked_dirs = _unique([*self._protect, *read_dirs])
        """Where secrets are masked from commands: the roots and the readable directories."""
        self._worker_plan: tuple[object, ...] | None = None
        self._worker_secrets: tuple[object, ...] | None = None
        self._lock = threading.Lock()
        self._turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        """Per event loop: who starts the next queue or goes by the thread, in arrival order."""
        self._queue: ReplyQueue | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._finisher: ThreadPoolExecutor | None = None
        """Reads answers still arriving for a loop's queue, which holds the lock; never
        waits for the lock, so a call queued on ``_executor`` and blocked on the lock
        cannot sit in front of the read that lets the queue release it."""
        self._commands: set[HangUp] = set()
        """Commands sent from an event loop and not yet answered: ``close`` ends them."""
        self._slot = WorkerSlot()
        self.sessions = sessions.SessionTable(policy.max_sessions)
        self._session_threads: ThreadPoolExecutor | None = None
        self._sessions_settled = 0
        self._copies_left: list[str] = []
        """Files changed while a secret was visible to sessions that could not be
        quarantined: every call is refused until they are gone."""
        self._slot.on_stop = _weakly(self, LinuxSandboxProvider._sessions_lost)
        self._guardian = SettleGuardian()
        self._unsettled: CodeFiles | None = None
        """The before-walk of a command or session whose after-walk failed (a folder it
        could not search): walked against again before the next command or session, so
        what it planted is not taken for the person's once the folder is fixed."""
        self._finalizer = weakref.finalize(self, _release, self._slot, self._guardian)
        self._protected: dict[tuple[str, str], tuple[int, int]] = {}
        """Identity of each file the current worker protects, as the toolkit saw it."""
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

    async def call(self, op: str, *, word: _CommitGoAhead | None = None, **kwargs: Any) -> Any:
        """Reads through this loop's reply queue; the rest via the provider's thread.

        A round trip is tens of µs, less than a hop to a thread and back, and a
        queue keeps the worker busy while the loop serves other work. Starting
        the worker never runs on the loop. ``word``: see :meth:`commit`.
        """
        loop = asyncio.get_running_loop()
        from_loop = (
            op in QUICK_OPS or op in SCAN_OPS or (word is None and _small_commit(op, kwargs))
        )
        timeout = self.call_timeout_s
        if op in QUICK_OPS:
            timeout = min(timeout, QUICK_TIMEOUT_S)
        while True:
            queue = self._open_queue(loop)
            if queue is not None:
                if from_loop and queue.takes():
                    if queue.full():
                        await queue.room()
                        continue
                    return await queue.send(op, kwargs, timeout)
                queue.draining = True
                await asyncio.shield(queue.idle)
                continue
            turn = self._turns.get(loop)
            if turn is None:
                turn = self._turns[loop] = asyncio.Lock()
            async with turn:
                if self._open_queue(loop) is not None:
                    continue  # started while this call waited for its turn
                if op == "run_command":
                    return await self._command(loop, kwargs)
                if not from_loop or not self._worker_alive() or not self._lock.acquire(False):
                    job = partial(self.call_sync, op, kwargs, word)
                    return await loop.run_in_executor(self._thread(), job)
                assert self._slot.sock is not None
                self._queue = ReplyQueue(loop, self._slot.sock, self)
                answer = self._queue.send(op, kwargs, timeout)
            return await answer

    async def _command(self, loop: asyncio.AbstractEventLoop, kwargs: dict[str, Any]) -> Any:
        """Run a command on the provider's thread; cancelled, it is killed before this returns.

        The cancel hangs up the worker's socket: the process that started the
        worker kills it at once, and with it every process of its namespace
        (``sandbox.namespaces``); the thread then reaps the worker, and the next
        call starts a fresh one. A command not sent yet is never sent.
        """
        hang_up = HangUp()
        running = loop.run_in_executor(
            self._thread(), partial(self.call_sync, "run_command", kwargs, hang_up=hang_up)
        )
        self._commands.add(hang_up)
        running.add_done_callback(lambda _: self._commands.discard(hang_up))
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError as cancelled:
            running.add_done_callback(_retrieved)
            if not hang_up.now():
                raise
            await asyncio.wait((running,))
            if running.exception() is None:
                raise  # it ended on its own just before the cancel
            why = "; ".join([*map(str, cancelled.args), COMMAND_KILLED])
            raise asyncio.CancelledError(why) from None

    async def commit(
        self, change_id: str, changes: list[dict[str, Any]], before: Callable[[], None]
    ) -> dict[str, Any]:
        """The commit sent to the worker, which holds it once it has checked the planned
        hashes; ``before`` runs on this loop while the request goes out and is checked,
        and only then is the worker told to go on (or, when ``before`` failed, to stop
        with nothing changed). Sending the contents and checking hundreds of files cost
        about what recording the undo journal costs here: they overlap instead of
        adding up. A commit of fewer than ``HELD_FROM`` files and ``HELD_FROM_BYTES`` new
        bytes is sent after ``before``."""
        if len(changes) < HELD_FROM and _new_bytes(changes) < HELD_FROM_BYTES:
            return await super().commit(change_id, changes, before)
        word = _CommitGoAhead(asyncio.get_running_loop())
        answer = asyncio.ensure_future(
            self.call("commit_changes", word=word, change_id=change_id, changes=changes)
        )
        try:
            await asyncio.wait((word.sending, answer), return_when=asyncio.FIRST_COMPLETED)
            if word.sending.done():
                try:
                    before()
                except BaseException:
                    word.verdict.set_result(False)
                    await asyncio.wait((answer,))  # the worker's "called off", not news
                    raise
                word.verdict.set_result(True)
            report: dict[str, Any] = await answer
            return report
        finally:
            if not word.verdict.done():  # cancelled while held: the worker stops, changing nothing
                word.verdict.set_result(False)
            word.sending.cancel()
            answer.add_done_callback(_retrieved)

    def _open_queue(self, loop: asyncio.AbstractEventLoop) -> ReplyQueue | None:
        """This loop's queue while it takes answers; another loop's makes calls go by the
        thread, as it holds the lock."""
        queue = self._queue
        return queue if queue is not None and not queue.closed and queue.loop is loop else None

    # --- what a reply queue needs (``reply_queue.QueueOwner``) ---------------

    def send_request(self, op: str, kwargs: dict[str, Any], sock: socket.socket) -> None:
        self._send(op, kwargs, sock)

    def lost(self, op: str, exc: BaseException) -> ToolError:
        """The worker replaced after ``exc`` (a ``WorkerStalled`` or ``WireError``) on ``op``."""
        if isinstance(exc, WorkerStalled):
            return self._worker_lost(op, "it is stopped (SIGSTOP)", stalled=True)
        return self._worker_lost(op, str(exc), stalled="timed out" in str(exc))

    def worker_socket(self) -> socket.socket | None:
        return self._slot.sock

    def is_stopped(self) -> bool:
        return self._slot.is_stopped()

    def finishing_thread(self) -> ThreadPoolExecutor:
        if self._finisher is None:
            self._finisher = ThreadPoolExecutor(1, thread_name_prefix="tinyagent-fs-finish")
        return self._finisher

    def release(self) -> None:
        self._lock.release()

    def call_sync(
        self,
        op: str,
        kwargs: dict[str, Any],
        word: _CommitGoAhead | None = None,
        *,
        hang_up: HangUp | None = None,
    ) -> Any:
        """The blocking form of :meth:`call`, for callers that have no event loop.

        ``word``: the request holds the worker once it is ready to change files (see
        :meth:`commit`); the caller is told when the request is going out, and its
        answer (go on, or not) is sent on before the reply is awaited. ``hang_up``:
        may end the worker while this call waits for it (see :meth:`_command`).
        """
        timeout = self.call_timeout_s
        if op == "run_command":
            timeout = float(kwargs.get("timeout_s", 0)) + KILL_GRACE_S + COMMAND_MARGIN_S
            kwargs = {"limits": self._command_limits(), **kwargs}
            self._collect_ended()
        with self._lock:
            before = None
            if op == "run_command":
                before = self._walked_and_masked()
            sock = self._ensure_worker(known=before)
            armed = hang_up.armed(sock, self._slot.stop) if hang_up else contextlib.nullcontext()
            with armed, self._settled_even_if_we_die(before):
                return self._exchange(op, kwargs, sock, timeout, word, before)

    @contextlib.contextmanager
    def _settled_even_if_we_die(self, before: CodeFiles | None) -> Iterator[None]:
        """A command's after-walk handed to the guardian for as long as it may be pending."""
        if before is None:
            yield
            return
        assert self.worker_pid is not None
        try:
            oldest = self.sessions.oldest_before()
            self._guardian.pending(self.worker_pid, self._protect, oldest or before)
        except GuardianUnavailable as exc:
            raise ToolError(
                ErrorCode.SANDBOX_FAILURE,
                f"the command was not run: {exc}, so what it wrote would go unchecked "
                "if the toolkit died meanwhile",
                details={"cause": "guardian_unavailable"},
            ) from None
        try:
            yield
        finally:
            self._guardian_update()

    def _guardian_update(self) -> None:
        """The guardian told what is pending now: the oldest session not yet settled
        (its before-walk covers every later one), or nothing."""
        oldest = self.sessions.oldest_before()
        if oldest is None or self.worker_pid is None:
            self._guardian.settled()
            return
        with contextlib.suppress(GuardianUnavailable):
            self._guardian.pending(self.worker_pid, self._protect, oldest)

    def _exchange(
        self,
        op: str,
        kwargs: dict[str, Any],
        sock: socket.socket,
        timeout: float,
        word: _CommitGoAhead | None,
        before: CodeFiles | None,
    ) -> Any:
        """Send one request and take its reply; the caller holds the lock. ``before``:
        the code-running files walked before a command, checked again after it."""
        if word is not None:
            kwargs = {**kwargs, "hold": True}
            word.going()
        self._send(op, kwargs, sock)
        if word is not None:
            try:
                wire.send_message(sock, {"go": word.go_on(timeout)})
            except wire.WireError as exc:
                raise self._worker_lost(op, str(exc)) from None
        deadline = time.monotonic() + timeout  # after a worker start, which has its own
        cgroup = self._slot.cgroup if op == "run_command" else None
        hits = cgroup.limit_hits() if cgroup else 0
        if before is None:
            result = self._finish(op, deadline)
        else:
            result = self._finish_command(deadline, before)
        if cgroup and cgroup.limit_hits() > hits:
            _note_limit(result, "processes", self.policy.max_command_processes)
        return result

    def _walked_and_masked(self) -> CodeFiles:
        """The before-walk of a command or session, its masks planned; walked again when
        replacing the worker ended sessions, whose after-walks quarantined meanwhile."""
        settled = self._sessions_settled
        before = self._before_command()
        self._mask_for_command(before)
        if self._sessions_settled != settled:
            before = self._before_command()
            self._mask_for_command(before)
        return before

    def _before_command(self) -> CodeFiles:
        """The code-running files now; a worker whose protections are not on these very
        files any more (a person's ``git config`` renames a new file over the bound one,
        a ``git clone`` adds a repository) is replaced before the command runs."""
        if self._unsettled is not None:  # the last after-walk failed: finish it first
            code_watch.settle(self._protect, self._unsettled, None)
            self._unsettled = None
        before = code_watch.scan(self._protect)
        code_watch.refuse_unsearched(before)
        if self._worker_alive() and before.protectable != self._protected:
            self._slot.stop()
        return before

    def _finish_command(self, deadline: float, before: CodeFiles) -> Any:
        """The command's reply, then the toolkit's own check of what it wrote (even when
        the worker was lost: its processes are gone with its PID namespace)."""
        self._unsettled = before  # until an after-walk against it has finished
        try:
            result = self._finish("run_command", deadline)
        except ToolError:
            if code_watch.settle(self._protect, before, None):
                self._slot.stop()
            self._unsettled = None
            raise
        try:
            if code_watch.settle(self._protect, before, result):
                self._slot.stop()  # the next worker protects what is there now
        except ToolError:
            self._slot.stop()
            raise
        self._unsettled = None
        return result

    def _send(
        self, op: str, kwargs: dict[str, Any], sock: socket.socket | None = None
    ) -> socket.socket:
        """Send one request to ``sock``, or to a worker started now; the caller holds the lock."""
        sock = sock or self._ensure_worker()
        self._refuse_after_a_secret_appeared(op)
        try:
            wire.send_message(sock, {"op": op, "args": kwargs})
        except TypeError as exc:
            raise ToolError(ErrorCode.INVALID_ARGUMENT, f"{op}: {exc}") from None
        except wire.WireError as exc:
            raise self._worker_lost(op, str(exc)) from None
        return sock

    def _finish(self, op: str, deadline: float) -> Any:
        """The reply to the request just sent, by ``deadline``; the caller holds the lock."""
        try:
            reply = self._await_reply(deadline)
        except (WorkerStalled, wire.WireError) as exc:
            raise self.lost(op, exc) from None
        return self.unpack(op, reply)

    def unpack(self, op: str, reply: Any) -> Any:
        """The result a reply carries, or its error raised; a reply that is not one
        replaces the worker."""
        if not isinstance(reply, dict) or ("ok" not in reply and "error" not in reply):
            raise self._worker_lost(op, "it answered with something that is not a reply")
        if "error" in reply:
            raise _tool_error(reply["error"])
        return reply["ok"]

    def _await_reply(self, deadline: float) -> Any:
        """Wait for a frame in slices, checking between them that the worker is not stopped."""
        sock = self._slot.sock
        assert sock is not None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise wire.WireError("timed out waiting for the peer")
            if wire.wait_readable(sock.fileno(), min(left, STALL_CHECK_S)):
                return wire.recv_message(sock, deadline)
            if self._slot.is_stopped():
                raise WorkerStalled

    def _command_limits(self) -> dict[str, int | None]:
        """Per-command rlimits from the policy; processes by rlimit only without a pids cgroup."""
        policy = self.policy
        processes = None
        if self._slot.cgroup is None:
            processes = processes_of_this_user() + policy.max_command_processes
        return {
            "cpu_s": policy.max_command_cpu_s,
            "memory_bytes": policy.max_command_memory_bytes,
            "file_bytes": policy.max_command_file_bytes,
            "processes": processes,
        }

    async def close(self) -> None:
        """Stop the worker and drop the private TMPDIR; a later call starts afresh.

        A command still running is killed with the worker (its caller gets
        SANDBOX_FAILURE): nothing a command started outlives the provider.
        """
        for hang_up in list(self._commands):
            hang_up.now()
        executor, self._executor = self._executor, None
        finisher, self._finisher = self._finisher, None
        session_threads, self._session_threads = self._session_threads, None
        if session_threads is not None:
            session_threads.shutdown(wait=False)
        if finisher is not None:
            finisher.shutdown(wait=False)
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
            self._deal_with_a_trip()  # copies a session made are quarantined first
            _release(self._slot, self._guardian)

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        landlock = self.report.get("landlock", {})
        info.update(
            landlock_abi=landlock.get("abi"),
            protected_paths=self.report.get("protection", {}).get("mode"),
            worker_pid=self.worker_pid,
            process_limit="pids-cgroup" if self._slot.cgroup is not None else "rlimit",
        )
        return info

    def _worker_alive(self) -> bool:
        process = self._slot.process
        return self._slot.sock is not None and process is not None and process.poll() is None

    def _plan_masks(self) -> MaskPlan:
        return plan_masks(
            [path for path in self._masked_dirs if os.path.isdir(path)],
            self.policy.denied_patterns,
            set(self._protect),
            self.policy.max_mask_mounts,
        )

    def _mask_for_command(self, known: CodeFiles) -> None:
        """Refuse the command when its masks cannot be planned; replace a worker whose
        masks differ from the plan (a secret or a ``.tinyagentignore`` line added
        since it started). The caller holds the lock."""
        plan = self._plan_masks()
        if plan.refusal is not None:
            refusal = plan.refusal
            raise ToolError(
                ErrorCode.SANDBOX_FAILURE,
                refusal["message"],
                refusal["hint"],
                details=refusal["details"],
            )
        if self._worker_alive() and self._worker_plan == plan.key():
            return
        self._slot.stop()
        self._ensure_worker(plan, known)

    def _ensure_worker(
        self, plan: MaskPlan | None = None, known: CodeFiles | None = None
    ) -> socket.socket:
        """The running worker, or one started now with ``plan`` (planned now if None);
        a plan that refuses commands starts a worker for the file tools only.
        ``known``: the code-running files just walked (walked now if None)."""
        slot = self._slot
        self._settle_secret_watch()
        if self._worker_alive():
            assert slot.sock is not None
            return slot.sock
        slot.stop()
        plan = plan if plan is not None else self._plan_masks()
        self._protected = (known or code_watch.scan(self._protect)).protectable
        if slot.tmpdir is None:
            slot.tmpdir = tempfile.mkdtemp(prefix="tinyagent-fs-tmp-")
        writable = [*self._protect, slot.tmpdir]
        worker_launch.refuse_writable(worker_launch.trusted_paths(), writable, "its code at")
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            slot.process = subprocess.Popen(
                worker_launch.worker_argv(child_end.fileno()),
                pass_fds=(child_end.fileno(),),
                close_fds=True,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                cwd=str(self.root),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=slot.stderr_log(),
                start_new_session=True,
            )
        except OSError as exc:
            parent_end.close()
            raise ToolError(
                ErrorCode.SANDBOX_FAILURE, f"cannot start the sandbox worker: {exc}"
            ) from None
        finally:
            child_end.close()
        slot.sock = parent_end
        slot.cgroup = PidsCgroup.create(self.policy.max_command_processes)
        if slot.cgroup is not None:
            slot.cgroup.add(slot.process.pid)
        canary_dir = tempfile.mkdtemp(prefix="tinyagent-fs-canary-")
        try:
            canary = os.path.join(canary_dir, "canary")
            Path(canary).write_bytes(b"must stay unreadable from the sandbox\n")
            config = {
                "writable": writable,
                "readable": self._readable,
                "protect": self._protect,
                "masks": plan.masks,
                "nested_git": plan.nested_git,
                "pinned": plan.pinned,
                "refuse_commands": plan.refusal,
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
        self._worker_plan = plan.key()
        self._worker_secrets = plan.secrets_key()
        self.report["masks"].update(
            entries_walked=plan.entries_walked,
            seconds=round(self.report["masks"]["seconds"] + plan.seconds, 4),
        )
        modules = self.report.get("module_files")
        if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
            slot.stop()
            raise self._worker_lost("start-up", "it did not list the modules it loaded")
        try:
            worker_launch.refuse_writable(modules, writable, "the worker loaded")
        except ToolError:
            slot.stop()
            raise
        return parent_end

    def _worker_lost(self, op: str, reason: str, *, stalled: bool = False) -> ToolError:
        """Kill and reap the worker (at once when it stalled) and describe what happened."""
        status = None
        process = self._slot.process
        if process is not None:
            if stalled:
                process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                status = process.wait(timeout=EXIT_WAIT_S)
        self._slot.stop(kill_now=stalled)
        if stalled:
            what = f"the sandbox worker stopped answering ({reason}) and was killed"
        elif status is not None and status < 0:
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


class _CommitGoAhead:
    """Between a held commit's caller on the loop and the provider's thread: the thread
    says when the request is going out, the caller whether the worker is to go on."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.sending: asyncio.Future[None] = loop.create_future()
        self.verdict: Future[bool] = Future()

    def going(self) -> None:
        self.loop.call_soon_threadsafe(self._settle)

    def go_on(self, timeout: float) -> bool:
        """The caller's word; none within ``timeout`` (a loop stopped without ending its
        tasks) calls the commit off rather than keep the worker and the lock forever."""
        try:
            return self.verdict.result(timeout)
        except FutureTimeout:
            return False

    def _settle(self) -> None:
        if not self.sending.done():
            self.sending.set_result(None)


def _small_commit(op: str, kwargs: dict[str, Any]) -> bool:
    """Whether ``op`` is a commit small enough to send from the loop (``LOOP_COMMIT_BYTES``)."""
    return op == "commit_changes" and _new_bytes(kwargs.get("changes", ())) <= LOOP_COMMIT_BYTES


def _new_bytes(changes: Iterable[dict[str, Any]]) -> int:
    return sum(len(change.get("new_bytes") or b"") for change in changes)


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Take a finished task's outcome, so that one nobody awaited any more (its caller
    was cancelled, or failed first) is not reported as never retrieved."""
    if not task.cancelled():
        task.exception()


def _weakly(owner: Any, method: Callable[[Any], None]) -> Callable[[], None]:
    """``method`` of ``owner`` without keeping ``owner`` alive (its finalizer must run)."""
    ref = weakref.ref(owner)

    def call() -> None:
        target = ref()
        if target is not None:
            method(target)

    return call


def _unique(paths: Any) -> list[str]:
    return list(dict.fromkeys(paths))


def _note_limit(result: Any, limit: str, value: int) -> None:
    """Mark a command result as stopped by ``limit`` unless the worker already named one."""
    if isinstance(result, dict) and not result.get("limit_exceeded"):
        result["limit_exceeded"] = limit
        result["limit_message"] = f"the command hit the {limit} limit ({value})"


def _release(slot: WorkerSlot, guardian: SettleGuardian) -> None:
    """The worker and the guardian ended (a provider closed or dropped)."""
    slot.release()
    guardian.close()
