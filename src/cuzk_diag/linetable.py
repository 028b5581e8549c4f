"""Events -> the classified line table (one row per line), streamed in Arrow batches."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

import pyarrow as pa

from cuzk_diag.records import Event

#: One row per input line (plus one per line that tore a TIMELINE line, at the same number).
LINE_SCHEMA = pa.schema(
    [
        pa.field("source", pa.int32()),
        pa.field("line", pa.int64()),
        pa.field("family", pa.string()),
        pa.field("event", pa.string()),
        pa.field("malformed", pa.bool_()),
        pa.field("offset_ms", pa.int64()),  # TIMELINE offset
        pa.field("job_id", pa.string()),
        pa.field("ts", pa.string()),  # tracing timestamp
        pa.field("level", pa.string()),
        pa.field("fields", pa.string()),  # JSON object of every parsed field
    ]
)

BATCH_ROWS = 65536


def iter_line_batches(
    events: Iterable[Event], batch_rows: int = BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """Group events into record batches of ``LINE_SCHEMA``."""
    cols: dict[str, list[object]] = {name: [] for name in LINE_SCHEMA.names}
    src, line, fam, kind, bad = (
        cols["source"],
        cols["line"],
        cols["family"],
        cols["event"],
        cols["malformed"],
    )
    off, job, ts, level, fields = (
        cols["offset_ms"],
        cols["job_id"],
        cols["ts"],
        cols["level"],
        cols["fields"],
    )
    dumps = json.dumps
    n = 0
    for ev in events:
        f = ev.fields
        src.append(ev.source)
        line.append(ev.line)
        fam.append(ev.family.value)
        kind.append(ev.kind)
        bad.append(ev.malformed)
        o = f.get("offset_ms")
        off.append(o if isinstance(o, int) else None)
        j = f.get("job_id")
        job.append(j if isinstance(j, str) else None)
        t = f.get("ts")
        ts.append(t if isinstance(t, str) else None)
        lv = f.get("level")
        level.append(lv if isinstance(lv, str) else None)
        fields.append(dumps(f, ensure_ascii=False) if f else None)
        n += 1
        if n >= batch_rows:
            yield pa.RecordBatch.from_pydict(cols, schema=LINE_SCHEMA)
            for v in cols.values():
                v.clear()
            n = 0
    if n:
        yield pa.RecordBatch.from_pydict(cols, schema=LINE_SCHEMA)
