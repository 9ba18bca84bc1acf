"""Notebook review of tool calls: approval widgets, settings, the audit table.

This is the only part of the package that needs ipywidgets, anywidget and traitlets
(``pip install tinyagent-fs[jupyter]``). Names are loaded on first use; diffs as
HTML (``render_changeset``) come from ``tinyagent_fs.render`` and need pygments alone.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "JupyterHook": ".jupyter",
    "Mode": ".jupyter",
    "PendingApproval": ".jupyter",
    "ApprovalCard": ".approval_card",
    "AuditTable": ".audit_table",
    "LiveSessionView": ".session_view",
    "TinyAgentFS": ".config",
    "load_settings": ".config",
    "render_changeset": "..render.diff_render",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
