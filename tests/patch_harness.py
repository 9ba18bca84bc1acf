"""The patch conformance suite's machinery, shared by every runner.

A scenario is a directory under ``tests/patch_scenarios/``:

- ``input/``: the tree before (absent means an empty tree);
- ``patch``: the patch text, exact bytes (UTF-8);
- ``expected/``: the whole tree after, or instead ``expected_error``: the
  ToolError code, in which case the tree must not change;
- ``README``: one line saying what the scenario checks.

Trees are compared as {relative path: bytes}: every byte of every file, and no
file more or less. Empty directories do not count (git cannot store them).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from tinyagent_fs.patch.planner import PlannedFile
from tinyagent_fs.text.codec import DecodedText, decode_text, encode_text

SCENARIOS = Path(__file__).parent / "patch_scenarios"

Tree = dict[str, bytes]


@dataclass(frozen=True)
class Scenario:
    directory: Path

    @property
    def name(self) -> str:
        return self.directory.name

    @property
    def input_dir(self) -> Path:
        return self.directory / "input"

    @property
    def expected_dir(self) -> Path:
        return self.directory / "expected"

    @property
    def patch_text(self) -> str:
        return (self.directory / "patch").read_bytes().decode("utf-8")

    @property
    def expected_error(self) -> str | None:
        marker = self.directory / "expected_error"
        return marker.read_text().strip() if marker.exists() else None

    @property
    def description(self) -> str:
        readme = self.directory / "README"
        return readme.read_text().strip() if readme.exists() else ""


def load_scenarios(root: Path = SCENARIOS) -> list[Scenario]:
    return [Scenario(path) for path in sorted(root.iterdir()) if path.is_dir()]


def read_tree(directory: Path) -> Tree:
    if not directory.exists():
        return {}
    return {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def copy_input(scenario: Scenario, destination: Path) -> Path:
    """The scenario's input tree copied to ``destination`` (created even when empty)."""
    if scenario.input_dir.exists():
        shutil.copytree(scenario.input_dir, destination)
    else:
        destination.mkdir(parents=True)
    return destination


class TreeFiles:
    """Reads files of a tree for ``plan_patch`` and writes its plan back, keeping each
    file's encoding and BOM as the text module decoded them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._decoded: dict[str, DecodedText] = {}

    def read_text(self, path: str) -> tuple[str, str] | None:
        target = self.root / path
        if not target.is_file():
            return None
        decoded = decode_text(target.read_bytes(), path)
        self._decoded[path] = decoded
        return decoded.text, decoded.newline

    def apply(self, planned: list[PlannedFile]) -> None:
        for change in planned:
            source = self.root / change.path
            if change.kind == "delete":
                source.unlink()
                continue
            target = self.root / (change.dest or change.path)
            like = self._decoded.get(change.path) or DecodedText("", "utf-8", b"", "\n")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(encode_text(change.new_text or "", like))
            if change.kind == "move":
                source.unlink()


def tree_difference(actual: Tree, expected: Tree) -> str:
    """A readable account of how two trees differ; empty when they are identical."""
    problems: list[str] = []
    for path in sorted(expected.keys() - actual.keys()):
        problems.append(f"missing file {path}")
    for path in sorted(actual.keys() - expected.keys()):
        problems.append(f"unexpected file {path}: {actual[path][:200]!r}")
    for path in sorted(actual.keys() & expected.keys()):
        if actual[path] != expected[path]:
            problems.append(
                f"{path} differs:\n  expected {expected[path][:400]!r}\n  actual   "
                f"{actual[path][:400]!r}"
            )
    return "\n".join(problems)


def assert_tree(actual_dir: Path, expected: Tree) -> None:
    difference = tree_difference(read_tree(actual_dir), expected)
    assert not difference, difference


def expected_tree(scenario: Scenario) -> Tree:
    """The tree a scenario must end with: its expected/ tree, or its input for a rejection."""
    if scenario.expected_error is not None:
        return read_tree(scenario.input_dir)
    return read_tree(scenario.expected_dir)
