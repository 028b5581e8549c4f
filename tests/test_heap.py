"""The C heap of an ingest and between the steps of an analysis (``cuzk_diag.heap``)."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

#: The tests below that measure the heap run on Linux with glibc only (``mallopt``,
#: ``malloc_trim``, minor faults and ``/proc`` are theirs).
_GLIBC = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="mallopt, malloc_trim, minor faults and /proc are glibc's and Linux's",
)

#: What the child scripts below read: the process's resident memory, MiB.
_RSS = """
def rss():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) for l in fh if l.startswith("VmRSS")) // 1024
"""


def _numbers(script: str) -> list[int]:
    """The whole numbers a Python child running ``script`` prints (a heap of its own)."""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return [int(w) for w in out.stdout.split()]


_HELD_AFTER = (
    _RSS
    + """
import gc
from cuzk_diag.heap import hand_back

blocks = [bytearray(100_000) for _ in range(2_000)]  # (heap blocks, below the mmap threshold)
keep = blocks[-1]  # (the heap's top stays in use: only a trim of its inside frees the rest)
del blocks
gc.collect()
before = rss()
{call}
print(before, rss())
"""
)


def _held(call: str) -> tuple[int, int]:
    before, after = _numbers(_HELD_AFTER.format(call=call))
    return before, after


@_GLIBC
def test_hand_back_returns_the_free_pages_inside_the_heap() -> None:
    """200 MB of blocks freed under a block still in use stay in the process until
    ``hand_back``, which returns them (a step's holes, not held into the next step)."""
    before, after = _held("hand_back()")
    kept_before, kept_after = _held("pass")
    assert kept_after > 150 and kept_after >= kept_before - 10  # (glibc keeps them)
    assert after < before - 150


def test_the_heap_settings_do_nothing_without_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the C library has neither function, every call returns quietly."""
    from cuzk_diag import heap

    monkeypatch.setattr(heap, "_libc", lambda name: None)
    heap.for_ingest()
    heap.after_ingest()
    heap.hand_back()


def test_the_frame_is_built_handing_the_heap_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pipeline.frame_of_batches`` gives the frame of the sorted, completed table, takes its
    list's batches, and hands the C heap's free pages back before the sort, after it, and
    every ``frame._TRIM_EVERY`` columns of the frame (a child's records are C heap buffers,
    freed a column at a time)."""
    import pandas as pd

    from cuzk_diag import frame, pipeline
    from cuzk_diag.records import PARTITION_SCHEMA, Accounting, RunInfo

    log = str(Path(__file__).parent.parent / "fixtures" / "sim" / "phase12-2gpu-gw2.log")
    acc, info = Accounting(), RunInfo()
    batches = list(pipeline.iter_record_batches([log], acc, info))
    expected = frame.table_to_frame(pipeline.finish_table(list(batches), info))
    assert len(expected) > 10
    calls: list[str] = []
    monkeypatch.setattr(pipeline, "hand_back", lambda: calls.append("pipeline"))
    monkeypatch.setattr(frame, "hand_back", lambda: calls.append("column"))
    got = pipeline.frame_of_batches(batches, info)
    assert batches == []
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    columns = len(PARTITION_SCHEMA) // frame._TRIM_EVERY
    assert calls == ["pipeline", "pipeline", *["column"] * columns]


_CHUNK_FAULTS = """
import resource
import numpy as np
from cuzk_diag.heap import for_ingest

{call}
data = np.frombuffer(b"x" * (4 << 20), dtype=np.uint8)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):  # (what a chunk makes and frees: a mask, a text, a buffer, of its size)
    mask = data == 10
    text = data.tobytes().replace(b"\\n", b"")
    buf = np.ones(1 << 19, dtype=np.int64)
    del mask, text, buf
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _chunk_faults(call: str) -> int:
    (faults,) = _numbers(_CHUNK_FAULTS.format(call=call))
    return faults


@_GLIBC
def test_chunk_sized_blocks_reuse_their_pages_during_an_ingest() -> None:
    """Blocks the size of a chunk, made and freed chunk after chunk, are faulted in (and
    zeroed) by the system each time by default; after ``for_ingest`` they reuse the
    heap's pages (40 rounds of 12 MiB: about 120,000 faults against a few thousand)."""
    default = _chunk_faults("pass")
    kept = _chunk_faults("for_ingest()")
    assert default > 40 * 1024  # (at least a 4 MiB block's pages a round)
    assert kept * 10 < default


def test_the_ingest_and_the_analysis_set_the_heap_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ingest starts with the chunks' settings (each ingest: a process may run several);
    the end of its record batches gives glibc's top pad back, for every command that analyses
    a run, and the frame's step sets nothing more (the analysis's arrays come from the heap
    as the ingest's)."""
    from cuzk_diag import heap
    from cuzk_diag.ingest.stream import settle_heap

    calls: list[tuple[int, int]] = []

    def libc(name: str) -> object:
        return (lambda p, v: calls.append((p, v))) if name == "mallopt" else None

    monkeypatch.setattr(heap, "_libc", libc)
    settle_heap()
    settle_heap()
    chunk = [
        (heap._M_ARENA_MAX, 1),
        (heap._M_MMAP_THRESHOLD, heap.CHUNK_BLOCKS),
        (heap._M_TOP_PAD, heap.CHUNK_PAD),
    ]
    assert calls == chunk * 2
    calls.clear()
    from cuzk_diag import pipeline
    from cuzk_diag.records import Accounting, RunInfo

    log = str(Path(__file__).parent.parent / "fixtures" / "sim" / "phase12-2gpu-gw2.log")
    batches = list(pipeline.iter_record_batches([log], Accounting(), RunInfo()))
    assert (heap._M_TOP_PAD, heap.CHUNK_PAD) in calls  # (the ingest's settings)
    assert calls[-1] == (heap._M_TOP_PAD, 128 << 10)  # (ended with its batches)
    calls.clear()
    pipeline.frame_of_batches(batches, RunInfo())
    assert calls == []  # (the analysis's blocks as the ingest's)


_THREAD_HELD = (
    _RSS
    + """
import threading
from cuzk_diag.heap import for_ingest, hand_back

for_ingest()
before = rss()

def work():  # (as the thread that takes a child's messages: blocks it makes, all freed)
    blocks = [bytearray(100_000) for _ in range(600)]
    del blocks

t = threading.Thread(target=work)
t.start()
t.join()
hand_back()
print(rss() - before)
"""
)


@_GLIBC
def test_a_threads_freed_blocks_go_back_during_an_ingest() -> None:
    """The blocks a thread made and freed during an ingest go back with ``hand_back`` (one
    heap for all threads: a thread's own heap would keep the ingest's 16 MiB pad at its top,
    which ``malloc_trim`` does not return)."""
    (held,) = _numbers(_THREAD_HELD)
    assert held < 8


def test_the_analysis_takes_its_arrays_from_the_heap_as_the_ingest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``analyze`` leaves glibc's mapping threshold where the ingest set it (``CHUNK_BLOCKS``):
    the analysis's arrays of one value per call come from the heap, whose freed pages the next
    ones reuse, not each from a mapping of its own (page faults for every array made); and the
    free space an ingest keeps at the heap's top is back to glibc's default when it ends."""
    from click.testing import CliRunner

    from cuzk_diag import heap
    from cuzk_diag.cli import cli

    calls: list[tuple[int, int]] = []

    def libc(name: str) -> object:
        return (lambda p, v: calls.append((p, v))) if name == "mallopt" else None

    monkeypatch.setattr(heap, "_libc", libc)
    log = str(Path(__file__).parent.parent / "fixtures" / "sim" / "phase12-2gpu-gw2.log")
    res = CliRunner().invoke(cli, ["analyze", log, "--format", "json", "-q", "--jobs", "1"])
    assert res.exit_code == 0, res.output
    thresholds = [v for p, v in calls if p == heap._M_MMAP_THRESHOLD]
    assert thresholds and set(thresholds) == {heap.CHUNK_BLOCKS}
    # Each ingest's top pad ends with it: the run's, then each run the findings' savings
    # estimates replay (the fixture's findings have some), so the report runs with the default.
    pads = [v for p, v in calls if p == heap._M_TOP_PAD]
    assert pads.count(heap.CHUNK_PAD) > 1 and pads[-1] == 128 << 10


def test_hand_back_returns_the_pages_arrows_pool_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """``hand_back`` asks Arrow's pool to hand back the pages of the buffers it freed, once
    pyarrow is loaded (and does not load it)."""
    import pyarrow as pa

    from cuzk_diag import heap

    released: list[str] = []

    class _Pool:
        def release_unused(self) -> None:
            released.append("pool")

    monkeypatch.setattr(pa, "default_memory_pool", lambda: _Pool())
    heap.hand_back()
    assert released == ["pool"]
    monkeypatch.delitem(sys.modules, "pyarrow")
    heap.hand_back()
    assert released == ["pool"] and "pyarrow" not in sys.modules


_STEPS_HAND_BACK = """
import json, sys
import cuzk_diag.heap as heap
from cuzk_diag.analysis import analyze_run
from cuzk_diag.pipeline import load_run
run = load_run(sys.argv[1])
calls = []
heap.hand_back = lambda: calls.append(1)
import cuzk_diag.analysis, cuzk_diag.facts, cuzk_diag.rules.base
for m in (cuzk_diag.analysis, cuzk_diag.facts, cuzk_diag.rules.base):
    m.hand_back = heap.hand_back
from cuzk_diag.rules.base import select_rules
from cuzk_diag.config import Config
a = analyze_run(run)
rules = len(select_rules(Config().select, Config().ignore, scope="run"))
print(json.dumps([len(calls), rules, len(a.facts.per_gpu)]))
"""


def test_the_analysis_hands_back_between_its_steps() -> None:
    """The analysis hands its freed pages back after the lock-wait estimate, within the facts
    (around the job ids' steps, the GPU usage, the idle gaps' join and the waterfall: seven
    times; within the GPU usage before its walk and after each GPU's), after the stage table
    and the facts, and once after the rules (however many)."""
    log = Path(__file__).resolve().parents[1] / "fixtures" / "example.log"
    out = subprocess.run(
        [sys.executable, "-c", _STEPS_HAND_BACK, str(log)],
        capture_output=True,
        text=True,
        check=True,
    )
    calls, rules, gpus = (int(x) for x in out.stdout.strip().strip("[]").split(","))
    assert gpus == 2
    assert rules > 1
    assert calls == 1 + 7 + (1 + gpus) + 1 + 1


_ZEROED = (
    _RSS
    + """
import numpy
from cuzk_diag.heap import zeroed
start = rss()
a = zeroed(200_000_000)
made = rss()
none = not a.any()  # (read: the kernel's zero page)
read = rss()
a[::4096] = True  # (one write a page)
print(start, made, read, rss(), int(none), int(a.sum()), len(zeroed(0)))
"""
)


@pytest.mark.skipif(platform.system() != "Linux", reason="/proc is Linux's")
def test_zeroed_takes_memory_as_it_is_written() -> None:
    """``heap.zeroed``: all False, writable, its pages resident once written, not before."""
    start, made, read, written, none, count, empty = _numbers(_ZEROED)
    assert none == 1 and count == -(-200_000_000 // 4096) and empty == 0
    assert made - start < 10 and read - start < 10
    assert written - start > 150
