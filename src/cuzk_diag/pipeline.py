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
from cuzk_diag.sources import PARQUET, Source, open_source

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


def iter_record_batches(
    inputs: Sequence[str | Source],
    acc: Accounting,
    info: RunInfo,
    progress: Callable[[int], None] | None = None,
) -> Iterator[pa.Table]:
    """Partition records as Arrow tables of up to BATCH rows, in completion order.

    Memory holds one batch of dicts at a time; ``info`` and ``acc`` are complete once the
    iterator is exhausted (the era of the first batches may be refined by later lines).
    """
    asm = Assembler(acc, info)
    pending: list[dict[str, Any]] = []
    for ev in iter_events(inputs, acc, full=False, progress=progress):
        out = asm.feed(ev)
        if out:
            pending.extend(out)
            if len(pending) >= BATCH:
                yield records_to_table(pending)
                pending = []
    pending.extend(asm.finish())
    yield records_to_table(pending)


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
    inputs: Sequence[str | Source], progress: Callable[[int], None] | None = None
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
    """Parse and assemble the inputs (paths, ``-`` for stdin, .gz/.zst) into a ``Run``.

    A Parquet partition export (recognised by its magic bytes, whatever its name) stands in
    for its log; it must then be the only input.
    """
    names = [inputs] if isinstance(inputs, str) else list(inputs)
    if not names:
        raise InputError("no input given")
    sources = open_sources(names)
    export = parquet_source(sources)
    if export is not None:
        return read_export(export)
    table, info, acc = assemble_table(sources, progress)
    return Run(table_to_frame(table), info, acc, names, table)


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


def read_export(source: str | Source) -> Run:
    """Rebuild a ``Run`` from a Parquet partition export (a baseline kept without its log).

    ``source`` is a path or an opened ``Source``; one that is not a regular file (a pipe, a
    FIFO, stdin) is read into memory, since Parquet keeps its index at the end of the file.
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
        table = pq.read_table(data)
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
        meta.update(pq.read_metadata(data).metadata or {})
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
