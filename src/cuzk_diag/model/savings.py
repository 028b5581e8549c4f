"""Estimated savings: what the configuration a finding's advice points to would give.

A finding whose advice is a configuration change that ``cuzk-diag whatif`` can model gets an
``estimate``: the daemon model (:mod:`cuzk_diag.model.whatif`) replays the run's measured calls
under the measured configuration and under the advised one, and the finding carries both
predictions. The cost does not grow with the log: at most ``MAX_SAMPLES`` measured calls are
resampled, each model run replays about ``MAX_CALLS`` calls, over ``SEEDS`` seeds, and one
baseline serves every finding. Documented in docs/whatif.md ("Estimated savings").

================================  ==========================================================
finding                           scenario
================================  ==========================================================
``lock-wait``, kind queueing      ``gw=2`` (``gw=1`` from gw=2): fewer workers per GPU
``pre-destructor-gap``, lock wait ``gw=1``: no worker waits for the GPU mutex
``prestage-fallback``             ``prestage=ok`` (Phase 9-12 code): no call falls back
``benchmark-shape``               ``c=15 j=10``: the suggested concurrent-proof run
================================  ==========================================================

Library use::

    from cuzk_diag.analysis import analyze
    a = analyze(["daemon.log"], estimates=True)
    [f.estimate["summary"] for f in a.findings if f.estimate]
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from cuzk_diag.errors import InputError
from cuzk_diag.facts import RunFacts
from cuzk_diag.model.whatif import PRESTAGE_ERAS, Scenario, ScenarioResult, WhatIfResult, whatif
from cuzk_diag.records import Finding

#: Seeds per estimate (``whatif`` defaults to 5; findings trade some interval for speed).
SEEDS = 3
#: Calls each model run replays at most (about): ``c`` is lowered, not below ``j``.
MAX_CALLS = 120
#: Measured calls resampled at most, evenly spaced over the run.
MAX_SAMPLES = 2000
#: The concurrent-proof run ``benchmark-shape`` suggests (``cuzk-bench batch -c 15 -j 10``).
SUGGESTED = {"c": 15, "j": 10}
#: Figures an estimate carries (``whatif`` prediction keys).
FIGURES = ("s_per_proof", "call_ms_median", "lock_wait_ms")


def scenario_for(finding: Finding, facts: RunFacts) -> Scenario | None:
    """The what-if scenario ``finding``'s advice points to, or None."""
    ev = finding.evidence
    kinds = ev.get("kind") or []
    gw = facts.gw or 0
    if finding.name == "lock-wait" and "queueing" in kinds and gw >= 2:
        return Scenario({"gw": 2 if gw > 2 else 1})
    if finding.name == "pre-destructor-gap" and ev.get("dominant") == "lock_wait" and gw >= 2:
        return Scenario({"gw": 1})
    if finding.name == "prestage-fallback" and facts.era in PRESTAGE_ERAS:
        return Scenario(prestage="ok")
    if finding.name == "benchmark-shape" and (
        "single_proof_contended" in kinds or "sequential_proofs" in kinds
    ):
        return Scenario(dict(SUGGESTED))
    return None


def _figure(summary: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = summary.get(key)
    return dict(value) if value else None


def estimate_dict(res: WhatIfResult, sc: ScenarioResult, inputs: Sequence[str]) -> dict[str, Any]:
    """The ``estimate`` of a finding (layout in docs/report-schema.md)."""
    base = res.baseline
    pred = sc.predicted
    b = (base.get("s_per_proof") or {}).get("median")
    p = (pred.get("s_per_proof") or {}).get("median")
    flags = [f"--set {k}={v}" for k, v in sc.scenario.set_dict().items()]
    logs = " ".join(shlex.quote(i) for i in inputs) or "LOG"
    reliable = res.reliable
    summary = "With " + sc.summary(base)
    if not reliable:
        err = res.max_error
        why = f"self-check error {err:.0%}" if err is not None else "no self-check possible"
        summary += f" (model {why}: unreliable)"
    return {
        "set": sc.scenario.set_dict(),
        "label": sc.scenario.label(),
        "summary": summary,
        "baseline": {k: _figure(base, k) for k in FIGURES},
        "predicted": {k: _figure(pred, k) for k in FIGURES},
        "s_per_proof_change": p / b - 1.0 if b and p is not None else None,
        "reliable": reliable,
        "model_error": res.max_error,
        "proofs_replayed": sc.knobs["c"],
        "seeds": len(res.seeds),
        "notes": list(sc.notes),
        "command": f"cuzk-diag whatif {logs} {' '.join(flags)}",
    }


def estimate_findings(
    run: Any, facts: RunFacts, findings: Sequence[Finding], inputs: Sequence[str] = ()
) -> list[Finding]:
    """``findings`` with an ``estimate`` on each one whose advice the model can answer. A run
    the model cannot replay (unknown era, batch-all calls, no completed call) gets none."""
    wanted: dict[str, tuple[Scenario, list[int]]] = {}
    for i, f in enumerate(findings):
        sc = scenario_for(f, facts)
        if sc is not None:
            wanted.setdefault(sc.label(), (sc, []))[1].append(i)
    if not wanted:
        return list(findings)
    try:
        res = whatif(
            run,
            seeds=SEEDS,
            scenarios=[sc for sc, _ in wanted.values()],
            facts=facts,
            max_calls=MAX_CALLS,
            max_samples=MAX_SAMPLES,
        )
    except (InputError, ValueError):  # a run the model cannot take: no estimates
        return list(findings)
    out = list(findings)
    for (_, idx), result in zip(wanted.values(), res.scenarios, strict=True):
        est = estimate_dict(res, result, inputs)
        for i in idx:
            out[i] = replace(out[i], estimate=est)
    return out
