"""Every baseline a benchmark compares the toolkit with, defined once.

Each is what a tool without guard, review, journal or audit would do for the same
job; its docstring says exactly what it includes, because a ratio means only as
much as its denominator. The figures in ``run_all`` and the older scripts that
measure the same jobs take them from here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tinyagent_fs.ops.command import command_env

NUMBER_WIDTH = 6
READ_WINDOW = 2000
SHELL_ENV = command_env(os.environ.get("HOME", "/tmp"), None)


def raw_atomic_write(path: Path, data: bytes, sync_directory: bool = False) -> None:
    """Temp file beside ``path``, write, fsync the file, rename over ``path``.

    No fsync of the folder (the rename is atomic but not yet durable) unless
    ``sync_directory``; no encoding (``data`` is bytes already), no reading of
    the old content, no diff, no record.
    """
    staged = path.with_name(f".{path.name}.tmp")
    with open(staged, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staged, path)
    if sync_directory:
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def raw_edit(path: Path, old: str, new: str) -> None:
    """Read and decode the file, replace the first ``old``, then ``raw_atomic_write``.

    Includes UTF-8 decode and encode; no check that ``old`` is unique, no fsync of
    the folder.
    """
    with open(path, "rb") as handle:
        text = handle.read().decode("utf-8")
    raw_atomic_write(path, text.replace(old, new, 1).encode("utf-8"))


def git_apply(patch_file: Path, cwd: Path) -> None:
    """``git apply PATCH`` in ``cwd`` (a plain folder, not a repository): spawn, parse,
    apply, write. No fsync: git leaves durability to the kernel."""
    done = subprocess.run(["git", "apply", str(patch_file)], cwd=cwd, capture_output=True)
    if done.returncode:
        raise SystemExit(f"git apply failed: {done.stderr.decode(errors='replace')}")


def git_apply_synced(patch_file: Path, cwd: Path, written: list[Path]) -> None:
    """``git_apply``, then an fsync of each file it wrote (open, fsync, close).

    The floor of a durable apply; no fsync of the folders (git's renames are not
    made durable).
    """
    git_apply(patch_file, cwd)
    for path in written:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def unsandboxed_shell_true() -> None:
    """``/bin/bash -c true`` in the environment run_command gives its shell
    (``command_env``: ``LANG=C.UTF-8`` and the rest): an unsandboxed run_command of
    ``true``, the shell's start included; no confinement, no output captured."""
    subprocess.run(["/bin/bash", "-c", "true"], env=SHELL_ENV, check=True)


def unsandboxed_true() -> None:
    """``subprocess.run(["true"])``: fork/exec and wait, no shell, no output captured,
    no confinement."""
    subprocess.run(["true"], check=True)


def bare_interpreter() -> None:
    """A new ``python -I -S -c pass`` to its exit: the floor under any worker that is a
    new Python process (the sandbox worker starts the same way, then imports and
    confines itself)."""
    subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)


def numbered(text: str, first: int, count: int) -> str:
    """What a naive read tool returns: ``cat -n`` style numbered lines."""
    lines = text.splitlines()[first : first + count]
    return "\n".join(f"{first + i + 1:>{NUMBER_WIDTH}}\t{line}" for i, line in enumerate(lines))


def raw_read(path: Path, first: int = 0) -> str:
    """Open, read all, UTF-8 decode, split and number ``READ_WINDOW`` lines from ``first``."""
    with open(path, "rb") as handle:
        return numbered(handle.read().decode("utf-8"), first, READ_WINDOW)


REFERENCE_SERVER = (
    "the reference filesystem MCP server (@modelcontextprotocol/server-filesystem, Node, "
    "the version locked in bench/node), on a copy of the same files, same client"
)
"""The MCP figures' baseline: it reads, lists and writes with Node's fs calls (its
write is a plain write, no fsync); it is started once per client kind, like ours."""
