"""Each rule on a run that must trigger it and one that must not; selection and configuration."""

from __future__ import annotations

import json
import math
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _runs import (
    ALL_RUNS,
    FakeRun,
    accounting_for,
    make_run,
    rows_of,
    sim_run,
)
from cuzk_diag.analysis import Analysis, analyze_run
from cuzk_diag.config import Config, from_table, load_config
from cuzk_diag.errors import ConfigError
from cuzk_diag.records import Finding, RunInfo, Severity
from cuzk_diag.rules import all_rules, get_rule, select_rules
from cuzk_diag.rules.base import clean_value


@cache
def analysis(name: str) -> Analysis:
    return analyze_run(ALL_RUNS[name]())


def found(a: Analysis, slug: str) -> Finding | None:
    hits = [f for f in a.findings if f.name == slug]
    assert len(hits) <= 1
    return hits[0] if hits else None


def must(a: Analysis, slug: str) -> Finding:
    f = found(a, slug)
    assert f is not None, f"{slug} did not fire: {[x.name for x in a.findings]}"
    return f


# -- the two runs that frame everything -------------------------------------------------------


def test_healthy_run_has_no_warning_or_error() -> None:
    a = analysis("healthy")
    assert a.facts.era == "main" and a.facts.gw == 2
    assert a.facts.proofs == 15 and (a.facts.max_proofs_in_flight or 0) > 1
    assert a.facts.gpu_util is not None and a.facts.gpu_util > 0.9
    assert [f for f in a.findings if f.severity >= Severity.WARNING] == []


def test_incident_reads_right() -> None:
    a = analysis("incident")
    pre = must(a, "prestage-fallback")
    assert pre.severity is Severity.ERROR
    assert pre.message.startswith("Every partition (10 of 10) fell back")
    assert pre.evidence["by_kind"]["skip_vram"] == 10

    gap = must(a, "pre-destructor-gap")
    assert gap.evidence["dominant"] == "lock_wait"
    assert 2.5 < gap.evidence["ratio"] < 3.5
    assert 10_500 < gap.evidence["pre_destructor_ms_median"] < 12_500
    assert 3_500 < gap.evidence["gpu_total_ms_median"] < 4_000
    assert "3 workers queueing on one GPU" in gap.message
    assert "lock wait dominates" in gap.message

    lock = must(a, "lock-wait")
    assert lock.severity is Severity.WARNING
    assert lock.evidence["kind"] == ["queueing"] and lock.evidence["gw"] == 3
    assert lock.evidence["method"] == "pre_destructor"

    shape = must(a, "benchmark-shape")
    assert shape.severity is Severity.WARNING
    assert "single_proof_contended" in shape.evidence["kind"]
    assert "single-proof run cannot show the benefit" in shape.message
    assert "-c 15 -j 10" in shape.advice

    assert found(a, "cpu-critical-path") is None  # the unexplained GPU time is not barrier wait
    assert [f.severity for f in a.findings] == sorted(
        (f.severity for f in a.findings), reverse=True
    )


# -- CZ101 prestage-fallback ------------------------------------------------------------------


def test_prestage_fallback_partial_is_warning() -> None:
    f = must(analysis("mixed_prestage"), "prestage-fallback")
    assert f.severity is Severity.WARNING
    assert f.evidence["affected"] == 21 and f.evidence["total"] == 60
    assert f.evidence["by_kind"]["skip_vram"] == 21 and f.evidence["prestaged"] == 39
    assert f.evidence["required_free_mib"] == 12288 + 512
    assert f.evidence["free_mib_median"] < f.evidence["required_free_mib"]
    assert f.lines


@pytest.mark.parametrize("name", ["prestaged", "healthy"])
def test_prestage_fallback_silent(name: str) -> None:
    assert found(analysis(name), "prestage-fallback") is None


