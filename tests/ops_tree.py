"""A project tree exercising every ignore rule the search and listing primitives honour."""

from __future__ import annotations

import os
from pathlib import Path

DENIED = [".env", ".env.*", "*.pem"]

FILES: dict[str, bytes] = {
    ".gitignore": b"*.log\nbuild/\n/top_only.txt\nvendor/**\n!vendor/keep.txt\n",
    ".tinyagentignore": b"private/\n",
    ".env": b"TOKEN=needle\n",
    ".hidden/config.txt": b"needle hidden\n",
    ".git/HEAD": b"needle in git\n",
    "README.md": b"Needle at the top\n",
    "top_only.txt": b"needle top\n",
    "app.log": b"needle log\n",
    "build/out.txt": b"needle build\n",
    "vendor/lib.txt": b"needle vendored\n",
    "vendor/keep.txt": b"needle kept\n",
    "private/secret.txt": b"needle private\n",
    "certs/server.pem": b"needle pem\n",
    "src/.gitignore": b"!important.log\ngenerated/\n*.tmp\n",
    "src/important.log": b"needle important\n",
    "src/debug.log": b"needle debug\n",
    "src/generated/gen.py": b"needle generated\n",
    "src/top_only.txt": b"needle not anchored here\n",
    "src/app/main.py": (
        b"import os\n"
        b"\n"
        b"def needle():\n"
        b"    return 'Needle'\n"
        b"\n"
        b"\n"
        b"def other():\n"
        b"    x = needle()\n"
        b"    return x\n"
        b"# needless comment\n"
        b"# end\n"
    ),
    "src/app/util.py": b"def helper():\n    return 'NEEDLE'\n",
    "src/app/data.bin": b"needle\x00binary\n",
    "src/app/win.txt": b"first needle\r\nsecond\r\nneedle end\r\n",
    "src/app/x.tmp": b"needle tmp\n",
    "src/app/bom.txt": b"\xef\xbb\xbfneedle after bom\n",
    "docs/guide.md": b"# Guide\n\nthe needle is here\nand here: needle\n",
    "docs/long.txt": b"needle " + b"x" * 900 + b"\n",
}


def build_tree(root: Path) -> Path:
    for rel, data in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    os.symlink("src/app/main.py", root / "link_to_main.py")
    os.symlink("src", root / "linked_src")
    return root


GIT_CASES: dict[str, str] = {
    ".gitignore": (
        "*.log\n!keep.log\nbuild/\ncache/\n/root_only\ndoc/*.txt\nfoo/**/bar\n"
        "a/**\n!a/keep\n[Bb]in/\n?.dat\n\\#hash\ntrailing\\ \n# comment\n\n"
    ),
    "nested/.gitignore": "/local\n!*.log\nx/y\n",
    "deep/.gitignore": "*\n!.gitignore\n!*.keep\n!*/\n",
}
GIT_FILES = [
    "x.log",
    "keep.log",
    "build/a",
    "build2",
    "cache",
    "root_only",
    "sub/root_only",
    "doc/a.txt",
    "doc/sub/b.txt",
    "foo/bar",
    "foo/q/r/bar",
    "foo/bars",
    "a/keep",
    "a/drop",
    "a/sub/keep",
    "bin/x",
    "Bin/y",
    "cabin/z",
    "1.dat",
    "12.dat",
    "#hash",
    "trailing ",
    "nested/local",
    "nested/sub/local",
    "nested/n.log",
    "nested/x/y",
    "nested/q/x/y",
    "deep/a.txt",
    "deep/b.keep",
    "deep/inner/c.keep",
    "deep/inner/d.txt",
    ".hidden/h",
    "plain.txt",
]


def build_git_cases(root: Path) -> Path:
    """Every file holds the line ``x``; the ignore files hold the tricky cases."""
    for rel, text in GIT_CASES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for rel in GIT_FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    return root.resolve()
