"""Partition records -> one pyarrow Table / pandas DataFrame with the declared schema.

The records' tables need only pyarrow; pandas is imported when a frame is first made
(``_pandas``), so that a process that only makes tables (a child of ``--jobs``) spares its
import, about a third of a second.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from cuzk_diag.heap import hand_back, zeroed
from cuzk_diag.records import (
    EXACT_INT,
    PARTITION_COLUMNS,
    PARTITION_SCHEMA,
    Accounting,
    is_int64,
)

if TYPE_CHECKING:
    import pandas as pd

_INT_COLS = [name for name, typ in PARTITION_COLUMNS if pa.types.is_integer(typ)]
_FLOAT_COLS = [name for name, typ in PARTITION_COLUMNS if pa.types.is_floating(typ)]
_STR_COLS = [name for name, typ in PARTITION_COLUMNS if pa.types.is_string(typ)]


_NONE = type(None)
#: The value types each column takes as they are (anything else goes through ``_fit``), the
#: most common first (a test of a type in a tuple compares identities, in order).
_FITS: dict[str, tuple[type, ...]] = {
    **{k: (int, _NONE) for k in _INT_COLS},
    **{k: (float, int, _NONE) for k in _FLOAT_COLS},
    **{k: (str, _NONE) for k in _STR_COLS},
}


def _coerce(rec: dict[str, Any]) -> dict[str, Any]:
    """Make each value fit its column; a value that does not is moved to ``extra``. (A record
    whose values all fit, as the assembler's do, is returned as it is.)"""
    fits = _FITS.get
    for k, v in rec.items():
        ok = fits(k)
        if ok is not None and type(v) not in ok:
            return _fit(rec)
    return rec


def _fit(rec: dict[str, Any]) -> dict[str, Any]:
    """``_coerce`` value by value: an integer column takes an int64 (or a float with such an
    integer value), a float column a number (an int only within a double's exact range), a
    text column the text of any value; any other value goes to ``extra`` as ``invalid_<col>``."""
    bad: dict[str, Any] = {}
    out = dict(rec)
    for k in _INT_COLS:
        v = out.get(k)
        if v is None:
            continue
        if isinstance(v, float) and v.is_integer():
            v = out[k] = int(v)
        if not is_int64(v):
            bad[k] = rec[k]
            out[k] = None
    for k in _FLOAT_COLS:
        v = out.get(k)
        if v is not None and (
            not isinstance(v, int | float)
            or (isinstance(v, int) and not -EXACT_INT <= v <= EXACT_INT)
        ):
            bad[k] = v
            out[k] = None
    for k in _STR_COLS:
        v = out.get(k)
        if v is not None and not isinstance(v, str):
            out[k] = str(v)
    if bad:
        extra = json.loads(out["extra"]) if out.get("extra") else {}
        extra.update({f"invalid_{k}": v for k, v in bad.items()})
        out["extra"] = json.dumps(extra, sort_keys=True)
    return out


def records_to_table(records: Iterable[dict[str, Any]]) -> pa.Table:
    """Build the partition table; every column of ``PARTITION_SCHEMA``, in order (the columns
    without a value shared, ``share_nulls``).

    Records whose values are of their columns' types go in as they are, and a record that holds
    a value of another type goes through ``_fit`` (``_coerce``); when one holds a value Arrow
    cannot take (an integer beyond int64, say, from a line with 25 digits), every record of the
    batch goes through ``_fit``."""
    rows = list(records)
    # (Where ``_filled_columns`` refuses a batch, ``_columns`` with its check would refuse it
    # too, or, for an integer beyond int64, take it and leave it to ``_fit`` below: either way
    # the batch goes the path after it, so the check is not made twice.)
    columns = _filled_columns(rows) if COMPILED else _columns(rows, check=True)
    if columns is None:
        rows = [_coerce(r) for r in rows]
        columns = _columns(rows, check=False)
    try:
        table = pa.Table.from_arrays(columns, schema=PARTITION_SCHEMA)
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
        columns = _columns([_fit(r) for r in rows], check=False)
        table = pa.Table.from_arrays(columns, schema=PARTITION_SCHEMA)
    return share_nulls(table)


def _columns(rows: list[dict[str, Any]], *, check: bool) -> list[Any] | None:
    """The columns of ``PARTITION_SCHEMA`` over ``rows`` as ``pa.Table.from_pylist`` reads
    them (a value list each), made in one pass over each record's items (``from_pylist`` looks
    every column up in every record, twice), and a column without a value as the shared
    all-null array (``null_array``: no list of nulls for Arrow to read). With ``check``, None
    when a value is not of its column's types (``_FITS``, as ``_coerce`` checks them)."""
    n = len(rows)
    # Per column: its values, the types it takes as they are (None: any), whether it has one.
    cols: dict[str, list[Any]] = {
        name: [[None] * n, _FITS.get(name), False] for name, _ in PARTITION_COLUMNS
    }
    for i in range(n):  # (compiled, ``i`` is then a C integer)
        for k, v in rows[i].items():
            col = cols.get(k)
            if col is None or v is None:
                continue  # (a key that is no column, left as ``from_pylist`` leaves it; or None)
            ok = col[1]
            if check and ok is not None and type(v) not in ok:
                return None
            col[0][i] = v
            col[2] = True
    return [
        values if has or not n else null_array(typ, n)
        for (values, _, has), (_, typ) in zip(cols.values(), PARTITION_COLUMNS, strict=True)
    ]


#: This module runs compiled (its file is an extension module): ``records_to_table`` then
#: takes the records' values through ``_fill``, a C loop, before ``_columns``.
COMPILED = not __file__.endswith(".py")
#: Each column's slot for ``_fill``: an int64 column's row of the integer matrix (0, 1, ...),
#: any other column's list of values, counted down from -1.
_INT64_COLS = [name for name, typ in PARTITION_COLUMNS if typ == pa.int64()]
_OBJ_COLS = [name for name, typ in PARTITION_COLUMNS if typ != pa.int64()]
_SLOTS: dict[str, int] = {
    **{name: i for i, name in enumerate(_INT64_COLS)},
    **{name: -1 - j for j, name in enumerate(_OBJ_COLS)},
}
#: The value types the other columns take as they are (``_FITS``; None: any).
_OBJ_FITS: list[tuple[type, ...] | None] = [_FITS.get(name) for name in _OBJ_COLS]


def _filled_columns(rows: list[dict[str, Any]]) -> list[Any] | None:
    """``_columns(rows, check=True)`` with the integer columns as Arrow arrays made from the
    matrix ``_fill`` wrote, each copied into Arrow's pool (``_pooled``), where Arrow read a
    list of ints at ~300 instructions a value;
    None when a value is not of its column's types, or an integer does not fit in an int64
    (then ``_columns`` and ``_fit`` take the batch, as without this step)."""
    n = len(rows)
    if not n:
        return None
    ints = np.zeros((len(_INT64_COLS), n), dtype=np.int64)
    seen = np.zeros((len(_INT64_COLS), n), dtype=np.uint8)
    objs: list[list[Any]] = [[None] * n for _ in _OBJ_COLS]
    has = np.zeros(len(_OBJ_COLS), dtype=np.uint8)
    if not _fill(rows, _SLOTS, ints, seen, objs, has, _OBJ_FITS):
        return None
    counts = seen.sum(axis=1, dtype=np.int64).tolist()
    out: list[Any] = []
    for name, typ in PARTITION_COLUMNS:
        slot = _SLOTS[name]
        if slot < 0:
            out.append(objs[-1 - slot] if has[-1 - slot] else null_array(typ, n))
            continue
        k = counts[slot]
        if not k:
            out.append(null_array(typ, n))
            continue
        # (A copy of the column's row: the matrix, rows of empty columns included, is freed.)
        data = _pooled(ints[slot])
        valid = None if k == n else _pooled(np.packbits(seen[slot], bitorder="little"))
        out.append(pa.Array.from_buffers(typ, n, [valid, data], null_count=n - k))
    return out


def _pooled(values: np.ndarray) -> pa.Buffer:
    """A copy of ``values`` in Arrow's memory pool, where the columns Arrow makes itself live:
    the tables of a long log are held until the frame, and on numpy's buffers (the C heap) they
    left the heap fragmented after the frame took them (1 GB log: the frame's step peaked at
    509 MiB and the analysis's at 527, against 459 and 465)."""
    buf = pa.allocate_buffer(values.nbytes)
    np.frombuffer(buf, dtype=values.dtype)[:] = values
    return buf


def _fill(
    rows: list[dict[str, Any]],
    slots: dict[str, int],
    ints: np.ndarray,
    seen: np.ndarray,
    objs: list[list[Any]],
    has: np.ndarray,
    fits: list[tuple[type, ...] | None],
) -> bool:
    """Each record's values into its columns (``slots``): an int64 column's into ``ints``,
    marked in ``seen``, any other's into its list in ``objs``, marked in ``has``. False at the
    first value that is not of its column's types (``fits``, as ``_columns`` checks them) or an
    integer beyond int64. (Compiled, a C loop over the records' items; keys that are no
    column, and None, are left, as ``_columns`` leaves them.)

    The records of one assembly hold their keys in a few orders (one for 99 % of them on a
    simulated log): each item's slot is taken from the record before where the key at its
    position is the same object, and looked up in ``slots`` (a dict lookup, about a third of
    an item's cost) where it is not."""
    keys: list[Any] = [None] * _POSITIONS  # the key each position held in the last record
    at: list[Any] = [None] * _POSITIONS  # and its slot (None: no column)
    for i in range(len(rows)):
        p = 0
        for k, v in rows[i].items():
            if p < _POSITIONS:
                if keys[p] is k:
                    slot = at[p]
                else:
                    slot = at[p] = slots.get(k)
                    keys[p] = k
                p += 1
            else:
                slot = slots.get(k)
            if v is None or slot is None:
                continue
            c = slot
            if c >= 0:
                if type(v) is not int:
                    return False
                try:
                    x = v  # (compiled: a C integer, which raises here for a larger one)
                    ints[c, i] = x  # (run as Python: numpy raises here)
                except OverflowError:
                    return False
                seen[c, i] = 1
            else:
                j = -1 - c
                ok = fits[j]
                if ok is not None and type(v) not in ok:
                    return False
                objs[j][i] = v
                has[j] = 1
    return True


#: The positions of a record's items ``_fill`` remembers the slots of (a record holds about
#: 50 items; the schema's columns, and ``extra``, are 73).
_POSITIONS = 96


#: All-null arrays by (type, length), made once: see ``share_nulls``.
_NULLS: dict[tuple[pa.DataType, int], pa.Array] = {}
_NULLS_HELD = 64  # lengths vary little (batches of a fixed size, the last ones shorter)


def null_array(typ: pa.DataType, n: int) -> pa.Array:
    """An array of ``n`` nulls of type ``typ``, the same one for every caller (Arrow arrays
    are immutable, so columns can share it)."""
    key = (typ, n)
    arr = _NULLS.get(key)
    if arr is None:
        if len(_NULLS) >= _NULLS_HELD:
            _NULLS.clear()
        arr = _NULLS[key] = pa.nulls(n, typ)
    return arr


def empty_columns(table: pa.Table) -> list[int]:
    """Positions of the columns of ``table`` that hold no value (none when it has no rows)."""
    n = table.num_rows
    return [i for i, col in enumerate(table.columns) if col.null_count == n] if n else []


def share_nulls(table: pa.Table) -> pa.Table:
    """``table`` with each column that holds no value (the fields of other code versions: 21 of
    the 73 on a main-era log) replaced by the one shared all-null array of its
    type and length (``null_array``): a column of nulls otherwise takes as much memory as one
    of values (8 bytes a row for an integer)."""
    n = table.num_rows
    empty = empty_columns(table)
    if not empty:
        return table
    columns = table.columns
    for i in empty:
        columns[i] = null_array(columns[i].type, n)
    return pa.Table.from_arrays(columns, schema=table.schema)


#: How ``_fit`` names a value it moved to ``extra``, as the JSON text of ``extra`` holds it.
_INVALID_KEY = '"invalid_'
_COLUMNS = frozenset(PARTITION_SCHEMA.names)


def note_invalid(table: pa.Table, acc: Accounting) -> None:
    """Count in ``acc`` every value of ``table``'s records that did not fit its column (``_fit``
    moved it to ``extra`` as ``invalid_<column>`` and left the column null), and the first
    line of each record that holds one. One kernel looks for the key in the ``extra`` texts;
    only those that hold it are read."""
    extra = table.column("extra")
    if extra.null_count == len(extra):
        return
    import pyarrow.compute as pc

    hits = pc.match_substring(extra, _INVALID_KEY).fill_null(False)
    if not pc.any(hits).as_py():
        return
    rows = np.flatnonzero(hits.to_numpy(zero_copy_only=False))
    firsts = table.column("first_line").take(rows).to_pylist()
    for text, first in zip(extra.take(rows).to_pylist(), firsts, strict=True):
        try:
            keys = json.loads(text)
        except ValueError:
            continue
        if isinstance(keys, dict):
            n = sum(1 for k in keys if k.startswith("invalid_") and k[8:] in _COLUMNS)
            if n:
                acc.note_invalid(first, n)


class RecordBatches:
    """Records in order, taken one by one (dicts) or already as tables (``records_to_table`` of
    them, made by another process: their empty columns shared, as ``PackedTable.unpack`` gives
    them), given back as tables of ``size`` rows: ``add`` and
    ``add_table`` return the batches they completed, ``rest`` what is left. Each record is
    taken once, so its values that did not fit their columns are counted here
    (``note_invalid``), in ``counts``: the accounting given, else one of its own, which the
    owner adds to the run's at its end."""

    def __init__(self, size: int, counts: Accounting | None = None) -> None:
        self.size = size
        self.counts = counts if counts is not None else Accounting()
        self._pending: list[dict[str, Any]] = []  # records taken one by one, after ``_tables``
        self._tables: list[pa.Table] = []
        self._held = 0  # rows in ``_tables``

    @property
    def rows(self) -> int:
        """Records taken and not yet given back."""
        return self._held + len(self._pending)

    def add(self, record: dict[str, Any]) -> list[pa.Table]:
        self._pending.append(record)
        return self._batches(whole=True) if self.rows >= self.size else []

    def add_table(self, table: pa.Table) -> list[pa.Table]:
        self._tabled()
        note_invalid(table, self.counts)
        self._tables.append(table)
        self._held += table.num_rows
        return self._batches(whole=True)

    def rest(self) -> list[pa.Table]:
        return self._batches(whole=False)

    def _tabled(self) -> None:
        if self._pending:
            table = records_to_table(self._pending)
            note_invalid(table, self.counts)
            self._tables.append(table)
            self._held += len(self._pending)
            self._pending = []

    def _batches(self, *, whole: bool) -> list[pa.Table]:
        """The held rows in batches of ``size``; the rest too (shorter) unless ``whole``."""
        self._tabled()
        if not self._held:
            return []
        table = pa.concat_tables(self._tables)
        n = table.num_rows - table.num_rows % self.size if whole else table.num_rows
        out = [table.slice(lo, min(self.size, n - lo)) for lo in range(0, n, self.size)]
        rest = table.slice(n)
        self._tables, self._held = ([rest] if rest.num_rows else []), rest.num_rows
        return out


def _pandas() -> Any:
    """The pandas module (imported on the first call)."""
    import pandas

    return pandas


def _types_mapper(t: pa.DataType) -> Any:
    pd = _pandas()
    if pa.types.is_integer(t):
        return pd.Int64Dtype()
    if pa.types.is_floating(t):
        return pd.Float64Dtype()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pd.StringDtype()
    return None


def table_to_frame(table: pa.Table) -> pd.DataFrame:
    """pandas view with nullable dtypes (Int64, Float64, string) so missing stays missing.

    The columns without a value share one series per type (``_NullSeries``)."""
    n = table.num_rows
    empty = set(empty_columns(table))
    if not empty:
        return table.to_pandas(types_mapper=_types_mapper)
    names = table.column_names
    rest = table.drop_columns([names[i] for i in empty]).to_pandas(types_mapper=_types_mapper)
    nulls = _NullSeries(n)
    return _pandas().DataFrame(
        {
            name: nulls.of(table.schema.field(i).type) if i in empty else rest[name]
            for i, name in enumerate(names)
        },
        copy=False,
    )


@dataclass(frozen=True)
class PackedTable:
    """A partition table as sent to another process: without its columns that hold no value
    (pickled, each would take 8 bytes a row again, as if it were not shared); ``unpack``
    restores them as shared arrays (``null_array``)."""

    table: pa.Table  # the columns with a value
    schema: pa.Schema  # the table's whole schema
    rows: int

    @classmethod
    def of(cls, table: pa.Table) -> PackedTable:
        names = table.column_names
        empty = [names[i] for i in empty_columns(table)]
        return cls(table.drop_columns(empty), table.schema, table.num_rows)

    def unpack(self) -> pa.Table:
        have = set(self.table.column_names)
        return pa.Table.from_arrays(
            [
                self.table.column(f.name) if f.name in have else null_array(f.type, self.rows)
                for f in self.schema
            ],
            schema=self.schema,
        )


#: The rows of the one piece a text column of one value is made of (``_lean``).
_PIECE_ROWS = 4096


def _lean(dtype: Any, col: pa.ChunkedArray | pa.Array, order: _Order | None = None) -> Any:
    """``dtype.__from_arrow__(col)`` for a column with a value, its rows in ``order`` (None: as
    they are), in less memory where it can be: a number column without a missing value gets a
    mask of untouched zero pages (``heap.zeroed``), and a text column of one value, which a
    healthy run's era, status and attribution labels are, is one piece of ``_PIECE_ROWS`` rows
    repeated (Arrow's chunks can share their buffers; pandas reads the column chunk by chunk),
    whatever the order. The same values, dtypes and
    missing values as ``__from_arrow__`` makes; on the 1 GB log the frame's step held 15 MiB
    less (39 masks, 3 text columns)."""
    n = len(col)
    if col.null_count or not n:
        return dtype.__from_arrow__(_in_order(col, order))
    arrays = _pandas().arrays
    if pa.types.is_integer(col.type):
        return arrays.IntegerArray(_values(col, np.int64, order), zeroed(n), copy=False)
    if pa.types.is_floating(col.type):
        values = _values(col, np.float64, order)
        if np.isnan(values).any():  # (pandas reads a NaN as a missing value)
            return dtype.__from_arrow__(_in_order(col, order))
        return arrays.FloatingArray(values, zeroed(n), copy=False)
    import pyarrow.compute as pc

    first = col[0]
    if (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)) and pc.all(
        pc.equal(col, first)
    ).as_py():
        piece = pa.array([first.as_py()] * min(n, _PIECE_ROWS), type=col.type)
        whole, rest = divmod(n, len(piece))
        pieces = [piece] * whole + ([piece.slice(0, rest)] if rest else [])
        return dtype.__from_arrow__(pa.chunked_array(pieces, type=col.type))
    return dtype.__from_arrow__(_in_order(col, order))


