"""What the person sees is what is there: hidden characters are marked on every surface.

A hostile file name (``report\\u202etxt.py`` reads as ``reportyp.txt``) and hostile
content (ESC sequences, bidi overrides, zero-width characters) are rendered by
each surface; the raw characters must be gone and ``⟨U+202E⟩`` markers shown.
The sidebar and the card in a browser are in ``test_browser_hidden_characters.py``.
"""

from __future__ import annotations

import html
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import ipywidgets as widgets
import pytest

from tinyagent_fs.audit.log import AuditEvent
from tinyagent_fs.changes.changeset import ChangeKind, ChangeSet, FileChange
from tinyagent_fs.hooks.decision import Decision, Risk, ToolCall
from tinyagent_fs.hooks.policies import RiskBasedPolicy, decided_by_person
from tinyagent_fs.hooks.terminal import TerminalHook
from tinyagent_fs.render.diff_render import render_changeset
from tinyagent_fs.text.display_safe import visible, visible_html
from tinyagent_fs.tools.registry import tool_table
from tinyagent_fs.ui import AuditTable, JupyterHook
from tinyagent_fs.ui import jupyter as jupyter_ui
from tinyagent_fs.ui.call_text import summary_text

from ..card_support import from_page, to_page

# The Trojan-Source set, C0/C1 controls and zero-width characters of issue 22.
BIDI = [*map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))]
BIDI += ["\u200e", "\u200f", "\u061c"]
CONTROLS = ["\x1b", "\x07", "\x00", "\x7f", "\x85", "\x9b"]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\ufeff"]
HIDDEN = BIDI + CONTROLS + ZERO_WIDTH

NAME = "report\u202etxt\u200b.py"
CONTENT = "x = 1\t# tab kept\ny = 2  # \u202e evil \x1b[2K\x1b[1A ok\u2066\u200d\n"
SHOWN_IN_CONTENT = ["\u202e", "\x1b", "\u2066", "\u200d"]


def token(char: str) -> str:
    return f"⟨U+{ord(char):04X}⟩"


def assert_marked(shown: str, chars: list[str]) -> None:
    """No raw hidden character anywhere; a marker for each one that was there."""
    raw = sorted({f"U+{ord(c):04X}" for c in shown if c in HIDDEN})
    assert not raw, f"raw hidden characters {raw} in {shown!r}"
    for char in chars:
        assert token(char) in shown, f"no {token(char)} in {shown!r}"


