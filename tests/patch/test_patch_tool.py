"""apply_patch through the whole pipeline: every conformance scenario, on every provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import make_provider
from tests.patch_harness import Scenario, assert_tree, copy_input, expected_tree, load_scenarios
from tinyagent_fs import FileTools
from tinyagent_fs.hooks import AutoApprovePolicy, Decision

SCENARIOS = load_scenarios()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_scenario_through_file_tools(
    scenario: Scenario, tmp_path: Path, provider_name: str, audit
) -> None:
    tree = copy_input(scenario, tmp_path / "tree")
    async with FileTools(
        tree,
        provider=make_provider(provider_name, tree),
        hooks=[AutoApprovePolicy()],
        audit=audit,
        journal=False,
    ) as fs:
        result = await fs.apply_patch(scenario.patch_text)
    if scenario.expected_error is not None:
        assert not result.ok and result.error.code == scenario.expected_error, result.text
    else:
        assert result.ok, result.text
    assert_tree(tree, expected_tree(scenario))


BAD_SECOND_HUNK = """*** Begin Patch
*** Update File: a.txt
@@
-one
+ONE
*** Update File: b.txt
@@
-this line is not in b
+x
*** End Patch
"""


async def test_multi_file_patch_with_one_bad_hunk_changes_nothing(tmp_path: Path, audit) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "b.txt").write_text("two\n")
    fs = FileTools(tmp_path, hooks=[AutoApprovePolicy()], audit=audit)
    result = await fs.apply_patch(BAD_SECOND_HUNK)
    assert result.error.code == "NO_MATCH"
    assert "b.txt" in result.error.message
    assert (tmp_path / "a.txt").read_text() == "one\n"
    await fs.close()


async def test_patch_is_reviewed_as_one_diff_and_undone_as_one(tmp_path: Path, audit) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "b.txt").write_text("two\n")
    seen = []

    class Reviewer:
        def before_tool_execution(self, call):
            seen.append(call.diff)
            return Decision.proceed("person")

    patch = BAD_SECOND_HUNK.replace("-this line is not in b", "-two")
    fs = FileTools(tmp_path, hooks=[Reviewer()], audit=audit)
    assert (await fs.apply_patch(patch)).ok
    assert len(seen) == 1 and "+ONE" in seen[0] and "+x" in seen[0]
    assert (await fs.undo()).ok
    assert (tmp_path / "a.txt").read_text() == "one\n"
    assert (tmp_path / "b.txt").read_text() == "two\n"
    await fs.close()


async def test_a_form_feed_ending_the_patch_or_the_file_stays_in_its_line(
    tmp_path: Path, audit
) -> None:
    """str.splitlines also splits at a form feed: a patch or a file ending in one
    keeps it in its last line, as split_lines does."""
    (tmp_path / "a.txt").write_bytes(b"x\n")
    (tmp_path / "b.txt").write_bytes(b"a\nb\x0c")
    fs = FileTools(tmp_path, hooks=[AutoApprovePolicy()], audit=audit)
    result = await fs.apply_patch("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n x\n+y\x0c")
    assert result.ok, result.text
    assert (tmp_path / "a.txt").read_bytes() == b"x\ny\x0c\n"
    result = await fs.apply_patch("--- a/b.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n-a\n+c\n b")
    assert result.ok, result.text
    assert "matched ignoring trailing whitespace" in result.text
    assert (tmp_path / "b.txt").read_bytes() == b"c\nb\x0c"
    await fs.close()
