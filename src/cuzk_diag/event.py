# cython: annotation_typing=False
# (Compiled, ``Event`` is the extension type of event.pxd: its fields are C struct members, which
# the compiled parse and assembly write and read without a lookup by name.)
"""``Event``: one parsed log line, as the parse gives it to the assembly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cuzk_diag.records import Family, Value


class Event:
    """One parsed log line: its number (1-based) in its source, the index of that input in the
    order given, its family, its kind (``split_vectors``, ``GPU_START``,
    ``gpu_timing_prove_start``, ...), its fields under the log's own key names, and whether some
    token of the recognised line could not be parsed (``malformed``).

    Compared by value, and unpacked or indexed in that order as the tuple it was. Read-only in
    the compiled build, where it is a C type (``event.pxd``): made in about a third of the
    instructions a ``NamedTuple`` took, its fields read by the compiled assembly as C struct
    members. Treat it as read-only everywhere.
    """

    __slots__ = ("line", "source", "family", "kind", "fields", "malformed")

    if TYPE_CHECKING:
        line: int
        source: int
        family: Family
        kind: str
        fields: dict[str, Value]
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
        self.fields = fields
        self.malformed = malformed

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
