"""Parsed chunks -> the classified line table (one row per line), a table per chunk."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cuzk_diag.ingest.parse import ParsedChunk
from cuzk_diag.ingest.parse.classify import utf8_bytes
from cuzk_diag.ingest.parse.columnar import Group
from cuzk_diag.ingest.parse.scan import COMPILED, TextGather, join_rows, json_escaped
from cuzk_diag.jsontext import encoder
from cuzk_diag.records import Accounting, Event, is_int64
from cuzk_diag.sources import Source

Progress = Callable[[int], None]

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
#: The columns of few distinct values, dictionary-encoded in Parquet. The others hold mostly
#: one value per line (line numbers, offsets, timestamps, fields), whose dictionary would be as
#: large as the values: written plain, the 250 MB log's table took 1.02-1.13 s to write instead
#: of 1.31-1.42 s, and its file 30.0 MB instead of 36.8 MB.
LINE_DICTIONARY = ("source", "family", "event", "level", "job_id")


def iter_line_tables(
    inputs: Iterable[str | Source],
    acc: Accounting,
    *,
    progress: Progress | None = None,
    jobs: int = 1,
) -> Iterator[pa.Table]:
    """The line table of the inputs, a table per chunk read (``acc`` is filled as it goes;
    ``progress(n)`` gets the bytes read). With ``jobs`` > 1 the chunks are parsed by that many
    processes (``ingest.pool``); the tables are the same."""
    from cuzk_diag.ingest.pool import map_parts

    for _idx, table, size in map_parts(inputs, acc, chunk_lines, full=True, jobs=jobs):
        if table.num_rows:
            yield table
        if progress is not None and size:
            progress(size)


def chunk_lines(part: ParsedChunk) -> pa.Table:
    """The rows of one parsed chunk, in line order: the lines of a fixed form straight from
    their columns (``_group_rows``), the others from their events (``_batch``). Each column
    is put together once from the pieces of every group and the events, and put in line order
    (numpy for the numbers; the texts gathered from their pieces, ``scan.TextGather``, or in
    the pure build one ``take`` of the concatenated texts)."""
    cleared = np.array(part.cleared, dtype=np.int64)
    pieces: list[dict[str, Any]] = []
    order: list[np.ndarray] = []
    for g in part.groups:
        keep = ~np.isin(g.rows, cleared) if len(cleared) else None
        pieces.append(_group_rows(g, keep))
        order.append(g.rows if keep is None else g.rows[keep])
    events, rows = part.others()
    if events:
        batch = _batch(events)
        pieces.append({name: batch.column(name) for name in LINE_SCHEMA.names})
        order.append(np.array(rows, dtype=np.int64))
    if not pieces:
        return LINE_SCHEMA.empty_table()
    at = _line_order(np.concatenate(order)) if len(pieces) > 1 else None
    sizes = [len(p["line"]) for p in pieces]
    columns: dict[str, pa.Array] = {}
    gather = TextGather(sizes, at)
    for name in LINE_SCHEMA.names:
        typ = LINE_SCHEMA.field(name).type
        if name in ("source", "line", "malformed"):
            values = np.concatenate(
                [
                    _numbers(p.get(name, part.source), typ, size)
                    for p, size in zip(pieces, sizes, strict=True)
                ]
            )
            columns[name] = pa.array(values if at is None else values[at], typ)
        else:
            # (A text column gathered straight from its pieces by the compiled loop: each text
            # copied once, where the concatenation and the take copied it twice.)
            got = gather.texts([p[name] for p in pieces]) if typ == pa.string() else None
            if got is None:
                col = pa.concat_arrays(
                    [_piece(p[name], size, typ) for p, size in zip(pieces, sizes, strict=True)]
                )
                got = col if at is None else col.take(at)
            columns[name] = got
    return pa.table(columns, schema=LINE_SCHEMA)


def _line_order(rows: np.ndarray) -> np.ndarray:
    """``np.argsort(rows, kind="stable")``: where each row of the line order stands among
    ``rows``. Where ``rows`` holds each of 0 to its length - 1 once (most chunks: every
    selected line in one group or among the other events), that is the inverse permutation,
    made by one store instead of a sort."""
    n = len(rows)
    if n and rows.min() >= 0 and rows.max() < n and np.bincount(rows, minlength=n).max() == 1:
        at = np.empty(n, dtype=np.int64)
        at[rows] = np.arange(n, dtype=np.int64)
        return at
    return np.argsort(rows, kind="stable")


def _numbers(piece: Any, typ: pa.DataType, n: int) -> np.ndarray:
    """A piece of the ``source``, ``line`` or ``malformed`` column (none has a null) as ``n``
    numpy values: an array's, or a value every row has."""
    dtype = typ.to_pandas_dtype()
    if isinstance(piece, int):
        return np.full(n, piece, dtype=dtype)
    if isinstance(piece, np.ndarray):
        return piece
    return np.asarray(piece.to_numpy(zero_copy_only=False), dtype=dtype)


