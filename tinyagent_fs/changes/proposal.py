"""The fingerprint of a proposal put to a person: what a decision is bound to.

Both ends compute it, the agent (``hooks.web``) and the approval broker
(``server.approvals``), so a decision for one proposal can never be applied to
another (docs/approval-protocol.md). A leaf: standard library only.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def proposal_hash(session_id: str, tool: str, args: dict[str, Any], diff: str) -> str:
    """SHA-256 of the canonical JSON of the session, the tool, its arguments and its diff."""
    canonical = json.dumps(
        {"args": args, "diff": diff, "session_id": session_id, "tool": tool},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
