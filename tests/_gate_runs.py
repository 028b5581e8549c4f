"""Synthetic partition frames (PARTITION_SCHEMA columns) with realistic timings, for gate tests.

Numbers follow the Phase 9 steady state of the format reference (section 6.1): gpu_total about
1824 ms, ntt_msm_h 690, batch_add 650, tail_msm 83, prep_msm 1909, b_g2_msm 484 ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from cuzk_diag.gate import RunMetrics, metrics_from_frame
from cuzk_diag.records import PARTITION_COLUMNS, Finding, Severity

#: (column, mean ms, sd ms) of the timed stages.
STAGES: list[tuple[str, float, float]] = [
    ("split_vectors_ms", 120, 10),
    ("prep_msm_ms", 1909, 60),
    ("b_g2_msm_ms", 484, 30),
    ("ntt_msm_h_ms", 690, 35),
    ("batch_add_ms", 650, 30),
    ("tail_msm_ms", 83, 6),
    ("async_dealloc_ms", 40, 5),
    ("synth_ms", 19000, 800),
    ("gpu_ms", 3760, 150),
]


def make_partitions(
    n: int = 60,
    *,
    seed: int = 0,
    gpu_total_mean: float = 1800.0,
    gpu_total_sd: float = 100.0,
    slow: float = 1.0,
    slow_rows: Sequence[int] | None = None,
    era: str = "phase12",
    proof_kind: str = "porep-c2",
    prestage: Sequence[str | None] | None = None,
    drop: Sequence[str] = (),
) -> pd.DataFrame:
    """A frame of ``n`` GPU calls. ``slow`` multiplies every timing (or only ``slow_rows``)."""
    rng = np.random.default_rng(seed)
    data: dict[str, Any] = {name: [None] * n for name, _ in PARTITION_COLUMNS}
    data["record"] = list(range(n))
    data["source"] = [0] * n
    data["job_id"] = [f"job-{i // 10}" for i in range(n)]
    data["partition"] = [i % 10 for i in range(n)]
    data["worker"] = [i % 2 for i in range(n)]
    data["gpu"] = [0] * n
    data["proof_kind"] = [proof_kind] * n
    data["era"] = [era] * n
    data["num_circuits"] = [1] * n
    data["status"] = ["ok"] * n
    factor = np.ones(n)
    if slow_rows is None:
        factor[:] = slow
    else:
        factor[list(slow_rows)] = slow
    total = np.rint(rng.normal(gpu_total_mean, gpu_total_sd, n) * factor)
    data["gpu_total_ms"] = total.astype(np.int64).tolist()
    for name, mean, sd in STAGES:
        data[name] = np.rint(rng.normal(mean, sd, n) * factor).astype(np.int64).tolist()
    if prestage is not None:
        data["prestage_setup"] = list(prestage) + [None] * (n - len(prestage))
    df = pd.DataFrame(data)
    int_cols = [name for name, typ in PARTITION_COLUMNS if str(typ) == "int64"]
    for col in int_cols:
        df[col] = df[col].astype("Int64")
    for col in drop:
        df[col] = pd.array([None] * n, dtype="Int64")
    return df


def finding(code: str = "CZ101", severity: Severity = Severity.ERROR, title: str = "t") -> Finding:
    return Finding(
        code=code,
        name=f"rule-{code.lower()}",
        severity=severity,
        title=title,
        message=f"{title}: message",
        evidence={"x": 1},
        lines=(10, 20),
        advice="do something",
    )


def make_run(
    n: int = 60,
    *,
    label: str = "run.log",
    s_per_proof: float | None = 36.7,
    findings: Sequence[Finding] = (),
    gw: int = 2,
    n_gpus: int = 1,
    facts: dict[str, Any] | None = None,
    **kwargs: Any,
) -> RunMetrics:
    df = make_partitions(n, **kwargs)
    f: dict[str, Any] = {
        "era": kwargs.get("era", "phase12"),
        "n_gpus": n_gpus,
        "gw": gw,
        "proofs": n // 10,
        "partitions": n,
        "s_per_proof": s_per_proof,
        "util_merged": 0.9,
        "util_kernel": 0.47,
    }
    f.update(facts or {})
    return metrics_from_frame(df, facts=f, findings=findings, label=label)


def make_queue_run(waits: Sequence[int], *, seed: int = 0, label: str = "run.log") -> RunMetrics:
    """A run whose calls waited ``waits[i]`` ms between GPU_QUEUE and GPU_PICKUP."""
    n = len(waits)
    df = make_partitions(n, seed=seed)
    queue = np.arange(n, dtype=np.int64) * 4000
    df["queue_ms"] = pd.array(queue, dtype="Int64")
    df["pickup_ms"] = pd.array(queue + np.asarray(waits, dtype=np.int64), dtype="Int64")
    facts = {"era": "phase12", "n_gpus": 1, "gw": 2, "proofs": n // 10, "partitions": n}
    return metrics_from_frame(df, facts=facts, label=label)


def mostly_zero_waits(seed: int = 0) -> tuple[list[int], list[int]]:
    """Queue waits of two runs of 200 calls, almost all 0: the baseline waits 1 ms on 12 calls,
    the candidate 200-1,500 ms on 40. The candidate is slower, yet most pairs differ by 0, so the
    Hodges-Lehmann shift is 0."""
    rng = np.random.default_rng(seed)
    base = [1] * 12 + [0] * 188
    cand = rng.integers(200, 1500, 40).tolist() + [0] * 160
    return base, cand
