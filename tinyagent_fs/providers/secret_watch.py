"""Watch, while sessions run, for a secret appearing where the sandbox can read it.

A sandbox's masks are planned when it starts. A secret the person adds later is
not masked in a running session's view, and the session can copy or rename it
before the model's next call, when a look at the tree finds nothing. So the
toolkit, outside the sandbox where no session can blind it, watches every folder
the sandbox reads (inotify) for as long as sessions live. It trips on the first
new denied name, a denied name renamed or removed, a folder moved in from outside,
a change to a root's ``.tinyagentignore``, lost events, or a folder it cannot
watch. Then the caller (``secret_guard``) ends the sessions at once, withholds
their output, and moves out of reach what changed since the watch was last known
clean (``Trip.since_ns``): a copy made meanwhile included.
"""

from __future__ import annotations

import ctypes
import errno
import os
import select
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..ops.ignore import IgnoreRules, load_ignore_rules
from ..policy import IGNORE_FILE_NAME
from .sandbox import kernel_calls as kc
from .sandbox.protected_paths import QUARANTINE_SUFFIX

IN_MODIFY = 0x2
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
FOLDER_EVENTS = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ONLYDIR
ROOT_EVENTS = FOLDER_EVENTS | IN_MODIFY | IN_CLOSE_WRITE
"""A root also reports writes, for its ``.tinyagentignore``."""
ARRIVALS = IN_CREATE | IN_MOVED_TO
DEPARTURES = IN_MOVED_FROM | IN_DELETE
EVENT_HEAD = struct.Struct("iIII")
POLL_S = 0.1
"""How often the watch notes that it is clean while nothing happens: what it
quarantines after a trip reaches back this far at most, beyond the change itself."""
CLOCK_SLACK_NS = 20_000_000
"""A file's change time is taken from a coarse clock, up to a tick behind the real one."""

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Trip:
    """Why the watch tripped, and since when files may hold what a session took."""

    cause: str
    path: str
    clean_ns: int
    """The last moment the watch was known clean (the toolkit's clock)."""

    @property
    def since_ns(self) -> int:
        """From when a file's change time may tell of a copy (a coarser clock)."""
        return self.clean_ns - CLOCK_SLACK_NS


class WatchFailed(Exception):
    """The folders could not all be watched: a session must not start unwatched."""

    def __init__(self, path: str, exc: OSError) -> None:
        super().__init__(f"{path}: {exc.strerror or exc}")
        self.path = path
        self.errno = exc.errno


