"""Content digests: SHA-256, remembered by object identity, large ones computed ahead."""

from __future__ import annotations

import hashlib
import os

from tinyagent_fs.digest import AHEAD_FROM_BYTES, MISSING, content_hash, hash_ahead


def test_a_digest_computed_ahead_is_the_sha256_of_those_bytes_only() -> None:
    data = os.urandom(2 * AHEAD_FROM_BYTES)
    other = bytearray(data)
    other[-1] ^= 1
    changed = bytes(other)
    equal = bytes(bytearray(data))  # the same bytes in another object
    for content in (data, changed):
        hash_ahead(content)
    assert content_hash(data) == hashlib.sha256(data).hexdigest()
    assert content_hash(changed) == hashlib.sha256(changed).hexdigest()
    assert content_hash(equal) == content_hash(data)
    assert content_hash(changed) != content_hash(data)


def test_small_and_missing_contents() -> None:
    hash_ahead(b"small")  # below the threshold: hashed when asked
    assert content_hash(b"small") == hashlib.sha256(b"small").hexdigest()
    assert content_hash(None) == MISSING
