#!/usr/bin/env python3
"""Small steps of the ingest timed on their own, each beside the way it was done before.

    python bench/micro.py                 # the 50 MB log
    python bench/micro.py --repeat 9

Prints the best of ``--repeat`` runs of each (milliseconds):

1. **Messages between processes** (``ingest.parallel.send``/``recv``): the line tables of the
   log's first 8 chunks (``linetable.chunk_lines``, as a child of ``export --lines`` returns
   them), three times over, written by a thread into a pipe and read back here; the CPU time of
   both ends, with the buffers out of band (the present messages) and pickled in band (a
   length and ``pickle.dumps``, as before).
2. **Records to a table** (``frame.records_to_table``): the records of the 10 MB log, in
   batches of 4,096, through ``_fill`` (the present compiled path) and through ``_columns``
   alone (``frame.COMPILED`` off); meaningful on the compiled build, which the report names.
3. **Whole-chunk byte searches** on a 4 MiB chunk: ``"]: "`` (``sources._bracket_colon``
   against ``bytes.__contains__``) and the newlines (``sources.newlines`` against
   ``bytes.count``).
4. **The classification of a 4 MiB chunk** (``ingest.parse.classify.classify``, the lines
   analysis needs and, as ``export --lines`` reads, every line): its tracing lines found by
   ``scan.tracing_fill`` (the present compiled path) and by the two RE2 kernels
   (``classify.BYTE_SCAN`` off, the pure build's path); meaningful on the compiled build.

Runs the installed package, or ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import os
import pickle
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import DEFAULT_OUT, ensure_log

_LEN = struct.Struct("<Q")


def best(fn: Callable[[], Any], repeat: int) -> float:
    """The best wall time of ``repeat`` runs of ``fn``, in ms."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * min(times)


def _send_in_band(out: Any, msg: tuple[Any, ...]) -> None:
    data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_LEN.pack(len(data)))
    out.write(data)


def _recv_in_band(inp: Any) -> tuple[Any, ...] | None:
    head = inp.read(_LEN.size)
    if len(head) < _LEN.size:
        return None
    (size,) = _LEN.unpack(head)
    msg: tuple[Any, ...] = pickle.loads(inp.read(size))
    return msg


def messages(log: Path, repeat: int) -> list[tuple[str, float]]:
    from cuzk_diag.ingest import parallel
    from cuzk_diag.ingest.stream import parse_parts
    from cuzk_diag.linetable import chunk_lines
    from cuzk_diag.records import Accounting

    parts = zip(range(8), parse_parts([str(log)], Accounting(), full=True), strict=False)
    tables = [chunk_lines(part) for _, (_, part, _, _) in parts]
    mb = 3 * sum(t.nbytes for t in tables) / 1e6

    def through_pipe(send: Callable[..., None], recv: Callable[..., Any]) -> None:
        r, w = os.pipe()
        with os.fdopen(r, "rb") as inp, os.fdopen(w, "wb") as out:

            def write() -> None:
                for _ in range(3):
                    for t in tables:
                        send(out, ("ok", t))
                        out.flush()
                out.close()

            writer = threading.Thread(target=write)
            writer.start()
            while recv(inp) is not None:
                pass
            writer.join()

    rows = []
    for name, send, recv in [
        ("out of band (now)", parallel.send, parallel.recv),
        ("in band (before)", _send_in_band, _recv_in_band),
    ]:
        cpu = []
        for _ in range(repeat):
            c0 = time.process_time()
            through_pipe(send, recv)
            cpu.append(time.process_time() - c0)
        rows.append(
            (f"messages, {mb:.0f} MB of line tables through a pipe: {name}, CPU", 1000 * min(cpu))
        )
    return rows


def records(log: Path, repeat: int) -> list[tuple[str, float]]:
    from cuzk_diag import frame
    from cuzk_diag.ingest.stream import stream
    from cuzk_diag.records import Accounting, RunInfo

    recs = list(stream([str(log)], Accounting(), RunInfo()))
    batches = [recs[i : i + 4096] for i in range(0, len(recs), 4096)]

    def tables() -> None:
        for b in batches:
            frame.records_to_table(b)

    rows = []
    compiled = frame.COMPILED
    try:
        for name, flag in [("through _fill (now)", True), ("_columns alone (before)", False)]:
            frame.COMPILED = flag
            rows.append((f"records_to_table, {len(recs):,} records: {name}", best(tables, repeat)))
    finally:
        frame.COMPILED = compiled
    return rows


def searches(log: Path, repeat: int) -> list[tuple[str, float]]:
    from cuzk_diag import sources

    with open(log, "rb") as fh:
        data = fh.read(sources.CHUNK_SIZE)
    data = data[: data.rfind(b"\n") + 1]
    return [
        (
            '"]: " in a 4 MiB chunk: _bracket_colon (now)',
            best(lambda: sources._bracket_colon(data), repeat),
        ),
        ('"]: " in a 4 MiB chunk: bytes search (before)', best(lambda: b"]: " in data, repeat)),
        ("newlines of a 4 MiB chunk: newlines (now)", best(lambda: sources.newlines(data), repeat)),
        (
            "newlines of a 4 MiB chunk: bytes.count (before)",
            best(lambda: data.count(b"\n"), repeat),
        ),
    ]


def classification(log: Path, repeat: int) -> list[tuple[str, float]]:
    import importlib

    from cuzk_diag import sources

    # (``cuzk_diag.ingest.parse.classify`` is also the name of the package's function)
    cls = importlib.import_module("cuzk_diag.ingest.parse.classify")
    with open(log, "rb") as fh:
        data = fh.read(sources.CHUNK_SIZE)
    arr, _ = cls.split_lines(data[: data.rfind(b"\n") + 1], sources.MAX_LINE)
    rows = []
    byte_scan = cls.BYTE_SCAN
    try:
        for name, flag in [("a loop over the bytes (now)", True), ("RE2 kernels (before)", False)]:
            cls.BYTE_SCAN = flag
            for full in (False, True):
                what = "every line" if full else "the lines analysis needs"
                ms = best(lambda f=full: cls.classify(arr, full=f), repeat)
                rows.append((f"classify a 4 MiB chunk, {what}: {name}", ms))
    finally:
        cls.BYTE_SCAN = byte_scan
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mb", type=int, default=50, help="size of the simulated log")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    import cuzk_diag.frame

    build = "compiled" if cuzk_diag.frame.COMPILED else "pure Python"
    log = ensure_log(a.mb, a.out)
    small = ensure_log(10, a.out)
    rows = messages(log, a.repeat) + records(small, a.repeat) + searches(log, a.repeat)
    rows += classification(log, a.repeat)
    print(f"# Steps of the ingest, {build} build, best of {a.repeat} (ms)\n")
    print("| Step | ms |")
    print("|---|---|")
    for name, ms in rows:
        print(f"| {name} | {ms:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
