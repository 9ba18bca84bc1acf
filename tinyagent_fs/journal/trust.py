"""What makes an undo journal entry trustworthy before undo writes what it says.

A ``change_id`` must have exactly the form the toolkit generates (so it cannot
name a file elsewhere, e.g. a manifest an agent wrote into the project); every
manifest carries an HMAC, under a per-journal key kept 0600 beside the entries,
over its content and the SHA-256 of each stored old-bytes file; and stored bytes
are checked against that digest whenever they are read back. An entry that does
not verify is refused, never planned from.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any

from ..errors import ErrorCode, ToolError

CHANGE_ID_FORMAT = re.compile(r"[0-9a-f]{12}")
"""What ``ChangeSet`` generates (``uuid4().hex[:12]``), and the only names accepted."""
KEY_FILE_NAME = ".key"
_KEY_BYTES = 32


class ForgedEntry(ToolError):
    """A journal entry whose HMAC or stored bytes do not verify."""

    def __init__(
        self,
        change_id: str,
        message: str = "",
        hint: str = "Only changes made through these tools can be undone.",
    ) -> None:
        super().__init__(
            ErrorCode.PERMISSION_DENIED,
            message
            or f"The undo journal entry {change_id} does not verify (forged or modified); "
            "it is not used.",
            hint,
        )


class StoredContentChanged(ForgedEntry):
    """The old bytes kept for an entry no longer match the digest signed with it."""

    def __init__(self, change_id: str, path: str) -> None:
        super().__init__(
            change_id,
            f"The old content of {path} kept to undo change {change_id} has changed since "
            "the change was made (the old file was still reachable through another hard "
            "link or an open descriptor, or the journal was modified), so undo will not "
            "restore it.",
            "Restore the file by hand, e.g. from version control.",
        )


def check_change_id(change_id: object) -> str:
    """``change_id`` if it has the generated form; INVALID_ARGUMENT otherwise."""
    if not isinstance(change_id, str) or not CHANGE_ID_FORMAT.fullmatch(change_id):
        shown = repr(change_id)[:40]
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"{shown} is not a change id; ids are 12 lowercase hex digits.",
            "Take the change_id from a mutating tool's result data, or omit it for the latest.",
        )
    return change_id


class ManifestSigner:
    """Signs manifests and verifies them with the journal's key, created on first use."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._key: bytes | None = None

    def signed(self, manifest: dict[str, Any]) -> bytes:
        """The manifest in its canonical JSON (the text the MAC is of, so it is encoded
        once) with its MAC, as one JSON object."""
        canonical = _canonical(manifest)
        mac = self._mac_of(canonical)
        return b'{"manifest":' + canonical + b',"mac":"' + mac.encode() + b'"}'

    def verified(self, text: str, change_id: str) -> dict[str, Any]:
        """The manifest in ``text``; ``ForgedEntry`` unless it is signed and names
        ``change_id``."""
        try:
            signed = json.loads(text)
        except ValueError as exc:
            raise ForgedEntry(change_id) from exc
        if not isinstance(signed, dict) or not isinstance(signed.get("manifest"), dict):
            raise ForgedEntry(change_id)
        manifest: dict[str, Any] = signed["manifest"]
        if not hmac.compare_digest(str(signed.get("mac", "")), self._mac(manifest)):
            raise ForgedEntry(change_id)
        if manifest.get("change_id") != change_id:
            raise ForgedEntry(change_id)
        return manifest

    def _mac(self, manifest: dict[str, Any]) -> str:
        return self._mac_of(_canonical(manifest))

    def _mac_of(self, canonical: bytes) -> str:
        return hmac.new(self.key(), canonical, hashlib.sha256).hexdigest()

    def key(self) -> bytes:
        """The per-journal secret, created 0600 on first use; a key that is not a
        private regular file of ours is refused rather than trusted."""
        if self._key is not None:
            return self._key
        self.directory.mkdir(parents=True, mode=0o700, exist_ok=True)
        path = self.directory / KEY_FILE_NAME
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        if not path.exists():
            # Written whole under a temporary name, then linked into place: a process
            # killed half-way leaves no empty key, and of two racing creators one wins.
            staged = self.directory / f"{KEY_FILE_NAME}.{secrets.token_hex(8)}"
            fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(secrets.token_bytes(_KEY_BYTES))
                    handle.flush()
                    os.fsync(handle.fileno())
                with contextlib.suppress(FileExistsError):
                    os.link(staged, path)
            finally:
                staged.unlink()
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077:
                raise ToolError(
                    ErrorCode.PERMISSION_DENIED,
                    f"The undo journal key {path} is not a private regular file.",
                    "Remove the journal directory; undo history starts afresh.",
                )
            key = handle.read(_KEY_BYTES + 1)
        if len(key) != _KEY_BYTES:
            raise ToolError(ErrorCode.PERMISSION_DENIED, f"The undo journal key {path} is damaged.")
        self._key = key
        return key


def read_stored(
    directory: Path, name: str | None, digest: str | None, path: str, change_id: str
) -> bytes | None:
    """Stored old bytes of ``path``, checked against the digest the signed manifest holds."""
    if name is None:
        return None
    if "/" in name or name.startswith("."):
        raise ForgedEntry(change_id)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(directory / name, flags)
    except OSError as exc:
        raise ForgedEntry(change_id) from exc
    with os.fdopen(fd, "rb") as handle:
        data = handle.read() if stat.S_ISREG(os.fstat(fd).st_mode) else None
    if data is None or digest is None:
        raise ForgedEntry(change_id)
    if not hmac.compare_digest(hashlib.sha256(data).hexdigest(), digest):
        raise StoredContentChanged(change_id, path)
    return data


def _canonical(manifest: dict[str, Any]) -> bytes:
    """The manifest's JSON with sorted keys and no spaces: ASCII, one text per manifest."""
    return json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
