"""What if: predict a run's throughput and latency under another configuration, from its log.

The daemon model (:mod:`cuzk_diag.model.daemon`) replays the measured calls
(:mod:`cuzk_diag.model.replay`) under the measured configuration first (the self-check: its
error against the measured figures says how far to trust the model on this log), then under
each scenario. Every prediction is the median over several seeds, with the lowest and highest
seed as its interval. Documented in docs/whatif.md.

Library use::

    from cuzk_diag.pipeline import load_run
    from cuzk_diag.model.whatif import whatif
    res = whatif(load_run(["daemon.log"]), sets={"gw": "1"})
    res.to_dict()["scenarios"][0]["predicted"]["s_per_proof"]   # {"median", "low", "high"}
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cuzk_diag.errors import InputError
from cuzk_diag.facts import RunFacts
from cuzk_diag.model.replay import (
    KNOBS,
    PRESTAGED_NTT_MS,
    SCALABLE,
    Measured,
    measure,
    replay,
    scaled_keys,
)

#: Eras whose code pre-stages the NTT inputs (V4-V8), where ``prestage=ok`` applies.
PRESTAGE_ERAS = frozenset({"phase9-11", "phase12"})
#: Self-check error above which a prediction is flagged unreliable.
MAX_ERROR = 0.10
#: Seeds per prediction by default.
DEFAULT_SEEDS = 5
#: Figures compared in the self-check.
CHECKED = ("s_per_proof", "call_ms_median", "lock_wait_ms")
#: Numeric figures summarised per prediction (median, low, high over the seeds).
NUMERIC = (
    "s_per_proof",
    "proofs_per_min",
    "call_ms_median",
    "call_ms_p95",
    "lock_wait_ms",
    "gpu_util_timeline",
    "gpu_util_lock",
    "gpu_util_kernel",
)
#: Knobs ``--set`` accepts besides the numeric ones.
SET_KEYS = (*KNOBS, "prestage")


def parse_assignments(items: Sequence[str], what: str) -> dict[str, str]:
    """``["gw=2", "c=15"]`` -> ``{"gw": "2", "c": "15"}``; InputError on a malformed item."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise InputError(f"{what} {item!r}: expected NAME=VALUE")
        out[key] = value
    return out


def _int_knob(name: str, value: str) -> int:
    try:
        v = int(value)
    except ValueError:
        raise InputError(f"--set {name}={value}: expected a whole number") from None
    if v < 1:
        raise InputError(f"--set {name}={value}: must be at least 1")
    return v


def check_sets(sets: dict[str, str]) -> tuple[dict[str, int], str | None]:
    """Validate ``--set`` items: (numeric knobs, prestage value or None)."""
    knobs: dict[str, int] = {}
    prestage = None
    for k, v in sets.items():
        if k == "prestage":
            if v != "ok":
                raise InputError(f"--set prestage={v}: the only value is ok")
            prestage = v
        elif k in KNOBS:
            knobs[k] = _int_knob(k, v)
        else:
            raise InputError(f"--set {k}: unknown knob (choose from {', '.join(SET_KEYS)})")
    return knobs, prestage