class SecretWatch:
    """Watches ``folders`` (roots the sandbox reads) until ``stop``; ``on_trip`` is called
    once, from the watch's thread, when it trips."""

    def __init__(
        self,
        folders: list[str],
        denied_patterns: tuple[str, ...],
        on_trip: Callable[[Trip], None],
    ) -> None:
        self._rules: dict[str, IgnoreRules] = {
            root: load_ignore_rules(root, denied_patterns) for root in folders
        }
        self._on_trip = on_trip
        self._folders: dict[int, tuple[str, str]] = {}
        self._moved_out: set[int] = set()
        """Cookies of folders renamed away from a watched folder: one that arrives
        under a new name brings nothing new (its secrets stay masked, mounts move)."""
        self._lock = threading.Lock()
        self._clean_ns = time.time_ns()
        self.tripped: Trip | None = None
        self._fd = kc.libc_call("inotify_init1", os.O_NONBLOCK | os.O_CLOEXEC)
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC)
        try:
            for root in folders:
                problem = self._watch_tree(root, "")
                if problem is not None:
                    raise problem
        except BaseException:
            self._close_fds()
            raise
        self._thread = threading.Thread(target=self._run, name="tinyagent-fs-secret-watch")
        self._thread.daemon = True
        self._thread.start()

    def check(self) -> Trip | None:
        """Take every event queued so far: whatever happened before this call is judged."""
        with self._lock:
            if self.tripped is None and self._fd >= 0:
                self._drain()
            return self.tripped

    def stop(self) -> None:
        if self._stop_w < 0:
            return
        os.write(self._stop_w, b"x")
        if threading.current_thread() is not self._thread:
            self._thread.join()
        with self._lock:
            self._close_fds()

    def _close_fds(self) -> None:
        for fd in (self._fd, self._stop_r, self._stop_w):
            if fd >= 0:
                os.close(fd)
        self._fd = self._stop_r = self._stop_w = -1

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll(POLL_S * 1000)}
            if self._stop_r in ready:
                return
            if self.check() is not None:
                return

    def _drain(self) -> None:
        started_ns = time.time_ns()
        while self.tripped is None:
            try:
                data = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                break
            self._judge(data)
        if self.tripped is None:
            self._clean_ns = started_ns  # every change made before this drain was queued
        else:
            self._on_trip(self.tripped)

    def _judge(self, data: bytes) -> None:
        offset = 0
        while offset < len(data) and self.tripped is None:
            wd, mask, cookie, size = EVENT_HEAD.unpack_from(data, offset)
            name = data[offset + EVENT_HEAD.size : offset + EVENT_HEAD.size + size]
            offset += EVENT_HEAD.size + size
            if mask & IN_Q_OVERFLOW:
                self._trip("events_lost", "")
            elif mask & IN_IGNORED:
                self._folders.pop(wd, None)
            elif wd in self._folders and name:
                self._one(self._folders[wd], os.fsdecode(name.rstrip(b"\0")), mask, cookie)

    def _one(self, folder: tuple[str, str], name: str, mask: int, cookie: int) -> None:
        root, relative_dir = folder
        relative = f"{relative_dir}/{name}" if relative_dir else name
        path = os.path.join(root, relative)
        is_dir = bool(mask & IN_ISDIR)
        if not relative_dir and name == IGNORE_FILE_NAME:
            self._trip("denials_changed", path)
        elif QUARANTINE_SUFFIX in name and not is_dir:
            return  # the toolkit's own quarantine of what a session or command left
        elif mask & ARRIVALS:
            moved = bool(mask & IN_MOVED_TO) and cookie in self._moved_out
            self._moved_out.discard(cookie)
            if self._rules[root].denies_path_or_parent(relative, is_dir) and not moved:
                self._trip("secret_added", path)
            elif is_dir and mask & IN_MOVED_TO and not moved:
                # from outside the watched folders, with whatever it holds: a secret in it
                # could be renamed by a session before the watch has looked inside
                self._trip("folder_arrived", path)
            elif is_dir:
                problem = self._watch_tree(root, relative, arrived=not moved)
                if problem is not None:
                    self._trip("cannot_watch", problem.path)
        elif mask & DEPARTURES and self._rules[root].denies_path_or_parent(relative, is_dir):
            # a denied name renamed or removed: a secret was there (a masked one cannot
            # be moved from inside the sandbox), perhaps one the watch had not yet seen
            self._trip("secret_moved", path)
        elif mask & IN_MOVED_FROM and is_dir:
            self._moved_out.add(cookie)

    def _watch_tree(self, root: str, start: str, *, arrived: bool = False) -> WatchFailed | None:
        """Watch ``start`` and every folder below it that is not denied (again for a
        folder renamed, so its events carry its new name). In a folder that ``arrived``
        a denied name trips: it came with it or before its folder was watched."""
        rules = self._rules[root]
        root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            pending = [start]
            while pending:
                relative_dir = pending.pop()
                try:
                    names = self._watch_folder(root_fd, root, relative_dir)
                except OSError as exc:
                    if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                        continue  # gone again: its removal or rename is an event of its own
                    return WatchFailed(os.path.join(root, relative_dir), exc)
                for name, is_dir in names:
                    relative = f"{relative_dir}/{name}" if relative_dir else name
                    if rules.is_denied(relative, is_dir):
                        if arrived:
                            self._trip("secret_added", os.path.join(root, relative))
                            return None
                        continue  # masked in the sandbox's view from the start
                    if is_dir:
                        pending.append(relative)
        finally:
            os.close(root_fd)
        return None

    def _watch_folder(self, root_fd: int, root: str, relative_dir: str) -> list[tuple[str, bool]]:
        fd = kc.open_beneath(root_fd, relative_dir or ".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            events = FOLDER_EVENTS if relative_dir else ROOT_EVENTS
            wd = _add_watch(self._fd, f"/proc/self/fd/{fd}", events)
            self._folders[wd] = (root, relative_dir)
            with os.scandir(fd) as found:
                return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in found]
        finally:
            os.close(fd)

    def _trip(self, cause: str, path: str) -> None:
        if self.tripped is None:
            self.tripped = Trip(cause, path, self._clean_ns)


def _add_watch(inotify_fd: int, path: str, events: int) -> int:
    wd = _libc.inotify_add_watch(inotify_fd, os.fsencode(path), ctypes.c_uint32(events))
    if wd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return wd
