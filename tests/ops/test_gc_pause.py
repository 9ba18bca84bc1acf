"""paused_gc: the collector is off inside, back on after (errors included), and a
collector someone else turned off stays off."""

from __future__ import annotations

import gc

import pytest

from tinyagent_fs._runtime.gc_pause import paused_gc


def test_the_collector_is_paused_inside_and_resumes_after() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_resumes_after_an_error() -> None:
    with pytest.raises(ValueError), paused_gc():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    try:
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
