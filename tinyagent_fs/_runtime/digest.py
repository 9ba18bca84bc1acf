"""Content digests: SHA-256 of file contents, each computed once, large ones ahead of time.

One call asks for the digest of the same bytes several times (the read-state
check, the commit payload, the journal, the read state again after the commit),
and SHA-256 of 5 MB takes 3 ms. So the digests of the last few large contents
are remembered by object identity: bytes are immutable, and the memo holds a
reference, so an identity it knows cannot be reused for other bytes.

:func:`hash_ahead` starts such a digest on a background thread (hashlib releases
the GIL while it hashes, and the caller waits until it has started): a planner
calls it as soon as it has the bytes, and the digest is ready by the time the
check that needs it runs, decoding and editing having gone on meanwhile.

Two more ways spare a digest altogether. :func:`same_as`: bytes read back that
equal bytes whose digest is known (a file just written or read by the toolkit)
take that digest, for the price of a comparison (20 times cheaper). And
:func:`note_utf8` / :func:`text_hash`: the audit log's digest of a large text
argument is the digest of the bytes the planner encoded from that very string.
"""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import Future

from .warm_threads import WarmThreads

MISSING = "missing"
"""The digest of "no file": the planned-against hash of a path that must not exist."""
DIRECTORY = "directory"
"""The planned-against hash of a path that must be a directory at commit time."""
MEMO_FROM_BYTES = 64 * 1024
AHEAD_FROM_BYTES = 256 * 1024
"""Below this, what hashing ahead can save is small against the hand-off (measured
here: 30 us to hand a digest to a started thread; 145 us to hash 256 KB, 575 us
for 1 MB, so a "1 MB" file just under 1 MiB is hashed ahead too)."""
MEMO_ENTRIES = 4
HASHERS = 2
"""A plan may hash its old and its new content ahead: each starts at once."""
START_WAIT_S = 0.02
"""How long ``hash_ahead`` waits at most for its thread to start (a busy machine
may be slower to run it; the digest is then simply waited for later)."""

_recent: tuple[tuple[bytes, str | Future[str]], ...] = ()
_encoded: tuple[tuple[str, bytes], ...] = ()
"""Large texts and their UTF-8 encodings, most recent first (see ``note_utf8``)."""
_hashing = WarmThreads(HASHERS, "tinyagent-fs-hash")


def content_hash(data: bytes | None) -> str:
    """Hash used for stale-write checks; ``MISSING`` stands for "no file"."""
    if data is None:
        return MISSING
    known = _known(data)
    if known is not None:
        return known if isinstance(known, str) else known.result()
    digest = _sha256(data)
    if type(data) is bytes and len(data) >= MEMO_FROM_BYTES:
        _remember(data, digest)
    return digest


def same_as(data: bytes | None, original: bytes, digest: str | None = None) -> None:
    """If ``data`` equals ``original``, let it share ``original``'s digest (``digest``
    when the caller knows it, else the one known or still being computed for it)
    instead of being hashed again."""
    if data is None or data is original or type(data) is not bytes:
        return
    if len(data) < MEMO_FROM_BYTES or _known(data) is not None or data != original:
        return
    _remember(data, digest or _known(original) or content_hash(original))


def note_utf8(text: str, data: bytes) -> None:
    """Record that ``data`` is ``text`` encoded as UTF-8 (the caller just made it so):
    :func:`text_hash` of that string object then is ``content_hash(data)``."""
    global _encoded
    if type(text) is str and type(data) is bytes and len(data) >= MEMO_FROM_BYTES:
        _encoded = ((text, data), *_encoded[: MEMO_ENTRIES - 1])


def text_hash(text: str) -> str:
    """SHA-256 of ``text`` as UTF-8 (lone surrogates passed through, so any string
    has one), reusing the digest of its encoding when :func:`note_utf8` knows it."""
    for known, data in _encoded:
        if known is text:
            return content_hash(data)
    return _sha256(text.encode("utf-8", errors="surrogatepass"))


def hash_ahead(data: bytes | None) -> None:
    """Start the digest of large ``data`` in the background; :func:`content_hash`
    waits for it.

    The caller waits until the hashing thread has started: a thread waiting for
    the GIL while Python code runs gets it only when that code next blocks
    (measured: 0.5 ms later, most of a 1 MB digest, often after all of the
    planning it was meant to overlap); once inside hashlib it needs no GIL."""
    if data is None or type(data) is not bytes or len(data) < AHEAD_FROM_BYTES:
        return
    if _known(data) is None:
        started = threading.Event()

        def job() -> str:
            started.set()
            return _sha256(data)

        _remember(data, _hashing.submit(job))
        started.wait(START_WAIT_S)


def _known(data: bytes) -> str | Future[str] | None:
    for known, digest in _recent:
        if known is data:
            return digest
    return None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _remember(data: bytes, digest: str | Future[str]) -> None:
    global _recent
    _recent = ((data, digest), *_recent[: MEMO_ENTRIES - 1])
