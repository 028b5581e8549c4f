"""Live analysis of a log while it is written (stdin or ``--follow``).

The batch parser and assembler are fed chunk by chunk as data arrives, so every partition
record is the one ``analyze`` would build. Rules re-run on a window of recent partitions (at
most every ``LiveOptions.rule_interval`` seconds, every ``rule_interval_behind`` seconds while
input waits to be read) and the findings are diffed into events. At
end of input or on Ctrl-C the final report is computed from every record kept (up to
``LiveOptions.max_records``), so it equals ``analyze`` on the same input.

Memory is bounded: the window, a streaming quantile sketch per stage, and the records kept for
the final report (stored as Arrow tables, oldest dropped beyond the cap) are all of fixed size.

With a sink that shows nothing before the end (``sinks.ReportOnly``: ``analyze -`` with a
``--format`` other than a terminal's console, or with ``--no-live``) only the records for the
final report are kept: no window, rules, sketches or early placements, whose results nothing
would show.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import queue
import select
import signal
import sys
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

import numpy as np
import pyarrow as pa

from cuzk_diag.analysis import Analysis, analyze_run, jsonable
from cuzk_diag.config import Config
from cuzk_diag.errors import InputError
from cuzk_diag.factrows import KeyedFactRows
from cuzk_diag.follow import FollowFile
from cuzk_diag.frame import note_invalid, records_to_table, table_to_frame
from cuzk_diag.ingest.assemble import SegmentEnd
from cuzk_diag.ingest.parallel import ChildCall, usable_cpus
from cuzk_diag.ingest.stream import Ingest
from cuzk_diag.jsontext import encoder
from cuzk_diag.pipeline import Run, finish_table, with_wall_clock_text
from cuzk_diag.records import (
    OFFSET_COLUMNS,
    PARTITION_COLUMNS,
    Accounting,
    Finding,
    RunInfo,
)
from cuzk_diag.sinks import ReportOnly, Sink, StreamEnd
from cuzk_diag.sources import (
    MAGIC_BYTES,
    PARQUET,
    SourceStats,
    decoded,
    input_errors,
    read_chunks,
    sample_size,
    sniff,
    sniff_stream,
)

#: Duration columns a sketch is kept for (``*_ms`` fields that are not TIMELINE offsets).
SKETCH_FIELDS: tuple[str, ...] = tuple(
    name
    for name, typ in PARTITION_COLUMNS
    if name.endswith("_ms") and name not in OFFSET_COLUMNS and not pa.types.is_string(typ)
)
QUEUE_WAIT = "gpu_queue_wait_ms"  # GPU_PICKUP - CHAN_SEND/GPU_QUEUE, as in the stage table
#: Records whose values go into the sketches at once (``LiveAnalyzer._sketch``).
SKETCH_BATCH = 1024
_COLUMN_NAMES = tuple(name for name, _ in PARTITION_COLUMNS)
#: One event of the ``jsonl`` stream (compact; NaN refused, ``jsonable`` having made it null).
_event_text = encoder(separators=(",", ":"), allow_nan=False)
#: A text as ``_event_text`` writes it (not ASCII-only).
_text_json = json.encoder.encode_basestring
#: ``,"<column>":``, written before each column's value in a ``partition`` event.
_COLUMN_KEYS = tuple(f",{_event_text(name)}:" for name in _COLUMN_NAMES)
#: The decimal text of the whole numbers below 1,024 (most of a record's: its partition, worker
#: and GPU, and many stage times), made once: each made by ``str`` took 500 machine instructions.
_SMALL_INTS = tuple(str(i) for i in range(1024))
#: Text handed to the parser at once when a backlog is waiting (keeps replay fast).
FEED_LIMIT = 4 << 20


@dataclass(frozen=True, slots=True)
class LiveOptions:
    """Knobs of live mode; the defaults suit a daemon proving a few proofs a minute."""

    window: int = 500  # partitions the live facts, stage table and rules look at
    max_records: int = 100_000  # records kept for the final report (oldest dropped beyond)
    rule_interval: float = 0.5  # least seconds between two rule runs on the window
    # The same while live mode is behind its input, for runs in this process (a run in the
    # rules' own process, ``rules_child``, costs this one the window's table: no wait).
    rule_interval_behind: float = 5.0
    # Live mode is behind its input while more than this many bytes of it wait to be parsed
    # (keeping up with a fast pipe, what arrives during one parse waits: well under 1 MiB).
    behind_bytes: int = 2 << 20
    idle_flush: float = 0.5  # seconds a C++ line may wait for a clock reading before it is placed
    proofs_window: int = 20  # completed proofs the windowed s/proof is taken over
    tick: float = 0.1  # seconds the loop waits for input before doing timed work
    chunk_size: int = 256 << 10  # bytes asked of the input per read
    # Pieces read ahead of the parser (each at most ``chunk_size``: bounds memory on a fast
    # input); a backlog is parsed in texts of up to ``FEED_LIMIT``.
    queue_chunks: int = 64
    feed_min: int = 1 << 20  # text gathered for one parse when more is arriving
    feed_wait: float = 0.05  # most seconds a text waits for ``feed_min`` to gather
    # Rules run in a second interpreter (``LiveAnalyzer.rules_in_child``) where the machine
    # has a second CPU: the input's parse does not wait for them.
    rules_child: bool = True


# -- streaming quantiles -----------------------------------------------------------------------


class QuantileSketch:
    """Quantiles of a stream within a relative error (log-spaced buckets, as DDSketch).

    Memory is one counter per occupied bucket: about 800 for values from 1 ms to 3 hours at
    1% accuracy, whatever the number of values. Values are taken a batch at a time
    (``add_many``: the buckets of a batch by numpy, its counts merged once per bucket).
    """

    __slots__ = (
        "_gamma",
        "_log_gamma",
        "_pos",
        "_neg",
        "_zero",
        "count",
        "total",
        "lo",
        "hi",
    )

    def __init__(self, relative_accuracy: float = 0.01) -> None:
        self._gamma = (1 + relative_accuracy) / (1 - relative_accuracy)
        self._log_gamma = math.log(self._gamma)
        self._pos: dict[int, int] = {}
        self._neg: dict[int, int] = {}
        self._zero = 0
        self.count = 0
        self.total = 0.0
        self.lo = math.inf
        self.hi = -math.inf

    def add(self, x: float) -> None:
        self.add_many(np.array([x], dtype=np.float64))

    def add_many(self, values: np.ndarray) -> None:
        """Add a float64 array of values (NaNs are skipped)."""
        v = values[~np.isnan(values)]
        if not len(v):
            return
        self.count += len(v)
        self.total += float(v.sum())
        self.lo = min(self.lo, float(v.min()))
        self.hi = max(self.hi, float(v.max()))
        nonzero = np.abs(v) > 1e-9
        self._zero += len(v) - int(nonzero.sum())
        v = v[nonzero]
        k = np.ceil(np.log(np.abs(v)) / self._log_gamma).astype(np.int64)
        for counts, keys in ((self._pos, k[v > 0]), (self._neg, k[v < 0])):
            if len(keys):
                uniq, n = np.unique(keys, return_counts=True)
                for key, c in zip(uniq.tolist(), n.tolist(), strict=True):
                    counts[key] = counts.get(key, 0) + c

    def quantile(self, q: float) -> float | None:
        """The ``q`` quantile (0..1), exact at the extremes, within the accuracy elsewhere."""
        if not self.count:
            return None
        if q <= 0:
            return self.lo
        if q >= 1:
            return self.hi
        rank = q * (self.count - 1)
        seen = 0
        for k in sorted(self._neg, reverse=True):
            seen += self._neg[k]
            if seen > rank:
                return max(self.lo, -self._value(k))
        seen += self._zero
        if seen > rank:
            return 0.0
        for k in sorted(self._pos):
            seen += self._pos[k]
            if seen > rank:
                return min(self.hi, max(self.lo, self._value(k)))
        return self.hi

    def _value(self, k: int) -> float:
        # The bucket (gamma^(k-1), gamma^k] is represented by the point of equal relative error.
        return 2 * self._gamma**k / (self._gamma + 1)

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None


# -- what the engine reports -------------------------------------------------------------------


@dataclass(slots=True)
class StageRow:
    """One stage field: the window's exact statistics and the whole run's sketched ones."""

    field: str
    n: int  # values in the window
    median: float | None  # window
    p95: float | None  # window
    run_n: int
    run_median: float | None  # whole run (sketch, within 1%)
    run_p95: float | None

    def to_dict(self) -> dict[str, Any]:
        return jsonable(dataclasses.asdict(self))  # type: ignore[no-any-return]


@dataclass(slots=True)
class LiveSnapshot:
    """The live state: whole-run counters plus the figures of the recent window."""

    inputs: list[str]
    elapsed_s: float
    lines: int
    bytes_read: int
    malformed: int
    unattributed: int
    era: str
    partitions: int  # records completed, whole run
    partitions_failed: int
    partitions_in_flight: int  # GPU calls started and not yet complete
    revised: int  # records re-issued after a provisional placement
    proofs_done: int
    proofs_failed: int
    proofs_open: int
    window_partitions: int
    s_per_proof: float | None  # window: over the last completed proofs
    s_per_proof_source: str | None
    gpu_util: float | None  # window
    kernel_util: float | None  # window
    stages: list[StageRow]
    findings: list[Finding]  # current, from the window
    records_kept: int
    records_dropped: int
    notices: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["stages"] = [s.to_dict() for s in self.stages]
        d["findings"] = [
            {"code": f.code, "name": f.name, "severity": str(f.severity), "title": f.title}
            for f in self.findings
        ]
        return jsonable(d)  # type: ignore[no-any-return]


def partition_text(record: dict[str, Any], time: str, revised: bool) -> str:
    """The ``partition`` event of ``record`` as a line of the ``jsonl`` stream (without its
    newline): the text ``_event_text`` makes of the event's dict (type, time, revised, then
    every column), written value by value with each key's text made once. Text, whole numbers
    and nulls, most of a record's values, are written as they are; any other value as
    ``_event_text`` writes its ``jsonable`` form. (Half the time of building the dict and
    encoding it.)"""
    out = ['{"type":"partition","time":', _text_json(time), ',"revised":']
    out.append("true" if revised else "false")
    # (Compiled, live.pxd types the locals: ``record.get`` of a dict and ``out.append`` of a
    # list are C calls, and the columns' keys and names are read from tuples by position.)
    keys: tuple[str, ...] = _COLUMN_KEYS
    names: tuple[str, ...] = _COLUMN_NAMES
    small: tuple[str, ...] = _SMALL_INTS
    for i in range(len(names)):
        v = record.get(names[i])
        out.append(keys[i])
        if v is None:
            out.append("null")
        elif type(v) is str:
            out.append(_text_json(v))
        elif type(v) is int:  # (an int exactly, not a bool: its decimal digits)
            out.append(small[v] if 0 <= v < 1024 else str(v))
        else:
            out.append(_event_text(jsonable(v)))
    out.append("}")
    return "".join(out)


def stage_values(records: list[dict[str, Any]]) -> tuple[list[list[float]], list[float]]:
    """The values of each of ``SKETCH_FIELDS`` in ``records`` (whole numbers and floats, not
    bools), and their queue waits (where both offsets are whole numbers), as floats, in one
    pass over the records (compiled, live.pxd types the locals: a dict's ``get`` and the type
    tests are C calls)."""
    names: tuple[str, ...] = SKETCH_FIELDS
    columns: list[list[float]] = [[] for _ in names]
    waits: list[float] = []
    for r in records:
        for i in range(len(names)):
            v = r.get(names[i])
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                col = columns[i]
                col.append(float(v))
        q, p = r.get("queue_ms"), r.get("pickup_ms")
        if isinstance(q, int) and isinstance(p, int):
            waits.append(float(p - q))
    return columns, waits


class JsonLinesSink(Sink):
    """Live mode's stream format (``jsonl``): one JSON object per line on ``stream``:
    partition, finding, finding_cleared, summary.

    Notices go to stderr so that stdout stays pure JSON Lines.
    """

    def __init__(self, stream: IO[str], *, summary_interval: float = 10.0) -> None:
        self.stream = stream
        self.update_interval = summary_interval
        self._last_partitions = 0
        self._first = True
        self._time_ms = -1
        self._time_second = -1
        self._second_text = ""
        self._time_text = ""

    def _write(self, obj: dict[str, Any]) -> None:
        self._line(_event_text(obj))

    def _line(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.stream.write(text + "\n")
        except BrokenPipeError:
            self.closed = True

    def record(self, record: dict[str, Any], *, revised: bool = False) -> None:
        if not self.closed:
            self._line(partition_text(record, self._time(), revised=revised))

    def _time(self) -> str:
        """The present time as an event's ``time`` (ISO 8601 UTC, milliseconds), made once per
        millisecond, its date and second once per second (a record is written every few tens
        of microseconds while input streams: a date made for each millisecond took some 30,000
        machine instructions a record)."""
        ms = time.time_ns() // 1_000_000
        if ms != self._time_ms:
            self._time_ms = ms
            second = ms // 1000
            if second != self._time_second:
                self._time_second = second
                now = datetime.fromtimestamp(second, UTC)
                self._second_text = now.strftime("%Y-%m-%dT%H:%M:%S")
            self._time_text = f"{self._second_text}.{ms % 1000:03d}Z"
        return self._time_text

    def finding(self, finding: Finding, *, status: str = "new") -> None:
        self._write(
            {
                "type": "finding",
                "time": self._time(),
                "status": status,
                **jsonable(finding.to_dict()),
            }
        )

    def finding_cleared(self, finding: Finding) -> None:
        self._write(
            {
                "type": "finding_cleared",
                "time": self._time(),
                "code": finding.code,
                "name": finding.name,
                "severity": str(finding.severity),
                "title": finding.title,
            }
        )

    def update(self, snapshot: LiveSnapshot) -> None:
        if self._first:  # the engine updates once at start; nothing to summarise yet
            self._first = False
            return
        if snapshot.partitions != self._last_partitions:
            self._last_partitions = snapshot.partitions
            self._write(
                {"type": "summary", "time": self._time(), "final": False, **snapshot.to_dict()}
            )

    def finish(self, end: StreamEnd) -> None:
        if end.analysis is None or end.snapshot is None:
            return  # driven outside live mode: the partition events are the whole stream
        self._write(
            {
                "type": "summary",
                "time": self._time(),
                "final": True,
                **end.snapshot.to_dict(),
                "report": end.analysis.to_dict(),
            }
        )

    def flush(self) -> None:
        if self.closed:
            return
        try:
            self.stream.flush()
        except BrokenPipeError:
            self.closed = True


# -- the records kept for the final report ----------------------------------------------------


class RecordStore:
    """Completed records as Arrow tables (about 1 KB a record), the oldest dropped past ``cap``;
    the values that did not fit their columns counted into ``counts`` as the tables are made
    (``frame.note_invalid``: each record is taken once, dropped or not)."""

    def __init__(self, cap: int, batch: int = 2048, counts: Accounting | None = None) -> None:
        self.counts = counts if counts is not None else Accounting()
        self.cap = max(1, cap)
        self.batch = min(batch, self.cap)
        self._buf: list[dict[str, Any]] = []
        self._chunks: deque[pa.Table] = deque()
        self._in_chunks = 0
        self.dropped = 0

    def add(self, record: dict[str, Any]) -> None:
        self._buf.append(record)
        if len(self._buf) >= self.batch:
            self._seal()

    def _seal(self) -> None:
        if not self._buf:
            return
        table = records_to_table(self._buf)
        note_invalid(table, self.counts)
        self._buf = []
        self._chunks.append(table)
        self._in_chunks += table.num_rows
        while self._in_chunks > self.cap and len(self._chunks) > 1:
            old = self._chunks.popleft()
            self._in_chunks -= old.num_rows
            self.dropped += old.num_rows

    def __len__(self) -> int:
        return self._in_chunks + len(self._buf)

    def table(self, info: RunInfo | None = None, *, release: bool = False) -> pa.Table:
        """Every kept record in the order ``analyze`` uses, as ``pipeline.assemble_table`` does:
        lock-acquisition order, and the run's final era and wall clock on every row.

        ``release`` empties the store (its memory is freed as soon as the result is built).
        """
        self._seal()
        chunks = list(self._chunks)
        if release:
            self._chunks = deque()
        return finish_table(chunks, info)


# -- the engine ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _JobProgress:
    count: int = 0
    failed: int = 0
    last_end: float | None = None
    segment: int = 0


def _record_order(rec: dict[str, Any]) -> tuple[bool, int]:
    r = rec.get("record")
    return (r is None, r or 0)


def _key(rec: dict[str, Any]) -> tuple[Any, ...]:
    """Identity of a GPU call across a provisional and the final placement of its lines."""
    if rec.get("job_id") is not None:
        return (
            "call",
            rec.get("source"),
            rec["job_id"],
            rec.get("partition"),
            rec.get("worker"),
            rec.get("start_ms"),
        )
    return ("block", rec.get("source"), rec.get("record"), rec.get("first_line"))


class LiveAnalyzer:
    """Incremental analysis: ``feed`` text as it comes, ``tick`` on a clock, ``finish`` at the end.

    Not thread-safe; ``run_live`` drives it from one thread while another reads the input.
    """

    #: Beyond this many TIMELINE entries the oldest are forgotten (the assembler drops those of
    #: emitted calls; partitions that never reached a GPU would otherwise stay for the whole run).
    TL_KEEP = 16_384
    #: Safety valve for calls that never end (GPU_START without GPU_END or a GPU region).
    OPEN_CALLS_MAX = 4096
    PROVISIONAL_MAX = 4096
    #: Most seconds the end of input waits for a run in the rules' process (``finish``).
    CHILD_WAIT = 30.0

    def __init__(
        self,
        config: Config,
        sink: Sink | None = None,
        options: LiveOptions | None = None,
        inputs: Sequence[str] = (),
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.sink = sink or ReportOnly()
        self.shows = self.sink.shows_run  # (False: only the records for the final report)
        self.opts = options or LiveOptions()
        self.inputs = list(inputs)
        self.clock = clock
        self.acc = Accounting()
        self.info = RunInfo()
        # Rotations of a followed file are one run by construction: no guard between them.
        self.ingest = Ingest(self.inputs, self.acc, self.info, guard=False)
        self.asm = self.ingest.asm
        self.source = -1
        self.stats: SourceStats | None = None
        self._closed_stats: list[SourceStats] = []
        self.store = RecordStore(self.opts.max_records, counts=self.acc)
        self.window: deque[tuple[tuple[Any, ...], dict[str, Any]]] = deque()
        self._evicted_jobs: deque[str] = deque(maxlen=256)
        self.provisional: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
        self._sketches: dict[str, QuantileSketch] = {}
        self._unsketched: list[dict[str, Any]] = []  # records whose values wait (``_sketch``)
        self.partitions = 0
        self.partitions_failed = 0
        self.revised = 0
        self._jobs: OrderedDict[str, _JobProgress] = OrderedDict()
        self._jobs_done: OrderedDict[str, None] = OrderedDict()
        self.proofs_done = 0
        self.proofs_failed = 0
        self._completions: deque[tuple[int, float]] = deque(maxlen=max(2, self.opts.proofs_window))
        self.findings: dict[tuple[str, int], Finding] = {}
        self.window_analysis: Analysis | None = None
        # The interpreter the rules run in (``rules_in_child``); its state: "warming" (its
        # imports: the rules run here meanwhile), "idle" or "busy" (a run in hand).
        self._child: ChildCall | None = None
        self._child_state = "off"
        self._dirty = False
        self._problems = 0
        self._last_eval = -math.inf
        self._eval_cost = 0.0
        self._last_update = -math.inf
        self._pending_first: tuple[int, int] | None = None
        self._pending_since = 0.0
        self._spec_len = 0
        self.speculations = 0
        self.notices: deque[str] = deque(maxlen=3)
        self.started = clock()

    # -- input side ------------------------------------------------------------------------------

    def begin_source(self, index: int, stats: SourceStats) -> None:
        """A new input starts (its line numbers count from 1, as in ``analyze``)."""
        self._close_source()
        self.source = index
        self.stats = stats
        self.ingest.begin(index)

    def feed(self, text: str | bytes) -> None:
        """Whole cleaned lines of the current input (``sources.read_chunks`` output, or text)."""
        if self.ingest.parser is None:
            raise RuntimeError("feed before begin_source")
        self._records(self.ingest.feed(text))

    def end_source(self) -> None:
        """The current input ended: count its cleaning statistics as ``analyze`` does."""
        self._close_source()

    def _close_source(self) -> None:
        if self.ingest.parser is None and self.stats is None:
            return
        self._records(self.ingest.end(self.stats))
        if self.stats is not None:
            self._closed_stats.append(self.stats)
            self.stats = None

    def _records(self, out: list[Any]) -> None:
        self._final([rec for rec in out if type(rec) is not SegmentEnd])
        self._bound_assembler()

    def _final(self, records: list[dict[str, Any]]) -> None:
        """Final records from the assembler, in order (their shown form made in one pass, for a
        sink that shows the run)."""
        if not self.shows:
            for rec in records:
                self._keep(rec)
            return
        for rec, shown in zip(records, self._shown(records), strict=True):
            self._record(rec, shown)
        self._sketch(records)

    def _bound_assembler(self) -> None:
        asm = self.asm
        if len(asm.tl) > self.TL_KEEP:
            for key in list(asm.tl)[: len(asm.tl) - self.TL_KEEP // 2]:
                del asm.tl[key]
        if len(asm.calls) > self.OPEN_CALLS_MAX:
            for call in asm.calls[: len(asm.calls) - self.OPEN_CALLS_MAX // 2]:
                asm._emit(call)
            out, asm.out = asm.out, []
            self._final(out)
        jobs = self.info.jobs
        if len(jobs) > self.opts.max_records:
            for job in list(jobs)[: len(jobs) - self.opts.max_records]:
                del jobs[job]

    # -- records -----------------------------------------------------------------------------------

    def _shown(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Records as ``partition`` events show them: with their wall clock, as the export has
        (one Arrow pass for all of them)."""
        return with_wall_clock_text(records, self.info)

    def _keep(self, rec: dict[str, Any]) -> None:
        """A final record from the assembler: kept for the final report, counted."""
        self.partitions += 1
        if rec.get("status") == "failed":
            self.partitions_failed += 1
        self.store.add(rec)
        self._progress(rec)

    def _record(self, rec: dict[str, Any], shown: dict[str, Any]) -> None:
        """A final record from the assembler: kept, counted, shown (unless shown already)."""
        self._keep(rec)
        key = _key(rec)
        prov = self.provisional.pop(key, None)
        if prov is None:
            self._window_put(key, rec, replace=False)
            self.sink.record(shown, revised=False)
        else:
            self._window_put(key, rec, replace=True)
            if prov != rec:
                self.revised += 1
                self.sink.record(shown, revised=True)
        self._dirty = True

    def _provisional(self, rec: dict[str, Any], shown: dict[str, Any]) -> None:
        """A record placed early (idle input): shown now, replaced when the final one comes."""
        key = _key(rec)
        prev = self.provisional.get(key)
        if prev == rec:
            return
        self.provisional[key] = rec
        while len(self.provisional) > self.PROVISIONAL_MAX:
            self.provisional.popitem(last=False)
        self._window_put(key, rec, replace=prev is not None)
        if prev is not None:
            self.revised += 1
        self.sink.record(shown, revised=prev is not None)
        self._dirty = True

    def _window_put(self, key: tuple[Any, ...], rec: dict[str, Any], *, replace: bool) -> None:
        w = self.window
        if replace:
            for i in range(len(w) - 1, -1, -1):
                if w[i][0] == key:
                    w[i] = (key, rec)
                    return
        w.append((key, rec))
        while len(w) > self.opts.window:
            _, old = w.popleft()
            job = old.get("job_id")
            if job is not None and (not self._evicted_jobs or self._evicted_jobs[-1] != job):
                self._evicted_jobs.append(job)

    @property
    def sketches(self) -> dict[str, QuantileSketch]:
        """Each stage's sketch (by field), holding every record taken so far."""
        self._sketch_waiting()
        return self._sketches

    def _sketch(self, records: list[dict[str, Any]]) -> None:
        """A batch of records for the sketches: their values go in ``SKETCH_BATCH`` records at
        a time, or when the sketches are read. (Each sketch's ``add_many`` has a fixed cost of
        a dozen numpy calls, paid for each of 30 fields: while input streams, records come a
        few dozen at a time.)"""
        self._unsketched.extend(records)
        if len(self._unsketched) >= SKETCH_BATCH:
            self._sketch_waiting()

    def _sketch_waiting(self) -> None:
        """Each stage's values of the records waiting into its sketch (``stage_values``)."""
        records, self._unsketched = self._unsketched, []
        if not records:
            return
        columns, waits = stage_values(records)
        sk = self._sketches
        for name, nums in (*zip(SKETCH_FIELDS, columns, strict=True), (QUEUE_WAIT, waits)):
            if nums:
                s = sk.get(name)
                if s is None:
                    s = sk[name] = QuantileSketch()
                s.add_many(np.array(nums, dtype=np.float64))

    def _progress(self, rec: dict[str, Any]) -> None:
        job = rec.get("job_id")
        if not isinstance(job, str) or job in self._jobs_done:
            return
        p = self._jobs.get(job)
        if p is None:
            p = self._jobs[job] = _JobProgress(segment=self.asm.segment)
            while len(self._jobs) > 10_000:
                self._jobs.popitem(last=False)
        p.count += 1
        if rec.get("status") == "failed":
            p.failed += 1
        end = rec.get("end_ms")
        if isinstance(end, int) and (p.last_end is None or end > p.last_end):
            p.last_end = float(end)

    def _complete_jobs(self) -> None:
        """Proofs whose last partition is in (or whose assembly was logged) count as done."""
        jobs = self.info.jobs
        done = []
        for job, p in self._jobs.items():
            if job not in jobs:
                continue
            # (two fields read, not the job's row made a dict: ``KeyedFactRows.value``)
            n = jobs.value(job, "num_partitions")
            assembled = jobs.value(job, "assembled_line") is not None  # (its line number)
            if assembled or (isinstance(n, int) and n > 0 and p.count >= n):
                done.append(job)
        for job in done:
            p = self._jobs.pop(job)
            self._jobs_done[job] = None
            while len(self._jobs_done) > 10_000:
                self._jobs_done.popitem(last=False)
            if p.failed:
                self.proofs_failed += 1
            else:
                self.proofs_done += 1
                if p.last_end is not None:
                    self._completions.append((p.segment, p.last_end))

    def _window_s_per_proof(self) -> float | None:
        if not self._completions:
            return None
        seg = self._completions[-1][0]
        ends = sorted(t for s, t in self._completions if s == seg)
        if len(ends) < 2 or ends[-1] <= ends[0]:
            return None
        return (ends[-1] - ends[0]) / 1000.0 / (len(ends) - 1)

    # -- time side ---------------------------------------------------------------------------------

    def tick(self, *, idle: bool = True) -> None:
        """Timed work: early placement of stalled lines, rules on the window, sink updates
        (for a sink that shows nothing before the end, only the proofs' completion)."""
        if not self.shows:
            self._complete_jobs()
            return
        now = self.clock()
        self._check_pending(now, idle)
        self._complete_jobs()
        problems = len(self.info.failures) + sum(self.info.warnings.values())
        if problems != self._problems:
            self._problems = problems
            self._dirty = True
        self._collect()
        interval = max(self.opts.rule_interval, 4 * self._eval_cost)
        if not idle and self._child_state != "idle":
            # Behind the input, with the rules run here: the window moves on before its
            # findings would be read, and each run delays the records behind it; run them less
            # often until caught up. (A child's run costs this process its window's table.)
            interval = max(interval, self.opts.rule_interval_behind)
        if self._dirty and now - self._last_eval >= interval and self._child_state != "busy":
            self.evaluate()
        every = self.sink.update_interval
        if every is not None and now - self._last_update >= every:
            self._last_update = now
            self.sink.update(self.snapshot())

    def _check_pending(self, now: float, idle: bool) -> None:
        """C++ lines wait in the assembler for the next clock reading; on idle input, place them.

        The placement is made on a copy of the assembler, so the final records (and the final
        report) do not depend on when the input paused: a record placed early is shown at once
        and re-issued (``revised``) should the real placement differ.
        """
        pend = self.asm.pending
        if not pend:
            self._pending_first = None
            return
        first = (id(pend), pend[0].line)
        if first != self._pending_first:
            self._pending_first = first
            self._pending_since = now
            self._spec_len = 0
            return
        if (
            idle
            and now - self._pending_since >= self.opts.idle_flush
            and len(pend) != self._spec_len
        ):
            self._spec_len = len(pend)
            self.speculate()

    def speculate(self) -> None:
        """Drain the waiting C++ lines on a copy of the assembler; show what that completes."""
        asm = self.asm
        if not asm.pending:
            return
        self.speculations += 1
        records = asm.preview()
        for rec, shown in zip(records, self._shown(records), strict=True):
            self._provisional(rec, shown)

    def evaluate(self) -> None:
        """Run facts and rules on the window and emit the finding changes (with the rules in
        a child, its run starts now and its findings come at a later ``tick``)."""
        t0 = time.perf_counter()
        self._last_eval = self.clock()
        self._dirty = False
        evicted = set(self._evicted_jobs)
        recs = [r for _, r in self.window if r.get("job_id") not in evicted]
        if not recs and not self.info.failures:
            return
        recs.sort(key=_record_order)
        table = records_to_table(recs)
        wjobs = {r.get("job_id") for r in recs}
        jobs = self.info.jobs
        info = dataclasses.replace(
            self.info,
            # (the window's jobs' rows alone made dicts: not every job's of the run so far)
            jobs=KeyedFactRows((j, jobs[j]) for j in jobs if j in wjobs),
            bench={},  # cuzk-bench totals describe the whole run, not the window
        )
        args = (table, info, self.acc, list(self.inputs), self.config)
        if self._child is not None and self._child_state == "idle":
            self._child.call(analyze_window, args, {})
            self._child_state = "busy"
        else:
            self._apply(analyze_window(*args))
        self._eval_cost = time.perf_counter() - t0

    def _apply(self, analysis: Analysis) -> None:
        """A run of the rules on the window is done: its finding changes out."""
        self.window_analysis = analysis
        self._diff(analysis.findings)

    # -- the rules in a child ----------------------------------------------------------------------

    def rules_in_child(self) -> None:
        """Run the rules on the window in a second interpreter from now on, where this machine
        has a second CPU (and a sink shows them): the input's parse and assembly go on while
        they run, one run at a time. The child's imports (pandas, the rules) take about half a
        second; the rules run here meanwhile. Should the child fail, they run here again."""
        if self._child is not None or not self.shows or usable_cpus() < 2:
            return
        try:
            self._child = ChildCall("the rules' process")
        except OSError as exc:  # (no interpreter to start: the rules stay here)
            self.note(f"the rules' process did not start ({exc}); they run in the main process")
            return
        self._child.call(_load_analysis, (), {})
        self._child_state = "warming"

    def _collect(self, *, wait: bool = False) -> None:
        """The child's reply, if it is in (with ``wait``, once it is): a run's findings out, or
        the child ready after its imports."""
        child = self._child
        if child is None or self._child_state == "idle" or (child.running() and not wait):
            return
        if child.running() and child.reader is not None:
            child.reader.join(self.CHILD_WAIT)
            if child.running():
                self._rules_here(f"the rules' process did not answer within {self.CHILD_WAIT:g} s")
                return
        try:
            value = child.result(keep=True)
        except Exception as exc:
            self._rules_here(str(exc))
            return
        if self._child_state == "busy":
            self._apply(value)
        self._child_state = "idle"

    def _rules_here(self, why: str) -> None:
        """The rules' child failed (``why``): the rules run in this process from now on, the
        run it had in hand made again here."""
        self.note(f"{why}; the rules run in the main process from now on")
        self.stop_rules_child()
        self._dirty = True

    def stop_rules_child(self) -> None:
        """Stop the rules' child (if one runs); the rules run in this process from now on."""
        if self._child is not None:
            self._child.close()
        self._child, self._child_state = None, "off"

    def _diff(self, findings: list[Finding]) -> None:
        new: dict[tuple[str, int], Finding] = {}
        seen: Counter[str] = Counter()
        for f in findings:
            new[(f.code, seen[f.code])] = f
            seen[f.code] += 1
        for k, f in new.items():
            old = self.findings.get(k)
            if old is None:
                self.sink.finding(f, status="new")
            elif old.severity != f.severity:
                self.sink.finding(f, status="changed")
        for k, f in self.findings.items():
            if k not in new:
                self.sink.finding_cleared(f)
        self.findings = new

    def note(self, text: str) -> None:
        self.notices.append(text)
        self.sink.notice(text)

    # -- state ------------------------------------------------------------------------------------

    def bytes_read(self) -> int:
        cur = self.stats.bytes_read if self.stats is not None else 0
        return cur + sum(s.bytes_read for s in self._closed_stats)

    def snapshot(self) -> LiveSnapshot:
        wa = self.window_analysis
        stages: dict[str, StageRow] = {}
        if wa is not None:
            for row in wa.stages.to_dict(orient="records"):
                stages[row["field"]] = StageRow(
                    row["field"], int(row["n"]), row["median"], row["p95"], 0, None, None
                )
        for name, sk in self.sketches.items():
            row = stages.get(name)
            if row is None:
                row = stages[name] = StageRow(name, 0, None, None, 0, None, None)
            row.run_n = sk.count
            row.run_median = sk.quantile(0.5)
            row.run_p95 = sk.quantile(0.95)
        order = {n: i for i, n in enumerate((*SKETCH_FIELDS, QUEUE_WAIT))}
        rows = sorted(stages.values(), key=lambda r: order.get(r.field, len(order)))
        spp = self._window_s_per_proof()
        source = "completions" if spp is not None else None
        if spp is None and wa is not None and wa.facts.s_per_proof is not None:
            spp, source = wa.facts.s_per_proof, "timeline"
        return LiveSnapshot(
            inputs=list(self.inputs),
            elapsed_s=self.clock() - self.started,
            lines=self.acc.lines_total,
            bytes_read=self.bytes_read(),
            malformed=self.acc.malformed,
            unattributed=self.acc.unattributed,
            era=self.asm.era.era,
            partitions=self.partitions,
            partitions_failed=self.partitions_failed,
            partitions_in_flight=sum(1 for c in self.asm.calls if not c.emitted),
            revised=self.revised,
            proofs_done=self.proofs_done,
            proofs_failed=self.proofs_failed,
            proofs_open=len(self._jobs),
            window_partitions=len(self.window),
            s_per_proof=spp,
            s_per_proof_source=source,
            gpu_util=wa.facts.gpu_util if wa is not None else None,
            kernel_util=wa.facts.kernel_util if wa is not None else None,
            stages=rows,
            findings=sorted(self.findings.values(), key=lambda f: (-int(f.severity), f.code)),
            records_kept=len(self.store),
            records_dropped=self.store.dropped,
            notices=list(self.notices),
        )

    def finish(self) -> Analysis:
        """End of input: flush the assembler and analyse every kept record, as ``analyze`` does."""
        self._close_source()
        self._final(self.ingest.finish())
        self._complete_jobs()
        if self._child_state == "busy":
            self._collect(wait=True)  # (the findings of a run in hand come before the last)
        self.stop_rules_child()
        if self._dirty:
            self.evaluate()  # the window's last state, for the final events and summary
        table = self.store.table(self.info, release=True)
        run = Run(table_to_frame(table), self.info, self.acc, list(self.inputs), table)
        return analyze_run(run, self.config, inputs=self.inputs)


