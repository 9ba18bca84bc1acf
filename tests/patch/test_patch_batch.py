"""apply_patch at scale: files read in one provider call, the review diff taken from
the patch's own hunks; neither changes a result."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import audit_events, make_provider
from tinyagent_fs import FileTools
from tinyagent_fs._runtime import digest
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.hooks import AutoApprovePolicy, Decision
from tinyagent_fs.providers import LocalProvider

FILES = 24


def toolkit(root: Path, provider: str, audit: AuditLog | bool = False) -> FileTools:
    return FileTools(
        root, provider=make_provider(provider, root), hooks=[AutoApprovePolicy()], audit=audit
    )


class CountingProvider(LocalProvider):
    """The in-process provider, noting which primitives each call asks for."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    async def call(self, op: str, **kwargs: Any) -> Any:
        self.ops.append(op)
        return await super().call(op, **kwargs)


def many_files(root: Path) -> str:
    """FILES modules under two folders and a patch that changes each and adds one."""
    sections = []
    for index in range(FILES):
        name = f"pkg{index % 2}/mod{index:02}.py"
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("".join(f"line {n}\n" for n in range(20)))
        sections.append(
            f"--- a/{name}\n+++ b/{name}\n@@ -9,3 +9,3 @@\n line 8\n-line 9\n+line 9 of {index}\n"
            " line 10\n"
        )
    sections.append("--- /dev/null\n+++ b/new/added.py\n@@ -0,0 +1 @@\n+added\n")
    return "".join(sections)


async def test_every_file_of_a_patch_is_read_in_one_provider_call(tmp_path: Path) -> None:
    patch = many_files(tmp_path)
    provider = CountingProvider()
    async with FileTools(
        tmp_path, provider=provider, hooks=[AutoApprovePolicy()], audit=False, journal=False
    ) as fs:
        result = await fs.apply_patch(patch)
    assert result.ok, result.text
    assert provider.ops.count("read_files") == 1
    assert "read_bytes" not in provider.ops
    assert "stat_path" not in provider.ops
    assert provider.ops.count("stat_paths") == 1, "every folder in one look-up, not one per file"
    assert (tmp_path / "pkg1/mod03.py").read_text().splitlines()[9] == "line 9 of 3"
    assert (tmp_path / "new/added.py").read_text() == "added\n"


NESTED = "".join(
    f"--- /dev/null\n+++ b/{name}\n@@ -0,0 +1 @@\n+{name}\n"
    for name in ["a/b/c/one.py", "a/b/two.py", "kept/x/three.py", "a/four.py", "kept/five.py"]
)


async def test_new_folders_are_planned_once_each_outermost_first_one_call_per_level(
    tmp_path: Path,
) -> None:
    (tmp_path / "kept").mkdir()
    provider = CountingProvider()
    seen: list[list[tuple[str, str]]] = []

    class Reviewer:
        def before_tool_execution(self, call: Any) -> Decision:
            seen.append([(c.kind.value, c.path.name) for c in call.changeset.changes])
            return Decision.proceed("person")

    async with FileTools(
        tmp_path, provider=provider, hooks=[Reviewer()], audit=False, journal=False
    ) as fs:
        result = await fs.apply_patch(NESTED)
    assert result.ok, result.text
    assert [name for kind, name in seen[0] if kind == "mkdir"] == ["a", "b", "c", "x"]
    assert provider.ops.count("stat_paths") == 1, "a/b/c, a/b and a/ are all in the first look"
    assert (tmp_path / "a/b/c/one.py").read_text() == "a/b/c/one.py\n"