def test_prestage_fallback_counts_host_register_and_silent() -> None:
    rows = rows_of(ALL_RUNS["prestaged"]())[:10]
    for r in rows[:3]:
        r.update(prestage_setup=None, free_mib=None, host_register="fallback", host_register_err=2)
    rows[3].update(prestage_setup="silent")
    a = analyze_run(make_run(rows, RunInfo(era="phase9-11", gw=1)))
    f = must(a, "prestage-fallback")
    assert f.evidence["by_kind"] == {"skip_vram": 0, "fallback": 0, "silent": 1, "host_register": 3}
    assert f.evidence["host_register_errors"] == [2]
    assert f.severity is Severity.WARNING  # 4 of 10 is not most


# -- CZ102 unpinned-host-memory ---------------------------------------------------------------


def test_unpinned_host_memory() -> None:
    run = ALL_RUNS["unpinned"]()
    f = must(analysis("unpinned"), "unpinned-host-memory")
    assert f.severity is Severity.WARNING
    # every pool miss is one warning line and one call with seconds of pageable copies
    assert run.info.warnings["pinned_fallback"] == 21
    assert f.evidence["pinned_fallback"] == 21 and f.evidence["slow_ntt_kernels"] == 21
    assert f.evidence["ntt_kernels_ms_median"] > 2000
    assert run.info.warning_lines["pinned_fallback"][0] in f.lines
    assert found(analysis("healthy"), "unpinned-host-memory") is None


def test_unpinned_host_memory_few_is_info() -> None:
    run = sim_run(
        era="main",
        gw=2,
        proofs=4,
        concurrency=4,
        pw=12,
        durations={"synth": 10000.0},
        pinned_fail_rate=0.025,
        seed=9,
    )
    f = must(analyze_run(run), "unpinned-host-memory")
    assert f.severity is Severity.INFO and f.evidence["affected"] == 1


# -- CZ103 async-dealloc-backlog --------------------------------------------------------------


def test_async_dealloc_backlog() -> None:
    f = must(analysis("dealloc_backlog"), "async-dealloc-backlog")
    assert f.severity is Severity.WARNING
    assert f.evidence["ratio"] > 2
    assert found(analysis("healthy"), "async-dealloc-backlog") is None


def test_async_dealloc_slow_but_keeping_up_is_info() -> None:
    run = sim_run(
        era="main",
        gw=2,
        proofs=3,
        concurrency=3,
        pw=2,
        durations={"synth": 10000.0, "async_dealloc": 1700.0},
        seed=12,
    )
    f = must(analyze_run(run), "async-dealloc-backlog")
    assert f.severity is Severity.INFO and f.evidence["ratio"] < 1


# -- CZ201 pre-destructor-gap -----------------------------------------------------------------


def test_pre_destructor_gap_silent_without_contention() -> None:
    assert found(analysis("prestaged"), "pre-destructor-gap") is None
    assert found(analysis("healthy"), "pre-destructor-gap") is None  # main: no such field


def test_pre_destructor_gap_one_call_ahead_is_info() -> None:
    a = analysis("interlock_phase9")
    f = must(a, "pre-destructor-gap")
    assert f.severity is Severity.INFO and f.evidence["dominant"] == "lock_wait"
    assert f.evidence["wait_to_hold"] < 1.5 and "interlock waiting" in f.message
    assert must(a, "lock-wait").severity is Severity.INFO
    assert [x for x in a.findings if x.severity >= Severity.WARNING] == []


def _cpu_gap_rows() -> list[dict[str, object]]:
    """gw=1, no lock wait: the gap is prep + b_g2 outlasting the kernels."""
    rows = []
    for i in range(12):
        rows.append(
            dict(
                record=i,
                job_id="j",
                partition=i % 10,
                worker=0,
                gpu=0,
                status="ok",
                era="phase4-8",
                setup_to_split_ms=4,
                prep_msm_ms=2500,
                b_g2_msm_ms=1500,
                ntt_msm_h_ms=500,
                batch_add_ms=400,
                tail_msm_ms=100,
                gpu_total_ms=1000,
                epilogue_ms=5,
                pre_destructor_ms=4010,
                first_line=10 + 20 * i,
            )
        )
    return rows


