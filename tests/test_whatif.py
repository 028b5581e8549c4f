"""`cuzk-diag whatif` judged by the daemon model: each scenario's true log is simulated and the
prediction made from another run's log must match it (s/proof within 10%, median call time
within 15%)."""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from _runs import frame
from cuzk_diag.cli import cli
from cuzk_diag.errors import InputError
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.model.daemon import SimConfig, write_log
from cuzk_diag.model.replay import measure, metrics, synth_active
from cuzk_diag.model.whatif import Scenario, whatif
from cuzk_diag.pipeline import load_run

#: The Phase 10 incident: Phase 9-11 code (pre-staging, V4), gw=3 on one GPU, one proof of ten
#: partitions, every call skip_vram.
INCIDENT = SimConfig(
    era="phase9-11",
    n_gpus=1,
    gw=3,
    proofs=1,
    concurrency=1,
    partitions_per_proof=10,
    pw=10,
    force_skip_vram=True,
    seed=1,
)
#: main code, one GPU, gw=2, six proofs three at a time.
MAIN = SimConfig(
    era="main", n_gpus=1, gw=2, proofs=6, concurrency=3, partitions_per_proof=10, seed=8
)
TRUE_SEEDS = (101, 102, 103)


def _log(tmp: Path, cfg: SimConfig, name: str) -> Path:
    path = tmp / f"{name}.log"
    write_log(cfg, str(path), truth=False)
    return path


def _truth(tmp: Path, cfg: SimConfig) -> dict[str, float]:
    """The scenario's true figures: medians over a few simulated runs of it."""
    runs = []
    for seed in TRUE_SEEDS:
        run = load_run([str(_log(tmp, replace(cfg, seed=seed), f"true-{seed}"))])
        runs.append(metrics(run.partitions, run.info))
    return {k: statistics.median(r[k] for r in runs) for k in ("s_per_proof", "call_ms_median")}


def _judge(tmp: Path, measured: SimConfig, cases: dict[str, tuple[Scenario, SimConfig]]) -> None:
    run = load_run([str(_log(tmp, measured, "measured"))])
    res = whatif(run, scenarios=[sc for sc, _ in cases.values()], seeds=5)
    assert res.reliable, res.error
    misses = []
    for (name, (_, true_cfg)), pred in zip(cases.items(), res.scenarios, strict=True):
        truth = _truth(tmp, true_cfg)
        sp = pred.predicted["s_per_proof"]["median"]
        call = pred.predicted["call_ms_median"]["median"]
        e_sp = abs(sp / truth["s_per_proof"] - 1)
        e_call = abs(call / truth["call_ms_median"] - 1)
        if e_sp > 0.10 or e_call > 0.15:
            misses.append(
                f"{name}: s/proof {sp:.1f} vs {truth['s_per_proof']:.1f} ({e_sp:.1%}), "
                f"call {call:.0f} vs {truth['call_ms_median']:.0f} ({e_call:.1%})"
            )
    assert not misses, misses


def test_incident_scenarios_match_the_simulated_truth(tmp_path: Path) -> None:
    _judge(
        tmp_path,
        INCIDENT,
        {
            "gw=1, one proof": (Scenario({"gw": 1}), replace(INCIDENT, gw=1)),
            "gw=3, -c 15 -j 10": (
                Scenario({"c": 15, "j": 10}),
                replace(INCIDENT, proofs=15, concurrency=10),
            ),
            "gw=2, -c 15 -j 10": (
                Scenario({"gw": 2, "c": 15, "j": 10}),
                replace(INCIDENT, gw=2, proofs=15, concurrency=10),
            ),
            # the truth pre-stages every call: enough free VRAM, no forced skip
            "prestage=ok": (Scenario(prestage="ok"), replace(INCIDENT, force_skip_vram=False)),
            # NTT+H 70% faster (the model's mean NTT+H without pre-staging is 2430 ms)
            "ntt_msm_h_ms x0.3": (
                Scenario(scale={"ntt_msm_h_ms": 0.3}),
                replace(INCIDENT, durations={"ntt": 2430.0 * 0.3}),
            ),
        },
    )


