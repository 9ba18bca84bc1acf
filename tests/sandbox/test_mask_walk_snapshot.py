"""The secret-mask walk is a snapshot or nothing: a folder renamed round and round
while it is walked never hides the secret inside it (the walk retries, then refuses)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tinyagent_fs.policy import DEFAULT_DENIED_PATTERNS
from tinyagent_fs.providers.sandbox.secret_masks import plan_masks

NAMES = ["config", *(f"c{i}" for i in range(1, 16))]


@pytest.mark.parametrize("covered", [False, True], ids=["plain", "mtime-set-back"])
def test_a_folder_renamed_during_the_walk_never_hides_its_secret(
    tmp_path: Path, covered: bool
) -> None:
    root = tmp_path / "root"
    (root / "config").mkdir(parents=True)
    (root / "config" / "deploy.pem").write_text("secret\n")
    for index in range(3000):  # a walk long enough for many renames meanwhile
        (root / f"note{index}.txt").write_text("")
    stop = threading.Event()

    def flip() -> None:
        at = 0
        before = os.stat(root)
        while not stop.is_set():
            os.rename(root / NAMES[at], root / NAMES[(at + 1) % len(NAMES)])
            at = (at + 1) % len(NAMES)
            if covered:  # the tracks a program can cover: the folder's modification time
                os.utime(root, ns=(before.st_atime_ns, before.st_mtime_ns))

    flipper = threading.Thread(target=flip)
    flipper.start()
    outcomes = []
    try:
        for _ in range(20):
            plan = plan_masks([str(root)], DEFAULT_DENIED_PATTERNS, set(), 1000)
            if plan.refusal is not None:
                outcomes.append(plan.refusal["details"]["cause"])
            else:
                found = [path for path, _ in plan.masks[str(root)]]
                outcomes.append("masked" if any("deploy.pem" in p for p in found) else found)
    finally:
        stop.set()
        flipper.join()
    assert set(map(str, outcomes)) <= {"masked", "tree_changing"}, outcomes
