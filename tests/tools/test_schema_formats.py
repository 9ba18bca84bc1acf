"""fs.tool_schemas() in each format obeys that format's rules, checked by jsonschema.

The rules are the ones the providers enforce when a request is sent: OpenAI's
function tools (name pattern, description length, an object schema at the top
without combinators), Anthropic's tools (name, description, input_schema) and
JSON Schema 2020-12 validity for every parameters object. A schema that breaks
them fails at the provider, in the middle of someone's session; here it fails
in CI instead.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import Risk
from tinyagent_fs.tools.registry import tool_table
from tinyagent_fs.tools.validate import validate_arguments

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
OPENAI_DESCRIPTION_LIMIT = 1024
TOP_LEVEL_FORBIDDEN = ("oneOf", "anyOf", "allOf", "not", "enum")
Validator = jsonschema.Draft202012Validator


@pytest.fixture
def fs(project: Path) -> FileTools:
    return FileTools(project, audit=False, journal=False)


def check_parameters(parameters: dict[str, Any]) -> None:
    """Valid 2020-12 schema, an object at the top, required names declared, defaults valid."""
    Validator.check_schema(parameters)
    assert parameters["type"] == "object"
    assert not [k for k in TOP_LEVEL_FORBIDDEN if k in parameters]
    for node in subschemas(parameters):
        properties = node.get("properties", {})
        assert set(node.get("required", [])) <= set(properties)
        for name, prop in properties.items():
            assert prop.get("description"), f"{name} has no description"
            if "default" in prop:
                assert Validator(prop).is_valid(prop["default"]), f"default of {name}"


def subschemas(schema: dict[str, Any]) -> list[dict[str, Any]]:
    found = [schema]
    for prop in schema.get("properties", {}).values():
        found += subschemas(prop)
    if isinstance(schema.get("items"), dict):
        found += subschemas(schema["items"])
    return found


def test_openai_format_is_function_tools_the_api_accepts(fs: FileTools) -> None:
    exported = fs.tool_schemas("openai")
    assert len(exported) == len(fs.tool_names())
    for entry in exported:
        assert set(entry) == {"type", "function"}
        assert entry["type"] == "function"
        function = entry["function"]
        assert set(function) == {"name", "description", "parameters"}
        assert NAME.fullmatch(function["name"])
        assert 0 < len(function["description"]) <= OPENAI_DESCRIPTION_LIMIT
        check_parameters(function["parameters"])


def test_anthropic_format_has_name_description_and_input_schema(fs: FileTools) -> None:
    for entry in fs.tool_schemas("anthropic"):
        assert set(entry) == {"name", "description", "input_schema"}
        assert NAME.fullmatch(entry["name"])
        assert entry["description"].strip()
        check_parameters(entry["input_schema"])


def test_json_format_is_a_self_describing_2020_12_schema(fs: FileTools) -> None:
    risks = {risk.value for risk in Risk}
    for entry in fs.tool_schemas("json"):
        assert entry["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        Validator.check_schema(entry)
        spec = fs.tools[entry["title"]]
        assert entry["description"] == spec.description
        assert entry["x-risk"] in risks
        assert entry["x-read-only"] is (entry["x-risk"] == "read")
        assert entry["x-idempotent"] is spec.idempotent


def test_formats_carry_the_same_names_in_registry_order(fs: FileTools) -> None:
    names = fs.tool_names()
    assert [e["function"]["name"] for e in fs.tool_schemas("openai")] == names
    assert [e["name"] for e in fs.tool_schemas("anthropic")] == names
    assert [e["title"] for e in fs.tool_schemas("json")] == names
    assert len(set(names)) == len(names)


def test_exported_schemas_are_copies_a_caller_cannot_corrupt(fs: FileTools) -> None:
    fs.tool_schemas("openai")[0]["function"]["parameters"]["properties"].clear()
    assert fs.tool_schemas("openai")[0]["function"]["parameters"]["properties"]


def test_an_unknown_format_is_a_clear_error(fs: FileTools) -> None:
    with pytest.raises(ValueError, match="openai, anthropic, json"):
        fs.tool_schemas("gemini")


@pytest.mark.parametrize("name", sorted(tool_table()))
def test_schema_defaults_are_what_our_validator_fills_in(name: str) -> None:
    """What a model is told is the default is what the tool gets when it leaves it out."""
    spec = tool_table()[name]
    properties = spec.parameters["properties"]
    required = {key: _example(properties[key]) for key in spec.parameters.get("required", [])}
    filled = validate_arguments(name, spec.parameters, required)
    for key, prop in properties.items():
        if "default" in prop:
            assert filled[key] == prop["default"]
    assert Validator(spec.parameters).is_valid(filled)


def _example(prop: dict[str, Any]) -> Any:
    """A smallest value that the property's schema accepts."""
    kind = prop["type"][0] if isinstance(prop["type"], list) else prop["type"]
    if kind == "array":
        return [_example(prop["items"])] * prop.get("minItems", 1)
    if kind == "object":
        return {key: _example(prop["properties"][key]) for key in prop.get("required", [])}
    return {"string": "x", "integer": prop.get("minimum", 1), "boolean": False}[kind]


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "json"])
def test_no_format_exports_a_nullable_union(fs: FileTools, fmt: str) -> None:
    """Older clients reject ``["integer", "null"]``: an optional parameter is just optional."""
    assert any('"null"' in json.dumps(spec.parameters) for spec in fs.tools.values())
    assert '"null"' not in json.dumps(fs.tool_schemas(fmt))


async def test_an_explicit_null_for_an_optional_parameter_still_works(fs: FileTools) -> None:
    """Callers built against the old nullable schema keep working."""
    result = await fs.call("read_file", {"path": "README.md", "limit": None})
    assert result.ok, result.text
