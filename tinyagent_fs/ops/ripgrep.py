"""grep through ripgrep: finding rg, flags that pin its ignore set, reading its JSON.

rg's output order is not deterministic, so its parallel run is read to the end
(then sorted by the caller) unless it passes ``OVERRUN_FACTOR`` times the limit;
only then is it killed and run again with ``--sort=path``, single-threaded but
stopped right after the limit. Either way the answer is the first matches in tree
order, exactly what the Python walk finds, and a sparse search costs one parallel
run. The regex dialect is rg's (Rust), so its rules live here too.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from ..errors import ErrorCode, ToolError
from .ignore import GITIGNORE_NAME, MAX_WALK_DEPTH, IgnoreRules

OVERRUN_FACTOR = 10
_TYPE_NAME = "tinyagentinclude"
_NO_LOOK_AROUND = "look-around, including look-ahead and look-behind, is not supported"

Hit = tuple[int, str, bool]
"""line number, text without its line ending, whether the line matches (else context)."""
FileHits = tuple[str, list[Hit]]


@functools.lru_cache(maxsize=1)
def find_ripgrep() -> str | None:
    """The rg that the ``ripgrep`` wheel put next to this interpreter, else one on PATH."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def rust_syntax_problem(pattern: str) -> str | None:
    """What in ``pattern`` Rust's regex refuses although Python's ``re`` accepts it."""
    i, in_class = 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escaped = pattern[i + 1 : i + 2]
            if escaped == "n":
                return 'the literal "\\n" is not allowed: grep matches one line at a time'
            if not in_class and escaped.isdigit() and escaped != "0":
                return "backreferences are not supported"
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            i += 1
            i += pattern[i : i + 1] == "^"
            i += pattern[i : i + 1] == "]"
            continue
        elif pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
            return _NO_LOOK_AROUND
        elif pattern.startswith("(?P=", i):
            return "backreferences are not supported"
        i += 1
    return None


def invalid_regex(pattern: str, detail: str) -> ToolError:
    return ToolError(
        ErrorCode.INVALID_ARGUMENT,
        f"invalid regular expression {pattern!r}: {detail}",
        "use literal=true to search for plain text; regex syntax is Rust's (as in ripgrep), "
        "which has no look-around and no backreferences",
    )


def ripgrep_search(
    executable: str,
    root: str,
    rules: IgnoreRules,
    target: str,
    *,
    is_file: bool,
    type_glob: str | None,
    keeps: Callable[[str], bool],
    pattern: str,
    literal: bool,
    case_sensitive: bool,
    context: int,
    limit: int,
) -> tuple[list[FileHits], bool]:
    """Per-file hits below ``target`` (relative to root) and whether there were more
    than ``limit`` matches; ``keeps`` filters what rg's own flags cannot express."""
    args = [
        executable,
        "--json",
        "--no-config",
        "--no-messages",
        "--hidden",
        "--crlf",
        "--no-require-git",
        "--no-ignore-parent",
        "--no-ignore-dot",
        "--no-ignore-exclude",
        "--no-ignore-global",
        "--glob=!.git",
        f"--max-depth={MAX_WALK_DEPTH}",  # as deep as the Python walk goes
        "--case-sensitive" if case_sensitive else "--ignore-case",
    ]
    if literal:
        args.append("--fixed-strings")
    if context:
        args.append(f"--context={context}")
    negated = [denials for denials in rules.denial_sets if denials.has_negation]
    for denials in rules.denial_sets:
        if not denials.has_negation:
            args.extend(f"--glob=!{line.rerooted('')}" for line in denials.lines)
    if type_glob is not None and not is_file:
        args += [f"--type-add={_TYPE_NAME}:{type_glob}", f"--type={_TYPE_NAME}"]
    parents = ""
    above = [] if is_file else rules.gitignore_dirs_above(target)
    if above == [""]:
        args.append(f"--ignore-file={GITIGNORE_NAME}")
    elif above:
        parents = "\n".join(rules.gitignore_lines_above(target))
    tail = ["--regexp", pattern, "--", target or "."]

    def accept(rel: str) -> bool:
        """Denials with a ``!`` line cannot be rg globs, so they are applied here."""
        if negated and rules.denies_path_or_parent(rel, False):
            return False
        return keeps(rel)

    files, count, complete = _run([*args, *tail], root, parents, accept, OVERRUN_FACTOR * limit)
    if not complete:
        files, count, _ = _run([*args, "--sort=path", *tail], root, parents, accept, limit)
    return files, count > limit


