"""Estimated savings on findings: the configuration a finding's advice points to, predicted by
the daemon model (``cuzk_diag.model.savings``) on realistic fixture logs."""

from __future__ import annotations

import io
import json
import statistics
from dataclasses import replace
from functools import cache
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from cuzk_diag.analysis import Analysis, analyze, analyze_run
from cuzk_diag.cli import cli
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.model import savings
from cuzk_diag.model.daemon import SimConfig, write_log
from cuzk_diag.model.replay import measure, metrics
from cuzk_diag.model.whatif import Scenario, whatif
from cuzk_diag.pipeline import load_run
from cuzk_diag.records import Finding
from cuzk_diag.report import render

ROOT = Path(__file__).resolve().parents[1]
INCIDENT = ROOT / "fixtures" / "sim" / "incident.log"


@cache
def incident() -> Analysis:
    return analyze([str(INCIDENT)], estimates=True)


def estimate_of(a: Analysis, name: str) -> dict:
    (f,) = [f for f in a.findings if f.name == name]
    assert f.estimate is not None, f"{name} carries no estimate"
    return f.estimate


def test_the_incident_lesson_computed_on_its_findings() -> None:
    # gw=3, one proof, every call skip_vram: one worker per GPU removes the wait, not the time
    gap = estimate_of(incident(), "pre-destructor-gap")
    assert gap["set"] == {"gw": 1}
    assert gap["predicted"]["lock_wait_ms"]["median"] == 0
    assert gap["baseline"]["lock_wait_ms"]["median"] > 4000
    assert abs(gap["s_per_proof_change"]) < 0.03
    assert (
        gap["predicted"]["call_ms_median"]["median"]
        < 0.4 * gap["baseline"]["call_ms_median"]["median"]
    )
    assert gap["summary"].startswith("With gw=1: s/proof ")
    assert "(unchanged)" in gap["summary"] and "the lock wait disappears" in gap["summary"]
    assert gap["reliable"] and gap["model_error"] < 0.10
    assert gap["command"] == f"cuzk-diag whatif {INCIDENT} --set gw=1"
    # lock-wait advises two workers per GPU: about half the wait, the same s/proof
    lock = estimate_of(incident(), "lock-wait")
    assert lock["set"] == {"gw": 2}
    wait = lock["predicted"]["lock_wait_ms"]["median"]
    assert 0.3 < wait / lock["baseline"]["lock_wait_ms"]["median"] < 0.75
    assert abs(lock["s_per_proof_change"]) < 0.03


def test_prestage_and_benchmark_shape_estimates() -> None:
    pre = estimate_of(incident(), "prestage-fallback")
    assert pre["set"] == {"prestage": "ok"}
    assert pre["s_per_proof_change"] < -0.10  # NTT+H ~2.4 s -> 0.69 s in every call
    assert any("documented pre-staged figure" in n for n in pre["notes"])
    shape = estimate_of(incident(), "benchmark-shape")
    assert shape["set"] == {"c": 15, "j": 10}
    assert shape["proofs_replayed"] == 12  # MAX_CALLS: 120 calls of 10 partitions
    assert "the model ran 12 of the 15 proofs (a bounded cost)" in shape["notes"]
    assert shape["s_per_proof_change"] < -0.30  # synthesis of ten proofs overlaps
    assert "--set c=15 --set j=10" in shape["command"]


def test_estimates_are_whatif_predictions() -> None:
    # one model: the estimate is what `whatif` predicts with the same seeds and bounds
    run = load_run([str(INCIDENT)])
    res = whatif(
        run,
        scenarios=[Scenario({"gw": 1}), Scenario(prestage="ok")],
        seeds=savings.SEEDS,
        max_calls=savings.MAX_CALLS,
        max_samples=savings.MAX_SAMPLES,
    )
    for name, sc in zip(("pre-destructor-gap", "prestage-fallback"), res.scenarios, strict=True):
        est = estimate_of(incident(), name)
        for key in savings.FIGURES:
            assert est["predicted"][key] == sc.predicted[key], (name, key)
            assert est["baseline"][key] == res.baseline[key], (name, key)


def test_the_gw1_estimate_matches_the_simulated_truth(tmp_path: Path) -> None:
    # the simulator as the judge: the incident's configuration at gw=1, three true runs
    cfg = SimConfig(
        era="phase9-11", gw=1, proofs=1, concurrency=1, pw=10, force_skip_vram=True, seed=0
    )
    true = []
    for seed in (101, 102, 103):
        path = tmp_path / f"true-{seed}.log"
        write_log(replace(cfg, seed=seed), str(path), truth=False)
        run = load_run([str(path)])
        true.append(metrics(run.partitions, run.info))
    est = estimate_of(incident(), "pre-destructor-gap")["predicted"]
    truth_sp = statistics.median(t["s_per_proof"] for t in true)
    truth_call = statistics.median(t["call_ms_median"] for t in true)
    assert abs(est["s_per_proof"]["median"] / truth_sp - 1) < 0.10
    assert abs(est["call_ms_median"]["median"] / truth_call - 1) < 0.15


