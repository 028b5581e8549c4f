"""Each rule on a log that must trigger it and one that must not, against golden output.

The logs and goldens under ``fixtures/rules/`` come from ``tools/gen_rule_fixtures.py``, which also
says what each log shows. After a deliberate change of a rule's message or evidence, run
``python tools/gen_rule_fixtures.py``, review the goldens it reports, then rerun with ``--update``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from cuzk_diag.cli import cli
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.model.daemon import SimConfig, simulate
from cuzk_diag.rules import all_rules

ROOT = Path(__file__).resolve().parents[1]
RULES = all_rules("run")

# Evidence floats are rounded to 3 decimals; allow for a last-digit flip across platforms.
REL_TOL = 1e-6
ABS_TOL = 2e-3


def _load_generator() -> ModuleType:
    path = ROOT / "tools" / "gen_rule_fixtures.py"
    spec = importlib.util.spec_from_file_location("gen_rule_fixtures", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up while being created
    spec.loader.exec_module(mod)
    return mod


gen = _load_generator()


def _load_findings_generator() -> ModuleType:
    path = ROOT / "tools" / "gen_fixture_findings.py"
    spec = importlib.util.spec_from_file_location("gen_fixture_findings", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


sim_gen = _load_findings_generator()


def analyze_json(target: str, slug: str, data: bytes | None = None) -> dict[str, Any]:
    """``cuzk-diag analyze TARGET --format json --select SLUG`` with default thresholds."""
    args = ["analyze", target, "--format", "json", "--select", slug, "--config", str(gen.DEFAULTS)]
    result = CliRunner().invoke(cli, args, input=data)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == ExitCode.OK, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def golden_view(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: f[k] for k in gen.FINDING_KEYS} for f in report["findings"]]


def assert_matches(got: Any, want: Any, where: str = "findings") -> None:
    """Equal, except that numbers compare with a tolerance."""
    if isinstance(want, bool) or want is None or isinstance(want, str):
        assert got == want, f"{where}: {got!r} != {want!r}"
    elif isinstance(want, int | float):
        assert isinstance(got, int | float) and not isinstance(got, bool), f"{where}: {got!r}"
        assert math.isclose(got, want, rel_tol=REL_TOL, abs_tol=ABS_TOL), (
            f"{where}: {got!r} != {want!r}"
        )
    elif isinstance(want, dict):
        assert isinstance(got, dict), f"{where}: {got!r}"
        assert list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
        for k in want:
            assert_matches(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_matches(g, w, f"{where}[{i}]")
    else:  # pragma: no cover - JSON has no other types
        raise TypeError(f"{where}: unexpected {type(want).__name__}")


# -- the fixtures themselves -------------------------------------------------------------------


def test_every_rule_has_fixtures() -> None:
    assert set(gen.CASES) == {r.name for r in RULES}
    for rule in RULES:
        for kind in ("trigger", "clean"):
            assert gen.log_path(rule.name, kind).is_file(), f"{rule.name}: no {kind} log"
            golden = json.loads(gen.golden_path(rule.name, kind).read_text(encoding="utf-8"))
            assert golden["rule"] == rule.code
            assert golden["command"] == "cuzk-diag " + " ".join(gen.command(rule.name, kind))


def test_fixture_sizes() -> None:
    logs = sorted(gen.RULES_DIR.glob("*.log"))
    assert len(logs) == 2 * len(RULES), "stray or missing logs in fixtures/rules"
    too_big = [p.name for p in logs if p.stat().st_size > gen.MAX_LOG_BYTES]
    assert not too_big, f"logs over {gen.MAX_LOG_BYTES} bytes: {too_big}"
    total = sum(p.stat().st_size for p in gen.RULES_DIR.iterdir())
    assert total <= gen.MAX_TOTAL_BYTES


def test_fixture_logs_are_reproducible() -> None:
    stale = [gen.rel(p) for p, d in gen.build_logs().items() if p.read_bytes() != d]
    assert not stale, f"run python tools/gen_rule_fixtures.py; stale: {stale}"


# -- the goldens -------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["file", "stdin"])
@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.code}-{r.name}")
def test_rule_fires_on_trigger_log(rule: Any, source: str) -> None:
    log = gen.log_path(rule.name, "trigger")
    if source == "file":
        report = analyze_json(str(log), rule.name)
    else:
        report = analyze_json("-", rule.name, log.read_bytes())
    got = golden_view(report)
    assert [f["code"] for f in got] == [rule.code], f"{rule.code} did not fire on {log.name}"
    golden = json.loads(gen.golden_path(rule.name, "trigger").read_text(encoding="utf-8"))
    assert_matches(got, golden["findings"])


#: Rules known to fire on their clean log: slug -> reason. Empty: none does today.
CLEAN_MISFIRES: dict[str, str] = {}


def _clean_params() -> list[Any]:
    params = []
    for rule in RULES:
        marks = []
        if rule.name in CLEAN_MISFIRES:
            marks.append(pytest.mark.xfail(strict=True, reason=CLEAN_MISFIRES[rule.name]))
        params.append(pytest.param(rule, id=f"{rule.code}-{rule.name}", marks=marks))
    return params


@pytest.mark.parametrize("source", ["file", "stdin"])
@pytest.mark.parametrize("rule", _clean_params())
def test_rule_silent_on_clean_log(rule: Any, source: str) -> None:
    log = gen.log_path(rule.name, "clean")
    if source == "file":
        report = analyze_json(str(log), rule.name)
    else:
        report = analyze_json("-", rule.name, log.read_bytes())
    assert golden_view(report) == [], f"{rule.code} fired on {log.name}"
    golden = json.loads(gen.golden_path(rule.name, "clean").read_text(encoding="utf-8"))
    assert golden["findings"] == []


# -- golden findings of simulated fixtures (fixtures/sim/NAME.findings.json) -------------------


@pytest.mark.parametrize("name", sorted(sim_gen.REQUIRED))
def test_sim_fixture_findings_match_golden(name: str) -> None:
    golden = json.loads(sim_gen.golden_path(name).read_text(encoding="utf-8"))
    assert golden["command"] == "cuzk-diag " + " ".join(sim_gen.command(name))
    got = sim_gen.analyze(name)
    assert set(sim_gen.REQUIRED[name]) <= {f["code"] for f in got}
    assert_matches(got, golden["findings"])


@pytest.mark.parametrize("name", sorted(sim_gen.REQUIRED))
def test_sim_fixture_lock_wait_is_the_clock_estimate(name: str) -> None:
    # Phase 12 and pool-cache code log neither mutex_wait_ms nor pre_destructor_ms: the wait
    # comes from the clock, with bounds around it, and lies within 20% of the simulated one
    golden = json.loads(sim_gen.golden_path(name).read_text(encoding="utf-8"))
    (lock,) = [f for f in golden["findings"] if f["name"] == "lock-wait"]
    ev = lock["evidence"]
    assert ev["method"] == "clock"
    assert ev["wait_ms_low"] <= ev["wait_ms_median"] <= ev["wait_ms_high"]
    truth = json.loads((ROOT / "fixtures" / "sim" / f"{name}.truth.json").read_text())
    waits = sorted(t["_mutex_wait_ms"] for t in truth)
    true_median = (waits[(len(waits) - 1) // 2] + waits[len(waits) // 2]) / 2
    assert abs(ev["wait_ms_median"] - true_median) <= 0.2 * true_median


# -- defects the fixtures turned up (kept out of the goldens) ----------------------------------


def _sim_report(slug: str, **config: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    res = simulate(SimConfig(**config))
    assert res.data is not None
    return analyze_json("-", slug, res.data), res.truth


def test_prestage_fallback_counts_host_register_on_the_right_calls() -> None:
    report, truth = _sim_report(
        "prestage-fallback",
        era="phase9-11",
        gw=3,
        proofs=1,
        concurrency=1,
        partitions_per_proof=6,
        force_skip_vram=True,
        host_register_fail_rate=0.2,
        seed=101,
    )
    (finding,) = report["findings"]
    fell = [t for t in truth if t.get("prestage_setup") or t.get("host_register") == "fallback"]
    assert finding["evidence"]["affected"] == len(fell)
    by_kind = finding["evidence"]["by_kind"]
    assert by_kind["host_register"] == sum(t.get("host_register") == "fallback" for t in truth)
    assert by_kind["skip_vram"] == sum(t.get("prestage_setup") == "skip_vram" for t in truth)
    assert finding["evidence"]["total"] == len(truth)


def test_prestage_fallback_claims_a_vram_shortfall_only_when_there_is_one() -> None:
    report, _ = _sim_report(
        "prestage-fallback",
        era="phase9-11",
        gw=1,
        proofs=2,
        concurrency=2,
        partitions_per_proof=4,
        prestage_fail_rate=0.4,
        seed=101,
    )
    (finding,) = report["findings"]
    ev = finding["evidence"]
    assert ev["by_kind"]["skip_vram"] == 0 and ev["free_mib_median"] > ev["required_free_mib"]
    assert " < " not in finding["message"]


def test_pre_destructor_gap_parts_do_not_exceed_the_gap() -> None:
    report, _ = _sim_report(
        "pre-destructor-gap",
        era="phase9-11",
        gw=3,
        proofs=2,
        concurrency=2,
        partitions_per_proof=4,
        seed=201,
    )
    (finding,) = report["findings"]
    ev = finding["evidence"]
    assert ev["lock_wait_ms_median"] <= ev["gap_ms_median"]


#: A TIMELINE line torn by a tracing line (reference 3.4), as the simulator writes it.
TORN_BY_TRACING = (
    b"TIMELINE,52707,GPU_QUEUE,278f6c1a-1efd-4d64-a62c-7e879ac11b2a,partition=0\n"
    b"TIMELINE,52707,GPU_PICKUP,278f6c1a-1efd-4d64-a62c-7e879ac11b2a,"
    b"2026-03-13T16:33:34.231288Z  INFO gpu_worker{worker_id=1 gpu=0 "
    b"job_id=278f6c1a-1efd-4d64-a62c-7e879ac11b2a proof_kind=porep-c2 batch_size=1 "
    b"partition=Some(0)}: cuzk_core::engine: GPU_TIMING hot_path pre-prove overhead "
    b"worker_id=1 partition=Some(0) status_ms=0 fail_check_ms=0 mark_busy_ms=0 "
    b"total_overhead_ms=0\n"
    b"worker=1,partition=0\n"
    b"TIMELINE,52707,GPU_START,278f6c1a-1efd-4d64-a62c-7e879ac11b2a,worker=1,partition=0\n"
)


def test_log_coverage_on_timeline_torn_by_tracing_line() -> None:
    report = analyze_json("-", "log-coverage", TORN_BY_TRACING)
    acc = report["accounting"]
    assert acc["torn_repaired"] == 1
    assert acc["by_family"]["tracing"] == 1
    assert acc["unknown_keys"] == {}
