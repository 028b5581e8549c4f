"""Compare assembled partition records with the simulator's ground truth.

`python tools/accuracy.py fixtures/sim/*.log` prints, per log, how many calls were found and the
share of calls whose GPU-region, CPU-side and identity fields all equal the truth;
`python tools/accuracy.py --damaged 1-40 LOG` reads damaged copies of LOG (``tools/fuzz_jobs.py``'s
damages, 1-3 a copy, or ``--mutations A-B``) against LOG's truth: how much of it damage costs;
`python tools/accuracy.py --sweep 8` does the same over simulated runs of every era, 1-3 workers
per GPU and 1-2 GPUs, and of Phase 12 and pool-cache code on 2 GPUs x gw=2 with 4 of 8 proofs in
flight (``EXTRA_CELLS``), 8 seeds each, and then prints the calibration table: for every attribution
label (``attr_gpu``, ``attr_cpu``, ``attr_ids`` = exact / inferred / ambiguous), how many of the
fields it covers were right and how many wrong, per era and GPU count. A field counts when the
truth or the record holds a value for it; the fields of a record that matches no true call count
as wrong under their labels.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
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
GROUPS = (("gpu", GPU_FIELDS), ("cpu", CPU_FIELDS), ("id", ID_FIELDS))
#: Calibration targets: share of fields right under each label.
TARGET = {"exact": 1.0, "inferred": 0.995}


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


def compare_text(data: bytes, truth: list[dict[str, Any]]) -> dict[str, Any]:
    """``compare_run`` of a log's text (read from a temporary file, as a log is)."""
    import os
    import tempfile

    fd, path = tempfile.mkstemp(suffix=".log")
    os.write(fd, data)
    os.close(fd)
    try:
        return compare_run(load_run([path]), truth)
    finally:
        os.unlink(path)


def compare_run(run: Any, truth: list[dict[str, Any]]) -> dict[str, Any]:
    recs = [{k: _norm(v) for k, v in row.items()} for row in run.partitions.to_dict("records")]
    have_ids = any(r.get("job_id") is not None for r in recs)
    if have_ids:
        got = {(r["job_id"], r["partition"], r["start_ms"]): r for r in recs}
        pairs = [(t, got.get((t["job_id"], t.get("partition"), t.get("start_ms")))) for t in truth]
    else:
        # No ids in the log: compare in lock order.
        pairs = list(zip(truth, recs + [None] * (len(truth) - len(recs)), strict=False))
    res: dict[str, Any] = {
        "truth": len(truth),
        "records": len(recs),
        "missing": 0,
        "gpu_ok": 0,
        "cpu_ok": 0,
        "id_ok": 0,
        "diffs": [],
        # (group, label, right) -> number of fields
        "calib": Counter(),
        # the records of no true call (a line repeated in the log, say), and their fields
        "unmatched": 0,
        "unmatched_calib": Counter(),
    }
    calib = res["calib"]
    matched: set[int] = set()
    for t, r in pairs:
        if r is None:
            res["missing"] += 1
            continue
        matched.add(id(r))
        for group, fields in GROUPS:
            if group == "id" and not have_ids:
                res["id_ok"] += 1  # no ids in the log: records are compared in lock order
                continue
            label = r.get(f"attr_{'ids' if group == 'id' else group}") or "none"
            bad = []
            for f in fields:
                tv, rv = _norm(t.get(f)), _norm(r.get(f))
                if tv is None and rv is None:
                    continue
                calib[(group, label, tv == rv)] += 1
                if tv != rv:
                    bad.append((f, t.get(f), r.get(f)))
            if not bad:
                res[f"{group}_ok"] += 1
            elif len(res["diffs"]) < 12:
                res["diffs"].append(
                    (group, t.get("record"), t.get("job_id"), t.get("partition"), bad)
                )
    for r in recs:
        if id(r) in matched:
            continue
        # A record of no true call: every value it holds is wrong.
        res["unmatched"] += 1
        for group, fields in GROUPS:
            if group == "id" and not have_ids:
                continue
            label = r.get(f"attr_{'ids' if group == 'id' else group}") or "none"
            n = sum(1 for f in fields if _norm(r.get(f)) is not None)
            if n:
                calib[(group, label, False)] += n
                res["unmatched_calib"][(group, label, False)] += n
    return res


