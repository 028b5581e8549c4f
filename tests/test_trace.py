"""`cuzk-diag trace`: the Chrome Trace Event JSON of a run, checked as Perfetto reads it."""

from __future__ import annotations

import errno
import io
import json
import math
import tempfile
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk_diag import trace as trace_module
from cuzk_diag.analysis import analyze
from cuzk_diag.cli import cli
from cuzk_diag.errors import InputError, OutputError
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.pipeline import iter_records, load_run
from cuzk_diag.records import Accounting, RunInfo
from cuzk_diag.sinks import StreamEnd
from cuzk_diag.trace import (
    TAG_MARK,
    TraceWriter,
    _number,
    _us,
    _us_text,
    copy_tagged,
    write_trace,
    write_trace_with_findings,
)

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "tests" / "data" / "trace-event.schema.json").read_text())
LOGS = sorted(
    [
        *(ROOT / "fixtures" / "sim").glob("*.log"),
        ROOT / "fixtures" / "example.log",
        ROOT / "fixtures" / "rules" / "proving-failures.trigger.log",
        ROOT / "fixtures" / "rules" / "cpu-critical-path.trigger.log",
    ]
)
INCIDENT = ROOT / "fixtures" / "sim" / "incident.log"
IDS = [str(p.relative_to(ROOT / "fixtures")) for p in LOGS]


@cache
def trace_of(path: Path) -> dict[str, Any]:
    buf = io.StringIO()
    write_trace([str(path)], buf)
    return json.loads(buf.getvalue())


def events(trace: dict[str, Any], ph: str) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e["ph"] == ph]


def thread_names(trace: dict[str, Any]) -> dict[tuple[int, int], str]:
    return {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events(trace, "M")
        if e["name"] == "thread_name"
    }


def process_pid(trace: dict[str, Any], name: str) -> int:
    pids = [
        e["pid"]
        for e in events(trace, "M")
        if e["name"] == "process_name" and e["args"]["name"] == name
    ]
    assert len(pids) == 1, name
    return pids[0]


@pytest.mark.parametrize("log", LOGS, ids=IDS)
def test_trace_validates_against_the_schema(log: Path) -> None:
    trace = trace_of(log)
    jsonschema.validate(trace, SCHEMA)
    # Every track a slice lands on is named, so Perfetto shows the layout's labels.
    names = thread_names(trace)
    for e in events(trace, "X") + events(trace, "i"):
        assert (e["pid"], e["tid"]) in names


def test_the_schema_rejects_what_perfetto_would_misread() -> None:
    trace = trace_of(INCIDENT)
    bad = json.loads(json.dumps(trace))
    call = next(e for e in bad["traceEvents"] if e.get("cat") == "call")
    del call["dur"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)
    bad = json.loads(json.dumps(trace))
    bad["traceEvents"].append({"name": "x", "ph": "C", "ts": 1, "pid": 1, "args": {"n": "1"}})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)


@pytest.mark.parametrize("log", LOGS, ids=IDS)
def test_every_gpu_call_appears_exactly_once(log: Path) -> None:
    trace = trace_of(log)
    run = load_run(str(log))
    df = run.partitions

    def key(job: Any, part: Any, rec: Any, first: Any) -> tuple[Any, ...]:
        return tuple(None if v is None or v != v else v for v in (job, part, rec, first))

    want = Counter(
        key(*(None if str(v) == "<NA>" else v for v in row))
        for row in df[["job_id", "partition", "record", "first_line"]].itertuples(index=False)
    )
    calls = [e for e in events(trace, "X") if e["cat"] == "call"]
    got = Counter(
        key(a["job_id"], a["partition"], a["record"], a.get("first_line"))
        for a in (e["args"] for e in calls)
    )
    assert got == want
    assert trace["metadata"]["calls"] == len(df)
    # each call carries every field of its record and its attribution labels
    rows = {r["record"]: r for r in df.to_dict("records") if str(r["record"]) != "<NA>"}
    for e in calls:
        row = rows.get(e["args"]["record"])
        if row is None:
            continue
        for k, v in row.items():
            if k in ("extra", "gpu") or v is None or pd.isna(v):
                continue
            if isinstance(v, pd.Timestamp):  # wall clock: ISO 8601 text in the trace
                assert pd.Timestamp(e["args"][k]) == v, (k, e["name"])
                continue
            assert e["args"][k] == (v.item() if hasattr(v, "item") else v), (k, e["name"])
        assert e["args"]["attribution"] == {
            "ids": row["attr_ids"],
            "gpu_region": row["attr_gpu"],
            "cpu": row["attr_cpu"],
        }


