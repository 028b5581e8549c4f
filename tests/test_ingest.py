"""The ingest loop: the parse in a second process (``--jobs``) gives what one process gives,
and every reading command shows its progress on a terminal and nothing on a pipe."""

from __future__ import annotations

import gzip
import io
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from cuzk_diag.cli import cli, options
from cuzk_diag.frame import table_to_frame
from cuzk_diag.ingest import parallel
from cuzk_diag.pipeline import DifferentRunsError, load_run
from cuzk_diag.records import PARTITION_SCHEMA

ROOT = Path(__file__).resolve().parent.parent
SIM = ROOT / "fixtures" / "sim"
# Two GPUs with the beam at work, damaged and torn lines, an engine restart, bench output.
LOGS = ["era-main.log", "damaged.log", "messy.log", "phase12-2gpu-gw2.log", "concurrent-curio.log"]


def _same_run(a: object, b: object) -> None:
    assert a.table.equals(b.table)  # type: ignore[attr-defined]
    assert a.accounting.to_dict() == b.accounting.to_dict()  # type: ignore[attr-defined]
    assert a.info.to_dict() == b.info.to_dict()  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", LOGS)
def test_parse_in_a_second_process_gives_the_same_run(name: str) -> None:
    path = str(SIM / name)
    one, two = load_run([path], jobs=1), load_run([path], jobs=2)
    assert len(one.partitions) > 0
    _same_run(one, two)