def test_main_era_scenarios_match_the_simulated_truth(tmp_path: Path) -> None:
    _judge(
        tmp_path,
        MAIN,
        {
            "2 GPUs": (Scenario({"gpus": 2}), replace(MAIN, n_gpus=2)),
            "gw=1": (Scenario({"gw": 1}), replace(MAIN, gw=1)),
            # synthesis twice as fast: the truth's partitions synthesise in half the time
            "synth_ms x0.5": (
                Scenario(scale={"synth_ms": 0.5}),
                replace(MAIN, durations={"synth": 16500.0}),
            ),
            # prep_msm 30% faster on 2 GPUs (main's mean prep_msm is 1250 ms)
            "2 GPUs, prep_msm_ms x0.7": (
                Scenario({"gpus": 2}, scale={"prep_msm_ms": 0.7}),
                replace(MAIN, n_gpus=2, durations={"prep_msm": 1250.0 * 0.7}),
            ),
        },
    )


def test_the_incident_lesson_gw1_removes_the_wait_not_the_time(tmp_path: Path) -> None:
    """With gw=1 the lock wait disappears and s/proof stays where it was."""
    run = load_run([str(_log(tmp_path, INCIDENT, "incident"))])
    res = whatif(run, sets={"gw": "1"}, seeds=3).to_dict()
    base, gw1 = res["baseline"], res["scenarios"][0]
    assert base["measured"]["lock_wait_ms"] > 3000
    assert gw1["predicted"]["lock_wait_ms"]["high"] == 0
    assert abs(gw1["s_per_proof_change"]) < 0.05
    assert "(unchanged)" in gw1["summary"] and "the lock wait disappears" in gw1["summary"]
    assert base["reliable"] is True and gw1["reliable"] is True


def test_unmodelled_stage_fails_the_self_check(tmp_path: Path) -> None:
    """A slow C1 parse serialises the proofs; the replay keeps the model's 450 ms, misses the
    throughput, and says so: the JSON flags every prediction as unreliable."""
    cfg = replace(
        MAIN, proofs=4, concurrency=4, partitions_per_proof=3, durations={"c1_parse": 20000.0}
    )
    path = _log(tmp_path, cfg, "slow-parse")
    code, out, _ = _cli("whatif", str(path), "--set", "gw=1", "--seeds", "2", "--format", "json")
    assert code == ExitCode.OK
    doc = json.loads(out)
    assert doc["baseline"]["reliable"] is False
    assert doc["baseline"]["error"]["s_per_proof"] > 0.10
    assert doc["scenarios"][0]["reliable"] is False
    assert any("unreliable" in w for w in doc["warnings"])


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def incident_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _log(tmp_path_factory.mktemp("whatif"), INCIDENT, "incident")


def test_json_layout_with_sweep(incident_log: Path) -> None:
    code, out, _ = _cli(
        "whatif",
        str(incident_log),
        "--sweep",
        "gw=1,2",
        "--set",
        "c=3",
        "--seeds",
        "2",
        "--format",
        "json",
    )
    assert code == ExitCode.OK
    doc = json.loads(out)
    assert doc["baseline"]["set"] == {
        "gw": 3,
        "gpus": 1,
        "synthesis_concurrency": 10,
        "c": 1,
        "j": 1,
    }
    assert [s["set"] for s in doc["scenarios"]] == [{"c": 3, "gw": 1}, {"c": 3, "gw": 2}]
    for s in doc["scenarios"]:
        sp = s["predicted"]["s_per_proof"]
        assert sp["low"] <= sp["median"] <= sp["high"]
        assert s["knobs"]["c"] == 3
    assert set(doc["baseline"]["error"]) == {"s_per_proof", "call_ms_median", "lock_wait_ms"}
    assert doc["model"]["calls_sampled"] == 10
    assert doc["model"]["srs_load_ms"] > 10000  # the first proof waits for the SRS


def test_prestage_from_the_documented_figure_says_so(incident_log: Path) -> None:
    code, out, _ = _cli(
        "whatif", str(incident_log), "--set", "prestage=ok", "--seeds", "2", "--format", "json"
    )
    assert code == ExitCode.OK
    (sc,) = json.loads(out)["scenarios"]
    assert any("documented pre-staged figure" in n for n in sc["notes"])
    assert sc["predicted"]["call_ms_median"]["median"] < 8000


