"""run_command: a shell command in the project, confined like every file tool."""

from __future__ import annotations

from typing import Any

from ..errors import ErrorCode, ToolError
from ..hooks.decision import Risk
from ..ops.command import WORKDIR_REFUSED
from ..result import ToolResult
from .context import ToolContext
from .spec import PathIntent, ToolSpec, schema, string


def require_confinement(ctx: ToolContext) -> None:
    """Without the kernel sandbox a command could read every secret the user can, so
    it runs only where the person said so in the policy."""
    if ctx.provider.kernel_enforced or ctx.policy.allow_unconfined_commands:
        return
    raise ToolError(
        ErrorCode.SANDBOX_UNAVAILABLE,
        f"run_command is refused: the {ctx.provider.name} provider has no kernel sandbox, "
        "so a command would run unconfined, able to read and change anything outside the "
        "project (secrets included). Nothing was run.",
        "Use the file tools instead. A person who accepts unconfined commands can opt in "
        "with SandboxPolicy(allow_unconfined_commands=True) or the command-line flag "
        "--allow-unconfined-commands.",
    )


async def run_command(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    workdir = ctx.resolve(args["workdir"])
    try:
        outcome = await ctx.provider.call(
            "run_command",
            command=args["command"],
            workdir=str(workdir),
            timeout_s=float(args["timeout_s"]),
            env=args["env"],
            home=str(ctx.root),
        )
    except ToolError as exc:
        if exc.details.get("cause") == WORKDIR_REFUSED:  # said with the path the model gave
            raise ToolError(
                ErrorCode.NOT_A_DIRECTORY,
                f"workdir {ctx.relative(workdir)} is not a directory",
                "give a directory inside the project, or leave workdir out",
            ) from None
        raise
    lines = [
        f"exit code {outcome['exit_code']} after {outcome['duration_ms']:.0f} ms"
        + (f" (killed: timed out after {args['timeout_s']} s)" if outcome["timed_out"] else "")
    ]
    for stream in ("stdout", "stderr"):
        if outcome[stream]:
            lines.append(f"--- {stream} ---\n{outcome[stream].rstrip()}")
    changed = outcome.get("protected_paths_changed") or []
    if changed:
        lines.append(
            "WARNING: the command changed protected paths: "
            + ", ".join(changed)
            + " (reported to the person; do not modify these files)"
        )
    quarantined = outcome.get("protected_paths_quarantined") or []
    if quarantined:
        lines.append(
            f"WARNING: {outcome.get('protected_paths_message', '')}: "
            + ", ".join(entry["path"] for entry in quarantined)
        )
    if not ctx.provider.kernel_enforced:
        lines.append("(note: ran without a kernel sandbox; only the working directory was checked)")
    data = {
        "exit_code": outcome["exit_code"],
        "duration_ms": outcome["duration_ms"],
        "timed_out": outcome["timed_out"],
        "stdout": outcome["stdout"],
        "stderr": outcome["stderr"],
        "stdout_truncated": outcome["stdout_truncated"],
        "stderr_truncated": outcome["stderr_truncated"],
        "workdir": ctx.relative(workdir),
        "sandboxed": ctx.provider.kernel_enforced,
        "protected_paths_changed": changed,
        "protected_paths_quarantined": quarantined,
        "security_violation": bool(changed or quarantined),
    }
    return ToolResult.success("\n".join(lines), data)


COMMAND_TOOLS = (
    ToolSpec(
        name="run_command",
        description=(
            "Run a shell command (bash -c) in the project and return its exit code, stdout "
            "and stderr (each capped at 8 KB / 200 lines, keeping the start and the end). "
            "It runs inside the same sandbox as the file tools: no network, no access outside "
            "the project, .git/hooks, .git/config and shell rc files read-only. A non-zero "
            "exit code is reported, not an error: read stderr and fix the cause. Commands are "
            "killed after timeout_s. Prefer the file tools for reading and editing files."
        ),
        parameters=schema(
            {
                "command": string("The shell command line.", minLength=1),
                "workdir": {**string("Working directory relative to the root."), "default": "."},
                "timeout_s": {
                    "type": "number",
                    "description": "Seconds before the command is killed.",
                    "default": 60,
                    "minimum": 1,
                    "maximum": 3600,
                },
                "env": {
                    "type": ["object", "null"],
                    "description": "Extra environment variables (string values).",
                    "additionalProperties": {"type": "string"},
                    "default": None,
                },
            },
            ("command",),
        ),
        risk=Risk.EXECUTE,
        run=run_command,
        path_arguments={"workdir": PathIntent.READ},
        never_trusted="commands always ask and cannot be trusted for the session",
        command_argument="command",
    ),
)
