"""Parse + assemble: inputs -> ``Run`` (partition frame, run info, accounting)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cuzk_diag.errors import InputError
from cuzk_diag.frame import (
    RecordBatches,
    empty_columns,
    frame_of_columns,
    null_array,
    releasing,
    table_to_frame,
    take_frame,
)
from cuzk_diag.heap import after_ingest, hand_back
from cuzk_diag.ingest.assemble.calls import _ts_ms
from cuzk_diag.ingest.stream import stream
from cuzk_diag.records import (
    PARTITION_SCHEMA,
    WALL_CLOCK,
    WALL_CLOCK_MAX_MS,
    WALL_CLOCK_MIN_MS,
    Accounting,
    Event,
    Family,
    RunInfo,
)
from cuzk_diag.sinks import Sink, StreamEnd
from cuzk_diag.sources import PARQUET, Source, open_source

if TYPE_CHECKING:
    import pandas as pd

META_INFO = b"cuzk_diag.info"
META_ACCOUNTING = b"cuzk_diag.accounting"


@dataclass
class Run:
    """One analysed run: a row per GPU call plus what the log says about the run."""

    partitions: pd.DataFrame
    info: RunInfo
    accounting: Accounting
    inputs: list[str] = field(default_factory=list)
    table: pa.Table | None = None  # the same rows as Arrow (for export)


BATCH = 4096

#: Startup settings that differ between runs: (tracing kind, field) -> name in the message.
_SETTINGS = {
    ("gpu_workers_init", "num_gpus"): "GPUs",
    ("gpu_workers_init", "gpus"): "GPU ordinals",
    ("gpu_workers_init", "gpu_workers_per_device"): "workers per GPU",
    ("interlock", "gpu_workers_per_device"): "workers per GPU",
    ("gpu_threads", "gpu_threads"): "gpu_threads",
}
#: Tracing lines the guard reads.
_GUARD_KINDS = frozenset({"engine_start", *(kind for kind, _ in _SETTINGS)})
#: A TIMELINE offset this far (ms) below the previous inputs' latest is a clock that restarted.
CLOCK_BACK_TOLERANCE_MS = 1000


class DifferentRunsError(InputError):
    """The inputs are captures of different daemon runs, which one analysis must not mix."""


@dataclass
class _InputFacts:
    """What one input says about the run it belongs to."""

    name: str
    engine_start: str | None = None  # timestamp of its first engine-start line
    engine_line: int | None = None
    settings: dict[str, tuple[Any, int]] = field(default_factory=dict)  # name -> (value, line)
    daemons: dict[str, set[str]] = field(default_factory=dict)  # journald ident -> {host[pid]}
    first_offset: int | None = None  # first TIMELINE offset
    max_offset: int | None = None


class RunGuard:
    """Refuses inputs that belong to different runs (``DifferentRunsError``, exit 2).

    Several inputs are one run when each later input continues the earlier ones: rotated files
    of one daemon (no engine start of their own, the TIMELINE clock going on) and a cuzk-bench
    output. An input is another run when it has its own engine-start line after an input that
    already had one or had TIMELINE lines, when its startup settings (GPUs, workers per GPU,
    gpu_threads) differ, when journald shows another host or process of the same program, or
    when its TIMELINE clock starts again below the earlier inputs' (a restart, or rotated files
    given out of order). One input in which the engine restarts is read as one log.
    """

    def __init__(self, names: Sequence[str | Source], acc: Accounting) -> None:
        shown = [n if isinstance(n, str) else n.display for n in names]
        self.names = ["<stdin>" if n == "-" else n for n in shown]
        self.acc = acc
        self.inputs: list[_InputFacts] = []
        self._hosts_before: dict[str, int] = {}

    def feed(self, events: Sequence[Event]) -> None:
        """The events of one chunk of one input (the guard reads TIMELINE offsets, the engine
        start and the startup settings)."""
        if not events:
            return
        while events[0].source >= len(self.inputs):
            self._next_input()
        cur = self.inputs[events[0].source]
        for ev, off in _guard_lines(events):
            if off is None:
                self._tracing(cur, ev)
                continue
            if cur.first_offset is None:
                cur.first_offset = off
                self._check_clock(cur, off)
            if cur.max_offset is None or off > cur.max_offset:
                cur.max_offset = off

    def _tracing(self, cur: _InputFacts, ev: Event) -> None:
        if ev.kind == "engine_start" and cur.engine_line is None:
            ts = ev.fields.get("ts")
            cur.engine_start, cur.engine_line = (ts if isinstance(ts, str) else None), ev.line
            self._check_engine_start(cur)
        for (kind, key), label in _SETTINGS.items():
            if ev.kind == kind and ev.fields.get(key) is not None:
                cur.settings.setdefault(label, (ev.fields[key], ev.line))
                self._check_setting(cur, label)

    def finish(self) -> None:
        """Check the journald processes of the last input (known once it is read)."""
        self._next_input()

    def _next_input(self) -> None:
        # Accounting takes an input's journald prefixes once the input is read: the
        # difference since the previous input is that input's hosts and processes.
        if self.inputs:
            now = dict(self.acc.journald_sources)
            cur = self.inputs[-1]
            for key, n in now.items():
                if n > self._hosts_before.get(key, 0):
                    host, _, proc = key.partition(" ")
                    cur.daemons.setdefault(proc.split("[")[0], set()).add(key)
            self._hosts_before = now
            self._check_daemons(cur)
        if len(self.inputs) < len(self.names):
            self.inputs.append(_InputFacts(self.names[len(self.inputs)]))

    def _refuse(self, a: _InputFacts, b: _InputFacts, why: str) -> None:
        raise DifferentRunsError(
            f"{a.name} and {b.name} are different runs ({why}); analyse each on its own "
            f"(one report per run), or compare them: cuzk-diag compare {a.name} {b.name}"
        )

    def _check_engine_start(self, cur: _InputFacts) -> None:
        for prev in self.inputs[:-1]:
            if prev.engine_line is not None and prev.engine_start == cur.engine_start:
                raise DifferentRunsError(
                    f"{prev.name} and {cur.name} hold the same engine start "
                    f"({cur.engine_start}, line {cur.engine_line}): the same log given twice?"
                )
            if prev.engine_line is not None:
                self._refuse(
                    prev,
                    cur,
                    f"each has its own engine start: {prev.engine_start} (line "
                    f"{prev.engine_line}) and {cur.engine_start} (line {cur.engine_line})",
                )
            if prev.max_offset is not None:
                self._refuse(
                    prev,
                    cur,
                    f"the engine starts again at line {cur.engine_line} of {cur.name} after "
                    f"{prev.name} ran to TIMELINE offset {prev.max_offset} ms",
                )

    def _check_setting(self, cur: _InputFacts, label: str) -> None:
        value, line = cur.settings[label]
        for prev in self.inputs[:-1]:
            if label in prev.settings and prev.settings[label][0] != value:
                self._refuse(
                    prev,
                    cur,
                    f"{label} {prev.settings[label][0]} (line {prev.settings[label][1]}) "
                    f"against {value} (line {line})",
                )

    def _check_daemons(self, cur: _InputFacts) -> None:
        for prev in self.inputs[:-1]:
            for ident, procs in cur.daemons.items():
                seen = prev.daemons.get(ident)
                if seen and not (seen & procs):
                    self._refuse(
                        prev,
                        cur,
                        f"journald shows {', '.join(sorted(seen))} against "
                        f"{', '.join(sorted(procs))}",
                    )

    def _check_clock(self, cur: _InputFacts, first: int) -> None:
        latest = max(
            (p.max_offset for p in self.inputs[:-1] if p.max_offset is not None), default=None
        )
        if cur.engine_line is None and latest is not None:
            if first < latest - CLOCK_BACK_TOLERANCE_MS:
                prev = next(p for p in self.inputs[:-1] if p.max_offset == latest)
                self._refuse(
                    prev,
                    cur,
                    f"the TIMELINE clock starts again: {cur.name} begins at offset {first} ms, "
                    f"{prev.name} reached {latest} ms; rotated files of one run must be given "
                    "in the order they were written",
                )


def _guard_lines(events: Sequence[Event]) -> Iterator[tuple[Event, int | None]]:
    """The lines ``RunGuard`` acts on, in order, each with its TIMELINE offset: the TIMELINE
    lines with one (a torn line's is not read), and the startup lines it checks (offset
    None)."""
    timeline, tracing = Family.TIMELINE, Family.TRACING
    for ev in events:
        fam = ev.family
        if fam is timeline:
            off = ev.get("offset_ms")
            if isinstance(off, int) and ev.kind != "torn":
                yield ev, off
        elif fam is tracing and ev.kind in _GUARD_KINDS:
            yield ev, None


class GuardLines:
    """The lines of a stretch of one input that ``RunGuard.feed`` acts on, kept while the
    stretch is assembled elsewhere (a child's part of a log, ``ingest.split``), for the guard to
    be fed these alone: the stretch's first line (with which the guard notes an input it has
    not seen yet), the first TIMELINE line with an offset and the startup lines the guard
    reads, in their order, then the TIMELINE line with the largest offset. Fed them, the guard
    holds what it would hold fed every line of the stretch, and refuses what it would refuse,
    with the same message."""

    def __init__(self) -> None:
        self.opener: Event | None = None
        self.kept: list[Event] = []
        self.first: int | None = None  # the first offset
        self.top: Event | None = None  # the line of the largest offset after it
        self.top_offset = 0  # the largest offset so far

    def take(self, events: Sequence[Event]) -> None:
        if self.opener is None and events:
            self.opener = events[0]
        for ev, off in _guard_lines(events):
            if off is None:
                self.kept.append(ev)
            elif self.first is None:
                self.first = self.top_offset = off
                self.kept.append(ev)
            elif off > self.top_offset:
                self.top, self.top_offset = ev, off

    def lines(self) -> list[Event]:
        out = list(self.kept)
        if self.opener is not None and not (out and out[0] is self.opener):
            out.insert(0, self.opener)
        if self.top is not None:
            out.append(self.top)
        return out


def iter_records(
    inputs: Sequence[str | Source],
    acc: Accounting,
    info: RunInfo,
    progress: Callable[[int], None] | None = None,
    on_segment: Callable[[int], None] | None = None,
    *,
    jobs: int | None = 1,
) -> Iterator[dict[str, Any]]:
    """Partition records (dicts of ``PARTITION_SCHEMA`` columns) one by one, as they complete
    (``ingest.stream``). Inputs of different runs are refused (``RunGuard``). ``on_segment(n)``
    is called once the records of a clock segment are out and TIMELINE offsets restart (the
    engine restarted). ``jobs`` > 1 parses regular files in a second process (the same
    records)."""
    return stream(inputs, acc, info, progress=progress, on_segment=on_segment, jobs=jobs)


def iter_record_batches(
    inputs: Sequence[str | Source],
    acc: Accounting,
    info: RunInfo,
    progress: Callable[[int], None] | None = None,
    *,
    jobs: int | None = 1,
) -> Iterator[pa.Table]:
    """Partition records as Arrow tables of BATCH rows (the last one fewer), in completion
    order (``frame.RecordBatches``).

    Memory holds one batch of dicts at a time; ``info`` and ``acc`` are complete once the
    iterator is exhausted (the era of the first batches may be refined by later lines). The
    records of a part of the log another process assembled come in as the tables it made.
    The ingest's heap settings end with its lines (``after_ingest``): what comes after, a
    frame and its analysis or a table, runs with glibc's own (the runs the savings estimates
    replay, too, after the run's analysis).
    """
    batches = RecordBatches(BATCH, acc)
    for item in stream(inputs, acc, info, progress=progress, jobs=jobs, tables=True):
        # (a dict, or a table of records another process made)
        yield from batches.add(item) if type(item) is dict else batches.add_table(item)
    after_ingest()
    yield from batches.rest()


def stream_records(
    inputs: Sequence[str | Source],
    sink: Sink,
    *,
    acc: Accounting | None = None,
    info: RunInfo | None = None,
    progress: Callable[[int], None] | None = None,
    jobs: int | None = 1,
) -> StreamEnd:
    """Drive ``sink`` over the inputs: ``start``, ``record`` per completed call, ``finish``.

    The inputs are read once; memory holds what the sink keeps, not the records.
    """
    acc = acc if acc is not None else Accounting()
    info = info if info is not None else RunInfo()
    sink.start()
    try:
        segment = sink.segment
        for item in stream(
            inputs,
            acc,
            info,
            progress=progress,
            on_segment=lambda _: segment(),
            jobs=jobs,
            tables=sink.takes_tables,
            share=sink.own_share,
        ):
            if type(item) is dict:
                sink.record(item)
            else:
                sink.records(item)
        end = StreamEnd(info, acc)
        sink.finish(end)
    finally:
        sink.close()
    return end


def with_final_era(table: pa.Table, info: RunInfo) -> pa.Table:
    """Calls emitted before the era was known carry the run's final era too."""
    if not table.num_rows:
        return table
    idx = table.schema.get_field_index("era")
    return table.set_column(idx, "era", pa.array([info.era] * table.num_rows, pa.string()))


