"""Which files make git or a shell run code: one list for the guard and the sandbox.

Commands meet these as read-only mounts and a quarantine after each command
(``sandbox.protected_paths``, ``sandbox.code_files``); file tools may not write
them at all (``policy.DEFAULT_WRITE_DENIED_PATTERNS``, and the guard's check for
git directories by content), so a trusted tool or a tired click never plants one.
"""

from __future__ import annotations

from collections.abc import Collection

RC_FILES: tuple[str, ...] = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
)
HOME_FILES: tuple[str, ...] = (
    ".gitconfig",
    ".config/git/config",
    ".bash_aliases",
    ".inputrc",
    ".zlogout",
    ".config/fish/config.fish",
    ".envrc",
    ".pam_environment",
    ".xprofile",
    ".xsessionrc",
    ".xsession",
    ".xinitrc",
    ".ssh/rc",
    ".ssh/config",
    ".ssh/environment",
    ".ssh/authorized_keys",
    ".ssh/authorized_keys2",
    ".bash_completion",
    ".vimrc",
    ".gvimrc",
    ".exrc",
    ".config/nvim/init.vim",
    ".config/nvim/init.lua",
    ".emacs",
    ".emacs.d/init.el",
)
"""Files at a root that run code (or let someone in) when it is a person's home folder."""
ROOT_FOLDERS: tuple[str, ...] = (
    ".config/fish/conf.d",
    ".config/autostart",
    ".config/systemd/user",
    ".config/environment.d",
)
"""Folders at a root whose every entry runs code: read-only as a whole, each entry watched."""
GIT_DIR_MARKS = (("objects", "refs"), ("HEAD", "commondir"))
"""Names that together make a folder a git directory (see :func:`is_git_dir`)."""


def is_git_dir(names: Collection[str]) -> bool:
    """Whether git may take a folder holding ``names`` for a git directory, and read its
    config and hooks: git's ``is_git_directory`` wants HEAD, objects and refs, the last
    two looked up through ``commondir`` when it exists. Judged by names alone and
    conservatively: HEAD with commondir, or objects with refs (HEAD or not: a common
    directory needs none, and its config is the one git reads)."""
    return any(all(name in names for name in mark) for mark in GIT_DIR_MARKS)


def root_write_denials() -> tuple[str, ...]:
    """The code-running files and folders of a root as anchored gitignore patterns."""
    return (
        ".git",
        ".gitmodules",
        *(f"/{path}" for path in (*RC_FILES, *HOME_FILES)),
        *(f"/{folder}/" for folder in ROOT_FOLDERS),
    )
