"""Sandboxed, reviewed and audited file tools for AI agents."""

from .errors import ErrorCode, ToolError
from .policy import SandboxPolicy
from .tools.facade import FileTools
from .tools.result import ToolResult

__all__ = ["ErrorCode", "FileTools", "SandboxPolicy", "ToolError", "ToolResult"]
__version__ = "0.1.0"