def test_several_inputs_and_compressed_input_in_a_second_process(tmp_path: Path) -> None:
    # A log cut in two rotated files, the second gzip-compressed: one run, read by the child.
    text = (SIM / "era-main.log").read_bytes()
    cut = text.index(b"\n", len(text) // 2) + 1
    first, second = tmp_path / "daemon.log.1", tmp_path / "daemon.log.gz"
    first.write_bytes(text[:cut])
    second.write_bytes(gzip.compress(text[cut:]))
    names = [str(first), str(second)]
    one, two = load_run(names, jobs=1), load_run(names, jobs=2)
    _same_run(one, two)
    assert two.accounting.sources == names
    assert two.accounting.lines_total == text.count(b"\n")


def test_different_runs_are_refused_with_the_parse_in_a_second_process(tmp_path: Path) -> None:
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    shutil.copy(SIM / "era-main.log", a)
    shutil.copy(SIM / "era-main.log", b)  # its own engine start: another run
    with pytest.raises(DifferentRunsError):
        load_run([str(a), str(b)], jobs=2)


def test_a_damaged_compressed_input_is_counted_the_same_way_by_the_child(tmp_path: Path) -> None:
    # Whole lines, then a gzip stream whose data is damaged (not merely cut short).
    good = gzip.compress((SIM / "era-main.log").read_bytes())
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(good[: len(good) // 2] + bytes(b ^ 0x5A for b in good[len(good) // 2 :]))
    one, two = load_run([str(bad)], jobs=1), load_run([str(bad)], jobs=2)
    _same_run(one, two)
    (why,) = two.accounting.truncated_inputs.values()
    assert "compressed data is damaged" in why


def test_stdin_and_pipes_stay_in_one_process() -> None:
    assert parallel.can_parallel([str(SIM / "era-main.log")])
    assert not parallel.can_parallel(["-"])
    assert not parallel.can_parallel([str(SIM / "era-main.log"), "-"])


def test_export_with_jobs_writes_the_same_file(tmp_path: Path) -> None:
    log = str(SIM / "phase12-2gpu-gw2.log")
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"p{jobs}.parquet"
        r = CliRunner().invoke(cli, ["export", log, "-o", str(out), "-q", "--jobs", jobs])
        assert r.exit_code == 0, r.output
        outs.append(pq.read_table(out))
    assert outs[0].equals(outs[1])
    assert outs[0].schema.metadata == outs[1].schema.metadata


# -- progress -----------------------------------------------------------------------------------


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def tty_stderr(monkeypatch: pytest.MonkeyPatch) -> _Tty:
    err = _Tty()
    monkeypatch.setattr(options, "progress_stream", lambda: err)
    monkeypatch.setattr(options, "PROGRESS_MIN_BYTES", 0)
    return err


@pytest.mark.parametrize(
    "argv",
    [
        ["analyze", "{log}", "--format", "json"],
        ["export", "{log}", "-o", "{out}"],
        ["export", "--lines", "{log}", "-o", "{out}"],
        ["check", "{log}"],
        ["compare", "{log}", "{log}"],
        ["trace", "{log}", "-o", "{out}"],
        ["trace", "{log}", "--no-findings", "-o", "{out}"],
    ],
    ids=["analyze", "export", "export-lines", "check", "compare", "trace", "trace-no-findings"],
)
def test_every_reading_command_shows_progress_on_a_terminal(
    argv: list[str], tty_stderr: _Tty, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int | None, int]] = []

    from contextlib import contextmanager

    from cuzk_diag.report import console

    @contextmanager
    def bar(stream, total, description="reading"):  # type: ignore[no-untyped-def]
        assert stream is tty_stderr
        done = [0]

        def advance(n: int) -> None:
            done[0] += n

        yield advance
        seen.append((total, done[0]))

    monkeypatch.setattr(console, "progress_bar", bar)
    log = SIM / "era-main.log"
    args = [a.format(log=log, out=tmp_path / "out.parquet") for a in argv]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code in (0, 1), r.output
    size = log.stat().st_size
    assert seen and all(total == size for total, _ in seen)
    # Every byte of the log was reported.
    assert all(done == size for _, done in seen)
    before = len(seen)
    r = CliRunner().invoke(cli, [*args, "--quiet"])
    assert r.exit_code in (0, 1), r.output
    assert len(seen) == before


def test_no_progress_on_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(options.sys, "stderr", io.StringIO())
    monkeypatch.setattr(options, "PROGRESS_MIN_BYTES", 0)
    assert options.progress_stream() is None
    with options.input_progress([str(SIM / "era-main.log")]) as progress:
        assert progress is None


def test_progress_of_input_of_unknown_size_counts_bytes_so_far(
    tty_stderr: _Tty, tmp_path: Path
) -> None:
    gz = tmp_path / "d.log.gz"
    gz.write_bytes(gzip.compress((SIM / "era-main.log").read_bytes()))
    with options.input_progress([str(gz)]) as progress:
        assert progress is not None  # a bar without a total: bytes read so far
        progress(10)
    with options.input_progress(["-"]) as progress:
        assert progress is not None
    with options.input_progress([str(gz)], quiet=True) as progress:
        assert progress is None


def test_the_final_table_is_sorted_by_record_one_column_at_a_time() -> None:
    """``finish_table`` sorts as ``Table.sort_by`` would (stable for equal numbers), takes its
    input list, and leaves a table already in lock order as it is."""
    import pyarrow as pa

    from cuzk_diag.frame import records_to_table
    from cuzk_diag.pipeline import finish_table

    recs = [{"record": r, "worker": w} for r, w in [(3, 0), (1, 1), (2, 2), (1, 3), (0, 4)]]
    batches = [records_to_table(recs[:2]), records_to_table(recs[2:])]
    expected = pa.concat_tables(batches).sort_by([("record", "ascending")])
    got = finish_table(batches, None)
    assert batches == []
    assert got.equals(expected)
    assert got.column("worker").to_pylist() == [4, 1, 3, 2, 0]
    assert finish_table([got], None).equals(got)
    assert finish_table([], None).num_rows == 0


def test_a_run_without_its_table_has_the_same_frame() -> None:
    """``keep_table=False`` builds the frame while freeing the table; the frame is the same."""
    kept = load_run([str(SIM / "phase12-2gpu-gw2.log")])
    dropped = load_run([str(SIM / "phase12-2gpu-gw2.log")], keep_table=False)
    assert kept.table is not None and dropped.table is None
    assert len(kept.partitions) > 10
    pd.testing.assert_frame_equal(kept.partitions, dropped.partitions)
    assert list(kept.partitions.dtypes) == list(dropped.partitions.dtypes)


def test_the_frame_taken_column_by_column_is_the_frame_of_the_table() -> None:
    """``take_frame`` takes its list's table and gives ``table_to_frame``'s frame: every
    column, dtype (Int64, Float64, string, UTC timestamps), null and the row index."""
    from cuzk_diag.frame import take_frame

    table = load_run([str(SIM / "phase12-2gpu-gw2.log")]).table
    assert table is not None and table.num_rows > 10
    assert table.column("start_ts").null_count < table.num_rows
    expected = table_to_frame(table)
    tables = [table]
    got = take_frame(tables)
    assert tables == []
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert list(got.dtypes) == list(expected.dtypes)
    assert list(got.columns) == PARTITION_SCHEMA.names


def test_auto_jobs_uses_a_second_process_only_where_it_pays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = tmp_path / "small.log"
    shutil.copy(SIM / "era-main.log", small)
    big = tmp_path / "big.log"
    with open(big, "wb") as fh:
        fh.truncate(parallel.AUTO_MIN_BYTES)  # sparse: only its size is read
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)
    assert parallel.auto_jobs([str(big)]) == 2
    assert parallel.auto_jobs([str(small)]) == 1
    assert parallel.auto_jobs([str(small), str(big)]) == 2  # the inputs' sizes add up
    assert parallel.auto_jobs(["-"]) == 1  # stdin is read by this process
    assert parallel.auto_jobs([str(tmp_path / "gone.log")]) == 1
    huge = tmp_path / "huge.log"
    with open(huge, "wb") as fh:
        fh.truncate(5 * parallel.AUTO_MIN_BYTES + 1)
    assert parallel.auto_jobs([str(huge)]) == 2  # one process per usable CPU at most
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 8)
    assert parallel.auto_jobs([str(huge)]) == 5  # one per AUTO_MIN_BYTES
    assert parallel.auto_jobs([str(big)]) == 2
    assert parallel.auto_jobs([str(huge)], spare=1) == 5  # seven CPUs left: still five
    assert parallel.auto_jobs([str(huge)], spare=4) == 4
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 3)
    assert parallel.auto_jobs([str(big)], spare=1) == 2
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)
    assert parallel.auto_jobs([str(big)], spare=1) == 1  # the other CPU is the spare one's
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 1)
    assert parallel.auto_jobs([str(big)]) == 1


