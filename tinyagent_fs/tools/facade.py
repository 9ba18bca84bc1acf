"""FileTools: the toolkit a person or an agent holds."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..audit.log import AuditLog
from ..guard.path_guard import PathGuard
from ..hooks.runner import HookRunner
from ..journal.undo_journal import UndoJournal, default_journal_dir
from ..limits import ResourceLimiter
from ..policy import SandboxPolicy
from ..providers import default_provider
from ..providers.base import Provider
from ..result import ToolResult
from .context import ToolContext
from .pipeline import Pipeline
from .registry import tool_table
from .schema_export import export_schemas


class FileTools:
    """File tools for one project folder.

    Every call goes through ``call``: validated, guarded, planned, reviewed by the
    hooks, committed through the provider and recorded in the audit log. It never
    raises for a tool-level failure; the ToolResult says what went wrong.

    ``audit=None`` writes to the per-user audit log (outside the project);
    ``audit=False`` records nothing. ``journal`` is where undo keeps old bytes
    (default: the per-user state directory); ``journal=False`` keeps none.
    ``limiter`` lets toolkits that serve one client in several folders share one
    budget (default: a budget of this toolkit's own, from the policy).
    """

    def __init__(
        self,
        root: str | Path,
        policy: SandboxPolicy | None = None,
        provider: Provider | None = None,
        hooks: Sequence[Any] = (),
        audit: AuditLog | bool | None = None,
        *,
        journal: UndoJournal | bool | None = None,
        limiter: ResourceLimiter | None = None,
    ) -> None:
        self.policy = policy or SandboxPolicy()
        self.guard = PathGuard(root, self.policy)
        self.provider = provider or default_provider(self.guard.root, self.policy)
        self.provider.bind_roots(
            [
                str(self.guard.root),
                *map(str, self.policy.extra_writable_dirs),
                *map(str, self.policy.extra_read_dirs),
            ]
        )
        self.hooks = HookRunner(hooks)
        if audit is None or audit is True:
            audit = AuditLog()
        self.audit: AuditLog | None = audit or None
        self.limiter = limiter or ResourceLimiter(
            self.policy.max_requests_per_round, self.policy.max_bytes_per_round
        )
        if journal is None or journal is True:
            journal = UndoJournal(default_journal_dir(self.guard.root))
        self.journal: UndoJournal | None = journal or None
        self.context = ToolContext(
            self.guard, self.provider, self.policy, self.limiter, self.journal
        )
        self.tools = tool_table()
        self._pipeline = Pipeline(self.tools, self.context, self.hooks, self.audit)

    @property
    def root(self) -> Path:
        return self.guard.root

    @property
    def recovered_changes(self) -> list[str]:
        """Ids of interrupted commits this toolkit dealt with on its first call: rolled
        back, or completed when every file already held its new state."""
        return list(self._pipeline.recovered or [])

    async def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        return await self._pipeline.call(name, args or {})

    def tool_schemas(self, format: str = "openai") -> list[dict[str, Any]]:
        return export_schemas(self.tools.values(), format)

    def tool_names(self) -> list[str]:
        return list(self.tools)

    def new_round(self) -> None:
        """Reset the per-round request and byte budget."""
        self.limiter.reset()

    async def close(self) -> None:
        if self.journal is not None:
            self.journal.close()
        await self.provider.close()

    async def __aenter__(self) -> FileTools:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def read_file(
        self,
        path: str,
        offset: int | None = None,
        limit: int | None = None,
        tail: int | None = None,
    ) -> ToolResult:
        """``offset`` (0 = the first line) or ``tail`` (the last N lines), not both."""
        args: dict[str, Any] = {"path": path, "limit": limit}
        if offset is not None:
            args["offset"] = offset
        if tail is not None:
            args["tail"] = tail
        return await self.call("read_file", args)

    async def read_many_files(self, paths: list[str]) -> ToolResult:
        return await self.call("read_many_files", {"paths": paths})

    async def write_file(self, path: str, content: str, create_dirs: bool = True) -> ToolResult:
        return await self.call(
            "write_file", {"path": path, "content": content, "create_dirs": create_dirs}
        )

    async def edit_file(
        self,
        path: str,
        old_string: str,
        new_string: str,
        expected_replacements: int = 1,
        replace_all: bool = False,
        regex: bool = False,
    ) -> ToolResult:
        return await self.call(
            "edit_file",
            {
                "path": path,
                "old_string": old_string,
                "new_string": new_string,
                "expected_replacements": expected_replacements,
                "replace_all": replace_all,
                "regex": regex,
            },
        )

    async def multi_edit(self, path: str, edits: list[dict[str, Any]]) -> ToolResult:
        return await self.call("multi_edit", {"path": path, "edits": edits})

    async def apply_patch(self, patch: str) -> ToolResult:
        return await self.call("apply_patch", {"patch": patch})

    async def list_directory(
        self,
        path: str = ".",
        depth: int = 1,
        include_hidden: bool = False,
        limit: int = 200,
        sizes: bool = False,
    ) -> ToolResult:
        return await self.call(
            "list_directory",
            {
                "path": path,
                "depth": depth,
                "include_hidden": include_hidden,
                "limit": limit,
                "sizes": sizes,
            },
        )

    async def glob(self, pattern: str, path: str = ".", limit: int = 500) -> ToolResult:
        return await self.call("glob", {"pattern": pattern, "path": path, "limit": limit})

    async def grep(
        self,
        pattern: str,
        path: str = ".",
        include: str | None = None,
        literal: bool = False,
        case_sensitive: bool = True,
        context: int = 0,
        limit: int = 200,
    ) -> ToolResult:
        return await self.call(
            "grep",
            {
                "pattern": pattern,
                "path": path,
                "include": include,
                "literal": literal,
                "case_sensitive": case_sensitive,
                "context": context,
                "limit": limit,
            },
        )

    async def file_exists(self, path: str) -> ToolResult:
        return await self.call("file_exists", {"path": path})

    async def get_file_info(self, path: str) -> ToolResult:
        return await self.call("get_file_info", {"path": path})

    async def delete_path(self, path: str, recursive: bool = False) -> ToolResult:
        return await self.call("delete_path", {"path": path, "recursive": recursive})

    async def move_path(self, src: str, dst: str, overwrite: bool = False) -> ToolResult:
        return await self.call("move_path", {"src": src, "dst": dst, "overwrite": overwrite})

    async def copy_path(self, src: str, dst: str, overwrite: bool = False) -> ToolResult:
        return await self.call("copy_path", {"src": src, "dst": dst, "overwrite": overwrite})

    async def create_directory(self, path: str) -> ToolResult:
        return await self.call("create_directory", {"path": path})

    async def undo(self, change_id: str | None = None) -> ToolResult:
        return await self.call("undo", {"change_id": change_id})

    async def run_command(
        self,
        command: str,
        workdir: str = ".",
        timeout_s: float = 60,
        env: dict[str, str] | None = None,
    ) -> ToolResult:
        return await self.call(
            "run_command",
            {"command": command, "workdir": workdir, "timeout_s": timeout_s, "env": env},
        )

    async def exec_command(
        self,
        cmd: str,
        workdir: str = ".",
        yield_time_ms: int = 250,
        max_output_tokens: int = 8000,
        env: dict[str, str] | None = None,
    ) -> ToolResult:
        return await self.call(
            "exec_command",
            {
                "cmd": cmd,
                "workdir": workdir,
                "yield_time_ms": yield_time_ms,
                "max_output_tokens": max_output_tokens,
                "env": env,
            },
        )

    async def write_stdin(
        self,
        session_id: str,
        chars: str = "",
        yield_time_ms: int = 250,
        max_output_tokens: int = 8000,
    ) -> ToolResult:
        return await self.call(
            "write_stdin",
            {
                "session_id": session_id,
                "chars": chars,
                "yield_time_ms": yield_time_ms,
                "max_output_tokens": max_output_tokens,
            },
        )

    async def close_session(self, session_id: str) -> ToolResult:
        return await self.call("close_session", {"session_id": session_id})

    async def update_file(
        self, file_path: str, old_content: str, new_content: str, expected_matches: int = 1
    ) -> ToolResult:
        """TinyAgent's name for ``edit_file``: every tool the model is offered is a method."""
        return await self.call(
            "update_file",
            {
                "file_path": file_path,
                "old_content": old_content,
                "new_content": new_content,
                "expected_matches": expected_matches,
            },
        )

    async def search_files(
        self,
        pattern: str,
        directory: str = ".",
        file_types: list[str] | None = None,
        case_sensitive: bool = False,
        regex: bool = False,
    ) -> ToolResult:
        """TinyAgent's name for ``grep``: every tool the model is offered is a method."""
        return await self.call(
            "search_files",
            {
                "pattern": pattern,
                "directory": directory,
                "file_types": file_types,
                "case_sensitive": case_sensitive,
                "regex": regex,
            },
        )
