"""Talk to an approval card as its page does: custom messages, both ways."""

from __future__ import annotations

from typing import Any

from tinyagent_fs.ui.approval_card import ApprovalCard


def from_page(card: ApprovalCard, action: str, **form: Any) -> None:
    """What the page sends for an answer: the action and the whole form with it."""
    content = {"action": action, "trust_path": False, "trust_tool": False, **form}
    message = {"content": {"data": {"method": "custom", "content": content}}, "buffers": []}
    card.widget._handle_msg(message)


def to_page(card: ApprovalCard) -> list[dict[str, Any]]:
    """Record what the kernel sends the page from now on (still sending it)."""
    sent: list[dict[str, Any]] = []
    send = card.widget.send

    def recording(content: dict[str, Any], buffers: Any = None) -> None:
        sent.append(content)
        send(content, buffers)

    card.widget.send = recording  # type: ignore[method-assign]
    return sent
