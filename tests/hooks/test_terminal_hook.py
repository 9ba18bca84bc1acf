from __future__ import annotations

import io
import json
import shlex
import sys
from pathlib import Path

import pytest

from tinyagent_fs.changes.changeset import ChangeKind, ChangeSet, FileChange
from tinyagent_fs.hooks.decision import Decision, Risk, ToolCall, Verdict
from tinyagent_fs.hooks.terminal import CHANGE_PROMPT, NO_ANSWER, TerminalHook
from tinyagent_fs.tools.registry import tool_table

EDITOR_SCRIPT = """
import json, sys
mode, log, path = sys.argv[1], sys.argv[2], sys.argv[3]
with open(log, "a") as handle:
    handle.write(path + "\\n")
text = open(path, encoding="utf-8", newline="").read()
if mode == "replace":
    text = text.replace("world", "there")
elif mode == "fail":
    sys.exit(3)
elif mode == "json-two-step":
    try:
        args = json.loads(text)
    except ValueError:
        assert text == '{"command": "echo edited",\\n', text
        text = '{"command": "echo edited"}'
    else:
        text = '{"command": "echo edited",\\n'
open(path, "w", encoding="utf-8", newline="").write(text)
"""


class TTYStringIO(io.StringIO):
    """A text stream that says it is a terminal, as a real one would."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def editor(tmp_path: Path) -> tuple[Path, Path]:
    script = tmp_path / "editor.py"
    script.write_text(EDITOR_SCRIPT)
    return script, tmp_path / "editor.log"


def editor_command(editor: tuple[Path, Path], mode: str) -> str:
    script, log = editor
    return shlex.join([sys.executable, str(script), mode, str(log)])


def modify_call(root: Path, old: str = "hello world\n", new: str = "hello world!\n") -> ToolCall:
    change = FileChange(
        kind=ChangeKind.MODIFY,
        path=root / "a.txt",
        old_bytes=old.encode(),
        new_bytes=new.encode(),
        old_text=old,
        new_text=new,
    )
    changeset = ChangeSet(tool="edit_file", changes=(change,), root=root)
    return ToolCall(
        tool="edit_file",
        args={"path": "a.txt", "old_string": "world", "new_string": "world!"},
        risk=Risk.WRITE,
        changeset=changeset,
        diff=changeset.unified_diff(),
    )


def run(
    call: ToolCall, answers: str, editor: str | None = None, color: bool | None = None
) -> tuple[Decision, str]:
    out = io.StringIO()
    hook = TerminalHook(io.StringIO(answers), out, editor=editor, color=color)
    return hook.before_tool_execution(call), out.getvalue()


def test_read_calls_proceed_without_asking(tmp_path: Path) -> None:
    call = ToolCall(tool="read_file", args={"path": "a.txt"}, risk=Risk.READ)
    decision, shown = run(call, "")
    assert decision == Decision.proceed(decided_by="terminal (reads pass unasked)")
    assert shown == ""


def test_yes_applies_after_showing_the_diff(tmp_path: Path) -> None:
    decision, shown = run(modify_call(tmp_path), "y\n")
    assert decision == Decision.proceed(decided_by="terminal")
    assert "edit_file" in shown
    assert "old_string: world" in shown
    assert "--- a/a.txt\n+++ b/a.txt\n" in shown
    assert "-hello world\n+hello world!\n" in shown
    assert shown.endswith(CHANGE_PROMPT)
    assert "\033[" not in shown


def test_no_denies_with_the_reason_given(tmp_path: Path) -> None:
    decision, shown = run(modify_call(tmp_path), "n\nwrong file, edit b.txt\n")
    assert decision.verdict is Verdict.DENY
    assert decision.message == "wrong file, edit b.txt"
    assert decision.decided_by == "terminal"
    assert "Reason (optional): " in shown


@pytest.mark.parametrize("answers", ["no\n\n", "n\n"])
def test_no_without_a_reason_uses_a_default_message(tmp_path: Path, answers: str) -> None:
    decision, _ = run(modify_call(tmp_path), answers)
    assert decision == Decision.deny("Denied by the user at the terminal", decided_by="terminal")


def test_closed_input_denies_saying_nobody_answered(tmp_path: Path) -> None:
    decision, _ = run(modify_call(tmp_path), "")
    assert decision == Decision.deny(NO_ANSWER, decided_by="terminal")
    assert "no answer" in decision.message.lower()


def test_an_invalid_answer_asks_again(tmp_path: Path) -> None:
    decision, shown = run(modify_call(tmp_path), "maybe\n\nY\n")
    assert decision.verdict is Verdict.PROCEED
    assert shown.count(CHANGE_PROMPT) == 3
    assert "Please answer y" in shown


def test_edit_returns_the_content_the_person_wrote(
    tmp_path: Path, editor: tuple[Path, Path]
) -> None:
    decision, _ = run(modify_call(tmp_path), "e\n", editor=editor_command(editor, "replace"))
    assert decision == Decision.modify(
        content={"a.txt": "hello there!\n"},
        message="edited at the terminal",
        decided_by="terminal",
    )
    edited_paths = editor[1].read_text().splitlines()
    assert len(edited_paths) == 1
    assert edited_paths[0].endswith(".txt")
    assert not Path(edited_paths[0]).exists()


def test_an_unchanged_edit_proceeds(tmp_path: Path, editor: tuple[Path, Path]) -> None:
    decision, _ = run(modify_call(tmp_path), "e\n", editor=editor_command(editor, "keep"))
    assert decision == Decision.proceed(decided_by="terminal")


def test_edit_opens_each_text_file_and_returns_only_the_changed_ones(
    tmp_path: Path, editor: tuple[Path, Path]
) -> None:
    changes = (
        FileChange(ChangeKind.CREATE, tmp_path / "new.md", None, b"hello world\n"),
        FileChange(ChangeKind.MODIFY, tmp_path / "same.txt", b"a\n", b"b\n"),
        FileChange(ChangeKind.DELETE, tmp_path / "gone.txt", b"bye\n", None),
        FileChange(ChangeKind.MODIFY, tmp_path / "blob.bin", b"\x00", b"\xff\xfe\x00"),
        FileChange(
            ChangeKind.MOVE,
            tmp_path / "old.py",
            b"x = 1\n",
            b"world = 1\n",
            dest=tmp_path / "pkg" / "moved.py",
            new_text="world = 1\n",
        ),
    )
    changeset = ChangeSet(tool="apply_patch", changes=changes, root=tmp_path)
    call = ToolCall(
        tool="apply_patch",
        args={"patch": "..."},
        risk=Risk.DESTRUCTIVE,
        changeset=changeset,
        diff=changeset.unified_diff(),
    )
    decision, _ = run(call, "e\n", editor=editor_command(editor, "replace"))
    assert decision.verdict is Verdict.MODIFY
    assert decision.modified_content == {"new.md": "hello there\n", "pkg/moved.py": "there = 1\n"}
    suffixes = [Path(p).suffix for p in editor[1].read_text().splitlines()]
    assert suffixes == [".md", ".txt", ".py"]


def test_a_change_with_nothing_editable_asks_again(
    tmp_path: Path, editor: tuple[Path, Path]
) -> None:
    change = FileChange(ChangeKind.DELETE, tmp_path / "gone.txt", b"bye\n", None)
    changeset = ChangeSet(tool="delete_file", changes=(change,), root=tmp_path)
    call = ToolCall("delete_file", {"path": "gone.txt"}, Risk.DESTRUCTIVE, changeset)
    decision, shown = run(call, "e\ny\n", editor=editor_command(editor, "replace"))
    assert decision.verdict is Verdict.PROCEED
    assert "Nothing in this change can be edited" in shown
    assert "-bye\n" in shown
    assert not editor[1].exists()


def test_a_failing_editor_asks_again(tmp_path: Path, editor: tuple[Path, Path]) -> None:
    decision, shown = run(modify_call(tmp_path), "e\nn\n\n", editor=editor_command(editor, "fail"))
    assert decision.verdict is Verdict.DENY
    assert "exited with status 3" in shown


def test_a_missing_editor_asks_again(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-editor")
    decision, shown = run(modify_call(tmp_path), "e\ny\n", editor=missing)
    assert decision.verdict is Verdict.PROCEED
    assert "Could not start the editor" in shown


def test_editor_comes_from_the_environment_when_not_given(
    tmp_path: Path, editor: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", editor_command(editor, "replace"))
    decision, _ = run(modify_call(tmp_path), "e\n")
    assert decision.modified_content == {"a.txt": "hello there!\n"}


def test_edit_without_a_changeset_edits_the_arguments_as_json(
    tmp_path: Path, editor: tuple[Path, Path]
) -> None:
    call = tool_table()["run_command"].review_call({"command": "rm -rf build"})
    decision, shown = run(call, "e\ne\n", editor=editor_command(editor, "json-two-step"))
    assert decision == Decision.modify(
        args={"command": "echo edited"},
        message="arguments edited at the terminal",
        decided_by="terminal",
    )
    assert "not valid JSON" in shown
    assert "Run this call? [y]es / [n]o / [e]dit: " in shown
    assert [Path(p).suffix for p in editor[1].read_text().splitlines()] == [".json", ".json"]


def test_unchanged_arguments_proceed(tmp_path: Path, editor: tuple[Path, Path]) -> None:
    call = tool_table()["run_command"].review_call({"command": "ls"})
    decision, _ = run(call, "e\n", editor=editor_command(editor, "keep"))
    assert decision == Decision.proceed(decided_by="terminal")


def test_diff_is_coloured_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    out = TTYStringIO()
    hook = TerminalHook(input_stream=io.StringIO("y\n"), output_stream=out)
    hook.before_tool_execution(modify_call(tmp_path))
    shown = out.getvalue()
    assert "\033[1m--- a/a.txt\033[0m\n" in shown
    assert "\033[36m@@ -1 +1 @@\033[0m\n" in shown
    assert "\033[31m-hello world\033[0m\n" in shown
    assert "\033[32m+hello world!\033[0m\n" in shown


def test_no_color_turns_colour_off_even_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out = TTYStringIO()
    TerminalHook(io.StringIO("y\n"), out).before_tool_execution(modify_call(tmp_path))
    assert "\033[" not in out.getvalue()
    assert "+hello world!\n" in out.getvalue()


def test_colour_can_be_forced_for_a_non_terminal(tmp_path: Path) -> None:
    _, shown = run(modify_call(tmp_path), "y\n", color=True)
    assert "\033[32m+hello world!\033[0m" in shown


def test_available_needs_both_ends_to_be_terminals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", TTYStringIO())
    monkeypatch.setattr(sys, "stdout", TTYStringIO())
    assert TerminalHook.available()
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert not TerminalHook.available()


def test_arguments_show_long_values_shortened(tmp_path: Path) -> None:
    call = ToolCall(
        tool="write_file",
        args={"path": "big.txt", "content": "line\n" * 1000, "options": {"mode": 420}},
        risk=Risk.WRITE,
    )
    _, shown = run(call, "y\n")
    assert "content: line… (5000 chars)" in shown
    assert 'options: {"mode": 420}' in shown
    assert json.dumps(call.args) not in shown
