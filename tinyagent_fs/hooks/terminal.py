"""Review tool calls at a terminal: see the diff, answer yes, no or edit.

This is the review step for plain Python processes and scripts, where no
notebook widget can be shown. It reads answers line by line from any text
stream, so the same code serves a real TTY and a test feeding ``io.StringIO``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from ..changes.changeset import ChangeSet
from ..text.display_safe import visible
from .decision import Decision, NoAnswer, Risk, ToolCall

DECIDED_BY = "terminal"
READS_PASS = "terminal (reads pass unasked)"
CHANGE_PROMPT = "Apply this change? [y]es / [n]o / [e]dit: "
CALL_PROMPT = "Run this call? [y]es / [n]o / [e]dit: "
REASON_PROMPT = "Reason (optional): "
NO_ANSWER = "No answer was given at the terminal (input closed), so the call was not run."
DEFAULT_DENIAL = "Denied by the user at the terminal"
ARG_PREVIEW_CHARS = 80

_RESET = "\033[0m"
_BOLD = "\033[1m"
_RED = "\033[31m"
_GREEN = "\033[32m"
_CYAN = "\033[36m"
_DIM = "\033[2m"
Painter = Callable[[str, str], str]
_HEADER_PREFIXES = ("--- ", "+++ ", "rename from ", "rename to ", "Binary files ", "directory ")


class _NoAnswer(Exception):
    """The input stream ended: nobody is there to answer."""


class _Withdrawn(Exception):
    """Another approver answered first (see ``FirstAnswer``): stop asking."""


class _EditFailed(Exception):
    """The editor could not run or returned something unusable; the user is asked again.

    ``draft`` keeps what the person typed, so the next edit starts from it.
    """

    def __init__(self, message: str, draft: str | None = None) -> None:
        super().__init__(message)
        self.draft = draft


class TerminalHook:
    """Asks a person at a terminal to approve, deny or edit each mutating call.

    Read-only calls pass without a question: asking for every ``read_file``
    would train people to press ``y`` without looking. The editor is, in order,
    the ``editor`` argument, ``$VISUAL``, ``$EDITOR``, then ``vi`` (``notepad`` on
    Windows); it may carry arguments (``"code --wait"``).
    """

    name = DECIDED_BY

    def __init__(
        self,
        input_stream: TextIO | None = None,
        output_stream: TextIO | None = None,
        editor: str | None = None,
        color: bool | None = None,
    ) -> None:
        self._input = input_stream
        self._output = output_stream
        self._editor = editor
        self._color = color
        self._withdrawn: threading.Event | None = None
        self._withdrawals: dict[str, tuple[threading.Event, list[Decision | None]]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def available() -> bool:
        """True when both stdin and stdout are terminals, i.e. someone can answer."""
        return _isatty(sys.stdin) and _isatty(sys.stdout)

    @property
    def input(self) -> TextIO:
        return self._input if self._input is not None else sys.stdin

    @property
    def output(self) -> TextIO:
        return self._output if self._output is not None else sys.stdout

    def before_tool_execution(self, call: ToolCall) -> Decision:
        try:
            return self.answer(call)
        except NoAnswer:
            return Decision.deny(NO_ANSWER, decided_by=DECIDED_BY)

    def answer(self, call: ToolCall) -> Decision:
        """The person's answer; ``NoAnswer`` when the input is closed or another
        approver answered first (``withdraw``)."""
        if call.risk is Risk.READ:
            return Decision.proceed(decided_by=READS_PASS)
        event, winner = self._withdrawal(call)
        self._withdrawn = event
        try:
            if not event.is_set():
                self._show(call)
                return self._ask(call)
        except _NoAnswer:
            raise NoAnswer(NO_ANSWER) from None
        except _Withdrawn:
            pass
        finally:
            self._withdrawn = None
            with self._lock:
                self._withdrawals.pop(call.call_id, None)
        where = f" by {winner[0].decided_by} ({winner[0].verdict.value})" if winner[0] else ""
        self._say(f"\nAnswered elsewhere{where}; this prompt is withdrawn.\n")
        raise NoAnswer("withdrawn: answered elsewhere")

    def withdraw(self, call: ToolCall, winner: Decision | None) -> None:
        """Stop the prompt for ``call`` (from another thread, by ``FirstAnswer``), even
        one that has not started yet."""
        event, slot = self._withdrawal(call)
        slot[0] = winner
        event.set()

    def _withdrawal(self, call: ToolCall) -> tuple[threading.Event, list[Decision | None]]:
        with self._lock:
            return self._withdrawals.setdefault(call.call_id, (threading.Event(), [None]))

    def _ask(self, call: ToolCall) -> Decision:
        prompt = CHANGE_PROMPT if call.changeset is not None else CALL_PROMPT
        args_draft: str | None = None
        while True:
            answer = self._prompt(prompt).strip().lower()
            if answer in ("y", "yes"):
                return Decision.proceed(decided_by=DECIDED_BY)
            if answer in ("n", "no"):
                reason = self._prompt(REASON_PROMPT, eof_ok=True).strip()
                return Decision.deny(reason or DEFAULT_DENIAL, decided_by=DECIDED_BY)
            if answer in ("e", "edit"):
                try:
                    if call.changeset is not None:
                        return self._edit_content(call.changeset)
                    args_draft = _pretty_json(call.args) if args_draft is None else args_draft
                    return self._edit_args(call, args_draft)
                except _EditFailed as exc:
                    args_draft = exc.draft if exc.draft is not None else args_draft
                    self._say(f"{exc}\n")
                    continue
            self._say("Please answer y (apply), n (deny) or e (edit).\n")

    def _edit_content(self, changeset: ChangeSet) -> Decision:
        files = changeset.editable_texts()
        if not files:
            raise _EditFailed("Nothing in this change can be edited as text.")
        edited: dict[str, str] = {}
        for path, proposed in files.items():
            text = self._run_editor(proposed, PurePosixPath(path).suffix)
            if text != proposed:
                edited[path] = text
        if not edited:
            return Decision.proceed(decided_by=DECIDED_BY)
        return Decision.modify(
            content=edited, message="edited at the terminal", decided_by=DECIDED_BY
        )

    def _edit_args(self, call: ToolCall, draft: str) -> Decision:
        """Edit the call's arguments as JSON; an unusable edit is kept as the next draft."""
        text = self._run_editor(draft, ".json")
        try:
            args = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _EditFailed(
                f"The arguments are not valid JSON ({exc}). "
                "Answer e to fix them, y to run the call unchanged or n to deny it.",
                draft=text,
            ) from exc
        if not isinstance(args, dict):
            raise _EditFailed(
                "The arguments must be a JSON object. Answer e to fix them.", draft=text
            )
        if args == call.args:
            return Decision.proceed(decided_by=DECIDED_BY)
        return Decision.modify(
            args=args, message="arguments edited at the terminal", decided_by=DECIDED_BY
        )

    def _run_editor(self, text: str, suffix: str) -> str:
        command = shlex.split(self._editor_command(), posix=os.name != "nt")
        fd, name = tempfile.mkstemp(prefix="tinyagent-fs-", suffix=suffix)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
            try:
                status = subprocess.run([*command, name], check=False).returncode
            except OSError as exc:
                raise _EditFailed(f"Could not start the editor {command[0]!r}: {exc}") from exc
            if status != 0:
                raise _EditFailed(f"The editor exited with status {status}; nothing was changed.")
            try:
                return Path(name).read_bytes().decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _EditFailed("The edited file is not UTF-8; nothing was changed.") from exc
        finally:
            with contextlib.suppress(OSError):
                os.unlink(name)

    def _editor_command(self) -> str:
        for candidate in (self._editor, os.environ.get("VISUAL"), os.environ.get("EDITOR")):
            if candidate and candidate.strip():
                return candidate
        return "notepad" if os.name == "nt" else "vi"

    def _show(self, call: ToolCall) -> None:
        paint = self._painter()
        lines = [paint(visible(call.tool), _BOLD) + f"  ({call.risk.value})"]
        # The whole command with its environment (or the typed text), every control
        # character made visible: what a person approves is what runs.
        whole: tuple[str, ...] = ()
        if call.command_line is not None:
            lines.append(f"  $ {visible(call.command_line)}")
            whole = call.command_arguments
        elif call.tool == "write_stdin":
            lines.append(f"  chars: {visible(str(call.args.get('chars', '')))}")
            whole = ("chars",)
        lines.extend(
            f"  {visible(key)}: {_preview(value)}"
            for key, value in call.args.items()
            if key not in whole
        )
        out = "\n".join(lines) + "\n"
        if call.changeset is not None:
            diff = call.diff or call.changeset.unified_diff()
            out += "".join(_colour_diff_line(line, paint) for line in diff.splitlines(True))
            if diff and not diff.endswith("\n"):
                out += "\n"
        self._say(out)

    def _painter(self) -> Painter:
        enabled = self._color if self._color is not None else _colour_wanted(self.output)

        def paint(text: str, style: str) -> str:
            return f"{style}{text}{_RESET}" if enabled else text

        return paint

    def _prompt(self, text: str, *, eof_ok: bool = False) -> str:
        self._say(text)
        self._wait_for_input()
        line = self.input.readline()
        if not line:
            if eof_ok:
                return ""
            self._say("\n")
            raise _NoAnswer
        return line

    def _wait_for_input(self) -> None:
        """Wait until a line can be read, or raise ``_Withdrawn`` once withdrawn.

        Only a stream with a file descriptor can be watched; another (``StringIO``)
        answers at once anyway.
        """
        withdrawn = self._withdrawn
        if withdrawn is None:
            return
        try:
            fd = self.input.fileno()
        except (AttributeError, OSError, ValueError):
            return
        while not withdrawn.is_set():
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                return
        raise _Withdrawn

    def _say(self, text: str) -> None:
        self.output.write(text)
        self.output.flush()


def _pretty_json(args: dict[str, Any]) -> str:
    return json.dumps(args, indent=2, ensure_ascii=False, default=str) + "\n"


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    first_line, _, rest = text.partition("\n")
    if len(first_line) <= ARG_PREVIEW_CHARS and not rest:
        return visible(first_line)
    return f"{visible(first_line[:ARG_PREVIEW_CHARS])}… ({len(text)} chars)"


def _colour_diff_line(line: str, paint: Painter) -> str:
    raw = line.rstrip("\n")
    ending = line[len(raw) :]
    body = visible(raw)
    if body.startswith(_HEADER_PREFIXES):
        return paint(body, _BOLD) + ending
    if body.startswith("@@"):
        return paint(body, _CYAN) + ending
    if body.startswith("+"):
        return paint(body, _GREEN) + ending
    if body.startswith("-"):
        return paint(body, _RED) + ending
    if body.startswith("\\"):
        return paint(body, _DIM) + ending
    return body + ending


def _colour_wanted(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    return _isatty(stream)


def _isatty(stream: TextIO | None) -> bool:
    if stream is None:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