def _run(
    args: list[str], root: str, parents: str, keeps: Callable[[str], bool], stop_after: int
) -> tuple[list[FileHits], int, bool]:
    """rg's per-file results, their match count, and whether rg ran to the end: it is
    killed once the count passes ``stop_after``.

    rg is told not to look above the start (it would otherwise read ``.gitignore``
    files above the toolkit root too), so the lines of those between the root and
    the start come through a pipe, rerooted; only the root's own file, the common
    case, is passed by name.
    """
    pass_fds: tuple[int, ...] = ()
    if parents:
        read_end, write_end = os.pipe()
        pass_fds = (read_end,)
        args = [*args[:1], f"--ignore-file=/dev/fd/{read_end}", *args[1:]]
    try:
        process = subprocess.Popen(
            args,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=pass_fds,
        )
    except OSError as exc:
        raise ToolError(ErrorCode.IO_ERROR, f"could not start ripgrep: {exc}") from None
    finally:
        for descriptor in pass_fds:
            os.close(descriptor)
    if parents:
        data = parents.encode("utf-8", errors="surrogateescape") + b"\n"
        threading.Thread(target=_feed, args=(write_end, data), daemon=True).start()
    assert process.stdout is not None
    files: list[FileHits] = []
    hits: list[Hit] = []
    count = 0
    complete = True
    read_all = False
    try:
        for raw in process.stdout:
            message = json.loads(raw)
            kind, data = message["type"], message["data"]
            if kind == "match" or kind == "context":
                hits.append((data["line_number"], _line_text(data["lines"]), kind == "match"))
            elif kind == "end":
                rel = _text(data["path"]).removeprefix("./")
                if data["binary_offset"] is None and hits and keeps(rel):
                    files.append((rel, hits))
                    count += sum(hit[2] for hit in hits)
                    if count > stop_after:
                        complete = False
                        break
                hits = []
        read_all = complete
    finally:
        if not read_all:
            process.kill()
    _, stderr = process.communicate()
    if process.returncode == 2 and not files and complete:
        _raise_failure(stderr.decode("utf-8", errors="replace").strip(), args)
    return files, count, complete


def _raise_failure(message: str, args: list[str]) -> None:
    """Turn rg's complaint into an error the model can act on; silence is no failure."""
    detail = message.removeprefix("rg: ")
    if "regex" in message:
        raise invalid_regex(args[args.index("--regexp") + 1], detail)
    if "glob" in message:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"invalid include glob: {detail}",
            "use a simple glob such as '*.py' or 'src/**/*.ts'",
        )
    if message:
        raise ToolError(ErrorCode.IO_ERROR, f"ripgrep failed: {detail}")


def _feed(descriptor: int, data: bytes) -> None:
    """Write rg's ignore lines from a thread: a pipe holds only so much, and an rg that
    fails early never reads them."""
    try:
        with open(descriptor, "wb") as pipe:
            pipe.write(data)
    except BrokenPipeError:
        return


def _text(value: dict[str, str]) -> str:
    if "text" in value:
        return value["text"]
    return os.fsdecode(base64.b64decode(value["bytes"]))


def _line_text(value: dict[str, str]) -> str:
    if "text" in value:
        text = value["text"]
    else:
        text = base64.b64decode(value["bytes"]).decode("utf-8", errors="replace")
    if text.endswith("\r\n"):
        return text[:-2]
    return text.removesuffix("\n")
