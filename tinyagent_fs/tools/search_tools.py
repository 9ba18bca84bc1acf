"""Tools that find things: list_directory, glob, grep."""

from __future__ import annotations

from itertools import compress
from typing import Any

from ..hooks.decision import Risk
from ..ops import dir_entries as entry
from ..ops.packed_paths import unpack_paths
from ..result import ToolResult
from .context import ToolContext
from .spec import PathIntent, ToolSpec, boolean, integer, schema, string


def _search_args(ctx: ToolContext) -> dict[str, Any]:
    return {"root": str(ctx.root), "denied_patterns": list(ctx.policy.denied_patterns)}


async def list_directory(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    path = ctx.resolve(args["path"])
    base = ctx.relative(path)
    listing = await ctx.provider.call(
        "list_tree",
        path=str(path),
        start=base,
        depth=args["depth"],
        include_hidden=args["include_hidden"],
        limit=args["limit"],
        sizes=args["sizes"],
        **_search_args(ctx),
    )
    paths = unpack_paths(listing["paths"])
    types = listing["types"]
    lines = _tree_lines(base, listing["paths"], types, nested=args["depth"] > 1)
    if "sizes" in listing:
        lines = [
            line if size is None else f"{line}  ({size:,} bytes)"
            for line, size in zip(lines, listing["sizes"], strict=True)
        ]
    if listing["omitted"]:
        more = "at least " if listing.get("omitted_is_lower_bound") else ""
        lines.append(
            f"[... {more}{listing['omitted']} more entries not shown; "
            "raise limit or list a subdirectory]"
        )
    header = f"{base}/ ({listing['total']} entries)" if paths else f"{base}/ is empty"
    data = {
        "path": base,
        "paths": paths,
        **{key: _of_kind(paths, types, kind) for key, kind in _KIND_KEYS},
        "ignored": listing["ignored"],
        "total": listing["total"],
        "omitted": listing["omitted"],
    }
    if "sizes" in listing:
        data["sizes"] = listing["sizes"]
    return ToolResult.success("\n".join([header, *lines]), data)


_KIND_KEYS = (
    ("directories", entry.DIRECTORY),
    ("symlinks", entry.SYMLINK),
    ("others", entry.OTHER),
)
"""The result lists the paths of each kind but files: one list of every path, and
these few short ones, cost a client far less to parse than a type per entry."""


def _tree_lines(base: str, packed: bytes, types: str, *, nested: bool) -> list[str]:
    """One line per entry: its name indented by depth, '/' after a directory, '@' after a link.

    ``packed`` paths all start with the listed directory: unpacked without it,
    a flat listing's lines are there at once, and only directories and links,
    found by ``str.find`` in ``types``, are touched one by one.
    """
    lines = unpack_paths(packed, "" if base == "." else base + "/")
    if nested:
        lines = ["  " * rel.count("/") + rel.rpartition("/")[2] for rel in lines]
    for kind, suffix in ((entry.DIRECTORY, "/"), (entry.SYMLINK, "@")):
        at = types.find(kind)
        while at >= 0:
            lines[at] += suffix
            at = types.find(kind, at + 1)
    return lines


def _of_kind(paths: list[str], types: str, kind: str) -> list[str]:
    return list(compress(paths, map(kind.__eq__, types))) if kind in types else []


async def glob(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    base = ctx.resolve(args["path"])
    found = await ctx.provider.call(
        "glob_files",
        base=str(base),
        pattern=args["pattern"],
        limit=args["limit"],
        **_search_args(ctx),
    )
    paths = unpack_paths(found["matches"])
    lines = list(paths)
    if found["omitted"]:
        lines.append(f"[... {found['omitted']} more files not shown; narrow the pattern]")
    if not paths:
        lines = [f"no files match {args['pattern']!r} under {ctx.relative(base)}/"]
    lines += too_deep_notes(found)
    return ToolResult.success(
        "\n".join(lines),
        {
            "pattern": args["pattern"],
            "matches": paths,
            "total": found["total"],
            "omitted": found["omitted"],
            "too_deep": found.get("too_deep", 0),
        },
    )


def too_deep_notes(found: dict[str, Any]) -> list[str]:
    """The line that tells the model a walk left deep folders out, when it did."""
    if not found.get("too_deep"):
        return []
    return [
        f"[{found['too_deep']} folder(s) more than {found['max_depth']} levels deep were not "
        f"searched, the first {found['too_deep_first']}; search inside them with a shallower "
        "path]"
    ]


async def grep(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    base = ctx.resolve(args["path"])
    found = await ctx.provider.call(
        "grep",
        base=str(base),
        pattern=args["pattern"],
        include=args["include"],
        literal=args["literal"],
        case_sensitive=args["case_sensitive"],
        context=args["context"],
        limit=args["limit"],
        **_search_args(ctx),
    )
    lines = []
    for match in found["matches"]:
        separator = ":" if match["kind"] == "match" else "-"
        lines.append(f"{match['path']}{separator}{match['line']}{separator}{match['text']}")
    if found["truncated"]:
        lines.append(
            f"[... stopped after {args['limit']} matching lines; narrow the pattern, "
            "set include, or search a subdirectory]"
        )
    if not found["matches"]:
        lines = [f"no matches for {args['pattern']!r} under {ctx.relative(base)}"]
    lines += too_deep_notes(found)
    return ToolResult.success(
        "\n".join(lines),
        {
            "matches": found["matches"],
            "match_count": found["match_count"],
            "files_with_matches": found["files_with_matches"],
            "truncated": found["truncated"],
            "backend": found["backend"],
            "too_deep": found.get("too_deep", 0),
        },
    )


DIRECTORY = string("Directory relative to the project root.")

SEARCH_TOOLS = (
    ToolSpec(
        name="list_directory",
        description=(
            "List a directory as a tree, sorted by name, directories marked with '/'. "
            "depth=1 shows direct children only. Hidden entries (starting with '.') are "
            "left out unless include_hidden is true; secrets are never shown. At most "
            "`limit` entries; a marker says how many were left out. sizes=true adds "
            "each file's size in bytes."
        ),
        parameters=schema(
            {
                "path": {**DIRECTORY, "default": "."},
                "depth": integer("How many levels to show.", 1, minimum=1, maximum=20),
                "include_hidden": boolean("Show dot-files and dot-directories.", False),
                "limit": integer("Maximum entries to show.", 200, minimum=1, maximum=5000),
                "sizes": boolean("Show each file's size in bytes.", False),
            }
        ),
        risk=Risk.READ,
        run=list_directory,
        path_arguments={"path": PathIntent.READ},
        idempotent=True,
    ),
    ToolSpec(
        name="glob",
        description=(
            "Find files by name pattern, e.g. '**/*.py' or 'src/*.ts' ('**' spans "
            "directories). Files changed in the last 24 hours come first (newest first), "
            "then the rest alphabetically. Files ignored by .gitignore or .tinyagentignore "
            "are not listed. Use grep to search inside files."
        ),
        parameters=schema(
            {
                "pattern": string("Glob pattern relative to path.", minLength=1),
                "path": {**DIRECTORY, "default": "."},
                "limit": integer("Maximum files to return.", 500, minimum=1, maximum=10000),
            },
            ("pattern",),
        ),
        risk=Risk.READ,
        run=glob,
        path_arguments={"path": PathIntent.READ},
        idempotent=True,
    ),
    ToolSpec(
        name="grep",
        description=(
            "Search file contents with a regular expression (Rust/ripgrep syntax: no "
            "look-around or backreferences) or a literal string, printing 'path:line:text' "
            "(context lines use '-'). Respects .gitignore and .tinyagentignore; binary files "
            "are skipped. If the regex is invalid, fix it or set literal=true. Narrow big "
            "result sets with include (e.g. '*.py') or a smaller path."
        ),
        parameters=schema(
            {
                "pattern": string("Regular expression (or text when literal).", minLength=1),
                "path": {**string("File or directory to search."), "default": "."},
                "include": {
                    "type": ["string", "null"],
                    "description": "Only search files matching this glob, e.g. '*.py'.",
                    "default": None,
                },
                "literal": boolean("Treat pattern as plain text, not a regex.", False),
                "case_sensitive": boolean("Match case exactly.", True),
                "context": integer("Lines of context around each match.", 0, minimum=0, maximum=20),
                "limit": integer("Maximum matching lines.", 200, minimum=1, maximum=5000),
            },
            ("pattern",),
        ),
        risk=Risk.READ,
        run=grep,
        path_arguments={"path": PathIntent.READ},
        idempotent=True,
    ),
)
