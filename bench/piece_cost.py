#!/usr/bin/env python3
"""What a piece of text costs the parse and the assembly, by its size: the fixed cost of a piece.

    python bench/piece_cost.py                          # 20 MB of the 50 MB log, 64 KiB to 4 MiB
    python bench/piece_cost.py --bytes 50 --sizes 256,1024 --repeat 3

Feeds the first ``--bytes`` MB of the simulated log (whole lines) to ``ingest.stream.Ingest``
(the parse and the assembly, as live mode feeds them, with the collector paced per piece as the
pipeline paces it per chunk) in pieces of each size of ``--sizes`` (KiB), in turn, ``--repeat``
times, and prints the best time of each size: the seconds, the milliseconds a piece, the MB/s,
and the cost of a piece whatever its size, fitted over the sizes (least squares of
``seconds = pieces * fixed + bytes * per_byte``). Live mode parses the text that arrives in
pieces (``live._handle`` joins what waits, up to ``FEED_LIMIT``); a batch parse reads chunks of
``sources.CHUNK_SIZE``. Runs the installed package, or ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np
from common import DEFAULT_OUT, MB, ensure_log


def pieces_of(data: bytes, size: int) -> list[bytes]:
    """``data`` (whole lines) in pieces of at most ``size`` bytes, each of whole lines (a line
    longer than ``size`` is a piece of its own)."""
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        cut = data.rfind(b"\n", pos, pos + size) + 1
        if cut <= pos:
            cut = data.find(b"\n", pos) + 1 or len(data)
        out.append(data[pos:cut])
        pos = cut
    return out


def feed_time(pieces: list[bytes]) -> float:
    """Seconds to parse and assemble ``pieces`` in order, as one input."""
    from cuzk_diag.ingest.stream import Ingest, PacedCollector
    from cuzk_diag.records import Accounting, RunInfo

    ingest = Ingest(["-"], Accounting(), RunInfo())
    ingest.begin(0)
    gc.collect()
    t0 = time.perf_counter()
    with PacedCollector() as collector:
        for piece in pieces:
            ingest.feed(piece)
            collector.chunk(len(piece))
        ingest.end(None)
        ingest.finish()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mb", type=int, default=50, help="size of the simulated log")
    ap.add_argument("--bytes", type=float, default=20, help="MB of it to feed")
    ap.add_argument("--sizes", default="64,256,1024,4096", help="piece sizes in KiB")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each size (the best counts)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    sizes = [int(s) << 10 for s in a.sizes.split(",") if s.strip()]
    if not sizes or min(sizes) <= 0 or a.repeat < 1 or a.bytes <= 0:
        ap.error("--sizes takes positive sizes in KiB, --repeat and --bytes positive numbers")
    log = ensure_log(a.mb, a.out)
    with open(log, "rb") as fh:
        data = fh.read(int(a.bytes * MB))
    data = data[: data.rfind(b"\n") + 1]
    best: dict[int, float] = {}
    cut = {size: pieces_of(data, size) for size in sizes}
    for _ in range(a.repeat):
        for size in sizes:  # (the sizes in turn: the machine's load spreads over all)
            t = feed_time(cut[size])
            best[size] = min(best.get(size, t), t)
    rows = [(size, len(cut[size]), best[size]) for size in sizes]  # (size, pieces, seconds)
    print(f"# Parse and assembly of {len(data) / MB:.1f} MB of {log.name}, by piece size\n")
    print("| Piece | Pieces | Seconds | ms a piece | MB/s |")
    print("|---|---|---|---|---|")
    for size, n, t in rows:
        rate = len(data) / MB / t
        print(f"| {size >> 10} KiB | {n:,} | {t:.2f} | {t / n * 1000:.2f} | {rate:.1f} |")
    if len({n for _, n, _ in rows}) > 1:
        counts = np.array([[n, len(data)] for _, n, _ in rows], dtype=float)
        secs = np.array([t for _, _, t in rows])
        (fixed, per_byte), *_ = np.linalg.lstsq(counts, secs, rcond=None)
        print(
            f"\nFitted: {fixed * 1000:.2f} ms a piece whatever its size, and "
            f"{per_byte * MB * 1000:.1f} ms a MB ({1 / (per_byte * MB):.1f} MB/s without "
            "the pieces' own cost)."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
