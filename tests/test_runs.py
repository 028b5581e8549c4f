"""Several inputs: one run (rotated files, daemon log plus cuzk-bench output) or refused."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from cuzk_diag.cli import cli, main
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.model.daemon import SimConfig, simulate
from cuzk_diag.pipeline import DifferentRunsError, RunGuard, load_run
from cuzk_diag.records import Accounting, Event, Family

ROOT = Path(__file__).resolve().parent.parent
SIM = ROOT / "fixtures" / "sim"
COLS = ["job_id", "partition", "worker", "gpu_total_ms", "prep_msm_ms", "start_ms", "end_ms"]


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, list(args))
    if res.exception and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def rotate(log: Path, tmp_path: Path, *fractions: float) -> list[Path]:
    """The log cut into pieces at the given fractions of its lines (mid-call, as rotation does)."""
    lines = log.read_bytes().splitlines(keepends=True)
    cuts = [0, *(int(len(lines) * f) for f in fractions), len(lines)]
    out = []
    for i, (a, b) in enumerate(zip(cuts, cuts[1:], strict=False)):
        piece = tmp_path / f"{log.stem}.log.{len(cuts) - 2 - i}"
        piece.write_bytes(b"".join(lines[a:b]))
        out.append(piece)
    return out


def records(paths: list[Path]) -> list[dict[str, object]]:
    df = load_run([str(p) for p in paths]).partitions
    return df[COLS].sort_values(["job_id", "partition"]).to_dict("records")


@pytest.mark.parametrize("name", ["gw2", "era-phase9-11", "stderr-only", "messy"])
def test_rotated_log_is_one_run_with_the_same_records(tmp_path: Path, name: str) -> None:
    log = SIM / f"{name}.log"
    pieces = rotate(log, tmp_path, 0.35, 0.7)
    # calls in flight at a cut are joined again, not split into two records each
    assert records(pieces) == records([log])
    code, out, err = run("analyze", *map(str, pieces), "--format", "json")
    assert code == ExitCode.OK, err
    whole = json.loads(run("analyze", str(log), "--format", "json")[1])["facts"]
    facts = json.loads(out)["facts"]
    for key in ("partitions", "partitions_ok", "gw", "gpus", "proofs", "s_per_proof", "gpu_util"):
        assert facts[key] == whole[key], key


def test_daemon_log_plus_bench_output_is_one_run(tmp_path: Path) -> None:
    lines = (SIM / "gw2.log").read_bytes().splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.startswith(b"=== Batch Benchmark"))
    daemon, bench = tmp_path / "daemon.log", tmp_path / "bench.txt"
    daemon.write_bytes(b"".join(lines[:start]))
    bench.write_bytes(b"".join(lines[start:]))
    for order in ([daemon, bench], [bench, daemon]):
        code, out, err = run("analyze", *map(str, order), "--format", "json")
        assert code == ExitCode.OK, err
        facts = json.loads(out)["facts"]
        assert facts["s_per_proof_source"] == "bench" and facts["s_per_proof"] == 28.3
        assert facts["partitions"] == 8


def test_two_daemon_runs_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # gw=1 and gw=2 daemons: one analysis used to report "workers 1 per GPU" for both
    a, b = str(SIM / "gw1.log"), str(SIM / "gw2.log")
    out_file = tmp_path / "x.csv"
    for cmd in (["analyze", a, b], ["check", a, b], ["export", a, b, "-o", str(out_file)]):
        assert main(cmd) == ExitCode.USAGE, cmd
        out, err = capsys.readouterr()
        assert f"{a} and {b} are different runs (each has its own engine start" in err, err
        assert f"cuzk-diag compare {a} {b}" in err and "Traceback" not in err
        assert out == ""
    assert not out_file.exists()  # no half-written export of mixed runs
    # one log given twice is named as such
    assert main(["analyze", a, a]) == ExitCode.USAGE
    assert "the same log given twice?" in capsys.readouterr().err
    # compare is the command for two runs (these two differ in gw, so it must be told)
    assert main(["compare", a, b, "--allow-different-config"]) == ExitCode.OK


def test_two_stderr_only_runs_are_refused_by_their_clock(tmp_path: Path) -> None:
    # no engine-start lines: the second capture's TIMELINE clock starts again near 0
    paths = []
    for seed in (1, 2):
        res = simulate(SimConfig(era="main", proofs=2, seed=seed, streams="stderr"))
        assert res.data is not None
        path = tmp_path / f"run{seed}.log"
        path.write_bytes(res.data)
        paths.append(str(path))
    code, _, err = run("analyze", *paths)
    assert code == ExitCode.USAGE
    assert "the TIMELINE clock starts again" in err and "in the order they were written" in err
    # rotated pieces given out of order are refused the same way, with the hint
    pieces = rotate(SIM / "stderr-only.log", tmp_path, 0.5)
    code, _, err = run("analyze", str(pieces[1]), str(pieces[0]))
    assert code == ExitCode.USAGE and "in the order they were written" in err


def _ev(source: int, line: int, family: Family, kind: str, **fields: object) -> Event:
    return Event(line, source, family, kind, dict(fields))


def test_guard_refuses_other_settings_and_other_daemon_processes() -> None:
    acc = Accounting()
    guard = RunGuard(["a.log", "b.log"], acc)
    guard.feed([_ev(0, 3, Family.TRACING, "gpu_workers_init", gpu_workers_per_device=2)])
    guard.feed([_ev(1, 1, Family.TIMELINE, "GPU_START", offset_ms=5)])
    with pytest.raises(DifferentRunsError, match=r"workers per GPU 2 \(line 3\) against 1"):
        guard.feed([_ev(1, 9, Family.TRACING, "gpu_workers_init", gpu_workers_per_device=1)])

    acc = Accounting()
    guard = RunGuard(["a.log", "b.log", "bench.txt"], acc)
    guard.feed([_ev(0, 1, Family.TIMELINE, "GPU_START", offset_ms=5)])
    acc.journald_sources.update({"host1 cuzk[4242]": 10})
    guard.feed([_ev(1, 1, Family.TIMELINE, "GPU_START", offset_ms=900)])
    acc.journald_sources.update({"host1 cuzk[4242]": 5, "host1 cuzk-bench[77]": 3})
    guard.feed([_ev(2, 1, Family.BENCH, "bench_total", total_s=3.0)])  # same process: one run
    acc.journald_sources.update(Counter({"host2 cuzk[4242]": 4}))
    with pytest.raises(DifferentRunsError, match=r"host1 cuzk\[4242\] against host2 cuzk\[4242\]"):
        guard.finish()
