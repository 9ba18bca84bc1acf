"""Ignore rules: the regex screens and the compiled-rules cache agree with line-by-line matching."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from tinyagent_fs.guard.gitignore import CostlyPatterns, GitPattern, PatternList, Screen
from tinyagent_fs.ops.ignore import (
    DIRECTORY_FLAGS,
    IgnoreRules,
    compiled_rules,
    open_subdirectory,
    sorted_entries,
)

PATTERNS = [
    "*.log",
    "build/",
    "/top.txt",
    "docs/*.md",
    "!keep.log",
    "**/deep/**",
    "a?c",
    "[ab]*.tmp",
    "node_modules",
    ".env.*",
    "src/**/gen/",
    "\\#literal",
    "x/**",
    "id_rsa*",
]
PATHS = [
    "app.log",
    "keep.log",
    "src/keep.log",
    "build",
    "src/build",
    "top.txt",
    "src/top.txt",
    "docs/a.md",
    "docs/sub/a.md",
    "a/deep/b/c.txt",
    "deep",
    "abc",
    "src/abc",
    "abcd",
    "a.tmp",
    "c.tmp",
    "node_modules",
    "pkg/node_modules",
    ".env.local",
    ".env",
    "src/x/gen",
    "src/gen",
    "#literal",
    "x/y",
    "x",
    "home/.ssh/id_rsa.pub",
]


def line_by_line(lines: list[str], rel: str, is_dir: bool) -> bool | None:
    """What git does: the last matching line decides; directory-only lines skip files."""
    decision = None
    path = rel.encode()
    for text in lines:
        line = GitPattern.parse(text)
        if line is not None and line.matches(path, path.rpartition(b"/")[2], is_dir):
            decision = not line.negated
    return decision


@pytest.mark.parametrize("size", [1, 2, 5, len(PATTERNS)])
def test_rule_set_decides_as_matching_each_line(size: int) -> None:
    for lines in itertools.islice(itertools.combinations(PATTERNS, size), 200):
        rules = PatternList(lines)
        for rel, is_dir in itertools.product(PATHS, (False, True)):
            assert rules.decide(rel, is_dir) == line_by_line(list(lines), rel, is_dir), (
                lines,
                rel,
                is_dir,
            )


@pytest.mark.parametrize(
    "ignore_file", ["", "/docs/secret.md\nprivate/\n", "*.md\n!docs/guide.md\n"]
)
def test_denials_of_both_sets_are_one_screen_and_agree_with_each_set(
    tmp_path: Path, ignore_file: str
) -> None:
    (tmp_path / ".tinyagentignore").write_text(ignore_file)
    rules = IgnoreRules(str(tmp_path), [".env", "*.pem", ".ssh/", "/root_only.txt"])
    paths = [*PATHS, "docs/secret.md", "docs/guide.md", "private", "a/.ssh", "x.pem"]
    paths += ["root_only.txt", "sub/root_only.txt"]
    for rel, is_dir in itertools.product(paths, (False, True)):
        each = any(s.decide(rel, is_dir) is True for s in rules.denial_sets)
        assert rules.is_denied(rel, is_dir) == each, (rel, is_dir)


NAME_LINES = [
    "*.pem",
    "**.key",
    "id_rsa*",
    ".env",
    ".env.*",
    "a?c",
    "*mid*",
    "*",
    "[ab]*.tmp",
    "\\#literal",
    "x**",
    "{a,b}.txt",
]
NAMES = [
    ".pem",
    "x.pem",
    "x.pem.pem",
    "x.pem.txt",
    "pem",
    "a.key",
    "id_rsa",
    "id_rsa.pub",
    "my_id_rsa",
    ".env",
    ".env.local",
    ".envy",
    "abc",
    "amidst",
    "a.tmp",
    "#literal",
    "xyz",
    "{a,b}.txt",
    "a.txt",
    "plain",
]


@pytest.mark.parametrize("size", [1, 2, 3])
def test_a_screen_finds_exactly_the_names_its_lines_match(size: int) -> None:
    for lines in itertools.combinations(NAME_LINES, size):
        screen = Screen(p for p in PatternList(lines).patterns if not p.dir_only)
        expected = {name for name in NAMES if line_by_line(list(lines), name, False)}
        assert screen.names_matched(NAMES) == expected, lines
        assert {name for name in NAMES if screen.matches(name)} == expected, lines
        assert {name for name in NAMES if screen.matches(f"dir/{name}")} == expected, lines


@pytest.mark.parametrize("ignore_file", ["", "private/\n", "*.md\n!guide.md\n"])
def test_denial_candidates_are_every_name_a_denial_can_hide(
    tmp_path: Path, ignore_file: str
) -> None:
    (tmp_path / ".tinyagentignore").write_text(ignore_file)
    rules = IgnoreRules(str(tmp_path), [".env", "*.pem", ".ssh/", "id_rsa*"])
    names = [path.rpartition("/")[2] for path in PATHS]
    names += ["private", "guide.md", ".ssh", "x.pem", "plain.txt"]
    suspects = rules.denial_candidates(names)
    assert suspects is not None
    assert "plain.txt" not in suspects and {".env", "x.pem", ".ssh"} <= suspects
    for prefix, name, is_dir in itertools.product(("", "docs/"), names, (False, True)):
        if rules.is_denied(prefix + name, is_dir):
            assert name in suspects, (prefix, name, is_dir)


def test_an_anchored_denial_leaves_every_name_to_be_asked(tmp_path: Path) -> None:
    (tmp_path / ".tinyagentignore").write_text("/docs/secret.md\n")
    assert IgnoreRules(str(tmp_path), [".env"]).denial_candidates(["secret.md"]) is None


def test_an_ignore_file_rewritten_between_calls_is_read_as_it_is_now(tmp_path: Path) -> None:
    ignore = tmp_path / ".tinyagentignore"
    ignore.write_text("first.txt\n")
    assert IgnoreRules(str(tmp_path), []).is_denied("first.txt", False)
    ignore.write_text("second.txt\n")
    rules = IgnoreRules(str(tmp_path), [])
    assert not rules.is_denied("first.txt", False)
    assert rules.is_denied("second.txt", False)


def test_compiled_rules_are_shared_only_for_the_same_lines_and_source() -> None:
    first = compiled_rules(["*.tmp"], ".gitignore")
    assert compiled_rules(["*.tmp"], ".gitignore") is first
    assert compiled_rules(["*.tmp"], ".tinyagentignore") is not first
    assert compiled_rules(["*.tmp", "x"], ".gitignore") is not first


def test_a_walk_opens_subdirectories_beneath_their_parent_never_through_a_link(
    tmp_path: Path,
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "file").write_text("x")
    fd = os.open(tmp_path, DIRECTORY_FLAGS)
    try:
        child = open_subdirectory(fd, "real")
        assert child is not None
        os.close(child)
        assert open_subdirectory(fd, "link") is None
        assert open_subdirectory(fd, "file") is None
        assert open_subdirectory(fd, "missing") is None
        assert [entry.name for entry in sorted_entries(fd)] == ["file", "link", "real"]
    finally:
        os.close(fd)


def test_ignore_files_people_write_are_within_the_matching_budget() -> None:
    """GitHub's Python template, a 5,000-line monorepo file of paths, and a few hundred
    globs load; 5,000 lines with several wildcards each do not."""
    python_template = [
        "__pycache__/", "*.py[cod]", "*$py.class", "*.so", ".Python", "build/", "dist/",
        "*.egg-info/", "*.egg", "MANIFEST", "*.manifest", "*.spec", "htmlcov/", ".tox/",
        ".coverage", ".coverage.*", ".cache", "coverage.xml", "*.cover", "*.py,cover",
        ".hypothesis/", ".pytest_cache/", "*.mo", "*.pot", "*.log", "docs/_build/",
        "target/", ".ipynb_checkpoints", "__pypackages__/", "*.sage.py", ".env", ".venv",
        "env/", "venv/", "ENV/", "/site", ".mypy_cache/", ".dmypy.json", "cython_debug/",
    ]  # fmt: skip
    monorepo = [f"/services/svc{i}/build/out{i}.bin" for i in range(5000)]
    globs = [f"**/gen{i}/*.tmp" for i in range(300)]
    for lines in (python_template, monorepo, globs):
        PatternList(lines, ".gitignore")
    with pytest.raises(CostlyPatterns):
        PatternList([f"*a*a*a*a*a*{i}b" for i in range(5000)], ".gitignore")
