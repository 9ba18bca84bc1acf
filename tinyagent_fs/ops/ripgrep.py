"""grep through ripgrep: finding rg, handing it the files to search, reading its JSON.

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
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ..errors import ErrorCode, ToolError

OVERRUN_FACTOR = 10
DEADLINE_S = 240.0
"""Longest one grep may run rg: less than a sandbox call's own deadline (300 s), so a
stuck rg ends as a coded error rather than a lost worker."""
_CHUNK_BYTES = 256 * 1024
_STDERR_KEPT = 64 * 1024
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
    files: list[str],
    *,
    pattern: str,
    literal: bool,
    case_sensitive: bool,
    context: int,
    limit: int,
    deadline_s: float = DEADLINE_S,
) -> tuple[list[FileHits], bool]:
    """Per-file hits in ``files`` (relative to root, in tree order) and whether there
    were more than ``limit`` matches.

    rg is handed the files the toolkit's walk chose and told to read no ignore file
    of its own, so what it searches is decided by the one pattern engine alone (rg
    reading a ``.gitignore`` that is a FIFO or ``/dev/zero`` hung or exhausted it).
    The list goes in chunks that fit a command line, in tree order, so a search
    that passes the limit stops after the chunk that passed it.
    """
    args = [
        executable,
        "--json",
        "--no-config",
        "--no-ignore",
        "--no-ignore-dot",
        "--no-ignore-exclude",
        "--no-ignore-files",
        "--no-ignore-global",
        "--no-ignore-parent",
        "--no-ignore-vcs",
        "--hidden",
        "--crlf",
        "--case-sensitive" if case_sensitive else "--ignore-case",
    ]
    if literal:
        args.append("--fixed-strings")
    if context:
        args.append(f"--context={context}")
    args += ["--regexp", pattern, "--"]
    deadline = time.monotonic() + deadline_s
    found: list[FileHits] = []
    count = 0
    for chunk in _chunks(files):
        hits, more, complete = _run([*args, *chunk], root, OVERRUN_FACTOR * limit, deadline)
        if not complete:
            sorted_args = [*args[:-3], "--sort=path", *args[-3:]]
            hits, more, _ = _run([*sorted_args, *chunk], root, limit - count, deadline)
        found += hits
        count += more
        if count > limit:
            return found, True
    return found, False


def _chunks(files: list[str]) -> Iterator[list[str]]:
    """``files`` in runs whose names fit well within one command line."""
    chunk: list[str] = []
    size = 0
    for rel in files:
        width = len(rel.encode("utf-8", "surrogateescape")) + 1
        if chunk and size + width > _CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(rel)
        size += width
    if chunk:
        yield chunk


def _run(
    args: list[str], root: str, stop_after: int, deadline: float
) -> tuple[list[FileHits], int, bool]:
    """rg's per-file results, their match count, and whether rg ran to the end: it is
    killed once the count passes ``stop_after``. rg killed otherwise (by the deadline,
    a signal, a resource limit) or failing is an error, never a short answer."""
    try:
        process = subprocess.Popen(
            args, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as exc:
        raise ToolError(ErrorCode.IO_ERROR, f"could not start ripgrep: {exc}") from None
    late = threading.Event()
    timer = threading.Timer(max(0.0, deadline - time.monotonic()), _expire, (process, late))
    timer.start()
    complaints: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(process.stderr, complaints), daemon=True)
    reader.start()
    assert process.stdout is not None
    files: list[FileHits] = []
    hits: list[Hit] = []
    count = 0
    complete = True
    try:
        for raw in process.stdout:
            message = json.loads(raw)
            kind, data = message["type"], message["data"]
            if kind == "match" or kind == "context":
                hits.append((data["line_number"], _line_text(data["lines"]), kind == "match"))
            elif kind == "end":
                rel = _text(data["path"]).removeprefix("./")
                if data["binary_offset"] is None and hits:
                    files.append((rel, hits))
                    count += sum(hit[2] for hit in hits)
                    if count > stop_after:
                        complete = False
                        break
                hits = []
    finally:
        if not complete or sys.exc_info()[0] is not None:
            process.kill()
        process.wait()
        timer.cancel()
        reader.join()
        process.stdout.close()
        process.stderr.close()
    if late.is_set():
        raise ToolError(
            ErrorCode.TIMEOUT,
            "ripgrep did not finish within its deadline; nothing is reported rather than "
            "part of the answer",
            "search a smaller folder or a narrower include glob",
        )
    if complete:
        _check_exit(process.returncode, b"".join(complaints), args)
    return files, count, complete


def _expire(process: subprocess.Popen[bytes], late: threading.Event) -> None:
    late.set()
    process.kill()


def _drain(stream: IO[bytes] | None, into: list[bytes]) -> None:
    """Read rg's stderr to its end (keeping the first part) so rg never blocks on it."""
    assert stream is not None
    kept = 0
    for chunk in iter(lambda: stream.read(65536), b""):
        if kept < _STDERR_KEPT:
            into.append(chunk)
            kept += len(chunk)


def _check_exit(returncode: int, stderr: bytes, args: list[str]) -> None:
    """0 and 1 are answers; 2 with only files that vanished or cannot be read since the
    walk (the Python backend skips those too) is one; anything else is an error."""
    if returncode in (0, 1):
        return
    message = stderr.decode("utf-8", errors="replace").strip()
    if returncode < 0:
        raise ToolError(
            ErrorCode.IO_ERROR,
            f"ripgrep was killed by signal {-returncode} (a resource limit?); "
            "nothing is reported rather than part of the answer",
            "search a smaller folder or a narrower include glob",
        )
    listed = set(args[args.index("--") + 1 :])
    lines = message.splitlines()
    if returncode == 2 and lines and all(_file_unreadable(line, listed) for line in lines):
        return
    _raise_failure(message or f"exit status {returncode}", args)


def _file_unreadable(line: str, listed: set[str]) -> bool:
    """Whether ``line`` is rg's complaint that one of the listed files cannot be read."""
    head, _, tail = line.removeprefix("rg: ").rpartition(": ")
    return head in listed and tail.endswith(")") and "(os error " in tail


def _raise_failure(message: str, args: list[str]) -> None:
    """Turn rg's complaint into an error the model can act on."""
    detail = message.removeprefix("rg: ")
    if "regex" in message:
        raise invalid_regex(args[args.index("--regexp") + 1], detail)
    raise ToolError(ErrorCode.IO_ERROR, f"ripgrep failed: {detail}")


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
