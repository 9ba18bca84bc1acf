"""Attacks on the guard, the ignore files, the undo journal, globs and previews.

Each test performs the attack through the toolkit and fails if the hole reopens.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import time
from pathlib import Path

import pytest

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.changes.changeset import ChangeKind, ChangeSet, FileChange
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.guard.path_guard import PathGuard
from tinyagent_fs.hooks.decision import Risk, ToolCall
from tinyagent_fs.hooks.terminal import TerminalHook
from tinyagent_fs.integrations.mcp.approval import approval_message
from tinyagent_fs.journal.undo_journal import ENTRY_NAME, KEEP_ENTRIES, PRUNE_SLACK, UndoJournal
from tinyagent_fs.ops.glob_match import GlobMatcher
from tinyagent_fs.ops.ripgrep import find_ripgrep
from tinyagent_fs.ops.search import grep
from tinyagent_fs.policy import DEFAULT_DENIED_PATTERNS
from tinyagent_fs.tools.registry import tool_table

SECRET = "SECRET=1"


# --- ignore files: a `!` line cannot lift a policy denial --------------------------------


async def test_ignore_file_negation_cannot_lift_a_policy_denial(
    fs: FileTools, project: Path
) -> None:
    (project / ".tinyagentignore").write_text("!.env\n!*.key\n")
    (project / "server.key").write_text("KEYDATA\n")
    denied = {".env", "server.key"}
    grep = await fs.grep("SEC.ET=|KEYDAT.")
    assert SECRET not in grep.text and "KEYDATA" not in grep.text
    assert not denied & {m["path"] for m in grep.data["matches"]}
    for pattern in (".env", "*", "*.key", "**/*", "{.env,server.key}"):
        found = await fs.glob(pattern)
        assert not denied & set(found.data.get("matches", [])), pattern
    listing = await fs.list_directory(".")
    assert not denied & set(listing.data["paths"])
    for path in denied:
        read = await fs.read_file(path)
        assert read.error is not None and read.error.code == "DENIED_PATTERN"
    many = await fs.read_many_files([".env", "server.key", "README.md"])
    assert SECRET not in many.text and "KEYDATA" not in many.text


async def test_anchored_denial_hides_an_entry_of_a_listed_subdirectory(
    fs: FileTools, project: Path
) -> None:
    (project / "docs" / "secret.txt").write_text(SECRET)
    (project / "docs" / "sub").mkdir()
    (project / "docs" / "sub" / "key.txt").write_text(SECRET)
    (project / ".tinyagentignore").write_text("/docs/secret.txt\n/docs/sub/key.txt\n")
    listing = await fs.list_directory("docs", depth=2)
    assert listing.data["paths"] == ["docs/guide.md", "docs/sub"]
    assert "secret.txt" not in listing.text and "key.txt" not in listing.text


@pytest.mark.parametrize("backend", ["python", "ripgrep"])
def test_grep_backends_keep_policy_denials_under_negation(project: Path, backend: str) -> None:
    if backend == "ripgrep" and find_ripgrep() is None:
        pytest.skip("rg is not installed")
    (project / ".tinyagentignore").write_text("!.env\n")
    root = str(project.resolve())
    found = grep(
        root, root, "SEC.ET", None, False, True, 0, 50, list(DEFAULT_DENIED_PATTERNS), backend
    )
    assert found["matches"] == [] and found["backend"] == backend


async def test_ignore_file_negation_still_reincludes_its_own_denials(
    fs: FileTools, project: Path
) -> None:
    (project / "logs").mkdir()
    (project / "logs" / "a.log").write_text("alpha\n")
    (project / "logs" / "keep.log").write_text("alpha\n")
    (project / ".tinyagentignore").write_text("*.log\n!keep.log\n")
    found = await fs.grep("alpha")
    assert "keep.log" in found.text and "a.log" not in found.text.replace("keep.log", "")


# --- ignore files: the toolkit never follows, blocks on, or quotes them ------------------


def _outside_secret(tmp_path: Path) -> Path:
    secret = tmp_path / "shadow"
    secret.write_text("*.md\nroot:$6$verysecrethash:19000::\n")
    return secret


async def test_symlinked_tinyagentignore_is_never_read(
    fs: FileTools, project: Path, tmp_path: Path
) -> None:
    (project / ".tinyagentignore").symlink_to(_outside_secret(tmp_path))
    for result in (await fs.read_file("README.md"), await fs.glob("*.md"), await fs.grep("x")):
        assert "verysecrethash" not in result.text
        assert not result.ok and result.error is not None
        assert result.error.code == "PERMISSION_DENIED"
        assert "symlink" in result.text


async def test_symlinked_gitignore_is_skipped_not_followed(
    fs: FileTools, project: Path, tmp_path: Path
) -> None:
    (project / ".gitignore").symlink_to(_outside_secret(tmp_path))
    found = await fs.glob("**/*.md")
    assert found.ok and "README.md" in found.text  # the outside '*.md' line was not applied
    grep = await fs.grep("Guide")
    assert grep.ok and "verysecrethash" not in grep.text


@pytest.mark.parametrize("name", [".tinyagentignore", ".gitignore", "docs/.gitignore"])
async def test_fifo_ignore_file_does_not_block(fs: FileTools, project: Path, name: str) -> None:
    os.mkfifo(project / name)
    started = time.monotonic()
    grep = fs.grep("Guide") if name == ".tinyagentignore" else fs.file_exists("docs/guide.md")
    results = await asyncio.wait_for(
        asyncio.gather(fs.glob("**/*.md"), grep, fs.list_directory("docs")), 20
    )
    assert time.monotonic() - started < 20
    if name == ".tinyagentignore":
        assert all(r.error is not None and r.error.code == "PERMISSION_DENIED" for r in results)
    else:
        assert all(r.ok for r in results), [r.text for r in results]
        assert "docs/guide.md" in results[0].data["matches"]


async def test_huge_ignore_file_is_refused_not_read(fs: FileTools, project: Path) -> None:
    with open(project / ".tinyagentignore", "wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    with open(project / ".gitignore", "wb") as handle:
        handle.write(b"*.md\n")
        handle.truncate(50 * 1024 * 1024)
    read = await fs.read_file("README.md")
    assert read.error is not None and read.error.code == "PERMISSION_DENIED"
    (project / ".tinyagentignore").unlink()
    found = await fs.glob("**/*.md")
    assert found.ok and "README.md" in found.text  # the oversized .gitignore was skipped


async def test_an_ignore_line_git_never_matches_denies_nothing_and_is_not_quoted(
    fs: FileTools, project: Path
) -> None:
    """git reads every line; ``[z-a]`` is an empty range, so the line matches nothing."""
    (project / ".tinyagentignore").write_text("ok.txt\n[z-a]TOPSECRET-hunter2\n")
    result = await fs.read_file("README.md")
    assert result.ok
    assert "hunter2" not in result.text and "TOPSECRET" not in result.text


# --- globs are linear-time ---------------------------------------------------------------

PATHOLOGICAL = "*a*a*a*a*a*a*a*a*b"


@pytest.mark.parametrize(
    "pattern",
    [PATHOLOGICAL, "**/" + PATHOLOGICAL, "{x,*a*a*a*a*a*a*a*a*c}", "**/a*a*/**/*a*a*a*b"],
)
def test_glob_matcher_agrees_with_the_regex_translation(pattern: str) -> None:
    matcher = GlobMatcher(pattern, braces=True)
    assert matcher.linear
    regex = re.compile(matcher.source, re.DOTALL)
    names = ["ab", "aab", "aaaaaaaab", "xaxaxaxaxaxaxaxaxb", "aaaaaaaa", "x", "a/aaaaaaaab"]
    names += ["d/aa/e/aaab", "aa/aaab", "aaaaaaaac", "a/a/a/a/a/a/a/a/b", "aaaaaaaa/b"]
    for name in names:
        assert matcher.fullmatch(name) == (regex.fullmatch(name) is not None), (pattern, name)


async def test_pathological_glob_is_fast(fs: FileTools, project: Path) -> None:
    (project / ("a" * 200)).write_text("x\n")
    (project / ("a" * 199 + "b")).write_text("x\n")
    started = time.monotonic()
    found = await fs.glob(PATHOLOGICAL)
    grep_found = await fs.grep("x", include=PATHOLOGICAL)
    assert time.monotonic() - started < 10  # the backtracking regex takes minutes per name
    assert found.data["matches"] == ["a" * 199 + "b"]
    assert grep_found.ok


async def test_pathological_gitignore_line_is_fast(fs: FileTools, project: Path) -> None:
    (project / ".gitignore").write_text(PATHOLOGICAL + "\n")
    (project / ("a" * 200)).write_text("x\n")
    (project / ("a" * 199 + "b")).write_text("x\n")
    started = time.monotonic()
    found = await fs.glob("*")
    assert time.monotonic() - started < 10
    assert "a" * 200 in found.data["matches"]
    assert "a" * 199 + "b" not in found.data["matches"]


# --- the undo journal cannot be forged ---------------------------------------------------


def _tree(directory: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _stored_file(journal: UndoJournal, change_id: str, name: str) -> Path:
    """A file of ``change_id``'s entry (entry names also carry the time)."""
    for path in journal.directory.iterdir():
        found = ENTRY_NAME.fullmatch(path.name)
        if found is not None and found["change_id"] == change_id:
            return journal.directory / f"{found['stem']}.{name}"
    raise AssertionError(f"no journal entry for {change_id}")


