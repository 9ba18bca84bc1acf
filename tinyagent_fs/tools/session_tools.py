"""exec_command, write_stdin, close_session: interactive commands under a terminal.

A session runs inside the same sandbox as run_command (``providers.session_host``);
this module validates, formats what the terminal shows for the model
(``terminal_text``) and caps it, with markers that say how to read on.
"""

from __future__ import annotations

from typing import Any

from ..errors import ErrorCode, ToolError
from ..hooks.decision import Risk
from ..providers.sessions import ENDED_WHY, Session
from ..result import ToolResult
from ..text.terminal_text import TerminalText
from .context import ToolContext
from .spec import PathIntent, ToolSpec, integer, schema, string

SIGNAL_LIMITS = {128 + 24: "cpu_time", 128 + 25: "file_size"}
"""Exit codes of a program ended by SIGXCPU or SIGXFSZ: its rlimit stopped it."""
CHARS_PER_TOKEN = 4
"""How ``max_output_tokens`` becomes characters (and raw bytes taken per read)."""
MAX_INPUT_CHARS = 65_536


def _provider_sessions(ctx: ToolContext) -> Any:
    """The provider, which runs sessions (the pipeline refused an unconfined one already
    unless the policy allows unconfined commands)."""
    provider = ctx.provider
    if not hasattr(provider, "start_session"):
        raise ToolError(
            ErrorCode.SANDBOX_UNAVAILABLE,
            f"interactive sessions need the Linux sandbox; the {provider.name} provider "
            "cannot run them. Nothing was run.",
            "use run_command for commands that need no input",
        )
    return provider