@pytest.mark.parametrize("log", LOGS, ids=IDS)
def test_slices_nest_and_never_partly_overlap_on_a_track(log: Path) -> None:
    trace = trace_of(log)
    tracks: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] in "Xi":
            tracks[(e["pid"], e["tid"])].append(e)
    assert tracks
    for track, evs in tracks.items():
        # timestamps never go back on a track, in file order
        ts = [e["ts"] for e in evs]
        assert ts == sorted(ts), track
        stack: list[dict[str, Any]] = []
        for e in sorted((e for e in evs if e["ph"] == "X"), key=lambda e: (e["ts"], -e["dur"])):
            end = e["ts"] + e["dur"]
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if e["cat"].startswith("stage"):
                # a stage lies inside its call (or prep slice), on the call's track
                assert stack and stack[-1]["cat"] in ("call", "prep"), (track, e)
                parent = stack[-1]
                assert parent["ts"] <= e["ts"] and end <= parent["ts"] + parent["dur"] + 1e-6
            else:
                assert not stack, (track, stack[-1]["name"], e["name"])  # no partial overlap
            stack.append(e)
    # counters: one value per time, never back in time per counter track
    by_counter: dict[tuple[int, str], list[float]] = defaultdict(list)
    for e in events(trace, "C"):
        by_counter[(e["pid"], e["name"])].append(e["ts"])
    for key, ts in by_counter.items():
        assert ts == sorted(ts), key


def test_incident_shows_three_workers_stacked_on_the_gpu_mutex() -> None:
    trace = trace_of(INCIDENT)
    gpu0 = process_pid(trace, "GPU 0")
    names = thread_names(trace)
    gpu_tracks = {
        tid: name for (pid, tid), name in names.items() if pid == gpu0 and "GPU thread" in name
    }
    assert sorted(gpu_tracks.values()) == [f"worker {w} · GPU thread" for w in range(3)]
    waits: list[tuple[float, float]] = []
    for tid in gpu_tracks:
        on = [e for e in events(trace, "X") if e["pid"] == gpu0 and e["tid"] == tid]
        calls = [e for e in on if e["cat"] == "call"]
        lock = [e for e in on if e["name"].startswith("lock wait")]
        assert calls and lock
        # this code logs no mutex wait: the slices say they are estimates
        assert all(e["cat"] == "stage,estimated" for e in lock)
        assert all("lock wait" in c["args"].get("estimated", []) for c in calls if c["ts"] > 5e7)
        share = sum(e["dur"] for e in lock) / sum(e["dur"] for e in calls)
        assert share > 0.5, (gpu_tracks[tid], share)  # most of each worker's call time
        waits += [(e["ts"], e["ts"] + e["dur"]) for e in lock]
    # the stack: while one call holds the mutex the two other workers wait at once
    cuts = sorted({t for w in waits for t in w})
    stacked = total = 0.0
    for a, b in zip(cuts, cuts[1:], strict=False):
        depth = sum(1 for s, e in waits if s <= a and b <= e)
        total += b - a if depth else 0.0
        stacked += b - a if depth >= 2 else 0.0
    assert stacked / total > 0.6, stacked / total
    # and the GPU is never held by two calls at once: NTT+H .. tail MSM do not overlap
    kernels = sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in events(trace, "X")
        if e["pid"] == gpu0 and e["name"] in ("NTT+H", "batch add", "tail MSM")
    )
    assert all(b <= c for (_, b), (c, _) in zip(kernels, kernels[1:], strict=False))
    # every call fell back from VRAM pre-staging: one instant each
    fallbacks = [e for e in events(trace, "i") if e["cat"] == "prestage"]
    assert len(fallbacks) == 10 and all("skip_vram" in e["name"] for e in fallbacks)


