"""``tinyagent-fs mcp`` as a child process spoken to in raw JSON-RPC lines.

The SDK client hides the wire; these tests need to send what no SDK client
would (bad JSON, batches, a request before initialize) and to see every line
the server writes, in order.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
WAIT_S = 60.0
"""Only a guard against a hang: every answer normally comes in milliseconds."""


class RawServer:
    def __init__(self, roots: list[Path], audit_dir: Path, *extra: str) -> None:
        args = [sys.executable, "-m", "tinyagent_fs", "mcp"]
        for root in roots:
            args += ["--root", str(root)]
        self.process = subprocess.Popen(
            [*args, *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={
                **os.environ,
                "PYTHONPATH": str(REPO),
                "TINYAGENT_FS_AUDIT_DIR": str(audit_dir),
                "TINYAGENT_FS_JOURNAL_DIR": str(audit_dir / "journal"),
            },
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._next_id = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, message: dict[str, Any] | str) -> None:
        """One message (or any text) as one line."""
        text = json.dumps(message) if isinstance(message, dict) else message
        self.write(text.encode() + b"\n")

    def write(self, data: bytes) -> None:
        """Bytes as they are: a line may be cut anywhere, or several sent at once."""
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        return json.loads(self.receive_line())

    def receive_line(self) -> bytes:
        """The next line the server wrote, as written."""
        try:
            line = self.lines.get(timeout=WAIT_S)
        except queue.Empty:
            raise AssertionError("the server did not answer") from None
        assert line, "the server closed its output"
        return line

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and return the next message, which must be its answer."""
        ident = self.send_request(method, params)
        answer = self.receive()
        assert answer.get("id") == ident, answer
        return answer

    def send_request(self, method: str, params: dict[str, Any] | None = None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._next_id

    def initialize(
        self, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        answer = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "raw-test", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer["result"]

    def close(self) -> int:
        """End input and wait for the server to exit; its exit code."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=WAIT_S)
        assert self.process.stderr is not None
        self.process.stderr.close()
        assert self.process.stdout is not None
        self.process.stdout.close()
        return code

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None and not stream.closed:
                stream.close()


def envelope(version: str = "2026-07-28", capabilities: dict[str, Any] | None = None) -> dict:
    """The ``_meta`` a 2026-07-28 request carries."""
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }
