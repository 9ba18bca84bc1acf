"""A large write hashes each new content once: the bytes read back are recognised
as what the toolkit last wrote, and the audit log reuses the digest of the bytes
encoded from the content argument. The checks those digests serve still hold."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from tinyagent_fs import FileTools
from tinyagent_fs._runtime import digest
from tinyagent_fs._runtime.digest import MEMO_FROM_BYTES
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import Decision, ToolCall
from tinyagent_fs.journal.undo_journal import ENTRY_NAME
from tinyagent_fs.text.codec import DecodedText, line_count
from tinyagent_fs.tools import write_tools

from ..conftest import audit_events, make_provider

LINES = MEMO_FROM_BYTES // 15 + 1


def versions() -> tuple[str, str]:
    body = "".join(f"line {i:09d}\n" for i in range(LINES))
    return "# A\n" + body, "# B\n" + body


async def test_a_write_over_the_toolkits_own_content_hashes_only_the_new_bytes(
    fs: FileTools, project: Path, audit: AuditLog, hashed_sizes: list[int]
) -> None:
    first, second = versions()
    assert (await fs.write_file("big.txt", first)).ok
    hashed_sizes.clear()
    written = await fs.write_file("big.txt", second)
    assert written.ok, written.text
    assert hashed_sizes == [len(second)]
    assert (project / "big.txt").read_text() == second
    logged = audit_events(audit)[-1]["arguments"]["content"]
    assert logged["sha256"] == hashlib.sha256(second.encode()).hexdigest()
    assert (await fs.undo()).ok
    assert (project / "big.txt").read_text() == first


async def test_the_new_bytes_of_a_1_mb_write_are_hashed_on_the_hashing_thread(
    fs: FileTools, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "1 MB" as people write it (1,000,000 bytes, under 1 MiB) is hashed ahead: the
    journal waits for that digest before the commit starts."""
    threads: dict[int, str] = {}
    real = digest._sha256

    def named(data: bytes) -> str:
        threads[len(data)] = threading.current_thread().name
        return real(data)

    monkeypatch.setattr(digest, "_sha256", named)
    content = "x" * 999_999 + "\n"
    written = await fs.write_file("big.txt", content)
    assert written.ok, written.text
    assert threads[len(content)].startswith("tinyagent-fs-hash")
    assert (project / "big.txt").read_text() == content


async def test_content_changed_on_disk_after_the_toolkits_write_is_still_a_conflict(
    fs: FileTools, project: Path
) -> None:
    first, second = versions()
    assert (await fs.write_file("big.txt", first)).ok
    (project / "big.txt").write_text(first.replace("line 000000007", "line 00000000X"))
    refused = await fs.write_file("big.txt", second)
    assert not refused.ok and refused.error is not None
    assert refused.error.code == "CONFLICT"
    assert "line 00000000X" in (project / "big.txt").read_text()


def resident_bytes(path: Path) -> int:
    found = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(found.stdout.strip())


@pytest.mark.skipif(shutil.which("fincore") is None, reason="needs util-linux fincore")
async def test_the_old_content_the_journal_keeps_leaves_the_page_cache(
    fs: FileTools, project: Path
) -> None:
    first, second = versions()
    assert (await fs.write_file("big.txt", first)).ok
    fd = os.open(project / "big.txt", os.O_RDONLY)
    try:
        os.fsync(fd)  # clean pages: the kernel may drop them when told
    finally:
        os.close(fd)
    assert resident_bytes(project / "big.txt") > 0
    written = await fs.write_file("big.txt", second)
    assert written.ok, written.text
    assert fs.journal is not None
    kept = [
        fs.journal.directory / f"{found['stem']}.0.old"
        for found in map(ENTRY_NAME.fullmatch, os.listdir(fs.journal.directory))
        if found is not None and found["change_id"] == written.data["change_id"]
    ]
    assert len(kept) == 1
    fs.journal.settle()  # the page-cache drop goes with the committed mark, written behind
    assert resident_bytes(kept[0]) == 0  # looked at before reading it back
    assert kept[0].read_text() == first


