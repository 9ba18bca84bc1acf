"""Finding files by name (glob) and lines by content (grep).

grep has two backends that must give the same answer: ripgrep (``ripgrep.py``),
fast and parallel, and the pure-Python walk here for machines without it. Both
feed one assembly step, so ordering (tree order, then line), context and the
match limit are decided in one place.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import ErrorCode, ToolError
from .glob_match import GlobMatcher, glob_problem
from .ignore import MAX_WALK_DEPTH, IgnoreRules, load_ignore_rules, walk_files
from .packed_paths import pack_paths
from .ripgrep import (
    FileHits,
    Hit,
    find_ripgrep,
    invalid_regex,
    ripgrep_search,
    rust_syntax_problem,
)

RECENT_SECONDS = 24 * 60 * 60
MAX_LINE_CHARS = 500
_GLOB_CHARS = frozenset("*?[{\\")


def glob_files(
    root: str, base: str, pattern: str, denied_patterns: list[str], limit: int
) -> dict[str, Any]:
    """Files below ``base`` whose path relative to ``base`` matches ``pattern``.

    Recently modified files come first because an agent globbing is usually looking
    for what it (or the person) just worked on; the rest are in tree order.
    ``matches`` are the paths relative to ``root``, packed by ``pack_paths``:
    thousands of small strings cost more to send out of the sandbox one by one
    than the walk that found them. ``too_deep`` counts the directories the walk
    did not enter (``MAX_WALK_DEPTH``) and names the first.
    """
    _require(limit >= 1, "limit must be at least 1")
    _require_directory(root, base)
    glob = _clean_glob(pattern, "pattern")
    matcher = _glob_matcher(glob, "pattern")
    rules = load_ignore_rules(root, denied_patterns)
    base_rel = _relative(root, base)
    start = _narrowed_start(root, rules, base_rel, glob)
    found: list[tuple[str, float]] = []
    too_deep: list[str] = []
    if start is not None:
        skip = len(base_rel) + 1 if base_rel else 0
        matches = matcher.fullmatch
        for rel, entry in walk_files(root, start, rules, _glob_depth(glob), too_deep):
            if matches(rel[skip:]):
                try:
                    found.append((rel, entry.stat(follow_symlinks=False).st_mtime))
                except OSError:
                    continue
    # The walk yields tree order, so the older files are already in order and a
    # stable sort by time alone leaves recent files of the same time in tree order.
    cutoff = time.time() - RECENT_SECONDS
    recent = [item for item in found if item[1] >= cutoff]
    recent.sort(key=_newest_first)
    ordered = recent + [item for item in found if item[1] < cutoff]
    return {
        "matches": pack_paths([path for path, _ in ordered[:limit]]),
        "total": len(ordered),
        "omitted": max(0, len(ordered) - limit),
        **too_deep_marker(too_deep),
    }


def too_deep_marker(too_deep: list[str]) -> dict[str, Any]:
    """How many directories a walk left out for depth, and the first; nothing when none."""
    if not too_deep:
        return {}
    return {"too_deep": len(too_deep), "too_deep_first": too_deep[0], "max_depth": MAX_WALK_DEPTH}


@dataclass(frozen=True)
class _Scope:
    """What one grep covers: where to start, and which file paths the include keeps."""

    start: str | None
    base_rel: str
    is_file: bool
    include: GlobMatcher | None = None
    include_is_path: bool = False

    def keeps(self, rel: str) -> bool:
        if self.include is None or self.is_file:
            return True
        if self.include_is_path:
            skip = len(self.base_rel) + 1 if self.base_rel else 0
            return self.include.fullmatch(rel[skip:])
        return self.include.fullmatch(rel.rpartition("/")[2])


def grep(
    root: str,
    base: str,
    pattern: str,
    include: str | None,
    literal: bool,
    case_sensitive: bool,
    context: int,
    limit: int,
    denied_patterns: list[str],
    backend: str = "auto",
) -> dict[str, Any]:
    """Matching lines below ``base`` (a file or a directory), in tree order then line order.

    ``include`` narrows the files: a glob without ``/`` matches file names at any
    depth, one with ``/`` matches paths relative to ``base``; it is ignored when
    ``base`` is a file. ``limit`` counts matching lines only.
    """
    _require(bool(pattern), "pattern must not be empty")
    _require("\n" not in pattern, "pattern must not contain a line break; grep matches one line")
    _require(limit >= 1, "limit must be at least 1")
    _require(context >= 0, "context must not be negative")
    if not os.path.exists(base):
        raise ToolError(
            ErrorCode.NOT_FOUND, f"{_relative(root, base)} does not exist", "check the path"
        )
    rules = load_ignore_rules(root, denied_patterns)
    scope = _scope(root, base, include, rules)
    ripgrep = _choose_backend(backend)
    too_deep: list[str] = []
    candidates = _candidates(root, scope, rules, too_deep)
    if ripgrep is None:
        regex = _python_regex(pattern, literal, case_sensitive)
        files, truncated = _python_search(root, candidates, regex, context, limit)
    else:
        files, truncated = ripgrep_search(
            ripgrep,
            root,
            list(candidates),
            pattern=pattern,
            literal=literal,
            case_sensitive=case_sensitive,
            context=context,
            limit=limit,
        )
    found = _assemble(files, limit, context, truncated, "python" if ripgrep is None else "ripgrep")
    return {**found, **too_deep_marker(too_deep)}


def _choose_backend(backend: str) -> str | None:
    if backend == "python":
        return None
    if backend not in ("auto", "ripgrep"):
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown grep backend {backend!r}",
            "use 'auto', 'ripgrep' or 'python'",
        )
    found = find_ripgrep()
    if found is None and backend == "ripgrep":
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT, "ripgrep (rg) is not installed", "use backend='auto'"
        )
    return found


def _scope(root: str, base: str, include: str | None, rules: IgnoreRules) -> _Scope:
    base_rel = _relative(root, base)
    if os.path.isfile(base):
        return _Scope(base_rel, base_rel, True)
    if include is None or not include.strip():
        return _Scope(base_rel, base_rel, False)
    glob = _clean_glob(include, "include")
    regex = _glob_matcher(glob, "include")
    if "/" not in glob:
        return _Scope(base_rel, base_rel, False, regex, False)
    start = _narrowed_start(root, rules, base_rel, glob)
    return _Scope(start, base_rel, False, regex, True)


def _candidates(root: str, scope: _Scope, rules: IgnoreRules, too_deep: list[str]) -> Iterator[str]:
    """The files one grep reads, in tree order: both backends search exactly these;
    folders below the walk's depth go to ``too_deep``."""
    if scope.start is None:
        return
    if scope.is_file:
        yield scope.start
        return
    walk = walk_files(root, scope.start, rules, too_deep=too_deep)
    yield from (rel for rel, _ in walk if scope.keeps(rel))


