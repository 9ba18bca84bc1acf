"""The Jupyter Server extension: where the audit log is, and its REST and event-bus faces.

Configured as ``c.TinyAgentFSServer.*`` in any Jupyter Server config file (or
``tinyagent_fs_config.py``, which the notebook settings read too). The audit
directory defaults to ``audit.default_audit_dir()``, the one the kernels use;
when it is set here, the server also exports it to the kernels it starts, so the
two never disagree.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jupyter_server.extension.application import ExtensionApp
from traitlets import Float, Unicode

from ..audit.log import AUDIT_FILE_NAME, default_audit_dir
from .approval_handlers import APPROVAL_ROUTES, BROKER_SETTING
from .approvals import ApprovalBroker, Proposal
from .handlers import ROUTES, TAILER_SETTING
from .tailer import AuditTailer
from .undo_handlers import UNDO_ROUTES, UNDO_SETTING
from .undo_requests import UndoRequests

APPROVAL_SCHEMA_PATH = Path(__file__).with_name("approval_event.schema.json")
APPROVAL_SCHEMA_ID = "urn:tinyagent-fs:approval:v1"

AUDIT_DIR_ENV = "TINYAGENT_FS_AUDIT_DIR"


class TinyAgentFSServer(ExtensionApp):
    """Serves the audit log at ``/tinyagent-fs/...`` and announces new events."""

    name = "tinyagent_fs"
    load_other_extensions = True

    audit_dir = Unicode(
        "",
        help=(
            "Directory of the audit log (audit.jsonl) to serve. Empty means the kernels' "
            f"default: ${AUDIT_DIR_ENV}, else a per-user state directory. A value set here "
            f"is passed to the kernels this server starts as ${AUDIT_DIR_ENV}."
        ),
    ).tag(config=True)

    poll_interval_s = Float(
        0.25,
        help="How often the audit file is checked for new lines, in seconds.",
    ).tag(config=True)

    approval_abandon_s = Float(
        10.0,
        help=(
            "Seconds after which a proposal whose agent stopped waiting for it (no "
            "long-poll open) is dropped from the Pending section, and a toolkit that "
            "stopped taking undo requests counts as gone."
        ),
    ).tag(config=True)

    tailer: AuditTailer | None = None
    broker: ApprovalBroker | None = None

    def audit_directory(self) -> Path:
        if self.audit_dir:
            return Path(self.audit_dir).expanduser()
        return default_audit_dir()

    def initialize_settings(self) -> None:
        directory = self.audit_directory()
        if self.audit_dir:
            # Kernels inherit the server's environment: this is how they find the same log.
            os.environ[AUDIT_DIR_ENV] = str(directory)
        self.tailer = AuditTailer(
            directory / AUDIT_FILE_NAME,
            self.serverapp.event_logger if self.serverapp is not None else None,
            interval_s=self.poll_interval_s,
            log=self.log,
        )
        self.settings[TAILER_SETTING] = self.tailer
        self.broker = ApprovalBroker(self._announce_approval, abandon_s=self.approval_abandon_s)
        self.settings[BROKER_SETTING] = self.broker
        self.settings[UNDO_SETTING] = UndoRequests(gone_after_s=self.approval_abandon_s)
        bus = self.serverapp.event_logger if self.serverapp is not None else None
        if bus is not None:
            bus.register_event_schema(APPROVAL_SCHEMA_PATH)
        self.log.info("tinyagent-fs: serving the audit log %s", self.tailer.path)

    def initialize_handlers(self) -> None:
        self.handlers.extend(ROUTES)
        self.handlers.extend(APPROVAL_ROUTES)
        self.handlers.extend(UNDO_ROUTES)

    def _announce_approval(self, action: str, proposal: Proposal) -> None:
        """Tell frontends (event bus, over Jupyter's websocket) that the pending set changed."""
        bus = self.serverapp.event_logger if self.serverapp is not None else None
        if bus is None or self.broker is None:
            return
        waiting = sum(p.state == "pending" for p in self.broker.pending.values())
        try:
            bus.emit(
                schema_id=APPROVAL_SCHEMA_ID,
                data={"action": action, "id": proposal.id, "pending": waiting},
            )
        except Exception as exc:  # an announcement must never fail a decision
            self.log.warning("tinyagent-fs: could not announce approval %s: %s", action, exc)

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        if self.tailer is not None:
            self.tailer.start()
        if self.broker is not None:
            self.broker.start()

    async def stop_extension(self) -> None:
        if self.broker is not None:
            await self.broker.stop()
        if self.tailer is not None:
            await self.tailer.stop()
