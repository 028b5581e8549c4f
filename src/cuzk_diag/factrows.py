"""Rows of facts held as columns: the run facts of every job and of every proof a long log
names (``RunInfo.jobs``, ``RunInfo.bench["proofs"]``).

A log of a week holds tens of thousands of jobs and proofs, each a handful of numbers. As a
dict each they took 34 MiB of a 1 GB log's analysis, through its every step (a dict and a
Python int per value). Here each field is one column (an ``array`` of 64-bit integers or
floats while its values are all of that type, else a list) and each row names its fields, in
its own order, by a shape shared with the rows of the same fields: a row is made into a dict
when it is read, and the dict a caller gets is its own (changing it changes nothing here).
The rows appended last are kept as dicts (``FactRows.STAGED`` of them: a job's second line,
its assembly, usually finds its row there) and made columns a block at a time, each field's
values by one ``map`` over the block's dicts; any read makes them columns first.

``FactRows`` is a sequence of such rows (the proofs); ``KeyedFactRows`` a mapping of them by
key (the jobs, by job id). Both read back exactly what was put in: the same keys in the same
order, the same values of the same types (a bool stays a bool, an int an int).
"""

from __future__ import annotations

from array import array
from collections.abc import (
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
    ValuesView,
)
from itertools import chain, repeat
from typing import Any, TypeAlias, overload

#: What a 64-bit integer column holds; other ints make the column a list.
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1
#: Equal texts of at most this length share one string in a column of texts (a proof's status),
#: up to this many distinct texts.
_SHARED_LEN = 64
_SHARED_MAX = 4096

#: A field's values: an ``array`` of 64-bit integers (``q``) or floats (``d``), or a list.
Column: TypeAlias = "array[Any] | list[Any]"


class _Missing:
    """A row without the field (``_MISSING``), while a block of staged rows is made columns."""


_MISSING = _Missing()


def _kind(types: set[type], values: list[Any], column: Column | None) -> str | None:
    """The array type (``q`` or ``d``) of a column holding ``column``'s values and
    ``values`` (of ``types``), or None for a list."""
    if isinstance(column, list):
        return None
    if not types:  # (no values: the column as it is)
        return None if column is None else column.typecode
    if types == {int} and _INT_MIN <= min(values) and max(values) <= _INT_MAX:
        kind = "q"
    elif types == {float}:
        kind = "d"
    else:
        return None
    return kind if column is None or column.typecode == kind else None


def _ready(column: Column | None, kind: str | None, n: int) -> Column:
    """``column`` ready for values of ``kind`` (``_kind``): a new one of ``n`` rows of padding
    if None, a list of the same values (as Python numbers) if its array is of another type."""
    if column is None:
        return [None] * n if kind is None else array(kind, bytes(8 * n))
    if type(column) is array and column.typecode != kind:
        return column.tolist()
    return column


