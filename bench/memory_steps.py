#!/usr/bin/env python3
"""Peak memory of each step of ``analyze``: where the command's peak RSS is set.

    python bench/memory_steps.py                  # the 1 GB log, one process
    python bench/memory_steps.py --mb 250 --jobs 2

Runs the steps of ``cuzk-diag analyze LOG --format json -o FILE -q`` in this process (the
installed package, or ``PYTHONPATH``), as the command runs them: the imports, the ingest (the
record batches, ``pipeline.iter_record_batches``), the frame (``pipeline.frame_of_batches``:
the run's era and wall clock, rows put in lock order as each column is converted), the
analysis (``analyze_run``: the facts, the stage table, the
rules), the findings' estimates (``model.savings.estimate_findings``) and the JSON report
written to a file. After each step it reads the process's peak (``VmHWM``) and what it holds
(``VmRSS``) from ``/proc/self/status``, then resets the peak (``/proc/self/clear_refs``), so each
row's peak is that step's own. ``/usr/bin/time`` on the command reports about the largest of them
(Linux only).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from common import DEFAULT_OUT, ensure_log


def memory() -> tuple[float, float]:
    """(VmHWM, VmRSS) of this process in MiB."""
    got = {}
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                got[key] = int(value.split()[0]) / 1024
    return got["VmHWM"], got["VmRSS"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mb", type=int, default=1000, help="size of the simulated log")
    ap.add_argument("--jobs", type=int, default=1, help="analyze --jobs")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    log = ensure_log(a.mb, a.out)
    rows: list[tuple[str, float, float, float]] = []
    t0 = time.perf_counter()

    def step(name: str) -> None:
        peak, held = memory()
        rows.append((name, peak, held, time.perf_counter() - t0))
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")  # (resets VmHWM to the present RSS)

    import cuzk_diag.cli  # noqa: F401  (what the command imports)
    from cuzk_diag.analysis import analyze_run
    from cuzk_diag.heap import hand_back
    from cuzk_diag.model.savings import estimate_findings
    from cuzk_diag.pipeline import Run, frame_of_batches, iter_record_batches, open_sources
    from cuzk_diag.records import Accounting, RunInfo
    from cuzk_diag.report import get_reporter

    step("imports")
    acc, info = Accounting(), RunInfo()
    batches = list(iter_record_batches(open_sources([str(log)]), acc, info, jobs=a.jobs))
    step("ingest (record batches)")
    run = Run(frame_of_batches(batches, info), info, acc, [str(log)])
    step("frame (era, wall clock, lock order)")
    hand_back()  # (as the command, before the analysis)
    result = analyze_run(run, None, inputs=[str(log)])
    step("analysis (facts, stages, rules)")
    result.findings = estimate_findings(run, result.facts, result.findings, [str(log)])
    step("estimates")
    hand_back()  # (as the command, before the report)
    with tempfile.TemporaryFile("w", encoding="utf-8") as out:
        get_reporter("json")(result, out, color="never")
    step("JSON report")

    print(f"# Peak RSS by step: `analyze {log.name} --format json -q --jobs {a.jobs}`\n")
    print(f"{len(run.partitions):,} GPU calls\n")
    print("| Step | Peak (MiB) | Held after (MiB) | Done at (s) |")
    print("|---|---|---|---|")
    for name, peak, held, at in rows:
        print(f"| {name} | {peak:.1f} | {held:.1f} | {at:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