#: Columns a Parquet export written before they existed may lack (read back as nulls).
LATER_COLUMNS = frozenset({"start_ts", "end_ts"})


def _wall_clock_columns(
    info: RunInfo, column: Callable[[str], np.ndarray]
) -> dict[str, pa.Array] | None:
    """``start_ts``/``end_ts`` of calls given by ``column(name)`` (float arrays of ``source``,
    ``first_line``, ``last_line``, ``start_ms``, ``end_ms``; NaN for null): the TIMELINE offsets
    plus the wall clock of their engine start. None when the log has no engine-start clock.

    A call's engine start is the last one (``info.clocks``, in input order) before the call's
    last line, so rotated files continue the clock of the file that holds the start, and a
    restarted engine starts a new one. Calls with no engine start before them stay null.
    """
    clocks: list[tuple[int, int, float]] = []
    for c in info.clocks:
        ms = _ts_ms(c["ts"]) if c.get("ts") else None
        if ms is not None:
            clocks.append((c["source"], c["line"], ms))
    if not clocks:
        return None
    shift = 2.0**40  # (source, line) as one sortable number
    keys = np.array([s * shift + ln for s, ln, _ in clocks])
    epochs = np.array([round(ms) for _, _, ms in clocks], dtype="float64")
    line = column("last_line")
    line = np.where(np.isnan(line), column("first_line"), line)
    idx = np.searchsorted(keys, column("source") * shift + line, side="right") - 1
    epoch = np.where((idx >= 0) & ~np.isnan(line), epochs[np.clip(idx, 0, None)], np.nan)
    out = {}
    for name, offset in (("start_ts", "start_ms"), ("end_ts", "end_ms")):
        ts = epoch + column(offset)
        # Null where there is none, or beyond the years 1-9999 (an offset of a damaged line).
        null = ~((ts >= WALL_CLOCK_MIN_MS) & (ts <= WALL_CLOCK_MAX_MS))
        col = pa.array(np.where(null, 0, ts).astype("int64"), pa.int64(), mask=null)
        out[name] = col.cast(WALL_CLOCK)
    return out


