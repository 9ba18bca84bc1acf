"""run_each: every item once, each group in order on one thread; helper threads only
for slow calls and more than one group; the first failure (in order) raised only
once no call runs any more, the rest skipped."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tinyagent_fs.ops import fan_out
from tinyagent_fs.ops.fan_out import PROBE, run_each

SLOW = 0.005
"""Seconds a slow call sleeps: far above fan_out.SLOW_CALL."""


class Calls:
    """Records which items were called on which thread, and how many ran at once."""

    def __init__(self, fail: set[int] | None = None, pause: float = 0.0) -> None:
        self.fail = fail or set()
        self.pause = pause
        self.done: list[int] = []
        self.thread_of: dict[int, int] = {}
        self.running = 0
        self.lock = threading.Lock()

    def __call__(self, item: int) -> None:
        with self.lock:
            self.running += 1
            self.thread_of[item] = threading.get_ident()
        try:
            time.sleep(self.pause)
            if item in self.fail:
                raise OSError(item, f"item {item} failed")
            with self.lock:
                self.done.append(item)
        finally:
            with self.lock:
                self.running -= 1

    @property
    def threads(self) -> set[int]:
        return set(self.thread_of.values())


def groups(count: int, size: int) -> list[list[int]]:
    return [list(range(start, start + size)) for start in range(0, count * size, size)]


def test_one_group_of_slow_calls_runs_in_order_on_the_calling_thread() -> None:
    calls = Calls(pause=SLOW)
    run_each(calls, groups(1, 3 * PROBE))
    assert calls.done == list(range(3 * PROBE))
    assert calls.threads == {threading.get_ident()}


def test_many_groups_of_slow_calls_are_shared_by_several_threads_a_group_each() -> None:
    calls = Calls(pause=SLOW)
    batch = groups(10, 4)
    run_each(calls, batch)
    assert sorted(calls.done) == list(range(40))
    assert len(calls.threads) > 1
    for group in batch:
        assert len({calls.thread_of[item] for item in group}) == 1
        assert [item for item in calls.done if item in group] == group
    assert not [t for t in threading.enumerate() if t.name == "tinyagent-fs-fan-out"]


def test_helpers_finish_their_groups_after_the_calling_thread_ran_out_of_groups() -> None:
    calls = Calls(pause=SLOW)
    first = list(range(PROBE))  # helpers start after these, and take the long groups
    batch = [first, list(range(PROBE, PROBE + 20)), list(range(PROBE + 20, PROBE + 40))]
    run_each(calls, batch)
    assert sorted(calls.done) == list(range(PROBE + 40))
    assert len(calls.threads) == 3


def test_fast_calls_stay_on_the_calling_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fan_out, "SLOW_CALL", 1.0)  # every call counts as fast
    calls = Calls(pause=SLOW)
    run_each(calls, groups(10, 4))
    assert calls.done == list(range(40))
    assert calls.threads == {threading.get_ident()}


def test_the_first_failing_item_raises_after_every_call_has_ended() -> None:
    calls = Calls(fail={13, 30}, pause=SLOW)
    with pytest.raises(OSError) as raised:
        run_each(calls, groups(50, 4))
    assert raised.value.errno == 13
    assert len(calls.threads) > 1
    assert calls.running == 0  # nothing still runs that the caller would have to undo
    assert len(calls.done) < 150  # items after the failure were skipped, not all run
    done_after = list(calls.done)
    time.sleep(0.05)
    assert calls.done == done_after


def test_a_failure_among_the_first_calls_stops_the_batch_there() -> None:
    calls = Calls(fail={2}, pause=SLOW)
    with pytest.raises(OSError) as raised:
        run_each(calls, groups(10, 5))
    assert raised.value.errno == 2
    assert calls.done == [0, 1]
    assert calls.threads == {threading.get_ident()}


def test_a_batch_whose_helper_threads_cannot_start_runs_on_the_calling_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(fan_out.threading.Thread, "start", refuse)
    calls = Calls(pause=SLOW)
    run_each(calls, groups(10, 3))
    assert calls.done == list(range(30))
    assert calls.threads == {threading.get_ident()}


CONFINED_FAN_OUT = """
import os, sys, threading
from tinyagent_fs.ops import fan_out
from tinyagent_fs.providers.sandbox import landlock_rules, seccomp_filter

root = sys.argv[1]
landlock_rules.restrict_self(landlock_rules.LandlockRules(writable=(root,), readable=()))
seccomp_filter.install_filter()
assert seccomp_filter.filter_mode() == seccomp_filter.SECCOMP_MODE_FILTER
fan_out.SLOW_CALL = 0.0  # helpers from the first probe on
threads = set()

def create(name):
    os.close(os.open(os.path.join(root, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    threads.add(threading.get_ident())

groups = [[f"{group}-{item}" for item in range(fan_out.PROBE)] for group in range(6)]
fan_out.run_each(create, groups)
print(len(threads), len(os.listdir(root)))
"""


def test_helper_threads_start_and_create_files_under_the_workers_confinement(
    tmp_path: Path,
) -> None:
    """The sandbox worker commits under Landlock and its seccomp filter: helper
    threads must start and create files there too (they inherit both)."""
    project = tmp_path / "project"
    project.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", CONFINED_FAN_OUT, str(project)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(fan_out.__file__).parents[2])},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    threads, files = map(int, done.stdout.split())
    assert files == 6 * PROBE
    assert threads > 1, "no helper thread ran under the confinement"
