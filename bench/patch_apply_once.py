"""One timed apply_patch in a process of its own, for ``bench_patch_ab``.

The package measured is whichever ``tinyagent_fs`` PYTHONPATH names, so one
script times any commit's code. A small patch is applied first (imports, first
use of every code path), then the real one: ``TREE PATCH_FILE AUDIT_DIR [PROVIDER]``
(``local``, the default, or ``linux``).
Prints ``[wall seconds, CPU seconds]`` of the timed call as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from bench_patch import Run, make_provider, timed_apply

from tinyagent_fs import FileTools
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import AutoApprovePolicy

WARM_UP = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n"


async def apply(tree: Path, patch: str, audit: Path, provider: str) -> Run:
    fs = FileTools(
        tree,
        provider=make_provider(provider, tree),
        hooks=[AutoApprovePolicy()],
        audit=AuditLog(audit),
    )
    try:
        return await timed_apply(fs, patch)
    finally:
        await fs.close()


async def main(tree: str, patch_file: str, audit: str, provider: str = "local") -> None:
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "a.txt").write_text("a\n")
        await apply(Path(scratch), WARM_UP, Path(audit), provider)
    patch = Path(patch_file).read_bytes().decode("utf-8", "surrogateescape")
    run = await apply(Path(tree), patch, Path(audit), provider)
    print(json.dumps([run.wall, run.cpu]))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
