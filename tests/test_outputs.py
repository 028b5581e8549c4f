"""One output registry: formats by kind and name, one sink life cycle, one console factory."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk_diag.analysis import analyze
from cuzk_diag.cli import cli
from cuzk_diag.config import Config
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.live import LiveOptions, run_live
from cuzk_diag.pipeline import load_run, stream_records
from cuzk_diag.report import REGISTRY, Kind, lookup, names
from cuzk_diag.report.console import make_console
from cuzk_diag.sinks import Sink, StreamEnd
from test_cli_check import validate as validate_junit

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
INCIDENT = ROOT / "fixtures" / "sim" / "incident.log"
CLEAN = ROOT / "fixtures" / "rules" / "unpinned-host-memory.clean.log"
TRIGGER = ROOT / "fixtures" / "rules" / "unpinned-host-memory.trigger.log"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SARIF_SCHEMA = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))

#: One console command per kind of result.
COMMANDS = {
    "analyze": ["analyze", str(INCIDENT)],
    "check": ["check", str(INCIDENT), "--baseline", str(CLEAN), "--allow-different-config"],
    "compare": ["compare", str(CLEAN), str(TRIGGER)],
}


def invoke(args: list[str], env: dict[str, str | None] | None = None) -> Any:
    base: dict[str, str | None] = {"GITHUB_STEP_SUMMARY": "", "NO_COLOR": None, "COLUMNS": None}
    return CliRunner().invoke(cli, args, env={**base, **(env or {})}, catch_exceptions=False)


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


# -- the registry ---------------------------------------------------------------------------------


def test_every_registered_format_loads() -> None:
    for kind, table in REGISTRY.items():
        for name in table:
            obj = lookup(kind, name)
            if kind is Kind.STREAM:
                assert isinstance(obj, type) and issubclass(obj, Sink), name
            else:
                assert callable(obj), (kind, name)
    with pytest.raises(KeyError, match="unknown check format 'sarif'"):
        lookup(Kind.CHECK, "sarif")


@pytest.mark.parametrize(
    ("command", "kind"),
    [("analyze", Kind.ANALYSIS), ("check", Kind.CHECK), ("compare", Kind.COMPARISON)],
)
def test_commands_offer_exactly_the_registered_formats(command: str, kind: Kind) -> None:
    cmd = cli.commands[command]
    opt = next(p for p in cmd.params if p.name == "fmt")
    assert isinstance(opt.type, click.Choice)
    assert list(opt.type.choices) == names(kind)
    assert {"github", "junit", "sarif"} <= set(names(Kind.ANALYSIS))


# -- the console factory --------------------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_piped_console_output_honours_columns_and_has_no_trailing_padding(command: str) -> None:
    res = invoke(COMMANDS[command], env={"COLUMNS": "90"})
    assert res.exit_code in (ExitCode.OK, ExitCode.FINDINGS), res.output
    lines = res.stdout.splitlines()
    assert len(lines) > 3
    assert [ln for ln in lines if ln != ln.rstrip()] == []
    assert not ANSI.search(res.stdout)  # auto: not a terminal
    # text wraps at COLUMNS; a wider table (compare's stages) keeps its columns whole off a tty
    tables = [ln for ln in lines if "│" in ln or "┃" in ln or "━" in ln]
    assert max(len(ln) for ln in lines if ln not in tables) <= 90
    if command == "compare":
        assert lines[0].endswith("→") and max(len(ln) for ln in tables) > 90
        assert all(ln.count("│") == 9 for ln in tables if "│" in ln and "8/8" in ln)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_color_always_wins_over_no_color_in_every_command(command: str) -> None:
    res = invoke([*COMMANDS[command], "--color", "always"], env={"NO_COLOR": "1"})
    assert ANSI.search(res.stdout), command
    res = invoke([*COMMANDS[command], "--color", "never"])
    assert not ANSI.search(res.stdout), command


def test_console_factory_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert make_console(io.StringIO()).width == 100  # piped, no COLUMNS
    assert not make_console(io.StringIO()).is_terminal
    assert make_console(FakeTTY()).color_system is not None  # auto on a terminal
    assert make_console(FakeTTY(), "never").color_system is None
    monkeypatch.setenv("NO_COLOR", "1")
    assert make_console(FakeTTY()).color_system is None
    assert make_console(io.StringIO(), "always").color_system is not None
    monkeypatch.setenv("COLUMNS", "132")
    assert make_console(io.StringIO()).width == 132
    assert make_console(FakeTTY()).width == 132


# -- analyze --format github | junit | sarif ------------------------------------------------------


def test_analyze_sarif_validates_and_locates_results_at_log_lines() -> None:
    res = invoke(["analyze", str(INCIDENT), "--format", "sarif"])
    assert res.exit_code == ExitCode.OK, res.output
    doc = json.loads(res.stdout)
    jsonschema.validate(doc, SARIF_SCHEMA, cls=jsonschema.Draft4Validator)
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert len(rules) == 10 and rules[0]["id"] == "CZ101"
    want = analyze([str(INCIDENT)]).findings
    assert [r["ruleId"] for r in run["results"]] == [f.code for f in want]
    for result, finding in zip(run["results"], want, strict=True):
        assert rules[result["ruleIndex"]]["id"] == finding.code
        assert result["level"] == {"error": "error", "warning": "warning"}[str(finding.severity)]
        lines = [
            loc["physicalLocation"]["region"]["startLine"]
            for loc in result["locations"]
            if "region" in loc["physicalLocation"]
        ]
        assert lines == list(finding.lines)
        uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for loc in result["locations"]}
        assert uris == {str(INCIDENT)}
    # a document the schema must reject, so the check above can fail
    doc["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SARIF_SCHEMA, cls=jsonschema.Draft4Validator)


def test_analyze_junit_has_a_testcase_per_rule() -> None:
    res = invoke(["analyze", str(INCIDENT), "--format", "junit", "--select", "CZ1,CZ2"])
    assert res.exit_code == ExitCode.OK, res.output
    assert validate_junit(res.stdout) == []
    cases = re.findall(r'<testcase name="(CZ\d+) [^"]+"', res.stdout)
    assert cases == ["CZ101", "CZ102", "CZ103", "CZ201", "CZ202"]
    assert 'failures="3"' in res.stdout  # CZ101 error, CZ201 and CZ202 warnings
    res = invoke(["analyze", str(INCIDENT), "--format", "junit", "--fail-on", "error"])
    assert 'failures="1"' in res.stdout and res.exit_code == ExitCode.FINDINGS


def test_analyze_github_annotates_each_finding() -> None:
    res = invoke(["analyze", str(INCIDENT), "--format", "github"])
    assert res.exit_code == ExitCode.OK, res.output
    lines = res.stdout.splitlines()
    assert [ln.split(" ", 1)[0] for ln in lines[:4]] == [
        "::error",
        "::warning",
        "::warning",
        "::warning",
    ]
    assert "title=CZ101 " in lines[0]


# -- one sink life cycle --------------------------------------------------------------------------


class Recorder(Sink):
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.records = 0
        self.end: StreamEnd | None = None

    def start(self) -> None:
        self.calls.append("start")

    def record(self, record: dict[str, Any], *, revised: bool = False) -> None:
        if not revised:
            self.records += 1
        if self.calls[-1] != "record":
            self.calls.append("record")

    def finding(self, finding: Any, *, status: str = "new") -> None:
        if self.calls[-1] != "finding":
            self.calls.append("finding")

    def finish(self, end: StreamEnd) -> None:
        self.calls.append("finish")
        self.end = end

    def close(self) -> None:
        self.calls.append("close")


def test_batch_and_live_drive_sinks_through_the_same_life_cycle() -> None:
    n = len(load_run(str(INCIDENT)).partitions)
    batch = Recorder()
    stream_records([str(INCIDENT)], batch)
    assert batch.calls == ["start", "record", "finish", "close"]
    assert batch.records == n and batch.end is not None and batch.end.info.era == "phase9-11"
    live = Recorder()
    run_live([str(INCIDENT)], Config(), live, LiveOptions(window=50))
    assert live.calls[0] == "start" and live.calls[-2:] == ["finish", "close"]
    assert "record" in live.calls and live.records == n
    assert live.end is not None and live.end.analysis is not None


@pytest.mark.parametrize("name", ["partitions", "trace", "jsonl"])
def test_stream_formats_are_driven_by_the_same_loop(name: str, tmp_path: Path) -> None:
    cls = lookup(Kind.STREAM, name)
    buf = io.StringIO()
    if name == "partitions":
        stream_records([str(INCIDENT)], cls(str(tmp_path / "p.jsonl"), "jsonl"))
        rows = [json.loads(ln) for ln in (tmp_path / "p.jsonl").read_text().splitlines()]
        assert len(rows) == 10 and {r["era"] for r in rows} == {"phase9-11"}
    elif name == "trace":
        stream_records([str(INCIDENT)], cls(buf))
        assert json.loads(buf.getvalue())["metadata"]["calls"] == 10
    else:
        stream_records([str(INCIDENT)], cls(buf))
        events = [json.loads(ln) for ln in buf.getvalue().splitlines()]
        assert [e["type"] for e in events] == ["partition"] * 10


def test_check_junit_on_stdout_matches_the_junit_file(tmp_path: Path) -> None:
    out = tmp_path / "j.xml"
    res = invoke(["check", str(INCIDENT), "--format", "junit", "--junit", str(out)])
    assert res.exit_code == ExitCode.FINDINGS
    assert validate_junit(res.stdout) == []

    def strip(doc: str) -> str:
        return re.sub(r' (timestamp|hostname)="[^"]*"', "", doc)

    assert strip(res.stdout) == strip(out.read_text(encoding="utf-8"))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["record", "worker", "gpu_ms", "job_id", "status", "kernel", "x"]),
            st.one_of(
                st.none(),
                st.booleans(),
                st.integers(-(2**63), 2**63 - 1),
                st.integers(2**63, 2**70),
                st.floats(allow_nan=True),
                st.text(max_size=5),
                st.lists(st.integers(), max_size=2),
            ),
        ),
        max_size=6,
    )
)
def test_records_fit_their_columns_as_the_careful_path_makes_them(recs: list[dict]) -> None:
    """Records whose values all fit pass as they are; any other goes through ``_fit`` (a bool or
    a fraction in an integer column moves to ``extra``, a number in a text column becomes its
    text): the table is the one ``_fit`` on every record gives."""
    import pyarrow as pa

    from cuzk_diag import frame
    from cuzk_diag.frame import _fit, records_to_table
    from cuzk_diag.records import PARTITION_SCHEMA

    # (gpu_ms: integer column; kernel, x: not columns; job_id, status: text)
    expected = pa.Table.from_pylist([_fit(r) for r in recs], schema=PARTITION_SCHEMA)
    compiled = frame.COMPILED
    try:
        for fill in (True, False):  # (with and without ``_fill``, whichever build this is)
            frame.COMPILED = fill
            assert records_to_table(recs).equals(expected)
    finally:
        frame.COMPILED = compiled


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_a_partition_export_is_the_same_file_whether_records_come_one_by_one_or_as_tables(
    tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sink that takes tables (records another process assembled) writes the batches it
    writes for the same records one by one: same rows, same order, same row groups."""
    from cuzk_diag.frame import records_to_table
    from cuzk_diag.records import Accounting, RunInfo
    from cuzk_diag.writers import PartitionSink

    monkeypatch.setattr(PartitionSink, "BATCH", 7)
    recs = [
        {"record": i, "job_id": f"j{i // 5}", "partition": i % 5, "worker": i % 2, "gpu_ms": i}
        for i in range(40)
    ]
    end = StreamEnd(RunInfo(), Accounting())
    outs = []
    for how in ("one by one", "mixed"):
        out = tmp_path / f"{how.replace(' ', '-')}.{fmt}"
        sink = PartitionSink(str(out), fmt)
        if how == "one by one":
            for rec in recs:
                sink.record(rec)
        else:  # 3 dicts, a table of 12, 2 dicts, a table of 1, a table of 9, the rest
            sink.record(recs[0]), sink.record(recs[1]), sink.record(recs[2])
            sink.records(records_to_table(recs[3:15]))
            sink.record(recs[15]), sink.record(recs[16])
            sink.records(records_to_table(recs[17:18]))
            sink.records(records_to_table(recs[18:27]))
            assert sink.rows == 27
            for rec in recs[27:]:
                sink.record(rec)
        sink.finish(end)
        sink.close()
        outs.append(out)
    if fmt == "csv":
        assert outs[0].read_text() == outs[1].read_text()
        return
    import pyarrow.parquet as pq

    files = [pq.ParquetFile(p) for p in outs]
    assert files[0].read().equals(files[1].read())
    assert files[1].read().column("record").to_pylist() == list(range(40))
    sizes = [[f.metadata.row_group(i).num_rows for i in range(f.num_row_groups)] for f in files]
    assert sizes[0] == sizes[1] == [7, 7, 7, 7, 7, 5]