def test_pre_destructor_gap_cpu_residual_dominates() -> None:
    a = analyze_run(make_run(_cpu_gap_rows(), RunInfo(era="phase4-8", gw=1)))
    f = must(a, "pre-destructor-gap")
    assert f.evidence["dominant"] == "cpu_residual"
    assert f.evidence["lock_wait_ms_median"] == 0
    assert f.evidence["cpu_residual_ms_median"] == pytest.approx(3001)
    assert "CPU path" in f.message
    assert found(a, "lock-wait") is None


# -- CZ202 lock-wait --------------------------------------------------------------------------


def test_lock_wait_queueing_measured() -> None:
    f = must(analysis("queueing_main"), "lock-wait")
    assert f.severity is Severity.WARNING and f.evidence["kind"] == ["queueing"]
    assert f.evidence["method"] == "measured" and f.evidence["gw"] == 4
    assert f.evidence["model_wait_ms"] == pytest.approx(3 * f.evidence["hold_ms"])


def test_lock_wait_non_gpu_work_under_lock() -> None:
    f = must(analysis("held_overhead"), "lock-wait")
    assert f.severity is Severity.WARNING
    assert "non_gpu_under_lock" in f.evidence["kind"]
    assert f.evidence["held_to_gpu_total"] > 1.3


def test_lock_wait_interlock_is_info() -> None:
    f = must(analysis("healthy"), "lock-wait")
    assert f.severity is Severity.INFO and f.evidence["kind"] == ["interlock"]
    assert "Harmless" in f.message


def test_lock_wait_split_era_clock_estimate() -> None:
    # Phase 12, gw=3, one proof: the clock estimate finds the three workers queueing
    f = must(analysis("phase12"), "lock-wait")
    ev = f.evidence
    assert ev["method"] == "clock" and "per-GPU queue of GPU_START..GPU_END" in f.message
    assert ev["kind"] == ["queueing"] and f.severity is Severity.WARNING
    assert ev["wait_ms_low"] <= ev["wait_ms_median"] <= ev["wait_ms_high"]
    assert ev["wait_to_hold"] == pytest.approx(2.0, abs=0.25)  # (3 − 1) holds
    measured = must(analysis("queueing_main"), "lock-wait").evidence
    assert measured["wait_ms_low"] is None and measured["wait_ms_high"] is None


def test_lock_wait_silent_without_contention() -> None:
    assert found(analysis("prestaged"), "lock-wait") is None


# -- CZ301 cpu-critical-path ------------------------------------------------------------------


def test_cpu_critical_path_measured_barrier() -> None:
    f = must(analysis("cpu_bound"), "cpu-critical-path")
    assert f.severity is Severity.WARNING and f.evidence["barrier_method"] == "measured"
    assert f.evidence["barrier_ms_median"] > 500


def test_cpu_critical_path_estimated_barrier() -> None:
    f = must(analysis("phase9_cpu_path"), "cpu-critical-path")
    assert f.evidence["barrier_method"] == "estimated"
    assert f.evidence["cpu_path_ms"] > f.evidence["kernel_ms"]


def test_cpu_critical_path_on_idle_gpu_is_info() -> None:
    f = must(analysis("idle_gpu"), "cpu-critical-path")
    assert f.severity is Severity.INFO and "does not limit throughput" in f.message


def test_cpu_critical_path_floor_with_one_worker() -> None:
    run = sim_run(
        era="phase9-11",
        gw=1,
        proofs=4,
        concurrency=4,
        pw=10,
        durations={"synth": 18000.0, "prep_msm": 700.0, "b_g2": 1500.0},
        seed=20,
    )
    f = must(analyze_run(run), "cpu-critical-path")
    assert f.severity is Severity.INFO
    assert f.evidence["cpu_floor_s_per_proof"] == pytest.approx(
        10 * f.evidence["cpu_path_ms"] / 1000
    )