def check_scales(scales: dict[str, str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in scales.items():
        if k not in SCALABLE:
            raise InputError(
                f"--scale {k}: not a replayed field (choose from {', '.join(SCALABLE)})"
            )
        try:
            f = float(v)
        except ValueError:
            raise InputError(f"--scale {k}={v}: expected a number") from None
        if not f > 0 or f == float("inf"):
            raise InputError(f"--scale {k}={v}: the factor must be a positive number")
        out[k] = f
    return out


def parse_sweep(spec: str) -> tuple[str, list[str]]:
    """``"gw=1,2,3"`` -> ``("gw", ["1", "2", "3"])``."""
    key, sep, values = spec.partition("=")
    vals = [v.strip() for v in values.split(",") if v.strip()]
    if not sep or key.strip() not in KNOBS or not vals:
        raise InputError(
            f"--sweep {spec!r}: expected KNOB=V1,V2,... with KNOB one of {', '.join(KNOBS)}"
        )
    return key.strip(), vals


# -- scenarios ------------------------------------------------------------------------------


@dataclass
class Scenario:
    """One configuration to predict: knob changes, stage scales, pre-staging."""

    knobs: dict[str, int] = field(default_factory=dict)  # only the changed knobs
    scale: dict[str, float] = field(default_factory=dict)
    prestage: str | None = None

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.knobs.items()]
        parts += [f"{k}×{v:g}" for k, v in self.scale.items()]
        if self.prestage:
            parts.append(f"prestage={self.prestage}")
        return " ".join(parts) or "as measured"

    def set_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = dict(self.knobs)
        if self.prestage:
            d["prestage"] = self.prestage
        return d


def scenario_samples(
    m: Measured, sc: Scenario, seed: int = 0
) -> tuple[list[dict[str, Any]], list[str]]:
    """The measured call samples edited for ``sc``, and notes on where values came from."""
    notes: list[str] = []
    samples = [dict(s) for s in m.samples]
    if sc.prestage == "ok":
        if m.era not in PRESTAGE_ERAS:
            raise InputError(
                f"--set prestage=ok: this log's code ({m.era}) does not pre-stage; it applies "
                "to Phase 9-12 code (groth16_cuda.cu V4-V8)"
            )
        fell = [s for s in samples if s.get("prestage") not in (None, "ok")]
        rng = random.Random(seed)
        if m.prestaged_ntt:
            notes.append(
                f"{len(fell)} calls that fell back take the NTT+H time of the "
                f"{len(m.prestaged_ntt)} pre-staged calls of this log"
            )
        else:
            notes.append(
                f"{len(fell)} calls that fell back take {PRESTAGED_NTT_MS:.0f} ms "
                "NTT+H, the documented pre-staged figure (format reference section 6.1); the "
                "log has no pre-staged call to measure it from"
            )
        for s in fell:
            s["prestage"] = "ok"
            s["ntt"] = rng.choice(m.prestaged_ntt) if m.prestaged_ntt else PRESTAGED_NTT_MS
    for fld, factor in sc.scale.items():
        keys = scaled_keys(m.era, fld)
        if not keys or not any(k in s for s in samples for k in keys):
            raise InputError(f"--scale {fld}: this log has no measured {fld} to scale")
        for s in samples:
            for k in keys:
                if k in s:
                    s[k] *= factor
    return samples, notes


# -- results --------------------------------------------------------------------------------


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median, low and high over the seeds of each figure; the most frequent bottleneck."""
    out: dict[str, Any] = {}
    for k in NUMERIC:
        vals = [r[k] for r in runs if r.get(k) is not None]
        out[k] = (
            {"median": statistics.median(vals), "low": min(vals), "high": max(vals)}
            if vals
            else None
        )
    floors: dict[str, Any] = {}
    for stage in ("synthesis", "gpu", "workers"):
        vals = [r["floors_s"][stage] for r in runs if r["floors_s"].get(stage) is not None]
        if vals:
            floors[stage] = {"median": statistics.median(vals), "low": min(vals), "high": max(vals)}
    out["floors_s"] = floors
    necks = Counter(r["bottleneck"] for r in runs if r.get("bottleneck"))
    out["bottleneck"] = necks.most_common(1)[0][0] if necks else None
    out["call_field"] = next((r["call_field"] for r in runs if r.get("call_field")), None)
    out["lock_wait_method"] = next((r["lock_wait_method"] for r in runs), None)
    return out


def model_error(measured: dict[str, Any], predicted: dict[str, Any]) -> dict[str, float | None]:
    """Relative error of the predicted medians against the measured figures. Lock wait is
    compared as a share of the measured median call time (it can be close to zero)."""
    err: dict[str, float | None] = {}
    for k in CHECKED:
        m, p = measured.get(k), (predicted.get(k) or {}).get("median")
        ref = measured.get("call_ms_median") if k == "lock_wait_ms" else m
        err[k] = abs(p - m) / ref if m is not None and p is not None and ref else None
    return err


@dataclass
class ScenarioResult:
    scenario: Scenario
    knobs: dict[str, int]  # the full configuration
    predicted: dict[str, Any]
    notes: list[str]

    def summary(self, baseline: dict[str, Any]) -> str:
        """One sentence: what changes against the model of the measured configuration."""
        parts = []
        for key, what, unit in (
            ("s_per_proof", "s/proof", " s"),
            ("call_ms_median", "median call time", " ms"),
            ("lock_wait_ms", "lock wait per call", " ms"),
        ):
            b, p = baseline.get(key), self.predicted.get(key)
            if not b or not p:
                continue
            bm, pm = b["median"], p["median"]
            if key == "s_per_proof":
                overlap = p["low"] <= b["high"] and b["low"] <= p["high"]
                same = overlap or (bm and abs(pm / bm - 1) < 0.02)
                change = f"{pm / bm - 1:+.1%}" if bm else "n/a"
                verdict = "unchanged" if same else change
                parts.append(f"{what} {bm:.1f} → {pm:.1f}{unit} ({verdict})")
            elif key == "lock_wait_ms" and pm < 1 <= bm:
                parts.append(f"the lock wait disappears ({bm:,.0f} → 0 ms per call)")
            else:
                parts.append(f"{what} {bm:,.0f} → {pm:,.0f}{unit}")
        return f"{self.scenario.label()}: " + "; ".join(parts)

    def to_dict(self, baseline: dict[str, Any], reliable: bool) -> dict[str, Any]:
        base = (baseline.get("s_per_proof") or {}).get("median")
        mine = (self.predicted.get("s_per_proof") or {}).get("median")
        return {
            "label": self.scenario.label(),
            "summary": self.summary(baseline),
            "set": self.scenario.set_dict(),
            "scale": dict(self.scenario.scale),
            "knobs": dict(self.knobs),
            "predicted": self.predicted,
            "s_per_proof_change": mine / base - 1.0 if base and mine is not None else None,
            "reliable": reliable,
            "notes": list(self.notes),
        }


@dataclass
class WhatIfResult:
    """The self-check on the measured configuration and one prediction per scenario."""

    inputs: list[str]
    seeds: list[int]
    measured: Measured
    baseline: dict[str, Any]  # predicted summary of the measured configuration
    error: dict[str, float | None]
    scenarios: list[ScenarioResult]
    #: proofs per model run when ``max_calls`` lowered ``c`` below the measured count
    capped_c: int | None = None

    @property
    def max_error(self) -> float | None:
        vals = [v for v in self.error.values() if v is not None]
        return max(vals) if vals else None

    @property
    def reliable(self) -> bool:
        e = self.max_error
        return e is not None and e <= MAX_ERROR

    def warnings(self) -> list[str]:
        out = []
        e = self.max_error
        if e is None:
            out.append(
                "self-check impossible: the log lacks the figures to compare (s/proof, call "
                "time, lock wait); predictions are unchecked"
            )
        elif e > MAX_ERROR:
            known = {k: v for k, v in self.error.items() if v is not None}
            worst = max(known, key=known.__getitem__)
            out.append(
                f"model error {e:.1%} on {worst} exceeds {MAX_ERROR:.0%} when replaying the "
                "measured configuration: the predictions are unreliable"
            )
        if len(self.measured.samples) < 20:
            out.append(
                f"only {len(self.measured.samples)} calls to resample: intervals are narrow "
                "estimates of what this build can do"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON layout of docs/whatif.md (plain JSON types, NaN as None)."""
        from cuzk_diag.rules.base import clean_value

        return clean_value(self._dict())  # type: ignore[no-any-return]

    def _dict(self) -> dict[str, Any]:
        m = self.measured
        return {
            "inputs": list(self.inputs),
            "seeds": list(self.seeds),
            "model": m.to_dict(),
            "baseline": {
                "set": dict(m.knobs),
                "measured": {k: m.metrics.get(k) for k in (*NUMERIC, "bottleneck")}
                | {"floors_s": m.metrics.get("floors_s")},
                "predicted": self.baseline,
                "error": dict(self.error),
                "max_error": self.max_error,
                "reliable": self.reliable,
            },
            "scenarios": [s.to_dict(self.baseline, self.reliable) for s in self.scenarios],
            "warnings": self.warnings(),
        }


def build_scenarios(
    sets: dict[str, str] | None = None,
    scales: dict[str, str] | None = None,
    sweep: str | None = None,
) -> list[Scenario]:
    """The scenarios of ``--set``/``--scale`` (one) or of ``--sweep`` (one per value)."""
    knobs, prestage = check_sets(dict(sets or {}))
    scale = check_scales(dict(scales or {}))
    if sweep:
        key, values = parse_sweep(sweep)
        return [Scenario({**knobs, key: _int_knob(key, v)}, scale, prestage) for v in values]
    if knobs or scale or prestage:
        return [Scenario(knobs, scale, prestage)]
    return []


def capped_proofs(knobs: dict[str, int], partitions_per_proof: int, max_calls: int) -> int:
    """``c`` lowered so that a model run replays about ``max_calls`` calls, never below ``j``
    (the proofs in flight, which set the steady state)."""
    return min(knobs["c"], max(knobs["j"], max_calls // max(1, partitions_per_proof), 1))


def whatif(
    run: Any,
    sets: dict[str, str] | None = None,
    scales: dict[str, str] | None = None,
    sweep: str | None = None,
    seeds: int = DEFAULT_SEEDS,
    scenarios: Sequence[Scenario] | None = None,
    *,
    facts: RunFacts | None = None,
    max_calls: int | None = None,
    max_samples: int | None = None,
) -> WhatIfResult:
    """Self-check the model on ``run`` (``pipeline.Run``), then predict each scenario: the
    ``sets``/``scales`` edits, one per value of ``sweep`` (``"gw=1,2,3"``), or ``scenarios``.

    For a bounded cost whatever the log's size: ``facts`` (the run's ``RunFacts``, when already
    computed), ``max_samples`` (measured calls resampled, evenly spaced over the run) and
    ``max_calls`` (each model run replays about this many calls: ``c`` is lowered, not below
    ``j``; s/proof then leaves the self-check, since a shorter run has more ramp-up)."""
    if seeds < 1:
        raise InputError("--seeds must be at least 1")
    todo = list(scenarios) if scenarios is not None else build_scenarios(sets, scales, sweep)
    m = measure(run, facts=facts, max_samples=max_samples)
    seed_list = list(range(1, seeds + 1))
    ppp = m.partitions_per_proof
    base_knobs = dict(m.knobs)
    capped_c = None
    if max_calls is not None:
        base_knobs["c"] = capped_proofs(base_knobs, ppp, max_calls)
        capped_c = base_knobs["c"] if base_knobs["c"] < m.knobs["c"] else None
    baseline = summarise(replay(m, base_knobs, seed_list))
    error = model_error(m.metrics, baseline)
    if capped_c is not None:
        error["s_per_proof"] = None
    results = []
    for sc in todo:
        samples, notes = scenario_samples(m, sc)
        full = {**m.knobs, **sc.knobs}
        if full["j"] > full["c"]:
            notes.append(f"j={full['j']} exceeds c={full['c']}: at most {full['c']} in flight")
        if max_calls is not None:
            c = capped_proofs(full, ppp, max_calls)
            if c < full["c"]:
                notes.append(f"the model ran {c} of the {full['c']} proofs (a bounded cost)")
            full["c"] = c
        pred = summarise(replay(m, full, seed_list, samples))
        results.append(ScenarioResult(sc, full, pred, notes))
    inputs = list(getattr(run, "inputs", []) or [])
    return WhatIfResult(inputs, seed_list, m, baseline, error, results, capped_c)
