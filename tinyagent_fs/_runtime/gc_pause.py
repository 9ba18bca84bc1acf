"""Pausing the cyclic garbage collector while a large structure without cycles is built.

Parsing, planning and diffing a 500-file patch allocate some 100,000 tuples and
lists, all alive until the call ends and none part of a reference cycle. Each
allocation counts towards the collector's thresholds, so it would run dozens of
young and a few full collections over objects that cannot be garbage (about a
twentieth of such an apply_patch). Reference counting frees them as always; the
pause only defers the search for cycles, which resumes as usual afterwards.

For synchronous stretches only, never across an ``await`` (other tasks would run
paused). The collector is process-wide: a pause begun while it was disabled does
nothing, so a caller that keeps it off keeps it off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
