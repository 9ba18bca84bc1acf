"""Terminal demo: reads, a reviewed edit, a refused escape, and the audit trail.

Run with ``make demo`` (or ``python -m tinyagent_fs.demo DIR``). On a terminal the
edit is put to you (y / n / e); without one it is approved by the demo's policy
and the diff is still shown.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from .audit.log import AuditLog, AuditReader
from .hooks import AutoApprovePolicy, Decision, RiskBasedPolicy, ToolCall
from .hooks.terminal import TerminalHook
from .tools.facade import FileTools

SAMPLE_FILES = {
    "README.md": "# Inventory service\n\nTracks stock levels for the shop.\n",
    "src/inventory.py": (
        "STOCK = {}\n\n\n"
        "def add_item(name, count):\n"
        "    STOCK[name] = STOCK.get(name, 0) + count\n\n\n"
        "def remove_item(name, count):\n"
        "    STOCK[name] = STOCK.get(name, 0) - count\n"
    ),
    "tests/test_inventory.py": (
        "from src.inventory import STOCK, add_item\n\n\n"
        "def test_add_item():\n"
        "    add_item('apple', 3)\n"
        "    assert STOCK['apple'] == 3\n"
    ),
    ".env": "API_TOKEN=do-not-read-me\n",
}


def create_sample_project(root: Path) -> None:
    for relative, content in SAMPLE_FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def step(title: str) -> None:
    print(f"\n\033[1m== {title}\033[0m" if sys.stdout.isatty() else f"\n== {title}")


async def run_demo(root: Path) -> None:
    create_sample_project(root)
    interactive = TerminalHook.available()
    approver = TerminalHook() if interactive else _ShowAndApprove()
    audit = AuditLog()
    async with FileTools(root, hooks=[RiskBasedPolicy(approver=approver)], audit=audit) as fs:
        print(f"Project: {fs.root}  (provider: {fs.provider.name})")
        step("list_directory")
        print((await fs.list_directory(depth=2)).text)
        step("grep 'STOCK'")
        print((await fs.grep("STOCK")).text)
        step("read_file src/inventory.py")
        print((await fs.read_file("src/inventory.py")).text)
        step("edit_file: refuse to let stock go negative (put to review)")
        result = await fs.edit_file(
            "src/inventory.py",
            "    STOCK[name] = STOCK.get(name, 0) - count\n",
            "    if STOCK.get(name, 0) < count:\n"
            "        raise ValueError(f'only {STOCK.get(name, 0)} {name} left')\n"
            "    STOCK[name] = STOCK.get(name, 0) - count\n",
        )
        print(result.text)
        step("an escape attempt: read_file ../../etc/passwd")
        print((await fs.read_file("../../etc/passwd")).text)
        step("a secret: read_file .env")
        print((await fs.read_file(".env")).text)
        step(f"audit tail ({audit.path})")
        for event in AuditReader(audit.path).tail(6):
            flag = "  SECURITY" if event.security_violation else ""
            print(
                f"{event.tool:<15} {event.outcome:<7} {event.decision:<8} "
                f"{', '.join(event.paths)}{flag}"
            )


class _ShowAndApprove(AutoApprovePolicy):
    """Without a terminal the demo shows the diff a person would see, then approves."""

    name = "demo (no terminal: auto-approved)"

    def before_tool_execution(self, call: ToolCall) -> Decision:
        print(call.diff, end="")
        print("(no terminal attached: approved by the demo policy)")
        return super().before_tool_execution(call)


def main() -> None:
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "demo-project")
    asyncio.run(run_demo(target))


if __name__ == "__main__":
    main()