def test_cost_is_bounded_on_a_long_run(tmp_path: Path) -> None:
    # 40 proofs of 10 partitions: the model replays 12 proofs (MAX_CALLS, not below j) and
    # resamples MAX_SAMPLES calls, evenly spaced; s/proof leaves the self-check
    path = tmp_path / "long.log"
    cfg = SimConfig(era="phase9-11", gw=3, proofs=40, concurrency=4, pw=20, seed=7)
    write_log(replace(cfg, force_skip_vram=True), str(path), truth=False)
    run = load_run([str(path)])
    a = analyze_run(run, estimates=True)
    ests = [f.estimate for f in a.findings if f.estimate]
    assert {e["label"] for e in ests} >= {"gw=1", "prestage=ok"}
    for e in ests:
        assert e["proofs_replayed"] == savings.MAX_CALLS // 10 < 40
    m = measure(run, max_samples=50)
    full = measure(run)
    assert len(m.samples) == 50 and len(full.samples) == 400
    assert m.knobs == full.knobs and m.metrics == full.metrics
    assert m.samples[0] == full.samples[0] and m.samples[-1] == full.samples[-1]
    res = whatif(run, scenarios=[], seeds=1, max_calls=savings.MAX_CALLS)
    assert res.capped_c == 12 and res.error["s_per_proof"] is None


def test_no_estimate_without_the_option_or_a_model() -> None:
    run = load_run([str(INCIDENT)])
    plain = analyze_run(run)
    assert all(f.estimate is None for f in plain.findings)
    assert all("estimate" not in f.to_dict() for f in plain.findings)
    # findings whose advice is no configuration get none
    assert all(
        f.estimate is None
        for f in incident().findings
        if savings.scenario_for(f, incident().facts) is None
    )
    # a run the model cannot replay (batch-all calls) keeps its findings, without estimates
    run.partitions["num_circuits"] = 10
    batch = analyze_run(run, estimates=True)
    assert [f.name for f in batch.findings] and all(f.estimate is None for f in batch.findings)


def test_reports_show_the_estimate() -> None:
    a = incident()
    doc = json.loads(_rendered(a, "json"))
    text = (ROOT / "docs" / "report-schema.md").read_text(encoding="utf-8")
    schema = json.loads(text.split("## JSON Schema")[1].split("```json\n")[1].split("```")[0])
    jsonschema.validate(doc, schema)
    by_name = {f["name"]: f for f in doc["findings"]}
    assert by_name["pre-destructor-gap"]["estimate"]["set"] == {"gw": 1}
    line = by_name["pre-destructor-gap"]["estimate"]["summary"]
    console = " ".join(_rendered(a, "console").split())
    assert "estimate With gw=1: s/proof" in console
    assert "against its replay of this run as measured" in console
    md = _rendered(a, "markdown")
    assert f"**Estimate**: {line}" in md.replace("\\", "")
    assert 'class="estimate"' in _rendered(a, "html")


def test_cli_estimates_by_default_and_no_estimates() -> None:
    runner = CliRunner()
    on = runner.invoke(cli, ["analyze", str(INCIDENT), "--format", "json"])
    assert on.exit_code == ExitCode.OK, on.output
    assert any("estimate" in f for f in json.loads(on.stdout)["findings"])
    off = runner.invoke(cli, ["analyze", str(INCIDENT), "--format", "json", "--no-estimates"])
    assert off.exit_code == ExitCode.OK, off.output
    assert not any("estimate" in f for f in json.loads(off.stdout)["findings"])


def test_scenario_for_follows_the_advice() -> None:
    facts = incident().facts
    by_name = {f.name: f for f in incident().findings}
    assert savings.scenario_for(by_name["lock-wait"], facts) == Scenario({"gw": 2})
    gw2 = replace(facts, gw=2)
    assert savings.scenario_for(by_name["lock-wait"], gw2) == Scenario({"gw": 1})
    interlock = Finding(
        "CZ202", "lock-wait", by_name["lock-wait"].severity, "t", "m", {"kind": ["interlock"]}
    )
    assert savings.scenario_for(interlock, facts) is None
    main = replace(facts, era="main")
    assert savings.scenario_for(by_name["prestage-fallback"], main) is None


def _rendered(a: Analysis, fmt: str) -> str:
    buf = io.StringIO()
    render(fmt, a, buf, color="never")
    return buf.getvalue()
