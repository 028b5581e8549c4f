"""Compare assembled partition records with the simulator's ground truth.

`python tools/accuracy.py fixtures/sim/*.log` prints, per log, how many calls were found and the
share of calls whose GPU-region, CPU-side and identity fields all equal the truth;
`python tools/accuracy.py --sweep 8` does the same over simulated runs (``SWEEP_CONFIGS``: every
era, 1-3 workers per GPU and 1-2 GPUs; Phase 12 and pool-cache code on 2 GPUs x gw=2 with 4 of 8
proofs in flight), 8 seeds each.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from cuzk_diag.pipeline import load_run  # noqa: E402

GPU_FIELDS = [
    "ntt_msm_h_ms",
    "batch_add_ms",
    "tail_msm_ms",
    "gpu_total_ms",
    "barrier_wait_ms",
    "pre_lock_cpu_ms",
    "mutex_wait_ms",
    "mutex_held_ms",
    "total_start_fn_ms",
    "free_mib",
    "usable_mib",
    "need_da_mib",
    "need_dbc_mib",
    "total_mib",
    "prestage_setup",
    "prestage_err",
    "domain",
    "lot_of_memory",
    "sync_ms",
    "trim_ms",
    "alloc_ms",
    "upload_ms",
    "total_ps_ms",
    "pool_threshold_gpu",
    "d_a_cache_mib",
    "d_a_cache_gpu",
    "d_b_alloc_ms",
    "ntt_kernels_ms",
    "coset_intt_sync_ms",
    "msm_init_ms",
    "msm_invoke_ms",
    "msm_dtor_ms",
    "ntt_h_total_ms",
]
CPU_FIELDS = [
    "split_vectors_ms",
    "setup_to_split_ms",
    "prep_msm_ms",
    "b_g2_msm_ms",
    "num_circuits",
    "async_dealloc_ms",
    "epilogue_ms",
    "pre_destructor_ms",
    "host_register",
    "host_register_err",
]
ID_FIELDS = ["job_id", "partition", "worker", "gpu"]


def _norm(v: Any) -> Any:
    if v is None:
        return None
    try:
        import pandas as pd

        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def compare(log: Path) -> dict[str, Any]:
    truth = json.loads(log.with_suffix(".truth.json").read_text())
    return compare_run(load_run([str(log)]), truth)


def compare_run(run: Any, truth: list[dict[str, Any]]) -> dict[str, Any]:
    recs = [{k: _norm(v) for k, v in row.items()} for row in run.partitions.to_dict("records")]
    have_ids = any(r.get("job_id") is not None for r in recs)
    if have_ids:
        got = {(r["job_id"], r["partition"], r["start_ms"]): r for r in recs}
        pairs = [(t, got.get((t["job_id"], t.get("partition"), t.get("start_ms")))) for t in truth]
    else:
        # No ids in the log: compare in lock order.
        pairs = list(zip(truth, recs + [None] * (len(truth) - len(recs)), strict=False))
    res = {
        "truth": len(truth),
        "records": len(recs),
        "missing": 0,
        "gpu_ok": 0,
        "cpu_ok": 0,
        "id_ok": 0,
        "diffs": [],
    }
    for t, r in pairs:
        if r is None:
            res["missing"] += 1
            continue
        for group, fields in (("gpu", GPU_FIELDS), ("cpu", CPU_FIELDS), ("id", ID_FIELDS)):
            bad = [
                (f, t.get(f), r.get(f))
                for f in fields
                if _norm(t.get(f)) != _norm(r.get(f)) and not (group == "id" and not have_ids)
            ]
            if not bad:
                res[f"{group}_ok"] += 1
            elif len(res["diffs"]) < 12:
                res["diffs"].append(
                    (group, t.get("record"), t.get("job_id"), t.get("partition"), bad)
                )
    return res


#: The ``--sweep`` cells, SimConfig arguments without the seed: every era with 1-3 workers per
#: GPU on 1-2 GPUs and 3 proofs (2 in flight) of 6 partitions; then Phase 12 and pool-cache code
#: on 2 GPUs x gw=2 with 8 proofs of 10 partitions, 4 in flight, and synthesis fast enough
#: (20 concurrent) that the workers of a GPU queue on its mutex.
SWEEP_CONFIGS: list[dict[str, Any]] = [
    *(
        dict(era=era, gw=gw, n_gpus=gpus, proofs=3, concurrency=2, partitions_per_proof=6)
        for era in ("phase4-8", "phase9-11", "phase12", "pool-cache", "main")
        for gw in (1, 2, 3)
        for gpus in (1, 2)
    ),
    *(
        dict(era=era, gw=2, n_gpus=2, proofs=8, concurrency=4, pw=20, partitions_per_proof=10)
        for era in ("phase12", "pool-cache")
    ),
]


def sweep(seeds: int) -> None:
    """Simulate every cell of ``SWEEP_CONFIGS`` for ``seeds`` seeds; print the shares per cell."""
    import os
    import tempfile

    from cuzk_diag.model.daemon import SimConfig, simulate

    print("era         gw gpus  c/j  calls  gpu-region  cpu-side  ids")
    for kw in SWEEP_CONFIGS:
        tot = {"truth": 0, "gpu_ok": 0, "cpu_ok": 0, "id_ok": 0, "missing": 0}
        for seed in range(seeds):
            sim = simulate(SimConfig(**kw, seed=seed))
            fd, path = tempfile.mkstemp(suffix=".log")
            os.write(fd, sim.data)
            os.close(fd)
            try:
                res = compare_run(load_run([path]), sim.truth)
            finally:
                os.unlink(path)
            for k in tot:
                tot[k] += res[k]
        n = tot["truth"]
        shape = f"{kw['proofs']}/{kw['concurrency']}"
        print(
            f"{kw['era']:11s} {kw['gw']:2d} {kw['n_gpus']:4d} {shape:>4s} {n:6d}  "
            f"{tot['gpu_ok'] / n:10.1%} {tot['cpu_ok'] / n:9.1%} {tot['id_ok'] / n:5.1%}"
        )


def main(paths: list[str]) -> int:
    if paths[:1] == ["--sweep"]:
        sweep(int(paths[1]) if len(paths) > 1 else 8)
        return 0
    for p in paths:
        r = compare(Path(p))
        n = r["truth"]
        print(
            f"{Path(p).name:32s} truth {n:4d} records {r['records']:4d} missing {r['missing']:3d} "
            f"gpu {r['gpu_ok'] / n:6.1%} cpu {r['cpu_ok'] / n:6.1%} ids {r['id_ok'] / n:6.1%}"
        )
        for d in r["diffs"][:4]:
            print("    ", d)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