async def test_a_file_where_a_folder_should_be_is_not_a_directory(
    tmp_path: Path, provider_name: str
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a/b").write_text("a file\n")
    async with toolkit(tmp_path, provider_name) as fs:
        with pytest.raises(ToolError) as caught:
            await fs.context.missing_folders([tmp_path / "z/y", tmp_path / "a/b/c/d"])
        assert await fs.context.missing_folders([tmp_path / "z/y", tmp_path / "a/x"]) == [
            tmp_path / "z",
            tmp_path / "z/y",
            tmp_path / "a/x",
        ]
    assert caught.value.code is ErrorCode.NOT_A_DIRECTORY
    assert caught.value.message == "a/b exists and is not a directory"


async def test_a_batch_read_that_fails_names_the_file_as_a_single_read_does(
    tmp_path: Path, provider_name: str
) -> None:
    patch = many_files(tmp_path)
    (tmp_path / "pkg0/mod04.py").unlink()
    (tmp_path / "pkg0/mod04.py").mkdir()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    async with toolkit(tmp_path, provider_name) as fs:
        result = await fs.apply_patch(patch)
    assert result.error is not None and result.error.code == "IS_A_DIRECTORY", result.text
    assert "pkg0/mod04.py" in result.error.message
    assert str(tmp_path) not in result.error.message
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


async def test_a_large_patch_commits_whole_on_every_provider(
    tmp_path: Path, provider_name: str, audit: AuditLog
) -> None:
    patch = many_files(tmp_path)
    async with toolkit(tmp_path, provider_name, audit) as fs:
        result = await fs.apply_patch(patch)
        assert result.ok, result.text
        for index in range(FILES):
            lines = (tmp_path / f"pkg{index % 2}/mod{index:02}.py").read_text().splitlines()
            assert lines[9] == f"line 9 of {index}"
        assert not [p for p in tmp_path.rglob("*") if ".tafs-" in p.name]
        (event,) = audit_events(audit)
        assert (event["lines_added"], event["lines_removed"]) == (FILES + 1, FILES)
        assert (await fs.undo()).ok
    assert all(
        (tmp_path / f"pkg{i % 2}/mod{i:02}.py").read_text().splitlines()[9] == "line 9"
        for i in range(FILES)
    )
    assert not (tmp_path / "new").exists()


REPEATED_LINE = """\
--- a/a.txt
+++ b/a.txt
@@ -2,3 +2,3 @@
 two
-three
+three
 four
@@ -8,2 +8,2 @@
 eight
-nine
+NINE
"""


async def test_the_review_diff_is_the_patch_hunks_at_the_lines_they_landed(
    tmp_path: Path, audit: AuditLog
) -> None:
    """A line the patch removes and adds back unchanged is shown as the patch says,
    which a diff recomputed from the two texts would not show."""
    words = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    (tmp_path / "a.txt").write_text("".join(f"{word}\n" for word in words))
    seen: list[str] = []

    class Reviewer:
        def before_tool_execution(self, call: Any) -> Decision:
            seen.append(call.diff)
            return Decision.proceed("person")

    async with FileTools(tmp_path, hooks=[Reviewer()], audit=audit, journal=False) as fs:
        result = await fs.apply_patch(REPEATED_LINE)
    assert result.ok, result.text
    assert seen == [
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,9 +1,9 @@\n one\n two\n-three\n+three\n four\n"
        " five\n six\n seven\n eight\n-nine\n+NINE\n"
    ]
    (event,) = audit_events(audit)
    assert event["diff"] == seen[0]
    assert (event["lines_added"], event["lines_removed"]) == (2, 2)


async def test_content_a_person_edits_in_review_gets_a_diff_of_its_own(
    tmp_path: Path, audit: AuditLog
) -> None:
    words = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    (tmp_path / "a.txt").write_text("".join(f"{word}\n" for word in words))
    edited = "".join(f"{word}\n" for word in words).replace("two", "TWO").replace("nine", "9")

    class Editor:
        def before_tool_execution(self, call: Any) -> Decision:
            return Decision.modify(content={"a.txt": edited}, decided_by="person")

    async with FileTools(tmp_path, hooks=[Editor()], audit=audit, journal=False) as fs:
        result = await fs.apply_patch(REPEATED_LINE)
    assert result.ok, result.text
    assert (tmp_path / "a.txt").read_text() == edited
    (event,) = audit_events(audit)
    assert "-two\n+TWO\n" in event["diff"] and "-nine\n+9\n" in event["diff"]
    assert "NINE" not in event["diff"] and "+three" not in event["diff"]
    assert (event["lines_added"], event["lines_removed"]) == (2, 2)


async def test_each_old_and_new_content_is_hashed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit payload and the journal share the old bytes' digest, the journal and
    the read state the new bytes' digest; the undo that follows still verifies."""
    root = tmp_path / "root"
    root.mkdir()
    patch = many_files(root)
    hashed: list[bytes] = []

    def counting(data: bytes) -> str:
        hashed.append(data)
        return original(data)

    original = digest._sha256
    monkeypatch.setattr(digest, "_sha256", counting)
    async with toolkit(root, "local") as fs:
        result = await fs.apply_patch(patch)
        assert result.ok, result.text
        counts = Counter(map(id, hashed))  # the same bytes object, not equal bytes
        assert len(counts) > 2 * FILES, "the journal and read state hash every content"
        assert max(counts.values()) == 1
        undone = await fs.undo()
    assert undone.ok, undone.text
    assert (root / "pkg0/mod00.py").read_text() == "".join(f"line {n}\n" for n in range(20))
