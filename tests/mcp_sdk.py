"""The MCP SDK's own client against ``tinyagent-fs mcp`` over stdio, for the MCP tests."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters, types

from tinyagent_fs.audit.log import AuditLog

Answer = types.ElicitResult
ListRoots = Callable[[Any], Awaitable[types.ListRootsResult]]


@asynccontextmanager
async def connect(
    roots: Path | Sequence[Path],
    audit_dir: Path,
    policy: str,
    *,
    mode: str = "auto",
    answers: list[Answer] | None = None,
    questions: list[str] | None = None,
    list_roots: ListRoots | None = None,
    extra_args: tuple[str, ...] = (),
) -> AsyncIterator[Client]:
    """A client session with a fresh server; ``answers`` enables elicitation,
    ``list_roots`` the client's MCP roots."""

    async def elicit(context: Any, params: Any) -> Answer:
        assert questions is not None and answers
        questions.append(params.message)
        return answers.pop(0)

    folders = [roots] if isinstance(roots, Path) else list(roots)
    server = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "tinyagent_fs",
            "mcp",
            *(arg for folder in folders for arg in ("--root", str(folder))),
            "--policy",
            policy,
            *extra_args,
        ],
        env={**os.environ, "TINYAGENT_FS_AUDIT_DIR": str(audit_dir)},
    )
    callback = elicit if answers is not None else None
    async with Client(
        server, mode=mode, elicitation_callback=callback, list_roots_callback=list_roots
    ) as client:
        yield client


def events(audit_dir: Path) -> list[dict[str, Any]]:
    path = AuditLog(audit_dir).path
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def error_code(result: types.CallToolResult) -> str | None:
    error = result.structured_content.get("error")
    return error["code"] if error else None