def with_wall_clock(table: pa.Table, info: RunInfo) -> pa.Table:
    """Fill ``start_ts``/``end_ts`` of a table of records (see ``_wall_clock_columns``)."""
    if not table.num_rows:
        return table

    def column(name: str) -> np.ndarray:
        values: np.ndarray = table.column(name).to_numpy(zero_copy_only=False).astype("float64")
        return values

    stamps = _wall_clock_columns(info, column)
    for name, col in (stamps or {}).items():
        table = table.set_column(table.schema.get_field_index(name), name, col)
    return table


def with_wall_clock_text(records: list[dict[str, Any]], info: RunInfo) -> list[dict[str, Any]]:
    """Records as a stream shows them: ``start_ts``/``end_ts`` as ISO 8601 UTC text, as the
    CSV and JSON Lines exports hold them (records as they complete do not carry them yet).

    Reads only the five columns it needs from the dicts: live mode calls it per batch of
    records the input completed."""
    if not records or not info.clocks:
        return records
    from cuzk_diag.writers import timestamps_as_text

    def column(name: str) -> np.ndarray:
        vals = [r.get(name) for r in records]
        return np.array([v if isinstance(v, int) else np.nan for v in vals], dtype="float64")

    stamps = _wall_clock_columns(info, column)
    if stamps is None:
        return records
    text = timestamps_as_text(pa.table(stamps)).to_pylist()
    return [{**r, **t} for r, t in zip(records, text, strict=True)]


