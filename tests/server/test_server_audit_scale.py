"""A log of 100,000 events: pages stay fast and memory stays bounded, in-process and served."""

from __future__ import annotations

import os
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.jupyter_process import JupyterProcess, start_jupyter
from tinyagent_fs.audit.log import AUDIT_FILE_NAME, AuditEvent
from tinyagent_fs.server.index import AuditIndex
from tinyagent_fs.server.query import AuditFilter, find_event, find_page

pytestmark = pytest.mark.jupyter

EVENTS = 100_000
TOOLS = ("read_file", "edit_file", "grep", "write_file", "list_directory", "glob")
DIFF = "--- a/x.py\n+++ b/x.py\n@@ -1,40 +1,40 @@\n" + "".join(
    f"-old line {i}\n+new line {i}\n" for i in range(40)
)
MB = 1024 * 1024


def write_large_log(path: Path) -> None:
    """100,000 realistic lines (one in six with a 1 KB diff), written in one pass."""
    with path.open("w", encoding="utf-8") as handle:
        for i in range(EVENTS):
            denied = i % 97 == 0
            event = AuditEvent(
                session_id=f"session-{i % 7}",
                tool=TOOLS[i % len(TOOLS)],
                paths=[f"src/module_{i % 500}.py"],
                arguments={"path": f"src/module_{i % 500}.py"},
                decision="deny" if denied else "proceed",
                outcome="denied" if denied else "ok",
                diff=DIFF if i % 6 == 1 else None,
                message=f"call number {i}",
            )
            handle.write(event.to_json() + "\n")
        needle = AuditEvent(tool="grep", session_id="session-rare", message="needle-in-haystack")
        handle.write(needle.to_json() + "\n")


@pytest.fixture(scope="module")
def large_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("large-audit") / AUDIT_FILE_NAME
    write_large_log(path)
    return path


@pytest.fixture(scope="module")
def index(large_log: Path) -> AuditIndex:
    built = AuditIndex(large_log)
    built.refresh()
    return built


def peak_bytes(work: object) -> int:
    """Peak of Python allocations while ``work()`` runs, above what was allocated before."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        work()  # type: ignore[operator]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


def seconds(work: object) -> float:
    started = time.perf_counter()
    work()  # type: ignore[operator]
    return time.perf_counter() - started


def test_the_index_of_100k_events_is_small(large_log: Path) -> None:
    holder: list[AuditIndex] = []

    def build() -> None:
        holder.append(AuditIndex(large_log))
        holder[0].refresh()

    peak = peak_bytes(build)
    assert len(holder[0]) == EVENTS + 1
    assert large_log.stat().st_size > 50 * MB
    assert peak < 8 * MB, f"indexing peaked at {peak / MB:.1f} MB"


@pytest.mark.parametrize(
    "query",
    [
        AuditFilter(),
        AuditFilter(before=EVENTS // 2),
        AuditFilter(sessions=("session-3",), tools=("glob",)),
        AuditFilter(outcomes=("denied",)),
        AuditFilter(text="call number 4242"),
        AuditFilter(text="no such text anywhere"),
        AuditFilter(sessions=("session-rare",)),
    ],
    ids=["newest", "middle", "session+tool", "denied", "text", "text-miss", "rare-session"],
)
def test_a_page_costs_a_page(index: AuditIndex, query: AuditFilter) -> None:
    pages: list = []
    peak = peak_bytes(lambda: pages.append(find_page(index, query)))
    elapsed = seconds(lambda: find_page(index, query))
    page = pages[0]
    assert page.total == EVENTS + 1
    assert len(page.events) <= query.limit
    assert peak < 4 * MB, f"{query} peaked at {peak / MB:.1f} MB"
    assert elapsed < 3.0, f"{query} took {elapsed:.2f}s"
    if query.text == "call number 4242":
        assert [row["message"] for row in page.events][-1] == "call number 4242"
    if query.sessions == ("session-rare",):
        assert [row["message"] for row in page.events] == ["needle-in-haystack"]


def test_finding_an_old_event_without_a_hint_scans_in_bounded_memory(index: AuditIndex) -> None:
    oldest = find_page(index, AuditFilter(before=1, limit=1)).events[0]
    found: list = []
    peak = peak_bytes(lambda: found.append(find_event(index, oldest["event_id"])))
    assert found[0]["seq"] == 0
    assert peak < 4 * MB, f"the scan peaked at {peak / MB:.1f} MB"


def _memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


@pytest.fixture
def empty_server(tmp_path: Path) -> Iterator[tuple[JupyterProcess, Path]]:
    audit_dir = tmp_path / "audit"
    audit_dir.mkdir()
    process = start_jupyter(
        "server", tmp_path, tmp_path / "home", env={"TINYAGENT_FS_AUDIT_DIR": str(audit_dir)}
    )
    yield process, audit_dir
    process.stop()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_the_server_serves_100k_events_fast_and_in_bounded_memory(
    empty_server: tuple[JupyterProcess, Path], large_log: Path
) -> None:
    server, audit_dir = empty_server
    assert server.get_json("tinyagent-fs/audit")["total"] == 0
    baseline_kb = _memory_kb(server.process.pid, "VmHWM")
    os.link(large_log, audit_dir / AUDIT_FILE_NAME)  # appears whole, as a replaced file would
    deadline = time.monotonic() + 60
    while server.get_json("tinyagent-fs/audit", {"limit": 1})["total"] != EVENTS + 1:
        assert time.monotonic() < deadline, "the server did not index the log within 60s"
        time.sleep(0.2)

    timings = {}
    for name, path, params in [
        ("newest", "tinyagent-fs/audit", {"limit": 100}),
        ("filtered", "tinyagent-fs/audit", {"session": "session-2", "tool": "grep"}),
        ("text", "tinyagent-fs/audit", {"q": "needle-in-haystack"}),
        ("sessions", "tinyagent-fs/sessions", {}),
    ]:
        started = time.perf_counter()
        payload = server.get_json(path, params)
        timings[name] = time.perf_counter() - started
        assert payload
    newest = server.get_json("tinyagent-fs/audit", {"limit": 100})["events"]
    assert len(newest) == 100 and newest[0]["message"] == "needle-in-haystack"
    started = time.perf_counter()
    detail = server.get_json(f"tinyagent-fs/audit/{newest[-1]['event_id']}")
    timings["detail"] = time.perf_counter() - started
    assert detail["event_id"] == newest[-1]["event_id"]

    growth_mb = (_memory_kb(server.process.pid, "VmHWM") - baseline_kb) / 1024
    print(f"timings {timings}, peak RSS growth {growth_mb:.1f} MB")
    assert max(timings.values()) < 2.0, timings
    assert growth_mb < 60, (
        f"serving a 100k-event log grew the server's peak RSS by {growth_mb:.0f} MB"
    )