def _forged_manifest(target: str, stored: str) -> str:
    entry = {
        "kind": "modify",
        "path": target,
        "dest": None,
        "old": stored,
        "dest_old": None,
        "new_hash": "0" * 64,
        "mode": None,
    }
    manifest = {
        "change_id": "aaaaaaaaaaaa",
        "tool": "write_file",
        "status": "committed",
        "created": 1.0,
        "files": [entry],
        "undone_by": None,
    }
    return json.dumps(manifest)


async def test_undo_refuses_a_change_id_that_is_a_path(
    fs: FileTools, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    (project / "forged").mkdir()
    (project / "forged" / "0.old").write_text("pwned\n")
    manifest = _forged_manifest(str(outside), "0.old")
    assert (await fs.write_file("forged/manifest.json", manifest)).ok
    before = _tree(project)
    for change_id in (str(project / "forged"), "../" * 12 + str(project / "forged"), "a/b", ".."):
        result = await fs.undo(change_id)
        assert result.error is not None and result.error.code == "INVALID_ARGUMENT", change_id
    assert outside.read_text() == "outside\n"
    assert _tree(project) == before


@pytest.mark.parametrize("target", ["/etc/passwd", "../outside.txt", "README.md"])
async def test_undo_refuses_an_unsigned_manifest_in_the_journal(
    fs: FileTools, project: Path, tmp_path: Path, target: str
) -> None:
    assert fs.journal is not None
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    stem = f"{time.time_ns():020d}-aaaaaaaaaaaa"
    fs.journal.directory.mkdir(parents=True, exist_ok=True)
    (fs.journal.directory / f"{stem}.0.old").write_text("pwned\n")
    path = target if target.startswith("/") else str(project / target)
    (fs.journal.directory / f"{stem}.json").write_text(_forged_manifest(path, f"{stem}.0.old"))
    before = _tree(project)
    for result in (await fs.undo("aaaaaaaaaaaa"), await fs.undo()):
        assert not result.ok and result.error is not None
        assert result.error.code in ("PERMISSION_DENIED", "NOT_FOUND"), result.text
    assert outside.read_text() == "outside\n"
    assert _tree(project) == before
    assert "pwned" not in Path("/etc/passwd").read_text()


async def test_undo_refuses_a_tampered_stored_file(fs: FileTools, project: Path) -> None:
    assert fs.journal is not None
    written = await fs.write_file("README.md", "new\n")
    change_id = written.data["change_id"]
    _stored_file(fs.journal, change_id, "0.old").write_text("#!/bin/sh\nevil\n")
    result = await fs.undo(change_id)
    assert result.error is not None and result.error.code == "PERMISSION_DENIED"
    assert (project / "README.md").read_text() == "new\n"


async def test_undo_guards_every_manifest_path_again(
    fs: FileTools, project: Path, tmp_path: Path
) -> None:
    """A signed entry (the journal's own API) naming an outside path is refused all the same."""
    assert fs.journal is not None
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    change = FileChange(ChangeKind.MODIFY, outside, b"pwned\n", b"outside\n")
    changeset = ChangeSet("write_file", (change,), project)
    fs.journal.begin(changeset)
    fs.journal.finish(changeset.change_id)
    result = await fs.undo(changeset.change_id)
    assert result.error is not None and result.error.code == "PATH_OUTSIDE_ROOT"
    assert outside.read_text() == "outside\n"
    (project / ".env.local").write_text("A=2\n")
    denied = FileChange(ChangeKind.MODIFY, project / ".env.local", b"A=2\n", b"A=1\n")
    changeset = ChangeSet("write_file", (denied,), project)
    fs.journal.begin(changeset)
    (project / ".env.new").write_text("A=1\n")  # committed as a commit does: by a rename
    (project / ".env.new").replace(project / ".env.local")
    fs.journal.finish(changeset.change_id)
    result = await fs.undo(changeset.change_id)
    assert result.error is not None and result.error.code == "DENIED_PATTERN"
    assert (project / ".env.local").read_text() == "A=1\n"


# --- what a person approves is what runs -------------------------------------------------

HIDDEN = "touch X #\x1b[2K\r  command: ls -la" + "; rm -rf data" * 10


def command_call() -> ToolCall:
    return tool_table()["run_command"].review_call({"command": HIDDEN})


def shows_everything(shown: str) -> None:
    assert "\x1b" not in shown and "\r" not in shown
    assert "touch X #⟨U+001B⟩[2K⟨U+000D⟩  command: ls -la" in shown
    assert shown.count("rm -rf data") == 10  # the whole command, not a preview


def test_terminal_preview_neutralises_escape_sequences() -> None:
    out = io.StringIO()
    TerminalHook(io.StringIO("n\n"), out, color=False).before_tool_execution(command_call())
    shows_everything(out.getvalue())


def test_terminal_diff_of_a_file_with_escape_sequences_is_shown_escaped(tmp_path: Path) -> None:
    new = "ok\n\x1b[1A\x1b[2Kinnocent\u202eexe.txt\n"
    change = FileChange(ChangeKind.CREATE, tmp_path / "a.txt", None, new.encode(), new_text=new)
    changeset = ChangeSet("write_file", (change,), tmp_path)
    call = ToolCall(
        "write_file", {"path": "a.txt"}, Risk.WRITE, changeset, changeset.unified_diff()
    )
    out = io.StringIO()
    TerminalHook(io.StringIO("n\n"), out, color=False).before_tool_execution(call)
    assert "\x1b" not in out.getvalue() and "\u202e" not in out.getvalue()
    assert "+⟨U+001B⟩[1A⟨U+001B⟩[2Kinnocent⟨U+202E⟩exe.txt" in out.getvalue()


def test_mcp_elicitation_message_neutralises_escape_sequences(tmp_path: Path) -> None:
    command = tool_table()["run_command"].review_call({"command": HIDDEN + "\u202e"})
    shown = approval_message(command)
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f\u202e]", shown), shown
    assert shown.count("rm -rf data") == 10
    new = "ok\n\x1b[1A\x1b[2Kinnocent\u202eexe.txt\n"
    change = FileChange(ChangeKind.CREATE, tmp_path / "a.txt", None, new.encode(), new_text=new)
    changeset = ChangeSet("write_file", (change,), tmp_path)
    write = ToolCall(
        "write_file", {"path": "a.txt"}, Risk.WRITE, changeset, changeset.unified_diff()
    )
    shown = approval_message(write)
    assert "\x1b" not in shown and "\u202e" not in shown
    assert "+⟨U+001B⟩[1A⟨U+001B⟩[2Kinnocent⟨U+202E⟩exe.txt" in shown