async def exec_command(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    provider = _provider_sessions(ctx)
    workdir = ctx.resolve(args["workdir"])
    info = await ctx.stat(workdir)
    if info is None or info["type"] != "directory":
        raise ToolError(
            ErrorCode.NOT_A_DIRECTORY,
            f"workdir {ctx.relative(workdir)} is not a directory",
            "give a directory inside the project, or leave workdir out",
        )
    session = await provider.start_session(
        command=args["cmd"], workdir=str(workdir), env=args["env"], home=str(ctx.root)
    )
    return await _exchange(ctx, provider, session.id, b"", args)


async def write_stdin(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    provider = _provider_sessions(ctx)
    chars = args["chars"]
    if len(chars) > MAX_INPUT_CHARS:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"chars holds {len(chars)} characters; at most {MAX_INPUT_CHARS} per call",
            "type long input in several calls, or write it to a file and read it from there",
        )
    data = chars.encode("utf-8")
    return await _exchange(ctx, provider, str(args["session_id"]), data, args)


async def close_session(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    provider = _provider_sessions(ctx)
    read = _Reader(args.get("max_output_tokens", 8000))
    session = await provider.close_session(str(args["session_id"]))
    text = read(session)
    return _result(ctx, session, text, read)


async def _exchange(
    ctx: ToolContext, provider: Any, session_id: str, data: bytes, args: dict[str, Any]
) -> ToolResult:
    read = _Reader(args["max_output_tokens"])
    session, text = await provider.session_exchange(
        session_id, data, int(args["yield_time_ms"]), read
    )
    return _result(ctx, session, text, read)


class _Reader:
    """Run under the session's lock: the raw bytes not shown yet, up to the cap,
    through the session's terminal, and what is left over."""

    def __init__(self, max_tokens: int) -> None:
        self.max_chars = max(256, int(max_tokens) * CHARS_PER_TOKEN)
        self.dropped = 0
        self.input_refused = 0
        self.raw = 0
        self.left = 0

    def __call__(self, session: Session) -> str:
        if session.renderer is None:
            session.renderer = TerminalText()
        renderer: TerminalText = session.renderer
        renderer.budget = self.max_chars  # no more text than this read can return
        self.dropped, session.dropped = session.dropped, 0
        self.input_refused, session.input_refused = session.input_refused, 0
        if self.dropped:
            renderer.reset()
        size = min(self.max_chars, session.readable())
        chunk = bytes(session.unread[:size])
        del session.unread[:size]
        self.raw = len(chunk)
        self.left = len(session.unread)
        renderer.feed(chunk)
        return renderer.take()[: self.max_chars]


def _result(ctx: ToolContext, session: Session, text: str, read: _Reader) -> ToolResult:
    ctx.limiter.charge_bytes(read.raw)
    lines = []
    if read.dropped:
        lines.append(
            f"[... {read.dropped} bytes of earlier output were dropped unread: a session "
            "keeps only its newest 256 KB; redirect long output to a file to keep it all ...]"
        )
    lines.append(text if text else "(no new output)")
    if read.input_refused:
        lines.append(
            f"[{read.input_refused} typed bytes were refused: the program has not read the "
            "1 MB already typed; wait for it (empty chars) before typing more]"
        )
    if read.left:
        lines.append(
            f"[... output truncated: {read.left} more bytes are waiting; call write_stdin "
            f'with session_id="{session.id}" and empty chars to read on ...]'
        )
    note = session.settle_note
    limit = None if session.live else SIGNAL_LIMITS.get(session.exit_code or 0)
    if session.live:
        lines.append(
            f'[session {session.id} is still running: write_stdin(session_id="{session.id}", '
            "chars=...) types into it (\\u0003 is Ctrl-C, \\u0004 Ctrl-D); empty chars "
            "waits for more output; close_session ends it]"
        )
    elif session.ended == "exited":
        lines.append(f"[process exited with code {session.exit_code}; session {session.id} ended]")
        if limit:
            lines.append(f"[the program was stopped by its {limit} limit]")
    else:
        why = ENDED_WHY.get(session.ended or "", session.ended)
        lines.append(f"[session {session.id} ended: {why}]")
    changed = note.get("protected_paths_changed") or []
    quarantined = note.get("protected_paths_quarantined") or []
    if quarantined:
        lines.append(
            f"WARNING: {note.get('protected_paths_message', '')}: "
            + ", ".join(entry["path"] for entry in quarantined)
        )
    elif changed:
        lines.append("WARNING: the session changed protected paths: " + ", ".join(changed))
    copies = note.get("secret_copies_quarantined") or 0
    copies_left = note.get("secret_copies_left") or 0
    if copies:
        lines.append(
            f"WARNING: {copies} entries changed while the secret was visible were moved into "
            "the root's .tinyagent-quarantine/ (they may hold a copy); a person can look "
            "at them there"
        )
    if copies_left:
        lines.append(
            f"ERROR: {copies_left} entries could not be quarantined, so every call that "
            "reaches the sandbox is refused until a person removes them"
        )
    if "error" in note:
        lines.append(f"ERROR after the session: {note['error'].get('message', '')}")
    data = {
        "session_id": session.id,
        "running": session.live,
        "exit_code": session.exit_code,
        "ended": session.ended,
        "output": text,
        "output_bytes": read.raw,
        "bytes_waiting": read.left,
        "bytes_dropped": read.dropped,
        "input_refused": read.input_refused,
        "session_output_bytes": None if session.withheld else session.total_bytes,
        "limit_exceeded": limit,
        "sandboxed": ctx.provider.kernel_enforced,
        "protected_paths_changed": changed,
        "protected_paths_quarantined": quarantined,
        "secret_copies_quarantined": copies,
        "secret_copies_left": copies_left,
        "security_violation": bool(changed or quarantined or copies or copies_left),
    }
    return ToolResult.success("\n".join(lines), data)


_YIELD = {
    "type": "integer",
    "description": "Milliseconds to wait for output before answering (less if the "
    "command exits first).",
    "default": 250,
    "minimum": 0,
    "maximum": 300_000,
}
_TOKENS = integer(
    "Cap on the output returned by this call, in tokens (about 4 characters each); the rest "
    "waits for the next call.",
    8000,
    minimum=64,
    maximum=100_000,
)
_SESSION_ID = {
    "type": ["string", "integer"],
    "description": "The session_id exec_command returned.",
}

SESSION_TOOLS = (
    ToolSpec(
        name="exec_command",
        description=(
            "Start a command under a terminal (bash -c, in the same sandbox as run_command: "
            "no network, nothing outside the project) and return what the terminal shows "
            "after yield_time_ms, with either its exit code or a session_id while it still "
            "runs. Use it instead of run_command for programs that ask for input or keep "
            "running: a REPL (python3, node), a prompt (read -p, a y/N question), a server or "
            "watcher whose output you want to follow, a long build you want to check on. "
            "Then use write_stdin to type into it or read more, and close_session when done. "
            "For a plain command that just runs and exits, run_command is simpler."
        ),
        parameters=schema(
            {
                "cmd": string("The shell command line.", minLength=1),
                "workdir": {**string("Working directory relative to the root."), "default": "."},
                "yield_time_ms": _YIELD,
                "max_output_tokens": _TOKENS,
                "env": {
                    "type": ["object", "null"],
                    "description": "Extra environment variables (string values).",
                    "additionalProperties": {"type": "string"},
                    "default": None,
                },
            },
            ("cmd",),
        ),
        risk=Risk.EXECUTE,
        run=exec_command,
        path_arguments={"workdir": PathIntent.READ},
        never_trusted="commands always ask and cannot be trusted for the session",
        command_argument="cmd",
    ),
    ToolSpec(
        name="write_stdin",
        description=(
            "Type chars into a running exec_command session and return the output since the "
            "last read, after yield_time_ms. Include the newline to submit a line "
            '("1+1\\n"); control characters work: "\\u0003" is Ctrl-C (stops the foreground '
            'program), "\\u0004" Ctrl-D (end of input). Empty chars types nothing and just '
            "reads what arrived (poll a long-running program this way). The answer ends with "
            "the exit code once the program has exited."
        ),
        parameters=schema(
            {
                "session_id": _SESSION_ID,
                "chars": {**string("What to type (may be empty)."), "default": ""},
                "yield_time_ms": _YIELD,
                "max_output_tokens": _TOKENS,
            },
            ("session_id",),
        ),
        risk=Risk.EXECUTE,
        run=write_stdin,
    ),
    ToolSpec(
        name="close_session",
        description=(
            "End an exec_command session: every process it started is killed. Returns the "
            "output not read yet. Sessions also end by themselves when their program exits."
        ),
        parameters=schema({"session_id": _SESSION_ID}, ("session_id",)),
        risk=Risk.EXECUTE,
        run=close_session,
    ),
)