def count_calls(fs: FileTools, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ops the toolkit asks its provider for, from now on (the provider still runs them)."""
    ops: list[str] = []
    call = fs.provider.call

    async def counted(op: str, **kwargs: object) -> object:
        ops.append(op)
        return await call(op, **kwargs)

    monkeypatch.setattr(fs.provider, "call", counted)
    return ops


async def test_an_edit_of_the_file_the_toolkit_just_wrote_does_not_read_it_again(
    fs: FileTools, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = versions()
    assert (await fs.write_file("big.txt", first)).ok
    ops = count_calls(fs, monkeypatch)
    edited = await fs.edit_file("big.txt", "line 000000007\n", "line seven\n")
    assert edited.ok, edited.text
    assert "read_bytes" not in ops and "commit_changes" in ops
    assert (project / "big.txt").read_text() == first.replace("line 000000007", "line seven")


async def test_an_edit_planned_on_the_last_view_of_a_file_changed_since_is_a_conflict(
    fs: FileTools, project: Path
) -> None:
    first, _ = versions()
    assert (await fs.write_file("big.txt", first)).ok
    changed = first.replace("line 000000007", "line 00000000X")  # same size
    (project / "big.txt").write_text(changed)
    for old_string in ("line 000000007", "line 00000000X"):  # in the last view; on disk only
        refused = await fs.edit_file("big.txt", old_string, "line seven")
        assert not refused.ok and refused.error is not None
        assert refused.error.code == "CONFLICT", refused.text
    assert (project / "big.txt").read_text() == changed


@pytest.fixture
def decoded_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every content the write tools decode from now on (the real
    decoder still decodes)."""
    decoded: list[int] = []
    real = write_tools.decode_text

    def counted(data: bytes, name: str = "") -> DecodedText:
        decoded.append(len(data))
        return real(data, name)

    monkeypatch.setattr(write_tools, "decode_text", counted)
    return decoded


async def test_a_change_of_the_content_the_toolkit_last_wrote_or_read_decodes_nothing(
    fs: FileTools, project: Path, decoded_sizes: list[int]
) -> None:
    first, second = versions()
    (project / "big.txt").write_text(first)
    assert (await fs.read_file("big.txt", limit=5)).ok
    steps = [
        fs.write_file("big.txt", second),
        fs.edit_file("big.txt", "line 000000007\n", "line seven\n"),
        fs.multi_edit("big.txt", [{"old_string": "line seven\n", "new_string": "7\n8\n"}]),
        fs.write_file("big.txt", first),
    ]
    for step in steps:
        done = await step
        assert done.ok, done.text
    assert decoded_sizes == []
    assert (await fs.undo()).ok  # the journal kept the bytes behind each view
    assert (project / "big.txt").read_text() == second.replace("line 000000007\n", "7\n8\n")


async def test_line_counts_carried_from_write_to_write_match_the_file(
    fs: FileTools, project: Path
) -> None:
    first, _ = versions()
    contents = [first, first + "tail\n", first[: len(first) // 2], "# C\n" + first[4:] + "x"]
    for content in contents:
        written = await fs.write_file("big.txt", content)
        assert written.ok, written.text
        assert written.data["lines"] == line_count(content), written.text
        assert f"{line_count(content)} lines" in written.text
    edited = await fs.edit_file("big.txt", "line 000000003\n", "three\nlines\nnow\n")
    assert edited.ok, edited.text
    content = (project / "big.txt").read_text()
    assert content.endswith("x") and "three\nlines\nnow\n" in content
    written = await fs.write_file("big.txt", content + "\none more\n")
    assert written.data["lines"] == line_count(content) + 1


class RewritesContent:
    """A reviewer who replaces the content of every write with its own."""

    def __init__(self, replacement: str) -> None:
        self.replacement = replacement

    def before_tool_execution(self, call: ToolCall) -> Decision:
        return Decision.modify(content={"big.txt": self.replacement}, decided_by="reviewer")


async def test_content_a_reviewer_replaced_is_counted_and_decoded_afresh(
    project: Path, audit: AuditLog, provider_name: str, decoded_sizes: list[int]
) -> None:
    first, second = versions()
    replacement = "# R\n" + second[4:]  # the size of the planned content
    tools = FileTools(
        project,
        provider=make_provider(provider_name, project),
        hooks=[RewritesContent(replacement)],
        audit=audit,
    )
    try:
        written = await tools.write_file("big.txt", second)
        assert written.ok, written.text
        assert written.data["lines"] == line_count(replacement)
        assert (project / "big.txt").read_text() == replacement
        decoded_sizes.clear()
        again = await tools.write_file("big.txt", first)
        assert again.ok, again.text
        assert decoded_sizes == [len(replacement.encode())]  # not a view of `second`
        assert (project / "big.txt").read_text() == replacement
    finally:
        await tools.close()


async def test_a_write_looks_at_its_folder_once_and_only_for_a_new_file(
    fs: FileTools, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "pkg" / "sub").mkdir(parents=True)
    ops = count_calls(fs, monkeypatch)
    written = await fs.write_file("pkg/sub/new.txt", "hello\n")
    assert written.ok, written.text
    assert ops == ["read_bytes", "stat_path", "commit_changes"]
    (project / "pkg" / "old.txt").write_text("old\n")
    ops.clear()
    overwritten = await fs.write_file("pkg/old.txt", "new\n")  # a file there: no folder look
    assert overwritten.ok, overwritten.text
    assert ops == ["read_bytes", "commit_changes"]
    created = await fs.write_file("pkg/other/deeper/new.txt", "hi\n", create_dirs=True)
    assert created.ok, created.text
    assert (project / "pkg/other/deeper/new.txt").read_text() == "hi\n"
    assert (await fs.undo()).ok
    assert not (project / "pkg" / "other").exists()