# --- paths: Windows forms, Unicode normalisation, case-insensitive file systems ----------


@pytest.mark.parametrize(
    "raw", ["C:\\Users\\x\\notes.txt", "C:/x", "c:", "D:relative.txt", "\\\\server\\share\\f"]
)
async def test_windows_paths_are_foreign_absolute_paths(
    fs: FileTools, project: Path, raw: str
) -> None:
    before = sorted(p.name for p in project.iterdir())
    result = await fs.write_file(raw, "x\n")
    assert result.error is not None and result.error.code == "PATH_OUTSIDE_ROOT"
    assert "Windows" in result.text
    assert sorted(p.name for p in project.iterdir()) == before


def test_a_file_named_like_a_drive_is_reachable_explicitly(project: Path) -> None:
    guard = PathGuard(project)
    assert guard.resolve("./C:x") == project.resolve() / "C:x"


def test_denied_patterns_match_after_nfc_normalisation(project: Path) -> None:
    policy = SandboxPolicy(denied_patterns=("caf\u00e9.key", "r\u00e9sum\u00e9/"))
    guard = PathGuard(project, policy)
    for raw in ("cafe\u0301.key", "caf\u00e9.key", "re\u0301sume\u0301/cv.txt"):
        with pytest.raises(ToolError) as refused:
            guard.resolve(raw)
        assert refused.value.code is ErrorCode.DENIED_PATTERN, raw


