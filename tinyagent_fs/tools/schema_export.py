"""Tool schemas in the shapes agent loops expect: OpenAI, Anthropic, plain JSON Schema."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from .spec import ToolSpec

FORMATS = ("openai", "anthropic", "json")


def export_schemas(specs: Iterable[ToolSpec], fmt: str = "openai") -> list[dict[str, Any]]:
    if fmt not in FORMATS:
        raise ValueError(f"unknown schema format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return [_export(spec, fmt) for spec in specs]


def portable_schema(schema: Any) -> Any:
    """A copy of ``schema`` with ``"null"`` dropped from every type list.

    Nullable unions (``["integer", "null"]``) break older clients and draw
    portability warnings; an optional parameter is simply left out instead, so a
    ``null`` default goes too. The validator still takes an explicit null, so
    callers that send one keep working.
    """
    if isinstance(schema, list):
        return [portable_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return copy.deepcopy(schema)
    out = {key: portable_schema(value) for key, value in schema.items()}
    kinds = out.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        rest = [kind for kind in kinds if kind != "null"]
        out["type"] = rest[0] if len(rest) == 1 else rest
        if out.get("default", "") is None:
            del out["default"]
    return out


def _export(spec: ToolSpec, fmt: str) -> dict[str, Any]:
    parameters = portable_schema(spec.parameters)
    if fmt == "openai":
        return {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": parameters,
            },
        }
    if fmt == "anthropic":
        return {"name": spec.name, "description": spec.description, "input_schema": parameters}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": spec.name,
        "description": spec.description,
        **parameters,
        "x-risk": spec.risk.value,
        "x-read-only": spec.read_only,
        "x-idempotent": spec.idempotent,
    }