def test_cpu_critical_path_silent_when_healthy() -> None:
    assert found(analysis("healthy"), "cpu-critical-path") is None


# -- CZ401 gpu-idle ---------------------------------------------------------------------------


def test_gpu_idle_warns_on_low_utilisation() -> None:
    f = must(analysis("idle_gpu"), "gpu-idle")
    assert f.severity is Severity.WARNING and f.evidence["gpu_util"] < 0.75
    assert f.evidence["idle_gaps"] > 0
    assert found(analysis("healthy"), "gpu-idle") is None


def test_gpu_idle_long_gap_is_info() -> None:
    rows, t = [], 0
    for i in range(20):
        if i == 10:
            t += 6000
        rows.append(
            dict(
                record=i,
                job_id=f"job{i // 10}",
                partition=i % 10,
                worker=i % 2,
                gpu=0,
                status="ok",
                start_ms=t,
                end_ms=t + 1000,
                gpu_total_ms=900,
            )
        )
        t += 1000
    f = must(analyze_run(make_run(rows, RunInfo(gw=2))), "gpu-idle")
    assert f.severity is Severity.INFO
    assert f.evidence["largest_gap_ms"] == 6000 and f.evidence["gaps_between_proofs"] == 1


# -- CZ501 benchmark-shape --------------------------------------------------------------------


def test_benchmark_shape_sequential_is_info() -> None:
    f = must(analysis("sequential"), "benchmark-shape")
    assert f.severity is Severity.INFO and f.evidence["kind"] == ["sequential_proofs"]


def test_benchmark_shape_single_proof_one_worker_is_info() -> None:
    run = sim_run(era="main", gw=1, proofs=1, pw=10, durations={"synth": 10000.0}, seed=21)
    f = must(analyze_run(run), "benchmark-shape")
    assert f.severity is Severity.INFO
    assert f.evidence["kind"] == ["single_proof", "few_partitions"]


def test_benchmark_shape_silent_for_concurrent_proofs() -> None:
    assert found(analysis("healthy"), "benchmark-shape") is None


# -- CZ601 proving-failures -------------------------------------------------------------------


def test_proving_failures() -> None:
    run = ALL_RUNS["failed"]()
    (oom,) = [x for x in run.info.failures if "out of memory" in (x["error"] or "")]
    f = must(analysis("failed"), "proving-failures")
    assert f.severity is Severity.ERROR
    assert f.evidence["failed_partitions"] == 1 and f.evidence["failed_proofs"] == 1
    # the failed proof's partitions still queued are skipped, one INFO line each
    assert f.evidence["bench_failed"] == 1
    assert f.evidence["by_kind"] == {"oom": 1, "skip_failed_job": 7}
    assert oom["line"] in f.lines
    assert "First: partition GPU proving failed: CUDA error: out of memory" in f.message
    assert "lower the concurrency" in f.advice
    assert found(analysis("healthy"), "proving-failures") is None


def test_proving_failures_warning_lines_only() -> None:
    run = ALL_RUNS["healthy"]()
    run.info.failures.append(
        {
            "line": 7,
            "kind": "skip_failed_synthesis",
            "level": "WARN",
            "message": "skipping synthesis for failed job",
        }
    )
    f = must(analyze_run(run), "proving-failures")
    assert f.severity is Severity.WARNING and f.evidence["affected"] == 0


def test_proving_failures_self_check() -> None:
    run = ALL_RUNS["healthy"]()
    run.info.failures.append(
        {
            "line": 9,
            "kind": "self_check_failed",
            "level": "ERROR",
            "message": "Phase 7: PoRep proof self-check FAILED",
        }
    )
    f = must(analyze_run(run), "proving-failures")
    assert f.severity is Severity.ERROR and f.evidence["by_kind"] == {"self_check": 1}


# -- CZ701 log-coverage -----------------------------------------------------------------------


