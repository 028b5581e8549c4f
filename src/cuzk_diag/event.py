# cython: annotation_typing=False, boundscheck=False, wraparound=False
# (Compiled, ``Event`` is the extension type of event.pxd: its fields are C struct members, which
# the compiled parse and assembly write and read without a lookup by name. Its loops index
# within the lengths they range over, and a row of its group's columns: unchecked.)
"""``Event``: one parsed log line, as the parse gives it to the assembly; ``Columns``: the
fields of a group of lines of one form, which events made from it read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cuzk_diag.records import Family, Value


class Columns:
    """The fields of a group of parsed lines of one form, as columns (``parse.columnar.Group``):
    their ``names`` in order and per name a list of the rows' values or one value every row has
    (``cols``). Events made from the group read their fields here (``Event.get``) until someone
    asks for their dict."""

    __slots__ = ("names", "cols", "template", "absent")

    def __init__(self, names: list[str], cols: list[Any]) -> None:
        self.names = tuple(names)
        self.cols = cols
        self.absent: list[str] = []  # keys asked for that no name is (``at``)
        # (A row's dict is a copy of this with its own values stored: see ``row_fields``.)
        self.template: dict[str, Any] = {
            k: None if type(c) is list else c for k, c in zip(self.names, cols, strict=True)
        }

    def row_fields(self, row: int) -> dict[str, Value]:
        """Row ``row``'s fields as a dict, its keys in ``names``' order."""
        f = self.template.copy()
        cols = self.cols
        for j in range(len(cols)):
            c = cols[j]
            if type(c) is list:
                f[self.names[j]] = c[row]
        return f

    def at(self, key: str) -> int:
        """The position of ``key`` among ``names``, -1 for none. (A few names, compared by
        identity: the assembly's keys and the names are the same interned texts; a key found
        missing is noted, ``absent``, and found so again by identity. Any other text is
        compared by its text, as a dict would.)"""
        names = self.names
        for j in range(len(names)):
            if names[j] is key:
                return j
        absent = self.absent
        for j in range(len(absent)):
            if absent[j] is key:
                return -1
        for j in range(len(names)):
            if names[j] == key:
                return j
        for j in range(len(absent)):
            if absent[j] == key:
                return -1
        absent.append(key)  # (each missing text once)
        return -1


class Event:
    """One parsed log line: its number (1-based) in its source, the index of that input in the
    order given, its family, its kind (``split_vectors``, ``GPU_START``,
    ``gpu_timing_prove_start``, ...), its fields under the log's own key names, and whether some
    token of the recognised line could not be parsed (``malformed``).

    Compared by value, and unpacked or indexed in that order as the tuple it was. Read-only in
    the compiled build, where it is a C type (``event.pxd``): made in about a third of the
    instructions a ``NamedTuple`` took, its fields read by the compiled assembly as C struct
    members. Treat it as read-only everywhere.

    An event made from a group of lines of one form (``Columns``, ``row``: every line the parse
    reads as columns) makes its ``fields`` dict when it is first asked for; ``get``, ``has`` and
    ``copy_fields`` read its fields without making it, as the assembly reads them.
    """

    __slots__ = ("line", "source", "family", "kind", "_fields", "_cols", "_row", "malformed")

    if TYPE_CHECKING:
        line: int
        source: int
        family: Family
        kind: str
        _fields: dict[str, Value] | None
        _cols: Columns | None
        _row: int
        malformed: bool

    def __init__(
        self,
        line: int,
        source: int,
        family: Family,
        kind: str,
        fields: dict[str, Value],
        malformed: bool = False,
    ) -> None:
        self.line = line
        self.source = source
        self.family = family
        self.kind = kind
        self._fields = fields
        self._cols = None
        self._row = 0
        self.malformed = malformed

    @property
    def fields(self) -> dict[str, Value]:
        return self.field_dict()

    def field_dict(self) -> dict[str, Value]:
        """``fields``, as a method: compiled, a C call for the modules that cimport ``Event``,
        where reading the property is a lookup by name."""
        f = self._fields
        if f is None:
            cols = self._cols
            assert cols is not None
            f = self._fields = cols.row_fields(self._row)
            self._cols = None  # (the group's columns are not held for it any more)
        return f

    def get(self, key: str) -> Value | None:
        """``fields.get(key)``, without making the dict of an event made from columns."""
        f = self._fields
        if f is not None:
            return f.get(key)
        cols = self._cols
        assert cols is not None
        j = cols.at(key)
        if j < 0:
            return None
        c = cols.cols[j]
        value: Value = c[self._row] if type(c) is list else c
        return value

    def has(self, key: str) -> bool:
        """``key in fields``, likewise."""
        f = self._fields
        if f is not None:
            return key in f
        cols = self._cols
        assert cols is not None
        return cols.at(key) >= 0

    def copy_fields(
        self, into: dict[str, Value], drop: frozenset[str], ren: dict[str, str] | None
    ) -> None:
        """Each field into ``into`` but those named in ``drop``, under the name ``ren`` gives it
        (when given), in the fields' order: what a loop over ``fields.items()`` stores, without
        making the dict of an event made from columns."""
        f = self._fields
        if f is not None:
            if ren is None:
                for k, v in f.items():
                    if k not in drop:
                        into[k] = v
            else:
                for k, v in f.items():
                    if k not in drop:
                        into[ren.get(k, k)] = v
            return
        cols = self._cols
        assert cols is not None
        names, values, row = cols.names, cols.cols, self._row
        for j in range(len(names)):
            k = names[j]
            if k in drop:
                continue
            c = values[j]
            into[k if ren is None else ren.get(k, k)] = c[row] if type(c) is list else c

    def _values(self) -> tuple[Any, ...]:
        return (self.line, self.source, self.family, self.kind, self.fields, self.malformed)

    # (As the ``NamedTuple`` it was: unpacked, indexed and counted in its fields' order.)
    def __iter__(self) -> Iterator[Any]:
        return iter(self._values())

    def __getitem__(self, i: int) -> Any:
        return self._values()[i]

    def __len__(self) -> int:
        return 6

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # (its fields are a dict)

    def __repr__(self) -> str:
        return (
            f"Event(line={self.line!r}, source={self.source!r}, family={self.family!r}, "
            f"kind={self.kind!r}, fields={self.fields!r}, malformed={self.malformed!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (Event, self._values())
