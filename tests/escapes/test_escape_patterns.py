"""Attacks on what is denied or ignored: every tool decides with the one gitignore engine,
and ripgrep reads only the files the toolkit chose.

Each test performs the attack through the toolkit (LocalProvider and the Linux sandbox)
and fails if the hole reopens.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
import unicodedata
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.ops.ripgrep import find_ripgrep, ripgrep_search

from ..sandbox_support import require_sandbox

pytestmark = require_sandbox()

TOKEN = "TOKEN-7f3a"
CAFE_NFC = unicodedata.normalize("NFC", "café-secret.txt")
CAFE_NFD = unicodedata.normalize("NFD", "café-secret.txt")
DENIED_SHAPES = {
    "secret{1,2}.txt": "secret{1,2}.txt",  # braces are literal in gitignore, not alternation
    "notes[[:digit:]].txt": "notes1.txt",  # a POSIX class
    CAFE_NFC: CAFE_NFD,  # an NFC pattern, an NFD name
    "[!p]rivate-*.txt": "xrivate-1.txt",  # a negated class
    "/deep/**/key\\[1\\].txt": "deep/a/b/key[1].txt",  # escapes, ** and anchoring
}


def _tokens_in(text: str) -> bool:
    return TOKEN in text


async def test_no_tool_reveals_a_file_denied_in_any_shape(fs: FileTools, project: Path) -> None:
    (project / ".tinyagentignore").write_text("\n".join(DENIED_SHAPES) + "\n")
    for name in DENIED_SHAPES.values():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(f"{TOKEN}\n")
    (project / "public.txt").write_text(f"{TOKEN}\n")
    found = await fs.grep(TOKEN)
    assert found.ok, found.text
    assert [m["path"] for m in found.data["matches"]] == ["public.txt"]
    for include in ("*.txt", "**/*", "{public,secret*,notes*,caf*,*rivate*}.txt"):
        found = await fs.grep(TOKEN, include=include)
        assert [m["path"] for m in found.data["matches"]] == ["public.txt"], include
    listing = await fs.list_directory(".", depth=5)
    for pattern in ("**/*", "*", "**/*.txt", "secret*", "notes*", "caf*", "**/key*"):
        globbed = await fs.glob(pattern)
        shown = set(globbed.data.get("matches", [])) | set(listing.data["paths"])
        assert not shown & {*DENIED_SHAPES.values(), "deep/a/b/key[1].txt"}, pattern
        assert not any(path.startswith("caf") for path in shown), pattern
    for name in DENIED_SHAPES.values():
        read = await fs.read_file(name)
        assert read.error is not None and read.error.code == "DENIED_PATTERN", name
        assert not _tokens_in(read.text)
    negated_ok = await fs.read_file("public.txt")
    assert negated_ok.ok and _tokens_in(negated_ok.text)


async def test_a_backtracking_ignore_pattern_does_not_freeze_any_tool(
    fs: FileTools, project: Path
) -> None:
    (project / ".tinyagentignore").write_text("*a*a*a*a*a*a*a*a*a*a*b\n")
    name = "a" * 250
    (project / name).write_text(f"{TOKEN}\n")
    started = time.monotonic()
    assert (await fs.read_file(name)).ok
    assert (await fs.list_directory(".")).ok
    assert (await fs.glob("a*")).ok
    found = await fs.grep(TOKEN)
    assert [m["path"] for m in found.data["matches"]] == [name]
    assert time.monotonic() - started < 30


STALLING_LINES = "".join(f"*a*a*a*a*a*{index}b\n" for index in range(5000))
"""5,000 lines the wildmatch simulation takes seconds per long path to match."""


async def test_a_gitignore_built_to_stall_is_skipped_not_matched(
    fs: FileTools, project: Path
) -> None:
    assert (await fs.write_file(".gitignore", STALLING_LINES)).ok
    deep = "/".join(["a" * 250] * 14)
    assert (await fs.create_directory(deep)).ok
    assert (await fs.write_file(f"{deep}/{'a' * 200}", f"{TOKEN}\n")).ok
    (project / "aaaaa0b").write_text(f"{TOKEN}\n")  # a line of the file would ignore it
    for call in (fs.glob("**/*"), fs.grep(TOKEN), fs.list_directory(depth=20)):
        result = await asyncio.wait_for(call, 60)  # before: half a minute for 16 entries
        assert result.ok, result.text
        assert "aaaaa0b" in result.text, "the stalling .gitignore was applied"


async def test_nested_gitignores_within_the_budget_each_do_not_add_up_past_it(
    fs: FileTools, project: Path
) -> None:
    costly = "".join(f"{'*a' * 50}b{index}\n" for index in range(5))  # about 40 % each
    folder = project
    for level in range(1, 7):
        folder = folder / "d"
        folder.mkdir()
        (folder / ".gitignore").write_text(costly + f"hidden{level}.txt\n")
        (folder / f"hidden{level}.txt").write_text(f"{TOKEN}\n")
    found = await asyncio.wait_for(fs.glob("**/hidden*.txt"), 60)
    shown = {Path(path).name for path in found.data["matches"]}
    assert "hidden1.txt" not in shown and "hidden2.txt" not in shown  # within the budget
    assert {f"hidden{level}.txt" for level in range(3, 7)} <= shown  # past it: skipped


async def test_a_tinyagentignore_too_costly_to_match_fails_closed(
    fs: FileTools, project: Path
) -> None:
    (project / ".tinyagentignore").write_text(STALLING_LINES)
    read = await fs.read_file("README.md")
    assert read.error is not None and read.error.code == "PERMISSION_DENIED", read.text
    assert "fewer lines with several wildcards" in read.text
    listed = await fs.list_directory(".")
    assert listed.error is not None, listed.text


FIFO = "a FIFO"


async def _plant(fs: FileTools, project: Path, provider_name: str, traps: dict[str, str]) -> None:
    """Make each name in ``traps`` a symlink to its target (``FIFO``: a FIFO in TMPDIR),
    with a command as the agent would; where the provider runs no commands, with the
    same effect from the test."""
    if provider_name == "linux":
        links = " && ".join(
            f"ln -s {'$TMPDIR/f' if target == FIFO else target} {name}"
            for name, target in traps.items()
        )
        ran = await fs.run_command(f'mkfifo "$TMPDIR/f" && {links}')
        assert ran.ok and ran.data["exit_code"] == 0, ran.text
        return
    fifo = project.parent / "f"
    os.mkfifo(fifo)
    for name, target in traps.items():
        (project / name).symlink_to(fifo if target == FIFO else target)


@pytest.mark.parametrize(
    "traps",
    [
        {".gitignore": FIFO},
        {"sub/.gitignore": FIFO, ".ignore": FIFO},
        {".gitignore": "/dev/zero", "sub/.ignore": "/dev/zero"},
        {"sub/.rgignore": "/dev/zero", ".rgignore": FIFO},
    ],
)
async def test_grep_never_opens_an_ignore_file_that_is_a_trap(
    fs: FileTools, project: Path, provider_name: str, traps: dict[str, str]
) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "found.txt").write_text(f"{TOKEN}\n")
    await _plant(fs, project, provider_name, traps)
    started = time.monotonic()
    found = await fs.grep(TOKEN)
    assert found.ok, found.text
    assert [m["path"] for m in found.data["matches"]] == ["sub/found.txt"]
    if provider_name == "local":  # the worker's view may hold no rg: then Python searched
        assert found.data["backend"] == "ripgrep"
    assert time.monotonic() - started < 20
    assert (await fs.list_directory(".", depth=3)).ok


def _rg_children() -> list[int]:
    """Our own child processes running rg."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if stat.split("(", 1)[1].startswith("rg)") and int(fields[1]) == os.getpid():
            found.append(int(entry))
    return found


