"""Sandboxed, reviewed and audited file tools for AI agents.

The names below load on first use: ``import tinyagent_fs.audit.log`` (the Jupyter
server extension, the MCP server) must not pull in the tools, the providers
and the hooks behind them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .errors import ErrorCode, ToolError
    from .policy import SandboxPolicy
    from .result import ToolResult
    from .tools.facade import FileTools

_HOMES = {
    "ErrorCode": ".errors",
    "ToolError": ".errors",
    "SandboxPolicy": ".policy",
    "ToolResult": ".result",
    "FileTools": ".tools.facade",
}
__all__ = ["ErrorCode", "FileTools", "SandboxPolicy", "ToolError", "ToolResult", "__version__"]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tinyagent_fs' has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value
    return value
