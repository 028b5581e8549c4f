"""Side-by-side comparison of two runs on synthetic partition frames."""

from __future__ import annotations

import json

import pytest

from _gate_runs import finding, make_queue_run, make_run, mostly_zero_waits
from cuzk_diag import compare, gate
from cuzk_diag.records import Severity


def test_stage_rows_deltas_and_significance():
    base = make_run(80, seed=1, label="phase8.log")
    cand = make_run(80, seed=2, slow=1.10, label="phase9.log")
    cmp = compare.compare_metrics(base, cand)
    row = cmp.stage("gpu_total_ms")
    assert row.n_base == row.n_cand == 80
    assert row.delta_p50 == pytest.approx(0.10, abs=0.04)
    assert row.significant and row.verdict == "slower"
    assert row.p_adjusted >= row.p_value
    assert row.rank_biserial > 0.5
    assert row.shift == pytest.approx(180, abs=60)
    assert {s.field for s in cmp.significant} >= {"gpu_total_ms", "prep_msm_ms", "gpu_ms"}
    # kernel_ms is the kernel view: gpu_total_ms without the barrier wait
    assert cmp.stage("kernel_ms").n_base == cmp.stage("gpu_total_ms").n_base
    assert cmp.stage("kernel_ms").base_p50 < cmp.stage("gpu_total_ms").base_p50


def test_identical_configuration_same_timings_not_significant():
    base = make_run(60, seed=1)
    cand = make_run(60, seed=2)
    cmp = compare.compare_metrics(base, cand)
    assert not cmp.significant
    assert all(s.verdict == "same" for s in cmp.stages)


def test_faster_candidate():
    cmp = compare.compare_metrics(make_run(60, seed=1), make_run(60, seed=2, slow=0.5))
    assert cmp.stage("ntt_msm_h_ms").verdict == "faster"
    assert cmp.stage("ntt_msm_h_ms").delta_p50 == pytest.approx(-0.5, abs=0.05)


def test_verdict_follows_the_test_when_most_values_are_zero():
    waits_base, waits_cand = mostly_zero_waits()
    base = make_queue_run(waits_base, seed=1, label="base.log")
    cand = make_queue_run(waits_cand, seed=2, label="cand.log")
    row = compare.compare_metrics(base, cand).stage("gpu_queue_wait_ms")
    assert row.shift == 0.0  # most pairs differ by 0
    assert row.cand_p95 > 1000 and row.base_p95 == 1.0
    assert row.significant and row.rank_biserial > 0
    assert row.verdict == "slower"
    assert compare.verdict_mark(row) == "▲ slower"
    # and the other way round
    back = compare.compare_metrics(cand, base).stage("gpu_queue_wait_ms")
    assert back.significant and back.rank_biserial < 0
    assert back.verdict == "faster"


def test_stage_present_in_one_run_only():
    base = make_run(30, seed=1, drop=["gpu_total_ms"])
    cand = make_run(30, seed=2)
    cmp = compare.compare_metrics(base, cand)
    row = cmp.stage("gpu_total_ms")
    assert row.verdict == "only-candidate" and row.p_value is None and not row.significant
    assert cmp.stage("kernel_ms").n_base == 30


def test_findings_in_one_run_only():
    base = make_run(
        30, findings=[finding("CZ101", Severity.ERROR), finding("CZ200", Severity.WARNING)]
    )
    cand = make_run(
        30,
        seed=3,
        findings=[finding("CZ200", Severity.WARNING), finding("CZ300", Severity.WARNING)] * 2,
    )
    cmp = compare.compare_metrics(base, cand)
    assert [f.code for f in cmp.findings_new] == ["CZ300"]
    assert [f.code for f in cmp.findings_gone] == ["CZ101"]
    (both,) = cmp.findings_both
    assert (both.code, both.base_count, both.cand_count) == ("CZ200", 1, 2)


def test_run_rows():
    cmp = compare.compare_metrics(
        make_run(30, s_per_proof=40.0), make_run(30, seed=2, s_per_proof=36.0)
    )
    rows = {r.metric: r for r in cmp.runs}
    assert rows["s_per_proof"].delta == pytest.approx(-0.1)
    assert rows["calls.n"].base == 30


def test_refuses_different_shapes():
    base = make_run(30, n_gpus=1, facts={"bench_concurrency": 3})
    cand = make_run(30, n_gpus=2, facts={"bench_concurrency": 15}, proof_kind="snap")
    with pytest.raises(gate.ShapeMismatchError) as exc:
        compare.compare_metrics(base, cand)
    msg = str(exc.value)
    assert "GPUs: 1 (baseline) vs 2 (candidate)" in msg
    assert "proof kind" in msg and "-j" in msg
    cmp = compare.compare_metrics(base, cand, allow_different_config=True)
    assert {d[0] for d in cmp.shape_differences} == {"n_gpus", "proof_kind", "bench_concurrency"}


def test_refuses_empty_run():
    with pytest.raises(gate.NoDataError):
        compare.compare_metrics(make_run(0), make_run(10))


def test_to_dict_is_strict_json():
    cmp = compare.compare_metrics(
        make_run(30, seed=1, drop=["gpu_total_ms"], findings=[finding()]), make_run(30, seed=2)
    )
    d = json.loads(json.dumps(cmp.to_dict(), allow_nan=False))
    assert d["stages"][0]["field"] == "synth_ms"  # schema order: TIMELINE first
    assert {"new", "gone", "both"} == set(d["findings"])
    assert d["findings"]["gone"][0]["code"] == "CZ101"


def test_markdown_table():
    md = compare.to_markdown(
        compare.compare_metrics(
            make_run(60, seed=1, label="a.log"), make_run(60, seed=2, slow=1.1, label="b.log")
        )
    )
    assert md.startswith("## cuzk-diag compare: `a.log` → `b.log`")
    row = next(line for line in md.splitlines() if line.startswith("| `gpu_total_ms`"))
    assert "→" in row and "▲ slower" in row and "**+" in row
    assert "| `s_per_proof` |" in md