def test_every_fixture_log_s_records_make_the_same_table_with_and_without_the_fill() -> None:
    """``records_to_table`` through ``_fill`` (the integer columns on numpy buffers) and
    through ``_columns`` alone: equal tables, null counts and schema included, for the records
    of every fixture log (all code versions, failed and damaged calls), in batches."""
    from cuzk_diag import frame
    from cuzk_diag.ingest.stream import stream
    from cuzk_diag.records import Accounting, RunInfo

    logs = sorted((ROOT / "fixtures").rglob("*.log"))
    assert len(logs) > 20
    compiled = frame.COMPILED
    try:
        for log in logs:
            recs = list(stream([str(log)], Accounting(), RunInfo()))
            for at in range(0, len(recs), 37):  # (batches that cut where they fall)
                rows = recs[at : at + 37]
                frame.COMPILED = True
                filled = frame.records_to_table(rows)
                frame.COMPILED = False
                plain = frame.records_to_table(rows)
                assert filled.equals(plain, check_metadata=True), (log.name, at)
                assert [c.null_count for c in filled.columns] == [
                    c.null_count for c in plain.columns
                ]
    finally:
        frame.COMPILED = compiled


def test_the_filled_columns_live_in_arrow_s_memory_pool() -> None:
    """The integer columns ``_fill`` makes are in Arrow's pool, as the columns Arrow makes
    itself: on numpy's buffers (the C heap), a long log's tables left the heap fragmented once
    the frame took them (1 GB log: the frame's and the analysis's steps 50-60 MiB higher)."""
    import pyarrow as pa

    from cuzk_diag import frame
    from cuzk_diag.ingest.stream import stream
    from cuzk_diag.records import Accounting, RunInfo

    recs = list(stream([str(ROOT / "fixtures" / "sim" / "gw2.log")], Accounting(), RunInfo()))
    compiled = frame.COMPILED
    frame.COMPILED = True
    try:
        before = pa.total_allocated_bytes()
        columns = frame._filled_columns(recs * 50)
        pooled = pa.total_allocated_bytes() - before
    finally:
        frame.COMPILED = compiled
    assert columns is not None
    ints = [
        c
        for c in columns
        if isinstance(c, pa.Array) and c.type == pa.int64() and c.null_count < len(c)
    ]
    assert ints and pooled >= sum(c.nbytes for c in ints)