def test_the_jobs_option_takes_a_count_or_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []
    real = parallel.auto_jobs

    def spy(inputs: list[object]) -> int:
        seen.append("auto")
        return real(inputs)

    monkeypatch.setattr(parallel, "auto_jobs", spy)
    log = str(SIM / "era-main.log")
    for value in ("auto", "AUTO", "1", "2"):
        r = CliRunner().invoke(cli, ["analyze", log, "--format", "json", "-q", "-j", value])
        assert r.exit_code == 0, r.output
    assert seen == ["auto", "auto"]  # the default (no --jobs) is auto too:
    r = CliRunner().invoke(cli, ["analyze", log, "--format", "json", "-q"])
    assert r.exit_code == 0 and seen == ["auto"] * 3
    for bad in ("0", "x", "-1", "²"):
        r = CliRunner().invoke(cli, ["analyze", log, "-j", bad])
        assert r.exit_code == 2
        assert "neither a number of processes" in r.output


def test_the_collector_runs_per_chunk_and_is_restored_after() -> None:
    import gc

    from cuzk_diag.ingest.stream import PacedCollector

    generations: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            generations.append(info["generation"])

    assert gc.isenabled()
    gc.callbacks.append(seen)
    try:
        with PacedCollector() as collector:
            assert not gc.isenabled()
            junk = [[] for _ in range(5000)]  # (enough to set the automatic collector off)
            assert generations == []
            for _ in range(4):
                collector.chunk(PacedCollector.FULL_BYTES // 4)
            collector.chunk(100)  # a small chunk (live mode) costs a young collection only
    finally:
        gc.callbacks.remove(seen)
    assert generations == [1, 1, 1, 2, 1] and junk
    assert gc.isenabled()
    gc.disable()
    try:
        with PacedCollector():
            pass
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


def test_a_parsed_chunk_gives_its_events_up_once() -> None:
    """``ParsedChunk.events`` empties the chunk, so the events live only as long as the list
    the ingest assembles (then the per-chunk collection finds nothing of them)."""
    from cuzk_diag.ingest.parse import LineParser

    text = (SIM / "era-main.log").read_text()
    part = LineParser(full=False).feed_parts(text)
    events = part.events()
    assert len(events) > 100
    assert part.events() == [] and not part.groups and not part.rest


def test_a_suspended_record_stream_leaves_the_collector_on() -> None:
    """The ingest paces the collector only while it works on a chunk: a caller holding the
    iterator between records (a notebook) has its collector as it was."""
    import gc

    from cuzk_diag.pipeline import iter_records
    from cuzk_diag.records import Accounting, RunInfo

    records = iter_records([str(SIM / "era-main.log")], Accounting(), RunInfo())
    first = next(records)
    assert first["job_id"] and gc.isenabled()
    rest = list(records)
    assert rest and gc.isenabled()


def test_columns_without_a_value_share_one_array_and_one_series() -> None:
    """A column with no value in the whole table (the fields of other code versions) costs
    one shared array per type and length, in the Arrow table and in the frame; the frame is
    the plain conversion's, value for value and dtype for dtype, and a write to one such column
    of the frame does not show in the others (copy-on-write)."""
    import numpy as np

    from cuzk_diag.frame import _types_mapper, records_to_table, take_frame
    from cuzk_diag.pipeline import finish_table

    table = load_run([str(SIM / "phase12-2gpu-gw2.log")]).table
    assert table is not None
    n = table.num_rows
    empty = [f.name for f in table.schema if table.column(f.name).null_count == n]
    ints = [c for c in empty if table.schema.field(c).type == pa.int64()]
    assert len(ints) >= 2, empty

    def addresses(name: str, t: pa.Table = table) -> list[int]:
        return [b.address for ch in t.column(name).chunks for b in ch.buffers() if b]

    assert all(addresses(c) == addresses(ints[0]) for c in ints)
    plain = table.to_pandas(types_mapper=_types_mapper)
    for frame in (table_to_frame(table), take_frame([table])):
        pd.testing.assert_frame_equal(frame, plain, check_exact=True)
        assert list(frame.dtypes) == list(plain.dtypes)
        a, b = frame[ints[0]].array, frame[ints[1]].array
        assert np.shares_memory(a._data, b._data)
        frame.loc[frame.index[0], ints[0]] = 7
        assert frame[ints[0]].iloc[0] == 7
        assert frame[ints[1]].isna().all() and plain[ints[1]].isna().all()

    # Batches of records: one array per type and length for all of them, and after the sort.
    recs = [{"record": r, "worker": w} for r, w in [(3, 0), (1, 1), (2, 2), (0, 3)]]
    one, two = records_to_table(recs[:2]), records_to_table(recs[2:])
    assert addresses("gpu", one) == addresses("gpu", two) == addresses("partition", one)
    done = finish_table([one, two], None)
    assert done.column("record").to_pylist() == [0, 1, 2, 3]
    assert addresses("gpu", done) == addresses("partition", done)
    assert done.column("gpu").null_count == 4


def test_a_table_sent_to_another_process_leaves_its_empty_columns_behind() -> None:
    """A child's records travel as ``PackedTable``s: without the columns that hold no value,
    which unpack as shared null arrays; the table comes back equal, schema and all."""
    import pickle

    from cuzk_diag.frame import PackedTable, share_nulls
    from cuzk_diag.ingest.part import _pickled, unpickled

    table = load_run([str(SIM / "phase12-2gpu-gw2.log")]).table
    assert table is not None
    n = table.num_rows
    empty = [f.name for f in table.schema if table.column(f.name).null_count == n]
    assert len(empty) >= 5
    packed = PackedTable.of(table)
    assert packed.table.num_columns == table.num_columns - len(empty)
    back = pickle.loads(pickle.dumps(packed)).unpack()
    assert back.equals(table) and back.schema == table.schema
    assert len(pickle.dumps(packed)) < len(pickle.dumps(share_nulls(table))) - 8 * n

    from cuzk_diag.ingest.assemble import SegmentEnd

    recs = table.to_pylist()
    items = unpickled(_pickled([*recs[:5], SegmentEnd(1), *recs[5:]], tables=True))
    assert [type(it) for it in items] == [pa.Table, SegmentEnd, pa.Table]
    assert pa.concat_tables([items[0], items[2]]).equals(table)


@pytest.mark.parametrize("era", ["main", "phase4-8", "phase12"])
def test_the_ingest_leaves_no_growing_cyclic_garbage(era: str, tmp_path: Path) -> None:
    """Emitted calls and their blocks (which refer to each other) are unlinked as they leave
    the assembly (``GpuRegion._release``), so the paced collector's rare full collections
    find next to nothing: a 5 MB log read without any leaves, as cyclic garbage, only the
    calls of the blocks the assembly holds to its end (``recent_blocks``), not a number that
    grows with the log (without the unlinking, 129-131 calls on these logs)."""
    import gc
    import importlib
    from collections import Counter

    from cuzk_diag.ingest.assemble import Assembler
    from cuzk_diag.model.daemon import SimConfig, write_log
    from cuzk_diag.records import Accounting, RunInfo

    stream_mod = importlib.import_module("cuzk_diag.ingest.stream")
    log = tmp_path / f"{era}.log"
    write_log(SimConfig(era=era, n_gpus=2, gw=2, target_bytes=5_000_000), str(log), truth=False)
    full = stream_mod.PacedCollector.FULL_BYTES
    stream_mod.PacedCollector.FULL_BYTES = 1 << 60  # (no full collection while reading)
    gc.collect()
    try:
        records = sum(1 for _ in stream_mod.stream([str(log)], Accounting(), RunInfo()))
    finally:
        stream_mod.PacedCollector.FULL_BYTES = full
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        kinds = Counter(type(o).__name__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    held = Assembler().recent_blocks.maxlen
    assert records > 1500
    assert kinds["Call"] <= held and kinds["Block"] <= held, kinds


def _lean_table(n: int) -> pa.Table:
    """A table of every kind of column ``frame._lean`` tells apart, ``n`` rows."""
    rng = np.random.default_rng(n)
    ints = rng.integers(-(2**40), 2**40, n)
    return pa.table(
        {
            "ints": pa.array(ints, pa.int64()),
            "small_ints": pa.array(ints % 100, pa.int32()),
            "ints_with_nulls": pa.array([None if v % 7 == 0 else int(v) for v in ints]),
            "floats": pa.array(rng.random(n) * 1e6),
            "floats_with_nan": pa.array(np.where(ints % 5 == 0, np.nan, 1.5)),
            "one_text": pa.array(["main"] * n),
            "one_large_text": pa.array(["ok"] * n, pa.large_string()),
            "one_text_and_nulls": pa.array([None if i % 3 == 0 else "ok" for i in range(n)]),
            "texts": pa.array([f"job-{v % 11}" for v in ints]),
            "one_empty_text": pa.array([""] * n),
        }
    )


@pytest.mark.parametrize("n", [1, 4095, 4096, 4097, 10_000])
def test_the_frames_lean_columns_are_the_columns_pandas_makes(n: int) -> None:
    """``frame_of_columns`` gives the frame ``to_pandas`` makes of the same table: the same
    values, missing values and dtypes, where a number column without a missing value has a
    mask of untouched pages and a text column of one value is one piece repeated (a NaN is a
    missing value, as pandas reads it)."""
    from cuzk_diag.frame import _PIECE_ROWS, _types_mapper, frame_of_columns

    table = _lean_table(n)
    expected = table.to_pandas(types_mapper=_types_mapper)
    got = frame_of_columns(table.schema, n, lambda i: table.column(i))
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert list(got.dtypes) == list(expected.dtypes)
    assert got["floats_with_nan"].isna().sum() == np.isnan(table["floats_with_nan"]).sum()
    for name in ("ints", "small_ints", "floats"):
        mask = got[name].array._mask
        while isinstance(mask.base, np.ndarray):
            mask = mask.base
        assert isinstance(mask.base, memoryview), name  # (the mapping of ``heap.zeroed``)
    for name in ("one_text", "one_large_text", "one_empty_text"):
        chunks = got[name].array._pa_array.chunks
        assert len(chunks) == -(-n // _PIECE_ROWS)
        assert len({ch.buffers()[2].address for ch in chunks}) == 1
    assert got["texts"].array._pa_array.num_chunks == 1


@pytest.mark.parametrize("shuffle", ["none", "neighbours", "all"])
def test_the_frame_in_an_order_is_the_frame_of_the_table_taken_in_it(shuffle: str) -> None:
    """``frame_of_columns`` with an order gives the frame of Arrow's ``take`` of the table in
    it, whichever rows move (a number column without a missing value is put in order by
    numpy, the others by Arrow), on a table of several chunks as an ingest's is."""
    from cuzk_diag.frame import _types_mapper, frame_of_columns

    n = 10_000
    one = _lean_table(n)
    table = pa.concat_tables([one.slice(0, 3000), one.slice(3000, 1), one.slice(3001)])
    order = np.arange(n)
    if shuffle == "neighbours":  # (rows a few places out, as the parts of an ingest leave them)
        order[1::7], order[2::7] = order[2::7], order[1::7].copy()
    elif shuffle == "all":
        order = np.random.default_rng(1).permutation(n)
    expected = table.take(pa.array(order)).to_pandas(types_mapper=_types_mapper)
    got = frame_of_columns(table.schema, n, lambda i: table.column(i), pa.array(order))
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert list(got.dtypes) == list(expected.dtypes)
    assert table.column("ints").num_chunks == 3


def test_a_write_to_a_lean_column_changes_that_column_alone() -> None:
    """The lean columns are writable like any other, each on its own (copy-on-write)."""
    from cuzk_diag.frame import frame_of_columns

    table = _lean_table(5000)
    got = frame_of_columns(table.schema, 5000, lambda i: table.column(i))
    got.loc[3, "ints"] = pd.NA
    got.loc[4, "one_text"] = "phase12"
    assert got["ints"].isna().sum() == 1 and got["small_ints"].isna().sum() == 0
    assert got["one_text"].value_counts().to_dict() == {"main": 4999, "phase12": 1}
    assert (got["one_large_text"] == "ok").all()


@pytest.mark.parametrize("name", LOGS)
@pytest.mark.parametrize("lines_a_chunk", [1, 2, 3, 7])
def test_a_logs_events_do_not_depend_on_where_its_chunks_end(name: str, lines_a_chunk: int) -> None:
    """A tracing line beside a C++ line is read for its timestamp (a clock line), also when the
    two are in different chunks: the events of a log cut into chunks of a few lines are those
    of the log in one chunk (where chunks end differs between one process and a part read by
    a child, and in live mode with every read)."""
    from cuzk_diag.ingest.parse import LineParser
    from cuzk_diag.records import Accounting

    def events(chunks: list[bytes]) -> tuple[list[tuple[object, ...]], dict[str, object]]:
        acc = Accounting()
        parser = LineParser(0, acc, full=False)
        out = [ev for chunk in chunks for ev in parser.feed_parts(chunk).events()]
        out += parser.close()
        return [(e.line, e.family, e.kind, e.field_dict()) for e in out], acc.to_dict()

    lines = (SIM / name).read_bytes().splitlines(keepends=True)
    whole = events([b"".join(lines)])
    # (No tracing line is beside a C++ line in the damaged and the messy log: their torn and
    # damaged lines are the test there.)
    assert any(kind == "clock" for _, _, kind, _ in whole[0]) or name in {
        "damaged.log",
        "messy.log",
    }
    step = lines_a_chunk
    cut = events([b"".join(lines[i : i + step]) for i in range(0, len(lines), step)])
    assert cut == whole
