"""Reading primitives: bytes and metadata of one path."""

from __future__ import annotations

import errno
import os
import stat as stat_module
from typing import Any

from ..errors import ErrorCode, ToolError
from ..guard.config_file import read_up_to
from .ignore import MAX_WALK_DEPTH

ONE_READ_BYTES = 1 << 30
"""Files up to this size are read in one call (Linux returns at most 2 GiB per read)."""


def read_bytes(path: str, max_bytes: int) -> bytes:
    """The whole file, refusing directories and files over ``max_bytes``.

    The size is checked on the open descriptor, so a file swapped between the
    check and the read cannot slip a larger body through.
    """
    fd, info = open_regular(path)
    try:
        return read_open(fd, path, info, max_bytes)
    finally:
        os.close(fd)


def open_regular(path: str) -> tuple[int, os.stat_result]:
    """A read descriptor and its stat, for a regular file only; the caller closes it.

    O_NOFOLLOW: the guard resolved every link, so a link here was swapped in
    since. O_NONBLOCK: a FIFO planted in the root is refused, never waited on.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise ToolError(
            ErrorCode.NOT_FOUND,
            f"{path} does not exist",
            "check the path with list_directory or glob",
        ) from None
    except IsADirectoryError:
        raise _is_directory(path) from None
    except PermissionError as exc:
        raise ToolError(ErrorCode.PERMISSION_DENIED, f"{path}: {exc.strerror}") from None
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise ToolError(
            ErrorCode.SYMLINK_ESCAPE,
            f"{path} is a symlink now; it was not when the path was checked",
            "check the path again; nothing was read",
            security_violation=True,
        ) from None
    try:
        info = os.fstat(fd)
        if stat_module.S_ISDIR(info.st_mode):
            raise _is_directory(path)
        if not stat_module.S_ISREG(info.st_mode):
            raise ToolError(
                ErrorCode.NOT_TEXT,
                f"{path} is not a regular file",
                "only regular files can be read",
            )
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_open(fd: int, path: str, info: os.stat_result, max_bytes: int) -> bytes:
    """Everything ``fd`` holds, refusing more than ``max_bytes`` (checked before and after)."""
    if info.st_size > max_bytes:
        raise too_large(path, info.st_size, max_bytes)
    # One read of one byte more than the file measured: a short read of a regular file
    # is its end, so a file that kept its size is read in one call, into a buffer no
    # larger than itself (reading up to the limit allocates and gives back a megabyte
    # per call, and confirming the end costs a second call: a patch reads 500 files).
    want = info.st_size + 1
    if want > ONE_READ_BYTES:  # past what one read(2) returns whole
        return _checked(path, read_up_to(fd, max_bytes), max_bytes)
    data = os.read(fd, want)
    if len(data) == want:  # it grew since it was measured: read on, up to the limit
        data += read_up_to(fd, max_bytes - len(data))
    return _checked(path, data, max_bytes)


def _checked(path: str, data: bytes, max_bytes: int) -> bytes:
    if len(data) > max_bytes:
        raise too_large(path, len(data), max_bytes)
    return data


def file_identity(info: os.stat_result) -> str:
    """Which file, at which version: any write changes the size or the change time.

    Used where hashing the whole file would cost more than the job (a window of
    a large file); ``ops.line_index`` says when a change time can be trusted.
    """
    return f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


def read_files(paths: list[str], max_bytes: int) -> list[bytes | None]:
    """Several whole files in one call, None for each that does not exist.

    A patch reads hundreds of files; through a sandboxed worker one call is one
    round trip, so they are read together. Any other failure is raised as
    ``read_bytes`` raises it.
    """
    found: list[bytes | None] = []
    for path in paths:
        try:
            found.append(read_bytes(path, max_bytes))
        except ToolError as error:
            if error.code is not ErrorCode.NOT_FOUND:
                raise
            found.append(None)
    return found


def stat_path(path: str) -> dict[str, Any] | None:
    """Metadata without following a final symlink; None when nothing is there."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    kind = _kind(info.st_mode)
    return {
        "type": kind,
        "size": info.st_size,
        "mtime": info.st_mtime,
        "ctime": info.st_ctime,
        "birthtime": getattr(info, "st_birthtime", None),
        "mode": stat_module.S_IMODE(info.st_mode),
        "permissions": stat_module.filemode(info.st_mode),
        "target": os.readlink(path) if kind == "symlink" else None,
        "identity": file_identity(info),
    }


def stat_paths(paths: list[str]) -> list[dict[str, Any] | None]:
    """``stat_path`` of each path in one call: a patch asks about the folders its files
    land in and the modes of the files it renames, and through a sandboxed worker one
    call is one round trip where one call per path queues behind each other."""
    return [stat_path(path) for path in paths]


def _kind(mode: int) -> str:
    if stat_module.S_ISREG(mode):
        return "file"
    if stat_module.S_ISDIR(mode):
        return "directory"
    if stat_module.S_ISLNK(mode):
        return "symlink"
    return "other"


def _is_directory(path: str) -> ToolError:
    return ToolError(
        ErrorCode.IS_A_DIRECTORY,
        f"{path} is a directory",
        "use list_directory to see what it contains",
    )


def too_large(path: str, size: int, limit: int) -> ToolError:
    return ToolError(
        ErrorCode.TOO_LARGE,
        f"{path} is {size} bytes, over the {limit}-byte limit",
        "use grep to find the part you need",
        details={"size": size, "limit": limit},
    )


def walk_all(path: str) -> dict[str, list[str]]:
    """Every entry under a directory, unfiltered: what a recursive delete, move or
    copy would touch. Directories come parents first; symlinks are not followed.
    The walk keeps its own stack; a tree deeper than ``MAX_WALK_DEPTH`` is refused
    whole (``PATH_TOO_DEEP``) before anything is planned, let alone changed."""
    files: list[str] = []
    dirs: list[str] = []
    links: list[str] = []
    pending = [(path, 1)]
    while pending:
        current, level = pending.pop()
        dirs.append(current)
        try:
            with os.scandir(current) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                raise _too_deep() from None
            continue
        subdirs = []
        for entry in entries:
            if entry.is_symlink():
                links.append(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                subdirs.append(entry.path)
            else:
                files.append(entry.path)
        if subdirs and level >= MAX_WALK_DEPTH:
            raise _too_deep()
        pending.extend((subdir, level + 1) for subdir in reversed(subdirs))
    return {"files": files, "dirs": dirs, "symlinks": links}


def _too_deep() -> ToolError:
    return ToolError(
        ErrorCode.PATH_TOO_DEEP,
        f"the directory holds folders nested more than {MAX_WALK_DEPTH} levels deep (or "
        "paths longer than the system allows); nothing was changed",
        "ask the person to flatten or remove the deep folders",
    )
