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

import errno
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.guard.code_running import GIT_DIR_MARKS
from tinyagent_fs.guard.config_file import (
    MAX_CONFIG_FILE_BYTES,
    UnsafeConfigFile,
    config_lines,
    read_config_file,
)
from tinyagent_fs.guard.gitignore import CostlyPatterns, PatternList, root_folds_case
from tinyagent_fs.policy import IGNORE_FILE_NAME, SandboxPolicy

_SHOWN_PATH_CHARS = 200
_DRIVE = re.compile(r"[A-Za-z]:")
"""``C:``, ``C:/x``, ``C:x``: a Windows drive, never a folder in the root."""


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
            root_folds_case(real) if case_insensitive is None else case_insensitive
        )
        fold = self.case_insensitive
        self._denied = PatternList(self.policy.denied_patterns, "the sandbox policy", fold=fold)
        self._write_denied = PatternList(
            (*self.policy.write_denied_patterns, "/" + IGNORE_FILE_NAME),
            "the write protection of the sandbox policy",
            fold=fold,
        )
        self._ignore_path = self._prefix + IGNORE_FILE_NAME
        self._ignore: tuple[tuple[int, ...] | None, PatternList] = (
            None,
            PatternList((), IGNORE_FILE_NAME),
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
        if for_write and rel != ".":
            self._refuse_git_dir(rel, shown)
        return Path(resolved)

    def _refuse_git_dir(self, rel: str, shown: str) -> None:
        """A write inside a folder git takes for a git directory by what it holds (a bare
        repository, the root made one), or one that would make a folder one: git would
        run its hooks and config (a folder named ``.git`` is a pattern of the policy)."""
        folder = ""
        for part in rel.split("/"):
            self._refuse_git_marks(folder, {part}, shown)
            folder = f"{folder}/{part}" if folder else part

    def refuse_git_dirs_made(self, created: Iterable[str]) -> None:
        """The paths one change creates (absolute, resolved) must not make a folder a git
        directory together: each was checked alone against the disk before the change
        (a patch adding ``HEAD``, ``objects/...``, ``refs/...`` and ``config`` at once)."""
        children: dict[str, set[str]] = {}
        for path in created:
            if not path.startswith(self._prefix):
                continue
            parts = path[len(self._prefix) :].split("/")
            for depth, part in enumerate(parts):
                children.setdefault("/".join(parts[:depth]), set()).add(part)
        for folder, names in children.items():
            self._refuse_git_marks(folder, names, repr(folder or "."))

    def _refuse_git_marks(self, folder: str, adding: set[str], shown: str) -> None:
        base = f"{self._prefix}{folder}" if folder else self._root
        for mark in GIT_DIR_MARKS:
            if all(name in adding or os.path.lexists(f"{base}/{name}") for name in mark):
                raise ToolError(
                    ErrorCode.DENIED_PATTERN,
                    f"The path {shown} lies in (or would make) a git directory: "
                    f"{folder or 'the root'} holds (or would hold) {' and '.join(mark)}, so "
                    "git would run its hooks and config.",
                    "File tools never write git's own files; leave them as they are.",
                    details={"pattern": "git directory", "path": folder or "."},
                )

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
        self, rel: str, for_write: bool, is_dir: bool, ignore: PatternList | None = None
    ) -> tuple[str, str, bool] | None:
        """(pattern, where it comes from, whether reads are denied too) or None;
        ``ignore``: the ignore file's patterns when the caller has just read them."""
        for patterns in (self._denied, self._ignore_patterns() if ignore is None else ignore):
            pattern = patterns.excluding(rel, is_dir)
            if pattern is not None:
                return pattern.text, patterns.source, True
        if for_write:
            pattern = self._write_denied.excluding(rel, is_dir)
            if pattern is not None:
                return pattern.text, self._write_denied.source, False
        return None

    def _refuse_denied(
        self, rel: str, shown: str, for_write: bool, is_dir: bool, ignore: PatternList | None
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

    def _ignore_patterns(self) -> PatternList:
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
        try:
            patterns = PatternList(lines, IGNORE_FILE_NAME, fold=self.case_insensitive)
        except CostlyPatterns as exc:
            raise ToolError(
                ErrorCode.PERMISSION_DENIED,
                f"{IGNORE_FILE_NAME} in the root is not used: {exc}.",
                f"Paths stay refused until {IGNORE_FILE_NAME} has fewer lines with several "
                "wildcards (a person must edit it).",
                details={"cause": "ignore_file_too_costly"},
            ) from None
        self._ignore = (key, patterns)
        return patterns


@dataclass
class _Batch:
    """What one ``resolve_all`` saw of the disk, kept for its own length only."""

    ignore: PatternList
    folders: dict[tuple[str, ...], tuple[str, bool, tuple[str, ...]]] = field(default_factory=dict)
    """Leading components of a path walked -> where the walk stood after them:
    resolved path, whether a directory, the components as named."""


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
