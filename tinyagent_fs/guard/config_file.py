"""Reading a small configuration file that lives inside a root, safely.

The toolkit itself reads ``.tinyagentignore`` and ``.gitignore`` files, and a
command the agent runs can replace any of them between two calls. So they are
opened without following a symlink (a link to ``/etc/shadow`` must not be read
by the unconfined toolkit), without blocking (a FIFO would hang the open), and
only a regular file below a size cap is read at all.
"""

from __future__ import annotations

import os
import stat

MAX_CONFIG_FILE_BYTES = 1024 * 1024


class UnsafeConfigFile(Exception):
    """The file exists but is not something the toolkit will read; says why."""


def read_config_file(path: str, limit: int = MAX_CONFIG_FILE_BYTES) -> bytes | None:
    """The bytes of the regular file at ``path``; None when nothing is there.

    Raises ``UnsafeConfigFile`` for a symlink, a FIFO, a device, a directory or a
    file larger than ``limit``: the caller decides whether that fails closed.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafeConfigFile("it is a symlink") from exc
        if isinstance(exc, (NotADirectoryError, IsADirectoryError)):
            raise UnsafeConfigFile("it is not a regular file") from exc
        raise UnsafeConfigFile(f"it cannot be opened ({exc.strerror})") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeConfigFile("it is not a regular file")
        if info.st_size > limit:
            raise UnsafeConfigFile(f"it is larger than {limit} bytes")
        data = read_up_to(fd, limit)
        if len(data) > limit:
            raise UnsafeConfigFile(f"it is larger than {limit} bytes")
        return data
    finally:
        os.close(fd)


def read_up_to(fd: int, limit: int) -> bytes:
    """What ``fd`` holds, read no further than ``limit + 1`` bytes: one byte more than
    allowed shows that a file grew past its limit after it was measured."""
    chunks: list[bytes] = []
    remaining = limit + 1
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def config_lines(data: bytes) -> list[str]:
    """The lines of an ignore file as git reads them (UTF-8, a BOM dropped)."""
    return data.decode("utf-8", errors="replace").lstrip("\ufeff").splitlines()
