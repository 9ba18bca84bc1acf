"""The Binder environment, rebuilt in a fresh virtualenv: the wheel brings its extensions.

The wheel is built once; the virtualenv installs binder/requirements.txt (pinned
by binder/constraints.txt) with the line that names this repository
(``.[jupyter]``) pointed at that wheel, and with no node on PATH, which is what a
user of the published wheel has. Then binder/postBuild runs as repo2docker would
run it, and JupyterLab is started from the new environment to check what a Binder
visitor would see.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.jupyter_process import JupyterProcess, start_jupyter

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent.parent
BINDER = REPO / "binder"
LOCAL_PACKAGE_LINE = ".[jupyter]"
CONSTRAINTS_LINE = "-c constraints.txt"
TOUR = "/lab/tree/notebooks/01_tour.ipynb"


def run(command: list[str], env: dict[str, str] | None = None, cwd: Path = REPO) -> str:
    result = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{output[-4000:]}"
    return output


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheelhouse = tmp_path_factory.mktemp("wheelhouse")
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheelhouse), "."])
    (built,) = wheelhouse.glob("tinyagent_fs-*.whl")
    return built


@dataclass
class BinderEnv:
    venv: Path
    env: dict[str, str]

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)


@pytest.fixture(scope="module")
def binder_env(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> BinderEnv:
    workdir = tmp_path_factory.mktemp("binder")
    venv = workdir / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    requirements = (BINDER / "requirements.txt").read_text().splitlines()
    assert LOCAL_PACKAGE_LINE in requirements, "binder/requirements.txt must install this repo"
    local = workdir / "requirements.txt"
    assert CONSTRAINTS_LINE in requirements, "binder/requirements.txt must pin from the lock"
    replaced = {
        LOCAL_PACKAGE_LINE: "tinyagent-fs[jupyter]",
        CONSTRAINTS_LINE: f"-c {BINDER / 'constraints.txt'}",
    }
    local.write_text("\n".join(replaced.get(line.strip(), line) for line in requirements))
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("JUPYTER", "VIRTUAL_ENV", "PYTHON"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    no_node = {**env, "PATH": str(venv / "bin")}
    run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--find-links",
            str(wheel.parent),
            "-r",
            str(local),
        ],
        env=no_node,
    )
    run(["bash", str(BINDER / "postBuild")], env=env)
    return BinderEnv(venv, env)


def test_the_wheel_ships_the_prebuilt_extension_and_server_config(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    data = "tinyagent_fs-0.1.0.data/data/"
    lab = f"{data}share/jupyter/labextensions/tinyagent-fs/"
    assert f"{lab}package.json" in names
    assert f"{lab}install.json" in names
    assert f"{lab}schemas/tinyagent-fs/plugin.json" in names
    assert any(re.fullmatch(rf"{lab}static/remoteEntry\.[0-9a-f]+\.js", n) for n in names)
    assert f"{data}etc/jupyter/jupyter_server_config.d/tinyagent_fs.json" in names
    assert "tinyagent_fs/server/audit_event.schema.json" in names
    assert {"tinyagent_fs/ui/approval_card.js", "tinyagent_fs/ui/approval_card.css"} <= set(names)
    assert not any(n.startswith("tinyagent_fs/labextension/") for n in names), "shipped twice"
    built = json.loads(zipfile.ZipFile(wheel).read(f"{lab}package.json"))
    assert built["jupyterlab"]["_build"]["load"].startswith("static/remoteEntry.")


def test_both_extensions_are_enabled_in_the_binder_environment(binder_env: BinderEnv) -> None:
    lab = run([binder_env.bin("jupyter"), "labextension", "list"], env=binder_env.env)
    assert re.search(r"tinyagent-fs v0\.1\.0 \S*enabled\S* \S*OK", lab), lab
    assert re.search(r"anywidget v\S+ \S*enabled\S* \S*OK", lab), lab  # the approval card
    server = run([binder_env.bin("jupyter"), "server", "extension", "list"], env=binder_env.env)
    assert re.search(r"tinyagent_fs\.server \S*enabled", server), server
    assert re.search(r"tinyagent_fs\.server 0\.1\.0 \S*OK", server), server


@pytest.fixture(scope="module")
def binder_lab(
    binder_env: BinderEnv, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JupyterProcess]:
    root = tmp_path_factory.mktemp("binder-root")
    home = tmp_path_factory.mktemp("binder-home")
    (root / "notebooks").mkdir()
    (root / "notebooks" / "01_tour.ipynb").write_bytes(
        (REPO / "notebooks" / "01_tour.ipynb").read_bytes()
    )
    process = start_jupyter(
        "lab",
        root,
        home,
        python=binder_env.bin("python"),
        env={**binder_env.env, "TINYAGENT_FS_AUDIT_DIR": str(home / "audit")},
    )
    yield process
    process.stop()


def test_binder_opens_the_tour_with_the_audit_sidebar(binder_lab: JupyterProcess) -> None:
    status, _ = binder_lab.get("")
    assert status == 302
    location = binder_lab.redirect_location("")
    assert location.split("?")[0] == TOUR, location
    settings = binder_lab.get_json("lab/api/settings/tinyagent-fs:plugin")
    # overrides.json is applied by the server as new schema defaults
    assert settings["schema"]["properties"]["openOnStart"]["default"] is True
    assert binder_lab.get_json("tinyagent-fs/sessions")["total"] == 0