class FactRows(Sequence[dict[str, Any]]):
    """A list of dicts of facts, held as columns (see the module). ``append`` adds a row,
    ``update(i, values)`` merges into row ``i`` as ``dict.update`` does (a new field goes last,
    a known one keeps its place), ``rows[i]`` and iteration make each row a dict."""

    __slots__ = ("_n", "_cols", "_shape", "_shapes", "_shape_ids", "_texts", "_staged")

    #: Rows appended are kept as dicts until there are this many, then made columns at once.
    STAGED = 4096

    def __init__(self, rows: Iterable[Mapping[str, Any]] = ()) -> None:
        self._n = 0
        self._cols: dict[str, Column] = {}
        self._shape = array("I")  # each row's shape: an index into ``_shapes``
        self._shapes: list[tuple[str, ...]] = []  # each shape's fields, in the rows' order
        self._shape_ids: dict[tuple[str, ...], int] = {}
        self._texts: dict[str, str] = {}  # (the shared texts)
        self._staged: list[dict[str, Any]] = []  # the last rows, not yet in the columns
        for row in rows:
            self.append(row)

    # -- writing ---------------------------------------------------------------------------

    def append(self, row: Mapping[str, Any]) -> None:
        """Add ``row`` (its fields and values, in its order) as the last row."""
        self._staged.append(dict(row))
        self._n += 1
        if len(self._staged) >= self.STAGED:
            self._flush()

    def update(self, i: int, values: Mapping[str, Any]) -> None:
        """Merge ``values`` into row ``i``, as ``dict.update`` of the row would."""
        i, held = self._index(i), self._held()
        if i >= held:
            self._staged[i - held].update(values)  # (a row appended lately: a job's second line)
            return
        shape = self._shapes[self._shape[i]]
        new = tuple(k for k in values if k not in shape)
        for k, v in values.items():
            self._set(k, i, v)
        if new:
            self._shape[i] = self._shape_of(shape + new)

    def replace(self, i: int, row: Mapping[str, Any]) -> None:
        """Make row ``i`` ``row`` (its fields, in its order; the old ones dropped)."""
        i, held = self._index(i), self._held()
        if i >= held:
            self._staged[i - held] = dict(row)
            return
        for k, v in row.items():
            self._set(k, i, v)
        self._shape[i] = self._shape_of(tuple(row))

    def _held(self) -> int:
        """How many rows the columns hold (the others are staged)."""
        return self._n - len(self._staged)

    def _flush(self) -> None:
        """The staged rows into the columns: each field's values of all of them at once (by
        ``map`` over the rows' dicts, no step of Python's per value but for shared texts)."""
        staged = self._staged
        if not staged:
            return
        held = self._held()
        cols = self._cols
        # (The fields of the staged rows' shapes, not of each row: few shapes, many rows.)
        fields = list(map(tuple, staged))
        shapes = dict.fromkeys(fields)
        for name in dict.fromkeys(chain(cols, chain.from_iterable(shapes))):
            values = list(map(dict.get, staged, repeat(name), repeat(_MISSING)))
            types = set(map(type, values))
            missing = _Missing in types
            types.discard(_Missing)
            col = cols.get(name)
            kind = _kind(
                types, [v for v in values if v is not _MISSING] if missing else values, col
            )
            col = _ready(col, kind, held)
            if missing:  # (rows without the field: padding)
                pad = None if kind is None else 0 if kind == "q" else 0.0
                values = [pad if v is _MISSING else v for v in values]
            if type(col) is array:
                col.fromlist(values)
            elif str in types:
                shared = self._shared
                col.extend([shared(v) if type(v) is str else v for v in values])
            else:
                col.extend(values)
            cols[name] = col
        ids = {f: self._shape_of(f) for f in shapes}
        self._shape.extend(map(ids.__getitem__, fields))
        staged.clear()

    def _set(self, name: str, i: int, value: Any) -> None:
        """Row ``i`` of the columns' ``name`` set to ``value`` (``name``'s column made, with
        padding, if new, and a list if ``value`` is not of its array's type)."""
        col = self._cols.get(name)
        col = self._cols[name] = _ready(col, _kind({type(value)}, [value], col), len(self._shape))
        col[i] = self._shared(value) if type(value) is str else value

    def _shared(self, text: str) -> str:
        """``text``, or an equal one already held (short texts, up to ``_SHARED_MAX``)."""
        if len(text) > _SHARED_LEN:
            return text
        shared = self._texts.get(text)
        if shared is not None:
            return shared
        if len(self._texts) < _SHARED_MAX:
            self._texts[text] = text
        return text

    def _shape_of(self, fields: tuple[str, ...]) -> int:
        sid = self._shape_ids.get(fields)
        if sid is None:
            sid = self._shape_ids[fields] = len(self._shapes)
            self._shapes.append(fields)
        return sid

    # -- reading ---------------------------------------------------------------------------

    def _index(self, i: int) -> int:
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("row index out of range")
        return i

    def _row(self, i: int) -> dict[str, Any]:
        return next(self.rows_at((i,)))

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self._row(j) for j in range(*i.indices(self._n))]
        return self._row(self._index(i))

    def value(self, i: int, name: str, default: Any = None) -> Any:
        """Row ``i``'s ``name``, or ``default`` (the row's dict not made)."""
        i = self._index(i)
        self._flush()
        return self._cols[name][i] if name in self._shapes[self._shape[i]] else default

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.rows_at(range(self._n))

    def rows_at(self, rows: Iterable[int]) -> Iterator[dict[str, Any]]:
        """The dicts of ``rows`` (indices, in that order): each shape's columns looked up once,
        not each row's every field (a long log's report reads every row)."""
        self._flush()
        cols, shape = self._cols, self._shape
        shapes = [[(k, cols[k]) for k in fields] for fields in self._shapes]
        for i in rows:
            yield {k: c[i] for k, c in shapes[shape[i]]}

    def by_shape(
        self, rows: Sequence[int]
    ) -> Iterator[tuple[tuple[str, ...], list[int] | None, list[list[Any]]]]:
        """The rows ``rows`` (indices) a shape at a time: its fields, the places in ``rows`` of
        its rows (None: all of them, in order), and each field's values of those rows, in that
        order (each column read by one ``map`` over the shape's rows, or one slice of it for
        rows in order, no dict made: a long log's report writes every row)."""
        self._flush()
        cols = self._cols
        sids: Sequence[int]
        if type(rows) is range and rows.step == 1:
            # (Rows in order, as the proofs and, unless keys were deleted, the jobs are: a
            # column's values by one slice, where a ``map`` took each value alone.)
            at = slice(rows.start, rows.stop)
            sids = self._shape[at]

            def values_of(column: Column) -> list[Any]:
                part = column[at]
                return part.tolist() if isinstance(part, array) else part

        else:
            sids = list(map(self._shape.__getitem__, rows))

            def values_of(column: Column) -> list[Any]:
                return list(map(column.__getitem__, rows))

        if len(set(sids)) == 1:
            fields = self._shapes[sids[0]]
            yield fields, None, [values_of(cols[k]) for k in fields]
            return
        places: dict[int, list[int]] = {}
        for j, sid in enumerate(sids):
            places.setdefault(sid, []).append(j)
        for sid, js in places.items():
            fields = self._shapes[sid]
            picked = list(map(rows.__getitem__, js))
            yield fields, js, [list(map(cols[k].__getitem__, picked)) for k in fields]

    def columns(self) -> Iterator[Column]:
        """Every field's column (a row without the field holds 0 or None there)."""
        self._flush()
        return iter(self._cols.values())

    def mapped(self, fn: Callable[[Any], Any]) -> FactRows:
        """The rows with ``fn`` of every value (the same fields, in the same order)."""
        return FactRows({k: fn(v) for k, v in row.items()} for row in self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FactRows | list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # (mutable, equal to lists)

    def __repr__(self) -> str:
        return f"FactRows({len(self)} rows, fields {list(self._cols)})"


class KeyedFactRows(MutableMapping[str, dict[str, Any]]):
    """A dict of dicts of facts by key, held as ``FactRows`` (see the module): in the keys'
    order of insertion, as a dict. ``merge(key, values)`` is ``setdefault(key, {}).update(values)``
    of a dict of dicts; ``rows[key]`` makes the key's row a dict."""

    __slots__ = ("_rows", "_at", "_dead")

    #: Rows of deleted keys kept until there are this many, and more than those of live keys.
    COMPACT_AFTER = 1024

    def __init__(
        self, items: Mapping[str, Mapping[str, Any]] | Iterable[tuple[str, Mapping[str, Any]]] = ()
    ) -> None:
        self._rows = FactRows()
        self._at: dict[str, int] = {}  # key -> its row
        self._dead = 0  # rows of deleted keys
        for key, row in items.items() if isinstance(items, Mapping) else items:
            self[key] = row

    def merge(self, key: str, values: Mapping[str, Any]) -> None:
        """Merge ``values`` into ``key``'s row (a new key's row is ``values``)."""
        i = self._at.get(key)
        if i is None:
            self._at[key] = len(self._rows)
            self._rows.append(values)
        else:
            self._rows.update(i, values)

    def value(self, key: str, name: str, default: Any = None) -> Any:
        """``key``'s ``name``, or ``default`` (no row, or no such field in it)."""
        i = self._at.get(key)
        return default if i is None else self._rows.value(i, name, default)

    def values_of(self, name: str) -> dict[str, Any]:
        """Each key's ``name``, for the keys whose row has it (``value`` of every key at
        once: a long log's analysis asks for every job's status)."""
        rows = self._rows
        rows._flush()
        col = rows._cols.get(name)
        if col is None:
            return {}
        has = [name in fields for fields in rows._shapes]
        shape = rows._shape
        return {k: col[i] for k, i in self._at.items() if has[shape[i]]}

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self._rows[self._at[key]]

    def __setitem__(self, key: str, row: Mapping[str, Any]) -> None:
        i = self._at.get(key)
        if i is None:
            self.merge(key, row)
        else:
            self._rows.replace(i, row)

    def __delitem__(self, key: str) -> None:
        del self._at[key]
        self._dead += 1
        if self._dead > self.COMPACT_AFTER and self._dead > len(self._at):
            rows = self._rows
            self._rows = FactRows(rows[i] for i in self._at.values())
            self._at = {k: n for n, k in enumerate(self._at)}
            self._dead = 0

    def __contains__(self, key: object) -> bool:
        return key in self._at

    def values(self) -> ValuesView[dict[str, Any]]:
        return _Values(self)

    def items(self) -> ItemsView[str, dict[str, Any]]:
        return _Items(self)

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)

    def rows_and_places(self) -> tuple[FactRows, Sequence[int]]:
        """The rows held and, in the keys' order, each key's row among them (a ``range``
        while no key was deleted: the keys' rows are then the rows in order)."""
        if not self._dead:
            return self._rows, range(len(self._at))
        return self._rows, list(self._at.values())

    def columns(self) -> Iterator[Column]:
        """The rows' columns (``FactRows.columns``; rows of deleted keys among them)."""
        return self._rows.columns()

    def mapped(self, fn: Callable[[Any], Any]) -> KeyedFactRows:
        """The rows with ``fn`` of every value (the same keys and fields, in the same order)."""
        return KeyedFactRows((k, {f: fn(v) for f, v in row.items()}) for k, row in self.items())

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """A dict of the rows' dicts."""
        return dict(self.items())

    def __repr__(self) -> str:
        return f"KeyedFactRows({len(self)} keys)"


class _Values(ValuesView[dict[str, Any]]):
    """``KeyedFactRows.values()``, read a shape's columns at a time (``FactRows.rows_at``)."""

    _mapping: KeyedFactRows

    def __iter__(self) -> Iterator[dict[str, Any]]:
        m = self._mapping
        return m._rows.rows_at(m._at.values())


class _Items(ItemsView[str, dict[str, Any]]):
    """``KeyedFactRows.items()``, read as ``_Values``."""

    _mapping: KeyedFactRows

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        m = self._mapping
        return zip(m._at, m._rows.rows_at(m._at.values()), strict=True)


def plain_rows(value: Any) -> Any:
    """``value`` with ``FactRows`` as lists and ``KeyedFactRows`` as dicts (of dicts), for
    what writes only dicts and lists (``json.dumps``)."""
    if isinstance(value, KeyedFactRows):
        return value.to_dict()
    if isinstance(value, FactRows):
        return list(value)
    return value
