"""The in-process provider under a symlink race: a thread keeps swapping a folder of
the root for a symlink to a folder outside while the tools write, edit, patch, move,
delete and read in it. Nothing outside may ever be created, changed, removed or read.
And without the kernel sandbox no command runs unless the person opted in: through
FileTools, ``tinyagent-fs call`` and the MCP server alike."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.providers import LocalProvider

from ..mcp_raw_client import RawServer

ROUNDS = 150
OUTSIDE_SECRET = b"outside secret\n"
OUTSIDE_PATCH = (
    "*** Begin Patch\n*** Update File: sub/x.txt\n@@\n-outside secret\n+x\n*** End Patch\n"
)
"""Fits only the file outside: planned at all (applied, or a CONFLICT at commit), it was read."""
ADDING_PATCH = "*** Begin Patch\n*** Add File: sub/added{}.txt\n+added\n*** End Patch\n"
AT_FDCWD = -100
RENAME_EXCHANGE = 2


def flip_forever(folder: Path, outside: Path, stop: threading.Event) -> None:
    """Swap ``folder`` with a symlink to ``outside`` again and again (renameat2 with
    RENAME_EXCHANGE: at every instant one of the two is in place)."""
    libc = ctypes.CDLL(None, use_errno=True)
    link = folder.with_name("sub-link")
    link.symlink_to(outside, target_is_directory=True)
    a, b = os.fsencode(folder), os.fsencode(link)
    while not stop.is_set():
        if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
            raise OSError(ctypes.get_errno(), "renameat2 failed")


def outside_state(outside: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(outside.iterdir())}


async def test_a_flipping_folder_never_lets_a_change_or_a_read_out(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "x.txt").write_bytes(OUTSIDE_SECRET)
    (outside / "keep.txt").write_bytes(OUTSIDE_SECRET)
    before = outside_state(outside)
    folder = root / "sub"
    folder.mkdir()
    stop = threading.Event()
    flipper = threading.Thread(target=flip_forever, args=(folder, outside, stop), daemon=True)
    leaked: list[str] = []
    fs = FileTools(root, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False)
    flipper.start()
    try:
        for round_ in range(ROUNDS):
            calls = [
                ("write_file", {"path": "sub/x.txt", "content": f"round {round_}\n"}),
                ("write_file", {"path": "sub/new/deeper.txt", "content": "deep\n"}),
                ("edit_file", {"path": "sub/x.txt", "old_string": "round", "new_string": "R"}),
                ("move_path", {"src": "sub/x.txt", "dst": "sub/y.txt", "overwrite": True}),
                ("delete_path", {"path": "sub/keep.txt"}),
                ("read_file", {"path": "sub/x.txt"}),
                ("read_file", {"path": "sub/keep.txt"}),
                ("apply_patch", {"patch": OUTSIDE_PATCH}),
                ("apply_patch", {"patch": ADDING_PATCH.format(round_)}),
                ("read_file", {"path": "sub/keep.txt", "tail": 1}),
            ]
            for name, args in calls:
                result = await fs.call(name, args)
                if args.get("patch") == OUTSIDE_PATCH:  # its text quotes the hunk
                    conflict = result.error is not None and result.error.code == "CONFLICT"
                    if result.ok or conflict:
                        leaked.append(f"{name}: a patch fitting the outside file was planned")
                elif "outside secret" in result.text:
                    leaked.append(f"{name}: {result.text[:80]}")
    finally:
        stop.set()
        flipper.join(5)
        await fs.close()
    assert not leaked, leaked
    assert outside_state(outside) == before, "something outside the root was changed"


async def test_a_flipping_folder_never_lets_a_listing_or_glob_show_what_is_outside(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "sub" / "inner").mkdir(parents=True)
    outside.mkdir()
    (outside / "outside-only.txt").write_bytes(OUTSIDE_SECRET)
    (outside / "inner").mkdir()
    (outside / "inner" / "outside-deep.txt").write_bytes(OUTSIDE_SECRET)
    (root / "sub" / "inside.txt").write_text("inside\n")
    stop = threading.Event()
    flipper = threading.Thread(target=flip_forever, args=(root / "sub", outside, stop), daemon=True)
    fs = FileTools(root, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False)
    shown: list[str] = []
    flipper.start()
    try:
        for _ in range(ROUNDS):
            for name, args in [
                ("list_directory", {"path": ".", "depth": 3}),
                ("list_directory", {"path": "sub", "depth": 2}),
                ("glob", {"pattern": "**/*"}),
                ("glob", {"pattern": "**/*", "path": "sub"}),
            ]:
                shown.append((await fs.call(name, args)).text)
    finally:
        stop.set()
        flipper.join(5)
        await fs.close()
    assert not [text for text in shown if "outside-" in text]
    assert any("inside.txt" in text for text in shown), "the race never let a listing through"


@pytest.mark.parametrize(
    "policy", [SandboxPolicy(), SandboxPolicy(window_reads_above=0)], ids=["whole", "windows"]
)
async def test_a_file_swapped_for_a_symlink_is_never_read_through(
    tmp_path: Path, policy: SandboxPolicy
) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_bytes(OUTSIDE_SECRET)
    target = root / "notes.txt"
    target.write_bytes(b"inside\n")
    link = root / "notes-link"
    link.symlink_to(outside / "secret.txt")
    stop = threading.Event()
    libc = ctypes.CDLL(None, use_errno=True)

    def swap() -> None:
        a, b = os.fsencode(target), os.fsencode(link)
        while not stop.is_set():
            libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)

    swapper = threading.Thread(target=swap, daemon=True)
    fs = FileTools(
        root, policy=policy, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False
    )
    swapper.start()
    try:
        texts = [(await fs.read_file("notes.txt")).text for _ in range(400)]
    finally:
        stop.set()
        swapper.join(5)
        await fs.close()
    assert not [text for text in texts if "outside secret" in text]
    assert any("inside" in text for text in texts), "the race never let a read through at all"


def leaking_command(root: Path, outside: Path) -> str:
    """Copies a secret from outside the root into it, then leaves a marker."""
    return f"cat {outside / 'secret.txt'} > {root / 'leaked.txt'}; touch {root / 'ran'}"


def root_and_secret(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_bytes(OUTSIDE_SECRET)
    return root, outside


async def test_without_the_kernel_sandbox_a_command_is_refused_before_anyone_is_asked(
    tmp_path: Path,
) -> None:
    root, outside = root_and_secret(tmp_path)
    asked: list[str] = []

    class Recorder(AutoApprovePolicy):
        def before_tool_execution(self, call):  # type: ignore[no-untyped-def]
            asked.append(call.tool)
            return super().before_tool_execution(call)

    async with FileTools(root, provider=LocalProvider(), hooks=[Recorder()], audit=False) as fs:
        result = await fs.run_command(leaking_command(root, outside))
    assert result.error is not None and result.error.code == "SANDBOX_UNAVAILABLE"
    assert "allow_unconfined_commands=True" in result.text
    assert "--allow-unconfined-commands" in result.text
    assert asked == []
    assert not (root / "ran").exists() and not (root / "leaked.txt").exists()


async def test_a_person_who_opts_in_gets_unconfined_commands(tmp_path: Path) -> None:
    root, outside = root_and_secret(tmp_path)
    opted_in = SandboxPolicy(allow_unconfined_commands=True)
    async with FileTools(
        root, opted_in, provider=LocalProvider(), hooks=[AutoApprovePolicy()], audit=False
    ) as fs:
        result = await fs.run_command(leaking_command(root, outside))
    assert result.ok, result.text
    assert result.data["sandboxed"] is False
    assert (root / "ran").exists()


def cli_command(root: Path, outside: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    args = json.dumps({"command": leaking_command(root, outside)})
    options = ["--args", args, "--provider", "local", "--policy", "auto-approve", *flags]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tinyagent_fs",
            "call",
            "run_command",
            "--root",
            str(root),
            *options,
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def test_the_command_line_refuses_an_unconfined_command_unless_the_flag_is_given(
    tmp_path: Path,
) -> None:
    root, outside = root_and_secret(tmp_path)
    refused = cli_command(root, outside)
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["error"]["code"] == "SANDBOX_UNAVAILABLE"
    assert not (root / "ran").exists() and not (root / "leaked.txt").exists()
    allowed = cli_command(root, outside, "--allow-unconfined-commands")
    assert allowed.returncode == 0, allowed.stdout
    assert (root / "ran").exists()


@pytest.mark.parametrize("opted_in", [False, True], ids=["default", "flag"])
def test_the_mcp_server_refuses_an_unconfined_command_unless_the_flag_is_given(
    tmp_path: Path, opted_in: bool
) -> None:
    root, outside = root_and_secret(tmp_path)
    flags = ["--allow-unconfined-commands"] if opted_in else []
    call = {"name": "run_command", "arguments": {"command": leaking_command(root, outside)}}
    with RawServer(
        [root], tmp_path / "audit", "--provider", "local", "--policy", "auto-approve", *flags
    ) as server:
        server.initialize()
        answer = server.request("tools/call", call)["result"]
        assert server.close() == 0
    assert answer["isError"] is not opted_in
    assert (root / "ran").exists() is opted_in
    if not opted_in:
        assert answer["structuredContent"]["error"]["code"] == "SANDBOX_UNAVAILABLE"
        assert not (root / "leaked.txt").exists()
