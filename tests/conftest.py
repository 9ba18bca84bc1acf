"""Shared fixtures: a sample project, an isolated audit log, a toolkit per provider."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tinyagent_fs import FileTools, SandboxPolicy
from tinyagent_fs._runtime import digest
from tinyagent_fs.audit.log import AuditLog
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.providers import LocalProvider
from tinyagent_fs.providers.linux import LinuxSandboxProvider

from .sandbox_support import check_sandbox

PROVIDERS = ["local", pytest.param("linux", marks=pytest.mark.sandbox)]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("sandbox") is not None:
        check_sandbox()


@pytest.fixture(autouse=True)
def isolated_audit_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """No test writes to the real per-user audit log."""
    directory = tmp_path_factory.mktemp("audit")
    monkeypatch.setenv("TINYAGENT_FS_AUDIT_DIR", str(directory))
    monkeypatch.setenv("TINYAGENT_FS_JOURNAL_DIR", str(directory / "journal"))
    return directory


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "pkg" / "__init__.py").write_text("")
    (root / "src" / "pkg" / "core.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    )
    (root / "docs" / "guide.md").write_text("# Guide\n\nUse add() to add.\n")
    (root / "README.md").write_text("# Sample\n")
    (root / ".env").write_text("SECRET=1\n")
    return root


def make_provider(name: str, root: Path):
    if name == "local":
        return LocalProvider()
    if name == "linux":
        return LinuxSandboxProvider(root.resolve(), SandboxPolicy())
    raise AssertionError(f"unknown provider {name}")


@pytest.fixture(params=PROVIDERS)
def provider_name(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def audit(tmp_path: Path) -> AuditLog:
    return AuditLog(tmp_path / "audit-log")


@pytest.fixture
async def fs(project: Path, provider_name: str, audit: AuditLog) -> AsyncIterator[FileTools]:
    tools = FileTools(
        project,
        provider=make_provider(provider_name, project),
        hooks=[AutoApprovePolicy()],
        audit=audit,
    )
    yield tools
    await tools.close()


def audit_events(audit: AuditLog) -> list[dict]:
    if not audit.path.exists():
        return []
    return [json.loads(line) for line in audit.path.read_text().splitlines()]


@pytest.fixture
def hashed_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every content the digest module hashes from now on (the real
    SHA-256 still does the hashing)."""
    hashed: list[int] = []
    real = digest._sha256

    def counted(data: bytes) -> str:
        hashed.append(len(data))
        return real(data)

    monkeypatch.setattr(digest, "_sha256", counted)
    return hashed
