"""MCP's two protocol eras as this server speaks them, in the shapes the MCP SDK uses.

Handshake era (2024-11-05 to 2025-11-25): ``initialize`` negotiates a version
once per connection, then ``notifications/initialized``; server-to-client
requests (elicitation, roots) are ordinary JSON-RPC requests.

2026-07-28: no handshake. Every request carries its version, client info and
client capabilities in ``params._meta``; ``server/discover`` replaces
``initialize``; results say ``resultType`` and carry the server's identity in
``_meta``; the server never sends requests, it answers ``input_required`` with
the questions instead and the client retries with the answers.

The first request a client sends decides the era of its connection, as the SDK
decides it: an enveloped request other than ``initialize`` opens a 2026-07-28
connection, anything else a handshake one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .wire import INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION, JsonRpcError

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
LATEST_HANDSHAKE_VERSION = HANDSHAKE_VERSIONS[-1]

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

CACHE_HINT = {"ttlMs": 0, "cacheScope": "private"}
"""Tool lists and discovery may change (the served roots can): never reuse them unasked."""


def negotiate(requested: Any) -> str:
    """The handshake version to answer ``initialize`` with: the client's, or our newest."""
    return requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION


def opens_modern_era(method: str, params: dict[str, Any] | None) -> bool:
    """Whether a connection's first request is a 2026-07-28 one (the version key is the sign)."""
    if method == "initialize" or not params:
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


@dataclass(frozen=True)
class Envelope:
    """What a 2026-07-28 request says about its client."""

    protocol_version: str
    client_capabilities: dict[str, Any]


def read_envelope(params: dict[str, Any] | None) -> Envelope:
    """The request's envelope, or the error the SDK gives for a missing or unsupported one."""
    meta = (params or {}).get("_meta")
    if not isinstance(meta, dict):
        raise JsonRpcError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying the required {PROTOCOL_VERSION_KEY!r} "
            f"and {CLIENT_CAPABILITIES_KEY!r} envelope keys",
        )
    missing = [key for key in (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY) if key not in meta]
    if missing:
        raise JsonRpcError(
            INVALID_PARAMS,
            f"params._meta is missing the required envelope key(s): {', '.join(missing)}",
        )
    version = meta[PROTOCOL_VERSION_KEY]
    if not isinstance(version, str):
        raise JsonRpcError(INVALID_PARAMS, "the protocol-version envelope value must be a string")
    if version not in MODERN_VERSIONS:
        raise JsonRpcError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(MODERN_VERSIONS), "requested": version},
        )
    capabilities = meta[CLIENT_CAPABILITIES_KEY]
    return Envelope(version, capabilities if isinstance(capabilities, dict) else {})


def initialize_refused_on_modern(params: dict[str, Any] | None) -> JsonRpcError:
    """``initialize`` on a connection that opened in the 2026-07-28 era."""
    requested = (params or {}).get("protocolVersion")
    data: dict[str, Any] = {"supported": list(MODERN_VERSIONS)}
    if isinstance(requested, str):
        data["requested"] = requested
    return JsonRpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted",
        data,
    )


def modern_result(
    result: dict[str, Any], server_info: dict[str, Any], *, cacheable: bool = False
) -> dict[str, Any]:
    """``result`` with the 2026-07-28 envelope: cache hints, ``resultType``, server identity."""
    shaped = {**CACHE_HINT, **result} if cacheable else dict(result)
    shaped.setdefault("resultType", "complete")
    shaped["_meta"] = {SERVER_INFO_KEY: dict(server_info)}
    return shaped


def supports_form_elicitation(capabilities: dict[str, Any]) -> bool:
    """An elicitation capability naming neither mode means form (the 2025-06-18 shape)."""
    elicitation = capabilities.get("elicitation")
    if not isinstance(elicitation, dict):
        return False
    return "form" in elicitation or "url" not in elicitation


def supports_roots(capabilities: dict[str, Any]) -> bool:
    return isinstance(capabilities.get("roots"), dict)
