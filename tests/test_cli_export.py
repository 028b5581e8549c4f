"""`cuzk-diag export`: partition records and the line table, every format, file and stdin."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
import zstandard
from click.testing import CliRunner

from cuzk_diag.cli import cli
from cuzk_diag.errors import InputError
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.linetable import LINE_SCHEMA
from cuzk_diag.pipeline import read_export
from cuzk_diag.records import PARTITION_SCHEMA

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "fixtures" / "sim" / "era-main.log"
MESSY = ROOT / "fixtures" / "sim" / "messy.log"


def run(args: list[str], stdin: bytes | None = None):  # noqa: ANN201
    return CliRunner().invoke(cli, args, input=stdin, catch_exceptions=False)


@pytest.mark.parametrize("via_stdin", [False, True])
def test_partition_export_parquet(tmp_path: Path, via_stdin: bool) -> None:
    out = tmp_path / "p.parquet"
    src = "-" if via_stdin else str(LOG)
    res = run(["export", src, "-o", str(out)], LOG.read_bytes() if via_stdin else None)
    assert res.exit_code == ExitCode.OK, res.output
    table = pq.read_table(out)
    assert table.schema.remove_metadata() == PARTITION_SCHEMA
    assert table.num_rows == 8
    assert set(table.column("era").to_pylist()) == {"main"}
    assert "8 records" in res.output and "lines read" in res.output  # accounting on stderr
    # The export carries the run info, so it can stand in for its log as a baseline.
    back = read_export(str(out))
    assert back.info.era == "main" and back.info.gw == 2
    assert back.accounting.lines_total == run_lines(LOG)


def run_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_partition_export_text_formats(tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"p{suffix}"
    res = run(["export", str(LOG), "-o", str(out), "-q"])
    assert res.exit_code == ExitCode.OK
    assert res.output == ""  # -q: no accounting
    if suffix == ".csv":
        table = pacsv.read_csv(out)
        assert table.column_names == PARTITION_SCHEMA.names and table.num_rows == 8
    else:
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(rows) == 8 and list(rows[0]) == PARTITION_SCHEMA.names
        assert all(r["gpu_total_ms"] > 0 for r in rows)


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_line_export_has_one_row_per_line(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "lines.out"
    res = run(["export", "--lines", str(MESSY), "-o", str(out), "--format", fmt])
    assert res.exit_code == ExitCode.OK, res.output
    if fmt == "parquet":
        table = pq.read_table(out)
        assert table.schema == LINE_SCHEMA
        rows = table.to_pylist()
    elif fmt == "csv":
        rows = pacsv.read_csv(out).to_pylist()
    else:
        rows = [json.loads(x) for x in out.read_text().splitlines()]
    physical = {r["line"] for r in rows}
    # A torn TIMELINE line joined again is one row naming its second half in `torn_line`.
    physical |= {
        json.loads(r["fields"])["torn_line"]
        for r in rows
        if r["fields"] and "torn_line" in r["fields"]
    }
    total = json.loads((ROOT / "fixtures" / "sim" / "index.json").read_text())["messy"]["expected"]
    n = sum(total["by_family"].values())
    assert physical == set(range(1, n + 1))  # every line is accounted for
    timing = [r for r in rows if r["event"] == "tail_msm"]
    assert timing and all(json.loads(r["fields"])["gpu_total_ms"] > 0 for r in timing)


def test_compressed_inputs_export_the_same(tmp_path: Path) -> None:
    gz = tmp_path / "a.log.gz"
    gz.write_bytes(gzip.compress(LOG.read_bytes()))
    zst = tmp_path / "a.log.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(LOG.read_bytes()))
    outs = []
    for src in (LOG, gz, zst):
        out = tmp_path / f"{src.name}.jsonl"
        assert run(["export", str(src), "-o", str(out), "-q"]).exit_code == 0
        outs.append(
            [{k: v for k, v in json.loads(x).items()} for x in out.read_text().splitlines()]
        )
    assert outs[0] == outs[1] == outs[2]


def test_stdout_output_for_text_formats() -> None:
    res = run(["export", str(LOG), "-o", "-", "--format", "jsonl", "-q"])
    assert res.exit_code == 0
    assert len(res.output.strip().splitlines()) == 8


@pytest.mark.parametrize(
    "args,needle",
    [
        (["export", "no-such.log", "-o", "x.parquet"], "no such file"),
        (["export", str(LOG), "-o", "out.txt"], "cannot tell the format"),
        (["export", str(LOG), "-o", "-"], "cannot tell the format"),
        (["export", str(LOG), "-o", "-", "--format", "parquet"], "needs a file"),
    ],
)
def test_user_errors_exit_2_with_a_message(tmp_path: Path, args: list[str], needle: str) -> None:
    import contextlib
    import io
    import os

    from cuzk_diag.cli import main

    err = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stderr(err):
            code = main(args)
    finally:
        os.chdir(cwd)
    assert code == ExitCode.USAGE
    assert needle in err.getvalue()
    assert "Traceback" not in err.getvalue()


def test_unattributed_lines_can_be_listed(tmp_path: Path) -> None:
    log = tmp_path / "odd.log"
    log.write_text("CUZK_TIMING: b_g2_msm_ms=5 num_circuits=1\n")
    res = run(["export", str(log), "-o", str(tmp_path / "o.parquet"), "--unattributed"])
    assert res.exit_code == 0
    assert "unattributed timing lines" in res.output and ": 1" in res.output


def test_python_entry_points() -> None:
    import cuzk_diag

    df = cuzk_diag.load(str(LOG))
    assert len(df) == 8 and str(df["gpu_total_ms"].dtype) == "Int64"


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", str(ROOT / "fixtures" / "example.log"), "--color", "never"],
        ["export", "--lines", str(LOG), "-o", "-", "--format", "jsonl", "-q"],
        ["rules"],
    ],
)
def test_a_closed_pipe_downstream_ends_quietly(args: list[str]) -> None:
    # `cuzk-diag ... | head -1`: exit 0, nothing on stderr, no traceback.
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "cuzk_diag", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == ExitCode.OK, err
    assert b"Traceback" not in err and b"Error" not in err


# -- wall clock ---------------------------------------------------------------------------------


def _sim_log(tmp_path: Path, name: str, **kw: object) -> tuple[Path, dict[str, object], list]:
    from cuzk_diag.model.daemon import SimConfig, simulate

    res = simulate(SimConfig(**kw))  # type: ignore[arg-type]
    assert res.data is not None
    path = tmp_path / name
    path.write_bytes(res.data)
    return path, res.expected, res.truth


def _key(row: dict[str, object]) -> tuple[object, object]:
    return row["job_id"], row["partition"]


def _utc_ms(ts: str) -> int:
    from datetime import datetime

    return round(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_records_carry_utc_wall_clock(tmp_path: Path, suffix: str) -> None:
    log, expected, truth = _sim_log(tmp_path, "run.log", era="main", proofs=2, seed=11)
    epoch = _utc_ms(str(expected["engine_start_utc"]))
    out = tmp_path / f"p{suffix}"
    assert run(["export", str(log), "-o", str(out), "-q"]).exit_code == ExitCode.OK
    if suffix == ".parquet":
        table = pq.read_table(out)
        assert str(table.schema.field("start_ts").type) == "timestamp[ms, tz=UTC]"
        rows = table.to_pylist()
        start = {_key(r): round(r["start_ts"].timestamp() * 1000) for r in rows}
        end = {_key(r): round(r["end_ts"].timestamp() * 1000) for r in rows}
    else:
        if suffix == ".csv":
            rows = pacsv.read_csv(
                out,
                convert_options=pacsv.ConvertOptions(
                    column_types={"start_ts": "string", "end_ts": "string"}
                ),
            ).to_pylist()
        else:
            rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert all(r["start_ts"].endswith("Z") and "T" in r["start_ts"] for r in rows)
        start = {_key(r): _utc_ms(r["start_ts"]) for r in rows}
        end = {_key(r): _utc_ms(r["end_ts"]) for r in rows}
    assert len(start) == len(truth) == 20
    for t in truth:
        assert start[_key(t)] == epoch + t["start_ms"] and end[_key(t)] == epoch + t["end_ms"]


def test_wall_clock_is_null_without_an_engine_start_and_the_report_says_so(
    tmp_path: Path,
) -> None:
    log, _, _ = _sim_log(tmp_path, "stderr.log", era="main", proofs=1, seed=4, streams="stderr")
    out = tmp_path / "p.parquet"
    assert run(["export", str(log), "-o", str(out), "-q"]).exit_code == ExitCode.OK
    table = pq.read_table(out)
    assert table.num_rows > 0 and table.column("start_ms").null_count == 0
    assert table.column("start_ts").null_count == table.num_rows
    res = run(["analyze", str(log), "--color", "never"])
    assert "Wall clock  none: no engine-start line in the log" in res.output
    doc = json.loads(run(["analyze", str(log), "--format", "json"]).output)
    assert doc["facts"]["wall_clock_start"] is None and doc["facts"]["wall_clock_calls"] == 0


def test_rotated_files_continue_the_wall_clock_of_the_first(tmp_path: Path) -> None:
    log, expected, truth = _sim_log(tmp_path, "run.log", era="main", proofs=3, seed=12)
    lines = log.read_bytes().splitlines(keepends=True)
    # cut between two calls: at the first SYNTH_START of the second proof's first partition
    cut = next(i for i, ln in enumerate(lines) if b"GPU_END" in ln and b"partition=9" in ln) + 1
    (tmp_path / "run.log.1").write_bytes(b"".join(lines[:cut]))
    (tmp_path / "run.log.2").write_bytes(b"".join(lines[cut:]))
    out = tmp_path / "p.parquet"
    args = ["export", str(tmp_path / "run.log.1"), str(tmp_path / "run.log.2"), "-o", str(out)]
    assert run([*args, "-q"]).exit_code == ExitCode.OK
    rows = pq.read_table(out).to_pylist()
    assert {r["source"] for r in rows} == {0, 1}
    epoch = _utc_ms(str(expected["engine_start_utc"]))
    start = {(r["job_id"], r["partition"]): r["start_ts"] for r in rows}
    for t in truth:
        ts = start[(t["job_id"], t["partition"])]
        assert round(ts.timestamp() * 1000) == epoch + t["start_ms"]


def test_exports_without_wall_clock_columns_still_read(tmp_path: Path) -> None:
    out = tmp_path / "old.parquet"
    assert run(["export", str(LOG), "-o", str(out), "-q"]).exit_code == ExitCode.OK
    table = pq.read_table(out)
    old = tmp_path / "older.parquet"
    pq.write_table(table.drop_columns(["start_ts", "end_ts"]), old)
    back = read_export(str(old))
    assert len(back.partitions) == 8 and back.partitions["start_ts"].isna().all()


@pytest.mark.parametrize("wall_clock", [True, False])
def test_an_export_read_column_by_column_is_the_export_read_whole(
    tmp_path: Path, wall_clock: bool
) -> None:
    """``analyze``, ``check`` and ``compare`` read an export one column at a time, without its
    table (``keep_table=False``): the same frame and run facts as the whole table gives."""
    log, _, _ = _sim_log(tmp_path, "run.log", era="main", proofs=3, seed=12)
    out = tmp_path / "p.parquet"
    assert run(["export", str(log), "-o", str(out), "-q"]).exit_code == ExitCode.OK
    if not wall_clock:  # (an export written before those columns existed)
        pq.write_table(pq.read_table(out).drop_columns(["start_ts", "end_ts"]), out)
    whole, by_column = read_export(str(out)), read_export(str(out), keep_table=False)
    assert whole.table is not None and by_column.table is None
    assert len(by_column.partitions) == whole.table.num_rows > 0
    pd.testing.assert_frame_equal(by_column.partitions, whole.partitions)
    assert by_column.info == whole.info and by_column.accounting == whole.accounting


def test_a_damaged_export_is_an_input_error_however_it_is_read(tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"
    assert run(["export", str(LOG), "-o", str(out), "-q"]).exit_code == ExitCode.OK
    data = bytearray(out.read_bytes())
    for i in range(200, len(data) // 2, 7):  # column chunks damaged, the footer intact
        data[i] ^= 0x5A
    out.write_bytes(bytes(data))
    for keep in (True, False):
        with pytest.raises(InputError, match="not a readable Parquet export"):
            read_export(str(out), keep_table=keep)
    res = run(["analyze", str(out), "--format", "json"])
    assert res.exit_code == ExitCode.USAGE and "not a readable Parquet export" in res.output


def test_parquet_tables_written_on_their_thread_keep_their_order(tmp_path: Path) -> None:
    from cuzk_diag.writers import TableWriter

    out = tmp_path / "lines.parquet"
    whole = pa.table({"n": pa.array(range(10_000), pa.int64())})
    with TableWriter(str(out), "parquet", whole.schema) as w:
        for start in range(0, 10_000, 7):  # many tables, more than the thread's queue holds
            w.write(whole.slice(start, 7))
        w.add_metadata({b"k": b"v"})
    back = pq.read_table(out)
    assert back.column("n").to_pylist() == list(range(10_000))
    assert pq.read_metadata(out).metadata[b"k"] == b"v"
    assert w.rows == 10_000


def test_parquet_tables_held_or_cast_make_the_file_tables_waited_for_make(tmp_path: Path) -> None:
    """Tables the caller holds already (``write(held=True)``: the writer's thread is not waited
    for) and tables that are not of the schema (cast) make the same file, byte for byte, as
    tables of the schema each waited for."""
    from cuzk_diag.writers import TableWriter

    whole = pa.table({"n": pa.array(range(2_000), pa.int64()), "x": pa.array([0.5] * 2_000)})
    outs = []
    for how in ("waited", "mixed"):
        out = tmp_path / f"{how}.parquet"
        with TableWriter(str(out), "parquet", whole.schema) as w:
            for k, start in enumerate(range(0, 2_000, 7)):
                table = whole.slice(start, 7)
                if how == "mixed" and k % 3 == 0:
                    table = table.cast(pa.schema([("n", pa.int32()), ("x", pa.float64())]))
                w.write(table, held=how == "mixed" and k % 2 == 0)
            w.add_metadata({b"k": b"v"})
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert pq.read_table(tmp_path / "mixed.parquet").equals(whole)


def test_the_line_tables_labels_are_dictionary_encoded_and_the_rest_plain(tmp_path: Path) -> None:
    """The line table's columns of few values (family, event, level, job id, source) are
    dictionary-encoded in Parquet; those of one value per line (line numbers, timestamps,
    fields) are written plain. The rows read back are those of the line table."""
    from cuzk_diag.linetable import LINE_DICTIONARY, LINE_SCHEMA

    out = tmp_path / "lines.parquet"
    res = run(["export", "--lines", str(LOG), "-o", str(out), "-q", "-j", "1"])
    assert res.exit_code == 0, res.output
    meta = pq.ParquetFile(out).metadata
    assert meta.num_rows > 100
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        encoded = {
            group.column(i).path_in_schema
            for i in range(group.num_columns)
            if group.column(i).has_dictionary_page
        }
        assert encoded == set(LINE_DICTIONARY)
    assert set(LINE_DICTIONARY) < set(LINE_SCHEMA.names)
    jsonl = tmp_path / "lines.jsonl"
    res = run(["export", "--lines", str(LOG), "-o", str(jsonl), "--format", "jsonl", "-q"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert pq.read_table(out).to_pylist() == rows


def test_a_parquet_write_error_reaches_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def full(self: pq.ParquetWriter, table: pa.Table, *args: object, **kwargs: object) -> None:
        calls.append(table.num_rows)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    out = tmp_path / "l.pq"
    for args in (["export", "--lines"], ["export"]):
        res = CliRunner().invoke(cli, [*args, str(LOG), "-o", str(out)])
        assert res.exit_code == ExitCode.USAGE, res.output
        assert f"{out}: cannot write: No space left on device" in res.output
        assert "internal error" not in res.output
        assert not out.exists()  # no partial file that would pass for the export
    assert calls  # (written on the writer's thread, raised in the command's)


@pytest.mark.parametrize("lines", [False, True])
def test_an_export_that_fails_midway_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: bool
) -> None:
    # The log is read fine for a while, then the input fails: the rows written so far would
    # read as a valid (shorter) export.
    import importlib

    stream = importlib.import_module("cuzk_diag.ingest.stream")

    def failing(*args: object, **kwargs: object):  # noqa: ANN202
        yield from real(*args, **kwargs)
        raise InputError("the disk went away")

    real = stream.parse_parts
    monkeypatch.setattr(stream, "parse_parts", failing)
    if lines:
        from cuzk_diag.ingest import pool

        monkeypatch.setattr(pool, "parse_parts", failing)
    out = tmp_path / "p.parquet"
    out.write_bytes(b"an older export")
    args = ["export", *(["--lines"] if lines else []), str(LOG), "-o", str(out), "-j", "1"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == ExitCode.USAGE, res.output
    assert "the disk went away" in res.output
    assert not out.exists()


def test_an_export_refused_before_it_writes_leaves_the_file_there(tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"
    out.write_bytes(b"an older export")
    res = CliRunner().invoke(cli, ["export", str(tmp_path / "missing.log"), "-o", str(out)])
    assert res.exit_code == ExitCode.USAGE, res.output
    assert out.read_bytes() == b"an older export"


# -- a process of its own -----------------------------------------------------------------------

#: Runs an entry point of the CLI in a fresh interpreter (the arguments after the code) and
#: prints whether pandas was imported, then whether it can be imported still.
_WITH_PANDAS_PROBE = """
import sys
from cuzk_diag.cli import {entry} as run
sys.argv = ["cuzk-diag", *sys.argv[1:]]
code = run({args})
imported = "pandas" in sys.modules
try:
    import pandas  # noqa: F401
    importable = True
