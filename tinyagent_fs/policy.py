"""What a toolkit may touch and how much it may do: one place for every default."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .guard.code_running import root_write_denials

DEFAULT_DENIED_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    "credentials",
    "credentials.*",
    ".aws/",
    ".ssh/",
    "*.quarantined*",
    ".tinyagent-quarantine/",
    "*___jb_tmp___",
    "*___jb_old___",
)
"""Secrets: neither read nor written (gitignore syntax). What the toolkit renames aside
after a command (``NAME.quarantined``) is among them: the command may have moved a
masked secret where the rename finds it, and the new name must not unmask it. So is
what it moves away after a secret appeared while sessions ran
(``.tinyagent-quarantine/``): those entries may hold the secret, their names too.
JetBrains editors save through ``NAME___jb_tmp___``: a secret sits there before it
has its denied name."""

DEFAULT_WRITE_DENIED_PATTERNS: tuple[str, ...] = root_write_denials()
"""Readable, never written by a file tool (gitignore syntax): ``.git`` (a folder or a
pointer file) and the files that make git or a shell run code (a folder git takes for a
git directory by what it holds is refused by the guard too)."""

IGNORE_FILE_NAME = ".tinyagentignore"


@dataclass(frozen=True)
class SandboxPolicy:
    """Limits and patterns for one toolkit.

    Patterns use gitignore syntax and are matched against paths relative to the
    root. A ``.tinyagentignore`` in the root adds read-and-write denials.
    """

    denied_patterns: tuple[str, ...] = DEFAULT_DENIED_PATTERNS
    write_denied_patterns: tuple[str, ...] = DEFAULT_WRITE_DENIED_PATTERNS
    extra_read_dirs: tuple[Path, ...] = ()
    max_file_bytes: int = 10 * 1024 * 1024
    window_reads_above: int = 256 * 1024
    """read_file reads a file up to this size whole; a larger UTF-8 text file by line
    windows: one scan counts its lines, then each call reads only its window."""
    max_window_file_bytes: int = 1024**3
    """Largest UTF-8 text file read_file shows by windows (others: max_file_bytes)."""
    max_path_depth: int = 64
    max_path_chars: int = 4096
    max_read_lines: int = 2000
    max_line_chars: int = 2000
    max_many_files: int = 50
    max_many_bytes: int = 1024 * 1024
    max_requests_per_round: int = 500
    max_bytes_per_round: int = 200 * 1024 * 1024
    require_kernel_sandbox: bool = False
    allow_unconfined_commands: bool = False
    """Let run_command run without the kernel sandbox (LocalProvider): unconfined, it can
    read and write anything the user can, secrets outside the root included."""
    max_command_processes: int = 512
    """Processes and threads a sandbox's commands may have at once (pids cgroup or RLIMIT_NPROC)."""
    max_command_memory_bytes: int = 8 * 1024**3
    """Address space of each command process (RLIMIT_AS)."""
    max_command_file_bytes: int = 4 * 1024**3
    """Largest file a command may write (RLIMIT_FSIZE)."""
    max_command_cpu_s: int = 600
    """CPU seconds per command process (RLIMIT_CPU: SIGXCPU, then SIGKILL a second later)."""
    max_sessions: int = 4
    """Interactive sessions (exec_command) one toolkit may have running at once."""
    session_idle_s: int = 1800
    """An interactive session nobody has read from or typed into for this long is ended."""
    session_lifetime_s: int = 4 * 3600
    """An interactive session is ended this long after it started, whatever it is doing."""
    extra_writable_dirs: tuple[Path, ...] = field(default=())
    max_mask_mounts: int = 4096
    """Secret masks plus nested-repository protections one worker may mount; above it,
    and whenever one cannot be mounted, commands are refused (file tools go on)."""
