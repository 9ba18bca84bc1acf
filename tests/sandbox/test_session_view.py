"""The notebook's live view of sessions: it follows a session's terminal between the
model's calls, without taking the output from the model. No browser needed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.providers.linux import LinuxSandboxProvider
from tinyagent_fs.ui.session_view import LiveSessionView

from ..sandbox_support import require_sandbox
from ..text.test_hidden_characters import html_text

pytestmark = require_sandbox()


async def test_the_view_follows_a_session_live_and_the_model_still_reads_it(
    project: Path,
) -> None:
    provider = LinuxSandboxProvider(project, SandboxPolicy())
    fs = FileTools(project, provider=provider, hooks=[AutoApprovePolicy()], audit=False)
    view = LiveSessionView(fs, interval_s=0.05, show=False)
    try:
        started = await fs.exec_command(
            "printf 'rev\\342\\200\\256txt\\n'; for i in 1 2 3; do echo tick $i; sleep 0.3; done;"
            " read -p 'more? ' x; echo bye $x",
            yield_time_ms=0,
        )
        sid = started.data["session_id"]
        for _ in range(100):
            if view.panes[sid].partial == "more? ":
                break
            await asyncio.sleep(0.05)
        shown = view.panes[sid].widget.value
        assert "tick 1" in shown and "tick 3" in shown and "more? </pre>" in shown
        assert "running" in shown
        assert "rev⟨U+202E⟩txt" in html_text(shown) and "\u202e" not in shown
        read = await fs.write_stdin(sid, "", yield_time_ms=0)
        model_saw = started.data["output"] + "\n" + read.data["output"]
        assert "tick 1\ntick 2\ntick 3" in model_saw, "the model still gets what the view showed"
        done = await fs.write_stdin(sid, "now\n", yield_time_ms=1000)
        assert "bye now" in done.data["output"]
        for _ in range(40):
            if "exited with code 0" in view.panes[sid].widget.value:
                break
            await asyncio.sleep(0.05)
        assert "bye now" in view.panes[sid].widget.value
        assert "exited with code 0" in view.panes[sid].widget.value
    finally:
        view.close()
        await fs.close()


async def test_peeking_does_not_keep_an_idle_session_alive(project: Path) -> None:
    provider = LinuxSandboxProvider(project, SandboxPolicy(session_idle_s=1))
    fs = FileTools(project, provider=provider, hooks=[AutoApprovePolicy()], audit=False)
    view = LiveSessionView(fs, interval_s=0.05, show=False)
    try:
        started = await fs.exec_command("sleep 300", yield_time_ms=0)
        sid = started.data["session_id"]
        for _ in range(80):
            if "idle_timeout" in view.panes[sid].widget.value:
                break
            await asyncio.sleep(0.05)
        assert "ended (idle_timeout)" in view.panes[sid].widget.value
    finally:
        view.close()
        await fs.close()
