#!/usr/bin/env python3
"""Memory of live mode over a long stream: RSS sampled while a simulated log is piped through.

    python bench/bench_live_memory.py --mb 400                      # default --max-records
    python bench/bench_live_memory.py --mb 400 --max-records 20000  # the cap reached early
    python bench/bench_live_memory.py --quick                       # 40 MB smoke run

The simulator writes the log to a pipe (nothing on disk; its own memory is bounded), this script
copies it into ``cuzk-diag analyze -`` (counting bytes) and reads the JSON Lines events coming
out (counting partitions); every ``--interval`` seconds it samples the analyser's resident set
(VmRSS) from /proc, and that of its rules process (``rules MiB``: the analyser's child
processes; ``rss_with_rules_process_mib``, the largest sum of both). A flat RSS column once the
record cap is reached is the target: beyond the cap the kept records, the window and the
sketches no longer grow.

Writes ``bench/out/live-memory.md`` and ``.json`` (``-quick`` suffix with --quick).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from common import DEFAULT_OUT, MB, MIB, SIM_ARGS, cuzk_diag_cmd, machine_info, snapshot_env


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of ``pid`` in KiB; (0, 0) once it is gone."""
    cur = peak = 0
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    cur = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1])
    except OSError:
        pass
    return cur, peak


def children_rss_kib(pid: int) -> int:
    """VmRSS of ``pid``'s child processes (live mode's rules process), in KiB; 0 if none."""
    kids: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as fh:
                kids.update(int(k) for k in fh.read().split())
    except OSError:
        pass
    return sum(rss_kib(k)[0] for k in kids)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mb", type=int, default=400, help="log size to stream (MB)")
    ap.add_argument("--max-records", type=int, default=None, help="analyze --max-records")
    ap.add_argument("--window", type=int, default=None, help="analyze --window")
    ap.add_argument("--interval", type=float, default=2.0, help="seconds between RSS samples")
    ap.add_argument("--quick", action="store_true", help="40 MB, 1 s samples")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    if args.quick:
        args.mb, args.interval = 40, 1.0
    args.out.mkdir(parents=True, exist_ok=True)
    env, fp = snapshot_env(args.out / "live-memory-work")

    sim_module = "cuzk_diag.model.daemon"
    sim_cmd = [sys.executable, "-m", sim_module, *SIM_ARGS, "--target-mb", str(args.mb)]
    live_cmd = [*cuzk_diag_cmd(), "analyze", "-"]
    if args.max_records is not None:
        live_cmd += ["--max-records", str(args.max_records)]
    if args.window is not None:
        live_cmd += ["--window", str(args.window)]
    print("$ " + " ".join(["python", *sim_cmd[1:]]) + " | " + " ".join(live_cmd), file=sys.stderr)

    sim = subprocess.Popen(sim_cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    live = subprocess.Popen(
        live_cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    state = {"bytes": 0, "partitions": 0, "events": 0}
    final: dict[str, object] = {}

    def pump_in() -> None:
        assert sim.stdout is not None and live.stdin is not None
        while block := sim.stdout.read1(1 << 20):
            live.stdin.write(block)
            state["bytes"] += len(block)
        live.stdin.close()

    def pump_out() -> None:
        assert live.stdout is not None
        for line in live.stdout:
            state["events"] += 1
            if line.startswith(b'{"type":"partition"'):
                state["partitions"] += 1
            elif line.startswith(b'{"type":"summary"') and b'"final":true' in line:
                doc = json.loads(line)
                final.update(
                    {
                        k: doc.get(k)
                        for k in ("partitions", "records_kept", "records_dropped", "elapsed_s")
                    }
                )

    threads = [
        threading.Thread(target=pump_in, daemon=True),
        threading.Thread(target=pump_out, daemon=True),
    ]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    samples: list[dict[str, float]] = []
    header = (
        f"{'time s':>7} {'input MB':>9} {'partitions':>11} {'RSS MiB':>8} {'peak MiB':>9} "
        f"{'rules MiB':>10}"
    )
    print(header)
    high_water = 0  # VmHWM polled often, so the end-of-input report's peak is not missed
    with_rules = 0  # the largest VmRSS of the analyser and its rules process together
    next_row = time.monotonic() + args.interval
    while live.poll() is None:
        time.sleep(0.1)
        cur, peak = rss_kib(live.pid)
        if not cur:
            break
        kids = children_rss_kib(live.pid)
        high_water = max(high_water, peak)
        with_rules = max(with_rules, cur + kids)
        if time.monotonic() < next_row:
            continue
        next_row += args.interval
        s = {
            "t": round(time.monotonic() - t0, 1),
            "bytes": state["bytes"],
            "mb": round(state["bytes"] / MB, 1),
            "partitions": state["partitions"],
            "rss_mib": round(cur * 1024 / MIB, 1),
            "peak_mib": round(peak * 1024 / MIB, 1),
            "rules_mib": round(kids * 1024 / MIB, 1),
        }
        samples.append(s)
        print(
            f"{s['t']:>7} {s['mb']:>9} {s['partitions']:>11,} {s['rss_mib']:>8} {s['peak_mib']:>9}"
            f" {s['rules_mib']:>10}",
            flush=True,
        )
    rc = live.wait()
    sim.wait()
    for t in threads:
        t.join(10)
    err = live.stderr.read().decode() if live.stderr else ""
    if rc != 0:
        print(f"analyze exited {rc}:\n{err[-2000:]}", file=sys.stderr)
        return 1

    # RSS while streaming (the end-of-input report is computed after the last sample of input).
    streaming = [s for s in samples if s["bytes"] < state["bytes"]] or samples
    fifth = next((s for s in streaming if s["bytes"] >= state["bytes"] / 5), streaming[0])
    last = streaming[-1]
    summary = {
        "mb": round(state["bytes"] / MB, 1),
        "partitions": final.get("partitions", state["partitions"]),
        "records_kept": final.get("records_kept"),
        "records_dropped": final.get("records_dropped"),
        "wall_s": round(time.monotonic() - t0, 1),
        "rss_at_fifth_mib": fifth["rss_mib"],
        "rss_at_end_of_input_mib": last["rss_mib"],
        "growth_after_fifth": round(last["rss_mib"] / fifth["rss_mib"], 2),
        "peak_streaming_mib": max(s["peak_mib"] for s in streaming),
        "peak_mib": round(
            max(high_water, *(s["peak_mib"] * MIB / 1024 for s in samples)) * 1024 / MIB, 1
        ),
        "rss_with_rules_process_mib": round(with_rules * 1024 / MIB, 1),
        "max_records": args.max_records,
        "window": args.window,
        "code": fp,
        "command": " ".join(["python", *sim_cmd[1:]]) + " | " + " ".join(live_cmd),
        "machine": machine_info(),
    }
    print()
    for k, v in summary.items():
        if k != "machine":
            print(f"{k}: {v}")
    tag = "-quick" if args.quick else ""
    (args.out / f"live-memory{tag}.json").write_text(
        json.dumps({"summary": summary, "samples": samples}, indent=1)
    )
    rows = "\n".join(
        f"| {s['t']} | {s['mb']} | {s['partitions']:,} | {s['rss_mib']} | {s['peak_mib']} "
        f"| {s['rules_mib']} |"
        for s in samples
    )
    (args.out / f"live-memory{tag}.md").write_text(
        f"`{summary['command']}`\n\n| time s | input MB | partitions | RSS MiB | peak MiB "
        f"| rules process MiB |\n|---:|---:|---:|---:|---:|---:|\n{rows}\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
