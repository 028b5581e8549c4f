"""Gate specs, run metrics and gate evaluation on synthetic partition frames."""

from __future__ import annotations

import math
import tomllib

import pytest

from _gate_runs import finding, make_partitions, make_queue_run, make_run, mostly_zero_waits
from cuzk_diag import gate
from cuzk_diag.errors import ConfigError
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.gate import GateKind, GateSpec, GateStatus, Origin
from cuzk_diag.records import Severity

# ------------------------------------------------------------------ metrics


def test_metrics_cover_every_timing_column_present():
    run = make_run(60)
    for col in ("gpu_total_ms", "ntt_msm_h_ms", "prep_msm_ms", "gpu_ms", "kernel_ms"):
        for stat in ("p50", "p95", "mean", "n"):
            assert run.values[f"{col}.{stat}"] is not None, (col, stat)
    assert run.values["gpu_total_ms.n"] == 60
    assert 1700 < run.values["gpu_total_ms.p50"] < 1900
    assert run.values["gpu_total_ms.p95"] > run.values["gpu_total_ms.p50"]
    assert run.values["calls.n"] == 60
    assert run.values["s_per_proof"] == 36.7
    assert run.values["util_kernel"] == 0.47
    # a stage with no values is named but unmeasured
    assert run.get("epilogue_ms.p50") is None
    assert run.get("gpu_total_ms.median") == run.values["gpu_total_ms.p50"]


def test_kernel_sum_stands_in_for_missing_gpu_total():
    df = make_partitions(20, drop=["gpu_total_ms"])
    run = gate.metrics_from_frame(df)
    assert "gpu_total_ms" not in run.samples
    expected = (df["ntt_msm_h_ms"] + df["batch_add_ms"] + df["tail_msm_ms"]).astype(float)
    assert run.values["kernel_ms.p50"] == pytest.approx(expected.median())


def test_utilisation_views_and_kernel_time_without_barrier_wait():
    df = make_partitions(20)
    facts = {"gpu_util": 0.9, "held_util": 0.8, "kernel_util": 0.5}
    run = gate.metrics_from_frame(df, facts=facts)
    assert (run.values["util_merged"], run.values["util_held"], run.values["util_kernel"]) == (
        0.9,
        0.8,
        0.5,
    )
    assert "util_held" in gate.known_metric_names()
    # kernel_ms is the kernel view: the measured stages, not gpu_total_ms with its barrier wait
    expected = (df["ntt_msm_h_ms"] + df["batch_add_ms"] + df["tail_msm_ms"]).astype(float)
    assert run.values["kernel_ms.p50"] == pytest.approx(expected.median())
    assert run.values["kernel_ms.p50"] < run.values["gpu_total_ms.p50"]


def test_prestage_fallback_rate():
    df = make_partitions(10, prestage=["ok"] * 7 + ["fallback", "skip_vram", "silent"])
    run = gate.metrics_from_frame(df)
    assert run.values["prestage_fallback.count"] == 3
    assert run.values["prestage_fallback.rate"] == pytest.approx(0.3)
    clean = gate.metrics_from_frame(make_partitions(10))  # era without pre-staging
    assert clean.values["prestage_fallback.rate"] == 0


def test_host_register_fallback_counts_as_prestage_fallback():
    df = make_partitions(4)
    df["host_register"] = ["fallback", None, None, None]
    run = gate.metrics_from_frame(df)
    assert run.values["host_register_fallback.count"] == 1
    assert run.values["prestage_fallback.count"] == 1


def test_findings_counts_and_shape():
    run = make_run(
        20,
        findings=[finding("A", Severity.ERROR), finding("B", Severity.WARNING)],
        facts={"bench_count": 20, "bench_concurrency": 15},
    )
    assert run.values["findings.error"] == 1
    assert run.values["findings.warning"] == 1
    assert run.values["findings.total"] == 2
    assert run.shape.era == "phase12"
    assert run.shape.gw == 2
    assert run.shape.proof_kind == "porep-c2"
    assert run.shape.bench_count == 20
    assert run.shape.bench_concurrency == 15


