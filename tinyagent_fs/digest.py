"""Content digests: SHA-256 of file contents, each computed once, large ones ahead of time.

One call asks for the digest of the same bytes several times (the read-state
check, the commit payload, the journal, the read state again after the commit),
and SHA-256 of 5 MB takes 3 ms. So the digests of the last few large contents
are remembered by object identity: bytes are immutable, and the memo holds a
reference, so an identity it knows cannot be reused for other bytes.

:func:`hash_ahead` starts such a digest on a background thread (hashlib releases
the GIL while it hashes): a planner calls it as soon as it has the bytes, and the
digest is ready by the time the check that needs it runs, decoding and editing
having gone on meanwhile.
"""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import Future, ThreadPoolExecutor

MISSING = "missing"
"""The digest of "no file": the planned-against hash of a path that must not exist."""
MEMO_FROM_BYTES = 64 * 1024
AHEAD_FROM_BYTES = 1 << 20
"""Below this, hashing costs less than handing it to another thread."""
MEMO_ENTRIES = 4

_recent: tuple[tuple[bytes, str | Future[str]], ...] = ()
_hasher: ThreadPoolExecutor | None = None
_hasher_lock = threading.Lock()


def content_hash(data: bytes | None) -> str:
    """Hash used for stale-write checks; ``MISSING`` stands for "no file"."""
    if data is None:
        return MISSING
    for known, digest in _recent:
        if known is data:
            return digest if isinstance(digest, str) else digest.result()
    digest = _sha256(data)
    if type(data) is bytes and len(data) >= MEMO_FROM_BYTES:
        _remember(data, digest)
    return digest


def hash_ahead(data: bytes | None) -> None:
    """Start the digest of large ``data`` in the background; :func:`content_hash`
    waits for it."""
    if data is None or type(data) is not bytes or len(data) < AHEAD_FROM_BYTES:
        return
    if any(known is data for known, _ in _recent):
        return
    _remember(data, _background().submit(_sha256, data))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _remember(data: bytes, digest: str | Future[str]) -> None:
    global _recent
    _recent = ((data, digest), *_recent[: MEMO_ENTRIES - 1])


def _background() -> ThreadPoolExecutor:
    global _hasher
    with _hasher_lock:
        if _hasher is None:
            _hasher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tinyagent-fs-hash")
        return _hasher