def calibration_rows(cells: dict[tuple[str, int], Counter]) -> list[dict[str, Any]]:
    """One row per (era, GPU count, label): fields right and wrong over all groups."""
    rows = []
    for (era, gpus), calib in cells.items():
        for label in ("exact", "inferred", "ambiguous", "none"):
            right = sum(n for (g, lab, ok), n in calib.items() if lab == label and ok)
            wrong = sum(n for (g, lab, ok), n in calib.items() if lab == label and not ok)
            if label == "none" and not right + wrong:
                continue
            rows.append({"era": era, "gpus": gpus, "label": label, "right": right, "wrong": wrong})
    return rows


def calibration_failures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose label claims more than the fields bear out (see ``TARGET``)."""
    out = []
    for row in rows:
        need = TARGET.get(row["label"])
        n = row["right"] + row["wrong"]
        if need is not None and n and row["right"] < need * n:
            out.append(row)
    return out


def print_calibration(rows: list[dict[str, Any]]) -> None:
    print()
    print("calibration (fields right / wrong under each label)")
    print("era         gpus  label          right  wrong   right%")
    for row in rows:
        n = row["right"] + row["wrong"]
        share = f"{row['right'] / n:8.2%}" if n else "       -"
        print(
            f"{row['era']:11s} {row['gpus']:4d}  {row['label']:10s} {row['right']:9d} "
            f"{row['wrong']:6d} {share}"
        )
    totals: dict[str, list[int]] = {}
    for row in rows:
        t = totals.setdefault(row["label"], [0, 0])
        t[0] += row["right"]
        t[1] += row["wrong"]
    for label, (right, wrong) in totals.items():
        if label == "none" and not right + wrong:
            continue
        n = right + wrong
        print(
            f"{'all':11s} {'':4s}  {label:10s} {right:9d} {wrong:6d} "
            + (f"{right / n:8.2%}" if n else "       -")
        )


ERAS = ("phase4-8", "phase9-11", "phase12", "pool-cache", "main")


def sweep_config(era: str, gw: int, gpus: int, seed: int) -> Any:
    """One run of the sweep: even seeds 3 proofs x 6 partitions with 2 in flight, odd seeds
    4 proofs x 4 partitions all in flight (more calls queue on each mutex)."""
    from cuzk_diag.model.daemon import SimConfig

    if seed % 2:
        return SimConfig(
            era=era, gw=gw, n_gpus=gpus, proofs=4, concurrency=4, partitions_per_proof=4, seed=seed
        )
    return SimConfig(
        era=era, gw=gw, n_gpus=gpus, proofs=3, concurrency=2, partitions_per_proof=6, seed=seed
    )


#: Cells beyond the grid, SimConfig arguments without the seed: Phase 12 and pool-cache code on
#: 2 GPUs x gw=2 with 8 proofs of 10 partitions, 4 in flight, and synthesis fast enough (20
#: concurrent) that the workers of a GPU queue on its mutex.
EXTRA_CELLS: tuple[dict[str, Any], ...] = tuple(
    dict(era=era, gw=2, n_gpus=2, proofs=8, concurrency=4, pw=20, partitions_per_proof=10)
    for era in ("phase12", "pool-cache")
)


def run_sweep(
    seeds: range,
    eras: tuple[str, ...] = ERAS,
    gws: tuple[int, ...] = (1, 2, 3),
    gpus: tuple[int, ...] = (1, 2),
    extra: tuple[dict[str, Any], ...] = (),
) -> tuple[list[dict[str, Any]], dict[tuple[str, int], Counter]]:
    """Simulate every (era, gw, GPU count) for ``seeds``, then each ``extra`` cell: per-cell
    totals and calibration."""
    from cuzk_diag.model.daemon import SimConfig, simulate

    runs = [
        ((era, gw, n_gpus), [sweep_config(era, gw, n_gpus, seed) for seed in seeds])
        for era in eras
        for gw in gws
        for n_gpus in gpus
    ]
    runs += [
        ((kw["era"], kw["gw"], kw["n_gpus"]), [SimConfig(**kw, seed=seed) for seed in seeds])
        for kw in extra
    ]
    cells: list[dict[str, Any]] = []
    calib: dict[tuple[str, int], Counter] = {}
    for (era, gw, n_gpus), configs in runs:
        tot: dict[str, Any] = {"era": era, "gw": gw, "gpus": n_gpus}
        tot.update(truth=0, records=0, gpu_ok=0, cpu_ok=0, id_ok=0, missing=0)
        cal = calib.setdefault((era, n_gpus), Counter())
        for cfg in configs:
            sim = simulate(cfg)
            assert sim.data is not None
            res = compare_text(sim.data, sim.truth)
            for k in ("truth", "records", "gpu_ok", "cpu_ok", "id_ok", "missing"):
                tot[k] += res[k]
            cal.update(res["calib"])
        cells.append(tot)
    return cells, calib


def sweep(seeds: int) -> None:
    """Simulate every era x gw 1-3 x 1-2 GPUs and the ``EXTRA_CELLS`` for ``seeds`` seeds;
    print the shares per cell and the calibration table."""
    cells, calib = run_sweep(range(seeds), extra=EXTRA_CELLS)
    print("era         gw gpus  calls records  gpu-region  cpu-side  ids")
    for c in cells:
        n = c["truth"]
        print(
            f"{c['era']:11s} {c['gw']:2d} {c['gpus']:4d} {n:6d} {c['records']:7d} "
            f"{c['gpu_ok'] / n:10.1%} {c['cpu_ok'] / n:9.1%} {c['id_ok'] / n:5.1%}"
        )
    rows = calibration_rows(calib)
    print_calibration(rows)
    bad = calibration_failures(rows)
    if bad:
        print()
        for row in bad:
            print(f"below target: {row}")


def _row(name: str, r: dict[str, Any]) -> str:
    n = r["truth"]
    return (
        f"{name:32s} truth {n:4d} records {r['records']:4d} missing {r['missing']:3d} "
        f"gpu {r['gpu_ok'] / n:6.1%} cpu {r['cpu_ok'] / n:6.1%} ids {r['id_ok'] / n:6.1%}"
    )


def damaged(log: Path, seeds: tuple[int, int], mutations: tuple[int, int]) -> None:
    """Each seed's damaged copy of ``log`` (``fuzz_jobs.mutate``) against ``log``'s truth: a
    row per copy with its damages, then the fields labelled exact or inferred that are wrong
    (damage may cost fields; a label must still not claim more than the log shows), in the
    records of true calls and in records of none (a repeated window's calls are in the log
    twice: their second records are of no true call)."""
    from fuzz_jobs import mutate

    truth = json.loads(log.with_suffix(".truth.json").read_text())
    text = log.read_bytes()
    base = compare_run(load_run([str(log)]), truth)
    print(_row("no damage", base))
    print("  wrong fields labelled exact or inferred:", dict(_overclaimed(base["calib"])))
    overclaimed: Counter[str] = Counter()
    unmatched, unmatched_fields = 0, Counter[str]()
    for seed in range(seeds[0], seeds[1] + 1):
        data, names = mutate(text, seed, mutations)
        r = compare_text(data, truth)
        over = _overclaimed(r["calib"] - r["unmatched_calib"])
        print(_row(f"seed {seed} {'+'.join(names)}"[:32], r), dict(over) or "", flush=True)
        overclaimed.update(over)
        unmatched += r["unmatched"]
        unmatched_fields.update(_overclaimed(r["unmatched_calib"]))
    print(
        "  wrong fields labelled exact or inferred, all copies: in records of true calls",
        dict(overclaimed),
        f"; in {unmatched} records of no true call (lines repeated, say)",
        dict(unmatched_fields),
    )


def _overclaimed(calib: Counter[Any]) -> Counter[str]:
    """Of a ``compare_run`` calibration, the wrong fields labelled exact or inferred, by group
    and label."""
    out: Counter[str] = Counter()
    for (group, label, right), n in calib.items():
        if label in ("exact", "inferred") and not right:
            out[f"{group} {label}"] += n
    return out


def main(argv: list[str]) -> int:
    import argparse

    from fuzz_jobs import span

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="*", help="simulated logs, each beside its .truth.json")
    ap.add_argument("--sweep", type=int, nargs="?", const=8, metavar="SEEDS",
                    help="simulate every era and shape, SEEDS seeds each (default 8)")  # fmt: skip
    ap.add_argument("--damaged", type=span, metavar="A-B",
                    help="damaged copies of each log, seeds A-B, against its truth")  # fmt: skip
    ap.add_argument("--mutations", type=span, default=(1, 3), metavar="A-B",
                    help="damages a copy with --damaged (default 1-3)")  # fmt: skip
    a = ap.parse_args(argv)
    if a.sweep is not None:
        sweep(a.sweep)
        return 0
    for p in a.logs:
        if a.damaged is not None:
            damaged(Path(p), a.damaged, a.mutations)
            continue
        r = compare(Path(p))
        print(_row(Path(p).name, r))
        for d in r["diffs"][:4]:
            print("    ", d)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
