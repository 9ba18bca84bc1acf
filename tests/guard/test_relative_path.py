"""relative_path: the text shortcut gives what ``relative_to`` gives, for paths inside
the root, the root itself, and paths outside it that share its first characters."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tinyagent_fs.changes.changeset import relative_path

PART = st.sampled_from(["a", "ab", "b", "a b", "é", ".x", "root", "rootx"])


def by_pathlib(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix() or "."
    except ValueError:
        return path.as_posix()


@given(st.lists(PART, max_size=3), st.lists(PART, max_size=4))
def test_relative_path_is_what_relative_to_gives(root_parts: list[str], parts: list[str]) -> None:
    root = Path("/", *root_parts)
    for path in (root.joinpath(*parts), Path("/", *parts), Path(f"{root}x", *parts)):
        assert relative_path(path, root) == by_pathlib(path, root)


def test_inside_outside_and_the_root_itself() -> None:
    root = Path("/work/root")
    assert relative_path(root / "pkg" / "m.py", root) == "pkg/m.py"
    assert relative_path(root, root) == "."
    assert relative_path(Path("/work/rootx/m.py"), root) == "/work/rootx/m.py"
