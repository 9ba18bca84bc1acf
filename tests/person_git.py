"""The person's git, run outside the sandbox the way a person runs it: on a terminal (so a
configured pager runs) with their own HOME. A planted config shows by a marker file."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path


def planted_config(marker: Path, worktree: Path | None = None) -> str:
    """A git config that runs code on ``git status`` (fsmonitor, with a work tree) and on
    anything git pages on a terminal (``git branch``), even in a bare repository."""
    lines = [
        "[core]",
        "\trepositoryformatversion = 0",
        f"\tpager = touch {marker}; cat",
        f"\tfsmonitor = touch {marker}",
    ]
    if worktree is not None:
        lines += ["\tbare = false", f"\tworktree = {worktree}"]
    return "\n".join(lines) + "\n"


def write_command(path: str, text: str) -> str:
    """A shell command writing ``text`` to ``path`` (its folder made first)."""
    folder = os.path.dirname(path) or "."
    return f"mkdir -p {shlex.quote(folder)} && printf %s {shlex.quote(text)} > {shlex.quote(path)}"


def person_uses_git(where: Path, home: Path) -> None:
    """``git status`` and ``git branch`` in ``where`` on a terminal, as the person."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PAGER": "cat", "LANG": "C.UTF-8"}
    for args in (["status"], ["branch"]):
        leader, follower = os.openpty()
        try:
            subprocess.run(
                ["git", "-C", str(where), *args],
                stdin=follower,
                stdout=follower,
                stderr=follower,
                env=env,
                timeout=30,
                check=False,
            )
        finally:
            os.close(follower)
            os.close(leader)