# ------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    ("text", "metric", "op", "value"),
    [
        ("s_per_proof <= 40", "s_per_proof", "<=", 40.0),
        ("gpu_total_ms.p50<=2000", "gpu_total_ms.p50", "<=", 2000.0),
        ("prestage_fallback.rate == 0", "prestage_fallback.rate", "==", 0.0),
        ("prestage_fallback.rate = 0", "prestage_fallback.rate", "==", 0.0),
        ("util_kernel >= 45%", "util_kernel", ">=", 0.45),
        ("gpu_total_ms.median < 1.9e3", "gpu_total_ms.p50", "<", 1900.0),
    ],
)
def test_parse_bound(text, metric, op, value):
    b = gate.parse_bound(text)
    assert (b.metric, b.op, b.value) == (metric, op, pytest.approx(value))
    assert b.origin is Origin.CLI


@pytest.mark.parametrize(
    "text",
    [
        "s_per_proof",
        "s_per_proof <= forty",
        "<= 40",
        "gpu_total_ms.p42 <= 3",
        "s_per_proof <= 1e999",  # (beyond a float: refused, not an internal error later)
        "s_per_proof >= -1e400",
    ],
)
def test_parse_bound_rejects(text):
    with pytest.raises(ConfigError):
        gate.parse_bound(text)


@pytest.mark.parametrize(
    ("text", "metric", "limit", "relative", "enabled"),
    [
        ("gpu_total_ms.p50: +5%", "gpu_total_ms.p50", 0.05, True, True),
        ("util_kernel: -3%", "util_kernel", -0.03, True, True),
        ("s_per_proof:+2", "s_per_proof", 2.0, False, True),
        ("gpu_total_ms.p50: 10%", "gpu_total_ms.p50", 0.10, True, True),
        ("s_per_proof: off", "s_per_proof", 0.0, True, False),
    ],
)
def test_parse_regression(text, metric, limit, relative, enabled):
    r = gate.parse_regression(text)
    assert (r.metric, r.relative, r.enabled) == (metric, relative, enabled)
    assert r.limit == pytest.approx(limit)


@pytest.mark.parametrize("text", ["gpu_total_ms.p50 +5%", "s_per_proof: five", "x: +5%%"])
def test_parse_regression_rejects(text):
    with pytest.raises(ConfigError):
        gate.parse_regression(text)


TOML = """
[tool.cuzk-diag.gates]
fail_on = "warning"
alpha = 0.01
[tool.cuzk-diag.gates.bounds]
"s_per_proof" = "<= 40"
"gpu_total_ms.p50" = "<= 2000"
"prestage_fallback.rate" = "== 0"
"util_kernel" = [">= 0.3", "<= 1"]
[tool.cuzk-diag.gates.regressions]
"gpu_total_ms.p95" = "+10%"
"s_per_proof" = "off"
"""


def test_spec_from_toml():
    table = tomllib.loads(TOML)["tool"]["cuzk-diag"]["gates"]
    spec = gate.spec_from_config(table)
    assert spec.fail_on is Severity.WARNING
    assert spec.alpha == 0.01
    assert [b.name for b in spec.bounds] == [
        "s_per_proof <= 40",
        "gpu_total_ms.p50 <= 2000",
        "prestage_fallback.rate == 0",
        "util_kernel >= 0.3",
        "util_kernel <= 1",
    ]
    assert {r.metric: r.enabled for r in spec.regressions} == {
        "gpu_total_ms.p95": True,
        "s_per_proof": False,
    }