def test_log_coverage_warns() -> None:
    f = must(analysis("coverage"), "log-coverage")
    assert f.severity is Severity.WARNING
    assert f.evidence["missing_timing"] == 30 and f.evidence["unattributed"] == 260
    assert f.evidence["unknown_keys"] == {"compute_mtx_wait_ms": 12}
    assert 812 in f.lines
    assert found(analysis("healthy"), "log-coverage") is None


def test_log_coverage_no_calls() -> None:
    f = must(analysis("empty"), "log-coverage")
    assert f.severity is Severity.WARNING and "No GPU call found" in f.message


def test_log_coverage_small_issues_are_info() -> None:
    run = ALL_RUNS["healthy"]()
    run.accounting.torn_repaired = 3
    f = must(analyze_run(run), "log-coverage")
    assert f.severity is Severity.INFO


# -- every run, every rule ----------------------------------------------------------------------


def test_affected_calls_are_among_the_total_on_a_log_with_damaged_numbers(tmp_path: Path) -> None:
    # Every third C++ line with numbers beyond int64 (their fields missing from the calls):
    # each finding's affected calls are among the calls its total counts (CZ301 counted calls
    # with a barrier wait but no gpu_total_ms: 19 of 10).
    import re

    from cuzk_diag.pipeline import load_run

    example = Path(__file__).resolve().parent.parent / "fixtures" / "example.log"
    lines = example.read_bytes().split(b"\n")
    big = b"=99999999999999999999999999999"
    out = [
        re.sub(rb"=(\d+)", big, ln) if b"CUZK" in ln and i % 3 == 0 else ln
        for i, ln in enumerate(lines)
    ]
    path = tmp_path / "damaged.log"
    path.write_bytes(b"\n".join(out))
    findings = analyze_run(load_run([str(path)])).findings
    assert any(f.code == "CZ301" for f in findings)
    for f in findings:
        assert 0 <= f.evidence["affected"] <= f.evidence["total"], (f.code, f.evidence)


@pytest.mark.parametrize("name", sorted(ALL_RUNS))
def test_findings_are_well_formed(name: str) -> None:
    a = analysis(name)
    for f in a.findings:
        rule = get_rule(f.code)
        assert f.name == rule.name and f.title == rule.title
        assert f.severity <= rule.severity
        assert {"affected", "total"} <= set(f.evidence)
        assert 0 <= f.evidence["affected"] <= f.evidence["total"], (f.code, f.evidence)
        assert set(f.evidence) <= {"affected", "total", *rule.evidence}
        assert f.message and f.advice
        assert any(ch.isdigit() for ch in f.message), "messages carry their numbers"
        json.dumps(f.to_dict(), allow_nan=False)
    assert [f.severity for f in a.findings] == sorted(
        (f.severity for f in a.findings), reverse=True
    )


def test_every_rule_fires_somewhere() -> None:
    fired = {f.code for name in ALL_RUNS for f in analysis(name).findings}
    assert fired == {r.code for r in all_rules("run")}


# -- selection ---------------------------------------------------------------------------------


def test_select_by_code_prefix_and_slug() -> None:
    codes = [r.code for r in select_rules(["CZ2", "benchmark-shape"], ["CZ201"])]
    assert codes == ["CZ202", "CZ501"]
    assert [r.code for r in select_rules(["cz101"])] == ["CZ101"]
    assert len(select_rules(None)) == len(all_rules())
    assert len(select_rules(None, scope="run")) == len(all_rules("run"))


def test_unknown_rule_is_explained() -> None:
    with pytest.raises(KeyError, match="did you mean lock-wait"):
        get_rule("lock-wiat")


def test_config_select_and_ignore_apply() -> None:
    cfg = Config().with_cli(select=["CZ1,CZ2"], ignore=["pre-destructor-gap"])
    a = analyze_run(ALL_RUNS["incident"](), cfg)
    assert [f.code for f in a.findings] == ["CZ101", "CZ202"]


# -- configuration -----------------------------------------------------------------------------