def test_denied_patterns_fold_case_on_a_case_insensitive_file_system(project: Path) -> None:
    guard = PathGuard(project, case_insensitive=True)
    for raw in (".ENV", "Server.KEY", ".SSH/id", ".Git/config"):
        with pytest.raises(ToolError) as refused:
            guard.resolve(raw, for_write=True)
        assert refused.value.code is ErrorCode.DENIED_PATTERN, raw


def test_case_sensitivity_is_probed_from_the_root(project: Path) -> None:
    # This suite runs on a case-sensitive Linux file system: '.ENV' is another file.
    guard = PathGuard(project)
    assert guard.case_insensitive is False
    assert guard.resolve(".ENV") == project.resolve() / ".ENV"


def test_journal_prunes_in_batches_and_keeps_the_newest(tmp_path: Path) -> None:
    journal = UndoJournal(tmp_path / "journal")
    root = tmp_path / "project"
    ids = []
    for index in range(KEEP_ENTRIES + PRUNE_SLACK + 2):
        change = FileChange(ChangeKind.CREATE, root / f"f{index}", None, b"x")
        changeset = ChangeSet("write_file", (change,), root)
        journal.begin(changeset)
        journal.finish(changeset.change_id)
        ids.append(changeset.change_id)
    journal.settle()  # committed marks, and the prunes that follow them, are written behind
    names = [ENTRY_NAME.fullmatch(p.name) for p in journal.directory.iterdir()]
    kept = {found["change_id"] for found in names if found is not None}
    assert KEEP_ENTRIES <= len(kept) < len(ids) <= KEEP_ENTRIES + PRUNE_SLACK + 2
    assert set(ids[-len(kept) :]) == kept
    last = journal.last_undoable()
    assert last is not None and last.change_id == ids[-1]


