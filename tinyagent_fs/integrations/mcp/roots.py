"""Which folders the server serves, and which of them a tool call works in.

The server is started with one or more ``--root`` folders. A client with MCP
roots may narrow that set, never widen it: each client root is intersected
with the ``--root`` folders (a client root inside one is served as it is, one
that holds a ``--root`` folder serves that folder, one elsewhere is ignored).
An empty roots list says nothing and leaves the ``--root`` set as it is.

Each served folder has its own ``FileTools`` (its own guard, undo journal and
read state; one audit log, budget and provider for all), so the path guard of
exactly one folder checks every call: relative paths belong to the first
folder, absolute ones to the folder that holds them, and a call whose paths
lie in different folders, or outside all of them, is refused.

The provider's roots are exactly the served folders: when the set changes, the
next call gets a new provider (a new sandbox worker) made for the new set, so a
command sees no more than the file tools may touch; the old one is handed back
to be closed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ...errors import ErrorCode, ToolError
from ...providers.base import Provider
from ...tools.facade import FileTools
from ...tools.registry import tool_table

ProviderFactory = Callable[[Sequence[str]], Provider]
"""A provider whose roots are exactly these folders (the first is its root)."""
ToolkitFactory = Callable[[Path, Provider, Sequence[str]], FileTools]
"""A toolkit for one folder, on the provider made for all the served folders."""


def is_within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def directory_of_uri(uri: Any) -> str | None:
    """The real path of a ``file://`` root naming an existing folder, else None."""
    if not isinstance(uri, str):
        return None
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = unquote(parsed.path)
    if not path.startswith("/") or "\x00" in path:
        return None
    real = os.path.realpath(path)
    return real if os.path.isdir(real) else None


def narrowed(configured: Sequence[str], client_roots: Iterable[str]) -> list[str]:
    """The client's roots intersected with the configured ones, outermost kept, in client order.

    A client root below a folder that holds a ``.tinyagentignore`` is not served:
    a served folder reads only its own, so the person's denials above it would lapse.
    """
    served: list[str] = []
    for client in client_roots:
        for root in configured:
            if is_within(client, root) and ignore_file_above(root, client):
                continue
            if is_within(client, root):
                served.append(client)
            elif is_within(root, client):
                served.append(root)
    unique = list(dict.fromkeys(served))
    return [p for p in unique if not any(o != p and is_within(p, o) for o in unique)]


def ignore_file_above(root: str, folder: str) -> bool:
    """Whether ``root`` or a folder between it and ``folder`` holds a ``.tinyagentignore``."""
    current = root
    for name in os.path.relpath(folder, root).split(os.sep):
        if name in (".", "") or os.path.lexists(os.path.join(current, ".tinyagentignore")):
            return name not in (".", "")
        current = os.path.join(current, name)
    return False


TOOLS = tool_table()


def path_arguments(tool: str, args: dict[str, Any]) -> list[str]:
    """Every path a call names, as its tool declares them (none for an unknown tool)."""
    spec = TOOLS.get(tool)
    return [named.path for named in spec.paths(args)] if spec is not None else []