def test_console_and_markdown_tables(incident_log: Path) -> None:
    code, out, _ = _cli(
        "whatif",
        str(incident_log),
        "--scale",
        "prep_msm_ms=0.7",
        "--seeds",
        "2",
        "--color",
        "never",
    )
    assert code == ExitCode.OK
    for row in (
        "s/proof",
        "proofs/min",
        "call time, p95",
        "lock wait",
        "GPU util: kernels",
        "bottleneck",
        "Self-check",
        "prep_msm_ms×0.7",
    ):
        assert row in out
    code, md, _ = _cli(
        "whatif", str(incident_log), "--set", "gw=1", "--seeds", "2", "--format", "markdown"
    )
    assert code == ExitCode.OK
    assert "| s/proof | 80.7 s |" in md


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "gww=2"], "unknown knob"),
        (["--set", "gw=0"], "at least 1"),
        (["--set", "gw"], "expected NAME=VALUE"),
        (["--set", "prestage=no"], "the only value is ok"),
        (["--scale", "prep_msm_ms=-1"], "positive number"),
        (["--scale", "foo_ms=2"], "not a replayed field"),
        (["--sweep", "prestage=ok"], "expected KNOB=V1,V2"),
    ],
)
def test_bad_options_exit_2(incident_log: Path, args: list[str], message: str) -> None:
    code, out, err = _cli("whatif", str(incident_log), "--seeds", "1", *args)
    assert code == ExitCode.USAGE
    assert message in err and "Traceback" not in err
    assert out == ""


def test_prestage_on_code_without_prestaging_is_refused(tmp_path: Path) -> None:
    path = _log(tmp_path, replace(MAIN, proofs=1, concurrency=1, partitions_per_proof=3), "main")
    code, _, err = _cli("whatif", str(path), "--set", "prestage=ok", "--seeds", "1")
    assert code == ExitCode.USAGE
    assert "does not pre-stage" in err


def test_a_log_without_gpu_calls_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.log"
    path.write_text("hello\n")
    code, _, err = _cli("whatif", str(path))
    assert code == ExitCode.USAGE
    assert "no GPU calls" in err
    with pytest.raises(InputError):
        measure(load_run([str(path)]))


def test_syntheses_started_in_one_millisecond_take_slots_in_partition_order() -> None:
    df = frame(
        [{"partition": p, "synth_start_ms": 100, "synth_end_ms": 30000 + 10 * p} for p in (2, 0, 1)]
        + [{"partition": 3, "synth_start_ms": 30001, "synth_end_ms": 60000}]
    )
    # partitions 0, 1, 2 start together (slots 1, 2, 3); partition 3 starts once 0 ended
    assert synth_active(df).tolist() == [3.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    ("extra", "expect"),
    [
        # no tracing and no cuzk-bench summary: s/proof comes from TIMELINE on both sides
        ({"streams": "stderr"}, {"streams": "stderr", "bench": False, "failed_proofs": 0}),
        # a failed proof counts against s/proof; the replay fails as many
        ({"failures": 1}, {"streams": "all", "bench": True, "failed_proofs": 1}),
    ],
)
def test_the_replay_writes_what_the_log_holds(
    tmp_path: Path, extra: dict[str, object], expect: dict[str, object]
) -> None:
    cfg = replace(MAIN, proofs=4, concurrency=2, partitions_per_proof=4, seed=9, **extra)
    run = load_run([str(_log(tmp_path, cfg, "log"))])
    m = measure(run)
    assert {k: getattr(m, k) for k in expect} == expect
    res = whatif(run, seeds=3)
    assert res.error["s_per_proof"] < 0.10, res.error


def test_synthesis_slots_come_from_the_log_on_every_era(tmp_path: Path) -> None:
    """main logs name their synthesis workers only in the budget-gated pipeline start line."""
    cfg = replace(MAIN, pw=7, proofs=3, concurrency=3, partitions_per_proof=5)
    m = measure(load_run([str(_log(tmp_path, cfg, "main-pw7"))]))
    assert m.knobs["synthesis_concurrency"] == 7
    assert m.sources["synthesis_concurrency"] == "log"
