"""The fleet: discovery and hosts, the dataset (pandas, DuckDB), incremental and parallel
builds, the Dask engine, the fleet rules and the fleet report on a simulated fleet."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from cuzk_diag.cli import cli
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.fleet import build_fleet, fleet_report
from cuzk_diag.fleet.dataset import MANIFEST, read_table
from cuzk_diag.fleet.discover import discover, rotation_base
from cuzk_diag.fleet.runs import Piece, split_runs, start_lines
from cuzk_diag.fleet.schema import FLEET_SCHEMA_VERSION, SCHEMA_KEY
from cuzk_diag.model.daemon import SimConfig, simulate, write_log
from cuzk_diag.model.fleet import HostSpec, write_fleet
from cuzk_diag.rules import all_rules, get_rule

BASE = dict(era="main", n_gpus=1, gw=2, proofs=3, concurrency=2, partitions_per_proof=10)
P9 = dict(era="phase9-11", cpp_version=5)
#: The three hosts a fleet report must name, and why.
ODD = {"old-fallback": "CZ101", "prover-slow": "CZ801", "prover-gw1": "CZ803"}


def fleet_hosts() -> list[HostSpec]:
    """12+ hosts, two eras; one host with pre-staging fallbacks, one whose GPU kernels got
    20% slower in its second week, one with another worker count."""
    hosts = [HostSpec(f"prover{i:02d}") for i in range(8)]
    hosts.append(HostSpec("prover-slow", kernel_scale=1.2, slow_from_run=1))
    hosts.append(HostSpec("prover-gw1", config=dict(gw=1)))
    hosts += [HostSpec(f"old{i:02d}", config=P9) for i in range(3)]
    hosts.append(HostSpec("old-fallback", config={**P9, "force_skip_vram": True}))
    return hosts


@pytest.fixture(scope="module")
def fleet_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet") / "logs"
    write_fleet(root, fleet_hosts(), base=BASE)
    return root


@pytest.fixture(scope="module")
def dataset(fleet_logs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ds") / "ds"
    summary = build_fleet([str(fleet_logs)], out, jobs=2)
    assert not summary.failed
    return out


# -- discovery ----------------------------------------------------------------------------------


def test_rotation_groups_are_read_oldest_first(tmp_path: Path) -> None:
    host = tmp_path / "h1"
    host.mkdir()
    for name in ("daemon.log", "daemon.log.1", "daemon.log.2.gz", "other.log", "notes.txt"):
        (host / name).write_bytes(b"x\n")
    found = discover([str(tmp_path)])
    groups = {Path(u.paths[0]).name: [Path(p).name for p in u.paths] for u in found.units}
    assert groups == {
        "daemon.log.2.gz": ["daemon.log.2.gz", "daemon.log.1", "daemon.log"],
        "other.log": ["other.log"],
    }
    assert [Path(p).name for p in found.skipped] == ["notes.txt"]
    assert {u.host_hint for u in found.units} == {"h1"}
    assert rotation_base("/x/daemon.log.12.zst") == "daemon.log"


def test_host_from_regex_and_glob(tmp_path: Path) -> None:
    for host in ("alpha", "beta"):
        (tmp_path / f"cuzk-{host}-2026.log").write_bytes(b"x\n")
    found = discover([str(tmp_path / "*.log")], host_from=r"cuzk-(?P<host>[a-z]+)-")
    assert sorted(u.host_hint for u in found.units) == ["alpha", "beta"]


def test_discovery_errors_are_clear(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["fleet", str(tmp_path / "nope"), "-o", str(tmp_path / "ds")])
    assert res.exit_code == ExitCode.USAGE
    assert "no such file or directory" in res.output
    res = runner.invoke(cli, ["fleet", str(tmp_path), "-o", str(tmp_path / "ds")])
    assert res.exit_code == ExitCode.USAGE and "no log files found" in res.output
    res = runner.invoke(cli, ["fleet", str(tmp_path), "-o", "x", "--host-from", "("])
    assert res.exit_code == ExitCode.USAGE and "not a regular expression" in res.output
    assert "Traceback" not in res.output


def test_journald_host_wins_over_the_directory(tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    cfg = SimConfig(**{**BASE, "proofs": 1, "journald": True, "host": "gpu-box-7"})
    write_log(cfg, str(tmp_path / "dump" / "daemon.log"), truth=False)
    build_fleet([str(tmp_path / "dump")], tmp_path / "ds")
    runs = read_table(tmp_path / "ds", "runs").to_pandas()
    assert list(runs["host"]) == ["gpu-box-7"]
    # an explicit --host-from names the host whatever the log says
    build_fleet([str(tmp_path / "dump")], tmp_path / "ds2", host_from=r"(dump)")
    assert list(read_table(tmp_path / "ds2", "runs").to_pandas()["host"]) == ["dump"]


def test_rotated_files_of_one_run_stay_one_run(tmp_path: Path) -> None:
    whole = tmp_path / "whole.log"
    write_log(SimConfig(**{**BASE, "proofs": 2}), str(whole), truth=False)
    lines = whole.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    host = tmp_path / "logs" / "h1"
    host.mkdir(parents=True)
    with gzip.open(host / "daemon.log.1.gz", "wb") as fh:
        fh.write(b"".join(lines[:half]))
    (host / "daemon.log").write_bytes(b"".join(lines[half:]))
    build_fleet([str(tmp_path / "logs")], tmp_path / "ds")
    runs = read_table(tmp_path / "ds", "runs").to_pandas()
    parts = read_table(tmp_path / "ds", "partitions").to_pandas()
    single = tmp_path / "one"
    single.mkdir()
    shutil.copy(whole, single / "daemon.log")
    build_fleet([str(single)], tmp_path / "ds1")
    assert len(runs) == 1
    assert len(parts) == len(read_table(tmp_path / "ds1", "partitions"))


# -- the dataset --------------------------------------------------------------------------------


def test_dataset_layout_and_schema_version(dataset: Path) -> None:
    files = sorted(p.relative_to(dataset).as_posix() for p in dataset.rglob("*.parquet"))
    part_files = [f for f in files if f.startswith("partitions/")]
    assert part_files and all(
        f.split("/")[1].startswith("host=") and f.split("/")[2].startswith("date=")
        for f in part_files
    )
    assert {f.split("/")[2] for f in part_files} == {"date=2026-11-02", "date=2026-11-09"}
    assert any(f.startswith("runs/") for f in files) and any(
        f.startswith("findings/") for f in files
    )
    for f in files:
        meta = pq.read_schema(dataset / f).metadata
        assert meta[SCHEMA_KEY] == str(FLEET_SCHEMA_VERSION).encode()
    manifest = json.loads((dataset / MANIFEST).read_text())
    assert manifest["schema_version"] == FLEET_SCHEMA_VERSION


def test_pandas_reads_the_dataset_as_it_is(dataset: Path) -> None:
    parts = pd.read_parquet(dataset / "partitions")
    runs = pd.read_parquet(dataset / "runs")
    findings = pd.read_parquet(dataset / "findings")
    assert len(runs) == 2 * len(fleet_hosts())
    assert set(parts["host"].astype(str)) == {h.name for h in fleet_hosts()}
    assert len(parts) == runs["partitions"].sum()
    fallback = findings[(findings["host"] == "old-fallback") & (findings["code"] == "CZ101")]
    assert len(fallback) == 2 and json.loads(fallback["evidence"].iloc[0])["share"] == 1.0
    assert runs["first_ts"].dt.tz is not None and runs["first_ts"].notna().all()


def test_duckdb_reads_the_dataset_as_it_is(dataset: Path) -> None:
    import duckdb

    con = duckdb.connect()
    rows = con.execute(
        "SELECT host, count(*) AS calls, median(ntt_msm_h_ms + batch_add_ms + tail_msm_ms) AS k "
        f"FROM read_parquet('{dataset}/partitions/**/*.parquet', hive_partitioning = true) "
        "GROUP BY host ORDER BY k DESC"
    ).fetchall()
    assert rows[0][0] == "old-fallback" and len(rows) == len(fleet_hosts())
    per_day = con.execute(
        "SELECT host, CAST(date AS VARCHAR), "
        "count(*) FILTER (WHERE prestage_setup = 'skip_vram') AS fallbacks "
        f"FROM read_parquet('{dataset}/partitions/**/*.parquet', hive_partitioning = true) "
        "GROUP BY ALL HAVING fallbacks > 0 ORDER BY ALL"
    ).fetchall()
    assert per_day == [("old-fallback", "2026-11-02", 30), ("old-fallback", "2026-11-09", 30)]


def test_parallel_and_serial_builds_write_the_same_dataset(
    fleet_logs: Path, dataset: Path, tmp_path: Path
) -> None:
    build_fleet([str(fleet_logs)], tmp_path / "serial", jobs=1)
    for name in ("partitions", "runs", "findings"):
        a = _sorted(read_table(dataset, name).to_pandas())
        b = _sorted(read_table(tmp_path / "serial", name).to_pandas())
        pd.testing.assert_frame_equal(a, b)


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    keys = [c for c in ("host", "date", "first_ts", "record", "code", "message") if c in df.columns]
    return df.sort_values(keys).reset_index(drop=True)


def test_rebuild_reads_only_new_or_changed_files(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write_fleet(logs, [HostSpec("a"), HostSpec("b")], base={**BASE, "proofs": 1}, runs=1)
    out = tmp_path / "ds"
    first = build_fleet([str(logs)], out)
    assert len(first.built) == 2
    again = build_fleet([str(logs)], out)
    assert (len(again.built), len(again.unchanged)) == (0, 2)
    # a new host and a grown file: exactly those two are read
    write_fleet(logs, [HostSpec("c")], base={**BASE, "proofs": 1}, runs=1)
    grown = logs / "a" / "run-0.log"
    with open(grown, "ab") as fh:
        fh.write(b"2026-11-02T18:00:00.000000Z  INFO cuzk_core::engine: status ok\n")
    third = build_fleet([str(logs)], out)
    assert sorted(Path(g.split("\0")[1]).parent.name for g in third.built) == ["a", "c"]
    assert len(third.unchanged) == 1
    runs = read_table(out, "runs").to_pandas()
    assert sorted(runs["host"]) == ["a", "b", "c"]  # the grown file replaced its own rows


def test_unreadable_file_is_reported_and_the_rest_written(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write_fleet(logs, [HostSpec("good")], base={**BASE, "proofs": 1}, runs=1)
    (logs / "bad").mkdir()
    (logs / "bad" / "daemon.log.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    res = CliRunner().invoke(cli, ["fleet", str(logs), "-o", str(tmp_path / "ds"), "-j", "1"])
    assert res.exit_code == ExitCode.USAGE, res.output
    assert "cuzk-diag: error:" in res.output and "daemon.log.gz" in res.output
    assert list(read_table(tmp_path / "ds", "runs").to_pandas()["host"]) == ["good"]


def test_every_kind_of_input_is_read_or_reported_as_failed(tmp_path: Path) -> None:
    # A zstd and a UTF-16 log are read as the other commands read them; an empty file, a
    # broken link and a FIFO named like a log are each reported with their reason (none is
    # opened for reading: a FIFO would wait for a writer), and the rest is written.
    import os

    zstandard = pytest.importorskip("zstandard")
    logs = tmp_path / "logs"
    write_fleet(logs, [HostSpec("good")], base={**BASE, "proofs": 1}, runs=1)
    text = next(logs.rglob("*.log")).read_bytes()
    for host in ("zst", "utf16", "empty", "link", "fifo"):
        (logs / host).mkdir()
    (logs / "zst" / "daemon.log.zst").write_bytes(zstandard.ZstdCompressor().compress(text))
    (logs / "utf16" / "daemon.log").write_bytes(text.decode().encode("utf-16"))
    (logs / "empty" / "daemon.log").write_bytes(b"")
    (logs / "link" / "daemon.log").symlink_to(tmp_path / "gone.log")
    os.mkfifo(logs / "fifo" / "daemon.log")
    res = CliRunner().invoke(cli, ["fleet", str(logs), "-o", str(tmp_path / "ds"), "-j", "1"])
    assert res.exit_code == ExitCode.USAGE, res.output
    assert "internal error" not in res.output
    errors = [ln for ln in res.output.splitlines() if ln.startswith("cuzk-diag: error:")]
    assert len(errors) == 3, res.output
    assert any("empty" in ln for ln in errors)
    assert sum("not a regular file" in ln for ln in errors) == 2
    hosts = sorted(read_table(tmp_path / "ds", "runs").to_pandas()["host"])
    assert hosts == ["good", "utf16", "zst"]


# -- the fleet report ---------------------------------------------------------------------------


def test_fleet_report_names_exactly_the_odd_hosts(dataset: Path) -> None:
    report = fleet_report(dataset)
    assert report.attention == sorted(ODD)
    codes = {(f.code, f.evidence["host"]) for f in report.findings}
    assert ("CZ801", "prover-slow") in codes
    assert ("CZ802", "prover-slow") in codes  # its kernels got slower in its second week
    assert ("CZ803", "prover-gw1") in codes
    named = {f.evidence["host"] for f in report.findings}
    assert named <= set(ODD)
    cz101 = next(c for c in report.by_code if c["code"] == "CZ101")
    assert cz101["hosts"] == ["old-fallback"] and cz101["of_hosts"] == len(fleet_hosts())
    slow = next(
        f for f in report.findings if f.code == "CZ801" and f.evidence["host"] == "prover-slow"
    )
    assert 1.12 < slow.evidence["ratio"] < 1.3
    assert slow.evidence["p_adjusted"] < 0.05
    gw1 = next(f for f in report.findings if f.code == "CZ803")
    assert (gw1.evidence["value"], gw1.evidence["fleet_value"]) == (1, 2)


def test_fleet_rules_are_documented_and_explainable() -> None:
    fleet = all_rules("fleet")
    assert [r.code for r in fleet] == ["CZ801", "CZ802", "CZ803"]
    assert not set(fleet) & set(all_rules("run"))
    res = CliRunner().invoke(cli, ["explain", "host-outlier"])
    assert res.exit_code == 0 and "Holm" in res.output
    assert get_rule("CZ803").name == "config-drift"


@pytest.mark.parametrize("fmt", ["console", "json", "markdown"])
def test_fleet_report_cli(dataset: Path, fmt: str) -> None:
    res = CliRunner().invoke(cli, ["fleet-report", str(dataset), "--format", fmt])
    assert res.exit_code == 0, res.output
    shown = res.output.replace("\\", "") if fmt == "markdown" else res.output  # md escapes
    for host in ODD:
        assert host in shown
    if fmt == "json":
        doc = json.loads(res.output)
        assert doc["attention"] == sorted(ODD)
        assert {f["code"] for f in doc["findings"]} == {"CZ801", "CZ802", "CZ803"}
    res = CliRunner().invoke(cli, ["fleet-report", str(dataset), "--fail-on", "warning"])
    assert res.exit_code == ExitCode.FINDINGS


def test_fleet_report_of_a_directory_that_is_no_dataset(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["fleet-report", str(tmp_path)])
    assert res.exit_code == ExitCode.USAGE and "not a fleet dataset" in res.output


def test_host_names_from_the_log_cannot_escape_the_dataset(tmp_path: Path) -> None:
    cfg = SimConfig(**{**BASE, "proofs": 1, "journald": True, "host": "../../etc"})
    (tmp_path / "in").mkdir()
    write_log(cfg, str(tmp_path / "in" / "d.log"), truth=False)
    build_fleet([str(tmp_path / "in")], tmp_path / "ds")
    hosts = [p.name for p in (tmp_path / "ds" / "partitions").iterdir()]
    assert hosts == ["host=.._.._etc"] or all("/" not in h for h in hosts)
    assert not (tmp_path / "etc").exists()


# -- Dask ---------------------------------------------------------------------------------------


def test_dask_engine_writes_the_same_dataset(
    dataset: Path, fleet_logs: Path, tmp_path: Path
) -> None:
    import distributed

    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        build_fleet(
            [str(fleet_logs)], tmp_path / "dask", engine="dask", scheduler=cluster.scheduler_address
        )
    for name in ("partitions", "runs", "findings"):
        a = _sorted(read_table(dataset, name).to_pandas())
        b = _sorted(read_table(tmp_path / "dask", name).to_pandas())
        pd.testing.assert_frame_equal(a, b)


def test_fsspec_urls_build_the_same_dataset(
    fleet_logs: Path, dataset: Path, tmp_path: Path
) -> None:
    """URLs (s3://, gs://, ... with their fsspec backend) are read through fsspec; file:// takes
    the same code path without a network."""
    build_fleet([f"file://{fleet_logs}"], tmp_path / "url", jobs=2)
    for name in ("partitions", "runs", "findings"):
        a = _sorted(read_table(dataset, name).to_pandas())
        b = _sorted(read_table(tmp_path / "url", name).to_pandas())
        if name == "runs":
            assert all(json.loads(f)[0].startswith("file://") for f in b["files"])
            a, b = a.drop(columns=["files", "run_id"]), b.drop(columns=["files", "run_id"])
        else:
            a, b = a.drop(columns=["run_id"]), b.drop(columns=["run_id"])
        pd.testing.assert_frame_equal(a, b)
    with pytest.raises(Exception, match="no such file"):
        build_fleet([f"file://{tmp_path}/missing/"], tmp_path / "x")


# -- runs ---------------------------------------------------------------------------------------


def _sim_bytes(**over: object) -> bytes:
    cfg = SimConfig(**{**BASE, "proofs": 1, **over})
    return simulate(cfg).data or b""


def test_a_restart_splits_a_log_into_runs(tmp_path: Path) -> None:
    """One daemon.log holding two runs (the daemon restarted with another gw): two runs, each
    with its own facts, and line numbers of the original file."""
    first = _sim_bytes(gw=2, seed=1)
    second = _sim_bytes(gw=1, seed=2)
    host = tmp_path / "logs" / "h1"
    host.mkdir(parents=True)
    (host / "daemon.log").write_bytes(first + second)
    assert split_runs([str(host / "daemon.log")]) == [
        [Piece(str(host / "daemon.log"), 1, first.count(b"\n"))],
        [Piece(str(host / "daemon.log"), first.count(b"\n") + 1, None)],
    ]
    build_fleet([str(tmp_path / "logs")], tmp_path / "ds")
    runs = read_table(tmp_path / "ds", "runs").to_pandas().sort_values("run_id")
    assert list(runs["gw"]) == [2, 1]
    parts = read_table(tmp_path / "ds", "partitions").to_pandas()
    second_run = parts[parts["run_id"] == runs["run_id"].iloc[1]]
    n_first = first.count(b"\n")
    assert second_run["first_line"].min() > n_first
    lines = (host / "daemon.log").read_bytes().split(b"\n")
    for n in second_run["first_line"].head(5):
        assert b"CUZK" in lines[int(n) - 1] or b"TIMELINE" in lines[int(n) - 1]
    # the same records as each run's log read on its own
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "second.log").write_bytes(second)
    build_fleet([str(alone)], tmp_path / "ds2")
    other = read_table(tmp_path / "ds2", "partitions").to_pandas()
    assert len(other) == len(second_run)
    assert list(other["gpu_total_ms"]) == list(second_run["gpu_total_ms"])
    assert list(other["first_line"] + n_first) == list(second_run["first_line"])


def test_run_boundaries_found_in_compressed_files_and_a_last_line_without_newline(
    tmp_path: Path,
) -> None:
    data = b"noise\n" + _sim_bytes(seed=3) + b"2026 INFO cuzk_daemon: cuzk-daemon starting"
    with gzip.open(tmp_path / "d.log.gz", "wb") as fh:
        fh.write(data)
    n = data.count(b"\n")
    assert start_lines(str(tmp_path / "d.log.gz")) == [2, n + 1]


def test_hostile_host_names_are_neutralised_in_every_format(tmp_path: Path) -> None:
    """Host names come from the logs (journald prefixes) and the paths: data, not commands."""
    logs = tmp_path / "logs"
    write_fleet(logs, [HostSpec("a"), HostSpec("b")], base={**BASE, "proofs": 1}, runs=1)
    evil = logs / "::error::pwned|<script>"
    evil.mkdir()
    write_log(SimConfig(**{**BASE, "proofs": 1, "seed": 9}), str(evil / "d.log"), truth=False)
    build_fleet([str(logs)], tmp_path / "ds")
    for fmt in ("console", "markdown", "json"):
        res = CliRunner().invoke(cli, ["fleet-report", str(tmp_path / "ds"), "--format", fmt])
        assert res.exit_code == 0, res.output
        for line in res.output.splitlines():
            assert not line.lstrip(" │|-*").startswith("::"), line
        assert "<script>" not in res.output


def test_fleet_report_as_one_html_page(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "fleet.html"
    args = ["fleet-report", str(dataset), "--format", "html", "-o", str(out)]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    page = out.read_text(encoding="utf-8")
    assert "<script src=" not in page and "http://" not in page.split("<script>")[0]
    for host in ODD:
        assert host in page
    for code in ("CZ801", "CZ802", "CZ803"):
        assert f'data-code="{code}"' in page and f'id="rule-{code}"' in page
    island = page.split('id="cuzk-diag-specs">', 1)[1].split("</script>", 1)[0]
    spec = json.loads(island)["chart-fleet-kernels"]
    boxes = [r for r in spec["vconcat"][0]["data"]["values"] if r["kind"] == "box"]
    assert sorted(r["group"] for r in boxes) == sorted(h.name for h in fleet_hosts())
    assert "gpu_threads=32," not in page and "gpu_threads=32.0" not in page
