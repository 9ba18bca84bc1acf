"""`make demo`: JupyterLab on the demo notebooks, a sample project beside them, the audit log open.

The lab gets settings and workspaces of its own (under build/demo-lab), so the
demo starts the same way every time and never touches a person's JupyterLab
settings: the audit sidebar opens on start, the tour notebook is the first
thing shown. The sample project is the one the terminal demo uses; agents in
the notebooks work on it (or on copies they make) inside the sandbox.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tinyagent_fs.demo import create_sample_project

REPO = Path(__file__).resolve().parent.parent
TOUR = "/lab/tree/notebooks/01_tour.ipynb"
SETTINGS = {
    "tinyagent-fs/plugin.jupyterlab-settings": {"openOnStart": True},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
}


def prepare(project: Path, state: Path) -> dict[str, str]:
    """Create the sample project and the lab's own settings; returns the environment to use."""
    if not project.exists():
        create_sample_project(project)
    settings = state / "settings"
    for relative, values in SETTINGS.items():
        path = settings / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values, indent=2) + "\n")
    (state / "workspaces").mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(state / "workspaces"),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=REPO / "demo-project")
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument(
        "--no-browser", action="store_true", help="print the URL instead of opening a browser"
    )
    args = parser.parse_args(argv)
    env = prepare(args.project.resolve(), REPO / "build" / "demo-lab")
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={REPO}",
        f"--LabApp.default_url={TOUR}",
        f"--port={args.port}",
    ]
    if args.no_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    print(f"Sample project: {args.project}\nStarting JupyterLab on {TOUR} ...", flush=True)
    os.execve(sys.executable, command, env)


if __name__ == "__main__":
    main()
