"""Whatever path a model invents, the guard either refuses it or stays inside the root."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent_fs.errors import ToolError
from tinyagent_fs.guard.path_guard import PathGuard


class Tree:
    """A root with links that stay inside and links that escape, next to an outside dir."""

    def __init__(self, base: Path) -> None:
        self.outside = base / "outside"
        self.root = base / "root"
        (self.outside / "a").mkdir(parents=True)
        (self.outside / "secret.txt").write_text("secret")
        for name in ("a", "b", "a/b"):
            (self.root / name).mkdir(parents=True)
        (self.root / "a" / "file.txt").write_text("x")
        (self.root / "link_out").symlink_to(self.outside, target_is_directory=True)
        (self.root / "a" / "link_out_file").symlink_to(self.outside / "secret.txt")
        (self.root / "link_up").symlink_to("..", target_is_directory=True)
        (self.root / "link_in").symlink_to(self.root / "a", target_is_directory=True)
        (self.root / "b" / "link_rel").symlink_to("../a/b", target_is_directory=True)
        self.real_root = os.path.realpath(self.root)
        self.guard = PathGuard(self.root)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tree]:
    yield Tree(tmp_path_factory.mktemp("guard-properties"))


SEGMENTS = st.sampled_from(
    [
        "..",
        ".",
        "a",
        "b",
        "file.txt",
        "link_out",
        "link_out_file",
        "link_up",
        "link_in",
        "link_rel",
        "outside",
        "root",
        "~",
        "",
        "é",
        "日本",
        "nul\x00",
        " ",
        "new",
    ]
)
SEPARATORS = st.sampled_from(["/", "\\", "//"])


PREFIXES = ["", "/", "\\", "{root}", "{root}/", "{outside}", "/etc", "{base}/root"]


def build_path(data: st.DataObject, tree: Tree) -> str:
    prefix = data.draw(st.sampled_from(PREFIXES)).format(
        root=tree.real_root, outside=tree.outside, base=tree.outside.parent
    )
    segments = data.draw(st.lists(SEGMENTS, max_size=8))
    separators = data.draw(st.lists(SEPARATORS, min_size=len(segments), max_size=len(segments)))
    body = "".join(sep + seg for sep, seg in zip(separators, segments, strict=True))
    return prefix + (body if prefix else body.lstrip("/\\"))


def assert_inside(resolved: Path, real_root: str) -> None:
    real = os.path.realpath(resolved)
    assert real == str(resolved), "the guard returned a path with an unresolved symlink"
    assert os.path.commonpath([real, real_root]) == real_root


@settings(max_examples=400, deadline=None)
@given(data=st.data(), for_write=st.booleans())
def test_every_path_is_refused_or_resolves_inside_root(
    tree: Tree, data: st.DataObject, for_write: bool
) -> None:
    raw = build_path(data, tree)
    try:
        resolved = tree.guard.resolve(raw, for_write=for_write)
    except ToolError:
        return
    assert_inside(resolved, tree.real_root)


@settings(max_examples=200, deadline=None)
@given(raw=st.text(max_size=60), for_write=st.booleans())
def test_arbitrary_text_is_refused_or_resolves_inside_root(
    tree: Tree, raw: str, for_write: bool
) -> None:
    try:
        resolved = tree.guard.resolve(raw, for_write=for_write)
    except ToolError:
        return
    assert_inside(resolved, tree.real_root)
