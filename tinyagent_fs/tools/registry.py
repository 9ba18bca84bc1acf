"""Every tool the toolkit offers, by name."""

from __future__ import annotations

from .alias_tools import ALIAS_TOOLS
from .command_tool import COMMAND_TOOLS
from .patch_tool import PATCH_TOOLS
from .path_tools import PATH_TOOLS
from .read_tools import READ_TOOLS
from .search_tools import SEARCH_TOOLS
from .session_tools import SESSION_TOOLS
from .spec import ToolSpec
from .undo_tool import UNDO_TOOLS
from .write_tools import WRITE_TOOLS

ALL_TOOLS: tuple[ToolSpec, ...] = (
    *READ_TOOLS,
    *SEARCH_TOOLS,
    *WRITE_TOOLS,
    *PATCH_TOOLS,
    *PATH_TOOLS,
    *UNDO_TOOLS,
    *COMMAND_TOOLS,
    *SESSION_TOOLS,
    *ALIAS_TOOLS,
)


def tool_table() -> dict[str, ToolSpec]:
    return {spec.name: spec for spec in ALL_TOOLS}
