"""A secret the person adds while a session runs: the session may see it, so it is
ended at once, its output withheld and what it changed meanwhile quarantined, even
when it copies the secret and renames it away before the model's next call."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import struct
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.providers import secret_quarantine, secret_watch
from tinyagent_fs.providers.linux import LinuxSandboxProvider

from ..sandbox_support import is_running, namespace_pids, require_sandbox

pytestmark = require_sandbox()
SECRET = "PERSON_SECRET_42"
DENIED = SandboxPolicy().denied_patterns
COPY_AND_HIDE = (
    "while [ ! -s b/.env ]; do sleep 0.01; done; cp b/.env b/copy.txt; "
    "mkdir -p deep/er; cat b/.env > deep/er/notes.md; chmod 000 deep/er deep; "
    "mv b/.env b/renamed.txt; cat b/renamed.txt; sleep 30"
)


@pytest.fixture
async def fs(project: Path) -> AsyncIterator[FileTools]:
    (project / "b").mkdir()
    provider = LinuxSandboxProvider(project, SandboxPolicy())
    tools = FileTools(project, provider=provider, hooks=[AutoApprovePolicy()], audit=False)
    yield tools
    await tools.close()


async def person_adds_the_secret(project: Path, settle_s: float = 1.0) -> None:
    (project / "b" / ".env").write_text(SECRET + "\n")
    await asyncio.sleep(settle_s)


def readable_copies(project: Path) -> list[Path]:
    """Entries the model could name (or read) that hold the secret, in content or name."""
    found = []
    for path in project.rglob("*"):
        relative = path.relative_to(project).as_posix()
        if relative.startswith(".tinyagent-quarantine/") or path.name == ".env":
            continue
        if SECRET in relative or (path.is_file() and SECRET in path.read_text(errors="replace")):
            found.append(path)
    return found


def quarantine_manifests(project: Path) -> dict[str, str]:
    """What the toolkit moved away, as the person finds it: number -> original path."""
    moved: dict[str, str] = {}
    for manifest in (project / ".tinyagent-quarantine").glob("*/manifest.json"):
        moved.update(json.loads(manifest.read_text())["moved"])
    return moved


async def model_sees_no_secret(fs: FileTools) -> None:
    """Every way the model looks finds neither the secret nor a name made of it."""
    looked = await fs.run_command(
        "grep -r PERSON_SECRET . ; ls -laR . ; cat .tinyagent-quarantine/*/* ; "
        'python3 -c "import os; print([[os.getxattr(d, a) for a in os.listxattr(d)] '
        "for d, _, _ in os.walk('.')])\"; "
        "echo searched"
    )
    assert looked.ok and "searched" in looked.text, looked.text
    assert SECRET not in looked.text
    listed = await fs.list_directory(".", depth=5)
    found = await fs.glob("**/*")
    assert SECRET not in listed.text and SECRET not in found.text


@pytest.fixture
def slow_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The watch's thread never gets to run (a loaded machine): the session copies the
    secret and renames it away, and only the toolkit's next call finds the trip."""
    monkeypatch.setattr(secret_watch.SecretWatch, "_run", lambda self: None)


@pytest.mark.usefixtures("slow_watch")
@pytest.mark.parametrize("next_call", ["write_stdin", "read_file", "run_command"])
async def test_a_secret_copied_and_renamed_away_by_a_session_never_reaches_the_model(
    fs: FileTools, project: Path, next_call: str
) -> None:
    session = await fs.exec_command(COPY_AND_HIDE, yield_time_ms=100)
    await person_adds_the_secret(project)
    assert (project / "b" / "copy.txt").read_text() == SECRET + "\n", "the attack ran"
    if next_call == "write_stdin":
        result = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=100)
        assert result.data["ended"] == "secrets_changed", result.text
        assert result.data["secret_copies_quarantined"] >= 3, result.data
        moved = set(quarantine_manifests(project).values())
        assert {"b/copy.txt", "b/renamed.txt", "deep"} <= moved, moved
    elif next_call == "read_file":
        result = await fs.read_file("b/copy.txt")
    else:
        result = await fs.run_command("cat b/copy.txt b/renamed.txt deep/er/notes.md")
    assert SECRET not in result.text
    assert readable_copies(project) == []
    await model_sees_no_secret(fs)


NAMES_AND_ATTRIBUTES = (
    "python3 -c \"\nimport os, time\nwhile not os.path.exists('b/.env') or not "
    "open('b/.env').read().strip(): time.sleep(0.01)\nsecret = open('b/.env').read().strip()\n"
    "os.mkdir('b/d_' + secret)\nopen('b/f_' + secret, 'w').close()\n"
    "os.symlink('x', 'b/l_' + secret)\nos.setxattr('docs', 'user.s', secret.encode())\n"
    "os.setxattr('.', 'user.s', secret.encode())\ntime.sleep(30)\n\""
)


