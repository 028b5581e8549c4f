#!/usr/bin/env python3
"""A fleet build with one worker against two, side by side: wall time and peak memory.

    python bench/bench_fleet.py                 # 40 logs, 2,000 MB in all, 2 repetitions
    python bench/bench_fleet.py --mb 200 --reps 1

The fleet (one directory per host, one log each) is simulated once and cached under
``bench/out/``. Each repetition builds the dataset from scratch (``--rebuild``) with ``--jobs 1``
and then with ``--jobs 2``, interleaved, under ``/usr/bin/time``; the peak RSS GNU time reports
is that of the largest single process (the driver or one worker), so it is the per-worker bound.
Writes ``bench/out/fleet-results.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from common import (
    DEFAULT_OUT,
    MB,
    BenchError,
    Measure,
    cuzk_diag_cmd,
    machine_info,
    shell_join,
    snapshot_env,
    timed,
)

HOSTS = 40


def ensure_fleet(mb: int, hosts: int, out_dir: Path) -> Path:
    """``hosts`` simulated hosts of about ``mb / hosts`` MB each, generated once."""
    root = out_dir / f"fleet-{hosts}x-{mb}mb"
    done = root / ".complete"
    if done.exists():
        print(f"reusing {root}", file=sys.stderr)
        return root
    from cuzk_diag.model.daemon import SimConfig, write_log

    shutil.rmtree(root, ignore_errors=True)
    per_host = mb * MB // hosts
    for i in range(hosts):
        era = "main" if i % 4 else "phase9-11"
        cfg = SimConfig(
            era=era,
            n_gpus=2,
            gw=2,
            proofs=10_000,
            concurrency=4,
            seed=i,
            host=f"prover{i:03d}",
            target_bytes=per_host,
        )
        path = root / cfg.host / "daemon.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_log(cfg, str(path), truth=False)
        print(f"  {path.relative_to(out_dir)}: {path.stat().st_size / MB:.1f} MB", file=sys.stderr)
    done.write_text("ok\n")
    return root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mb", type=int, default=2000, help="total size of the fleet's logs")
    ap.add_argument("--hosts", type=int, default=HOSTS)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    try:
        fleet = ensure_fleet(a.mb, a.hosts, a.out)
        work = Path(tempfile.mkdtemp(prefix="fleet-bench.", dir=a.out))
        env, fp = snapshot_env(work)
    except BenchError as exc:
        print(f"bench_fleet: {exc}", file=sys.stderr)
        return 2
    size = sum(p.stat().st_size for p in fleet.rglob("*.log"))
    measures = {
        jobs: Measure(
            f"fleet --jobs {jobs}",
            [
                *cuzk_diag_cmd(),
                "fleet",
                str(fleet),
                "-o",
                str(work / f"ds{jobs}"),
                "--rebuild",
                "--quiet",
                "--jobs",
                str(jobs),
            ],
            size,
        )
        for jobs in (1, 2)
    }
    for rep in range(a.reps):
        for jobs, m in measures.items():
            s = timed(m.cmd, work, env)
            m.samples.append(s)
            print(
                f"round {rep + 1}: jobs={jobs} {s.wall_s:.1f} s, {s.rss_kib / 1024:.0f} MiB "
                f"(rc {s.rc})",
                file=sys.stderr,
            )
            if s.rc != 0:
                print(s.stderr, file=sys.stderr)
                return 1
    one, two = measures[1], measures[2]
    speedup = one.wall / two.wall
    cpu_ratio = statistics.median(s.user_s + s.sys_s for s in two.samples) / one.cpu
    info = machine_info()
    lines = [
        f"# fleet: {a.hosts} logs, {size / MB:,.0f} MB",
        "",
        f"Machine: {info['cpu_model']}, {info['nproc']} cores, load average "
        f"{' '.join(info['loadavg'])} at the end; package {fp}.",
        "",
        "| command | wall (median) | MB/s | CPU s | peak RSS of the largest process |",
        "|---|---|---|---|---|",
    ]
    for m in (one, two):
        lines.append(
            f"| `{shell_join(m.cmd).replace(str(work), 'TMP')}` | {m.wall:.1f} s | "
            f"{m.mb_per_s:.1f} | {m.cpu:.1f} | {m.rss_mib:.0f} MiB |"
        )
    lines += [
        "",
        f"Speed-up with 2 workers: {speedup:.2f}x (CPU seconds {cpu_ratio:.2f}x of one worker's).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    (a.out / "fleet-results.md").write_text(text)
    (a.out / "fleet-results.json").write_text(
        json.dumps(
            {
                "machine": info,
                "fingerprint": fp,
                "bytes": size,
                "speedup": speedup,
                "measures": [m.to_dict() for m in (one, two)],
            },
            indent=1,
        )
    )
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
