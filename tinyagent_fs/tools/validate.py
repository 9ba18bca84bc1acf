"""Argument validation against a tool's JSON Schema (the subset our schemas use).

Errors name the argument and say what was expected, so a model can fix its call
in one retry. Defaults from the schema are filled in.
"""

from __future__ import annotations

from typing import Any

from ..errors import ErrorCode, ToolError

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def validate_arguments(tool: str, schema: dict[str, Any], args: Any) -> dict[str, Any]:
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise _invalid(tool, f"arguments must be a JSON object, got {type(args).__name__}")
    properties: dict[str, Any] = schema.get("properties", {})
    unknown = sorted(set(args) - set(properties))
    if unknown:
        raise _invalid(
            tool,
            f"unknown argument(s) {', '.join(unknown)}; "
            f"{tool} takes {', '.join(properties) or 'no arguments'}",
        )
    missing = [name for name in schema.get("required", []) if name not in args]
    if missing:
        raise _invalid(tool, f"missing required argument(s) {', '.join(missing)}")
    checked: dict[str, Any] = {}
    for name, prop in properties.items():
        if name in args:
            checked[name] = _check(tool, name, prop, args[name])
        elif "default" in prop:
            checked[name] = prop["default"]
    return checked


def _check(tool: str, where: str, prop: dict[str, Any], value: Any) -> Any:
    allowed = prop.get("type")
    kinds = allowed if isinstance(allowed, list) else [allowed] if allowed else []
    if kinds and not any(_is(value, kind) for kind in kinds):
        raise _invalid(tool, f"{where} must be {' or '.join(kinds)}, got {_describe(value)}")
    if "integer" in kinds and isinstance(value, float):
        value = int(value)
    if "enum" in prop and value not in prop["enum"]:
        raise _invalid(tool, f"{where} must be one of {prop['enum']}, got {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in prop and value < prop["minimum"]:
            raise _invalid(tool, f"{where} must be at least {prop['minimum']}, got {value}")
        if "maximum" in prop and value > prop["maximum"]:
            raise _invalid(tool, f"{where} must be at most {prop['maximum']}, got {value}")
    if isinstance(value, str) and len(value) < prop.get("minLength", 0):
        raise _invalid(tool, f"{where} must not be empty")
    if isinstance(value, list):
        if len(value) < prop.get("minItems", 0):
            raise _invalid(tool, f"{where} needs at least {prop['minItems']} item(s)")
        items = prop.get("items")
        if items:
            return [_check(tool, f"{where}[{i}]", items, v) for i, v in enumerate(value)]
    if isinstance(value, dict) and (
        "properties" in prop or isinstance(prop.get("additionalProperties"), dict)
    ):
        return _check_object(tool, where, prop, value)
    return value


def _check_object(tool: str, where: str, prop: dict[str, Any], value: dict[str, Any]) -> Any:
    properties = prop.get("properties", {})
    extra = prop.get("additionalProperties")
    if isinstance(extra, dict):
        return {key: _check(tool, f"{where}.{key}", extra, item) for key, item in value.items()}
    if prop.get("additionalProperties") is False:
        unknown = sorted(set(value) - set(properties))
        if unknown:
            raise _invalid(tool, f"{where} has unknown key(s) {', '.join(unknown)}")
    for name in prop.get("required", []):
        if name not in value:
            raise _invalid(tool, f"{where} is missing {name}")
    out = dict(value)
    for name, sub in properties.items():
        if name in value:
            out[name] = _check(tool, f"{where}.{name}", sub, value[name])
        elif "default" in sub:
            out[name] = sub["default"]
    return out


def _is(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return True
    return isinstance(value, _TYPES[kind])


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    return f"{type(value).__name__} {value!r}"[:80]


def _invalid(tool: str, message: str) -> ToolError:
    return ToolError(
        ErrorCode.INVALID_ARGUMENT,
        f"{tool}: {message}",
        "fix the arguments to match the tool's schema and call it again",
    )