@pytest.mark.usefixtures("slow_watch")
async def test_names_and_attributes_a_session_made_of_the_secret_never_reach_the_model(
    fs: FileTools, project: Path
) -> None:
    session = await fs.exec_command(NAMES_AND_ATTRIBUTES, yield_time_ms=100)
    await person_adds_the_secret(project)
    assert (project / "b" / f"d_{SECRET}").is_dir(), "the attack ran"
    result = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=0)
    assert result.data["ended"] == "secrets_changed", result.text
    assert SECRET not in json.dumps(result.data) and SECRET not in result.text
    assert (project / "docs" / "guide.md").exists(), "a folder that only changed stays"
    assert readable_copies(project) == []
    await model_sees_no_secret(fs)


async def test_the_session_is_ended_within_moments_of_the_secret(
    fs: FileTools, project: Path
) -> None:
    session = await fs.exec_command("sleep 600", yield_time_ms=100)
    provider = fs.provider
    assert isinstance(provider, LinuxSandboxProvider)
    alive = namespace_pids(provider)
    assert len(alive) >= 2, "the worker and the session's sleep"
    (project / "b" / ".env").write_text(SECRET + "\n")  # the person; no call follows
    deadline = time.monotonic() + 2
    while any(is_running(pid) for pid in alive):
        assert time.monotonic() < deadline, "the session outlived the secret's arrival"
        await asyncio.sleep(0.01)
    result = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=0)
    assert result.data["ended"] == "secrets_changed"


RENAME_AT_ONCE = r"""
import os, time
print("READY", flush=True)
while True:
    try:
        names = os.listdir("incoming/keys")
    except OSError:
        continue
    for name in names:
        if name.endswith(".pem"):
            os.rename("incoming/keys/" + name, "incoming/keys/notes.txt")
            print("GOT:", open("incoming/keys/notes.txt").read().strip(), flush=True)
            time.sleep(30)
"""


async def test_a_key_in_a_folder_moved_in_renamed_at_once_never_reaches_the_model(
    fs: FileTools, project: Path, tmp_path: Path
) -> None:
    (project / "rename.py").write_text(RENAME_AT_ONCE)
    session = await fs.exec_command("python3 rename.py", yield_time_ms=500)
    assert "READY" in session.text, session.text
    outside = tmp_path / "incoming"
    (outside / "keys").mkdir(parents=True)
    (outside / "keys" / "id.pem").write_text(SECRET + "\n")
    outside.rename(project / "incoming")  # the person; the session renames the key at once
    await asyncio.sleep(1)
    result = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=0)
    assert SECRET not in result.text
    assert result.data["ended"] == "secrets_changed", result.text
    read = await fs.read_file("incoming/keys/notes.txt")
    assert SECRET not in read.text
    assert readable_copies(project) == []


async def test_work_in_the_project_ends_nothing(fs: FileTools, project: Path) -> None:
    (project / "b" / ".env").write_text(SECRET + "\n")  # before: masked from the start
    session = await fs.exec_command("cat", yield_time_ms=100)
    (project / "docs").rename(project / "manual")  # the person tidies up
    (project / "manual" / "more.txt").write_text("plain\n")
    ran = await fs.run_command("mkdir -p build/out && echo x > build/out/a.o && ls manual")
    assert ran.ok and "more.txt" in ran.text, ran.text
    result = await fs.write_stdin(session.data["session_id"], "hello\n", yield_time_ms=300)
    assert result.data["running"], result.text
    assert "hello" in result.text


def test_a_folder_renamed_with_its_masked_secret_does_not_trip(project: Path) -> None:
    (project / "b" / "inner").mkdir(parents=True)
    (project / "b" / "inner" / ".env").write_text(SECRET)
    watch = secret_watch.SecretWatch([str(project)], DENIED, lambda trip: None)
    try:
        (project / "b").rename(project / "c")
        (project / "c" / "inner" / "x.txt").write_text("")
        assert watch.check() is None
        (project / "c" / "inner" / ".env.local").write_text(SECRET)
        trip = watch.check()
        assert trip is not None and trip.path.endswith("c/inner/.env.local"), trip
    finally:
        watch.stop()


async def test_a_new_denial_line_ends_the_sessions(fs: FileTools, project: Path) -> None:
    (project / "b" / "token.txt").write_text(SECRET + "\n")
    session = await fs.exec_command("cat", yield_time_ms=100)
    (project / ".tinyagentignore").write_text("token.txt\n")
    await asyncio.sleep(0.5)
    result = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=0)
    assert result.data["ended"] == "secrets_changed", result.text