class ServedRoots:
    """The ``--root`` folders, what the client narrowed them to, and a toolkit for each."""

    def __init__(
        self,
        configured: Sequence[Path],
        make_provider: ProviderFactory,
        make_toolkit: ToolkitFactory,
    ) -> None:
        self._make_provider = make_provider
        self._make_toolkit = make_toolkit
        self._spellings: dict[str, str] = {}
        """Each ``--root`` as given (made absolute) -> its real path, for paths spelt so."""
        for given in configured:
            self._spellings[os.path.normpath(os.path.abspath(given))] = os.path.realpath(given)
        self.configured: tuple[str, ...] = tuple(dict.fromkeys(self._spellings.values()))
        self.served: tuple[str, ...] = self.configured
        self.provider = make_provider(self.served)
        self._toolkits: dict[str, FileTools] = {}
        for folder in self.configured:
            self._toolkit(folder)

    def narrow_to(self, client_uris: Sequence[Any]) -> Provider | None:
        """Serve what the client's roots allow; an empty list keeps the ``--root`` folders.

        Returns the provider that served the old set when the set changed: the
        caller closes it (a command still running on it ends with it).
        """
        if not client_uris:
            served = self.configured
        else:
            folders = [d for uri in client_uris if (d := directory_of_uri(uri)) is not None]
            served = tuple(narrowed(self.configured, folders))
        if served == self.served:
            return None
        old, self.served, self._toolkits = self.provider, served, {}
        self.provider = self._make_provider(served or self.configured)
        return old

    def toolkit_for(self, tool: str, args: dict[str, Any]) -> FileTools:
        """The toolkit of the one served folder this call works in; a ToolError says why not."""
        if not self.served:
            raise ToolError(
                ErrorCode.PATH_OUTSIDE_ROOT,
                "none of the MCP client's roots lies inside the folders this server was "
                f"started with ({', '.join(self.configured)}), so no folder is served",
                "ask the person to add a folder inside one of them to the client's roots",
            )
        spec = TOOLS.get(tool)
        if spec is not None and spec.change_argument is not None:
            return self._journal_toolkit(args.get(spec.change_argument))
        chosen: str | None = None
        for raw in path_arguments(tool, args):
            folder = self._folder_of(raw)
            if chosen is not None and folder != chosen:
                raise ToolError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{tool} names paths in two served folders ({chosen} and {folder}); "
                    "one call works in one folder",
                    "split the call, or copy across folders with read_file and write_file",
                )
            chosen = folder
        return self._toolkit(chosen or self.served[0])

    def describe(self) -> str:
        first, *others = self.served or ("(none)",)
        text = f"Served folders:\n{first}  (relative paths start here)"
        return "\n".join([text, *others])

    def _folder_of(self, raw: str) -> str:
        if "\x00" in raw:  # no path holds one; matching it would fail in realpath
            raise ToolError(
                ErrorCode.NULL_BYTE,
                f"The path {raw[:200]!r} contains a NUL byte.",
                "Remove the NUL character (\\x00) from the path.",
            )
        if not raw.replace("\\", "/").startswith("/"):
            return self.served[0]
        lexical = os.path.normpath(raw)
        for spelling, real in self._spellings.items():
            if is_within(lexical, spelling):
                lexical = real + lexical[len(spelling) :]
                break
        for candidate in (lexical, os.path.realpath(lexical)):
            holders = [f for f in self.served if is_within(candidate, f)]
            if holders:
                return max(holders, key=len)
        shown = raw if len(raw) <= 200 else raw[:200] + "..."
        raise ToolError(
            ErrorCode.PATH_OUTSIDE_ROOT,
            f"The absolute path {shown!r} is outside every folder this server serves "
            f"({', '.join(self.served)}).",
            "Use a path inside one of them (list_allowed_directories lists them); "
            f"relative paths are resolved against {self.served[0]}.",
        )

    def _journal_toolkit(self, change_id: Any) -> FileTools:
        """The folder whose journal holds the change (by default the latest change of all)."""
        toolkits = [self._toolkit(folder) for folder in self.served]
        latest: tuple[float, FileTools] | None = None
        for toolkit in toolkits:
            if toolkit.journal is None:
                continue
            try:
                if change_id:
                    if toolkit.journal.get(change_id) is not None:
                        return toolkit
                    continue
                entry = toolkit.journal.last_undoable()
            except ToolError:  # a malformed id or forged entry: the tool itself will say so
                continue
            if entry is not None and (latest is None or entry.created > latest[0]):
                latest = (entry.created, toolkit)
        return latest[1] if latest is not None else toolkits[0]

    def _toolkit(self, folder: str) -> FileTools:
        toolkit = self._toolkits.get(folder)
        if toolkit is None:
            toolkit = self._make_toolkit(Path(folder), self.provider, self.served)
            self._toolkits[folder] = toolkit
        return toolkit
