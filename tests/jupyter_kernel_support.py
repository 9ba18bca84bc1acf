"""A real ipykernel driven the way a notebook frontend drives it.

The kernel runs this test environment's Python. Widgets are found among the
``comm_open`` messages on IOPub. An approval card's page answers with one custom
``comm_msg`` carrying the decision and the whole form (``approval_card.js``),
and asks for more to show the same way; what the kernel sends back to the page
is kept with the widget (``WidgetModel.received``).
"""

from __future__ import annotations

import json
import os
import queue
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

KERNEL_NAME = "tinyagent-fs-test"
KERNEL_PYTHON_ENV = "TINYAGENT_FS_TEST_KERNEL_PYTHON"
"""Run the kernel under another interpreter (e.g. a venv with an older ipykernel)."""


@dataclass
class WidgetModel:
    comm_id: str
    model: str
    state: dict[str, Any]
    received: list[Any] = field(default_factory=list)


@dataclass
class Execution:
    msg_id: str
    stdout: str = ""
    outputs: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    idle: bool = False


class KernelSession:
    """One kernel, its client, and every widget model the kernel has opened."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        spec_dir = workdir / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        python = os.environ.get(KERNEL_PYTHON_ENV) or sys.executable
        argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        spec = {"argv": argv, "display_name": "tinyagent-fs tests", "language": "python"}
        (spec_dir / "kernel.json").write_text(json.dumps(spec))
        specs = KernelSpecManager(kernel_dirs=[str(workdir / "kernels")])
        self.manager = KernelManager(
            kernel_name=KERNEL_NAME,
            kernel_spec_manager=specs,
            transport="ipc",
            ip=str(workdir / "kernel-ipc"),
        )
        clean = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("TINYAGENT_FS_", "JPY_")) and k != "PYTEST_CURRENT_TEST"
        }
        self.manager.start_kernel(env={**clean, **env}, cwd=str(workdir))
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        info = self.client.kernel_info(reply=True, timeout=30)["content"]
        self.supports_subshells = "kernel subshells" in info.get("supported_features", [])
        self.models: dict[str, WidgetModel] = {}
        self.opened: list[str] = []
        self.executions: dict[str, Execution] = {}

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)

    def execute(self, code: str, subshell_id: str | None = None) -> Execution:
        """Send a cell without waiting for it to finish."""
        msg = self.client.session.msg(
            "execute_request",
            {"code": code, "silent": False, "store_history": False, "allow_stdin": False},
        )
        if subshell_id is not None:
            msg["header"]["subshell_id"] = subshell_id
        self.client.shell_channel.send(msg)
        execution = Execution(msg["header"]["msg_id"])
        self.executions[execution.msg_id] = execution
        return execution

    def run(self, code: str, timeout: float = 30) -> Execution:
        """Run a cell to its end; fail on an exception in it."""
        execution = self.execute(code)
        self.pump_until(lambda: execution.idle, timeout)
        assert not execution.error, execution.error
        return execution

    def create_subshell(self) -> str:
        self.client.control_channel.send(self.client.session.msg("create_subshell_request", {}))
        reply = self.client.control_channel.get_msg(timeout=10)
        return reply["content"]["subshell_id"]

    def pump_until(self, done: Any, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                outputs = {k: (e.stdout, e.error) for k, e in self.executions.items()}
                raise TimeoutError(f"kernel did not get there in {timeout} s: {outputs}")
            try:
                message = self.client.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                continue
            self._absorb(message)

    def _absorb(self, message: dict[str, Any]) -> None:
        kind, content = message["msg_type"], message["content"]
        if kind == "comm_open" and content.get("target_name") == "jupyter.widget":
            state = content["data"]["state"]
            self.models[content["comm_id"]] = WidgetModel(
                content["comm_id"], state.get("_model_name", ""), dict(state)
            )
            self.opened.append(content["comm_id"])
        elif kind == "comm_msg" and content["comm_id"] in self.models:
            data = content["data"]
            if data.get("method") in ("update", "echo_update"):
                self.models[content["comm_id"]].state.update(data.get("state", {}))
            elif data.get("method") == "custom":
                self.models[content["comm_id"]].received.append(data.get("content"))
        execution = self.executions.get(message["parent_header"].get("msg_id", ""))
        if execution is None:
            return
        if kind == "stream" and content["name"] == "stdout":
            execution.stdout += content["text"]
        elif kind in ("display_data", "execute_result"):
            execution.outputs.append(content["data"])
        elif kind == "error":
            execution.error = "\n".join(content["traceback"])
        elif kind == "status" and content["execution_state"] == "idle":
            execution.idle = True

    def mark(self) -> int:
        """A point in time: widgets opened after it are the ones a test is about."""
        while True:
            try:
                self._absorb(self.client.get_iopub_msg(timeout=0.05))
            except queue.Empty:
                return len(self.opened)

    def new_models(self, since: int, model: str, **state: Any) -> list[WidgetModel]:
        found = [self.models[comm_id] for comm_id in self.opened[since:]]
        return [
            m
            for m in found
            if m.model == model and all(m.state.get(k) == v for k, v in state.items())
        ]

    def wait_for(self, since: int, model: str, timeout: float = 30, **state: Any) -> WidgetModel:
        self.pump_until(lambda: bool(self.new_models(since, model, **state)), timeout)
        return self.new_models(since, model, **state)[-1]

    def wait_for_card(self, since: int) -> WidgetModel:
        """The approval card opened after ``since``."""
        return self.wait_for(since, "AnyModel")

    def send_from_page(
        self, card: WidgetModel, action: str, subshell_id: str | None = None, **form: Any
    ) -> None:
        """What the card's page sends: the action with the whole form."""
        content = {"action": action, "trust_path": False, "trust_tool": False, **form}
        self._comm_msg(card.comm_id, {"method": "custom", "content": content}, subshell_id)

    def wait_for_reply(self, card: WidgetModel, key: str, value: Any) -> dict[str, Any]:
        """The first message the kernel sent the card's page with ``key`` == ``value``."""

        def found() -> list[Any]:
            return [m for m in card.received if isinstance(m, dict) and m.get(key) == value]

        self.pump_until(lambda: bool(found()))
        return found()[0]

    def open_control_comm(self) -> None:
        """What JupyterLab's widget manager does when it connects to a kernel."""
        msg = self.client.session.msg(
            "comm_open",
            {"comm_id": uuid.uuid4().hex, "target_name": "jupyter.widget.control", "data": {}},
        )
        msg["metadata"] = {"version": "1.0.0"}
        self.client.shell_channel.send(msg)

    def _comm_msg(self, comm_id: str, data: dict[str, Any], subshell_id: str | None = None) -> None:
        msg = self.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        if subshell_id is not None:
            msg["header"]["subshell_id"] = subshell_id
        self.client.shell_channel.send(msg)
