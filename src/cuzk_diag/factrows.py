"""Rows of facts held as columns: the run facts of every job and of every proof a long log
names (``RunInfo.jobs``, ``RunInfo.bench["proofs"]``).

A log of a week holds tens of thousands of jobs and proofs, each a handful of numbers. As a
dict each they took 34 MiB of a 1 GB log's analysis, through its every step (a dict and a
Python int per value). Here each field is one column (an ``array`` of 64-bit integers or
floats while its values are all of that type, else a list) and each row names its fields, in
its own order, by a shape shared with the rows of the same fields: a row is made into a dict
when it is read, and the dict a caller gets is its own (changing it changes nothing here).

``FactRows`` is a sequence of such rows (the proofs); ``KeyedFactRows`` a mapping of them by
key (the jobs, by job id). Both read back exactly what was put in: the same keys in the same
order, the same values of the same types (a bool stays a bool, an int an int).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, TypeAlias, overload

#: What a 64-bit integer column holds; other ints make the column a list.
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 63) - 1
#: Equal texts of at most this length share one string in a column of texts (a proof's status),
#: up to this many distinct texts.
_SHARED_LEN = 64
_SHARED_MAX = 4096

#: A field's values: an ``array`` of 64-bit integers (``q``) or floats (``d``), or a list.
Column: TypeAlias = "array[Any] | list[Any]"


def _column_for(value: Any, n: int) -> Column:
    """A column of ``n`` rows (all padding) for a field whose first value is ``value``."""
    if type(value) is int and _INT_MIN <= value <= _INT_MAX:
        return array("q", bytes(8 * n))
    if type(value) is float:
        return array("d", bytes(8 * n))
    return [None] * n


def _fits(column: array[Any], value: Any) -> bool:
    """Whether ``value`` goes into the typed ``column`` as it is."""
    if column.typecode == "q":
        return type(value) is int and _INT_MIN <= value <= _INT_MAX
    return type(value) is float


class FactRows(Sequence[dict[str, Any]]):
    """A list of dicts of facts, held as columns (see the module). ``append`` adds a row,
    ``update(i, values)`` merges into row ``i`` as ``dict.update`` does (a new field goes last,
    a known one keeps its place), ``rows[i]`` and iteration make each row a dict."""

    __slots__ = ("_n", "_cols", "_shape", "_shapes", "_shape_ids", "_texts")

    def __init__(self, rows: Iterable[Mapping[str, Any]] = ()) -> None:
        self._n = 0
        self._cols: dict[str, Column] = {}
        self._shape = array("I")  # each row's shape: an index into ``_shapes``
        self._shapes: list[tuple[str, ...]] = []  # each shape's fields, in the rows' order
        self._shape_ids: dict[tuple[str, ...], int] = {}
        self._texts: dict[str, str] = {}  # (the shared texts)
        for row in rows:
            self.append(row)

    # -- writing ---------------------------------------------------------------------------

    def append(self, row: Mapping[str, Any]) -> None:
        """Add ``row`` (its fields and values, in its order) as the last row."""
        for col in self._cols.values():
            col.append(0 if type(col) is array else None)  # (padding: no field in this row)
        i = self._n
        self._n += 1
        for k, v in row.items():
            self._set(k, i, v)
        self._shape.append(self._shape_of(tuple(row)))

    def update(self, i: int, values: Mapping[str, Any]) -> None:
        """Merge ``values`` into row ``i``, as ``dict.update`` of the row would."""
        i = self._index(i)
        shape = self._shapes[self._shape[i]]
        new = tuple(k for k in values if k not in shape)
        for k, v in values.items():
            self._set(k, i, v)
        if new:
            self._shape[i] = self._shape_of(shape + new)

    def replace(self, i: int, row: Mapping[str, Any]) -> None:
        """Make row ``i`` ``row`` (its fields, in its order; the old ones dropped)."""
        i = self._index(i)
        for k, v in row.items():
            self._set(k, i, v)
        self._shape[i] = self._shape_of(tuple(row))

    def _set(self, name: str, i: int, value: Any) -> None:
        col = self._cols.get(name)
        if col is None:
            col = self._cols[name] = _column_for(value, self._n)
        if type(col) is array:
            if _fits(col, value):
                col[i] = value
                return
            col = self._cols[name] = col.tolist()  # (the same values, as Python numbers)
        if type(value) is str and len(value) <= _SHARED_LEN:
            shared = self._texts.get(value)
            if shared is not None:
                value = shared
            elif len(self._texts) < _SHARED_MAX:
                self._texts[value] = value
        col[i] = value

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
        cols = self._cols
        return {k: cols[k][i] for k in self._shapes[self._shape[i]]}

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
        return self._cols[name][i] if name in self._shapes[self._shape[i]] else default

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[dict[str, Any]]:
        cols, shapes = self._cols, self._shapes
        for i, sid in enumerate(self._shape):
            yield {k: cols[k][i] for k in shapes[sid]}

    def columns(self) -> Iterator[Column]:
        """Every field's column (a row without the field holds 0 or None there)."""
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

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)

    def columns(self) -> Iterator[Column]:
        """The rows' columns (``FactRows.columns``; rows of deleted keys among them)."""
        return self._rows.columns()

    def mapped(self, fn: Callable[[Any], Any]) -> KeyedFactRows:
        """The rows with ``fn`` of every value (the same keys and fields, in the same order)."""
        rows = self._rows
        return KeyedFactRows(
            (k, {f: fn(v) for f, v in rows[i].items()}) for k, i in self._at.items()
        )

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """A dict of the rows' dicts."""
        rows = self._rows
        return {k: rows[i] for k, i in self._at.items()}

    def __repr__(self) -> str:
        return f"KeyedFactRows({len(self)} keys)"


def plain_rows(value: Any) -> Any:
    """``value`` with ``FactRows`` as lists and ``KeyedFactRows`` as dicts (of dicts), for
    what writes only dicts and lists (``json.dumps``)."""
    if isinstance(value, KeyedFactRows):
        return value.to_dict()
    if isinstance(value, FactRows):
        return list(value)
    return value
