"""The development environment is reproducible: the locks cover pyproject, warnings are ours.

`make test` installs from requirements/*.lock; these tests fail when pyproject.toml
asks for something the locks do not give (a range raised without `make lock`),
when a locked file lost its hash, and when the warning policy in pyproject.toml
stops telling our warnings (errors) from a dependency's (reported).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
import tomllib
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parent.parent.parent
LOCKS = [
    REPO / "requirements" / "build.lock",
    REPO / "requirements" / "dev.lock",
    REPO / "requirements" / "demo.lock",
]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?$")


def locked_entries(lock: Path) -> list[tuple[str, Version, Marker | None, list[str]]]:
    """Each pin of a lock with its marker and its hashes."""
    entries: list[tuple[str, Version, Marker | None, list[str]]] = []
    for line in lock.read_text().splitlines():
        if match := PIN.match(line):
            name, version, marker = match.groups()
            entries.append(
                (canonicalize_name(name), Version(version), Marker(marker) if marker else None, [])
            )
        elif line.strip().startswith("--hash=sha256:") and entries:
            entries[-1][3].append(line.strip().removeprefix("--hash=sha256:").rstrip(" \\"))
    return entries


def locked_here(lock: Path) -> dict[str, Version]:
    """The version each package gets on this interpreter and platform."""
    return {
        name: version
        for name, version, marker, _ in locked_entries(lock)
        if marker is None or marker.evaluate()
    }


def project_requirements() -> list[Requirement]:
    project = PYPROJECT["project"]
    lines = [*project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        lines.extend(extra)
    return [Requirement(line) for line in lines]


@pytest.mark.parametrize("lock", LOCKS, ids=lambda lock: lock.name)
def test_every_locked_package_has_a_pinned_version_and_hashes(lock: Path) -> None:
    entries = locked_entries(lock)
    assert len(entries) > 10, f"{lock} lists almost nothing"
    unhashed = [name for name, _, _, hashes in entries if not hashes]
    assert not unhashed, f"{lock} has pins without hashes: {unhashed}"
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for *_, hashes in entries for h in hashes)


def test_the_dev_lock_satisfies_every_requirement_of_the_package_and_its_extras() -> None:
    locked = locked_here(LOCKS[1])
    unmet = []
    for requirement in project_requirements():
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        version = locked.get(canonicalize_name(requirement.name))
        if version is None or not requirement.specifier.contains(version, prereleases=True):
            unmet.append(f"{requirement} (locked: {version})")
    assert not unmet, f"pyproject.toml asks for more than the lock gives; run `make lock`: {unmet}"


def test_the_build_lock_holds_the_build_system_and_agrees_with_the_dev_lock() -> None:
    build = locked_here(LOCKS[0])
    for line in PYPROJECT["build-system"]["requires"]:
        requirement = Requirement(line)
        version = build.get(canonicalize_name(requirement.name))
        assert version is not None and requirement.specifier.contains(version), line
    dev = locked_here(LOCKS[1])
    differ = {name: (v, dev[name]) for name, v in build.items() if dev.get(name) != v}
    assert not differ, f"the two locks pin these differently (run `make lock`): {differ}"


def test_binder_pins_what_the_dev_lock_pins() -> None:
    dev = {(name, str(marker)): version for name, version, marker, _ in locked_entries(LOCKS[1])}
    binder = locked_entries(REPO / "binder" / "constraints.txt")
    assert any(name == "jupyterlab" for name, *_ in binder)
    differ = [
        f"{name}=={version}"
        for name, version, marker, _ in binder
        if dev.get((name, str(marker))) != version
    ]
    assert not differ, f"binder/constraints.txt is not the dev lock (run `make lock`): {differ}"


def warn_from(module: str) -> None:
    """Raise a DeprecationWarning whose source is `module`, as a dependency's would be."""
    code = compile("warnings.warn('old API', DeprecationWarning)", f"{module}.py", "exec")
    exec(code, {"__name__": module, "warnings": warnings})


def test_a_warning_from_our_package_or_tests_is_an_error() -> None:
    for module in ("tinyagent_fs.tools.pipeline", "tests.dev.test_dev_environment"):
        with pytest.raises(DeprecationWarning):
            warn_from(module)


def test_a_warning_from_a_dependency_is_reported_not_raised() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warn_from("litellm.types")
        warn_from("tinyagent_fs_lookalike")
    assert [str(w.message) for w in caught] == ["old API", "old API"]


def test_a_leaked_resource_is_an_error_wherever_it_is_noticed() -> None:
    with pytest.raises(ResourceWarning):
        code = compile("warnings.warn('unclosed', ResourceWarning)", "dependency.py", "exec")
        exec(code, {"__name__": "some_dependency", "warnings": warnings})


def test_the_demo_lock_is_what_binder_needs_at_the_dev_locks_versions_and_hashes() -> None:
    dev = {(name, str(marker)): (v, set(h)) for name, v, marker, h in locked_entries(LOCKS[1])}
    demo = locked_entries(LOCKS[2])
    names = {name for name, *_ in demo}
    assert {"jupyterlab", "ipywidgets", "ipykernel"} <= names
    test_tools = {"pytest", "playwright", "hypothesis", "litellm", "ruff", "nbval", "mcp"}
    assert not names & test_tools, "the demo installs test tools"
    differ = [
        f"{name}=={version}"
        for name, version, marker, hashes in demo
        if dev.get((name, str(marker)), (None, set()))[0] != version
        or not set(hashes) <= dev[(name, str(marker))][1]
    ]
    assert not differ, f"requirements/demo.lock is not the dev lock (run `make lock`): {differ}"
