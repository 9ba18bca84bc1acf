"""TinyCodeAgent: our file tools beside its ``run_python`` and ``bash``, under one set of hooks.

``register_code_agent(agent, fs)`` gives a TinyCodeAgent our file tools, runs
its ``bash`` in our sandbox (as ``run_command``) and its ``run_python`` in its
own bubblewrap provider, with the project read-only and its secrets masked there,
and puts every call in front of ``fs``'s hooks and audit log.

Why ``bash`` leaves TinyCodeAgent's provider: that provider binds the whole
working folder read-write, by name, with nothing kept read-only (``.git/hooks``,
``.git/config``, rc files) and no secret hidden; a command needs to write, and
our worker already lets it write everything but those, with escape tests.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tinyagent import tool

try:
    from tinyagent.code_agent.providers.bubblewrap_provider import BubblewrapProvider
except ModuleNotFoundError as exc:  # tinyagent-py's code agent needs extras of its own
    raise ModuleNotFoundError(
        f"TinyCodeAgent cannot be imported ({exc}); install it with "
        "pip install 'tinyagent-fs[tinycodeagent]'",
        name=exc.name,
    ) from exc

from ..hooks.decision import Risk
from ..providers.sandbox.secret_masks import plan_masks
from ..tools.facade import FileTools
from .tinyagent import (
    OWNER_ATTRIBUTE,
    TinyAgentApprovalHook,
    _agent_has_tool,
    _remove_tool,
    register_tools,
)

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")

BASH_DESCRIPTION = (
    "Run a shell command (bash -c) in the project and return its exit code, stdout and "
    "stderr. It runs in the same sandbox as the file tools: no network, nothing outside the "
    "project, .git/hooks, .git/config and shell rc files read-only, secrets (.env, keys) "
    "hidden. absolute_workdir: a directory inside the project (default: the project root). "
    "A non-zero exit code is reported, not an error: read stderr and fix the cause. Prefer "
    "the file tools for reading and editing files."
)
BASH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The shell command line.", "minLength": 1},
        "absolute_workdir": {
            "type": "string",
            "description": "Absolute path of a directory inside the project to run in.",
        },
        "timeout": {
            "type": "integer",
            "description": "Seconds before the command is killed.",
            "default": 60,
            "minimum": 1,
            "maximum": 3600,
        },
    },
    "required": ["command"],
}


def register_code_agent(
    agent: Any, fs: FileTools, *, risks: Mapping[str, Risk] | None = None
) -> TinyAgentApprovalHook:
    """Put a TinyCodeAgent's file, shell and Python tools under ``fs``; return the hook.

    Our file tools replace its ``read_file``, ``write_file``, ``update_file``,
    ``glob`` and ``grep``. Its ``bash`` runs through ``fs.run_command`` (our
    sandbox, reviewed once by our pipeline; ``run_command`` itself is not added
    beside it). Its ``run_python`` stays in its bubblewrap provider, confined by
    :class:`ProjectBubblewrapProvider`, and is reviewed by the returned
    :class:`TinyAgentApprovalHook` (attached first among the agent's callbacks).
    ``run_python`` in any other provider is refused here: nothing would keep it
    from changing the project unreviewed.
    """
    provider = getattr(agent, "code_provider", None)
    if provider is None:
        raise TypeError(f"{type(agent).__name__} is not a TinyCodeAgent (it has no code_provider)")
    lock = asyncio.Lock()
    if _agent_has_tool(agent, "run_python"):
        ProjectBubblewrapProvider.confine(provider, fs, lock)
    register_tools(agent, fs, tools=[name for name in fs.tool_names() if name != "run_command"])
    if _agent_has_tool(agent, "bash"):
        _remove_tool(agent, "bash")
        agent.add_tool(_sandboxed_bash(fs, lock))
    return TinyAgentApprovalHook(fs, risks=risks).attach(agent)


def _sandboxed_bash(fs: FileTools, lock: asyncio.Lock) -> Any:
    """TinyCodeAgent's ``bash`` (its name and arguments) run as our ``run_command``."""

    async def bash(command: str, absolute_workdir: str | None = None, timeout: int = 60) -> str:
        args: dict[str, Any] = {"command": command, "timeout_s": timeout}
        if absolute_workdir:
            args["workdir"] = absolute_workdir
        async with lock:  # never while run_python's masks are planned and mounted
            result = await fs.call("run_command", args)
        return result.text

    setattr(bash, OWNER_ATTRIBUTE, fs)
    return tool(name="bash", description=BASH_DESCRIPTION, schema=BASH_SCHEMA)(bash)


class ProjectBubblewrapProvider(BubblewrapProvider):
    """TinyCodeAgent's bubblewrap provider, showing ``run_python`` the project read-only.

    The stock provider binds the current folder read-write (all of ``/`` when
    that is the current folder) and keeps every capability when run as root.
    This one builds its own view: the system folders and the Python
    installation read-only, its private temporary folder, the person's
    ``additional_*_dirs``, then the project read-only with each secret the
    policy denies covered (the plan of our sandbox's masks), every capability
    dropped, no network. Python changes files only through the reviewed file
    tools or ``bash``. A plan that cannot be made refuses the call.
    """

    project_root: str
    fs: FileTools
    lock: asyncio.Lock

    @classmethod
    def confine(cls, provider: Any, fs: FileTools, lock: asyncio.Lock) -> ProjectBubblewrapProvider:
        """Turn the agent's own provider into this one, keeping its state and settings."""
        if not isinstance(provider, BubblewrapProvider):
            raise ValueError(
                f"run_python runs in TinyCodeAgent's {type(provider).__name__}, which "
                "tinyagent_fs cannot confine to the project: create the agent with "
                'provider="bubblewrap" (Linux: apt-get install bubblewrap), or with '
                "enable_python_tool=False"
            )
        # The agent made the provider (TinyCodeAgent takes no provider object) and its
        # run_python holds on to it: it is given this class in place, state and all.
        provider.__class__ = cls
        confined: ProjectBubblewrapProvider = provider  # type: ignore[assignment]
        confined.project_root = str(fs.root)
        confined.fs = fs
        confined.lock = lock
        return confined

    async def execute_python(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        async with self.lock:
            return await super().execute_python(*args, **kwargs)

    def _build_bubblewrap_command(
        self,
        exec_command: list[str],
        additional_binds: dict[str, str] | None = None,
        enable_network: bool = False,
        working_dir: str | None = None,
    ) -> list[str]:
        command = ["bwrap", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        command += ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        if not enable_network:
            command.append("--unshare-net")
        command += ["--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
        for path in [*SYSTEM_DIRS, *_python_dirs(self.python_env_path)]:
            if os.path.exists(path):
                command += ["--ro-bind", path, path]
        for path in self.additional_read_dirs:
            if os.path.exists(path):
                command += ["--ro-bind", path, path]
        writable = [*self.additional_write_dirs, self.sandbox_tmp_dir, *(additional_binds or {})]
        for path in writable:
            if os.path.exists(path):
                command += ["--bind", path, path]
        command += self._project_view()
        command += ["--chdir", working_dir or self.project_root]
        return [*command, *exec_command]

    def _project_view(self) -> list[str]:
        """The project read-only with its secrets covered, or a refusal (nothing runs)."""
        root = self.project_root
        plan = plan_masks(
            [root], self.fs.policy.denied_patterns, set(), self.fs.policy.max_mask_mounts
        )
        if plan.refusal is not None:
            raise RuntimeError(f"{plan.refusal['message']} ({plan.refusal['hint']})")
        view = ["--ro-bind", root, root]
        for relative, is_dir in plan.masks.get(root, []):
            path = os.path.join(root, relative)
            if is_dir:
                view += ["--tmpfs", path, "--remount-ro", path]
            else:
                view += ["--ro-bind", "/dev/null", path]
        return view


def _python_dirs(python_env_path: str | None) -> list[str]:
    """Where the interpreter that runs the code and its packages live (read-only)."""
    dirs = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    dirs.add(str(Path(sys.executable).resolve().parent.parent))
    if python_env_path:
        dirs.add(python_env_path)
    return sorted(d for d in dirs if not d.startswith(SYSTEM_DIRS) and d != "/")
