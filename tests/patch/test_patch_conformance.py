"""The patch scenarios, applied in memory by plan_patch and compared byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.patch_harness import (
    Scenario,
    TreeFiles,
    assert_tree,
    copy_input,
    expected_tree,
    load_scenarios,
)
from tinyagent_fs.errors import ToolError
from tinyagent_fs.patch.planner import plan_patch

SCENARIOS = load_scenarios()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_patch_scenario_produces_expected_tree(scenario: Scenario, tmp_path: Path) -> None:
    tree = copy_input(scenario, tmp_path / "tree")
    files = TreeFiles(tree)
    if scenario.expected_error is not None:
        with pytest.raises(ToolError) as caught:
            plan_patch(scenario.patch_text, files.read_text)
        assert caught.value.code.value == scenario.expected_error, caught.value.message
    else:
        files.apply(plan_patch(scenario.patch_text, files.read_text))
    assert_tree(tree, expected_tree(scenario))


def test_every_scenario_has_a_patch_an_outcome_and_a_description() -> None:
    for scenario in SCENARIOS:
        assert (scenario.directory / "patch").is_file(), scenario.name
        has_expected = scenario.expected_dir.is_dir()
        assert (scenario.expected_error is None) == has_expected, (
            f"{scenario.name}: needs exactly one of expected/ and expected_error"
        )
        assert scenario.description, f"{scenario.name}: README missing"


def test_suite_covers_both_formats_and_rejections() -> None:
    rejections = [s for s in SCENARIOS if s.expected_error is not None]
    codex = [s for s in SCENARIOS if "*** Begin Patch" in s.patch_text]
    unified = [s for s in SCENARIOS if "+++ " in s.patch_text or "diff --git" in s.patch_text]
    assert len(SCENARIOS) >= 45
    assert len(rejections) >= 10 and len(codex) >= 20 and len(unified) >= 15
