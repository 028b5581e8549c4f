#!/usr/bin/env python3
"""Live mode: how long after a call's last line its record (and a finding) reaches stdout.

    python bench/bench_live_latency.py                 # 40 MB at 20 MB/s
    python bench/bench_live_latency.py --mb 100 --rate 50

A simulated log is written into ``cuzk-diag analyze -`` in slices paced to ``--rate`` MB/s; the
time each slice was written is kept with its last line number. Every ``partition`` event read
from the JSON Lines output is matched to the slice that held its ``last_line``: the difference is
the latency a user watching the live view sees. Reports the median, p95 and max, the input
rate actually reached and the CPU time live mode took (user and system, all its threads).
Writes ``bench/out/live-latency.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import bisect
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import DEFAULT_OUT, MB, cuzk_diag_cmd, ensure_log, machine_info, snapshot_env

SLICE_BYTES = 64 * 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mb", type=int, default=40, help="size of the simulated log")
    ap.add_argument("--rate", type=float, default=20.0, help="input rate in MB/s")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    log = ensure_log(a.mb, a.out)
    work = Path(tempfile.mkdtemp(prefix="live-latency.", dir=a.out))
    try:
        return measure(a, log, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(a: argparse.Namespace, log: Path, work: Path) -> int:
    """Stream ``log`` into ``analyze -`` from a snapshot of the package in ``work``."""
    env, fp = snapshot_env(work)
    pass
    proc = subprocess.Popen(
        [*cuzk_diag_cmd(), "analyze", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    arrivals: list[tuple[float, int]] = []  # (time read, last_line) of partition events

    def pump() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            now = time.monotonic()
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            if ev.get("type") == "partition" and ev.get("last_line"):
                arrivals.append((now, int(ev["last_line"])))

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    assert proc.stdin is not None
    ends: list[int] = []  # last line number of each slice
    times: list[float] = []  # when that slice was written
    line = 0
    start = time.monotonic()
    written = 0
    with open(log, "rb") as fh:
        data = fh.read()
    pos = 0
    while pos < len(data):
        cut = data.rfind(b"\n", pos, pos + SLICE_BYTES) + 1 or len(data)
        piece = data[pos:cut]
        proc.stdin.write(piece)
        proc.stdin.flush()
        line += piece.count(b"\n")
        written += len(piece)
        times.append(time.monotonic())
        ends.append(line)
        pos = cut
        due = start + written / (a.rate * MB)
        if due > time.monotonic():
            time.sleep(due - time.monotonic())
    elapsed = time.monotonic() - start
    proc.stdin.close()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    reader.join(timeout=30)
    lat = []
    for t, last in arrivals:
        i = bisect.bisect_left(ends, last)
        if i < len(times):
            lat.append(max(0.0, t - times[i]))
    if not lat:
        print("no partition events read", file=sys.stderr)
        return 1
    lat.sort()
    p95 = lat[int(0.95 * (len(lat) - 1))]
    text = (
        f"# live latency: {len(data) / MB:.1f} MB at {len(data) / MB / elapsed:.1f} MB/s "
        f"(asked {a.rate:g})\n\n"
        f"{len(lat):,} records: latency median {statistics.median(lat) * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms, max {lat[-1] * 1000:.0f} ms; "
        f"live mode's CPU time {cpu:.2f} s "
        f"(load average {' '.join(machine_info()['loadavg'])}; package {fp}).\n"
    )
    print(text)
    (a.out / "live-latency.md").write_text(text)
    (a.out / "live-latency.json").write_text(
        json.dumps(
            {"latencies_s": lat, "rate_mb_s": len(data) / MB / elapsed, "cpu_s": cpu}, indent=0
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
