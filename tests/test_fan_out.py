"""run_each: every item once, big batches on several threads, the first failure (in
order) raised only once no call runs any more, the rest skipped."""

from __future__ import annotations

import threading
import time

import pytest

from tinyagent_fs.ops import fan_out
from tinyagent_fs.ops.fan_out import FAN_OUT_FROM, run_each


class Calls:
    """Records which items were called, on which threads, and how many ran at once."""

    def __init__(self, fail: set[int] | None = None, pause: float = 0.0) -> None:
        self.fail = fail or set()
        self.pause = pause
        self.done: list[int] = []
        self.threads: set[int] = set()
        self.running = 0
        self.lock = threading.Lock()

    def __call__(self, item: int) -> None:
        with self.lock:
            self.running += 1
            self.threads.add(threading.get_ident())
        try:
            time.sleep(self.pause)
            if item in self.fail:
                raise OSError(item, f"item {item} failed")
            with self.lock:
                self.done.append(item)
        finally:
            with self.lock:
                self.running -= 1


def test_a_small_batch_runs_in_order_on_the_calling_thread() -> None:
    calls = Calls()
    run_each(calls, range(FAN_OUT_FROM - 1))
    assert calls.done == list(range(FAN_OUT_FROM - 1))
    assert calls.threads == {threading.get_ident()}


def test_a_big_batch_calls_every_item_once_from_several_threads() -> None:
    calls = Calls(pause=0.005)
    run_each(calls, range(40))
    assert sorted(calls.done) == list(range(40))
    assert len(calls.threads) > 1
    assert not [t for t in threading.enumerate() if t.name == "tinyagent-fs-fan-out"]


def test_the_first_failing_item_raises_after_every_call_has_ended() -> None:
    calls = Calls(fail={12, 30}, pause=0.005)
    with pytest.raises(OSError) as raised:
        run_each(calls, range(200))
    assert raised.value.errno == 12
    assert calls.running == 0  # nothing still runs that the caller would have to undo
    assert len(calls.done) < 150  # items after the failure were skipped, not all run
    done_after = list(calls.done)
    time.sleep(0.05)
    assert calls.done == done_after


def test_a_small_batch_stops_at_its_first_failure() -> None:
    calls = Calls(fail={2})
    with pytest.raises(OSError) as raised:
        run_each(calls, range(5))
    assert raised.value.errno == 2
    assert calls.done == [0, 1]


def test_a_batch_whose_helper_threads_cannot_start_runs_on_the_calling_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(fan_out.threading.Thread, "start", refuse)
    calls = Calls()
    run_each(calls, range(30))
    assert calls.done == list(range(30))
    assert calls.threads == {threading.get_ident()}
