"""Turn a path a model wrote into a real path inside the root, or a clear refusal.

The guard gives early, explainable errors; the kernel sandbox is what actually
enforces. It still has to be right on its own, because the in-process
``LocalProvider`` has nothing else. Two properties matter:

* every accepted path, once its symlinks are resolved, lies inside the root;
* nothing outside the root is touched while deciding (absolute paths are
  compared lexically against the root before any ``lstat``).

Symlinks are resolved component by component below the root on every call, never
cached, because a link can be swapped between two calls. That walk costs one
``lstat`` per component, which is why the hot path uses ``os`` string functions
rather than ``pathlib``. What remains is a time-of-check/time-of-use window that
only the kernel sandbox closes.

Home paths: ``~`` is never expanded. A path that starts with ``~`` or ``~/`` is
refused as outside the root, because a model that writes it means the home
directory, and silently creating a directory literally named ``~`` is a trap for
the person who later types ``rm -rf ~``. A file that really is named ``~`` can be
reached as ``./~``; names such as ``~notes`` or ``~$report.docx`` are ordinary.

Backslashes are treated as separators, so a POSIX file name containing a
backslash cannot be addressed; models often write Windows-style paths.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import stat
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from tinyagent_fs.config_file import (
    MAX_CONFIG_FILE_BYTES,
    UnsafeConfigFile,
    config_lines,
    read_config_file,
)
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.policy import IGNORE_FILE_NAME, SandboxPolicy

_SHOWN_PATH_CHARS = 200
_DRIVE = re.compile(r"[A-Za-z]:")
"""``C:``, ``C:/x``, ``C:x``: a Windows drive, never a folder in the root."""
_NAMED_GROUP = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")


class _PatternSet:
    """Gitignore patterns compiled once, answering "which pattern denies this path?".

    pathspec translates each pattern so that it also matches everything below a
    matching directory (``.ssh/`` matches ``.ssh/id``). Without negations that
    makes one search of the full path enough, and all patterns are folded into a
    single regex so the common "nothing matches" answer costs one search. With
    negations (or patterns that will not fold) the last matching pattern wins per
    path prefix, and a denied parent directory cannot be re-included, as in git.
    """

    def __init__(
        self, lines: Iterable[str], source: str, *, quote: bool = True, fold: bool = False
    ) -> None:
        self.source = source
        flags = re.IGNORECASE if fold else 0
        self._patterns: list[tuple[str, re.Pattern[str], bool]] = []
        for number, line in enumerate(lines, 1):
            text = unicodedata.normalize("NFC", line.rstrip("\r\n"))
            if not text.strip():
                continue
            try:
                compiled = pathspec.GitIgnoreSpec.from_lines([text]).patterns
            except (ValueError, re.error) as exc:
                # A file in the root may hold anything (a command can write it), so its
                # content is never quoted back: only the line number is.
                shown = f"{text!r} in {source}: {exc}" if quote else f"on line {number} of {source}"
                raise ToolError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"Invalid pattern {shown}",
                    "Fix the pattern (gitignore syntax); paths stay refused until it is valid.",
                ) from exc
            for pattern in compiled:
                if pattern.include is not None and pattern.regex is not None:
                    regex = re.compile(pattern.regex.pattern, flags)
                    self._patterns.append((text, regex, bool(pattern.include)))
        negated = any(not include for _, _, include in self._patterns)
        self._any: re.Pattern[str] | None = None
        if self._patterns and not negated:
            with contextlib.suppress(re.error):
                self._any = re.compile(
                    "|".join(
                        f"(?:{_NAMED_GROUP.sub('(?:', regex.pattern)})"
                        for _, regex, _ in self._patterns
                    ),
                    flags,
                )

    def match(self, rel: str, is_dir: bool) -> str | None:
        """The pattern text that denies ``rel`` (posix, relative to the root), or None."""
        if not self._patterns:
            return None
        rel = unicodedata.normalize("NFC", rel)
        full = rel + "/" if is_dir else rel
        if self._any is not None:
            if self._any.search(full) is None:
                return None
            return next(text for text, regex, _ in self._patterns if regex.search(full))
        parts = rel.split("/")
        candidates = ["/".join(parts[: i + 1]) + "/" for i in range(len(parts) - 1)]
        candidates.append(full)
        for candidate in candidates:
            decided: str | None = None
            for text, regex, include in self._patterns:
                if regex.search(candidate) is not None:
                    decided = text if include else None
            if decided is not None:
                return decided
        return None


class PathGuard:
    """Resolves model-supplied paths against one root under one ``SandboxPolicy``."""

    def __init__(
        self,
        root: str | Path,
        policy: SandboxPolicy | None = None,
        *,
        case_insensitive: bool | None = None,
    ) -> None:
        """``case_insensitive`` None probes the root's file system once."""
        self.policy = policy if policy is not None else SandboxPolicy()
        if not isinstance(root, (str, os.PathLike)):
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"The root must be a path, got {type(root).__name__}.",
            )
        given = os.fspath(root)
        if not isinstance(given, str) or not given or "\x00" in given:
            raise ToolError(ErrorCode.INVALID_ARGUMENT, f"Invalid root {given!r}.")
        real = os.path.realpath(given)
        if not os.path.isdir(real):
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"The root {given!r} is not an existing directory.",
                "Create the directory first or pass another root.",
            )
        self.root = Path(real)
        self._root = real
        self._prefix = real if real.endswith("/") else real + "/"
        self._root_spellings = [
            [p for p in spelling.split("/") if p not in ("", ".")]
            for spelling in dict.fromkeys([real, os.path.normpath(os.path.abspath(given))])
        ]
        self.case_insensitive = (
            _probe_case_insensitive(real) if case_insensitive is None else case_insensitive
        )
        fold = self.case_insensitive
        self._denied = _PatternSet(self.policy.denied_patterns, "the sandbox policy", fold=fold)
        self._write_denied = _PatternSet(
            (*self.policy.write_denied_patterns, "/" + IGNORE_FILE_NAME),
            "the write protection of the sandbox policy",
            fold=fold,
        )
        self._ignore_path = self._prefix + IGNORE_FILE_NAME
        self._ignore: tuple[tuple[int, ...] | None, _PatternSet] = (
            None,
            _PatternSet((), IGNORE_FILE_NAME),
        )

    def resolve(self, raw: str, *, for_write: bool = False) -> Path:
        """Absolute path of ``raw`` with symlinks resolved, guaranteed inside the root.

        Paths that do not exist yet resolve too (their existing prefix is resolved,
        the rest appended), so writes and creations go through the same check.
        """
        return self._resolve(raw, for_write, None)

    def resolve_all(self, raws: Sequence[str], *, for_write: bool = False) -> list[Path]:
        """``resolve`` of each of ``raws``, in order, as one look at the disk: a folder
        that several paths go through is walked once, and the ignore file is looked
        at once (a patch names hundreds of files in a few dozen folders: 19 us a
        path one by one). The first path refused raises, as ``resolve`` would."""
        batch = _Batch(self._ignore_patterns())
        return [self._resolve(raw, for_write, batch) for raw in raws]

    def _resolve(self, raw: str, for_write: bool, batch: _Batch | None) -> Path:
        if not isinstance(raw, str):
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"A path must be a string, got {type(raw).__name__}.",
                "Pass the path as a string relative to the root.",
            )
        shown = _shown(raw)
        if "\x00" in raw:
            raise ToolError(
                ErrorCode.NULL_BYTE,
                f"The path {shown} contains a NUL byte.",
                "Remove the NUL character (\\x00) from the path.",
            )
        if not raw.strip():
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                "The path is empty.",
                f"Give a file or directory path, e.g. 'README.md' or '.' for {self._root}.",
            )
        if len(raw) > self.policy.max_path_chars:
            raise ToolError(
                ErrorCode.PATH_TOO_DEEP,
                f"The path {shown} is {len(raw)} characters long; "
                f"the limit is {self.policy.max_path_chars}.",
                "Use a shorter path.",
            )
        try:
            os.fsencode(raw)
        except UnicodeEncodeError as exc:
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"The path {shown} contains characters no file name can hold ({exc.reason}).",
                "Remove unpaired surrogate characters from the path.",
            ) from exc
        path = raw.replace("\\", "/")
        if _DRIVE.match(path) or raw.startswith("\\\\"):
            raise ToolError(
                ErrorCode.PATH_OUTSIDE_ROOT,
                f"The path {shown} is a Windows drive or network path, which is outside the "
                "root (it would otherwise become a folder named like the drive).",
                f"Use a path relative to the root {self._root}, with '/' between folders; "
                "write './C:x' for a file whose name really starts with a drive letter.",
            )
        if path == "~" or path.startswith("~/"):
            raise ToolError(
                ErrorCode.PATH_OUTSIDE_ROOT,
                f"The path {shown} points into the home directory, which is outside the root "
                "('~' is not expanded).",
                f"Use a path inside {self._root}; write './~' for a file literally named '~'.",
            )
        parts = [p for p in path.split("/") if p and p != "."]
        if path.startswith("/"):
            parts = self._strip_root(parts, shown)
        if len(parts) > self.policy.max_path_depth:
            raise ToolError(
                ErrorCode.PATH_TOO_DEEP,
                f"The path {shown} has {len(parts)} components; "
                f"the limit is {self.policy.max_path_depth}.",
                "Use a shallower path.",
            )
        resolved, is_dir, named = self._walk(parts, shown, batch)
        rel = resolved[len(self._prefix) :] if resolved != self._root else "."
        ignore = batch.ignore if batch is not None else None
        self._refuse_denied(rel, shown, for_write, is_dir, ignore)
        if named and named != rel:
            self._refuse_denied(named, shown, for_write, is_dir, ignore)
        return Path(resolved)

    def relative(self, path: Path | str) -> str:
        """Posix path of an already resolved ``path`` relative to the root; "." for the root."""
        text = os.fspath(path)
        if text == self._root:
            return "."
        if not text.startswith(self._prefix):
            raise ToolError(
                ErrorCode.PATH_OUTSIDE_ROOT,
                f"The path {_shown(text)} is outside the root {self._root}.",
                f"Use a path inside {self._root}.",
            )
        return text[len(self._prefix) :]

    def denied_pattern(self, rel: str, *, for_write: bool, is_dir: bool = False) -> str | None:
        """The pattern that denies ``rel`` (posix, relative to the root), or None."""
        rel = rel.strip("/")
        if rel in ("", "."):
            return None
        found = self._denial(rel, for_write, is_dir)
        return found[0] if found else None

    def _denial(
        self, rel: str, for_write: bool, is_dir: bool, ignore: _PatternSet | None = None
    ) -> tuple[str, str, bool] | None:
        """(pattern, where it comes from, whether reads are denied too) or None;
        ``ignore``: the ignore file's patterns when the caller has just read them."""
        for patterns in (self._denied, self._ignore_patterns() if ignore is None else ignore):
            pattern = patterns.match(rel, is_dir)
            if pattern is not None:
                return pattern, patterns.source, True
        if for_write:
            pattern = self._write_denied.match(rel, is_dir)
            if pattern is not None:
                return pattern, self._write_denied.source, False
        return None

    def _refuse_denied(
        self, rel: str, shown: str, for_write: bool, is_dir: bool, ignore: _PatternSet | None
    ) -> None:
        found = self._denial(rel, for_write, is_dir, ignore)
        if found is None:
            return
        pattern, source, reads_too = found
        if reads_too:
            hint = (
                "This path is protected (secrets or excluded by the user) and may be neither "
                "read nor written; do not try to reach it another way."
            )
        else:
            hint = "This path may be read but not changed by file tools; leave it as it is."
        raise ToolError(
            ErrorCode.DENIED_PATTERN,
            f"The path {shown} is denied by the pattern {pattern!r} from {source}.",
            hint,
            details={"pattern": pattern, "path": rel},
        )

    def _strip_root(self, parts: list[str], shown: str) -> list[str]:
        """The components below the root of an absolute path, compared without touching disk."""
        for spelling in self._root_spellings:
            if parts[: len(spelling)] == spelling:
                return parts[len(spelling) :]
        raise ToolError(
            ErrorCode.PATH_OUTSIDE_ROOT,
            f"The absolute path {shown} is outside the root {self._root}.",
            f"Use a path inside {self._root}; relative paths are resolved against it.",
        )

    def _walk(self, parts: list[str], shown: str, batch: _Batch | None) -> tuple[str, bool, str]:
        """Resolve ``parts`` below the root the way the kernel would, one component at a time.

        Returns the resolved path, whether it is a directory, and the path as named
        (lexically, relative to the root) so a symlink cannot launder a denied name.
        In a batch, the walk starts from where an earlier path's walk through the
        same leading components ended, and leaves its own for later paths.
        """
        root, current, is_dir = self._root, self._root, True
        named: list[str] = []
        start, folders = 0, None if batch is None else batch.folders
        if folders is not None and len(parts) > 1:
            known = folders.get(tuple(parts[:-1]))
            if known is not None:
                current, is_dir, named = known[0], known[1], list(known[2])
                start = len(parts) - 1
        for index in range(start, len(parts)):
            part = parts[index]
            if folders is not None and index and index == len(parts) - 1:
                folders[tuple(parts[:index])] = (current, is_dir, tuple(named))
            if part == "..":
                if current == root:
                    raise ToolError(
                        ErrorCode.PATH_OUTSIDE_ROOT,
                        f"The path {shown} uses '..' to leave the root {root}.",
                        f"Use a path inside {root}.",
                    )
                current = current.rsplit("/", 1)[0] or "/"
                if named:
                    named.pop()
                is_dir = True
                continue
            candidate = (current if current.endswith("/") else current + "/") + part
            named.append(part)
            try:
                mode = os.lstat(candidate).st_mode
            except (FileNotFoundError, NotADirectoryError):
                current, is_dir = candidate, False
                continue
            except OSError as exc:
                raise _lstat_error(exc, shown) from exc
            if stat.S_ISLNK(mode):
                current = self._follow(candidate, shown)
                is_dir = os.path.isdir(current)
            else:
                current, is_dir = candidate, stat.S_ISDIR(mode)
        return current, is_dir, "/".join(named)

    def _follow(self, link: str, shown: str) -> str:
        target = os.path.realpath(link)
        if target != self._root and not target.startswith(self._prefix):
            raise ToolError(
                ErrorCode.SYMLINK_ESCAPE,
                f"The path {shown} goes through the symlink {self.relative(link)!r}, "
                "which points outside the root.",
                f"Use a path whose real location is inside {self._root}.",
            )
        if os.path.islink(target):
            raise ToolError(
                ErrorCode.INVALID_ARGUMENT,
                f"The path {shown} goes through a symlink loop at {self.relative(link)!r}.",
                "Use a path that does not go through this symlink.",
            )
        return target

    def _ignore_patterns(self) -> _PatternSet:
        """The root's ``.tinyagentignore``, re-read whenever its stat signature changes.

        The signature includes size and ctime as well as mtime because mtime
        granularity can hide two quick edits.
        """
        try:
            st = os.lstat(self._ignore_path)
            key: tuple[int, ...] | None = (
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_size,
                st.st_ino,
                st.st_mode,
            )
        except OSError:
            key = None
        cached_key, cached = self._ignore
        if key == cached_key:
            return cached
        lines: list[str] = []
        if key is not None:
            try:
                data = read_config_file(self._ignore_path)
            except UnsafeConfigFile as exc:
                raise ToolError(
                    ErrorCode.PERMISSION_DENIED,
                    f"{IGNORE_FILE_NAME} in the root is not read: {exc}.",
                    f"Paths stay refused until {IGNORE_FILE_NAME} is a regular file under "
                    f"{MAX_CONFIG_FILE_BYTES} bytes (or is removed).",
                ) from exc
            lines = config_lines(data or b"")
        patterns = _PatternSet(lines, IGNORE_FILE_NAME, quote=False, fold=self.case_insensitive)
        self._ignore = (key, patterns)
        return patterns