@pytest.mark.parametrize(
    "path", [".bashrc", ".gitconfig", ".gitmodules", ".ssh/authorized_keys", ".config/autostart/x"]
)
async def test_file_tools_never_write_a_file_that_makes_git_or_a_shell_run_code(
    fs: FileTools, project: Path, path: str
) -> None:
    result = await fs.write_file(path, "touch pwned\n")
    assert result.error is not None and result.error.code == "DENIED_PATTERN", result.text
    assert not (project / path).exists()


async def test_file_tools_never_write_into_or_make_a_git_directory_by_content(
    fs: FileTools, project: Path
) -> None:
    (project / "backup.git" / "objects").mkdir(parents=True)
    (project / "backup.git" / "refs").mkdir()
    (project / "half" / "objects").mkdir(parents=True)
    (project / "linked").mkdir()
    (project / "linked" / "HEAD").write_text("ref: refs/heads/main\n")
    attempts = {
        "backup.git/hooks/pre-commit": "#!/bin/sh\ntouch pwned\n",
        "backup.git/config": "[core]\n\tfsmonitor = touch pwned\n",
        "half/refs/heads/main": "0" * 40 + "\n",  # would make half/ a git directory
        "linked/commondir": "../backup.git\n",
    }
    for path, text in attempts.items():
        result = await fs.write_file(path, text)
        assert result.error is not None and result.error.code == "DENIED_PATTERN", result.text
        assert "git directory" in result.text
        assert not (project / path).exists()
    made = await fs.create_directory("half/refs")
    assert made.error is not None and made.error.code == "DENIED_PATTERN"
    assert (await fs.write_file("half/notes.txt", "fine\n")).ok


async def test_one_patch_cannot_make_a_git_directory_from_files_each_harmless_alone(
    fs: FileTools, project: Path
) -> None:
    (project / "sub").mkdir()
    for where in ("backup.git/", "sub/", ""):  # a folder, another, the root itself
        patch = "".join(
            f"*** Add File: {where}{name}\n+{text}\n"
            for name, text in (
                ("HEAD", "ref: refs/heads/main"),
                ("objects/info/packs", ""),
                ("refs/tags/.keep", ""),
                ("config", "[core]\n+\thooksPath = /tmp/pwned"),
            )
        )
        result = await fs.call("apply_patch", {"patch": f"*** Begin Patch\n{patch}*** End Patch"})
        assert result.error is not None and result.error.code == "DENIED_PATTERN", result.text
        assert "git directory" in result.text
        assert not (project / where / "config").exists()
        assert not (project / where / "HEAD").exists()