def _search(root: Path, files: list[str], deadline_s: float) -> None:
    executable = find_ripgrep()
    assert executable is not None
    ripgrep_search(
        executable,
        str(root),
        files,
        pattern=TOKEN,
        literal=True,
        case_sensitive=True,
        context=0,
        limit=10,
        deadline_s=deadline_s,
    )


def test_an_rg_past_its_deadline_is_an_error_not_an_empty_answer(tmp_path: Path) -> None:
    """A file swapped for a FIFO after the walk blocks rg: the grep ends as TIMEOUT."""
    os.mkfifo(tmp_path / "swapped.txt")
    (tmp_path / "a.txt").write_text(f"{TOKEN}\n")
    started = time.monotonic()
    with pytest.raises(ToolError) as caught:
        _search(tmp_path, ["a.txt", "swapped.txt"], deadline_s=1.0)
    assert caught.value.code is ErrorCode.TIMEOUT
    assert time.monotonic() - started < 10
    assert not _rg_children()


def test_an_rg_killed_from_outside_is_an_error_not_an_empty_answer(tmp_path: Path) -> None:
    """rg ended by a signal (a resource limit, the OOM killer) answers nothing, loudly."""
    os.mkfifo(tmp_path / "swapped.txt")
    errors: list[BaseException] = []

    def search() -> None:
        try:
            _search(tmp_path, ["swapped.txt"], deadline_s=60.0)
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=search)
    worker.start()
    deadline = time.monotonic() + 10
    while not (children := _rg_children()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert children
    os.kill(children[0], signal.SIGKILL)
    worker.join(20)
    assert not worker.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], ToolError)
    assert errors[0].code is ErrorCode.IO_ERROR and "signal 9" in errors[0].message