@pytest.mark.parametrize(
    "table",
    [
        {"fail_onn": "error"},
        {"fail_on": "fatal"},
        {"alpha": 2},
        {"bounds": {"s_per_proof": 40}},
        {"bounds": {"s_per_proof": "40"}},
        {"regressions": {"s_per_proof": 5}},
        {"bounds": "s_per_proof <= 40"},
    ],
)
def test_spec_from_config_rejects(table):
    with pytest.raises(ConfigError):
        gate.spec_from_config(table)


def test_cli_overrides_replace_config_per_metric():
    spec = gate.spec_from_config(tomllib.loads(TOML)["tool"]["cuzk-diag"]["gates"])
    spec = spec.override(
        fail_on=Severity.ERROR,
        bounds=[gate.parse_bound("s_per_proof <= 45")],
        regressions=[gate.parse_regression("s_per_proof: +1%")],
        alpha=0.05,
    )
    assert spec.fail_on is Severity.ERROR
    assert spec.alpha == 0.05
    assert [b.name for b in spec.bounds if b.metric == "s_per_proof"] == ["s_per_proof <= 45"]
    assert len(spec.bounds) == 5
    (sp,) = [r for r in spec.regressions if r.metric == "s_per_proof"]
    assert sp.enabled and sp.limit == pytest.approx(0.01) and sp.origin is Origin.CLI
    assert spec.override().fail_on is Severity.ERROR
    assert spec.override(fail_on=None).fail_on is None


# ------------------------------------------------------------------ evaluation


def _by_name(result, prefix):
    (r,) = [r for r in result.results if r.name.startswith(prefix)]
    return r


def test_default_gates_fail_on_error_findings_only():
    spec = GateSpec()
    ok = gate.check(spec, make_run(findings=[finding("W", Severity.WARNING)]))
    assert ok.passed and ok.exit_code is ExitCode.OK
    bad = gate.check(spec, make_run(findings=[finding("E1", Severity.ERROR, "pinned fallback")]))
    assert not bad.passed and bad.exit_code is ExitCode.FINDINGS
    sev = _by_name(bad, "no findings")
    assert sev.kind is GateKind.SEVERITY
    assert "E1" in sev.message
    assert sev.evidence["findings"][0]["code"] == "E1"
    never = gate.check(GateSpec(fail_on=None), make_run(findings=[finding("E1", Severity.ERROR)]))
    assert never.passed and never.results == ()


def test_bounds():
    spec = GateSpec(
        bounds=(
            gate.parse_bound("s_per_proof <= 40"),
            gate.parse_bound("gpu_total_ms.p50 <= 2000"),
            gate.parse_bound("prestage_fallback.rate == 0"),
        )
    )
    res = gate.check(spec, make_run())
    assert res.passed, [r.message for r in res.results]
    slow = gate.check(spec, make_run(s_per_proof=44.0, slow=1.2))
    assert {r.name for r in slow.failed} == {"s_per_proof <= 40", "gpu_total_ms.p50 <= 2000"}
    r = _by_name(slow, "s_per_proof")
    assert r.evidence["value"] == 44.0 and r.evidence["limit"] == 40


def test_prestage_fallback_fails_its_gate():
    spec = GateSpec(bounds=(gate.parse_bound("prestage_fallback.rate == 0"),))
    run = make_run(20, prestage=["ok"] * 19 + ["fallback"])
    res = gate.check(spec, run)
    assert res.exit_code is ExitCode.FINDINGS
    (r,) = res.failed
    assert r.evidence["value"] == pytest.approx(0.05)


def test_unmeasured_bound_is_an_error_and_unknown_metric_raises():
    spec = GateSpec(bounds=(gate.parse_bound("s_per_proof <= 40"),))
    res = gate.check(spec, make_run(s_per_proof=None))
    assert res.exit_code is ExitCode.USAGE
    assert res.errored[0].status is GateStatus.ERROR
    with pytest.raises(ConfigError, match="did you mean s_per_proof"):
        gate.check(GateSpec(bounds=(gate.parse_bound("s_per_prof <= 40"),)), make_run())