def analyze_window(
    table: pa.Table, info: RunInfo, acc: Accounting, inputs: list[str], config: Config
) -> Analysis:
    """Facts and rules on a window's records (``LiveAnalyzer.evaluate``; in the rules' child
    too)."""
    run = Run(table_to_frame(table), info, acc, inputs, table)
    return analyze_run(run, config, inputs=inputs)


def _load_analysis() -> None:
    """The rules' child's first call, which does nothing: the child, unpickling it, imports
    this module and with it the analysis and pandas, before its first run is due."""


# -- reading the inputs -------------------------------------------------------------------------


class _FdStream:
    """An OS-level file descriptor read without Python's buffered objects.

    Reading stdin through ``sys.stdin.buffer`` from a helper thread can abort the interpreter at
    exit (the buffer's lock is held by the blocked read); ``os.read`` has no such lock. ``select``
    with a timeout lets the read notice ``stop``.
    """

    def __init__(self, fd: int, stop: threading.Event, *, owned: bool) -> None:
        self.fd = fd
        self.stop = stop
        self.owned = owned
        self._head = b""
        try:
            select.select([fd], [], [], 0)
            self._selectable = True
        except (OSError, ValueError):
            self._selectable = False

    def read1(self, n: int = 1 << 16) -> bytes:
        if self._head:
            head, self._head = self._head[:n], self._head[n:]
            return head
        return self._read_fd(n)

    def _read_fd(self, n: int) -> bytes:
        while not self.stop.is_set():
            if self._selectable:
                ready, _, _ = select.select([self.fd], [], [], 0.1)
                if not ready:
                    continue
            return os.read(self.fd, max(1, n))
        return b""

    def read(self, n: int = -1) -> bytes:
        return self.read1(n if n and n > 0 else 1 << 16)

    def readinto(self, buf: Any) -> int:
        data = self.read1(len(buf))
        buf[: len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True

    def peek_magic(self, n: int = 4) -> bytes:
        """The first ``n`` bytes (fewer at end of input), kept for the next read."""
        while len(self._head) < n:
            more = self._read_fd(n - len(self._head))
            if not more:
                break
            self._head += more
        return self._head[:n]

    def close(self) -> None:
        if self.owned:
            os.close(self.fd)


def _open_stream(
    name: str, follow: bool, stop: threading.Event, notice: Callable[[str], None]
) -> tuple[Any, str, Callable[[], None]]:
    """(binary stream with ``read1``, display name, close)."""
    if follow:
        ff = FollowFile(name, stop, notice=notice)
        return ff, name, ff.close
    if name == "-":
        display = "<stdin>"
        try:
            fd = sys.stdin.fileno()
        except (AttributeError, OSError, ValueError):
            # stdin replaced by an in-memory stream (tests, embedding): read it as it is.
            kind, stream = sniff_stream(sys.stdin.buffer)
            return _log_stream(stream, kind, display), display, lambda: None
        raw = _FdStream(fd, stop, owned=False)
    else:
        display = name
        with input_errors(name):
            fd = os.open(name, os.O_RDONLY)
        raw = _FdStream(fd, stop, owned=True)
    try:
        head = raw.peek_magic(MAGIC_BYTES)
        stream = _log_stream(raw, sniff(raw.peek_magic(sample_size(head))), display)
    except InputError:
        raw.close()
        raise
    return stream, display, raw.close


def _log_stream(raw: Any, kind: str, display: str) -> Any:
    """The log bytes of ``raw`` (decompressed or transcoded by ``kind``, ``sniff`` of its first
    bytes); a Parquet export is refused: live mode reads logs as they grow."""
    if kind == PARQUET:
        raise InputError(
            f"{display}: is a Parquet export, not a log; live mode (stdin, --follow, --live) reads "
            "logs only: give the export as a file to analyze"
        )
    return decoded(raw, kind)


class _InputQueue(queue.Queue[tuple[Any, ...]]):
    """The reader thread's queue of items for the main thread, counting the bytes of text it
    holds (``waiting``; kept under the queue's lock, as its items are)."""

    def _init(self, maxsize: int) -> None:
        super()._init(maxsize)
        self.waiting = 0

    def _put(self, item: tuple[Any, ...]) -> None:
        super()._put(item)
        if item[0] == "text":
            self.waiting += len(item[1])

    def _get(self) -> tuple[Any, ...]:
        item = super()._get()
        if item[0] == "text":
            self.waiting -= len(item[1])
        return item


def _read_inputs(
    names: Sequence[str],
    follow: bool,
    q: queue.Queue[tuple[Any, ...]],
    stop: threading.Event,
    opts: LiveOptions,
) -> None:
    """Reader thread: ("begin", stats) ("text", str)... ("end",) per input, then ("done",)."""

    def put(item: tuple[Any, ...]) -> bool:
        while True:
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                if stop.is_set():
                    return False

    def notice(text: str) -> None:
        put(("notice", text))

    try:
        for name in names:
            if stop.is_set():
                break
            stream, display, close = _open_stream(name, follow, stop, notice)
            stats = SourceStats(display)
            put(("begin", stats))
            try:
                for text in read_chunks(stream, stats, opts.chunk_size, follow=True):
                    if not put(("text", text)):
                        break
            except InputError as exc:
                if not stop.is_set():
                    put(("error", exc))
                    return
            finally:
                close()
            put(("end",))
    except InputError as exc:
        put(("error", exc))
    except OSError as exc:
        put(("error", InputError(str(exc))))
    except Exception as exc:  # handed to the main thread, which reports it
        put(("error", exc))
    finally:
        put(("done",))


#: The signals that end a live run with its final report (then exit 128 + the signal number).
END_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@dataclass(slots=True)
class _Interrupts:
    signum: int | None = None  # the first signal received
    count: int = 0


@contextmanager
def _interrupts(stop: threading.Event) -> Iterator[_Interrupts]:
    """SIGINT/SIGTERM/SIGHUP end the run gracefully (final report); a second one aborts."""
    state = _Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def handler(signum: int, frame: Any) -> None:
        state.count += 1
        if state.count > 1:
            raise KeyboardInterrupt
        state.signum = signum
        stop.set()

    old = {sig: signal.signal(sig, handler) for sig in END_SIGNALS}
    try:
        yield state
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


@dataclass(slots=True)
class LiveResult:
    """How a live run ended."""

    analysis: Analysis
    interrupted: bool
    records_dropped: int
    partitions: int
    snapshot: LiveSnapshot
    signal: int | None = None  # the signal that ended the run (SIGINT, SIGTERM, SIGHUP)
    output_closed: bool = False  # the sink's reader went away (a closed pipe)


def run_live(
    inputs: Sequence[str],
    config: Config,
    sink: Sink | None = None,
    options: LiveOptions | None = None,
    *,
    follow: bool = False,
) -> LiveResult:
    """Analyse ``inputs`` (paths, ``-``) as they grow until end of input or SIGINT/SIGTERM.

    With ``follow`` each path is followed as ``tail -F`` does (it never ends by itself).
    """
    opts = options or LiveOptions()
    sink = sink or ReportOnly()
    engine = LiveAnalyzer(config, sink, opts, inputs)
    if opts.rules_child:
        engine.rules_in_child()
    q = _InputQueue(maxsize=max(2, opts.queue_chunks))
    stop = threading.Event()
    reader = threading.Thread(
        target=_read_inputs,
        args=(list(inputs), follow, q, stop, opts),
        name="cuzk-diag-reader",
        daemon=True,
    )
    done = False
    try:
        with _interrupts(stop) as hits:
            sink.start()
            reader.start()
            while not done and not stop.is_set() and not sink.closed:
                try:
                    item: tuple[Any, ...] | None = q.get(timeout=opts.tick)
                except queue.Empty:
                    item = None
                if item is not None:
                    done = _handle(engine, q, item)
                engine.tick(idle=q.waiting < opts.behind_bytes)
                sink.flush()
            signum = hits.signum
            stop.set()
            # Take what the reader already has (it stops at its next read), then finish.
            deadline = time.monotonic() + 2.0
            while not done and time.monotonic() < deadline:
                try:
                    item = q.get(timeout=0.05)
                except queue.Empty:
                    continue
                done = _handle(engine, q, item)
            analysis = engine.finish()
            snap = engine.snapshot()
            sink.finish(StreamEnd(engine.info, engine.acc, analysis, snap))
            sink.flush()
    finally:
        stop.set()
        engine.stop_rules_child()
        sink.close()
    return LiveResult(
        analysis,
        signum is not None,
        engine.store.dropped,
        engine.partitions,
        snap,
        signum,
        sink.closed,
    )


def _handle(engine: LiveAnalyzer, q: queue.Queue[tuple[Any, ...]], item: tuple[Any, ...]) -> bool:
    """Process one reader item; True at end.

    A text item is joined with those waiting behind it, and with those that arrive within
    ``feed_wait`` seconds while the text is shorter than ``feed_min``: a pipe hands over 64 KiB
    at a time, and the parse and assembly of a piece have a fixed cost besides its lines' (a
    column group per line shape: a 64 KiB piece goes at a third of a 1 MiB one's speed,
    ``bench/piece_cost.py``)."""
    opts = engine.opts
    while item is not None:
        kind = item[0]
        if kind == "text":
            parts = [item[1]]
            size = len(item[1])
            nxt: tuple[Any, ...] | None = None
            until = time.monotonic() + opts.feed_wait
            while size < FEED_LIMIT:
                try:
                    wait = until - time.monotonic() if size < opts.feed_min else 0.0
                    nxt = q.get(timeout=wait) if wait > 0 else q.get_nowait()
                except queue.Empty:
                    nxt = None
                    break
                if nxt[0] != "text":
                    break
                parts.append(nxt[1])
                size += len(nxt[1])
                nxt = None
            engine.feed(parts[0] if len(parts) == 1 else b"".join(parts))
            if nxt is None:
                return False
            item = nxt
            continue
        if kind == "begin":
            engine.begin_source(engine.source + 1, item[1])
        elif kind == "end":
            engine.end_source()
        elif kind == "notice":
            engine.note(item[1])
        elif kind == "error":
            exc = item[1]
            raise exc if isinstance(exc, Exception) else InputError(str(exc))
        elif kind == "done":
            return True
        return False
    return False