def complete_table(table: pa.Table, info: RunInfo) -> pa.Table:
    """Columns known only from the whole run so far: the final era and the wall clock."""
    return with_wall_clock(with_final_era(table, info), info)


def finish_table(tables: list[pa.Table], info: RunInfo | None) -> pa.Table:
    """The last step of every path: one table, the run's final era and wall clock (unless
    ``info`` is None), rows in lock-acquisition order (``record``; stable for equal numbers).

    Takes the list's tables (the list is emptied) and sorts one column at a time, so that the
    input's memory is freed as the result is built instead of being held beside a sorted copy
    (as ``Table.sort_by`` would)."""
    table, order = completed_table(tables, info)
    if order is None:
        return table
    schema, columns, empty = table.schema, table.columns, set(empty_columns(table))
    del table
    # (The record batches' freed pages are no use to the sorted columns: ``releasing``.)
    for i in releasing(len(columns)):
        col = columns[i]
        columns[i] = null_array(col.type, len(order)) if i in empty else col.take(order)
    return pa.Table.from_arrays(columns, schema=schema)


def completed_table(
    tables: list[pa.Table], info: RunInfo | None
) -> tuple[pa.Table, pa.Array | None]:
    """``finish_table`` but for the sort: the one table (the list is emptied) and the order of
    its rows by ``record`` (None when they are in it already)."""
    table = pa.concat_tables(tables) if tables else PARTITION_SCHEMA.empty_table()
    tables.clear()
    if not table.num_rows:
        return table, None
    if info is not None:
        table = complete_table(table, info)
    order = pc.sort_indices(table.column("record"))
    if pc.all(pc.equal(order, pa.array(np.arange(len(order))))).as_py():
        return table, None
    return table, order