@dataclass
class _Batch:
    """What one ``resolve_all`` saw of the disk, kept for its own length only."""

    ignore: _PatternSet
    folders: dict[tuple[str, ...], tuple[str, bool, tuple[str, ...]]] = field(default_factory=dict)
    """Leading components of a path walked -> where the walk stood after them:
    resolved path, whether a directory, the components as named."""


def _probe_case_insensitive(root: str) -> bool:
    """Whether the root's file system ignores case: the root under a case-swapped
    name is the same directory. A root with no cased letter in its name is asked
    through its first entry that has one; none at all means case-sensitive."""
    parent, name = os.path.split(root)
    candidates = [(parent, name)]
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        candidates += [(root, e.name) for e in itertools.islice(entries, 64)]
    for directory, entry in candidates:
        swapped = entry.swapcase()
        if swapped == entry:
            continue
        try:
            return os.path.samestat(
                os.lstat(os.path.join(directory, entry)), os.lstat(os.path.join(directory, swapped))
            )
        except OSError:
            return False
    return False


def _shown(raw: str) -> str:
    """The path as given, quoted and shortened so an error message stays readable."""
    if len(raw) > _SHOWN_PATH_CHARS:
        raw = raw[:_SHOWN_PATH_CHARS] + "..."
    return repr(raw)


def _lstat_error(exc: OSError, shown: str) -> ToolError:
    if exc.errno == errno.ENAMETOOLONG:
        return ToolError(
            ErrorCode.PATH_TOO_DEEP,
            f"A component of the path {shown} is longer than the file system allows.",
            "Use shorter file and directory names.",
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ToolError(
            ErrorCode.PERMISSION_DENIED,
            f"The path {shown} cannot be checked: permission denied ({exc.strerror}).",
            "Choose a path in a directory you can access.",
        )
    return ToolError(
        ErrorCode.IO_ERROR,
        f"The path {shown} cannot be checked: {exc.strerror}.",
        "Try again or choose another path.",
    )
