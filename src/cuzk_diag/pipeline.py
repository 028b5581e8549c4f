"""Parse + assemble: inputs -> ``Run`` (partition frame, run info, accounting)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cuzk_diag.assemble import Assembler
from cuzk_diag.errors import InputError
from cuzk_diag.frame import records_to_table, table_to_frame
from cuzk_diag.lines import iter_events
from cuzk_diag.records import PARTITION_SCHEMA, Accounting, RunInfo
from cuzk_diag.sinks import Sink, StreamEnd

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


def iter_records(
    inputs: Sequence[str],
    acc: Accounting,
    info: RunInfo,
    progress: Callable[[int], None] | None = None,
    on_segment: Callable[[int], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Partition records (dicts of ``PARTITION_SCHEMA`` columns) one by one, as they complete.

    ``on_segment(n)`` is called once the records of a clock segment are out and TIMELINE
    offsets restart (the engine restarted, or the next input began).
    """
    asm = Assembler(acc, info)
    for ev in iter_events(inputs, acc, full=False, progress=progress):
        segment = asm.segment
        out = asm.feed(ev)
        yield from out
        if on_segment is not None and asm.segment != segment:
            on_segment(asm.segment)
    yield from asm.finish()


def iter_record_batches(
    inputs: Sequence[str],
    acc: Accounting,
    info: RunInfo,
    progress: Callable[[int], None] | None = None,
) -> Iterator[pa.Table]:
    """Partition records as Arrow tables of up to BATCH rows, in completion order.

    Memory holds one batch of dicts at a time; ``info`` and ``acc`` are complete once the
    iterator is exhausted (the era of the first batches may be refined by later lines).
    """
    pending: list[dict[str, Any]] = []
    for rec in iter_records(inputs, acc, info, progress):
        pending.append(rec)
        if len(pending) >= BATCH:
            yield records_to_table(pending)
            pending = []
    yield records_to_table(pending)


def stream_records(
    inputs: Sequence[str],
    sink: Sink,
    *,
    acc: Accounting | None = None,
    info: RunInfo | None = None,
    progress: Callable[[int], None] | None = None,
) -> StreamEnd:
    """Drive ``sink`` over the inputs: ``start``, ``record`` per completed call, ``finish``.

    The inputs are read once; memory holds what the sink keeps, not the records.
    """
    acc = acc if acc is not None else Accounting()
    info = info if info is not None else RunInfo()
    sink.start()
    try:
        for rec in iter_records(inputs, acc, info, progress, on_segment=lambda _: sink.segment()):
            sink.record(rec)
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


def finish_table(tables: Sequence[pa.Table], info: RunInfo) -> pa.Table:
    """The last step of every path: one table, the run's final era, lock-acquisition order."""
    table = pa.concat_tables(tables) if tables else PARTITION_SCHEMA.empty_table()
    if table.num_rows:
        table = with_final_era(table, info).sort_by([("record", "ascending")])
    return table


def assemble_table(
    inputs: Sequence[str], progress: Callable[[int], None] | None = None
) -> tuple[pa.Table, RunInfo, Accounting]:
    """Stream the inputs through the parser and the assembler into one Arrow table.

    Records are turned into Arrow batches as they complete, so memory holds columns, not
    millions of dicts; rows come out in lock-acquisition order.
    """
    acc = Accounting()
    info = RunInfo()
    table = finish_table(list(iter_record_batches(inputs, acc, info, progress)), info)
    return table, info, acc


def load_run(inputs: Sequence[str] | str, progress: Callable[[int], None] | None = None) -> Run:
    """Parse and assemble the inputs (paths, ``-`` for stdin, .gz/.zst) into a ``Run``."""
    names = [inputs] if isinstance(inputs, str) else list(inputs)
    if not names:
        raise InputError("no input given")
    table, info, acc = assemble_table(names, progress)
    return Run(table_to_frame(table), info, acc, names, table)


def run_metadata_of(info: RunInfo, acc: Accounting) -> dict[bytes, bytes]:
    """Schema metadata that lets a Parquet export stand in for its log."""
    return {
        META_INFO: json.dumps(info.to_dict(), default=str).encode(),
        META_ACCOUNTING: json.dumps(acc.to_dict(), default=str).encode(),
    }


def read_export(path: str) -> Run:
    """Rebuild a ``Run`` from a Parquet partition export (a baseline kept without its log)."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"{path}: not a readable Parquet export ({exc})") from None
    missing = [n for n in PARTITION_SCHEMA.names if n not in table.column_names]
    if missing:
        raise InputError(
            f"{path}: not a cuzk-diag partition export (missing columns: {', '.join(missing[:5])})"
        )
    meta = dict(table.schema.metadata or {})
    try:
        # Written at the end of a streamed export, so it sits in the file's key-value metadata.
        meta.update(pq.read_metadata(path).metadata or {})
    except (OSError, pa.ArrowInvalid):
        pass
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
    table = table.select(PARTITION_SCHEMA.names).cast(PARTITION_SCHEMA)
    return Run(table_to_frame(table), info, acc, [path], table)


def is_parquet(path: str) -> bool:
    if path == "-":
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False
