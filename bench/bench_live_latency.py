#!/usr/bin/env python3
"""Live mode: how long after a call's last line its record, and after a failure its finding,
reaches stdout.

    python bench/bench_live_latency.py                 # 40 MB at 20 MB/s
    python bench/bench_live_latency.py --mb 100 --rate 50
    python bench/bench_live_latency.py --failure-at 0.8   # the failure line 80 % of the way in

A simulated log is written into ``cuzk-diag analyze -`` in slices paced to ``--rate`` MB/s; the
time each slice was written is kept with its last line number. Every ``partition`` event read
from the JSON Lines output is matched to the slice that held its ``last_line``: the difference is
the latency a user watching the live view sees. Reports the median, p95 and max, the input
rate actually reached and the CPU time live mode took (user and system, all its threads and
its rules' process).

A finding's latency: one line of a partition's GPU proof failing (the daemon's ``ERROR``
line, ``FAILURE_LINE``, with the timestamp of the tracing line before it) is put into the log
``--failure-at`` of the way in (a fraction of its bytes; 0: none); the time from the write of
its slice to the ``finding`` event of the failures rule (``CZ601``, new) on stdout is how long
a user waits to see it. (The simulated log has no failure of its own.)
Writes ``bench/out/live-latency.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
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
#: The failure put into the log (its timestamp first): a line the daemon prints.
FAILURE_LINE = (
    " ERROR cuzk_core::engine: partition GPU proving failed error=GPU prove failed: RustError "
    '{ code: 700, message: "an illegal memory access was encountered" } '
    "job_id=00000000-0000-4000-8000-0000000000f1 partition=0\n"
)
#: The finding it raises (the failures rule).
FAILURE_CODE = "CZ601"


def with_failure(data: bytes, at: float) -> tuple[bytes, int]:
    """``data`` with ``FAILURE_LINE`` put in at the first line start ``at`` of the way in
    (a fraction of its bytes), stamped with the time of the last tracing line before it (its
    timestamp as the parser reads one, ``classify.TRACING_TS_RE2``); the number of that line
    (1-based)."""
    from cuzk_diag.ingest.parse.classify import TRACING_TS_RE2

    stamp_re = re.compile(TRACING_TS_RE2.encode() + rb"(?= )")
    pos = data.find(b"\n", int(len(data) * at)) + 1 or len(data)
    stamp = b""
    lo = pos
    while not stamp and lo > 0:
        start = data.rfind(b"\n", 0, lo - 1) + 1
        m = stamp_re.match(data, start, lo)
        if m is not None:
            stamp = m.group()
        lo = start
    if not stamp:
        raise SystemExit("no tracing line before the failure's place: no timestamp to give it")
    line = data.count(b"\n", 0, pos) + 1
    return data[:pos] + stamp + FAILURE_LINE.encode() + data[pos:], line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mb", type=int, default=40, help="size of the simulated log")
    ap.add_argument("--rate", type=float, default=20.0, help="input rate in MB/s")
    ap.add_argument(
        "--failure-at",
        type=float,
        default=0.5,
        help="where the failure line goes, a fraction of the log's bytes (0: no failure)",
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    if not 0.0 <= a.failure_at < 1.0:
        ap.error("--failure-at is a fraction of the log: 0 (no failure) up to below 1")
    log = ensure_log(a.mb, a.out)
    work = Path(tempfile.mkdtemp(prefix="live-latency.", dir=a.out))
    try:
        return measure(a, log, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(a: argparse.Namespace, log: Path, work: Path) -> int:
    """Stream ``log`` into ``analyze -`` from a snapshot of the package in ``work``."""
    env, fp = snapshot_env(work)
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen(
        [*cuzk_diag_cmd(), "analyze", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    arrivals: list[tuple[float, int]] = []  # (time read, last_line) of partition events
    found: list[float] = []  # when the failure's finding was read

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
            elif ev.get("type") == "finding" and ev.get("code") == FAILURE_CODE and not found:
                found.append(now)

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
    failure_line = None
    if a.failure_at:
        data, failure_line = with_failure(data, a.failure_at)
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
    finding_s = None
    finding = ""
    if failure_line is not None and not found:
        finding = f"the failure (line {failure_line:,}) raised no {FAILURE_CODE} finding; "
    elif failure_line is not None:
        # (the time the slice holding the failure line was written)
        finding_s = found[0] - times[bisect.bisect_left(ends, failure_line)]
        finding = (
            f"the failure's finding ({FAILURE_CODE}, line {failure_line:,}) "
            f"{finding_s * 1000:.0f} ms after its line; "
        )
    text = (
        f"# live latency: {len(data) / MB:.1f} MB at {len(data) / MB / elapsed:.1f} MB/s "
        f"(asked {a.rate:g})\n\n"
        f"{len(lat):,} records: latency median {statistics.median(lat) * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms, max {lat[-1] * 1000:.0f} ms; {finding}"
        f"live mode's CPU time {cpu:.2f} s "
        f"(load average {' '.join(machine_info()['loadavg'])}; package {fp}).\n"
    )
    print(text)
    (a.out / "live-latency.md").write_text(text)
    (a.out / "live-latency.json").write_text(
        json.dumps(
            {
                "latencies_s": lat,
                "finding_latency_s": finding_s,
                "failure_line": failure_line,
                "rate_mb_s": len(data) / MB / elapsed,
                "cpu_s": cpu,
            },
            indent=0,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