def html_text(rendered: str) -> str:
    """What a browser shows of ``rendered``: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", rendered))


def assert_marked_html(rendered: str, chars: list[str]) -> None:
    assert 'class="taf-hidden-char"' in rendered
    assert_marked(rendered, [])
    assert_marked(html_text(rendered), chars)


def hostile_call(
    root: Path, tool: str = "write_file", names: tuple[str, ...] = (NAME,)
) -> ToolCall:
    changes = tuple(
        FileChange(
            ChangeKind.MODIFY,
            root / name,
            b"x = 1\n",
            CONTENT.encode(),
            old_text="x = 1\n",
            new_text=CONTENT,
        )
        for name in names
    )
    changeset = ChangeSet(tool, changes, root)
    return ToolCall(
        tool, {"path": names[0]}, Risk.WRITE, changeset=changeset, diff=changeset.unified_diff()
    )


def card_for(call: ToolCall):
    hook = JupyterHook("risk-based", 0, "deny", frontend="widgets", container=widgets.VBox())
    return hook._open(call, None).card


# --- the sanitiser ------------------------------------------------------------------


def test_visible_marks_every_hidden_character_and_keeps_tabs_and_newlines() -> None:
    text = "a\tb\n" + "".join(HIDDEN) + "\U000e0041"
    shown = visible(text, keep_newlines=True)
    assert shown.startswith("a\tb\n")
    assert_marked(shown, HIDDEN)
    assert "⟨U+E0041⟩" in shown
    assert visible("a\nb") == "a⟨U+000A⟩b"
    assert visible("plain text, ünïcödé, 中文, emoji 🙂") == "plain text, ünïcödé, 中文, emoji 🙂"


def test_visible_html_escapes_first_and_marks_with_a_styled_span() -> None:
    rendered = visible_html("<b>\u202e</b>")
    assert rendered.startswith('&lt;b&gt;<span class="taf-hidden-char" style=')
    assert html_text(rendered) == "<b>⟨U+202E⟩</b>"


# --- the diff -----------------------------------------------------------------------


@pytest.mark.parametrize("view", ["unified", "side-by-side"])
def test_diff_file_header_marks_a_hostile_name(tmp_path: Path, view: str) -> None:
    rendered = render_changeset(hostile_call(tmp_path).changeset, view).html
    header = re.search(r'<tr class="taf-file">.*?</tr>', rendered)
    assert header is not None
    assert_marked_html(header.group(), ["\u202e", "\u200b"])


@pytest.mark.parametrize("view", ["unified", "side-by-side"])
@pytest.mark.parametrize(
    ("name", "highlight_max_bytes"),
    [("code.py", 1 << 20), ("notes.unknown-ext", 1 << 20), ("big.py", 0)],
    ids=["highlighted", "no-lexer", "too-big-to-highlight"],
)
def test_diff_lines_mark_hidden_characters(
    tmp_path: Path, view: str, name: str, highlight_max_bytes: int
) -> None:
    changeset = hostile_call(tmp_path, names=(name,)).changeset
    rendered = render_changeset(changeset, view, highlight_max_bytes=highlight_max_bytes).html
    assert_marked_html(rendered, SHOWN_IN_CONTENT)
    assert "\t# tab kept" in html_text(rendered)
    if name == "code.py":  # coloured from the real text: the line is still a comment
        assert re.search(r'class="tok-c">[^<]*<span class="taf-hidden-char"', rendered)


# --- the approval card --------------------------------------------------------------


def test_card_heading_marks_a_hostile_name(tmp_path: Path) -> None:
    card = card_for(hostile_call(tmp_path))
    assert_marked_html(card.widget.heading, ["\u202e", "\u200b"])


def test_trust_checkbox_label_marks_a_hostile_name(tmp_path: Path) -> None:
    card = card_for(hostile_call(tmp_path))
    assert_marked(card.widget.trust["path"], ["\u202e", "\u200b"])
    assert_marked(card.widget.trust["tool"], [])


def test_modify_panel_labels_mark_hostile_names(tmp_path: Path) -> None:
    other = "other\u2067.py"
    card = card_for(hostile_call(tmp_path, names=(NAME, other)))
    sent = to_page(card)
    from_page(card, "load", what="editors")
    (loaded,) = sent
    assert [file["path"] for file in loaded["files"]] == [NAME, other]
    labels = " ".join(file["label"] for file in loaded["files"])
    assert_marked(labels, ["\u202e", "\u200b", "\u2067"])
    assert loaded["files"][0]["text"] == CONTENT  # the text to edit is the real text


def test_record_after_a_decision_marks_name_and_reason(tmp_path: Path) -> None:
    card = card_for(hostile_call(tmp_path))
    from_page(card, "deny", reason="looks \x1b[2Kfine\u202e")
    assert_marked_html(card.widget.record, ["\u202e", "\u200b", "\x1b"])


@pytest.mark.parametrize(
    ("tool", "argument"), [("exec_command", "cmd"), ("run_command", "command")]
)
def test_a_command_is_shown_for_review_with_its_whole_environment(tool: str, argument: str) -> None:
    code = "() { echo PWNED > pwned.txt; command ls; }"
    env = {"LC_PAPER": "en_US.UTF-8" + " " * 60, "BASH_FUNC_ls%%": code}
    call = tool_table()[tool].review_call({argument: "ls", "env": env})
    expected = f"LC_PAPER='en_US.UTF-8{' ' * 60}' BASH_FUNC_ls%%='{code}' ls"
    shown = io.StringIO()
    TerminalHook(io.StringIO("n\n"), shown).before_tool_execution(call)
    assert f"$ {expected}" in shown.getvalue()
    assert summary_text(call) == f"{tool} $ {expected}"
    card = card_for(call)
    assert html.escape(code, quote=False) in card.widget.details


def test_command_arguments_are_marked_in_the_card() -> None:
    call = tool_table()["run_command"].review_call(
        {"command": "ls\u202e #\x1b[2K", "workdir": "a\u200b"}
    )
    card = card_for(call)
    assert_marked_html(card.widget.details, ["\u202e", "\x1b", "\u200b"])
    assert_marked_html(card.widget.heading, ["\u202e", "\x1b"])


def test_headless_record_marks_name_and_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: list[dict] = []
    monkeypatch.setattr(jupyter_ui, "_display", lambda obj, raw=False: shown.append(obj))
    hook = JupyterHook("auto-approve", frontend="none")
    hook.decide(hostile_call(tmp_path))
    (output,) = shown
    assert_marked(output["text/plain"], ["\u202e", "\u200b", *SHOWN_IN_CONTENT])
    assert_marked_html(output["text/html"], ["\u202e", "\u200b", *SHOWN_IN_CONTENT])
    assert "allowed by auto-approve" in output["text/plain"]


# --- the audit table and the terminal ------------------------------------------------


def test_audit_table_marks_hostile_paths_in_text_and_html() -> None:
    event = AuditEvent(tool="write_file", paths=[NAME], decision="proceed", decided_by="me\x1b[2K")
    table = AuditTable([event])
    assert_marked(table.text(), ["\u202e", "\u200b", "\x1b"])
    assert_marked_html(table._repr_html_(), ["\u202e", "\u200b", "\x1b"])


@pytest.mark.parametrize("color", [False, True])
def test_terminal_marks_hostile_tool_name_path_and_content(tmp_path: Path, color: bool) -> None:
    call = hostile_call(tmp_path, tool="write\x1b]0;pwned\x07_file")
    out = io.StringIO()
    TerminalHook(io.StringIO("n\n"), out, color=color).before_tool_execution(call)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())  # our own colours only
    assert_marked(shown, ["\u202e", "\u200b", *SHOWN_IN_CONTENT, "\x07"])


# --- who decided, and what is never trusted -------------------------------------------


def test_only_a_persons_answer_counts_as_approved() -> None:
    for person in ("terminal", "mcp-elicitation", "ana (notebook)", "jupyter-sidebar:ana"):
        assert decided_by_person(person)
    for rule in (
        "risk-based",
        "auto-approve",
        "deny-all",
        "no hooks",
        "jupyter default (approve)",
        "risk-based (trusted for this session)",
        "terminal (reads pass unasked)",
    ):
        assert not decided_by_person(rule)
    read = ToolCall("read_file", {"path": "a"}, Risk.READ)
    assert not decided_by_person(TerminalHook().before_tool_execution(read).decided_by)


def test_a_policy_decision_is_recorded_as_allowed_not_approved(tmp_path: Path) -> None:
    card = card_for(hostile_call(tmp_path))
    card.close(Decision.proceed(decided_by="risk-based (trusted for this session)"))
    assert "Allowed" in card.widget.record and "Approved" not in card.widget.record
    person = card_for(hostile_call(tmp_path))
    from_page(person, "approve")
    assert "Approved" in person.widget.record


def test_undo_never_offers_trust(tmp_path: Path) -> None:
    """Its spec says so (``never_trusted``): no card, policy or tool trust lets it through."""
    planned = hostile_call(tmp_path, tool="undo")
    undo = tool_table()["undo"].review_call(
        {"change_id": None}, changeset=planned.changeset, diff=planned.diff
    )
    card = card_for(undo)
    assert card.widget.trust == {}
    assert "undo always asks" in card.widget.heading
    policy = RiskBasedPolicy()
    policy.trust_tool("undo")
    policy.trust_path(NAME)
    assert not policy.is_trusted(undo)
    assert policy.is_trusted(hostile_call(tmp_path))  # the same trust lets a write through


# --- the sidebar's copy of the rules agrees ---------------------------------------------

FORMAT_JS = Path(__file__).resolve().parent.parent.parent / "labextension" / "lib" / "format.js"
NODE_SCRIPT = """
import { readFileSync } from 'node:fs';
const { visible, decidedByPerson } = await import(process.argv[2]);
const cases = JSON.parse(readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify({
  oneLine: cases.texts.map(text => visible(text)),
  keepNewlines: cases.texts.map(text => visible(text, true)),
  person: cases.deciders.map(decidedByPerson),
}));
"""


def test_the_sidebar_marks_the_same_characters_the_same_way(tmp_path: Path) -> None:
    """Every BMP character, a few astral ones and the hostile samples, through both."""
    node = shutil.which("node")
    assert node and FORMAT_JS.exists(), "needs node and the built lab extension (make labextension)"
    module = tmp_path / "format.mjs"
    module.write_text(FORMAT_JS.read_text())
    texts = [chr(c) for c in range(0x10000)] + ["\U000e0000", "\U000e007f", "\U000e0080", "🙂"]
    texts += [NAME, CONTENT, "".join(HIDDEN), "a\r\nb\tc"]
    deciders = [
        "terminal",
        "mcp-elicitation",
        "ana (notebook)",
        "jupyter-sidebar:ana",
        "risk-based",
        "no hooks",
        "terminal (reads pass unasked)",
        "jupyter default (approve)",
        "",
    ]
    cases = json.dumps({"texts": texts, "deciders": deciders})
    script = tmp_path / "run.mjs"
    script.write_text(NODE_SCRIPT)
    done = subprocess.run(
        [node, str(script), module.as_uri()],
        input=cases,
        capture_output=True,
        text=True,
        check=True,
        encoding="utf-8",
        errors="surrogatepass",
    )
    got = json.loads(done.stdout)
    assert got["oneLine"] == [visible(text) for text in texts]
    assert got["keepNewlines"] == [visible(text, keep_newlines=True) for text in texts]
    assert got["person"] == [decided_by_person(d) for d in deciders]
