from __future__ import annotations

import os
from pathlib import Path

import pytest

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.guard.path_guard import PathGuard
from tinyagent_fs.policy import SandboxPolicy


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.txt").write_text("secret")
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    (path / "src" / "pkg").mkdir(parents=True)
    (path / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (path / "README.md").write_text("hi\n")
    return path.resolve()


@pytest.fixture
def guard(root: Path) -> PathGuard:
    return PathGuard(root)


def refused(guard: PathGuard, raw: str, *, for_write: bool = False) -> ToolError:
    with pytest.raises(ToolError) as caught:
        guard.resolve(raw, for_write=for_write)
    return caught.value


def test_relative_path_resolves_against_root(guard: PathGuard, root: Path) -> None:
    assert guard.resolve("src/pkg/mod.py") == root / "src" / "pkg" / "mod.py"
    assert guard.resolve("./src//pkg/./mod.py") == root / "src" / "pkg" / "mod.py"


def test_root_itself_resolves(guard: PathGuard, root: Path) -> None:
    assert guard.resolve(".") == root
    assert guard.resolve(str(root)) == root
    assert guard.resolve("src/..") == root


def test_missing_path_resolves_for_creation(guard: PathGuard, root: Path) -> None:
    assert guard.resolve("new/dir/file.txt", for_write=True) == root / "new" / "dir" / "file.txt"
    assert guard.resolve("new/../src/x.py") == root / "src" / "x.py"


@pytest.mark.parametrize("raw", ["../x", "a/../../x", "..", "src/../../root/x", "src/pkg/../../.."])
def test_parent_traversal_out_of_root_is_refused(guard: PathGuard, raw: str) -> None:
    error = refused(guard, raw)
    assert error.code is ErrorCode.PATH_OUTSIDE_ROOT
    assert error.security_violation is True
    assert repr(raw) in error.message


def test_absolute_path_outside_root_is_refused(guard: PathGuard, outside: Path) -> None:
    for raw in ("/etc/passwd", str(outside / "secret.txt"), "/"):
        error = refused(guard, raw)
        assert error.code is ErrorCode.PATH_OUTSIDE_ROOT
        assert str(guard.root) in error.hint


def test_absolute_path_inside_root_is_accepted(guard: PathGuard, root: Path) -> None:
    assert guard.resolve(f"{root}/src/pkg/mod.py") == root / "src" / "pkg" / "mod.py"
    assert guard.resolve(f"/{root}//README.md") == root / "README.md"


def test_absolute_path_with_dotdot_leaving_root_is_refused(guard: PathGuard, root: Path) -> None:
    assert refused(guard, f"{root}/../root/README.md").code is ErrorCode.PATH_OUTSIDE_ROOT


def test_root_given_through_symlink_accepts_both_spellings(tmp_path: Path, root: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    guard = PathGuard(alias)
    assert guard.root == root
    assert guard.resolve(f"{alias}/README.md") == root / "README.md"
    assert guard.resolve(f"{root}/README.md") == root / "README.md"


def test_symlinked_file_pointing_outside_is_refused(
    guard: PathGuard, root: Path, outside: Path
) -> None:
    (root / "innocent.txt").symlink_to(outside / "secret.txt")
    for for_write in (False, True):
        error = refused(guard, "innocent.txt", for_write=for_write)
        assert error.code is ErrorCode.SYMLINK_ESCAPE
        assert error.security_violation is True
        assert "'innocent.txt'" in error.message


def test_symlinked_parent_directory_pointing_outside_is_refused(
    guard: PathGuard, root: Path, outside: Path
) -> None:
    (root / "src" / "vendor").symlink_to(outside, target_is_directory=True)
    assert refused(guard, "src/vendor/secret.txt").code is ErrorCode.SYMLINK_ESCAPE
    error = refused(guard, "src/vendor/new.txt", for_write=True)
    assert error.code is ErrorCode.SYMLINK_ESCAPE
    assert refused(guard, "src/vendor").code is ErrorCode.SYMLINK_ESCAPE


def test_dangling_symlink_pointing_outside_is_refused(
    guard: PathGuard, root: Path, outside: Path
) -> None:
    (root / "later.txt").symlink_to(outside / "does-not-exist.txt")
    assert refused(guard, "later.txt", for_write=True).code is ErrorCode.SYMLINK_ESCAPE


def test_relative_symlink_climbing_out_is_refused(guard: PathGuard, root: Path) -> None:
    (root / "src" / "up").symlink_to("../../outside")
    assert refused(guard, "src/up/secret.txt").code is ErrorCode.SYMLINK_ESCAPE


def test_symlink_inside_root_resolves_to_its_target(guard: PathGuard, root: Path) -> None:
    (root / "alias.py").symlink_to(root / "src" / "pkg" / "mod.py")
    (root / "lib").symlink_to("src/pkg", target_is_directory=True)
    assert guard.resolve("alias.py") == root / "src" / "pkg" / "mod.py"
    assert guard.resolve("lib/mod.py") == root / "src" / "pkg" / "mod.py"
    assert guard.resolve("lib/new.py", for_write=True) == root / "src" / "pkg" / "new.py"


def test_dotdot_after_symlink_climbs_from_the_target(guard: PathGuard, root: Path) -> None:
    (root / "lib").symlink_to("src/pkg", target_is_directory=True)
    assert guard.resolve("lib/../pkg/mod.py") == root / "src" / "pkg" / "mod.py"


def test_symlink_loop_is_refused(guard: PathGuard, root: Path) -> None:
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    error = refused(guard, "a/x")
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert "loop" in error.message


@pytest.mark.parametrize(
    ("raw", "pattern"),
    [
        (".env", ".env"),
        (".env.local", ".env.*"),
        ("x.pem", "*.pem"),
        ("src/server.key", "*.key"),
        ("id_rsa", "id_rsa*"),
        ("id_rsa.pub", "id_rsa*"),
        ("sub/.env", ".env"),
        (".ssh/id", ".ssh/"),
        ("home/.aws/config", ".aws/"),
        (".env/inside.txt", ".env"),
    ],
)
def test_secret_patterns_are_denied_for_read_and_write(
    guard: PathGuard, raw: str, pattern: str
) -> None:
    for for_write in (False, True):
        error = refused(guard, raw, for_write=for_write)
        assert error.code is ErrorCode.DENIED_PATTERN
        assert error.security_violation is True
        assert error.details["pattern"] == pattern
        assert repr(raw) in error.message and repr(pattern) in error.message


def test_similar_but_harmless_names_are_allowed(guard: PathGuard, root: Path) -> None:
    for raw in ("env", "my.env.md", "pem.txt", "docs/ssh/notes.md", ".environment"):
        assert guard.resolve(raw) == root / raw


def test_git_directory_is_denied_for_write_only(guard: PathGuard, root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    assert guard.resolve(".git/config") == root / ".git" / "config"
    assert guard.resolve(".git") == root / ".git"
    for raw in (".git/config", ".git/hooks/pre-commit", ".git"):
        error = refused(guard, raw, for_write=True)
        assert error.code is ErrorCode.DENIED_PATTERN
        assert error.details["pattern"] == ".git"
        assert "read" in error.hint


def test_tinyagentignore_adds_denied_patterns(guard: PathGuard, root: Path) -> None:
    (root / ".tinyagentignore").write_text("# private notes\n*.sqlite\nprivate/\n")
    assert refused(guard, "data/app.sqlite").code is ErrorCode.DENIED_PATTERN
    error = refused(guard, "private/diary.md", for_write=True)
    assert error.details["pattern"] == "private/"
    assert ".tinyagentignore" in error.message
    assert guard.resolve("private.md") == root / "private.md"


def test_tinyagentignore_is_reloaded_when_it_changes(guard: PathGuard, root: Path) -> None:
    ignore = root / ".tinyagentignore"
    ignore.write_text("a.txt\n")
    assert refused(guard, "a.txt").code is ErrorCode.DENIED_PATTERN
    assert guard.resolve("b.txt") == root / "b.txt"
    ignore.write_text("b.txt\n")
    assert guard.resolve("a.txt") == root / "a.txt"
    assert refused(guard, "b.txt").code is ErrorCode.DENIED_PATTERN
    ignore.unlink()
    assert guard.resolve("b.txt") == root / "b.txt"


def test_tinyagentignore_negation_cannot_reinclude_a_denied_directory(
    guard: PathGuard, root: Path
) -> None:
    (root / ".tinyagentignore").write_text("vault/\n!vault/public.txt\n*.log\n!keep.log\n")
    assert refused(guard, "vault/public.txt").details["pattern"] == "vault/"
    assert guard.resolve("keep.log") == root / "keep.log"
    assert refused(guard, "other.log").details["pattern"] == "*.log"


def test_tinyagentignore_cannot_unlock_policy_patterns(guard: PathGuard) -> None:
    guard.root.joinpath(".tinyagentignore").write_text("!.env\n")
    assert refused(guard, ".env").details["pattern"] == ".env"


def test_tinyagentignore_itself_is_readable_but_not_writable(guard: PathGuard, root: Path) -> None:
    (root / ".tinyagentignore").write_text("*.log\n")
    assert guard.resolve(".tinyagentignore") == root / ".tinyagentignore"
    assert refused(guard, ".tinyagentignore", for_write=True).code is ErrorCode.DENIED_PATTERN
    assert guard.resolve("sub/.tinyagentignore", for_write=True) == root / "sub/.tinyagentignore"


def test_tinyagentignore_lines_are_read_as_git_reads_them(guard: PathGuard, root: Path) -> None:
    """No line is invalid in gitignore: a lone '!' or an empty range matches nothing,
    a POSIX class is a class and braces are literal."""
    (root / ".tinyagentignore").write_text("!\n[z-a]never\nnotes[[:digit:]].txt\nsecret{1,2}.txt\n")
    assert guard.resolve("README.md") == root / "README.md"
    assert guard.resolve("never") == root / "never"
    assert refused(guard, "notes1.txt").code is ErrorCode.DENIED_PATTERN
    assert refused(guard, "secret{1,2}.txt").code is ErrorCode.DENIED_PATTERN
    assert guard.resolve("secret1.txt") == root / "secret1.txt"


def test_symlink_cannot_launder_a_denied_name(guard: PathGuard, root: Path) -> None:
    (root / ".env").write_text("TOKEN=1\n")
    (root / "settings.txt").symlink_to(".env")
    assert refused(guard, "settings.txt").details["pattern"] == ".env"
    (root / "plain.txt").write_text("ok\n")
    (root / "id_rsa").symlink_to("plain.txt")
    assert refused(guard, "id_rsa").details["pattern"] == "id_rsa*"


def test_denied_pattern_reports_the_matching_pattern(guard: PathGuard) -> None:
    assert guard.denied_pattern("config/.env.prod", for_write=False) == ".env.*"
    assert guard.denied_pattern(".git/config", for_write=False) is None
    assert guard.denied_pattern(".git/config", for_write=True) == ".git"
    assert guard.denied_pattern(".ssh", for_write=False) is None
    assert guard.denied_pattern(".ssh", for_write=False, is_dir=True) == ".ssh/"
    assert guard.denied_pattern(".", for_write=True) is None


def test_policy_patterns_replace_the_defaults(root: Path) -> None:
    guard = PathGuard(root, SandboxPolicy(denied_patterns=("*.csv",), write_denied_patterns=()))
    assert guard.resolve(".env") == root / ".env"
    assert guard.resolve(".git/config", for_write=True) == root / ".git" / "config"
    assert refused(guard, "data/x.csv").details["pattern"] == "*.csv"


def test_null_byte_is_refused(guard: PathGuard) -> None:
    error = refused(guard, "README.md\x00.txt")
    assert error.code is ErrorCode.NULL_BYTE
    assert error.security_violation is True


def test_too_many_components_is_refused(root: Path) -> None:
    guard = PathGuard(root, SandboxPolicy(max_path_depth=4))
    assert guard.resolve("a/b/c/d", for_write=True) == root / "a" / "b" / "c" / "d"
    error = refused(guard, "a/b/c/d/e")
    assert error.code is ErrorCode.PATH_TOO_DEEP
    assert "5 components" in error.message


def test_too_long_path_is_refused(root: Path) -> None:
    guard = PathGuard(root, SandboxPolicy(max_path_chars=32))
    assert guard.resolve("x" * 32, for_write=True) == root / ("x" * 32)
    error = refused(guard, "x" * 33)
    assert error.code is ErrorCode.PATH_TOO_DEEP
    assert "33 characters" in error.message


def test_component_longer_than_the_file_system_allows_is_refused(guard: PathGuard) -> None:
    assert refused(guard, "n" * 300).code is ErrorCode.PATH_TOO_DEEP


def test_backslashes_are_separators(guard: PathGuard, root: Path) -> None:
    assert guard.resolve("src\\pkg\\mod.py") == root / "src" / "pkg" / "mod.py"
    assert refused(guard, "..\\outside\\secret.txt").code is ErrorCode.PATH_OUTSIDE_ROOT
    assert refused(guard, "sub\\.env").code is ErrorCode.DENIED_PATTERN


@pytest.mark.parametrize("raw", ["", "   ", "\t\n"])
def test_empty_path_is_refused(guard: PathGuard, raw: str) -> None:
    assert refused(guard, raw).code is ErrorCode.INVALID_ARGUMENT


@pytest.mark.parametrize("raw", [None, 3, b"README.md", Path("README.md")])
def test_non_string_path_is_refused(guard: PathGuard, raw: object) -> None:
    with pytest.raises(ToolError) as caught:
        guard.resolve(raw)  # type: ignore[arg-type]
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT


def test_unpaired_surrogate_is_refused(guard: PathGuard) -> None:
    assert refused(guard, "bad\ud800name").code is ErrorCode.INVALID_ARGUMENT


def test_home_tilde_is_not_expanded(guard: PathGuard, root: Path) -> None:
    for raw in ("~", "~/notes.txt", "~\\notes.txt"):
        error = refused(guard, raw)
        assert error.code is ErrorCode.PATH_OUTSIDE_ROOT
        assert "'~' is not expanded" in error.message
    assert guard.resolve("./~/x", for_write=True) == root / "~" / "x"
    assert guard.resolve("~notes.txt") == root / "~notes.txt"
    assert refused(guard, os.path.expanduser("~/x")).code is ErrorCode.PATH_OUTSIDE_ROOT


def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    for bad in (tmp_path / "missing", tmp_path / "file.txt"):
        if bad.name == "file.txt":
            bad.write_text("x")
        with pytest.raises(ToolError) as caught:
            PathGuard(bad)
        assert caught.value.code is ErrorCode.INVALID_ARGUMENT


def test_relative_gives_posix_path_from_root(guard: PathGuard, root: Path) -> None:
    assert guard.relative(root / "src" / "pkg" / "mod.py") == "src/pkg/mod.py"
    assert guard.relative(root) == "."
    with pytest.raises(ToolError) as caught:
        guard.relative(root.parent / "rootish")
    assert caught.value.code is ErrorCode.PATH_OUTSIDE_ROOT


BATCH_PATHS = [
    "src/pkg/mod.py",
    "src/pkg/new.py",
    "src/pkg/../pkg/mod.py",
    "lib/mod.py",
    "lib/../README.md",
    "lib/new.py",
    "src/new/deeper/file.py",
    "src/new/deeper/other.py",
    "./src//pkg/mod.py",
    "README.md",
    "src/pkg/.env",
    "src/pkg/private.py",
    "lib/hidden.py",
    "src/.git/config",
    "src/vendor/secret.txt",
    "src/vendor/other.txt",
]


def _outcome(guard: PathGuard, raw: str, for_write: bool) -> Path | tuple[ErrorCode, str]:
    try:
        return guard.resolve(raw, for_write=for_write)
    except ToolError as error:
        return error.code, error.message


@pytest.mark.parametrize("for_write", [False, True])
def test_a_batch_resolves_each_path_as_resolve_does(
    guard: PathGuard, root: Path, outside: Path, for_write: bool
) -> None:
    """Paths through a shared folder (walked once in a batch), through a symlinked
    folder inside the root, through one pointing outside, with '..' after a link,
    denied names (by the policy, by the ignore file, as named through a link) and
    missing folders: each resolves, or is refused with the same
    error, alone as in a batch, whichever path of the folder comes first."""
    (root / "lib").symlink_to("src/pkg", target_is_directory=True)
    (root / "src" / "vendor").symlink_to(outside, target_is_directory=True)
    (root / ".tinyagentignore").write_text("src/pkg/private.py\nlib/hidden.py\n")
    alone = {raw: _outcome(guard, raw, for_write) for raw in BATCH_PATHS}
    accepted = [raw for raw in BATCH_PATHS if isinstance(alone[raw], Path)]
    refused_ones = [raw for raw in BATCH_PATHS if raw not in accepted]
    assert refused_ones and len(accepted) > len(refused_ones)
    for order in (accepted, accepted[::-1]):
        assert guard.resolve_all(order, for_write=for_write) == [alone[raw] for raw in order]
        for raw in refused_ones:  # after every folder of the batch is known
            with pytest.raises(ToolError) as caught:
                guard.resolve_all([*order, raw], for_write=for_write)
            assert (caught.value.code, caught.value.message) == alone[raw]


def test_a_batch_walks_a_shared_folder_once(
    guard: PathGuard, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked: list[str] = []
    real_lstat = os.lstat

    def counting_lstat(path: str, *args: object, **kwargs: object) -> os.stat_result:
        looked.append(str(path))
        return real_lstat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "lstat", counting_lstat)
    names = [f"src/pkg/file{index}.py" for index in range(20)]
    resolved = guard.resolve_all(names, for_write=True)
    assert resolved == [root / name for name in names]
    assert looked.count(str(root / "src")) == 1
    assert looked.count(str(root / "src" / "pkg")) == 1
    assert looked.count(str(root / ".tinyagentignore")) == 1