def test_option_and_severity_overrides(tmp_path: pytest.TempPathFactory) -> None:
    cfg = from_table(
        {
            "rules": {
                "pre-destructor-gap": {"min_ratio": 3.5},
                "CZ101": {"error_share": 1.0},
                "benchmark-shape": {"severity": "error"},
            }
        }
    )
    a = analyze_run(ALL_RUNS["incident"](), cfg)
    assert found(a, "pre-destructor-gap") is None
    assert must(a, "prestage-fallback").severity is Severity.WARNING
    assert must(a, "benchmark-shape").severity is Severity.ERROR
    assert cfg.rule_options("CZ201")["min_ratio"] == 3.5
    assert cfg.rule_options("lock-wait")["queue_ratio"] == 1.5  # defaults stay


def test_load_config_from_pyproject_upwards(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.cuzk-diag]\nignore = ["CZ5"]\nfail-on = "warning"\n'
        "[tool.cuzk-diag.rules.lock-wait]\nmin-wait-ms = 100\n[tool.cuzk-diag.gates]\nmax = 1\n"
    )
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    cfg = load_config(None)
    assert cfg.path == str(tmp_path / "pyproject.toml")
    assert cfg.ignore == ["CZ5"] and cfg.fail_on is Severity.WARNING
    assert cfg.raw["gates"] == {"max": 1}
    assert cfg.rule_options("CZ202")["min_wait_ms"] == 100


def test_load_config_plain_file_and_none(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "diag.toml"
    p.write_text('select = ["CZ1"]\n')
    assert load_config(str(p)).select == ["CZ1"]
    monkeypatch.chdir(tmp_path)
    assert load_config(None).path is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("select = [", "not valid TOML"),
        ("colour = 1", "unknown key(s) 'colour'"),
        ('select = ["CZ9"]', "'CZ9' matches no rule"),
        ("select = 3", "select must be a list of strings"),
        ('fail-on = "fatal"', "unknown severity 'fatal'"),
        ("[rules.nope]\nx = 1", "unknown rule 'nope'"),
        ("[rules.lock-wait]\nqueue_ratoi = 2", "unknown option 'queue_ratoi'"),
        ('[rules.lock-wait]\nqueue_ratio = "high"', "expected a number"),
        ("[rules.lock-wait]\nqueue_ratio = -1", "must be >= 0"),
        ("[rules.CZ101]\nerror_share = 2", "must be <= 1"),
        ('[rules.CZ101]\nseverity = "loud"', "unknown severity 'loud'"),
        ("[rules.CZ202]\nmin_wait_ms = 1\n[rules.lock-wait]\nmin_wait_ms = 2", "set twice"),
        ("gates = 1", "gates] must be a table"),
    ],
)
def test_config_errors_are_clear(tmp_path, text: str, message: str) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        load_config(str(p))
    assert str(p) in str(e.value)


def test_config_missing_file_and_missing_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(str(tmp_path / "nope.toml"))
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    with pytest.raises(ConfigError, match=r"no \[tool.cuzk-diag\] table"):
        load_config(str(tmp_path / "pyproject.toml"))


def test_analyze_run_accepts_a_run_like_object() -> None:
    run = FakeRun(ALL_RUNS["healthy"]().partitions, RunInfo(), accounting_for([]))
    a = analyze_run(run)
    assert a.facts.partitions == 150 and a.facts.gw == 2 and a.facts.gw_source == "inferred"