def assemble_table(
    inputs: Sequence[str | Source],
    progress: Callable[[int], None] | None = None,
    *,
    jobs: int | None = 1,
) -> tuple[pa.Table, RunInfo, Accounting]:
    """Stream the inputs through the parser and the assembler into one Arrow table.

    Records are turned into Arrow batches as they complete, so memory holds columns, not
    millions of dicts; rows come out in lock-acquisition order.
    """
    acc = Accounting()
    info = RunInfo()
    batches = iter_record_batches(inputs, acc, info, progress, jobs=jobs)
    return finish_table(list(batches), info), info, acc


def assemble_frame(
    inputs: Sequence[str | Source],
    progress: Callable[[int], None] | None = None,
    *,
    jobs: int | None = 1,
) -> tuple[pd.DataFrame, RunInfo, Accounting]:
    """``assemble_table`` as a frame (``table_to_frame``), without the table: each column is
    put in lock-acquisition order as it is converted (``take_frame``), so the sorted copy of
    the table is never made (1 GB log: a peak of 466 MiB for the sort, one column at a time,
    before the frame)."""
    acc = Accounting()
    info = RunInfo()
    batches = iter_record_batches(inputs, acc, info, progress, jobs=jobs)
    return frame_of_batches(list(batches), info), info, acc


def frame_of_batches(tables: list[pa.Table], info: RunInfo) -> pd.DataFrame:
    """The frame of an ingest's record batches (``completed_table``, then ``take_frame``),
    which it takes (the list is emptied).

    The C heap's free pages go back first (``hand_back``; the ingest's settings ended with its
    batches, ``iter_record_batches``): those the ingest freed, then those the sort freed. (The
    records a child sent live in the C heap, not in Arrow's pool, and the ingest's temporaries
    leave it full of holes: on the 1 GB log with ``--jobs 2`` the sort peaked at 475 MiB
    without the first, 413 with it.)"""
    hand_back()
    table, order = completed_table(tables, info)
    hand_back()
    tables.append(table)
    del table
    return take_frame(tables, order)


def load_run(
    inputs: Sequence[str] | str,
    progress: Callable[[int], None] | None = None,
    *,
    jobs: int | None = 1,
    keep_table: bool = True,
) -> Run:
    """Parse and assemble the inputs (paths, ``-`` for stdin, .gz/.zst) into a ``Run``.

    A Parquet partition export (recognised by its magic bytes, whatever its name) stands in
    for its log; it must then be the only input. ``keep_table=False`` leaves ``Run.table``
    None: the frame is then built from the Arrow table column by column, freeing each column
    as it goes, instead of holding both (about half the peak memory on a long log).
    """
    names = [inputs] if isinstance(inputs, str) else list(inputs)
    if not names:
        raise InputError("no input given")
    sources = open_sources(names)
    export = parquet_source(sources)
    if export is not None:
        return read_export(export, keep_table=keep_table)
    if keep_table:
        table, info, acc = assemble_table(sources, progress, jobs=jobs)
        return Run(table_to_frame(table), info, acc, names, table)
    frame, info, acc = assemble_frame(sources, progress, jobs=jobs)
    return Run(frame, info, acc, names)


