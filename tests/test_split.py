"""One log file assembled in two parts by two processes (``ingest.split``) gives what one
process gives: the same records, field for field, the same accounting and the same run facts,
whether the child's part is taken or this process reads on from the cut."""

from __future__ import annotations

import gzip
import inspect
import io
import json
import pickle
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from cuzk_diag.analysis import analyze
from cuzk_diag.cli import cli
from cuzk_diag.errors import InputError
from cuzk_diag.frame import records_to_table
from cuzk_diag.ingest import parallel, split
from cuzk_diag.ingest.assemble import Assembler, SegmentEnd
from cuzk_diag.ingest.assemble.handover import StateKey, Uncomparable, state_key
from cuzk_diag.ingest.assemble.state import State
from cuzk_diag.ingest.parse import LineParser
from cuzk_diag.ingest.part import Batch, count_lines
from cuzk_diag.ingest.stream import Ingest, parse_window, stream
from cuzk_diag.model.daemon import SimConfig, simulate
from cuzk_diag.records import PARTITION_SCHEMA, Accounting, RunInfo
from cuzk_diag.sources import SourceStats, iter_input, open_window
from cuzk_diag.trace import TRACE_SHARE, write_trace
from cuzk_diag.writers import PartitionSink

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


class _HereCall:
    """``parallel.call_in_child`` run in this process (many small splits, no interpreter
    start each); ``fail`` makes the call raise as a failed child does."""

    def __init__(
        self, fail: bool, func: Any, *args: Any, progress: Any = None, **kwargs: Any
    ) -> None:
        self.value: Any = None
        self.error: Exception | None = None
        try:
            if fail:
                raise InputError("the parse process ended early (exit code -9)")
            # (sent through a pipe, as from a child)
            self.value = pickle.loads(pickle.dumps(func(*args, progress=progress, **kwargs)))
        except Exception as exc:
            self.error = exc

    def result(self, *, keep: bool = False) -> Any:
        if self.error is not None:
            raise self.error
        return self.value

    def running(self) -> bool:
        return False

    def close(self) -> None:
        pass


def _window_here(name: str, start: int, stop: int | None, carry: Any, source: int = 0) -> Any:
    """``parallel.parse_window_in_child`` run in this process."""
    acc = Accounting()
    parser = LineParser(source, acc, full=False)
    parser.resume(carry)
    end = yield from parse_window(name, start, stop, parser, 1 << 16)
    return acc, end


@pytest.fixture
def here(monkeypatch: pytest.MonkeyPatch) -> Callable[[bool], None]:
    """Children run in this process: the parts' and the windows' parsed when a part is read
    here."""

    def use(fail: bool = False) -> None:
        monkeypatch.setattr(
            parallel,
            "call_in_child",
            lambda func, *args, progress=None, child=None, needs_pandas=True, **kwargs: _HereCall(
                fail, func, *args, progress=progress, **kwargs
            ),
        )
        monkeypatch.setattr(parallel, "waiting_child", lambda: _HereCall(False, lambda **_: None))
        monkeypatch.setattr(parallel, "parse_window_in_child", _window_here)

    return use


def _parts_of(monkeypatch: pytest.MonkeyPatch, min_bytes: int, warm: int, chunk: int) -> None:
    """Files of ``min_bytes`` or more are split (``split.MIN_BYTES``), their children warm up
    over ``warm`` bytes, and the files are read ``chunk`` bytes at a time: sizes for test logs."""
    monkeypatch.setattr(split, "MIN_BYTES", min_bytes)
    monkeypatch.setattr(split, "WARM_BYTES", warm)
    monkeypatch.setattr(split, "CHUNK_BYTES", chunk)


def _one(path: str) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any], list[int]]:
    """One log read by one process (``_files``)."""
    return _files([path], 1)


def _split(
    path: str, cut: int | list[int], warm: int, chunk: int, *, tables: bool = False
) -> tuple[list[Any], dict[str, Any], dict[str, Any], list[int], int]:
    acc, info, ends, shown = Accounting(), RunInfo(), [], [0]
    ing = Ingest([path], acc, info)

    def deliver(out: list[Any]) -> Iterator[dict[str, Any]]:
        for rec in out:
            if type(rec) is SegmentEnd:
                ends.append(rec.segment)
            else:
                yield rec

    def progress(n: int) -> None:
        shown[0] += n

    recs = list(
        split.stream_split(
            path,
            ing,
            deliver=deliver,
            progress=progress,
            at=[split.line_start(path, c) for c in ([cut] if isinstance(cut, int) else cut)],
            warm=warm,
            chunk_size=chunk,
            tables=tables,
        )
    )
    return recs, acc.to_dict(), info.to_dict(), ends, shown[0]


def _as_table(items: list[Any]) -> pa.Table:
    """Records (dicts) and tables of records, in order, as one table."""
    tables, run = [], []
    for item in items:
        if type(item) is dict:
            run.append(item)
            continue
        if run:
            tables.append(records_to_table(run))
            run = []
        tables.append(item)
    if run:
        tables.append(records_to_table(run))
    return pa.concat_tables(tables) if tables else PARTITION_SCHEMA.empty_table()


def _sim_log(tmp_path: Path, mb: float, seed: int = 3) -> Path:
    log = tmp_path / f"sim-{seed}.log"
    cfg = SimConfig(
        era="main", n_gpus=2, gw=2, proofs=20, concurrency=4, seed=seed,
        target_bytes=int(mb * 1e6),
    )  # fmt: skip
    log.write_bytes(simulate(cfg).data)
    return log


def _reports(log: Path, jobs: tuple[str, ...], tmp_path: Path) -> list[bytes]:
    """``analyze --format json`` of ``log`` through the CLI with each ``--jobs`` of ``jobs``."""
    out = []
    for n in jobs:
        path = tmp_path / f"r{n}.json"
        args = ["analyze", str(log), "--format", "json", "-o", str(path), "-q", "--jobs", n]
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 0, res.output
        out.append(path.read_bytes())
    return out