def test_run_without_calls_is_refused():
    with pytest.raises(gate.NoDataError):
        gate.check(GateSpec(), make_run(0))


# ------------------------------------------------------------------ regressions


def _regression_results(result):
    return {r.evidence["metric"]: r for r in result.results if r.kind is GateKind.REGRESSION}


def test_ten_percent_slower_on_many_partitions_fails():
    base = make_run(60, seed=1, label="base.log")
    cand = make_run(60, seed=2, slow=1.10, label="cand.log")
    res = gate.check(GateSpec(), cand, base)
    regs = _regression_results(res)
    r = regs["gpu_total_ms.p50"]
    assert r.status is GateStatus.FAIL
    assert r.evidence["p_value"] < 1e-6
    assert r.evidence["significant"] and r.evidence["exceeds_limit"]
    assert r.evidence["rank_biserial"] > 0.5
    assert r.evidence["hodges_lehmann"] == pytest.approx(180, abs=60)
    assert res.exit_code is ExitCode.FINDINGS


def test_one_percent_slower_passes():
    base = make_run(60, seed=1)
    cand = make_run(60, seed=2, slow=1.01, s_per_proof=36.7 * 1.01)
    res = gate.check(GateSpec(), cand, base)
    assert res.passed, [r.message for r in res.results]
    regs = _regression_results(res)
    assert set(regs) == {"s_per_proof", "gpu_total_ms.p50"}
    assert regs["s_per_proof"].evidence["test"] == "none"
    assert "limit alone" in regs["s_per_proof"].message
    assert any("limit alone" in n for n in res.notes)


def test_ten_percent_slower_on_three_partitions_is_not_significant():
    base = make_run(3, seed=1)
    cand = make_run(3, seed=2, slow=1.10)
    res = gate.check(GateSpec(), cand, base)
    r = _regression_results(res)["gpu_total_ms.p50"]
    assert r.status is GateStatus.PASS
    assert r.evidence["exceeds_limit"]
    assert not r.evidence["significant"]
    assert "not significant" in r.message


def test_three_slow_partitions_among_many_pass():
    base = make_run(60, seed=1)
    cand = make_run(60, seed=1, slow=1.10, slow_rows=[5, 25, 45])
    res = gate.check(GateSpec(), cand, base)
    assert res.passed


def test_s_per_proof_regression_by_limit_alone():
    base = make_run(60, seed=1, s_per_proof=36.0)
    cand = make_run(60, seed=1, s_per_proof=38.5)
    res = gate.check(GateSpec(), cand, base)
    r = _regression_results(res)["s_per_proof"]
    assert r.status is GateStatus.FAIL
    assert r.evidence["change"] == pytest.approx(2.5 / 36)


def test_default_kernel_regression_uses_kernel_sum_without_gpu_total():
    base = make_run(60, seed=1, drop=["gpu_total_ms"])
    cand = make_run(60, seed=2, slow=1.10, drop=["gpu_total_ms"])
    regs = _regression_results(gate.check(GateSpec(), cand, base))
    assert "kernel_ms.p50" in regs and "gpu_total_ms.p50" not in regs
    assert regs["kernel_ms.p50"].status is GateStatus.FAIL


def test_default_regressions_skip_when_unmeasured():
    base = make_run(60, seed=1, s_per_proof=None)
    cand = make_run(60, seed=2, s_per_proof=None)
    regs = _regression_results(gate.check(GateSpec(), cand, base))
    assert regs["s_per_proof"].status is GateStatus.SKIP


def test_higher_is_better_regression():
    base = make_run(30, seed=1, facts={"util_kernel": 0.48})
    cand = make_run(30, seed=1, facts={"util_kernel": 0.44})
    spec = GateSpec(regressions=(gate.parse_regression("util_kernel: -5%"),))
    r = _regression_results(gate.check(spec, cand, base))["util_kernel"]
    assert r.status is GateStatus.FAIL
    ok = _regression_results(gate.check(spec, make_run(30, facts={"util_kernel": 0.50}), base))[
        "util_kernel"
    ]
    assert ok.status is GateStatus.PASS