def open_sources(names: Sequence[str]) -> list[Source]:
    """Each input opened once, its kind sniffed without losing a byte (pipes, FIFOs)."""
    sources: list[Source] = []
    try:
        for name in names:
            sources.append(open_source(name))
    except BaseException:
        for src in sources:
            src.close()
        raise
    return sources


def parquet_source(sources: Sequence[Source]) -> Source | None:
    """The Parquet export among the inputs, or None; an export given with other inputs is an
    error (the export already holds a whole run)."""
    parquet = [s for s in sources if s.kind == PARQUET]
    if not parquet:
        return None
    if len(sources) > 1:
        for src in sources:
            src.close()
        raise InputError(
            f"{parquet[0].display} is a Parquet export; give it alone, not together with other "
            "inputs"
        )
    return parquet[0]


def run_metadata_of(info: RunInfo, acc: Accounting) -> dict[bytes, bytes]:
    """Schema metadata that lets a Parquet export stand in for its log."""
    return {
        META_INFO: json.dumps(info.to_dict(), default=str).encode(),
        META_ACCOUNTING: json.dumps(acc.to_dict(), default=str).encode(),
    }


def read_export(source: str | Source, *, keep_table: bool = True) -> Run:
    """Rebuild a ``Run`` from a Parquet partition export (a baseline kept without its log).

    ``source`` is a path or an opened ``Source``; one that is not a regular file (a pipe, a
    FIFO, stdin) is read into memory, since Parquet keeps its index at the end of the file.
    ``keep_table=False`` leaves ``Run.table`` None, as ``load_run`` does: the frame is then
    read from the file one column at a time (``frame.frame_of_columns``), never beside a whole
    table.
    """
    src = source if isinstance(source, Source) else open_source(source)
    path = src.display
    data: Any
    try:
        data = src.name if src.regular else pa.BufferReader(src.read_all())
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    finally:
        src.close()
    try:
        with pq.ParquetFile(data) as pf:
            return _export_run(pf, path, keep_table)
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"{path}: not a readable Parquet export ({exc})") from None


def _export_run(pf: pq.ParquetFile, path: str, keep_table: bool) -> Run:
    """``read_export`` of an opened Parquet file."""
    schema = pf.schema_arrow
    missing = [
        n for n in PARTITION_SCHEMA.names if n not in schema.names and n not in LATER_COLUMNS
    ]
    if missing:
        raise InputError(
            f"{path}: not a cuzk-diag partition export (missing columns: {', '.join(missing[:5])})"
        )
    meta = dict(schema.metadata or {})
    # Written at the end of a streamed export, so it sits in the file's key-value metadata.
    meta.update(pf.metadata.metadata or {})
    info = RunInfo.from_dict(json.loads(meta[META_INFO])) if META_INFO in meta else RunInfo()
    acc = Accounting()
    if META_ACCOUNTING in meta:
        d = json.loads(meta[META_ACCOUNTING])
        for k, v in d.items():
            if k == "by_family":
                acc.by_family.update(v)
            elif k == "unknown_keys":
                acc.unknown_keys.update(v)
            elif k == "journald_sources":
                acc.journald_sources.update(v)
            elif hasattr(acc, k) and not callable(getattr(acc, k)):
                setattr(acc, k, v)
    have, rows = set(schema.names), pf.metadata.num_rows

    def take(i: int) -> pa.ChunkedArray | None:
        field = PARTITION_SCHEMA.field(i)
        if field.name not in have:
            return None  # (``LATER_COLUMNS``: read back as nulls)
        return pf.read(columns=[field.name]).column(0).cast(field.type)

    if not keep_table:
        return Run(frame_of_columns(PARTITION_SCHEMA, rows, take), info, acc, [path])
    columns = [take(i) for i in range(len(PARTITION_SCHEMA))]
    table = pa.Table.from_arrays(
        [
            null_array(f.type, rows) if col is None else col
            for f, col in zip(PARTITION_SCHEMA, columns, strict=True)
        ],
        schema=PARTITION_SCHEMA,
    )
    return Run(table_to_frame(table), info, acc, [path], table)
