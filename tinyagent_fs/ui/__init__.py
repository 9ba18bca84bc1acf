"""Notebook review of tool calls: approval widgets, diff rendering, settings.

This is the only part of the package that needs ipywidgets, anywidget and traitlets
(``pip install tinyagent-fs[jupyter]``). Names are loaded on first use, so
``tinyagent_fs.ui.diff_render`` works with pygments alone.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "JupyterHook": "jupyter",
    "Mode": "jupyter",
    "PendingApproval": "jupyter",
    "ApprovalCard": "approval_card",
    "AuditTable": "audit_table",
    "LiveSessionView": "session_view",
    "TinyAgentFS": "config",
    "load_settings": "config",
    "render_changeset": "diff_render",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
