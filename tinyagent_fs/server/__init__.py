"""Jupyter Server extension: the audit log over REST and on the event bus.

Loaded by Jupyter Server when the package is installed (the wheel ships
``etc/jupyter/jupyter_server_config.d/tinyagent_fs.json``). Importing
``tinyagent_fs`` never imports this package, so the core stays free of Jupyter.
"""

from __future__ import annotations

from typing import Any

from .._version import __version__
from .app import TinyAgentFSServer


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": "tinyagent_fs.server", "app": TinyAgentFSServer}]


__all__ = ["TinyAgentFSServer", "__version__"]
