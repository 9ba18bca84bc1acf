"""Content digests: SHA-256, remembered by object identity, large ones computed ahead,
equal bytes and noted encodings not hashed again."""

from __future__ import annotations

import hashlib
import os

from tinyagent_fs._runtime.digest import (
    AHEAD_FROM_BYTES,
    MEMO_FROM_BYTES,
    MISSING,
    content_hash,
    hash_ahead,
    note_utf8,
    same_as,
    text_hash,
)


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


def test_a_digest_computed_ahead_has_started_when_hash_ahead_returns(
    hashed_sizes: list[int],
) -> None:
    """Started, not just queued: a thread queued behind running Python code would
    start only when that code next blocks, too late to overlap it."""
    entered = hashed_sizes
    for size in (AHEAD_FROM_BYTES, AHEAD_FROM_BYTES + 1, 3 * AHEAD_FROM_BYTES):
        data = os.urandom(size)
        hash_ahead(data)
        assert entered[-1:] == [size]  # no blocking call in between: the thread got there
        assert content_hash(data) == hashlib.sha256(data).hexdigest()


def test_small_and_missing_contents() -> None:
    hash_ahead(b"small")  # below the threshold: hashed when asked
    assert content_hash(b"small") == hashlib.sha256(b"small").hexdigest()
    assert content_hash(None) == MISSING


def test_equal_bytes_take_the_known_digest_and_other_bytes_are_hashed(
    hashed_sizes: list[int],
) -> None:
    original = os.urandom(MEMO_FROM_BYTES)
    expected = hashlib.sha256(original).hexdigest()
    assert content_hash(original) == expected
    hashed = hashed_sizes
    hashed.clear()
    equal = bytes(bytearray(original))
    same_as(equal, original)
    assert content_hash(equal) == expected
    assert hashed == []  # a comparison, not a digest
    changed = bytearray(original)
    changed[MEMO_FROM_BYTES // 2] ^= 1
    other = bytes(changed)
    same_as(other, original)
    assert content_hash(other) == hashlib.sha256(other).hexdigest() != expected
    assert hashed == [len(other)]


def test_the_text_digest_is_the_digest_of_its_utf8_bytes_noted_or_not(
    hashed_sizes: list[int],
) -> None:
    text = "é" * MEMO_FROM_BYTES
    data = text.encode("utf-8")
    expected = hashlib.sha256(data).hexdigest()
    assert text_hash(text) == expected  # not noted: hashed
    assert content_hash(data) == expected
    hashed = hashed_sizes
    hashed.clear()
    note_utf8(text, data)
    assert text_hash(text) == expected
    assert hashed == []  # the encoding's digest, reused
    equal_text = "".join(["é"] * MEMO_FROM_BYTES)  # equal, another object: hashed
    assert text_hash(equal_text) == expected
    assert hashed == [len(data)]
    lone = "\ud800" + "x" * 10
    assert text_hash(lone) == hashlib.sha256(lone.encode("utf-8", "surrogatepass")).hexdigest()
