"""Running a model's regular expression without letting it hang the process.

Python's ``re`` cannot be interrupted from another thread, and a pattern such as
``(a+)+$`` can backtrack for longer than the universe is old. So the search runs
in a child process that is killed when its time is up. Forking is cheap (the
text is shared copy-on-write, no interpreter starts), so a regex edit pays a few
milliseconds. Where forking is unavailable, or unwise (Python 3.12+ warns about
forking a multi-threaded process), a fresh interpreter runs ``regex_child`` as a
script instead, with a startup allowance added to the budget.
"""

from __future__ import annotations

import marshal
import multiprocessing
import re
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path

from tinyagent_fs.edit import regex_child
from tinyagent_fs.errors import ErrorCode, ToolError

SUBPROCESS_STARTUP_ALLOWANCE_S = 1.0
"""Extra time for a fresh interpreter to start before the pattern's budget begins."""

Replacement = tuple[int, int, str]


def regex_replacements(
    pattern: re.Pattern[str], template: str, text: str, timeout_s: float, method: str = ""
) -> list[Replacement]:
    """(start, end, expanded template) for every match, or TIMEOUT after ``timeout_s``.

    ``method`` forces "fork" or "subprocess"; by default the fastest safe one is used.
    """
    method = method or _default_method()
    if method == "fork":
        status, payload = _in_forked_child(pattern, template, text, timeout_s)
    else:
        status, payload = _in_subprocess(pattern, template, text, timeout_s)
    if status == "error":
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"the replacement template is invalid: {payload}",
            r"refer to groups as \1 or \g<name>, and escape a literal backslash as \\",
        )
    return payload  # type: ignore[return-value]


def _default_method() -> str:
    if "fork" in multiprocessing.get_all_start_methods() and (
        sys.version_info < (3, 12) or threading.active_count() == 1
    ):
        return "fork"
    return "subprocess"


def _in_forked_child(
    pattern: re.Pattern[str], template: str, text: str, timeout_s: float
) -> regex_child.Outcome:
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_answer, args=(sender, pattern, template, text), daemon=True)
    child.start()
    sender.close()
    try:
        if not receiver.poll(timeout_s):
            raise _timeout(timeout_s)
        try:
            return receiver.recv()
        except EOFError:
            raise ToolError(
                ErrorCode.INTERNAL_ERROR,
                f"the regex worker exited without a result (exit code {child.exitcode})",
                "retry with a simpler pattern or a literal old_string",
            ) from None
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join()


def _answer(channel: Connection, pattern: re.Pattern[str], template: str, text: str) -> None:
    try:
        channel.send(regex_child.search(pattern, template, text))
    finally:
        channel.close()


def _in_subprocess(
    pattern: re.Pattern[str], template: str, text: str, timeout_s: float
) -> regex_child.Outcome:
    request = marshal.dumps((pattern.pattern, pattern.flags, template, text))
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", str(Path(regex_child.__file__))],
            input=request,
            capture_output=True,
            timeout=timeout_s + SUBPROCESS_STARTUP_ALLOWANCE_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _timeout(timeout_s) from None
    if done.returncode != 0 or not done.stdout:
        raise ToolError(
            ErrorCode.INTERNAL_ERROR,
            f"the regex worker failed (exit code {done.returncode}): "
            f"{done.stderr.decode(errors='replace')[-300:]}",
            "retry with a simpler pattern or a literal old_string",
        )
    return marshal.loads(done.stdout)


def _timeout(timeout_s: float) -> ToolError:
    return ToolError(
        ErrorCode.TIMEOUT,
        f"the regular expression did not finish within {timeout_s:g} s and was stopped; it "
        "probably backtracks catastrophically on this file",
        "avoid nested quantifiers such as (a+)+ or (.*)*, anchor the pattern, or use a "
        "literal old_string instead of a regex",
    )
