"""The provider's side of the secret watch (``secret_watch``): when it runs, what a
trip ends, withholds and quarantines, and what is refused meanwhile.

The watch runs from a session's start until no session's output can still reach
the model. A trip kills the worker at once (from the watch's thread) while
sessions run, and the next call deals with it under the provider's lock. If a
session ran since the watch was last clean, the sessions' output not yet read is
withheld, TMPDIR emptied and what changed since then moved out of reach
(``secret_quarantine``). Otherwise
nothing could have seen the secret, and the next sandbox masks it. Mixed into
``LinuxSandboxProvider``.
"""

from __future__ import annotations

import contextlib
import os
from functools import partial

from ..errors import ErrorCode, ToolError
from . import secret_quarantine, secret_watch
from .worker_slot import WorkerSlot


class SecretGuard:
    """Mixed into ``LinuxSandboxProvider`` (see the module docstring)."""

    def _watch_for_secrets(self) -> None:
        """The folders the sandbox reads watched before a session starts in it (the
        caller holds the lock); a trip meanwhile is dealt with first. No session starts
        unwatched."""
        self._settle_secret_watch()
        if self._slot.watch is not None:
            return
        try:
            self._slot.watch = secret_watch.SecretWatch(
                [path for path in self._masked_dirs if os.path.isdir(path)],
                self.policy.denied_patterns,
                partial(_end_at_once, self._slot),
            )
        except secret_watch.WatchFailed as exc:
            raise ToolError(
                ErrorCode.SANDBOX_FAILURE,
                f"the session was not started: the folder {exc.path} cannot be watched for "
                f"secrets the person adds while it runs ({exc})",
                "Make the folder readable, or raise fs.inotify.max_user_watches if the "
                "project has very many folders; run_command still works.",
                details={"cause": "watch_failed", "path": exc.path, "errno": exc.errno},
            ) from None

    def _settle_secret_watch(self) -> None:
        """Before a worker is used or started (the caller holds the lock): a trip of the
        watch is dealt with, and nothing runs while copies could not be quarantined."""
        self._deal_with_a_trip()
        self._refuse_while_copies_left()

    def _deal_with_a_trip(self) -> None:
        """A trip of the watch, if any, dealt with (the caller holds the lock)."""
        watch = self._slot.watch
        trip = watch.check() if watch is not None else None
        if trip is None:
            return
        self._stop_watch()
        self._slot.stop(kill_now=True)
        self._secret_appeared(trip)

    def _refuse_after_a_secret_appeared(self, op: str) -> None:
        """Every request checks the watch as it goes out (the caller holds the lock): a
        read of a copy a session made must not slip in before the trip is dealt with;
        one that finds a trip deals with it and is not sent."""
        watch = self._slot.watch
        if watch is not None and watch.check() is not None:
            self._deal_with_a_trip()
            raise ToolError(
                ErrorCode.SANDBOX_FAILURE,
                f"{op} was not run: a secret appeared while sessions ran; their sandbox "
                "was ended and what changed meanwhile quarantined",
                "Call again.",
                details={"cause": "secrets_changed"},
            )

    def _secret_appeared(self, trip: secret_watch.Trip) -> None:
        """A secret appeared while sessions ran (the caller holds the lock; the worker
        is gone): they end with their unread output withheld, TMPDIR is emptied, and
        what changed since the watch was last clean is moved out of reach, as a session
        may have left the secret there."""
        for session in self.sessions.with_masks():  # first: nothing below may skip it
            with session.lock:
                session.withhold("secrets_changed")
        self._slot.clear_tmpdir()
        try:
            done = secret_quarantine.quarantine_since(
                self._protect, self.policy.denied_patterns, trip.since_ns
            )
        except Exception:  # whatever broke it (a name, a full disk), nothing stays open
            done = secret_quarantine.Quarantined(left=list(self._protect))
        self._copies_left = done.left
        note = {
            "secret_appeared": trip.cause,
            "secret_copies_quarantined": done.moved,
            "secret_copies_left": len(done.left),
        }
        for session in self.sessions.with_masks():
            session.settle_note.update(note)
        for ended in self.sessions.unsettled():
            self._settle_unlocked(ended)
        self.sessions.forget_settled()

    def _refuse_while_copies_left(self) -> None:
        """Files that may hold a copy of a secret and could not be quarantined keep the
        sandbox shut until they are gone (the caller holds the lock)."""
        self._copies_left = [path for path in self._copies_left if os.path.lexists(path)]
        if self._copies_left:
            raise ToolError(
                ErrorCode.SANDBOX_FAILURE,
                "the sandbox is shut: after a secret appeared while sessions ran, these "
                "files, changed meanwhile, could not be quarantined and may hold a copy of "
                "it: " + ", ".join(self._copies_left),
                "A person must look at them and move them out of the project or delete them.",
                details={"cause": "secret_copies_left", "paths": self._copies_left},
            )

    def _stop_watch(self) -> None:
        watch, self._slot.watch = self._slot.watch, None
        if watch is not None:
            watch.stop()


def _end_at_once(slot: WorkerSlot, trip: secret_watch.Trip) -> None:
    """From the watch's thread: kill the worker now, and with it every session, so none
    goes on reading the secret until the trip is dealt with."""
    process = slot.process
    if process is not None:
        with contextlib.suppress(OSError):
            process.kill()
