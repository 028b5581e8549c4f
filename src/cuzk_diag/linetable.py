"""Events -> the classified line table (one row per line), streamed in Arrow batches."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator

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
    """Group events into record batches of ``LINE_SCHEMA`` (columns built per batch)."""
    batch: list[Event] = []
    for ev in events:
        batch.append(ev)
        if len(batch) >= batch_rows:
            yield _batch(batch)
            batch = []
    if batch:
        yield _batch(batch)


_INT64 = 1 << 63


def _typed(values: list[object], typ: type) -> list[object]:
    return [v if type(v) is typ else None for v in values]


def _json_encoder() -> Callable[[object], str]:
    """``json.JSONEncoder(ensure_ascii=False).encode``, with the C encoder it makes on every
    call made once (half the cost a line; the same text)."""
    enc = json.JSONEncoder(ensure_ascii=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # a Python built without the _json accelerator
        return enc.encode
    c_encode = make(
        None,  # no cycle check: the fields of one line hold no containers
        enc.default,
        json.encoder.encode_basestring,
        None,
        enc.key_separator,
        enc.item_separator,
        enc.sort_keys,
        enc.skipkeys,
        enc.allow_nan,
    )
    return lambda obj: "".join(c_encode(obj, 0))


_dumps = _json_encoder()


def _batch(evs: list[Event]) -> pa.RecordBatch:
    dumps = _dumps
    fields = [e.fields for e in evs]
    offsets = _typed([f.get("offset_ms") for f in fields], int)
    cols = {
        "source": [e.source for e in evs],
        "line": [e.line for e in evs],
        "family": [e.family.value for e in evs],
        "event": [e.kind for e in evs],
        "malformed": [e.malformed for e in evs],
        "offset_ms": offsets,
        "job_id": _typed([f.get("job_id") for f in fields], str),
        "ts": _typed([f.get("ts") for f in fields], str),
        "level": _typed([f.get("level") for f in fields], str),
        "fields": [dumps(f) if f else None for f in fields],
    }
    try:
        return pa.RecordBatch.from_pydict(cols, schema=LINE_SCHEMA)
    except OverflowError:
        # An offset beyond int64 (a TIMELINE line with 25 digits): null in the column, as a
        # value of another type is; the ``fields`` text keeps it.
        cols["offset_ms"] = [
            v if isinstance(v, int) and -_INT64 <= v < _INT64 else None for v in offsets
        ]
        return pa.RecordBatch.from_pydict(cols, schema=LINE_SCHEMA)