def test_lost_events_trip_the_watch(project: Path) -> None:
    tripped: list[secret_watch.Trip] = []
    watch = secret_watch.SecretWatch([str(project)], DENIED, tripped.append)
    try:
        overflow = secret_watch.EVENT_HEAD.pack(-1, secret_watch.IN_Q_OVERFLOW, 0, 0)
        watch._judge(overflow)
        assert watch.tripped is not None and watch.tripped.cause == "events_lost"
    finally:
        watch.stop()


async def test_a_folder_that_cannot_be_watched_refuses_the_session(
    fs: FileTools, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "b" / "inner").mkdir()

    def no_room(inotify_fd: int, path: str, events: int) -> int:
        raise OSError(28, "No space left on device", path)

    monkeypatch.setattr(secret_watch, "_add_watch", no_room)
    result = await fs.exec_command("echo started", yield_time_ms=100)
    assert not result.ok
    assert result.data["cause"] == "watch_failed", result.text
    ran = await fs.run_command("echo started")
    assert ran.ok and "started" in ran.text, "commands do not need the watch"


@pytest.mark.usefixtures("slow_watch")
async def test_copies_that_cannot_be_quarantined_keep_the_sandbox_shut(
    fs: FileTools, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cannot(root_fd: int, relative: str, holder: int, number: str) -> None:
        raise PermissionError(1, "Operation not permitted", relative)

    monkeypatch.setattr(secret_quarantine, "_move_one", cannot)
    session = await fs.exec_command(COPY_AND_HIDE, yield_time_ms=100)
    await person_adds_the_secret(project)
    result = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=0)
    assert result.data["ended"] == "secrets_changed", result.text
    assert result.data["secret_copies_left"] >= 3, result.data
    left = [
        json.loads(manifest.read_text())["left"]
        for manifest in (project / ".tinyagent-quarantine").glob("*/manifest.json")
    ]
    assert any(path.endswith("b/copy.txt") for paths in left for path in paths), left
    refused = await fs.read_file("b/copy.txt")
    assert not refused.ok and SECRET not in refused.text
    assert refused.data["cause"] == "secret_copies_left", refused.text
    (project / "b" / "copy.txt").unlink()  # the person looks and removes them
    (project / "b" / "renamed.txt").unlink()
    shutil.rmtree(project / "deep")
    assert (await fs.read_file("docs/guide.md")).ok


@pytest.mark.usefixtures("slow_watch")
async def test_reads_in_flight_together_never_return_a_copy(fs: FileTools, project: Path) -> None:
    await fs.exec_command(COPY_AND_HIDE, yield_time_ms=100)
    await fs.read_file("docs/guide.md")
    await person_adds_the_secret(project)
    reads = await asyncio.gather(
        *(fs.read_file(name) for name in ["docs/guide.md"] * 3 + ["b/copy.txt"] * 3)
    )
    assert not any(SECRET in read.text for read in reads), [read.text for read in reads]


def test_the_toolkits_own_quarantine_does_not_trip_the_watch(project: Path) -> None:
    (project / ".bashrc").write_text("echo planted\n")
    watch = secret_watch.SecretWatch([str(project)], DENIED, lambda trip: None)
    try:
        (project / ".bashrc").rename(project / ".bashrc.quarantined")
        assert watch.check() is None
        (project / ".env.production").write_text(SECRET)
        trip = watch.check()
        assert trip is not None and trip.cause == "secret_added", trip
    finally:
        watch.stop()


def test_a_denied_name_renamed_away_trips_the_watch(project: Path) -> None:
    """A secret renamed before the watch saw it arrive still leaves its old name behind."""
    watch = secret_watch.SecretWatch([str(project)], DENIED, lambda trip: None)
    try:
        (project / ".env").rename(project / "notes.txt")
        trip = watch.check()
        assert trip is not None and trip.cause == "secret_moved", trip
    finally:
        watch.stop()


def test_an_editors_temporary_save_of_a_secret_trips_the_watch(project: Path) -> None:
    """JetBrains saves ``key.pem`` through ``key.pem___jb_tmp___``: the secret is there,
    under that name, before it has its own."""
    watch = secret_watch.SecretWatch([str(project)], DENIED, lambda trip: None)
    try:
        (project / "b").mkdir(exist_ok=True)
        assert watch.check() is None
        (project / "b" / "key.pem___jb_tmp___").write_text(SECRET)
        trip = watch.check()
        assert trip is not None and trip.cause == "secret_added", trip
    finally:
        watch.stop()