class _Order:
    """Row numbers a table's columns are put in as they are converted (``take_frame``), and
    the rows they move: an ingest's rows come nearly in lock order (250 MB log, ``--jobs 2``:
    4,605 of 87,210 rows out of it), so a number column without a missing value, which
    ``_lean`` copies out of Arrow anyway, is copied as it is and then only the moved rows are
    set (``_values``), where Arrow's ``take`` of every row came before that copy (the frame's
    step, 250 MB log: 0.04 s of its 0.10 in 52 ``take`` calls)."""

    def __init__(self, order: pa.Array) -> None:
        self.order = order
        at = order.to_numpy()
        self.moved = np.flatnonzero(at != np.arange(len(at)))
        self.source = at[self.moved]


def _in_order(col: pa.ChunkedArray | pa.Array, order: _Order | None) -> Any:
    """``col`` with its rows in ``order`` (None: as it is)."""
    return col if order is None else col.take(order.order)


def _values(col: pa.ChunkedArray | pa.Array, dtype: Any, order: _Order | None) -> np.ndarray:
    """The values of a number column without a missing value as a new numpy array of
    ``dtype``, its rows in ``order`` (None: as they are): the column's values copied into it
    (by Arrow where it has several chunks: a writable array, as Arrow's own buffers are
    read-only), then each moved row set from the row it takes (read before any is set)."""
    values: np.ndarray = col.to_numpy()
    if values.dtype != dtype or not values.flags.writeable:
        values = values.astype(dtype)
    if order is not None:
        values[order.moved] = values[order.source]
    return values