def test_every_fixture_log_cut_anywhere_gives_one_process_records(
    here: Callable[[bool], None],
) -> None:
    here(False)
    logs = sorted(str(p) for p in FIXTURES.rglob("*.log"))
    assert len(logs) > 30
    before = dict(split.outcomes)
    tabled = 0
    for log in logs:
        size = Path(log).stat().st_size
        one = _one(log)
        for fracs in ([0.3], [0.6], [0.85], [0.2, 0.5], [0.3, 0.55, 0.8]):
            for warm in (2048, 16384):
                got = _split(log, [int(size * f) for f in fracs], warm, 1024)
                assert got[:4] == one, (log, fracs, warm)
                assert got[4] == size  # every byte shown once
        # The children's records as the tables they make: the same table.
        for fracs in ([0.6], [0.3, 0.55, 0.8]):
            got = _split(log, [int(size * f) for f in fracs], 16384, 1024, tables=True)
            assert got[1:4] == one[1:4]
            assert _as_table(got[0]).equals(records_to_table(one[0])), (log, fracs)
            tabled += sum(type(item) is pa.Table for item in got[0])
    assert tabled > 20, tabled
    # Every way was taken: a child's part, a part read here, and a part read here from the
    # state the child before it handed over.
    assert split.outcomes["adopted"] - before.get("adopted", 0) > 50
    assert split.outcomes["read on"] - before.get("read on", 0) > 50
    assert split.outcomes["resumed"] - before.get("resumed", 0) > 10
    assert split.outcomes["gave up"] - before.get("gave up", 0) > 5  # (the logs with failures)


def test_a_sim_log_in_four_parts_takes_every_childs_part(
    here: Callable[[bool], None], tmp_path: Path
) -> None:
    here(False)
    log = _sim_log(tmp_path, 2.0, seed=6)
    size = log.stat().st_size
    adopted = split.outcomes["adopted"]
    at = split.cuts(str(log), size, 4, 256 << 10)
    got = _split(str(log), at, 256 << 10, 64 << 10)
    one = _one(str(log))
    assert got[:4] == one
    assert split.outcomes["adopted"] == adopted + 3
    got = _split(str(log), at, 256 << 10, 64 << 10, tables=True)
    assert sum(type(item) is pa.Table for item in got[0]) >= 3  # (a table per batch of a part)
    assert _as_table(got[0]).equals(records_to_table(one[0]))
    assert got[1:4] == one[1:4]


def test_a_share_sets_this_processs_part_and_the_others_are_equal(tmp_path: Path) -> None:
    """``cuts(..., share)``: this process's part is that fraction of the file and three
    warm-ups (to the next line start), the rest cut evenly; without it, each part as long."""
    log = _sim_log(tmp_path, 2.0, seed=6)
    size, warm = log.stat().st_size, 64 << 10
    for parts, share in ((2, 0.2), (3, 0.2), (2, 0.5), (3, None)):
        at = split.cuts(str(log), size, parts, warm, share)
        own = size // parts if share is None else int(size * share)
        assert len(at) == parts - 1
        assert own + 3 * warm <= at[0] < own + 3 * warm + 1000  # (a line is shorter)
        rest = [b - a for a, b in zip(at, [*at[1:], size], strict=True)]
        assert max(rest) - min(rest) < 1000
        assert all(split.line_start(str(log), c) == c for c in at)


def test_no_part_is_shorter_than_two_warm_ups(here: Callable[[bool], None], tmp_path: Path) -> None:
    here(False)
    log = _sim_log(tmp_path, 2.0, seed=6)
    acc, info = Accounting(), RunInfo()
    ing = Ingest([str(log)], acc, info)
    taken = split.outcomes["adopted"] + split.outcomes["read on"]
    warm = 256 << 10

    def deliver(out: list[Any]) -> Iterator[dict[str, Any]]:
        return (r for r in out if type(r) is not SegmentEnd)

    recs = list(
        split.stream_split(str(log), ing, deliver=deliver, jobs=50, warm=warm, chunk_size=1 << 16)
    )
    parts = log.stat().st_size // (2 * warm)
    assert 2 <= parts < 50
    assert split.outcomes["adopted"] + split.outcomes["read on"] == taken + parts - 1
    assert recs == _one(str(log))[0]


