"""Many paths as one bytes value: what a listing or a glob sends out of the sandbox.

A list of thousands of short strings costs far more to encode as JSON, and to
decode, than the walk that found them; joined by NUL (which no file name can
hold) and sent as bytes, they cross the worker's wire as one raw blob with no
escaping, and split back in one call. ``surrogatepass`` keeps every string as
it was, a name that is not UTF-8 (Python's surrogate escapes) included.
"""

from __future__ import annotations

from collections.abc import Iterable

SEPARATOR = "\0"


def pack_paths(paths: list[str]) -> bytes:
    return SEPARATOR.join(paths).encode("utf-8", "surrogatepass")


def pack_runs(runs: Iterable[tuple[str, list[str]]]) -> bytes:
    """``pack_paths`` of every ``prefix + name`` of runs of names that share a prefix,
    built by joins alone: no string per path."""
    joined = SEPARATOR.join(
        prefix + (SEPARATOR + prefix).join(names) for prefix, names in runs if names
    )
    return joined.encode("utf-8", "surrogatepass")


def unpack_paths(blob: bytes, prefix: str = "") -> list[str]:
    """The paths, each without ``prefix``, which every one of them must start with.

    Cutting the prefix is part of the one split (a NUL is always followed by the
    next path), so names below a directory need no new string per path.
    """
    if not blob:
        return []
    text = blob.decode("utf-8", "surrogatepass")
    return text[len(prefix) :].split(SEPARATOR + prefix)
