"""A plain Python script with file tools that ask JupyterLab, for the approval tests.

    python -m tests.approval_agent ROOT TOOL ARGS_JSON [--timeout S] [--race-terminal]
        [--calls N]

It finds the Jupyter server through Jupyter's runtime files (the tests point
``JUPYTER_RUNTIME_DIR`` at their server's), asks through ``WebApprovalHook``
(raced with a terminal prompt on stdin with ``--race-terminal``), and prints
each tool result as one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from tinyagent_fs import FileTools
from tinyagent_fs.hooks.race import FirstAnswer
from tinyagent_fs.hooks.terminal import TerminalHook
from tinyagent_fs.hooks.web import WebApprovalHook


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("tool")
    parser.add_argument("args")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--race-terminal", action="store_true")
    parser.add_argument("--calls", type=int, default=1)
    options = parser.parse_args()
    web = WebApprovalHook(project=options.root, timeout_s=options.timeout, origin="approval test")
    hook = (
        FirstAnswer(web, TerminalHook(sys.stdin, sys.stderr, color=False))
        if options.race_terminal
        else web
    )
    async with FileTools(options.root, hooks=[hook]) as fs:
        for _ in range(options.calls):
            result = await fs.call(options.tool, json.loads(options.args))
            print(json.dumps({"ok": result.ok, "text": result.text}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
