#!/usr/bin/env python3
"""Where ``cuzk_diag.pipeline.load_run`` spends its time, for tuning the hot path.

    python bench/profile.py                 # 50 MB simulated log (generated once, cached)
    python bench/profile.py --mb 20 --top 40 --sort cumulative
    python bench/profile.py --log my.log --save load_run.prof   # then e.g. snakeviz load_run.prof

Prints, in this order:

1. a split of the time by stage, each stage timed on its own without the profiler:
   reading + cleaning (``sources.iter_input``), line parsing (``ingest.stream.stream_events
   (full=False)`` minus the reading and classification it includes; of it, the column-wise
   extraction of fixed-form lines and the making of their events are shown on their own),
   assembly (``Assembler.feed_many`` over each chunk's events, then ``finish``), both with
   the garbage collector paced per chunk as in the pipeline, and frame building
   (``records_to_table`` + ``table_to_frame`` over all the records; pandas is imported before
   the stages, so its import is in none of them, as in the command, which imports it while
   the ingest runs); next to it a plain
   ``load_run`` for comparison (the pipeline may interleave the stages, e.g. build Arrow
   batches while assembling, so the sum need not match it exactly);
2. the top functions by own time (``tottime``) of ``load_run`` under cProfile.

The split keeps every parsed event of the input in memory between the parse and assembly stages
(about 10x the input size); use --no-split on a large input.
"""

from __future__ import annotations

import os
import sys

# This file is named like the standard library's ``profile`` module, which ``cProfile`` imports:
# take the script's own directory off the path while the standard modules load.
_HERE = os.path.dirname(os.path.abspath(__file__))
_path = list(sys.path)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
import cProfile  # noqa: E402
import pstats  # noqa: E402

sys.path[:] = _path

