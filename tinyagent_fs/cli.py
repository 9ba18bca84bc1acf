"""Command line: ``tinyagent-fs call | schemas | audit tail | mcp``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

from .audit.log import AuditLog, AuditReader
from .hooks.policies import POLICY_NAMES, policy_from_name
from .hooks.terminal import TerminalHook
from .policy import SandboxPolicy
from .providers import PROVIDER_NAMES, make_provider
from .tools.facade import FileTools
from .tools.registry import tool_table
from .tools.schema_export import FORMATS, export_schemas

USAGE_ERROR = 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    options = parser.parse_args(argv)
    if options.command == "call":
        return _call(parser, options)
    if options.command == "schemas":
        print(json.dumps(export_schemas(tool_table().values(), options.format), indent=2))
        return 0
    if options.command == "mcp":
        return _mcp(options)
    return _audit_tail(options)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tinyagent-fs", description="Sandboxed, reviewed and audited file tools."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    call = commands.add_parser("call", help="run one tool and print its result as JSON")
    call.add_argument("tool", choices=sorted(tool_table()), metavar="TOOL")
    call.add_argument("--root", default=".", help="project folder (default: .)")
    call.add_argument("--args", default="{}", help="tool arguments as a JSON object")
    call.add_argument(
        "--policy",
        choices=POLICY_NAMES,
        default=None,
        help="who decides on changes (default: $TINYAGENT_FS_POLICY or risk-based)",
    )
    call.add_argument("--provider", choices=PROVIDER_NAMES, default="auto")
    call.add_argument("--audit-dir", default=None, help="where the audit log lives")
    call.add_argument(
        "--allow-unconfined-commands",
        action="store_true",
        help="let run_command run when the kernel sandbox is missing (local provider): "
        "commands then run unconfined, able to read secrets outside the folder",
    )
    schemas = commands.add_parser("schemas", help="print the tool schemas")
    schemas.add_argument("--format", choices=FORMATS, default="openai")
    audit = commands.add_parser("audit", help="read the audit log")
    audit_commands = audit.add_subparsers(dest="audit_command", required=True)
    tail = audit_commands.add_parser("tail", help="print recent audit events")
    tail.add_argument("-n", type=int, default=20, help="how many events (default 20)")
    tail.add_argument("--audit-dir", default=None)
    tail.add_argument("--json", action="store_true", help="one JSON object per line")
    mcp = commands.add_parser("mcp", help="serve the tools to an MCP client over stdio")
    mcp.add_argument(
        "--root",
        action="append",
        default=None,
        help="a folder to serve (default: .); repeat for several: relative paths are "
        "resolved against the first, the client's MCP roots can narrow the set",
    )
    mcp.add_argument(
        "--policy",
        choices=POLICY_NAMES,
        default=None,
        help="who decides on changes (default: $TINYAGENT_FS_POLICY or risk-based, "
        "which asks the person through the client where it can)",
    )
    mcp.add_argument(
        "--approve-in",
        choices=("client", "jupyter"),
        default="client",
        help="where a person approves changes: the MCP client (elicitation, the default) "
        "or JupyterLab's sidebar (the running Jupyter server, found through its runtime "
        "files, or --jupyter-url with the token in $TINYAGENT_FS_JUPYTER_TOKEN)",
    )
    mcp.add_argument(
        "--jupyter-url",
        default=None,
        help="the Jupyter server to ask with --approve-in jupyter (default: the running one)",
    )
    mcp.add_argument(
        "--approval-timeout",
        type=float,
        default=600.0,
        help="seconds to wait for an answer in JupyterLab before denying (default 600)",
    )
    mcp.add_argument("--provider", choices=PROVIDER_NAMES, default="auto")
    mcp.add_argument("--audit-dir", default=None, help="where the audit log lives")
    mcp.add_argument(
        "--allow-unconfined-commands",
        action="store_true",
        help="let run_command run when the kernel sandbox is missing (local provider): "
        "commands then run unconfined, able to read secrets outside the folder",
    )
    mcp.add_argument(
        "--max-requests-per-minute",
        type=int,
        default=SandboxPolicy.max_requests_per_round,
        help="tool calls allowed per minute before RATE_LIMITED "
        f"(default {SandboxPolicy.max_requests_per_round}; 0 = off)",
    )
    mcp.add_argument(
        "--max-bytes-per-minute",
        type=int,
        default=SandboxPolicy.max_bytes_per_round,
        help="bytes read per minute before RATE_LIMITED "
        f"(default {SandboxPolicy.max_bytes_per_round}; 0 = off)",
    )
    return parser


def _call(parser: argparse.ArgumentParser, options: argparse.Namespace) -> int:
    try:
        args = json.loads(options.args)
    except json.JSONDecodeError as exc:
        parser.error(f"--args is not valid JSON: {exc}")
    if not isinstance(args, dict):
        parser.error("--args must be a JSON object")
    approver = TerminalHook() if TerminalHook.available() else None
    try:
        policy = policy_from_name(options.policy, approver=approver)
        audit = AuditLog(options.audit_dir)
        chosen = SandboxPolicy(allow_unconfined_commands=options.allow_unconfined_commands)
        fs = FileTools(
            options.root,
            chosen,
            provider=make_provider(options.provider, options.root, chosen),
            hooks=[policy],
            audit=audit,
        )
    except Exception as exc:
        print(f"tinyagent-fs: {exc}", file=sys.stderr)
        return USAGE_ERROR
    result = asyncio.run(_run(fs, options.tool, args))
    print(result.to_json())
    return 0 if result.ok else 1


async def _run(fs: FileTools, tool: str, args: dict[str, Any]) -> Any:
    async with fs:
        return await fs.call(tool, args)


def _mcp(options: argparse.Namespace) -> int:
    from .integrations.mcp.run import main as serve

    return serve(
        options.root or ["."],
        options.policy,
        options.provider,
        options.audit_dir,
        max_requests_per_minute=options.max_requests_per_minute,
        max_bytes_per_minute=options.max_bytes_per_minute,
        allow_unconfined_commands=options.allow_unconfined_commands,
        approve_in=options.approve_in,
        jupyter_url=options.jupyter_url,
        approval_timeout_s=options.approval_timeout,
    )


def _audit_tail(options: argparse.Namespace) -> int:
    reader = AuditReader(AuditLog(options.audit_dir).path)
    for event in reader.tail(options.n):
        if options.json:
            print(event.to_json())
            continue
        where = ", ".join(event.paths) or "-"
        flag = " SECURITY" if event.security_violation else ""
        code = f" {event.error_code}" if event.error_code else ""
        print(
            f"{event.timestamp}  {event.tool:<15} {event.outcome:<7} "
            f"{event.decision:<9} {where}{code}{flag}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