def _piece(piece: Any, n: int, typ: pa.DataType) -> pa.Array:
    """A piece of a column as an array of ``n`` rows: a text every row has, or none (nulls)."""
    if piece is None:
        return pa.nulls(n, typ)
    if isinstance(piece, str):
        return _repeat(piece, n)
    return piece


#: A character JSON escapes in a string (``json.encoder.encode_basestring``).
_JSON_ESCAPED_RE2 = r'["\\\x00-\x1f]'
#: The bytes of those characters (all ASCII: a byte of a longer UTF-8 character is >= 0x80).
_QUOTE, _BACKSLASH, _CONTROL_BELOW = ord('"'), ord("\\"), 0x20


def _json_escapes_in(col: pa.Array) -> bool:
    """Does any text of the string column ``col`` hold a character JSON escapes? One loop over
    the texts' bytes (``scan.json_escaped``; in the pure build numpy's passes over them), far
    cheaper than the regex over each text, which then finds the rows only where the answer is
    yes."""
    b = np.frombuffer(utf8_bytes(col), dtype=np.uint8)
    if COMPILED:
        return json_escaped(b.data)
    return bool(((b < _CONTROL_BELOW) | (b == _QUOTE) | (b == _BACKSLASH)).any())


def _group_rows(g: Group, keep: np.ndarray | None) -> dict[str, Any]:
    """The rows of a column group (``keep``: which of its rows), a piece of each column of
    ``LINE_SCHEMA`` but ``source`` (``chunk_lines``: an array, or a text every row has, or
    None for nulls); the ``fields`` JSON text is put together by ``join_rows``, as ``_dumps``
    would write it, except for rows with a text value that JSON escapes (a quote, a
    backslash, a control character), which ``_dumps`` writes."""
    mask = pa.array(keep) if keep is not None else None
    cols = [c.filter(mask) if mask is not None and isinstance(c, pa.Array) else c for c in g.cols]
    lines = g.lines if keep is None else g.lines[keep]
    kind = g.kind if isinstance(g.kind, str) or mask is None else g.kind.filter(mask)
    n = len(lines)
    pieces: list[Any] = []  # texts (the same in every row) and columns, in turn

    def put(piece: Any) -> None:
        if isinstance(piece, str) and pieces and isinstance(pieces[-1], str):
            pieces[-1] += piece
        else:
            pieces.append(piece)

    escaped = None
    for i, (name, col) in enumerate(zip(g.names, cols, strict=True)):
        put(("{" if i == 0 else ", ") + _dumps(name) + ": ")
        if not isinstance(col, pa.Array):
            put(_dumps(col))
        elif pa.types.is_integer(col.type):
            put(col)  # (written in decimal: ``join_rows``)
        else:
            put('"')
            put(col)
            put('"')
            if _json_escapes_in(col):  # (rarely: then which rows, by the regex)
                hit = pc.match_substring_regex(col, _JSON_ESCAPED_RE2)
                escaped = hit if escaped is None else pc.or_(escaped, hit)
    put("}")
    text: pa.Array | str
    if len(pieces) == 1:  # a form whose values are all words (``prestage_setup=skip_vram``)
        text = pieces[0]
    else:
        text = join_rows(pieces, n)
    if escaped is not None and pc.any(escaped).as_py():
        rows = pc.indices_nonzero(escaped)
        values = [
            c.take(rows).to_pylist() if isinstance(c, pa.Array) else [c] * len(rows) for c in cols
        ]
        exact = [_dumps(dict(zip(g.names, row, strict=True))) for row in zip(*values, strict=True)]
        text = pc.replace_with_mask(text, escaped, pa.array(exact, pa.string()))

    def column(name: str, typ: pa.DataType) -> pa.Array | str | None:
        if name in g.names:
            col = cols[g.names.index(name)]
            if isinstance(col, pa.Array) and col.type == typ:
                return col
            if isinstance(col, str) and typ == pa.string():
                return col
        return None

    return {
        "line": np.asarray(lines, dtype=np.int64),
        "family": g.family.value,
        "event": kind,
        "malformed": False,
        "offset_ms": column("offset_ms", pa.int64()),
        "job_id": column("job_id", pa.string()),
        "ts": column("ts", pa.string()),
        "level": column("level", pa.string()),
        "fields": text,
    }


def _repeat(text: str, n: int) -> pa.StringArray:
    """A text column of ``n`` rows of ``text`` (made in C, not from a list of ``n`` texts)."""
    return pa.repeat(pa.scalar(text, pa.string()), n)


def _typed(values: list[object], typ: type) -> list[object]:
    return [v if type(v) is typ else None for v in values]


_dumps = encoder()


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
        cols["offset_ms"] = [v if is_int64(v) else None for v in offsets]
        return pa.RecordBatch.from_pydict(cols, schema=LINE_SCHEMA)