def test_split_api_finalize_has_its_own_track() -> None:
    trace = trace_of(ROOT / "fixtures" / "sim" / "era-main.log")
    names = thread_names(trace)
    fin = [e for e in events(trace, "X") if e["cat"] == "finalize"]
    assert fin and all("finalize" in names[(e["pid"], e["tid"])] for e in fin)
    # measured lock wait on main: not an estimate
    lock = [e for e in events(trace, "X") if e["name"].startswith("lock wait")]
    assert lock and all(e["cat"] == "stage" and not e["args"]["estimated"] for e in lock)
    # the GPU-thread track of a worker never needs a second lane: finalize runs beside it
    assert not [n for n in names.values() if "GPU thread #" in n]
    # a call slice ends at unlock: lock acquisition + mutex_held_ms
    for e in events(trace, "X"):
        if e["cat"] == "call":
            a = e["args"]
            want = a["pre_lock_cpu_ms"] + a["mutex_wait_ms"] + a["mutex_held_ms"]
            assert e["dur"] == pytest.approx(want * 1000)


def test_synthesis_and_proof_tracks_match_the_concurrency() -> None:
    trace = trace_of(ROOT / "fixtures" / "sim" / "concurrent-curio.log")
    run = analyze([str(ROOT / "fixtures" / "sim" / "concurrent-curio.log")])
    names = thread_names(trace)
    proofs = process_pid(trace, "proofs")
    lanes = [n for (pid, _), n in names.items() if pid == proofs]
    assert len(lanes) == run.facts.max_proofs_in_flight
    bands = [e for e in events(trace, "X") if e["cat"] == "proof"]
    assert len(bands) == run.facts.proofs
    busy = [e for e in events(trace, "C") if e["name"].endswith("busy")]
    assert {e["args"]["busy"] for e in busy} == {0, 1}


def test_failed_calls_are_marked() -> None:
    trace = trace_of(ROOT / "fixtures" / "sim" / "failures.log")
    failed = [e for e in events(trace, "i") if e["cat"] == "failure"]
    run = load_run(str(ROOT / "fixtures" / "sim" / "failures.log"))
    assert len([e for e in failed if e["name"] == "call failed"]) == int(
        (run.partitions["status"] == "failed").sum()
    )
    assert any(e["name"] == "proof failed" for e in failed)


def test_trace_is_written_while_records_complete() -> None:
    log = ROOT / "fixtures" / "example.log"
    buf = io.StringIO()
    writer = TraceWriter(buf, horizon_ms=5_000)
    writer.start()
    acc, info = Accounting(), RunInfo()
    writer.info = info
    sizes = []
    for i, rec in enumerate(iter_records([str(log)], acc, info)):
        writer.record(rec)
        if i % 10 == 9:
            writer._estimate()
            sizes.append((len(buf.getvalue()), len(writer._heap)))
    writer.finish(StreamEnd(info, acc))
    # calls go out while later ones are still being read, and the buffer stays small
    assert sizes[0][0] > 0 and sizes[-1][0] > sizes[0][0]
    assert max(h for _, h in sizes) < 60
    jsonschema.validate(json.loads(buf.getvalue()), SCHEMA)