def _python_search(
    root: str, candidates: Iterable[str], regex: re.Pattern[str], context: int, limit: int
) -> tuple[list[FileHits], bool]:
    prefilter = "\\A" not in regex.pattern and "\\Z" not in regex.pattern
    files: list[FileHits] = []
    count = 0
    for rel in candidates:
        hits = _search_file(os.path.join(root, rel), regex, context, prefilter)
        if hits:
            files.append((rel, hits))
            count += sum(hit[2] for hit in hits)
            if count > limit:
                return files, True
    return files, False


def _search_file(
    path: str, regex: re.Pattern[str], context: int, prefilter: bool = True
) -> list[Hit]:
    """Lines as ripgrep sees them: BOMs honoured, CRLF as one line ending, NUL means binary.

    Only a regular file is read, opened without blocking or following a link: the
    walk saw a regular file, but a command may have swapped in a FIFO since.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        data = handle.read()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
        if "\0" in text:
            return []
    else:
        if b"\0" in data:
            return []
        text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    text = text.replace("\r\n", "\n")
    if prefilter and regex.search(text) is None:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    matched = [index for index, line in enumerate(lines) if regex.search(line)]
    return _with_context(lines, matched, context)


def _with_context(lines: list[str], matched: list[int], context: int) -> list[Hit]:
    is_match = set(matched)
    hits: list[Hit] = []
    emitted = 0
    for index in matched:
        for line in range(max(index - context, emitted), min(index + context + 1, len(lines))):
            hits.append((line + 1, lines[line], line in is_match))
        emitted = max(emitted, index + context + 1)
    return hits


def _python_regex(pattern: str, literal: bool, case_sensitive: bool) -> re.Pattern[str]:
    """The pattern compiled by ``re``, refusing what ripgrep's Rust syntax refuses.

    MULTILINE makes ``^``/``$`` line boundaries in the whole-file prefilter too.
    """
    if literal:
        source = re.escape(pattern)
    else:
        problem = rust_syntax_problem(pattern)
        if problem:
            raise invalid_regex(pattern, problem)
        source = pattern
    flags = re.MULTILINE | (0 if case_sensitive else re.IGNORECASE)
    try:
        return re.compile(source, flags)
    except re.error as exc:
        raise invalid_regex(pattern, str(exc)) from None


def _assemble(
    files: list[FileHits], limit: int, context: int, truncated: bool, backend: str
) -> dict[str, Any]:
    """The first ``limit`` matching lines in tree order, with their context lines."""
    files.sort(key=lambda item: _tree_key(item[0]))
    matches: list[dict[str, Any]] = []
    count = 0
    file_count = 0
    for rel, hits in files:
        if count >= limit:
            break
        file_count += 1
        for line, text, is_match in _take(hits, limit - count, context):
            matches.append(
                {
                    "path": rel,
                    "line": line,
                    "text": _clip(text),
                    "kind": "match" if is_match else "context",
                }
            )
            count += is_match
    return {
        "matches": matches,
        "match_count": count,
        "files_with_matches": file_count,
        "truncated": truncated,
        "backend": backend,
    }


def _take(hits: list[Hit], budget: int, context: int) -> list[Hit]:
    """Hits up to the ``budget``-th match plus that match's trailing context."""
    taken: list[Hit] = []
    seen = 0
    last = 0
    for hit in hits:
        line, _, is_match = hit
        if seen == budget and (is_match or line > last + context):
            break
        if is_match:
            seen += 1
            last = line
        taken.append(hit)
    return taken


