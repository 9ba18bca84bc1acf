"""The in-process provider with and without pinning paths beneath the root's descriptor.

Run: ``.venv/bin/python bench/bench_local_pinning.py [--output FILE] [--rounds N]``.

Pinning (``providers/pinned_paths.py``) adds one ``openat2`` per call and the
descriptor-path indirection; this measures what that costs on the calls it
touches, in one run, alternating: ``read_file`` of a 4 KB file and ``write_file``
of a 4 KB file (new content each time) through ``FileTools`` (guard, pipeline and all), each with a
pinning ``LocalProvider`` and with one whose paths are left as they are, beside
a raw ``open().read()`` baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tinyagent_fs import FileTools
from tinyagent_fs.hooks import AutoApprovePolicy
from tinyagent_fs.providers import LocalProvider


class UnpinnedLocalProvider(LocalProvider):
    """The provider as it was before pinning: paths go to the primitives as given."""

    def bind_roots(self, roots: Iterable[str]) -> None:
        return None


async def median_us(job: Callable[[], Awaitable[object]], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await job()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


async def measure(rounds: int) -> list[str]:
    root = Path(tempfile.mkdtemp(prefix="bench-pinning-")) / "project"
    (root / "src" / "deep").mkdir(parents=True)
    body = "x" * 63 + "\n"
    (root / "src" / "deep" / "file.txt").write_text(body * 64)
    tools = {
        name: FileTools(root, provider=provider, hooks=[AutoApprovePolicy()], audit=False)
        for name, provider in (("pinned", LocalProvider()), ("unpinned", UnpinnedLocalProvider()))
    }
    path = root / "src" / "deep" / "file.txt"
    counter = iter(range(10**9))
    results: dict[str, list[float]] = {}
    for _ in range(5):  # alternate, so drift hits both sides alike
        for name, fs in tools.items():
            read = await median_us(lambda fs=fs: fs.read_file("src/deep/file.txt"), rounds)
            write = await median_us(
                lambda fs=fs: fs.write_file("src/deep/new.txt", f"{next(counter)}\n" + body * 64),
                rounds,
            )
            results.setdefault(f"read {name}", []).append(read)
            results.setdefault(f"write {name}", []).append(write)

        async def raw() -> bytes:
            with open(path, "rb") as handle:
                return handle.read()

        results.setdefault("read raw", []).append(await median_us(raw, rounds))
    for fs in tools.values():
        await fs.close()
    best = {key: min(values) for key, values in results.items()}
    lines = []
    for op in ("read", "write"):
        pinned, unpinned = best[f"{op} pinned"], best[f"{op} unpinned"]
        lines.append(
            f"{op} 4 KB through FileTools: pinned {pinned:8.1f} us, unpinned {unpinned:8.1f} us,"
            f" pinned/unpinned x{pinned / unpinned:.2f}"
        )
    lines.append(f"raw open().read() of the same file: {best['read raw']:.1f} us")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    lines = asyncio.run(measure(args.rounds))
    header = [
        f"# bench_local_pinning.py --rounds {args.rounds}",
        f"# {datetime.date.today()} {platform.python_version()} {platform.machine()}",
        "# best of 5 alternating medians",
    ]
    text = "\n".join(header + lines) + "\n"
    print(text, end="")
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
