"""Patch planning: parsing (Codex envelope, unified, git) and applying hunks."""
