"""grep: the ripgrep and Python backends give the same, correct answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.ops.ripgrep import find_ripgrep
from tinyagent_fs.ops.search import grep

from ..ops_tree import DENIED, build_git_cases, build_tree

BACKENDS = ["ripgrep", "python"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return build_tree(tmp_path / "project").resolve()


def run(tree: Path, backend: str, pattern: str, **options: Any) -> dict[str, Any]:
    base = options.pop("base", "")
    arguments: dict[str, Any] = {
        "include": None,
        "literal": False,
        "case_sensitive": True,
        "context": 0,
        "limit": 100,
        "denied_patterns": DENIED,
    }
    arguments.update(options)
    return grep(str(tree), str(tree / base), pattern, backend=backend, **arguments)


def lines(result: dict[str, Any]) -> list[tuple[str, int, str]]:
    return [(m["path"], m["line"], m["kind"]) for m in result["matches"]]


QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("needle", {}),
    ("needle", {"literal": True}),
    ("nee.le", {"literal": True}),
    (r"need(le|less)\b", {}),
    ("needle", {"case_sensitive": False}),
    ("needle", {"context": 2}),
    ("needle", {"include": "*.py"}),
    ("needle", {"include": "*.{py,md}"}),
    ("needle", {"include": "app/*.py", "base": "src"}),
    ("needle", {"include": "**/app/*.txt"}),
    ("needle", {"limit": 3}),
    ("needle", {"limit": 4, "context": 2}),
    ("needle", {"limit": 1, "case_sensitive": False}),
    ("needle", {"base": "src"}),
    ("needle", {"base": "src/app"}),
    ("needle", {"base": "src/app/main.py", "context": 1}),
    ("needle end$", {}),
    ("^second$", {"context": 1}),
    (r"^\s+return", {}),
    ("needle", {"base": "build"}),
    ("needle", {"include": "docs/"}),
    ("needle", {"include": "app/", "base": "src"}),
]


@pytest.mark.parametrize(("pattern", "options"), QUERIES)
def test_backends_agree(tree: Path, pattern: str, options: dict[str, Any]) -> None:
    from_rg = run(tree, "ripgrep", pattern, **dict(options))
    from_python = run(tree, "python", pattern, **dict(options))
    assert from_rg.pop("backend") == "ripgrep"
    assert from_python.pop("backend") == "python"
    assert from_rg == from_python


@pytest.mark.parametrize("backend", BACKENDS)
def test_grep_honours_gitignore_denials_and_tinyagentignore(tree: Path, backend: str) -> None:
    result = run(tree, backend, "needle")
    files = {m["path"] for m in result["matches"]}
    assert files == {
        ".hidden/config.txt",
        "docs/guide.md",
        "docs/long.txt",
        "src/app/bom.txt",
        "src/app/main.py",
        "src/app/win.txt",
        "src/important.log",
        "src/top_only.txt",
        "vendor/keep.txt",
    }
    assert result["files_with_matches"] == len(files)
    assert result["match_count"] == 13
    assert not result["truncated"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_grep_orders_by_tree_then_line(tree: Path, backend: str) -> None:
    result = run(tree, backend, "needle", base="src")
    assert lines(result) == [
        ("src/app/bom.txt", 1, "match"),
        ("src/app/main.py", 3, "match"),
        ("src/app/main.py", 8, "match"),
        ("src/app/main.py", 10, "match"),
        ("src/app/win.txt", 1, "match"),
        ("src/app/win.txt", 3, "match"),
        ("src/important.log", 1, "match"),
        ("src/top_only.txt", 1, "match"),
    ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_grep_context_merges_and_limit_keeps_trailing_context(tree: Path, backend: str) -> None:
    result = run(tree, backend, "needle", base="src/app/main.py", context=2, limit=2)
    assert lines(result) == [
        ("src/app/main.py", 1, "context"),
        ("src/app/main.py", 2, "context"),
        ("src/app/main.py", 3, "match"),
        ("src/app/main.py", 4, "context"),
        ("src/app/main.py", 5, "context"),
        ("src/app/main.py", 6, "context"),
        ("src/app/main.py", 7, "context"),
        ("src/app/main.py", 8, "match"),
        ("src/app/main.py", 9, "context"),
    ]
    assert result["truncated"]
    assert result["match_count"] == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_grep_reads_crlf_bom_and_clips_long_lines(tree: Path, backend: str) -> None:
    texts = {m["path"]: m["text"] for m in run(tree, backend, "needle")["matches"]}
    assert texts["src/app/win.txt"] == "needle end"
    assert texts["src/app/bom.txt"] == "needle after bom"
    assert texts["docs/long.txt"].startswith("needle xxx")
    assert texts["docs/long.txt"].endswith("[line truncated: 907 chars]")
    assert len(texts["docs/long.txt"]) < 550


@pytest.mark.parametrize("backend", BACKENDS)
def test_grep_skips_binary_files(tree: Path, backend: str) -> None:
    assert run(tree, backend, "binary")["matches"] == []
    assert run(tree, backend, "needle", base="src/app/data.bin")["matches"] == []


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        ("(unclosed", "invalid regular expression"),
        ("(?=needle)", "look-around"),
        (r"(a)\1", "backreferences"),
    ],
)
def test_invalid_regex_is_an_invalid_argument(
    tree: Path, backend: str, pattern: str, fragment: str
) -> None:
    with pytest.raises(ToolError) as caught:
        run(tree, backend, pattern)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    assert fragment in caught.value.message
    assert "literal=true" in caught.value.hint
    assert run(tree, backend, pattern, literal=True)["matches"] == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_grep_rejects_bad_arguments(tree: Path, backend: str) -> None:
    for pattern, options in [("", {}), ("a\nb", {}), ("x", {"limit": 0}), ("x", {"context": -1})]:
        with pytest.raises(ToolError) as caught:
            run(tree, backend, pattern, **options)
        assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    for include in ["[ab", "*.{py", "x}", "../*.py", "/src/*.py"]:
        with pytest.raises(ToolError) as caught:
            run(tree, backend, "needle", include=include)
        assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    with pytest.raises(ToolError) as caught:
        run(tree, backend, "x", base="missing")
    assert caught.value.code is ErrorCode.NOT_FOUND


def test_unknown_backend_is_refused(tree: Path) -> None:
    with pytest.raises(ToolError) as caught:
        run(tree, "grep", "needle")
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT


def test_denied_pattern_with_negation_is_honoured_by_both_backends(tree: Path) -> None:
    denied = ["docs/", "!docs/guide.md", *DENIED]
    results = [run(tree, b, "needle", denied_patterns=denied) for b in ("ripgrep", "python")]
    for result in results:
        result.pop("backend")
        assert not any(m["path"].startswith("docs/") for m in result["matches"])
    assert results[0] == results[1]


def test_ripgrep_limit_result_is_deterministic_across_runs(tree: Path) -> None:
    for index in range(40):
        (tree / "many" / f"f{index:02}.txt").parent.mkdir(exist_ok=True)
        (tree / "many" / f"f{index:02}.txt").write_text("needle\n" * 5)
    first = run(tree, "ripgrep", "needle", base="many", limit=7)
    assert [m["path"] for m in first["matches"]] == ["many/f00.txt"] * 5 + ["many/f01.txt"] * 2
    assert first["truncated"]
    assert all(run(tree, "ripgrep", "needle", base="many", limit=7) == first for _ in range(3))


@pytest.mark.parametrize("base", ["", "nested", "nested/q", "deep/inner", "foo/q", "doc/sub", "a"])
def test_backends_agree_on_tricky_gitignore_from_any_base(tmp_path: Path, base: str) -> None:
    root = build_git_cases(tmp_path / "repo")
    results = [
        grep(str(root), str(root / base), "x", None, True, True, 0, 1000, [], backend)
        for backend in ("ripgrep", "python")
    ]
    assert [m["path"] for m in results[0]["matches"]] == [m["path"] for m in results[1]["matches"]]
    assert results[0]["match_count"] == results[1]["match_count"]


def test_ripgrep_binary_is_installed() -> None:
    assert find_ripgrep() is not None, (
        "the rg binary is missing: install the ripgrep==14.1.0 wheel (a dependency)"
    )
