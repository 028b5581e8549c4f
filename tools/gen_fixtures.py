"""Regenerate the simulated fixture logs under ``fixtures/sim/`` and ``fixtures/example.log``.

Usage (from the repository root)::

    python tools/gen_fixtures.py            # write every fixture
    python tools/gen_fixtures.py --check    # exit 1 if a fixture on disk differs

Each fixture is ``NAME.log`` (the daemon log) plus ``NAME.truth.json`` (one object per GPU call,
keys from ``records.PARTITION_COLUMNS``, in lock-acquisition order). ``index.json`` lists the
configuration and the expected line accounting of every fixture. The output is a pure function
of the configurations below, so the files are reproducible byte for byte.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from cuzk_diag.model.daemon import MESSY, SimConfig, SimResult, simulate  # noqa: E402

#: name -> SimConfig keyword arguments. Partition counts are reduced where a full 10-partition
#: proof is not needed, to keep each fixture at tens of KB.
FIXTURES: dict[str, dict[str, Any]] = {
    # one log per code era: 2 GPUs, gw=2 (gw=1 before Phase 8), two concurrent proofs
    "era-phase4-8": dict(
        era="phase4-8", n_gpus=2, gw=2, proofs=2, concurrency=2, partitions_per_proof=4, seed=11
    ),
    "era-phase4-8-v1-batch": dict(
        era="phase4-8", cpp_version=1, n_gpus=2, gw=1, proofs=2, concurrency=2, pw=2, seed=12
    ),
    "era-phase9-11": dict(
        era="phase9-11",
        cpp_version=5,
        n_gpus=1,
        gw=2,
        proofs=2,
        concurrency=2,
        partitions_per_proof=4,
        seed=13,
    ),
    "era-phase12": dict(
        era="phase12", n_gpus=2, gw=2, proofs=2, concurrency=2, partitions_per_proof=4, seed=14
    ),
    "era-pool-cache": dict(
        era="pool-cache",
        n_gpus=2,
        gw=2,
        proofs=3,
        concurrency=2,
        partitions_per_proof=3,
        snap_every=3,
        seed=15,
    ),
    "era-main": dict(
        era="main", n_gpus=2, gw=2, proofs=2, concurrency=2, partitions_per_proof=4, seed=16
    ),
    # workers per GPU
    "gw1": dict(
        era="main", n_gpus=1, gw=1, proofs=2, concurrency=2, partitions_per_proof=4, seed=21
    ),
    "gw2": dict(
        era="main", n_gpus=1, gw=2, proofs=2, concurrency=2, partitions_per_proof=4, seed=22
    ),
    "gw3": dict(
        era="main", n_gpus=1, gw=3, proofs=2, concurrency=2, partitions_per_proof=4, seed=23
    ),
    # concurrent proofs with Curio job ids (WindowPoSt ids contain spaces and brackets)
    "concurrent-curio": dict(
        era="main",
        n_gpus=1,
        gw=2,
        proofs=3,
        concurrency=3,
        partitions_per_proof=3,
        id_style="curio",
        wdpost_every=2,
        bench_output=False,
        seed=31,
    ),
    # the Phase 10 incident: gw=3, one proof, every partition skip_vram
    "incident": dict(
        era="phase9-11",
        n_gpus=1,
        gw=3,
        proofs=1,
        concurrency=1,
        partitions_per_proof=10,
        pw=10,
        force_skip_vram=True,
        seed=1,
    ),
    "healthy-main": dict(
        era="main", n_gpus=1, gw=2, proofs=2, concurrency=2, partitions_per_proof=5, seed=41
    ),
    # what a stderr capture holds, and C++ lines alone
    "stderr-only": dict(
        era="main",
        n_gpus=1,
        gw=2,
        proofs=2,
        concurrency=2,
        partitions_per_proof=4,
        streams="stderr",
        seed=51,
    ),
    "cpp-only": dict(
        era="phase9-11",
        n_gpus=1,
        gw=2,
        proofs=2,
        concurrency=1,
        partitions_per_proof=4,
        streams="cpp",
        seed=52,
    ),
    "messy": dict(
        era="main",
        n_gpus=1,
        gw=2,
        proofs=2,
        concurrency=2,
        partitions_per_proof=3,
        seed=61,
        **{**MESSY, "journald": True, "torn_rate": 0.08},
    ),
    # a damaged 2-GPU capture: malformed C++ lines of no call, lost GPU-region lines and
    # NUL-damaged lines on top of the messy preset; every call is still one record
    "damaged": dict(
        era="main",
        n_gpus=2,
        gw=2,
        proofs=3,
        concurrency=2,
        partitions_per_proof=4,
        seed=84,
        **{**MESSY, "journald": True, "garbage_rate": 0.05, "drop_rate": 0.05, "nul_rate": 0.05},
    ),
    "failures": dict(
        era="main",
        n_gpus=2,
        gw=2,
        proofs=3,
        concurrency=2,
        partitions_per_proof=4,
        failures=1,
        self_check_failures=1,
        seed=71,
    ),
    # Phase 12 and pool-cache code on 2 GPUs x gw=2 with 4 of 8 proofs in flight: the workers of
    # each GPU queue on its mutex about as long as they hold it, and neither version logs the
    # wait (the truth carries it as _mutex_wait_ms / _mutex_held_ms)
    "phase12-2gpu-gw2": dict(
        era="phase12",
        n_gpus=2,
        gw=2,
        proofs=8,
        concurrency=4,
        pw=20,
        partitions_per_proof=4,
        lock_truth=True,
        seed=81,
    ),
    "pool-cache-2gpu-gw2": dict(
        era="pool-cache",
        n_gpus=2,
        gw=2,
        proofs=8,
        concurrency=4,
        pw=20,
        partitions_per_proof=4,
        lock_truth=True,
        seed=82,
    ),
}

#: fixtures/example.log: a realistic main-era multi-proof run with cuzk-bench output.
EXAMPLE: dict[str, Any] = dict(
    era="main", n_gpus=2, gw=2, proofs=6, concurrency=3, partitions_per_proof=10, pw=12, seed=2026
)


def truth_json(res: SimResult) -> str:
    """One call per line: small diffs, easy to grep."""
    rows = [json.dumps(r, sort_keys=True) for r in res.truth]
    return "[\n" + ",\n".join(rows) + "\n]\n"


def build() -> dict[Path, bytes]:
    out: dict[Path, bytes] = {}
    index: dict[str, Any] = {}
    sim_dir = ROOT / "fixtures" / "sim"
    for name, kw in FIXTURES.items():
        res = simulate(SimConfig(**kw))
        assert res.data is not None
        out[sim_dir / f"{name}.log"] = res.data
        out[sim_dir / f"{name}.truth.json"] = truth_json(res).encode()
        index[name] = {"config": kw, "expected": res.expected}
    out[sim_dir / "index.json"] = (json.dumps(index, indent=1, sort_keys=True) + "\n").encode()
    ex = simulate(SimConfig(**EXAMPLE))
    assert ex.data is not None
    out[ROOT / "fixtures" / "example.log"] = ex.data
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    a = ap.parse_args(argv)
    files = build()
    stale = []
    for path, data in files.items():
        if a.check:
            if not path.exists() or path.read_bytes() != data:
                stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if a.check:
        for p in stale:
            print(f"stale: {p.relative_to(ROOT)}", file=sys.stderr)
        return 1 if stale else 0
    total = sum(len(d) for d in files.values())
    for path, data in files.items():
        print(f"{len(data):>8}  {path.relative_to(ROOT)}")
    print(f"{total:>8}  total")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