def _clean_value_step_by_step(v: object) -> object:
    """``clean_value`` as it was before dicts and lists of plain values were given back whole."""
    if isinstance(v, dict):
        return {str(k): _clean_value_step_by_step(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_clean_value_step_by_step(x) for x in v]
    if v is None or v is pd.NA:
        return None
    if hasattr(v, "item") and not isinstance(v, str):
        v = v.item()
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else round(v, 3)
    return v


class _Text(str):
    pass


_CLEANABLE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=3)
    | st.floats()
    | st.sampled_from([pd.NA, np.int64(7), np.float64(1.23456), Severity.ERROR, _Text("t")]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(
            st.text(max_size=3) | st.integers(-3, 3) | st.sampled_from([_Text("k"), None]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=600, deadline=None)
@given(_CLEANABLE)
def test_clean_value_equals_its_step_by_step_form(value: object) -> None:
    """Dicts and lists of plain values are given back whole; everything else as before: the
    same values, types and key order (numpy scalars, NA, NaN and inf, enums, str subclasses)."""
    got, want = clean_value(value), _clean_value_step_by_step(value)
    assert repr(got) == repr(want)
    assert [type(x) for x in _flat(got)] == [type(x) for x in _flat(want)]


def _flat(v: object) -> list[object]:
    if isinstance(v, dict):
        return [y for k, x in v.items() for y in (k, *_flat(x))]
    if isinstance(v, list):
        return [y for x in v for y in _flat(x)]
    return [v]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.none() | st.integers(0, 10**9), max_size=30),
    st.sampled_from(["Int64", "float64", "object"]),
    st.data(),
)
def test_calls_of_are_the_line_numbers_in_file_order(
    lines: list[int | None], dtype: str, data: st.DataObject
) -> None:
    """``calls_of`` takes the column whole: the same numbers, in the same order, as a step per
    row gives (a column of the frame, of floats, or of text), as 64-bit integers."""
    from cuzk_diag.rules.base import calls_of

    values = [None if v is None else str(v) if dtype == "object" else v for v in lines]
    df = pd.DataFrame({"first_line": pd.Series(values, dtype=dtype)})
    mask = pd.Series(data.draw(st.lists(st.booleans(), min_size=len(df), max_size=len(df))))
    for selected in (None, mask):
        col = df["first_line"] if selected is None else df["first_line"][selected]
        want = sorted(int(v) for v in pd.to_numeric(col, errors="coerce").dropna())
        got = calls_of(df, selected)
        assert got.typecode == "q" and got.tolist() == want


