"""The child side of a time-bounded regex search.

It imports only the standard library so that, where forking is not an option, a
fresh interpreter can run this file as a script (``python -I -S regex_child.py``)
without importing the package or re-running the caller's main module, which is
what ``multiprocessing``'s spawn method would do. Requests and results travel as
``marshal`` data: plain strings, ints and tuples, nothing executable.
"""

from __future__ import annotations

import marshal
import re
import sys

Outcome = tuple[str, object]


def search(pattern: re.Pattern[str], template: str, text: str) -> Outcome:
    """("ok", [(start, end, expansion), ...]) or ("error", why the template is invalid)."""
    try:
        return "ok", [(m.start(), m.end(), m.expand(template)) for m in pattern.finditer(text)]
    except (re.error, IndexError) as exc:
        return "error", str(exc)


def main() -> None:
    """Script mode: a marshalled (pattern, flags, template, text) on stdin, the outcome
    marshalled on stdout."""
    pattern, flags, template, text = marshal.loads(sys.stdin.buffer.read())
    outcome = search(re.compile(pattern, flags), template, text)
    sys.stdout.buffer.write(marshal.dumps(outcome))


if __name__ == "__main__":
    main()