def test_cli_with_findings_and_stdout(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    res = CliRunner().invoke(cli, ["trace", str(INCIDENT), "-o", str(out)])
    assert res.exit_code == ExitCode.OK, res.output
    assert "10 GPU calls" in res.output
    trace = json.loads(out.read_text())
    jsonschema.validate(trace, SCHEMA)
    codes = {f["code"] for f in trace["metadata"]["findings"]}
    assert codes == {"CZ101", "CZ201", "CZ202", "CZ501"}
    tagged = Counter(
        c for e in events(trace, "X") if e["cat"] == "call" for c in e["args"].get("findings", [])
    )
    # every affected call carries the code, not only the lines the report cites
    affected = {f["code"]: f["evidence"]["affected"] for f in trace["metadata"]["findings"]}
    assert tagged["CZ101"] == affected["CZ101"] == 10
    assert tagged["CZ201"] == affected["CZ201"] == 8
    assert tagged["CZ202"] == affected["CZ202"] == 9
    assert "CZ501" not in tagged  # a finding about the run's shape names no call
    # stdin and stdout: the one pass tags the calls too, as for the file
    res = CliRunner().invoke(cli, ["trace", "-", "-o", "-"], input=INCIDENT.read_bytes())
    assert res.exit_code == ExitCode.OK
    piped = json.loads(res.stdout)
    assert piped["metadata"]["findings"] == trace["metadata"]["findings"]
    assert piped["traceEvents"] == trace["traceEvents"]
    assert len([e for e in events(piped, "X") if e["cat"] == "call"]) == 10
    # without findings: none, and the same events otherwise
    res = CliRunner().invoke(
        cli, ["trace", "-", "--no-findings", "-o", "-"], input=INCIDENT.read_bytes()
    )
    assert res.exit_code == ExitCode.OK
    bare = json.loads(res.stdout)
    assert bare["metadata"]["findings"] == []
    assert not any("findings" in e.get("args", {}) for e in bare["traceEvents"])


def test_cli_unwritable_output(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        cli, ["trace", str(INCIDENT), "-o", str(tmp_path / "no" / "x.json"), "--no-findings"]
    )
    assert res.exit_code == ExitCode.USAGE
    assert "cannot write" in res.output


CALL_RULES = {"CZ101", "CZ102", "CZ103", "CZ201", "CZ202", "CZ301", "CZ601"}


@pytest.mark.parametrize(
    "log", sorted((ROOT / "fixtures" / "rules").glob("*.trigger.log")), ids=lambda p: p.name
)
def test_findings_name_every_affected_call(log: Path) -> None:
    # The trace tags a finding's calls; a rule about calls names each one it counts.
    result = analyze([str(log)])
    firsts = set(result.partitions["first_line"].dropna().astype(int))
    for f in result.findings:
        if f.code in CALL_RULES:
            assert len(f.calls) == f.evidence["affected"] > 0, f.code
            assert set(f.calls) <= firsts


@settings(max_examples=500, deadline=None)
@given(
    st.integers(-(2**60), 2**60)
    | st.integers(-(2**44), 2**44).map(float)
    | st.floats(-1e15, 1e15, allow_nan=False)
    | st.sampled_from([0.0, -0.0, 0.0005, 2.0**43, -(2.0**43), 2**43 - 1, 1e-9])
)
def test_trace_times_are_the_milliseconds_in_microseconds_rounded_to_three_places(ms) -> None:
    """``_us`` writes whole milliseconds without ``round``: the value and its type are those of
    rounding ``ms * 1000`` to three decimals, an integer when whole."""
    us = round(ms * 1000.0, 3)
    want = int(us) if us == int(us) else us
    got = _us(ms)
    assert got == want and type(got) is type(want)
    # and its text, written without the encoder on the fast path, is the encoder's
    assert _us_text(ms) == json.dumps(want)


@given(st.integers() | st.floats() | st.sampled_from([math.nan, math.inf, -math.inf, -0.0]))
def test_a_number_is_written_as_the_encoder_writes_it(v) -> None:
    assert _number(v) == json.dumps(v)


@pytest.mark.parametrize("log", [INCIDENT, ROOT / "fixtures" / "sim" / "messy.log"], ids=str)
def test_each_event_is_the_encoders_text_of_its_dict(log: Path, monkeypatch) -> None:
    """The slices, instants and counters are written as text, not encoded from a dict: each
    event's line is what the encoder makes of the dict it reads back as (its keys in order,
    its numbers and texts as the encoder writes them). Written in flushes of 3 events, the
    trace is the same text as in one."""
    whole = io.StringIO()
    write_trace([str(log)], whole)
    monkeypatch.setattr(trace_module, "_FLUSH_EVENTS", 3)
    small = io.StringIO()
    write_trace([str(log)], small)
    assert small.getvalue() == whole.getvalue()
    text = whole.getvalue()
    head, _, rest = text.partition("\n")
    assert head == '{"traceEvents":['
    body, _, _ = rest.partition("\n],")
    lines = body.split(",\n")
    kinds = Counter()
    for line in lines:
        ev = json.loads(line)
        kinds[ev["ph"]] += 1
        assert trace_module._encode(ev) == line
    assert kinds["X"] and kinds["C"] and kinds["M"]


ONE_PASS_LOGS = [
    INCIDENT,
    ROOT / "fixtures" / "sim" / "messy.log",  # (torn, damaged lines: NUL bytes among them)
    ROOT / "fixtures" / "sim" / "damaged.log",
    ROOT / "fixtures" / "sim" / "failures.log",
    ROOT / "fixtures" / "sim" / "era-phase4-8.log",
    ROOT / "fixtures" / "sim" / "cpp-only.log",  # (no TIMELINE clock: calls laid end to end)
    ROOT / "fixtures" / "rules" / "cpu-critical-path.trigger.log",
]


@pytest.mark.parametrize("log", ONE_PASS_LOGS, ids=lambda p: p.name)
def test_one_pass_with_findings_is_the_trace_of_analyze_then_the_stream(
    log: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``write_trace_with_findings`` tags the calls once the run is read: its text is the
    trace of the two passes it replaces (``analyze`` for the findings, then the records
    streamed into a writer that knows them), its analysis ``analyze``'s. Copied in pieces of
    7 bytes (marks cut by the pieces' ends), the text is the same; no mark is left."""
    findings = analyze([str(log)]).findings
    two = io.StringIO()
    write_trace([str(log)], two, findings=findings)
    one = io.StringIO()
    _, end, analysis = write_trace_with_findings([str(log)], one, spool_dir=str(tmp_path))
    assert one.getvalue() == two.getvalue()
    assert [f.to_dict() for f in analysis.findings] == [f.to_dict() for f in findings]
    assert end.accounting.lines_total == analyze([str(log)]).accounting.lines_total
    assert TAG_MARK not in one.getvalue()
    assert list(tmp_path.iterdir()) == []  # (the spool is gone)
    monkeypatch.setattr(trace_module, "_COPY_BYTES", 7)
    small = io.StringIO()
    write_trace_with_findings([str(log)], small)
    assert small.getvalue() == two.getvalue()


def test_copy_tagged_puts_each_calls_findings_where_the_writer_would() -> None:
    spool = io.BytesIO(
        b'{"traceEvents":[\n{"args":{"a":1\x0012\x00}},\n'
        b'{"args":{"a":2\x007\x00,"estimated":["lock wait"]}}\n],"metadata":{}}\n'
    )
    out = io.StringIO()
    copy_tagged(spool, out, {12: ["CZ101", "CZ201"]})
    assert out.getvalue() == (
        '{"traceEvents":[\n{"args":{"a":1,"findings":["CZ101","CZ201"]}},\n'
        '{"args":{"a":2,"estimated":["lock wait"]}}\n],"metadata":{}}\n'
    )


def test_the_spool_falls_back_to_the_systems_temporary_directory(tmp_path: Path) -> None:
    out = io.StringIO()
    missing = tmp_path / "no" / "such" / "dir"
    _, _, analysis = write_trace_with_findings([str(INCIDENT)], out, spool_dir=str(missing))
    assert analysis.findings
    assert json.loads(out.getvalue())["metadata"]["findings"]


def test_an_input_error_in_the_one_pass_leaves_no_temporary_file(tmp_path: Path) -> None:
    export = tmp_path / "run.parquet"
    res = CliRunner().invoke(cli, ["export", str(INCIDENT), "-o", str(export), "-q"])
    assert res.exit_code == ExitCode.OK, res.output
    spool = tmp_path / "spool"
    spool.mkdir()
    with pytest.raises(InputError, match="Parquet export"):
        write_trace_with_findings([str(export)], io.StringIO(), spool_dir=str(spool))
    assert list(spool.iterdir()) == []
    res = CliRunner().invoke(cli, ["trace", str(export), "-o", str(tmp_path / "t.json")])
    assert res.exit_code == ExitCode.USAGE
    assert "Parquet export" in res.stderr and "Exception" not in res.stderr


class _FullDisk(io.BytesIO):
    """A temporary file on a disk that fills after ``room`` bytes."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def write(self, data: Any) -> int:
        if self.tell() + len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(data)


@pytest.mark.parametrize("room", [0, 20_000])
def test_a_full_disk_under_the_temporary_file_is_an_output_error(
    room: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda *a, **k: _FullDisk(room))
    with pytest.raises(OutputError, match="No space left on device.*--no-findings"):
        write_trace_with_findings([str(INCIDENT)], io.StringIO())
    res = CliRunner().invoke(cli, ["trace", str(INCIDENT), "-o", str(tmp_path / "t.json")])
    assert res.exit_code == ExitCode.USAGE
    assert "temporary file" in res.stderr and "internal error" not in res.stderr