def test_the_lock_wait_is_estimated_once_per_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """On code that logs no lock wait (Phase 12) the estimate is the per-GPU mutex queue solved
    call by call: the facts, the rules that read it and the report's charts share one
    (``RuleContext.lock_wait``, ``Analysis.lock``), with the findings each made of its own."""
    import io

    from cuzk_diag import facts
    from cuzk_diag.pipeline import load_run
    from cuzk_diag.report import get_reporter
    from cuzk_diag.rules.base import RuleContext, run_rules

    root = Path(__file__).resolve().parent.parent
    run = load_run([str(root / "fixtures" / "sim" / "phase12-2gpu-gw2.log")])
    solved = []
    clock = facts.clock_lock_wait

    def counted(df: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
        solved.append(len(df))
        return clock(df)

    monkeypatch.setattr(facts, "clock_lock_wait", counted)
    result = analyze_run(run)
    assert result.lock is not None and result.lock.method == "clock"
    assert solved == [len(run.partitions)]
    get_reporter("html")(result, io.StringIO(), color="never")
    assert len(solved) == 1
    # A context without the estimate (a caller of the rules of its own) makes it, and the rules
    # find what they found with the shared one.
    bare = RuleContext(run.partitions, result.facts, run.info, run.accounting, result.stages)
    again = run_rules(bare, result.config)
    assert len(solved) > 1
    assert [f.to_dict() for f in again] == [f.to_dict() for f in result.findings]


def test_a_findings_example_lines_are_the_first_of_its_calls() -> None:
    """``lines_of``: the first ``MAX_LINES`` of ``calls_of`` (the selected rows' first lines in
    file order), whichever rows are selected, without the lines of rows that have none."""
    import numpy as np
    import pandas as pd

    from cuzk_diag.rules.base import MAX_LINES, calls_of, lines_of

    rng = np.random.default_rng(5)
    for n in (0, 3, MAX_LINES, 40, 1000):
        first = pd.array(rng.permutation(n * 3)[:n] + 1, dtype="Int64")
        if n:
            first[rng.integers(0, n, size=n // 4)] = pd.NA
        df = pd.DataFrame({"first_line": first})
        for mask in (None, pd.Series(rng.random(n) < 0.5, dtype="boolean")):
            calls = calls_of(df, mask).tolist()
            assert calls == sorted(calls) and len(set(calls)) == len(calls)
            want = sorted(
                int(x) for x in (first if mask is None else first[mask]) if x is not pd.NA
            )
            assert calls == want
            assert lines_of(df, mask) == want[:MAX_LINES]
            assert all(type(x) is int for x in lines_of(df, mask))
    assert lines_of(pd.DataFrame({"other": [1]})) == [] == calls_of(pd.DataFrame()).tolist()


def test_clean_value_gives_plain_values_back_themselves() -> None:
    """A dict or list already plain (finite floats of three decimals at most among them) is
    given back itself, and a list of such dicts too; one with a value to clean is a new one,
    and the value it was made from is left as it was."""
    job = {"num_partitions": 10, "status": "completed", "total_ms": 59015, "ok": True}
    proof = {"index": 1, "wall_s": 59.1, "prove_ms": 29760, "queue_ms": None}
    proofs = [proof, {"index": 2, "wall_s": 103.0}]
    assert clean_value(job) is job and clean_value(proof) is proof
    assert clean_value(proofs) is proofs
    for bad in (1.23456, float("nan"), float("inf"), np.int64(3)):
        raw = {"index": 1, "wall_s": bad}
        got = clean_value(raw)
        assert got is not raw and raw["wall_s"] is bad
        listed = [proof, raw]
        cleaned = clean_value(listed)
        assert cleaned is not listed and cleaned[0] is proof and cleaned[1] == got
    assert clean_value({1: 2}) == {"1": 2}  # (a key that is not a text: a new dict)
    counts = Counter({"a": 2})
    assert type(clean_value(counts)) is dict and clean_value(counts) == {"a": 2}
    assert clean_value((1, 2)) == [1, 2]  # (a tuple: a list)


def test_a_findings_calls_are_8_bytes_each() -> None:
    """``Rule.finding`` keeps a finding's calls as 64-bit integers (``array("q")``), those of
    ``calls_of`` as they are and any other iterable of ints made into one."""
    from array import array

    from cuzk_diag.rules.base import calls_of

    rule = get_rule("CZ301")
    df = pd.DataFrame({"first_line": pd.array([30, None, 10, 20], dtype="Int64")})
    given = calls_of(df)
    ev = {"affected": 3, "total": 4}
    kept = rule().finding(Severity.WARNING, "m", ev, calls=given).calls
    assert kept is given and list(kept) == [10, 20, 30]
    made = rule().finding(Severity.WARNING, "m", ev, calls=[5, 7]).calls
    assert type(made) is array and made.typecode == "q" and list(made) == [5, 7]
    assert made.itemsize * len(made) == 16


@pytest.mark.parametrize("name", sorted(ALL_RUNS))
def test_the_analysis_leaves_the_frame_as_it_was(name: str) -> None:
    """Facts and rules read the frame's columns as arrays, some of them the frame's own
    buffers (``facts.num_array``), and write only into arrays of their own."""
    run = ALL_RUNS[name]()
    before = run.partitions.copy(deep=True)
    analyze_run(run)
    pd.testing.assert_frame_equal(run.partitions, before, check_exact=True)
    # (A frame of plain float64 columns, as a notebook may make: ``num_array`` hands over the
    # columns' own buffers.)
    numbers = [c for c in before.columns if pd.api.types.is_numeric_dtype(before[c].dtype)]
    plain = before.astype({c: "float64" for c in numbers})
    run.partitions = plain.copy(deep=True)
    analyze_run(run)
    pd.testing.assert_frame_equal(run.partitions, plain, check_exact=True)