def _clip(text: str) -> str:
    if len(text) <= MAX_LINE_CHARS:
        return text
    return f"{text[:MAX_LINE_CHARS]}… [line truncated: {len(text)} chars]"


def _glob_matcher(glob: str, what: str) -> GlobMatcher:
    try:
        return GlobMatcher(glob, braces=True)
    except (re.error, ValueError) as exc:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"{what} {glob!r} is not a valid glob: {exc}",
            "use a simple glob such as '*.py' or 'src/**/*.ts'",
        ) from exc


def _clean_glob(pattern: str, what: str) -> str:
    """The glob relative to the searched directory; ``dir/`` means everything in it."""
    glob = pattern.strip()
    while glob.startswith("./"):
        glob = glob[2:]
    _require(bool(glob), f"{what} must not be empty")
    if glob.startswith("/") or ".." in glob.split("/"):
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"{what} {pattern!r} must be relative to the searched directory, without '..'",
            "pass the directory as path and a relative pattern such as '**/*.py'",
        )
    problem = glob_problem(glob)
    if problem:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"{what} {pattern!r} is not a valid glob: {problem}",
            "escape a literal bracket or brace with a backslash",
        )
    return glob + "**" if glob.endswith("/") else glob


def _literal_dirs(glob: str) -> list[str]:
    """Leading directory segments free of wildcards: where a walk can start."""
    prefix: list[str] = []
    for segment in glob.split("/")[:-1]:
        if _GLOB_CHARS.intersection(segment):
            break
        prefix.append(segment)
    return prefix


def _narrowed_start(root: str, rules: IgnoreRules, base_rel: str, glob: str) -> str | None:
    """Start below ``base`` at the glob's literal directories, or None when they cannot
    be reached (missing, a symlink, or pruned by the ignore rules on the way down)."""
    current = base_rel
    for segment in _literal_dirs(glob):
        current = f"{current}/{segment}" if current else segment
        full = os.path.join(root, current)
        if os.path.islink(full) or not os.path.isdir(full) or rules.is_ignored(current, True):
            return None
    return current


def _glob_depth(glob: str) -> int | None:
    """How deep below the walk's start a match can lie, when the glob says so."""
    if "**" in glob or "{" in glob:
        return None
    return len(glob.split("/")) - len(_literal_dirs(glob))


def _newest_first(item: tuple[str, float]) -> float:
    return -item[1]


def _tree_key(rel: str) -> list[str]:
    return rel.split("/")


def _relative(root: str, path: str) -> str:
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    return "" if rel == "." else rel


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, message, "fix the argument and retry")


def _require_directory(root: str, path: str) -> None:
    if not os.path.exists(path):
        raise ToolError(
            ErrorCode.NOT_FOUND, f"{_relative(root, path)} does not exist", "check the path"
        )
    if not os.path.isdir(path):
        raise ToolError(
            ErrorCode.NOT_A_DIRECTORY,
            f"{_relative(root, path)} is not a directory",
            "pass a directory as path",
        )
