"""The MCP server: JSON-RPC over stdio, roots, tools and approvals."""