class _NullSeries:
    """One all-null series of ``n`` rows per Arrow type, for every frame column of that type
    without a value: as the Arrow columns share one array (``share_nulls``), so the frame's
    share its memory. Copy-on-write (pandas 3 has no other mode) keeps a write to one such
    column from showing in the others."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._made: dict[pa.DataType, pd.Series] = {}

    def of(self, typ: pa.DataType) -> pd.Series:
        s = self._made.get(typ)
        if s is None:
            one = pa.table({"_": null_array(typ, self.n)})
            s = self._made[typ] = one.to_pandas(types_mapper=_types_mapper)["_"]
        return s


#: Columns between two hand-backs of the C heap's free pages in ``releasing``.
_TRIM_EVERY = 8


def releasing(n: int) -> Iterator[int]:
    """``range(n)`` for a loop that replaces a table's columns one at a time, handing the pages
    Arrow's allocator keeps of the freed ones back (``MemoryPool.release_unused``, a tenth of a
    millisecond) after each column: the allocator would otherwise keep them until the process
    ends, and the new columns (or numpy's frame) cannot reuse them. (Every 8 columns instead,
    the frame of a 1 GB log built in lock order peaked 25 MiB higher.)

    Every ``_TRIM_EVERY`` columns the C heap's free pages go back too (``heap.hand_back``, a few
    milliseconds): the columns of the records a child sent are buffers of the C heap, not of
    Arrow's pool (1 GB log, ``--jobs 2``: the frame's step peaked at 499-500 MiB without,
    456-457 with)."""
    pool = pa.default_memory_pool()
    for i in range(n):
        yield i
        pool.release_unused()
        if i % _TRIM_EVERY == _TRIM_EVERY - 1:
            hand_back()


def take_frame(tables: list[pa.Table], order: pa.Array | None = None) -> pd.DataFrame:
    """``table_to_frame`` of the list's one table, which it takes (the list is emptied), with
    its rows in ``order`` (row numbers; None: as they are).

    Built one column at a time (``frame_of_columns``), so the frame is never built beside a
    whole copy of the table, nor the table beside a copy in ``order``. (``to_pandas(
    self_destruct=True)`` frees each column too, but the allocator keeps the pages until the
    end: on a 1 GB log the peak was the table and the frame together.)"""
    (table,) = tables
    tables.clear()
    schema, columns, rows = table.schema, table.columns, table.num_rows
    del table

    def take(i: int) -> pa.ChunkedArray:
        col, columns[i] = columns[i], None
        return col

    return frame_of_columns(schema, rows, take, order)


def frame_of_columns(
    schema: pa.Schema,
    rows: int,
    take: Callable[[int], pa.ChunkedArray | pa.Array | None],
    order: pa.Array | None = None,
) -> pd.DataFrame:
    """``table_to_frame`` of a table of ``schema`` and ``rows`` whose columns come one at a
    time, with its rows in ``order`` (row numbers; None: as they are): ``take(i)`` gives
    column ``i`` (None for one that holds no value) and holds it no more. Each column's Arrow
    memory is freed once it is converted, and the freed pages go back as it goes
    (``releasing``); a column without a value is the one all-null series of its type
    (``_NullSeries``)."""
    pandas = _pandas()
    nulls = _NullSeries(rows)
    moves = None if order is None else _Order(order)
    out: dict[str, pd.Series] = {}
    for i in releasing(len(schema)):
        field = schema.field(i)
        col = take(i)
        if col is None or (rows and col.null_count == rows):
            del col
            out[field.name] = nulls.of(field.type)
            continue
        dtype = _types_mapper(field.type)
        if dtype is not None:
            # The call ``to_pandas`` makes for a column of a mapped type, without the frame
            # of one column it builds around it (half the frame's time: 250 MB log, 0.07 s
            # against 0.03).
            out[field.name] = pandas.Series(_lean(dtype, col, moves), name=field.name, copy=False)
            del col
            continue
        one = pa.Table.from_arrays([_in_order(col, moves)], schema=pa.schema([field]))
        del col
        out[field.name] = one.to_pandas(types_mapper=_types_mapper, self_destruct=True)[field.name]
        del one
    return pandas.DataFrame(out, copy=False)
