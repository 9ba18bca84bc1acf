"""Notebook settings: ``c.TinyAgentFS.*`` in Jupyter config, environment, arguments.

One class holds every default. Later sources override earlier ones:

1. the trait defaults below;
2. ``jupyter_config.{json,py}`` and ``tinyagent_fs_config.{json,py}`` on Jupyter's
   config path (``jupyter --paths``), lowest to highest priority — the same
   ``jupyter_config`` file Jupyter Server reads, so one file configures both;
3. the running IPython's own config (``ipython_kernel_config.py``, profiles);
4. environment variables (``TINYAGENT_FS_POLICY`` and the others named in
   ``ENVIRONMENT``), so CI can switch a notebook to a non-interactive policy
   without touching it;
5. keyword arguments given in Python.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from traitlets import Enum, Float, Int, Unicode, validate
from traitlets.config import Config, Configurable
from traitlets.config.loader import ConfigFileNotFound, JSONFileConfigLoader, PyFileConfigLoader

from ..hooks.policies import POLICY_ENV, POLICY_NAMES

FRONTEND_ENV = "TINYAGENT_FS_FRONTEND"
TIMEOUT_ENV = "TINYAGENT_FS_APPROVAL_TIMEOUT"
CONFIG_FILE_NAMES = ("jupyter_config", "tinyagent_fs_config")
_LOADERS = ((JSONFileConfigLoader, ".json"), (PyFileConfigLoader, ".py"))


class TinyAgentFS(Configurable):
    """How the notebook approval widgets behave."""

    policy = Unicode(
        "risk-based",
        help=(
            "Who decides tool calls: 'risk-based' (reads proceed; writes, deletes and "
            "commands are put to a person through widgets), 'auto-approve' or 'deny-all' "
            f"(no questions). Overridden by ${POLICY_ENV}."
        ),
    ).tag(config=True)

    frontend = Enum(
        ["auto", "widgets", "none"],
        default_value="auto",
        help=(
            "Whether a person can click: 'widgets' always asks (you vouch that someone "
            "sees the cards), 'none' never asks (the risk-based policy then refuses "
            "writes), 'auto' asks inside a kernel started by Jupyter Server or one a "
            f"widget frontend has connected to. Overridden by ${FRONTEND_ENV}."
        ),
    ).tag(config=True)

    approval_timeout_s = Float(
        0.0,
        help=(
            "Seconds to wait for a click before default_on_timeout applies; 0 waits for "
            f"as long as it takes. Overridden by ${TIMEOUT_ENV}."
        ),
    ).tag(config=True)

    default_on_timeout = Enum(
        ["deny", "approve"],
        default_value="deny",
        help="What an approval that timed out (or could not be answered) becomes.",
    ).tag(config=True)

    sync_wait_s = Float(
        60.0,
        help=(
            "The longest a synchronous caller (a thread blocking on a decision) waits "
            "for a click, so a blocked kernel never hangs."
        ),
    ).tag(config=True)

    busy_kernel_grace_s = Float(
        5.0,
        help=(
            "How long the thread that delivers clicks may stay busy before waiting for "
            "a click is given up and default_on_timeout applies."
        ),
    ).tag(config=True)

    diff_preview_lines = Int(
        400, help="Diff lines shown before 'show all'; larger diffs are collapsed."
    ).tag(config=True)

    highlight_max_bytes = Int(
        256 * 1024, help="Files larger than this are shown without syntax colour."
    ).tag(config=True)

    @validate("policy")
    def _known_policy(self, proposal: dict[str, Any]) -> str:
        value = str(proposal["value"]).strip().lower()
        if value not in POLICY_NAMES:
            raise ValueError(f"unknown policy {value!r}; choose one of {', '.join(POLICY_NAMES)}")
        return value

    @property
    def timeout(self) -> float | None:
        """``approval_timeout_s`` as an optional number of seconds."""
        return self.approval_timeout_s if self.approval_timeout_s > 0 else None


ENVIRONMENT: dict[str, str] = {
    POLICY_ENV: "policy",
    FRONTEND_ENV: "frontend",
    TIMEOUT_ENV: "approval_timeout_s",
}


def load_settings(**overrides: Any) -> TinyAgentFS:
    """Settings from every source, highest priority last (see the module docstring).

    ``overrides`` whose value is None are ignored, so callers can pass optional
    arguments straight through.
    """
    config = Config()
    config.merge(_file_config())
    config.merge(_ipython_config())
    settings = TinyAgentFS(config=config)
    for variable, trait in ENVIRONMENT.items():
        raw = os.environ.get(variable, "").strip()
        if raw:
            setattr(settings, trait, _coerce(settings, trait, raw, variable))
    for trait, value in overrides.items():
        if value is not None:
            setattr(settings, trait, value)
    return settings


def _coerce(settings: TinyAgentFS, trait: str, raw: str, source: str) -> Any:
    if isinstance(settings.traits()[trait], Float):
        try:
            return float(raw)
        except ValueError as exc:
            raise ValueError(f"${source} must be a number of seconds, not {raw!r}") from exc
    return raw.lower()


def _file_config() -> Config:
    """``c.TinyAgentFS`` from Jupyter's config directories; other sections are dropped."""
    merged = Config()
    try:
        from jupyter_core.paths import jupyter_config_path
    except ImportError:
        return merged
    # jupyter_config_path lists the highest priority first.
    for directory in reversed(jupyter_config_path()):
        for name in CONFIG_FILE_NAMES:
            for loader_class, suffix in _LOADERS:
                if not (Path(directory) / f"{name}{suffix}").is_file():
                    continue
                try:
                    loaded = loader_class(f"{name}{suffix}", path=directory).load_config()
                except ConfigFileNotFound:
                    continue
                if "TinyAgentFS" in loaded:
                    merged.merge(Config({"TinyAgentFS": loaded.TinyAgentFS}))
    return merged


def _ipython_config() -> Config:
    try:
        from IPython import get_ipython
    except ImportError:
        return Config()
    shell = get_ipython()
    if shell is None or "TinyAgentFS" not in shell.config:
        return Config()
    return Config({"TinyAgentFS": shell.config.TinyAgentFS})
