#!/usr/bin/env python3
"""Where the parse of a chunk spends its time, by stage and line family.

    python bench/parse_stages.py                       # the 50 MB log, limited and full parse
    python bench/parse_stages.py --mb 250 --repeat 3

Reads the simulated log whole, cuts it into chunks of ``sources.CHUNK_SIZE`` (whole lines) and
runs ``LineParser.feed_parts`` over them (the parse up to the column groups; without ``--full``
only, as ``analyze`` does, the lines analysis needs, then as the line table does with every
line), ``--repeat`` times with the garbage collector off, and prints the best time of each
stage: the split into lines, the classification, the C++ lines (``columnar._cpp``), the
TIMELINE lines (``columnar._timeline``), the clock lines (``columnar._clock``), the tracing
shapes (``shapes.tracing_groups``), ``feed_parts`` in all, and then making the events of the
chunks (``ParsedChunk.events``). Each stage is timed by a wrapper around its module function,
which the parse (compiled or not) calls through its module; the wrappers add a few
microseconds a call. Runs the installed package, or ``PYTHONPATH``, and says which build.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import DEFAULT_OUT, MB, ensure_log

#: (label, module, function) of each stage timed inside ``feed_parts``.
STAGES = [
    ("split into lines", "cuzk_diag.ingest.parse", "split_lines"),
    ("classification", "cuzk_diag.ingest.parse", "classify"),
    ("C++ lines (_cpp)", "cuzk_diag.ingest.parse.columnar", "_cpp"),
    ("TIMELINE lines (_timeline)", "cuzk_diag.ingest.parse.columnar", "_timeline"),
    ("clock lines (_clock)", "cuzk_diag.ingest.parse.columnar", "_clock"),
    ("tracing shapes (tracing_groups)", "cuzk_diag.ingest.parse.shapes", "tracing_groups"),
]


def chunks_of(data: bytes, size: int) -> list[bytes]:
    """``data`` in chunks of about ``size`` bytes, each of whole lines."""
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        cut = data.find(b"\n", pos + size)
        cut = len(data) if cut < 0 else cut + 1
        out.append(data[pos:cut])
        pos = cut
    return out


def timed_stages(spent: dict[str, float]) -> None:
    """Wrap each stage's module function so that its time adds up in ``spent``."""
    import importlib

    def wrap(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                spent[label] += time.perf_counter() - t0

        return timed

    for label, module, name in STAGES:
        mod = importlib.import_module(module)
        setattr(mod, name, wrap(label, getattr(mod, name)))


def one_run(chunks: list[bytes], full: bool, spent: dict[str, float]) -> tuple[float, float]:
    """Seconds of ``feed_parts`` over ``chunks`` and of making their events."""
    from cuzk_diag.ingest.parse import LineParser

    for label in spent:
        spent[label] = 0.0
    parser = LineParser(full=full)
    gc.collect()
    gc.disable()
    t0 = time.perf_counter()
    parts = [parser.feed_parts(c) for c in chunks]
    t1 = time.perf_counter()
    events = [p.events() for p in parts]
    t2 = time.perf_counter()
    del parts, events
    gc.enable()
    return t1 - t0, t2 - t1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mb", type=int, default=50, help="size of the simulated log")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each parse (the best counts)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    if a.repeat < 1:
        ap.error("--repeat takes a positive number")
    from cuzk_diag.ingest import build
    from cuzk_diag.sources import CHUNK_SIZE

    log = ensure_log(a.mb, a.out)
    chunks = chunks_of(log.read_bytes(), CHUNK_SIZE)
    spent = {label: 0.0 for label, _, _ in STAGES}
    timed_stages(spent)
    best: dict[bool, dict[str, float]] = {}
    for _ in range(a.repeat):
        for full in (False, True):  # (the two in turn: the machine's load spreads over both)
            parse, events = one_run(chunks, full, spent)
            row = {**spent, "feed_parts in all": parse, "making the events": events}
            old = best.get(full)
            best[full] = row if old is None else {k: min(v, old[k]) for k, v in row.items()}
    size = sum(map(len, chunks)) / MB
    print(f"# The parse of {log.name} ({size:.1f} MB, {len(chunks)} chunks), {build()} build")
    print(f"\nBest of {a.repeat} runs each, garbage collector off, seconds.\n")
    print("| Stage | `analyze`'s parse | with every line (`--full`) |")
    print("|---|---|---|")
    for label in best[False]:
        print(f"| {label} | {best[False][label]:.3f} | {best[True][label]:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
