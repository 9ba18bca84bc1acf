"""Tools describe themselves: every registered spec declares its paths, and what review,
trust and the facade need comes from the spec, never from a list of tool names."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.changes.changeset import ChangeKind, ChangeSet, FileChange
from tinyagent_fs.hooks.decision import Risk
from tinyagent_fs.hooks.policies import RiskBasedPolicy
from tinyagent_fs.hooks.web import WebApprovalHook
from tinyagent_fs.providers import LocalProvider
from tinyagent_fs.result import ToolResult
from tinyagent_fs.tools.registry import ALL_TOOLS, tool_table
from tinyagent_fs.tools.spec import PathIntent, ToolSpec, schema, string
from tinyagent_fs.ui import JupyterHook

NOT_PATHS = {
    "pattern": "a glob or search pattern, applied under the path argument",
    "include": "a glob that filters file names",
    "file_types": "file extensions",
    "content": "file text",
    "old_string": "file text",
    "new_string": "file text",
    "old_content": "file text",
    "new_content": "file text",
    "patch": "a patch; its planner guards every file it names",
    "change_id": "an undo journal entry's id",
    "command": "a shell command; its workdir is the path",
    "cmd": "a shell command; its workdir is the path",
    "chars": "text typed into a session",
    "session_id": "a session's id",
}
"""String arguments that are not paths, and what they are instead."""


def _types(prop: dict[str, Any]) -> set[str]:
    kind = prop.get("type")
    return set(kind) if isinstance(kind, list) else {kind}


def _holds_strings(prop: dict[str, Any]) -> bool:
    kinds = _types(prop)
    return "string" in kinds or ("array" in kinds and _types(prop.get("items", {})) == {"string"})


@pytest.mark.parametrize("spec", ALL_TOOLS, ids=lambda spec: spec.name)
def test_every_string_argument_is_a_declared_path_or_known_not_to_be_one(spec: ToolSpec) -> None:
    properties = spec.parameters["properties"]
    assert set(spec.path_arguments) <= set(properties), "a declared path is no argument"
    for name, prop in properties.items():
        if not _holds_strings(prop):
            continue
        declared = name in spec.path_arguments
        assert declared != (name in NOT_PATHS), (
            f"{spec.name}.{name}: declare it in path_arguments or say in NOT_PATHS why not"
        )
    if spec.read_only:
        assert set(spec.path_arguments.values()) <= {PathIntent.READ}


def test_a_list_argument_names_each_of_its_paths() -> None:
    named = tool_table()["read_many_files"].paths({"paths": ["a.txt", "src/*.py"]})
    assert [(n.argument, n.path, n.intent) for n in named] == [
        ("paths", "a.txt", PathIntent.READ),
        ("paths", "src/*.py", PathIntent.READ),
    ]
    copy = tool_table()["copy_path"].paths({"src": "a", "dst": "b", "overwrite": True})
    assert [(n.path, n.intent) for n in copy] == [("a", PathIntent.READ), ("b", PathIntent.WRITE)]


SHRED = ToolSpec(
    name="shred_file",
    description="Overwrite a file and delete it.",
    parameters=schema({"target": string("File to shred.")}, ("target",)),
    risk=Risk.WRITE,
    path_arguments={"target": PathIntent.WRITE},
    never_trusted="shredding always asks and cannot be trusted for the session",
)
"""A tool no surface has heard of: review must follow what its spec declares."""


def test_a_new_tool_is_reviewed_by_what_its_spec_declares(tmp_path: Path) -> None:
    change = FileChange(ChangeKind.DELETE, tmp_path / "x.txt", b"x\n", None)
    changeset = ChangeSet(SHRED.name, (change,), tmp_path)
    call = SHRED.review_call({"target": "x.txt"}, changeset=changeset, call_id="s1")
    assert call.paths == ("x.txt",) and call.command_line is None

    hook = JupyterHook("risk-based", 0, "deny", frontend="widgets", container=widgets.VBox())
    card = hook._open(call, None).card
    assert card.widget.trust == {}
    assert "shredding always asks" in card.widget.heading
    proposal = WebApprovalHook(session_id="s")._proposal(call)
    assert proposal["can_trust"] is False

    policy = RiskBasedPolicy()
    policy.trust_tool(SHRED.name)
    policy.trust_path("x.txt")
    assert not policy.is_trusted(call)
    trustable = ToolSpec(SHRED.name, SHRED.description, SHRED.parameters, Risk.WRITE)
    assert policy.is_trusted(trustable.review_call({"target": "x.txt"}, changeset=changeset))


# --- the facade: a method for every tool, with the schema's parameters ----------------


def _sample(name: str, prop: dict[str, Any]) -> Any:
    """A value for ``name`` that differs from its default, so forwarding it shows."""
    kinds = _types(prop) - {"null"}
    if "boolean" in kinds:
        return not prop.get("default", False)
    if "integer" in kinds:
        return prop.get("minimum", 0) + 7
    if "number" in kinds:
        return 7.5
    if "array" in kinds:
        return [f"{name}-item"]
    if "object" in kinds:
        return {"KEY": f"{name}-value"}
    return f"{name}-value"


def _facade_parameters(name: str) -> list[inspect.Parameter]:
    method = getattr(FileTools, name, None)
    assert method is not None, f"FileTools has no method for the tool {name}"
    assert inspect.iscoroutinefunction(method)
    return list(inspect.signature(method).parameters.values())[1:]


@pytest.mark.parametrize("spec", ALL_TOOLS, ids=lambda spec: spec.name)
def test_every_tool_has_a_facade_method_with_its_schemas_parameters(spec: ToolSpec) -> None:
    properties = spec.parameters["properties"]
    required = set(spec.parameters["required"])
    parameters = _facade_parameters(spec.name)
    assert [p.name for p in parameters] == list(properties)
    for parameter in parameters:
        if parameter.name in required:
            assert parameter.default is inspect.Parameter.empty, parameter.name
        else:
            expected = properties[parameter.name].get("default")
            assert parameter.default == expected, f"{spec.name}({parameter.name}=...)"


class _Forwarded(FileTools):
    """FileTools whose one entry point keeps what each method hands it, to check that
    every method forwards every argument (the pipeline's own tests cover the rest)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, provider=LocalProvider(), audit=False, journal=False)
        self.seen: list[tuple[str, dict[str, Any]]] = []

    async def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        self.seen.append((name, dict(args or {})))
        return ToolResult.success("")


@pytest.mark.parametrize("spec", ALL_TOOLS, ids=lambda spec: spec.name)
async def test_every_facade_method_forwards_every_argument(spec: ToolSpec, tmp_path: Path) -> None:
    fs = _Forwarded(tmp_path)
    given = {name: _sample(name, prop) for name, prop in spec.parameters["properties"].items()}
    await getattr(fs, spec.name)(**given)
    await fs.close()
    assert fs.seen == [(spec.name, given)]