@pytest.mark.usefixtures("slow_watch")
async def test_a_file_planted_as_the_quarantine_folder_is_no_way_out(
    fs: FileTools, project: Path
) -> None:
    planted = COPY_AND_HIDE.replace(
        "cp b/.env b/copy.txt;", "cp b/.env b/copy.txt; cp b/.env .tinyagent-quarantine;"
    )
    session = await fs.exec_command(planted, yield_time_ms=100)
    await person_adds_the_secret(project)
    assert (project / ".tinyagent-quarantine").is_file(), "the attack ran"
    result = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=0)
    assert result.data["ended"] == "secrets_changed", result.text
    assert (project / ".tinyagent-quarantine").is_dir()
    assert {"b/copy.txt", "b/renamed.txt"} <= set(quarantine_manifests(project).values())
    assert readable_copies(project) == []
    await model_sees_no_secret(fs)


@pytest.mark.usefixtures("slow_watch")
async def test_a_quarantine_folder_that_cannot_be_made_shuts_the_sandbox(
    fs: FileTools, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cannot(root_fd: int, trip: str) -> int:
        raise PermissionError(13, "Permission denied", secret_quarantine.QUARANTINE_DIR)

    monkeypatch.setattr(secret_quarantine, "_quarantine_folder", cannot)
    session = await fs.exec_command(COPY_AND_HIDE, yield_time_ms=100)
    await person_adds_the_secret(project)
    result = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=0)
    assert result.data["ended"] == "secrets_changed" and SECRET not in result.text
    assert result.data["secret_copies_quarantined"] == 0
    assert result.data["secret_copies_left"] >= 1, result.data
    refused = await fs.read_file("b/copy.txt")
    assert not refused.ok and refused.data["cause"] == "secret_copies_left", refused.text


@pytest.mark.usefixtures("slow_watch")
async def test_a_folder_that_cannot_be_scrubbed_shuts_the_sandbox(
    fs: FileTools, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secret_quarantine, "_scrubbed", lambda root_fd, relative: False)
    session = await fs.exec_command(NAMES_AND_ATTRIBUTES, yield_time_ms=100)
    await person_adds_the_secret(project)
    result = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=0)
    assert result.data["secret_copies_left"] >= 1, result.data
    refused = await fs.run_command("python3 -c \"import os; print(os.getxattr('docs', 'user.s'))\"")
    assert not refused.ok and refused.data["cause"] == "secret_copies_left", refused.text


@pytest.mark.usefixtures("slow_watch")
async def test_a_name_that_is_not_utf8_does_not_stop_the_quarantine(
    fs: FileTools, project: Path
) -> None:
    script = (
        "python3 -c \"\nimport os, time\nwhile not os.path.exists('b/.env') or not "
        "open('b/.env').read().strip(): time.sleep(0.01)\nsecret = open('b/.env').read()\n"
        "os.setxattr('docs', 'user.s', secret.encode())\nopen(b'b/\\xff', 'w').write(secret)\n"
        'time.sleep(30)\n"'
    )
    session = await fs.exec_command(script, yield_time_ms=100)
    await person_adds_the_secret(project)
    result = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=0)
    assert result.data["ended"] == "secrets_changed", result.text
    assert result.data["secret_copies_quarantined"] >= 1 and not result.data["secret_copies_left"]
    assert quarantine_manifests(project), "the manifest was written"
    await model_sees_no_secret(fs)


def test_a_folders_acls_are_cleared_with_its_attributes(project: Path) -> None:
    entry = struct.Struct("<HHI")
    acl = struct.pack("<I", 2) + b"".join(
        entry.pack(tag, perm, 0xFFFFFFFF) for tag, perm in ((1, 7), (4, 5), (0x20, 5))
    )
    os.setxattr(project / "docs", "system.posix_acl_default", acl)
    root_fd = os.open(project, os.O_PATH | os.O_DIRECTORY)
    try:
        assert secret_quarantine._scrubbed(root_fd, "docs")
    finally:
        os.close(root_fd)
    assert "system.posix_acl_default" not in os.listxattr(project / "docs")


@pytest.mark.usefixtures("slow_watch")
async def test_a_quarantine_that_breaks_unexpectedly_shuts_the_sandbox(
    fs: FileTools, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("unforeseen")

    monkeypatch.setattr(secret_quarantine, "quarantine_since", broken)
    session = await fs.exec_command(COPY_AND_HIDE, yield_time_ms=100)
    await person_adds_the_secret(project)
    result = await fs.write_stdin(session.data["session_id"], "", yield_time_ms=0)
    assert result.data["ended"] == "secrets_changed" and SECRET not in result.text
    assert result.data["secret_copies_left"] >= 1, result.data
    refused = await fs.read_file("b/copy.txt")
    assert not refused.ok and refused.data["cause"] == "secret_copies_left", refused.text