except ImportError:
    importable = False
print(code, imported, importable)
"""


def _probe(entry: str, args: list[str]) -> tuple[int, bool, bool]:
    import subprocess
    import sys

    code = _WITH_PANDAS_PROBE.format(entry=entry, args="sys.argv[1:]" if entry == "main" else "")
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    rc, imported, importable = out.stdout.split()
    return int(rc), imported == "True", importable == "True"


@pytest.mark.parametrize("lines", [False, True])
def test_the_command_exports_without_pandas_and_the_same_file(tmp_path: Path, lines: bool) -> None:
    # `cuzk-diag export` in a process of its own leaves pandas out (pyarrow would import it at
    # its first array only to ask whether the array is a pandas object), two processes
    # included; the file is the one an in-process run (pandas imported) writes.
    flag = ["--lines"] if lines else []
    for jobs in ("1", "2"):
        out = tmp_path / f"own-{jobs}.parquet"
        rc, imported, _ = _probe(
            "command", ["export", *flag, str(LOG), "-o", str(out), "-q", "--jobs", jobs]
        )
        assert (rc, imported) == (0, False)
        ref = tmp_path / "ref.parquet"
        assert run(["export", *flag, str(LOG), "-o", str(ref), "-q", "--jobs", jobs]).exit_code == 0
        mine, theirs = pq.read_table(out), pq.read_table(ref)
        assert mine.num_rows >= 8
        assert mine.equals(theirs) and mine.schema.metadata == theirs.schema.metadata


def test_main_in_a_process_that_goes_on_leaves_pandas_importable(tmp_path: Path) -> None:
    # ``main`` is the CLI called from Python (a test, a notebook): the process goes on after
    # the command, so the command must not take pandas away from it.
    out = tmp_path / "p.parquet"
    rc, _, importable = _probe("main", ["export", "--lines", str(LOG), "-o", str(out), "-q"])
    assert (rc, importable) == (0, True)


@pytest.mark.parametrize(
    ("suffix", "cpus", "jobs"), [("parquet", 2, 1), ("jsonl", 2, 2), ("parquet", 4, 3)]
)
def test_the_line_table_leaves_a_cpu_to_the_parquet_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, cpus: int, jobs: int
) -> None:
    # Without --jobs, a large log's line table is parsed by a process per CPU, less one for
    # the Parquet writer's thread (on two CPUs: one process, as fast as two and cheaper).
    import cuzk_diag.linetable as linetable
    from cuzk_diag.ingest import parallel

    monkeypatch.setattr(parallel, "usable_cpus", lambda: cpus)
    monkeypatch.setattr(parallel, "AUTO_MIN_BYTES", 1)  # (the fixture counts as large)
    asked: list[int] = []
    real = linetable.iter_line_tables

    def spy(*args, jobs: int = 1, **kw):  # noqa: ANN002, ANN003, ANN202
        asked.append(jobs)
        return real(*args, jobs=1, **kw)

    monkeypatch.setattr(linetable, "iter_line_tables", spy)
    res = run(["export", "--lines", str(LOG), "-o", str(tmp_path / f"l.{suffix}"), "-q"])
    assert res.exit_code == 0, res.output
    assert asked == [jobs]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_every_batch_of_a_streamed_export_carries_the_runs_era(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """The batches a streamed export writes before the run ends carry the era the log showed
    by then (here from its first call on), not ``unknown``: a log of more records than a
    batch holds, written a few records at a time, in every format, read by one process and,
    cut in two, by two."""
    from cuzk_diag.ingest import split
    from cuzk_diag.writers import PartitionSink

    monkeypatch.setattr(PartitionSink, "BATCH", 4)
    monkeypatch.setattr(split, "MIN_BYTES", 1 << 16)
    monkeypatch.setattr(split, "WARM_BYTES", 1 << 14)
    monkeypatch.setattr(split, "CHUNK_BYTES", 1 << 13)
    splits = sum(split.outcomes.values())
    for era in ("main", "pool-cache", "phase12"):
        log, _expected, truth = _sim_log(tmp_path, f"{era}.log", era=era, proofs=4, seed=3)
        assert log.stat().st_size > split.MIN_BYTES  # (cut in two with --jobs 2)
        for suffix in (".parquet", ".csv", ".jsonl"):
            out = tmp_path / f"{era}-{jobs}{suffix}"
            res = run(["export", str(log), "-o", str(out), "-q", "--jobs", jobs])
            assert res.exit_code == ExitCode.OK, res.output
            if suffix == ".parquet":
                eras = pq.read_table(out).column("era").to_pylist()
            elif suffix == ".csv":
                eras = pacsv.read_csv(out).column("era").to_pylist()
            else:
                eras = [json.loads(line)["era"] for line in out.read_text().splitlines()]
            assert len(eras) == len(truth) > 3 * PartitionSink.BATCH, (era, suffix)
            assert set(eras) == {era}, (era, suffix, jobs)
    assert (sum(split.outcomes.values()) > splits) == (jobs == "2")
