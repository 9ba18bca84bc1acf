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


def _export(spec: ToolSpec, fmt: str) -> dict[str, Any]:
    parameters = copy.deepcopy(spec.parameters)
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