import argparse  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from common import DEFAULT_OUT, MB, BenchError, ensure_log, warm_cache  # noqa: E402


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def stage_split(path: str) -> list[tuple[str, float, str]]:
    """(stage, seconds, detail) for each stage of ``load_run`` on ``path``."""
    import pandas  # noqa: F401  (imported here, not in the frame stage's time)

    from cuzk_diag import pipeline
    from cuzk_diag.frame import records_to_table, table_to_frame
    from cuzk_diag.ingest.assemble import Assembler
    from cuzk_diag.ingest.stream import PacedCollector, stream_events
    from cuzk_diag.records import Accounting, RunInfo
    from cuzk_diag.sources import iter_input

    def read() -> tuple[int, int]:
        n = size = 0
        for _stats, chunk in iter_input(path):
            n += 1
            size += len(chunk)
        return n, size

    t_read, (n_chunks, n_bytes) = _timed(read)

    # The bulk classification alone (Arrow kernels over whole chunks, ingest/parse/classify).
    def classify_only() -> int:
        from cuzk_diag.ingest.parse.classify import classify, split_lines
        from cuzk_diag.sources import MAX_LINE

        picked = 0
        for _stats, chunk in iter_input(path):
            arr, _ = split_lines(chunk, MAX_LINE)
            picked += len(classify(arr, full=False).index)
        return picked

    t_classify, n_picked = _timed(classify_only)
    # The column-wise part of the parse, timed inside the parse (ingest/parse/columnar).
    import cuzk_diag.ingest.parse as parse_pkg

    spent = {"extract": 0.0, "events": 0.0}

    def timing(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - t0

        return run

    # The garbage collector runs as in the pipeline (PacedCollector: once per chunk). The
    # pipeline frees a chunk's events once they are assembled; kept here for the next stage,
    # they are taken out of the collector's sight (gc.freeze) so that they cost what they cost
    # there.
    def parse_all() -> list[list[Any]]:
        chunks = []
        with PacedCollector() as collector:
            for batch in stream_events([path], Accounting(), full=False):
                chunks.append(batch)
                gc.freeze()
                collector.chunk()
        return chunks

    # (The events of a chunk's column groups are made into their places in line order, with
    # the other lines' events: ``ParsedChunk.events``.)
    plain = parse_pkg.extract_fixed, parse_pkg.ParsedChunk.events
    parse_pkg.extract_fixed = timing("extract", plain[0])
    parse_pkg.ParsedChunk.events = timing("events", plain[1])  # type: ignore[method-assign]
    try:
        t_parse_all, chunks = _timed(parse_all)
    finally:
        parse_pkg.extract_fixed = plain[0]
        parse_pkg.ParsedChunk.events = plain[1]  # type: ignore[method-assign]

    # The assembler on its own, fed with the events parsed above (as the pipeline feeds it).
    def assemble(chunks: list[list[Any]]) -> list[dict[str, Any]]:
        asm = Assembler(Accounting(), RunInfo())
        records: list[dict[str, Any]] = []
        with PacedCollector() as collector:
            for events in chunks:
                records.extend(r for r in asm.feed_many(events) if isinstance(r, dict))
                collector.chunk()
            records.extend(asm.finish())
        return records

    t_asm, records = _timed(lambda: assemble(chunks))
    n_events = sum(len(c) for c in chunks)
    chunks.clear()  # free the memory before the next stage
    gc.unfreeze()
    gc.collect()
    gc.freeze()  # (as the pipeline leaves the heap: the modules out of the collector's sight)

    t_frame, df = _timed(lambda: table_to_frame(records_to_table(records)))
    n_records = len(df)
    del df
    records.clear()
    t_total, _run = _timed(lambda: pipeline.load_run([path]))
    del _run
    staged = t_read + (t_parse_all - t_read) + t_asm + t_frame
    t_lines = t_parse_all - t_classify
    return [
        (
            "reading + cleaning (sources.iter_input)",
            t_read,
            f"{n_chunks} chunks, {n_bytes / MB:.1f} MB of cleaned text",
        ),
        (
            "bulk classification (split, count, select; Arrow kernels)",
            t_classify - t_read,
            f"{n_picked} lines selected",
        ),
        (
            "parsing of the selected lines",
            t_lines,
            f"{n_events} events",
        ),
        (
            "- of it: column-wise extraction of fixed-form lines (Arrow kernels)",
            spent["extract"],
            "",
        ),
        ("- of it: making their events from the columns, in line order", spent["events"], ""),
        (
            "- of it: the other lines, one by one (Python)",
            t_lines - spent["extract"] - spent["events"],
            "",
        ),
        ("assembly (Assembler.feed_many + finish)", t_asm, f"{n_records} records"),
        ("frame building (records_to_table + table_to_frame)", t_frame, ""),
        ("sum of the stages", staged, ""),
        ("load_run, unprofiled", t_total, ""),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--mb", type=int, default=50, help="size of the simulated log (default 50)")
    src.add_argument("--log", type=Path, help="profile this log instead of a simulated one")
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="cache directory (default bench/out)"
    )
    ap.add_argument("--top", type=int, default=25, help="functions to list (default 25)")
    ap.add_argument("--sort", default="tottime", help="pstats sort key (default tottime)")
    ap.add_argument("--save", type=Path, help="also write the raw profile here (pstats format)")
    ap.add_argument("--no-split", action="store_true", help="skip the stage split")
    ap.add_argument("--no-profile", action="store_true", help="only the stage split")
    args = ap.parse_args(argv)

    try:
        path = args.log if args.log else ensure_log(args.mb, args.out.resolve())
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not path.exists():
        print(f"error: {path}: no such file", file=sys.stderr)
        return 2
    size = path.stat().st_size
    warm_cache(path)
    print(f"# load_run on {path} ({size / MB:.1f} MB)\n")

    if not args.no_split:
        rows = stage_split(str(path))
        total = rows[-1][1]
        print("| Stage | Seconds | Share of load_run | MB/s | Detail |")
        print("|---|---|---|---|---|")
        for name, sec, detail in rows:
            share = f"{100 * sec / total:.0f} %" if total > 0 else "n/a"
            speed = f"{size / MB / sec:.1f}" if sec > 0 else "n/a"
            print(f"| {name} | {sec:.2f} | {share} | {speed} | {detail} |")
        print()

    if not args.no_profile:
        from cuzk_diag.pipeline import load_run

        prof = cProfile.Profile()
        gc.collect()
        t0 = time.perf_counter()
        prof.enable()
        load_run([str(path)])
        prof.disable()
        elapsed = time.perf_counter() - t0
        print(
            f"cProfile: load_run took {elapsed:.2f} s under the profiler "
            f"(the profiler's overhead inflates pure-Python calls)\n"
        )
        buf = io.StringIO()
        stats = pstats.Stats(prof, stream=buf)
        stats.strip_dirs().sort_stats(args.sort).print_stats(args.top)
        print(buf.getvalue().rstrip())
        if args.save:
            prof.dump_stats(str(args.save))
            print(f"\nraw profile written to {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