def test_cuts_balance_the_parts(tmp_path: Path) -> None:
    log = _sim_log(tmp_path, 1.0, seed=7)
    size = log.stat().st_size
    data = log.read_bytes()
    for parts in (2, 3, 5):
        at = split.cuts(str(log), size, parts, 50_000)
        assert len(at) == parts - 1 and at == sorted(at)
        assert all(data[c - 1 : c] == b"\n" for c in at)  # line starts
        assert abs(at[0] - (size // parts + 150_000)) < 2000  # this process's part is longer
        rest = [b - a for a, b in zip(at, [*at[1:], size], strict=True)]
        assert max(rest) - min(rest) < 4000


def test_a_child_that_fails_leaves_the_rest_to_this_process(
    here: Callable[[bool], None], tmp_path: Path
) -> None:
    here(True)
    log = _sim_log(tmp_path, 0.3)
    read_on = split.outcomes["read on"]
    got = _split(str(log), log.stat().st_size // 2, 32 << 10, 16 << 10)
    assert got[:4] == _one(str(log))
    assert split.outcomes["read on"] == read_on + 1


def test_a_sim_log_is_split_and_the_childrens_parts_taken_with_real_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the CLI, as a user runs it: child interpreters assemble the later parts."""
    log = _sim_log(tmp_path, 1.5)
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    started, adopted = parallel.ChildCall.started, split.outcomes["adopted"]
    runner = CliRunner()
    reports = _reports(log, ("1", "2", "3"), tmp_path)
    assert parallel.ChildCall.started == started + 3  # one child with -j2, two with -j3
    assert split.outcomes["adopted"] == adopted + 3
    assert reports[0] == reports[1] == reports[2]
    assert json.loads(reports[1])["accounting"]["lines_total"] > 10000
    # The export takes the children's records as the tables they made: the same file layout
    # (in batches of the same size, here 64 records).
    monkeypatch.setattr(PartitionSink, "BATCH", 64)
    files = []
    for jobs in ("1", "3"):
        out = tmp_path / f"p{jobs}.parquet"
        res = runner.invoke(cli, ["export", str(log), "-o", str(out), "-q", "--jobs", jobs])
        assert res.exit_code == 0, res.output
        files.append(pq.ParquetFile(out))
    assert split.outcomes["adopted"] == adopted + 5
    assert files[0].read().equals(files[1].read())
    groups = [[f.metadata.row_group(i).num_rows for i in range(f.num_row_groups)] for f in files]
    assert groups[0] == groups[1] and len(groups[0]) > 1


def test_values_no_column_holds_are_counted_once_whichever_process_made_their_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child makes the tables of its part's records; their values that did not fit a
    column are counted as this process takes the tables in: the same accounting as one
    process, each value once (the warm-up's records are thrown away uncounted)."""
    log = _sim_log(tmp_path, 1.5)
    text = log.read_text()
    at = [m.start() for m in re.finditer(r"gpu_total_ms=\d+", text)]
    picked = at[:: max(1, len(at) // 12)]  # about a dozen, from the first part to the last
    for pos in reversed(picked):
        end = re.compile(r"\d+").match(text, pos + len("gpu_total_ms=")).end()  # type: ignore[union-attr]
        text = text[:pos] + "gpu_total_ms=" + "9" * 25 + text[end:]
    log.write_text(text)
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    adopted = split.outcomes["adopted"]
    reports = []
    for jobs in ("1", "2", "3"):
        out = tmp_path / f"r{jobs}.json"
        res = CliRunner().invoke(
            cli, ["analyze", str(log), "--format", "json", "-o", str(out), "-q", "--jobs", jobs]
        )
        assert res.exit_code == 0, res.output
        reports.append(out.read_text())
    assert split.outcomes["adopted"] == adopted + 3
    assert reports[0] == reports[1] == reports[2]
    acc = json.loads(reports[0])["accounting"]
    assert acc["invalid_values"] == len(picked) > 8
    assert len(acc["invalid_values_examples"]) == len(picked)
    # (each example is the first line of a record whose call holds one of the values)
    lines = text.splitlines()
    assert all(0 < n <= len(lines) for n in acc["invalid_values_examples"])


def test_a_trace_made_with_children_is_the_trace_made_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``trace --jobs 2``: a child assembles the log's second half for the one pass that feeds
    both the trace and the findings' rules; the file is the same, and so is the trace of the
    two passes it replaces (``analyze``, then the records streamed into the trace)."""
    log = _sim_log(tmp_path, 1.5)
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    adopted = split.outcomes["adopted"]
    shares: list[float | None] = []
    cuts = split.cuts

    def cut(
        name: str, size: int, parts: int, warm: int, share: float | None = None, lead: float = 3
    ) -> list[int]:
        shares.append(share)
        return cuts(name, size, parts, warm, share, lead)

    monkeypatch.setattr(split, "cuts", cut)
    traces = []
    for jobs in ("1", "2"):
        out = tmp_path / f"t{jobs}.json"
        res = CliRunner().invoke(cli, ["trace", str(log), "-o", str(out), "--jobs", jobs])
        assert res.exit_code == 0, res.output
        traces.append(out.read_bytes())
    assert split.outcomes["adopted"] == adopted + 1
    assert shares == [TRACE_SHARE]  # (the trace's process assembles less: it writes too)
    assert traces[0] == traces[1]
    assert b'"findings"' in traces[0]  # (the rules' findings tag calls)
    findings = analyze([str(log)], jobs=2).findings
    two_passes = io.StringIO()
    write_trace([str(log)], two_passes, findings=findings, jobs=2)
    assert split.outcomes["adopted"] == adopted + 3
    assert two_passes.getvalue().encode() == traces[0]


def test_a_child_without_pandas_makes_its_tables_without_importing_it() -> None:
    """A part's child makes its records' tables; pyarrow would import pandas to make them (to
    test whether a list is a pandas object). ``without_pandas`` spares that import, and the
    tables are the same."""
    code = (
        "import pickle, sys\n"
        "from cuzk_diag.ingest.parallel import without_pandas\n"
        "if sys.argv[1] == 'without': without_pandas()\n"
        "from cuzk_diag.frame import records_to_table\n"
        "rows = [{'job_id': 'j', 'partition': 1, 'gpu_ms': 5}, {'era': 'main'}]\n"
        "table = records_to_table(rows)\n"
        "sys.stdout.buffer.write(pickle.dumps(('pandas' in sys.modules, table)))\n"
    )
    got = {}
    for how in ("without", "with"):
        run = subprocess.run([sys.executable, "-c", code, how], capture_output=True, check=True)
        got[how] = pickle.loads(run.stdout)
    assert got["without"][0] is False
    assert got["without"][1].equals(got["with"][1])
    assert got["with"][1].equals(
        records_to_table([{"job_id": "j", "partition": 1, "gpu_ms": 5}, {"era": "main"}])
    )


def test_analyze_starts_its_ingest_before_it_imports_pandas() -> None:
    """What ``analyze`` does before its ingest (the command's modules, the configuration
    without rule selectors, the pipeline and the split) imports no pandas, so that the children
    of a split log start a third of a second sooner; selectors still import the rules."""
    code = (
        "import sys\n"
        "import cuzk_diag.cli, cuzk_diag.pipeline, cuzk_diag.ingest.split\n"
        "from cuzk_diag.config import load_config\n"
        "load_config(None).with_cli(sys.argv[1:], None, None)\n"
        "print('pandas' in sys.modules)\n"
    )
    for selectors, imported in (([], "False"), (["CZ1"], "True")):
        run = subprocess.run(
            [sys.executable, "-c", code, *selectors], capture_output=True, text=True, check=True
        )
        assert run.stdout.strip() == imported, selectors


def _assert_its_part_is_taken(log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``log`` cut in two small parts: the child's part is taken, with one process's report."""
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    before = dict(split.outcomes)
    reports = _reports(log, ("1", "2"), tmp_path)
    assert reports[0] == reports[1]
    assert split.outcomes["adopted"] == before.get("adopted", 0) + 1
    assert split.outcomes["gave up"] == before.get("gave up", 0)


@pytest.mark.parametrize("lost", ["GPU_END", "T8"])
def test_a_log_with_a_call_s_last_line_lost_keeps_its_parts(
    lost: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call whose GPU_END line is lost, or its deallocation line (T8) torn, ends once its
    worker has started two calls since and the clock is a minute past its start, or its
    GPU_END (``timeline.overtake``), as a child's warm-up, which never saw it, has it: the
    child's part is taken, with one process's records."""
    log = tmp_path / "lost.log"
    lines = _sim_log(tmp_path, 1.5, seed=8).read_bytes().split(b"\n")
    if lost == "GPU_END":
        del lines[next(i for i, line in enumerate(lines) if b",GPU_END," in line)]
    else:
        torn = next(i for i, line in enumerate(lines) if b"async_dealloc_ms=" in line)
        lines[torn] = lines[torn][:16]
    log.write_bytes(b"\n".join(lines))
    _assert_its_part_is_taken(log, tmp_path, monkeypatch)


def test_a_part_not_taken_is_parsed_in_a_child_of_its_own_with_real_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call whose worker never starts another and whose GPU_END never printed (the worker
    hung in it) stays open to the end of the log, which a later child cannot have: once it has
    been open for two warm-ups, the children are stopped and the rest of the log is read
    here, its parse in a second process."""
    log = tmp_path / "hung.log"
    lines = _sim_log(tmp_path, 1.5, seed=8).read_bytes().split(b"\n")
    end = next(i for i, line in enumerate(lines) if b",GPU_END," in line)
    job, part = lines[end].split(b",")[3], re.search(rb"partition=\d+", lines[end])
    assert part is not None
    start = max(i for i in range(end) if b",GPU_START," in lines[i] and job in lines[i]
                and part.group() in lines[i])  # fmt: skip
    lines[start] = re.sub(rb"worker=\d+", b"worker=7", lines[start])  # (no other call of it)
    del lines[end]
    log.write_bytes(b"\n".join(lines))
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    windows: list[tuple[int, int | None]] = []
    real = parallel.parse_window_in_child

    def spy(name: str, start: int, stop: int | None, carry: Any, source: int = 0) -> Any:
        windows.append((start, stop))
        return real(name, start, stop, carry, source)

    monkeypatch.setattr(parallel, "parse_window_in_child", spy)
    gave_up = split.outcomes["gave up"]
    reports = _reports(log, ("1", "2"), tmp_path)
    assert reports[0] == reports[1]
    assert split.outcomes["gave up"] == gave_up + 1
    cut = split.cuts(str(log), log.stat().st_size, 2, 256 << 10)[0]
    assert len(windows) == 1 and windows[0][0] < cut and windows[0][1] is None
    assert json.loads(reports[1])["accounting"]["lines_total"] > 10000


def test_numbering_and_clock_segments_follow_on_across_the_cut(
    here: Callable[[bool], None], tmp_path: Path
) -> None:
    """Two engine starts in one file (a restart) after the cut: the child's segments and block
    numbers go on from this process's. (A restart before the cut leaves the child's run facts,
    those of the first chunk, behind: this process reads on.)"""
    here(False)
    a, b = _sim_log(tmp_path, 0.5, seed=4), _sim_log(tmp_path, 0.5, seed=5)
    log = tmp_path / "restart.log"
    log.write_text(a.read_text() + b.read_text())
    one = _one(str(log))
    assert one[3] == [1]  # the first segment ended at the restart
    adopted = split.outcomes["adopted"]
    size = log.stat().st_size
    for frac, taken in ((0.35, 1), (0.8, 0)):
        got = _split(str(log), int(size * frac), 260 << 10, 16 << 10)
        assert got[:4] == one
        assert split.outcomes["adopted"] == adopted + taken
        adopted = split.outcomes["adopted"]
    assert [r["record"] for r in one[0]] == [r["record"] for r in got[0]]


def test_an_engine_restarted_in_a_childs_part_gives_its_calls_their_wall_clock(
    here: Callable[[bool], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart after the cut, another day: the partition export completes each batch as it
    comes (the wall clock of the engine start before each call), so a child's run facts are
    taken in before its records are, and its calls get the restart's day, as in one
    process."""
    here(False)
    a, b = _sim_log(tmp_path, 0.5, seed=4), _sim_log(tmp_path, 0.5, seed=5)
    log = tmp_path / "restart.log"
    log.write_text(a.read_text() + b.read_text().replace("2026-03-", "2026-05-"))
    _parts_of(monkeypatch, 1 << 16, 260 << 10, 16 << 10)
    monkeypatch.setattr(
        split, "cuts", lambda name, size, *_, **__: [split.line_start(name, int(size * 0.35))]
    )
    monkeypatch.setattr(PartitionSink, "BATCH", 64)
    adopted = split.outcomes["adopted"]
    tables = []
    for jobs in ("1", "2"):
        out = tmp_path / f"p{jobs}.parquet"
        res = CliRunner().invoke(cli, ["export", str(log), "-o", str(out), "-q", "--jobs", jobs])
        assert res.exit_code == 0, res.output
        tables.append(pq.read_table(out))
    assert split.outcomes["adopted"] == adopted + 1
    assert tables[0].equals(tables[1])
    months = {ts.month for ts in tables[1].column("start_ts").to_pylist() if ts is not None}
    assert months == {3, 5}


def test_what_is_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split, "MIN_BYTES", 1000)
    text = (FIXTURES / "sim" / "healthy-main.log").read_text()
    plain = tmp_path / "a.log"
    plain.write_text(text)
    assert split.splittable_files([str(plain)]) == [str(plain)]
    assert split.splittable_files([str(plain), str(plain)]) == [str(plain), str(plain)]
    small = tmp_path / "small.log"
    small.write_text(text[:500])
    packed = tmp_path / "a.log.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    bom = tmp_path / "bom.log"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    for inputs in ([str(small)], [str(packed)], [str(bom)], ["-"], []):
        assert split.splittable_files(inputs) is None, inputs


def test_windows_of_a_file_read_as_one_pass(tmp_path: Path) -> None:
    messy = (FIXTURES / "sim" / "messy.log").read_bytes() + (
        FIXTURES / "lines" / "messy.log"
    ).read_bytes()
    log = tmp_path / "messy.log"
    log.write_bytes(messy + b"x" * 3000 + b"\nno final newline")
    whole = [c for _, c in iter_input(str(log), 4096)]
    one = SourceStats(str(log))
    for st, _ in iter_input(str(log), 4096):
        one = st
    size = log.stat().st_size
    for frac in (0.1, 0.5, 0.9):
        cut = split.line_start(str(log), int(size * frac))
        stats, text = SourceStats(str(log)), []
        for lo, hi in ((0, cut), (cut, None)):
            for st, chunk in iter_input(open_window(str(log), lo, hi), 1024):  # noqa: B007
                text.append(chunk)
            stats.add(st)
        assert b"".join(text) == b"".join(whole)
        assert stats == one
        assert (
            split.count_lines(str(log), cut) == messy[:cut].count(b"\n")
            if cut <= len(messy)
            else True
        )
    assert one.ansi_lines and one.stray_cr_lines and one.missing_final_newline


def test_timeline_entries_only_the_later_assembler_holds() -> None:
    """Entries a warm-up left (a call's end without its start) are the same state as long as
    no later TIMELINE line names them."""
    main = (("calls",), None, True, ("mutex_wait",), ((0,), 2, 1, ()))
    mine = StateKey(main, {("j", 1): (("start_ms", 5),)})
    later = StateKey(main, {("j", 1): (("start_ms", 5),), ("old", 3): (("end_ms", 2),)})
    assert mine.matches(later, lambda extra: False)
    assert not mine.matches(later, lambda extra: ("old", 3) in extra)
    assert not later.matches(mine, lambda extra: False)  # an entry the later one lacks
    assert not mine.matches(StateKey(main, {("j", 1): (("start_ms", 6),)}), lambda e: False)
    other = StateKey((("calls", 1),) + main[1:], dict(mine.timeline))
    assert not mine.matches(other, lambda extra: False)


def test_the_state_key_accounts_for_every_attribute_of_the_assembler() -> None:
    """A new attribute of ``Assembler`` must be put in the key, or said to be left out."""
    from cuzk_diag.ingest.assemble import handover

    assert _assembler_attributes() == set(handover._PLAIN) | handover.OTHER_ATTRIBUTES
    assert not set(handover._PLAIN) & handover.OTHER_ATTRIBUTES


def _assembler_attributes() -> set[str]:
    """The attributes an ``Assembler`` holds. (In the compiled build the shared state is the
    struct of the extension type ``State``: its attributes are descriptors of the type, not
    entries of the instance's dict.)"""
    declared = {
        name
        for name, value in vars(State).items()
        if inspect.isgetsetdescriptor(value) and not name.startswith("__")
    }
    return set(vars(Assembler())) | declared


def test_the_three_declarations_of_the_shared_state_agree() -> None:
    """``Assembler.__init__`` sets the shared state; ``state.pxd`` (the compiled build's struct)
    and ``state.pyi`` (the type checker's view) declare it again: all three name the same
    attributes (the view also the parts' class constants)."""
    import re

    import cuzk_diag.ingest.assemble.gpu as gpu

    base = ROOT / "src" / "cuzk_diag" / "ingest" / "assemble"
    pxd = re.findall(r"^\s+cdef public \w+ (\w+)$", (base / "state.pxd").read_text(), re.M)
    pyi = re.findall(r"^    (\w+): (?!Callable)", (base / "state.pyi").read_text(), re.M)
    constants = {k for k in vars(gpu.GpuRegion) if k.isupper()}
    assert constants and len(pxd) == len(set(pxd))
    assert set(pxd) == _assembler_attributes()
    assert set(pyi) == _assembler_attributes() | constants


def test_a_state_holding_an_unknown_value_is_not_compared() -> None:
    asm = Assembler()
    state_key(asm)
    asm.pickups[("j", 1)] = object()  # type: ignore[assignment]
    with pytest.raises(Uncomparable):
        state_key(asm)


def test_a_child_started_early_takes_its_call_later_and_an_unused_one_is_stopped(
    tmp_path: Path,
) -> None:
    log = tmp_path / "lines.log"
    log.write_bytes(b"a\nbb\nccc\n" * 1000)
    child = parallel.waiting_child()
    assert not child.running()  # (no call yet)
    call = parallel.call_in_child(count_lines, str(log), log.stat().st_size, child=child)
    assert call is child
    assert call.result() == 3000
    idle = parallel.waiting_child()
    idle.close()
    assert idle.proc.returncode is not None  # stopped and reaped


def test_a_child_kept_after_its_result_takes_calls_in_turn(tmp_path: Path) -> None:
    """A child whose result is taken with ``keep`` waits for the next call (one interpreter's
    imports for the parts of several files); without ``keep``, or after an error, it is
    stopped."""
    log = tmp_path / "lines.log"
    log.write_bytes(b"a\nbb\nccc\n" * 1000)
    size = log.stat().st_size
    child = parallel.waiting_child()
    try:
        assert parallel.call_in_child(count_lines, str(log), size, child=child) is child
        with pytest.raises(AssertionError, match="one call at a time"):
            child.call(count_lines, (str(log), size), {})
        assert child.result(keep=True) == 3000
        assert child.proc.poll() is None  # waiting for its next call
        pid = child.proc.pid
        parallel.call_in_child(count_lines, str(log), 9, child=child, needs_pandas=False)
        assert child.result(keep=True) == 3 and child.proc.pid == pid
        with pytest.raises(AssertionError, match="pandas was refused"):
            child.call(count_lines, (str(log), size), {})
        parallel.call_in_child(
            count_lines, str(tmp_path / "gone.log"), 9, child=child, needs_pandas=False
        )
        with pytest.raises(InputError, match="gone.log"):
            child.result(keep=True)
        assert child.proc.returncode is not None  # an error stops it: its state is unknown
        again = parallel.call_in_child(count_lines, str(log), size)
        assert again.result() == 3000
        assert again.proc.returncode is not None  # stopped and reaped
    finally:
        child.close()


def test_a_childs_reply_is_handed_over_not_kept(tmp_path: Path) -> None:
    """``result`` hands the value over once: a progress callback that refers back to what holds
    the call (a cycle) must not keep a part's records and lines until a full collection."""
    log = tmp_path / "lines.log"
    log.write_bytes(b"a\nbb\nccc\n" * 1000)
    call = parallel.call_in_child(count_lines, str(log), log.stat().st_size)
    assert call.result() == 3000
    assert call.reply is None
    with pytest.raises(AssertionError, match="one result per call"):
        call.result()


def test_a_split_ingest_leaves_no_part_behind_without_the_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a split log is read, its children's parts (each with the run-info lines it read)
    are freed by their last reference, not left in a cycle for the collector (a 1 GB log held
    69,000 such lines, 36 MiB, through its analysis)."""
    import gc

    from cuzk_diag.ingest.part import Part
    from cuzk_diag.pipeline import load_run

    log = _sim_log(tmp_path, 1.5)
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    adopted = split.outcomes["adopted"]
    gc.collect()
    gc.disable()
    try:
        run = load_run([str(log)], jobs=2)
        left = [o for o in gc.get_objects() if type(o) is Part]
    finally:
        gc.enable()
    assert split.outcomes["adopted"] == adopted + 1
    assert run.info.jobs  # (the child's run-info lines were replayed here)
    assert left == []


def test_a_part_whose_records_did_not_all_arrive_is_read_here(
    here: Callable[[bool], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child sends its records a batch at a time and counts them: a batch lost on the way
    (the progress channel failed) leaves its part to this process, not a hole in the records."""
    here(False)
    log = _sim_log(tmp_path, 1.0, seed=9)
    heard = split._Split.heard
    lost: list[Any] = []

    def losing(self: Any, i: int, news: Any) -> None:
        if isinstance(news, Batch) and not lost:
            lost.append(news)
            return
        heard(self, i, news)

    monkeypatch.setattr(split._Split, "heard", losing)
    read_on = split.outcomes["read on"]
    got = _split(str(log), log.stat().st_size // 2, 64 << 10, 16 << 10)
    assert lost and split.outcomes["read on"] == read_on + 1
    assert got[:4] == _one(str(log))


# -- several files of one run (rotated logs) ----------------------------------------------------


def _rotated(log: Path, fracs: list[float], out: Path) -> list[str]:
    """``log`` cut at line starts near ``fracs`` of its size into files written in order."""
    data = log.read_bytes()
    at = [0, *sorted({split.line_start(str(log), int(len(data) * f)) for f in fracs}), len(data)]
    names = []
    for i, (lo, hi) in enumerate(zip(at, at[1:], strict=False)):
        name = out / f"{log.stem}.{i}.log"
        name.write_bytes(data[lo:hi])
        names.append(str(name))
    return names


def _files(
    names: list[str], jobs: int
) -> tuple[list[Any], dict[str, Any], dict[str, Any], list[int]]:
    """``stream`` of several files: records, accounting, run facts and segment ends; every
    byte of the files reported to the progress callback once."""
    acc, info, ends, shown = Accounting(), RunInfo(), [], [0]

    def progress(n: int) -> None:
        shown[0] += n

    recs = list(stream(names, acc, info, jobs=jobs, on_segment=ends.append, progress=progress))
    assert shown[0] == sum(Path(n).stat().st_size for n in names)
    return recs, acc.to_dict(), info.to_dict(), ends


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files of a few KB are split, in parts of a few warm-ups of 2 KB, read 1 KB at a time
    (too short a warm-up for most calls: the parts are mostly read here, from the state handed
    over or from this process's own)."""
    _parts_of(monkeypatch, 8 << 10, 2 << 10, 1 << 10)


def test_run_facts_come_back_in_order_across_many_runs(
    here: Callable[[bool], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child keeps its part's lines with run facts pickled a few at a time: replayed here a run
    at a time, they give the run facts (jobs, proofs, in order) of one process."""
    from cuzk_diag.ingest import part as part_mod

    here(False)
    log = _sim_log(tmp_path, 1.5)
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    monkeypatch.setattr(part_mod, "BATCH", 3)
    kept: list[int] = []
    real = part_mod.run_facts

    def counted(part: Any) -> Iterator[Any]:
        kept.append(len(part.run_info))
        evs = list(real(part))
        assert part.run_info == []  # (let go as they are taken)
        assert [e.line for e in evs] == sorted(e.line for e in evs)  # (in the part's order)
        kept.append(len(evs))
        yield from evs

    monkeypatch.setattr(split, "run_facts", counted)
    adopted = split.outcomes["adopted"]
    got = _files([str(log)], 3)
    assert split.outcomes["adopted"] > adopted
    assert got == _one(str(log))
    assert got[2]["jobs"]
    runs, lines = kept[0::2], kept[1::2]
    assert sum(lines) > 3 and max(runs) > 1  # (kept once a chunk's lines make 3 or more)
    assert all(r <= -(-n // 3) for r, n in zip(runs, lines, strict=True))


def test_rotated_files_in_parts_give_one_process_records(
    here: Callable[[bool], None], small_parts: None, tmp_path: Path
) -> None:
    """Every fixture log cut into several files, assembled in parts: by two processes, cut
    once across the files (``split.across``), by three, each large file in parts: the records,
    field for field, the accounting (every file's name among the sources), the run facts and
    the clock segments of one process."""
    here(False)
    logs = [p for p in sorted(FIXTURES.rglob("*.log")) if p.stat().st_size > 24 << 10]
    assert len(logs) > 10
    counts = {}
    for jobs in (2, 3):
        before = dict(split.outcomes)
        for log in logs:
            for fracs in ([0.5], [0.2, 0.45, 0.9], [0.03, 0.6]):
                out = tmp_path / f"{log.parent.name}-{log.stem}-{len(fracs)}-{jobs}"
                out.mkdir()
                names = _rotated(log, fracs, out)
                one = _files(names, 1)
                assert _files(names, jobs) == one, (log, fracs, jobs)
                assert one[1]["sources"] == names
        counts[jobs] = {k: v - before.get(k, 0) for k, v in split.outcomes.items()}
    # (a call open for two warm-ups of 2 KB in a file's first part: the rest of the file read
    # here; or a child's part read here, its start state not the state here; or taken)
    for jobs in (2, 3):
        assert counts[jobs].get("gave up", 0) > 20, counts
        assert counts[jobs].get("read on", 0) >= 5, counts


def test_rotated_files_with_children_in_every_file_and_a_small_one_between(
    here: Callable[[bool], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With three processes, each large file in parts: the children's parts taken in each
    large file, the state a file's last child handed over read on from in the next file, a
    small file between them read here. With two, one cut across the files: one child's part,
    from the third file to the end."""
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    here(False)
    log = _sim_log(tmp_path, 3.0, seed=6)
    names = _rotated(log, [0.48, 0.52], tmp_path)
    assert [Path(n).stat().st_size >= split.MIN_BYTES for n in names] == [True, False, True]
    one = _files(names, 1)
    before = dict(split.outcomes)
    assert _files(names, 3) == one
    assert split.outcomes["adopted"] - before.get("adopted", 0) >= 2  # (one in each large file)
    assert split.outcomes["resumed"] - before.get("resumed", 0) == 1  # (the first file's end)
    before = dict(split.outcomes)
    assert split.across(names, [Path(n).stat().st_size for n in names], 2, split.WARM_BYTES)[0] == 2
    assert _files(names, 2) == one
    assert split.outcomes["adopted"] - before.get("adopted", 0) == 1
    assert split.outcomes["resumed"] == before.get("resumed", 0)
    assert [r["source"] for r in (one[0][0], one[0][-1])] == [0, 2]
    # The records of the one log the files were cut from, but for their inputs and lines.
    whole = _one(str(log))[0]
    assert len(whole) == len(one[0])
    assert [r["gpu_total_ms"] for r in whole] == [r["gpu_total_ms"] for r in one[0]]


@pytest.mark.parametrize("fail", [False, True])
def test_rotated_files_cut_once_across_give_one_process_records(
    here: Callable[[bool], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: bool
) -> None:
    """Two processes on rotated files: one cut across them (``split.across``), in the first
    file, a middle one or the last; the child's part, from the cut to the end of the last file,
    taken, or (its child failing) read here, the rest of the cut file and then each later file,
    every byte shown once (``_files``)."""
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    here(fail)
    log = _sim_log(tmp_path, 3.0, seed=6)
    files = set()
    for fracs in ([0.8], [0.15, 0.3, 0.7], [0.3, 0.6, 0.9], [0.25]):
        out = tmp_path / f"{len(fracs)}-{fracs[0]}"
        out.mkdir()
        names = _rotated(log, fracs, out)
        plan = split.across(names, [Path(n).stat().st_size for n in names], 2, split.WARM_BYTES)
        assert plan is not None
        files.add("first" if plan[0] == 0 else "last" if plan[0] == len(names) - 1 else "middle")
        before = dict(split.outcomes)
        one = _files(names, 1)
        assert _files(names, 2) == one, fracs
        assert one[1]["sources"] == names
        way = "read on" if fail else "adopted"
        assert split.outcomes[way] == before.get(way, 0) + 1, fracs
    assert files == {"first", "middle", "last"}


def test_rotated_files_each_too_small_to_cut_are_cut_once_across(
    here: Callable[[bool], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rotated files each smaller than ``MIN_BYTES`` but more than it together (logs rotated
    by size): two processes cut them once across (they were parsed in a second process and
    assembled here); the records of one process."""
    _parts_of(monkeypatch, 2 << 20, 256 << 10, 64 << 10)
    here(False)
    names = _rotated(_sim_log(tmp_path, 3.0, seed=6), [0.25, 0.5, 0.75], tmp_path)
    assert max(Path(n).stat().st_size for n in names) < split.MIN_BYTES
    assert split.splittable_files(names, 2) == names
    before = dict(split.outcomes)
    assert _files(names, 2) == _files(names, 1)
    assert split.outcomes["adopted"] == before.get("adopted", 0) + 1


def test_where_rotated_files_are_cut_across() -> None:
    """``across``: this process's share three warm-ups longer than half the run, the child's
    warm-up inside the file of the cut; each file cut on its own for more than two processes or
    one file, none for a run shorter than ``MIN_BYTES``."""
    warm, mb = split.WARM_BYTES, 1 << 20
    log = str(FIXTURES / "sim" / "era-main.log")  # (line starts: any text file does)
    names = [log] * 4
    sizes = [64 * mb] * 4
    k, cut = split.across(names, sizes, 2, warm)  # type: ignore[misc]
    assert k == 2 and cut == split.line_start(log, 3 * warm)
    assert split.across(names, sizes, 3, warm) is None
    assert split.across(names[:1], sizes[:1], 2, warm) is None
    assert split.across(names, [mb] * 4, 2, warm) is None
    # A cut just past a file's start: two warm-ups into it, for the child's warm-up.
    k, cut = split.across(names[:2], [86 * mb, 64 * mb], 2, warm)  # type: ignore[misc]
    assert k == 1 and cut == split.line_start(log, 2 * warm)


def test_a_cut_in_a_file_too_short_for_a_warm_up_falls_at_its_end(
    here: Callable[[bool], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rotated files each shorter than two warm-ups: the cut falls at the end of a file, the
    child's part is the later files, its warm-up that file's last warm-up's worth (here the
    whole file, read from its start); taken when that came to the state there, as it does
    (calls last far less than a file), and the records of one process either way."""
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    here(False)
    names = _rotated(_sim_log(tmp_path, 3.0, seed=6), [i / 12 for i in range(1, 12)], tmp_path)
    sizes = [Path(n).stat().st_size for n in names]
    assert max(sizes) < 2 * split.WARM_BYTES
    k, cut = split.across(names, sizes, 2, split.WARM_BYTES)  # type: ignore[misc]
    assert cut == sizes[k] and 0 < k < len(names) - 1
    before = dict(split.outcomes)
    assert _files(names, 2) == _files(names, 1)
    assert split.outcomes["adopted"] == before.get("adopted", 0) + 1


def test_the_guard_fed_the_lines_it_reads_holds_what_every_line_gives() -> None:
    """``GuardLines`` of a stretch of an input (a child's part): fed those alone, the guard
    holds the facts every line of the stretch gives it, wherever the stretch begins."""
    from cuzk_diag.ingest.parse import parse_text
    from cuzk_diag.pipeline import GuardLines, RunGuard

    logs = sorted(FIXTURES.rglob("*.log"))
    seen = 0
    for log in logs:
        events, _ = parse_text(log.read_text(errors="replace"), full=False)
        for frac in (0.0, 0.3, 0.7):
            cut = int(len(events) * frac)
            guards = [RunGuard(["a", "b"], Accounting()) for _ in range(2)]
            for guard in guards:
                guard.feed([e for e in events[:cut]])
            guards[0].feed(events[cut:])
            lines = GuardLines()
            for i in range(cut, len(events), 97):  # (taken a chunk at a time)
                lines.take(events[i : i + 97])
            guards[1].feed(lines.lines())
            assert guards[0].inputs == guards[1].inputs, (log, frac)
            seen += guards[0].inputs[0].max_offset is not None
    assert seen > 50


def test_rotated_files_of_another_run_are_refused_as_in_one_process(
    here: Callable[[bool], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file in which the engine starts again inside a child's part (the guard reads the
    lines of the part it reads, ``GuardLines``), a file whose clock starts below the earlier
    ones', a file of another run: the refusal of one process, with its message."""
    from cuzk_diag.pipeline import DifferentRunsError

    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    here(False)
    lines = _sim_log(tmp_path, 3.0, seed=6).read_text().splitlines(True)
    half = len(lines) // 2
    first, rest = "".join(lines[:half]), lines[half:]
    start = next(line for line in lines if "starting cuzk engine" in line)
    restart = start.replace("2026-03-13T", "2026-03-14T")
    late = len(rest) * 97 // 100  # (in the child's part: the last few per cent of the file)
    cases = {
        "restart in a child's part": [first, "".join(rest[:late] + [restart] + rest[late:])],
        "clock back": ["".join(rest), first],
        "another run": [first, restart + first],
    }
    adopted = split.outcomes["adopted"]
    for what, texts in cases.items():
        names = []
        for i, text in enumerate(texts):
            path = tmp_path / f"{what}-{i}.log"
            path.write_text(text)
            names.append(str(path))
        errors = []
        for jobs in (1, 2):
            with pytest.raises(DifferentRunsError) as err:
                _files(names, jobs)
            errors.append(str(err.value))
        assert errors[0] == errors[1], what
        assert ("line" in errors[0]) and names[1] in errors[0], errors[0]
    # (the restart was in a part a child assembled, and taken: the guard read it there)
    assert split.outcomes["adopted"] > adopted


def test_rotated_files_through_the_cli_with_real_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``analyze a.log b.log``, as a user runs it on rotated files: the report of one process.
    With two processes, one child's part from the cut across the files to the end; with three,
    each file's later parts by children, the same children for both files (a child takes the
    second file's part once its first is taken)."""
    log = _sim_log(tmp_path, 3.0, seed=6)
    names = _rotated(log, [0.5], tmp_path)
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    need = [split.part_count(Path(n).stat().st_size, 3, split.WARM_BYTES) - 1 for n in names]
    assert min(need) >= 1
    reports, started, adopted = [], [], []
    for jobs in ("1", "2", "3"):
        before = parallel.ChildCall.started, split.outcomes["adopted"]
        out = tmp_path / f"r{jobs}.json"
        res = CliRunner().invoke(
            cli, ["analyze", *names, "--format", "json", "-o", str(out), "-q", "--jobs", jobs]
        )
        assert res.exit_code == 0, res.output
        reports.append(out.read_text())
        started.append(parallel.ChildCall.started - before[0])
        adopted.append(split.outcomes["adopted"] - before[1])
    assert started == [0, 1, max(need)] and adopted == [0, 1, sum(need)]
    assert reports[0] == reports[1] == reports[2]
    assert json.loads(reports[1])["accounting"]["sources"] == names


def test_what_is_split_of_several_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split, "MIN_BYTES", 1000)
    text = (FIXTURES / "sim" / "healthy-main.log").read_text()
    big, small = tmp_path / "big.log", tmp_path / "small.log"
    big.write_text(text)
    small.write_text(text[:500])
    packed = tmp_path / "a.log.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    assert split.splittable_files([str(big), str(small)]) == [str(big), str(small)]
    assert split.splittable_files([str(small), str(big)]) == [str(small), str(big)]
    for inputs in ([str(small), str(small)], [str(big), str(packed)], [str(big), "-"]):
        assert split.splittable_files(inputs) is None, inputs
    # Files each smaller than MIN_BYTES: cut once across them by two processes, when the cut
    # leaves the child's warm-up inside its file; not by three (each file would be read here).
    size = big.stat().st_size
    monkeypatch.setattr(split, "WARM_BYTES", 64)
    monkeypatch.setattr(split, "MIN_BYTES", size + 1)
    pair = [str(big), str(big)]
    assert split.across(pair, [size] * 2, 2, 64) is not None
    assert split.splittable_files(pair, 2) == pair
    assert split.splittable_files(pair, 3) is None


def test_a_childs_seed_holds_the_run_facts_the_assembly_reads_and_not_the_growing_tables(
    tmp_path: Path,
) -> None:
    from cuzk_diag.ingest.part import Seed

    log = _sim_log(tmp_path, 0.5, seed=7)
    ing = Ingest([str(log)], Accounting(), RunInfo())
    ing.begin(0)
    ing.feed(log.read_bytes())
    info = ing.asm.info
    assert info.jobs and info.gpus and info.worker_gpu
    seed = Seed.of(ing.asm)
    assert (seed.info.jobs, seed.info.bench, seed.info.failures) == ({}, {}, [])
    assert not seed.info.warnings and not seed.info.warning_lines
    assert (seed.info.gpus, seed.info.gw, seed.info.worker_gpu) == (
        info.gpus,
        info.gw,
        info.worker_gpu,
    )
    assert info.jobs  # (the assembler's own facts are left as they were)
    fresh = seed.assembler()
    assert fresh.info.gpus == info.gpus and fresh.info.gpus is not info.gpus


def test_a_later_files_children_start_with_the_file(
    here: Callable[[bool], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first file's children start once this process has read its first chunk (its run
    facts); a later file's, at once, from the run facts of the files before it."""
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    here(False)
    names = _rotated(_sim_log(tmp_path, 3.0, seed=6), [0.5], tmp_path)
    floors: list[tuple[str, int]] = []
    start = split._Split.start_children

    def spy(self: Any, floor: int) -> None:
        floors.append((Path(self.name).name, floor))
        start(self, floor)

    monkeypatch.setattr(split._Split, "start_children", spy)
    one = _files(names, 1)
    assert _files(names, 3) == one
    (first, floor), later = floors
    assert first == Path(names[0]).name and 0 < floor <= 64 << 10  # (its first chunk's lines)
    assert later == (Path(names[1]).name, 0)
    # Cut once across the files (two processes), the child's part in the second file starts
    # once the first file's first chunk is read: started from floor 0 of the second file.
    floors.clear()
    assert _files(names, 2) == one
    assert floors == [(Path(names[1]).name, 0)]


def test_a_timeline_line_torn_at_a_files_end_is_counted_as_in_one_process(
    here: Callable[[bool], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that ends in the head of a torn TIMELINE line, its last part a child's: the head
    travels in the state the child hands over, and the input's end counts it, unrepaired, as
    one process does."""
    _parts_of(monkeypatch, 1 << 20, 256 << 10, 64 << 10)
    here(False)
    names = _rotated(_sim_log(tmp_path, 3.0, seed=6), [0.5], tmp_path)
    first = Path(names[0])
    head = next(ln for ln in reversed(first.read_text().splitlines()) if ln.startswith("TIMELINE,"))
    first.write_text(first.read_text() + head[: len(head) // 2] + "\n")
    adopted = split.outcomes["adopted"]
    one = _files(names, 1)
    assert _files(names, 3) == one  # (each file in parts: the first's end handed over)
    assert split.outcomes["adopted"] >= adopted + 2
    assert _files(names, 2) == one  # (cut across the files)
    assert one[1]["torn_unrepaired"] == 1


def test_a_log_with_failed_calls_keeps_its_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call that fails inside its GPU region leaves its block without the lines that close
    it, and the partitions of its job picked up after it are skipped: neither stays open to
    the end of the log (the block once the clock is past it, ``gpu.STALE_MS``; the pickups at
    their skip line), so a child's warm-up finds the state at its start and its part is
    taken, with one process's records."""
    log = tmp_path / "failed.log"
    cfg = SimConfig(
        era="main", n_gpus=2, gw=2, proofs=20, concurrency=4, seed=1,
        target_bytes=3_000_000, failures=3,
    )  # fmt: skip
    log.write_bytes(simulate(cfg).data)
    assert b"skipping GPU prove for failed partitioned job" in log.read_bytes()
    _assert_its_part_is_taken(log, tmp_path, monkeypatch)
