"""JupyterHook in a real ipykernel, answered the way the card's page answers in JupyterLab.

Each decision is tested with the agent awaited at the top level of a cell
(clicks must be handled while that cell is still running) and with the agent
running as a background task (the cell has finished when the click comes).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..jupyter_kernel_support import KernelSession

pytestmark = pytest.mark.jupyter

SETUP = """
import asyncio, os, threading
from pathlib import Path
from tinyagent_fs import FileTools
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.providers import LocalProvider
from tinyagent_fs.ui import JupyterHook
from tinyagent_fs.ui.config import load_settings
root = Path({root!r})
root.mkdir(parents=True)
(root / "README.md").write_text("# Original\\n")
hook = JupyterHook(settings=load_settings(frontend="widgets", busy_kernel_grace_s=4))
fs = FileTools(root, provider=LocalProvider(), hooks=[hook], audit=AuditLog({audit!r}))
"""
WRITE = 'fs.write_file("README.md", "# Proposed\\n")'
REPORT = 'print("OK" if result.ok else "FAILED"); print(result.text)'


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelSession]:
    workdir = tmp_path_factory.mktemp("kernel")
    session = KernelSession(
        workdir,
        {
            "TINYAGENT_FS_AUDIT_DIR": str(workdir / "audit"),
            "TINYAGENT_FS_JOURNAL_DIR": str(workdir / "journal"),
        },
    )
    yield session
    session.close()


@pytest.fixture
def project(tmp_path: Path, kernel: KernelSession) -> Path:
    root = tmp_path / "project"
    kernel.run(SETUP.format(root=str(root), audit=str(tmp_path / "audit")))
    return root


def last_event(project: Path) -> dict:
    lines = (project.parent / "audit" / "audit.jsonl").read_text().splitlines()
    return json.loads(lines[-1])


class Agent:
    """Starts the write either awaited in the cell or as a background task."""

    def __init__(self, kernel: KernelSession, mode: str) -> None:
        self.kernel = kernel
        self.mode = mode

    def start(self) -> None:
        self.since = self.kernel.mark()
        if self.mode == "awaited":
            self.cell = self.kernel.execute(f"result = await {WRITE}\n{REPORT}")
        else:
            self.kernel.run(f"task = asyncio.create_task({WRITE})")

    def finish(self) -> str:
        if self.mode == "awaited":
            self.kernel.pump_until(lambda: self.cell.idle)
            assert not self.cell.error, self.cell.error
            return self.cell.stdout
        return self.kernel.run(f"result = await task\n{REPORT}").stdout


@pytest.fixture(params=["awaited", "background"])
def agent(request: pytest.FixtureRequest, kernel: KernelSession, project: Path) -> Agent:
    return Agent(kernel, request.param)


def test_approve_click_commits_the_change(
    kernel: KernelSession, project: Path, agent: Agent
) -> None:
    agent.start()
    kernel.send_from_page(kernel.wait_for_card(agent.since), "approve")
    output = agent.finish()
    assert output.startswith("OK")
    assert (project / "README.md").read_text() == "# Proposed\n"
    event = last_event(project)
    assert (event["decision"], event["outcome"]) == ("proceed", "ok")
    assert event["decided_by"].endswith("(notebook)")


def test_modify_click_commits_the_edited_content(
    kernel: KernelSession, project: Path, agent: Agent
) -> None:
    agent.start()
    card = kernel.wait_for_card(agent.since)
    kernel.send_from_page(card, "load", what="editors")
    editors = kernel.wait_for_reply(card, "loaded", "editors")
    assert editors["files"] == [{"path": "README.md", "label": "README.md", "text": "# Proposed\n"}]
    kernel.send_from_page(card, "modify", files={"README.md": "# Edited by a person\n"})
    output = agent.finish()
    assert output.startswith("OK")
    assert "a person edited the proposed content of README.md" in output
    assert (project / "README.md").read_text() == "# Edited by a person\n"
    assert last_event(project)["decision"] == "modify"


def test_deny_click_passes_the_reason_to_the_result(
    kernel: KernelSession, project: Path, agent: Agent
) -> None:
    agent.start()
    kernel.send_from_page(kernel.wait_for_card(agent.since), "deny", reason="the title must stay")
    output = agent.finish()
    assert output.startswith("FAILED")
    assert "the title must stay" in output
    assert (project / "README.md").read_text() == "# Original\n"
    event = last_event(project)
    assert (event["decision"], event["outcome"]) == ("deny", "denied")


def test_the_card_closes_into_its_record_after_the_decision(
    kernel: KernelSession, project: Path
) -> None:
    agent = Agent(kernel, "awaited")
    agent.start()
    card = kernel.wait_for_card(agent.since)
    kernel.send_from_page(card, "load", what="full-diff")
    full = kernel.wait_for_reply(card, "loaded", "full-diff")
    assert "# Proposed" in full["side-by-side"]["html"]
    kernel.send_from_page(card, "approve")
    agent.finish()
    kernel.pump_until(lambda: card.state.get("closed") is True)
    assert "Approved" in card.state["record"]


def test_click_reaches_an_agent_awaited_on_a_subshell(kernel: KernelSession, project: Path) -> None:
    if not kernel.supports_subshells:
        pytest.skip("this ipykernel has no subshells (they came with ipykernel 7)")
    subshell = kernel.create_subshell()
    since = kernel.mark()
    cell = kernel.execute(f"result = await {WRITE}\n{REPORT}", subshell_id=subshell)
    kernel.send_from_page(kernel.wait_for_card(since), "approve", subshell_id=subshell)
    kernel.pump_until(lambda: cell.idle)
    assert cell.stdout.startswith("OK"), cell.error
    assert (project / "README.md").read_text() == "# Proposed\n"


def test_click_reaches_an_agent_in_a_worker_thread(kernel: KernelSession, project: Path) -> None:
    since = kernel.mark()
    kernel.run(
        "outcome = {}\n"
        f"worker = threading.Thread(target=lambda: outcome.update(r=asyncio.run({WRITE})))\n"
        "worker.start()"
    )
    card = kernel.wait_for_card(since)
    kernel.send_from_page(card, "approve")
    # The click is handled on the main thread; joining there before it is would
    # leave the click queued behind the join (the hook then rightly gives up).
    kernel.pump_until(lambda: card.state.get("closed") is True)
    output = kernel.run("worker.join(10)\nresult = outcome['r']\n" + REPORT).stdout
    assert output.startswith("OK")
    assert (project / "README.md").read_text() == "# Proposed\n"


def test_a_blocked_main_thread_ends_the_wait_with_the_default(
    kernel: KernelSession, project: Path
) -> None:
    output = kernel.run(
        "outcome = {}\n"
        f"worker = threading.Thread(target=lambda: outcome.update(r=asyncio.run({WRITE})))\n"
        "worker.start()\n"
        "worker.join(20)\n"
        "result = outcome['r']\n" + REPORT
    ).stdout
    assert output.startswith("FAILED")
    assert "main thread was busy" in output
    assert (project / "README.md").read_text() == "# Original\n"


def test_a_synchronous_wait_on_the_kernel_thread_does_not_hang(
    kernel: KernelSession, project: Path
) -> None:
    output = kernel.run(
        "from tinyagent_fs.hooks.decision import Risk, ToolCall\n"
        "decision = hook.decide(ToolCall('run_command', {'command': 'ls'}, Risk.EXECUTE))\n"
        "print(decision.verdict.value, decision.message)"
    ).stdout
    assert output.startswith("deny")
    assert "cannot receive a click" in output


def test_without_a_frontend_the_environment_policy_decides(
    kernel: KernelSession, project: Path
) -> None:
    cell = kernel.run(
        "os.environ['TINYAGENT_FS_POLICY'] = 'auto-approve'\n"
        "headless = JupyterHook()\n"
        "del os.environ['TINYAGENT_FS_POLICY']\n"
        "print(headless.describe())\n"
        "fs = FileTools(root, provider=LocalProvider(), hooks=[headless], audit=False)\n"
        f"result = await {WRITE}\n" + REPORT
    )
    assert "auto-approve policy decides every call" in cell.stdout
    assert "OK" in cell.stdout
    plain = [output.get("text/plain", "") for output in cell.outputs]
    assert any("allowed by auto-approve" in text and "+# Proposed" in text for text in plain)
    refusing = kernel.run("print(JupyterHook().describe())").stdout
    assert "no widget frontend is attached" in refusing


def test_a_widget_frontend_is_recognised_by_its_control_comm(
    kernel: KernelSession, project: Path
) -> None:
    kernel.open_control_comm()
    kernel.pump_until(lambda: "True" in kernel.run("print(JupyterHook().mode.interactive)").stdout)