def test_regression_on_mostly_zero_stage_follows_the_test():
    waits_base, waits_cand = mostly_zero_waits()
    base = make_queue_run(waits_base, seed=1, label="base.log")
    cand = make_queue_run(waits_cand, seed=2, label="cand.log")
    spec = GateSpec(regressions=(gate.parse_regression("gpu_queue_wait_ms.p95: +10%"),))
    r = _regression_results(gate.check(spec, cand, base))["gpu_queue_wait_ms.p95"]
    assert r.evidence["hodges_lehmann"] == 0.0
    assert r.evidence["significant"] and r.evidence["rank_biserial"] > 0
    assert r.status is GateStatus.FAIL
    # the improvement in the other direction passes
    back = _regression_results(gate.check(spec, base, cand))["gpu_queue_wait_ms.p95"]
    assert back.status is GateStatus.PASS and not back.evidence["significant"]


def test_faster_candidate_passes():
    base = make_run(60, seed=1)
    cand = make_run(60, seed=2, slow=0.8, s_per_proof=30.0)
    assert gate.check(GateSpec(), cand, base).passed


def test_regressions_without_baseline_are_skipped():
    spec = GateSpec(regressions=(gate.parse_regression("gpu_total_ms.p95: +5%"),))
    res = gate.check(spec, make_run())
    (r,) = [r for r in res.results if r.kind is GateKind.REGRESSION]
    assert r.status is GateStatus.SKIP and res.passed


def test_switching_defaults_off():
    base = make_run(60, seed=1)
    cand = make_run(60, seed=2, slow=1.2, s_per_proof=50.0)
    spec = GateSpec(default_regressions=False)
    assert gate.check(spec, cand, base).passed
    spec = GateSpec(regressions=(gate.parse_regression("s_per_proof: off"),))
    regs = _regression_results(gate.check(spec, cand, base))
    assert set(regs) == {"gpu_total_ms.p50"}


def test_shape_mismatch_refused_unless_allowed():
    base = make_run(60, seed=1, gw=1)
    cand = make_run(60, seed=2, gw=2, era="main")
    with pytest.raises(gate.ShapeMismatchError) as exc:
        gate.check(GateSpec(), cand, base)
    assert "gw" in str(exc.value) and "--allow-different-config" in str(exc.value)
    res = gate.check(GateSpec(), cand, base, allow_different_config=True)
    assert {d[0] for d in res.shape_differences} == {"era", "gw"}
    assert any("differ in configuration" in n for n in res.notes)


def test_unknown_shape_fields_do_not_block():
    base = make_run(60, seed=1, facts={"gw": None, "bench_count": 20})
    cand = make_run(60, seed=2, gw=2)
    gate.check(GateSpec(), cand, base)


def test_result_is_json_serialisable():
    import json

    base = make_run(60, seed=1)
    cand = make_run(60, seed=2, slow=1.1, findings=[finding()])
    d = gate.check(GateSpec(), cand, base).to_dict()
    text = json.dumps(d, allow_nan=False)
    back = json.loads(text)
    assert back["exit_code"] == 1
    assert back["counts"]["fail"] >= 2
    assert not any(isinstance(v, float) and math.isnan(v) for v in back["metrics"].values())


def test_spec_from_config_accepts_hyphens_and_names_the_file():
    spec = gate.spec_from_config({"fail-on": "never", "default-regressions": False})
    assert spec.fail_on is None and not spec.default_regressions
    with pytest.raises(ConfigError, match=r"^pyproject.toml: \[tool.cuzk-diag.gates\]"):
        gate.spec_from_config({"bounds": {"s_per_proof": "< forty"}}, where="pyproject.toml")
