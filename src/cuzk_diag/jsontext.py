"""JSON text at the C encoder's speed: many small objects one at a time (``encoder``), and
large indented documents (``indented_parts``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from itertools import repeat
from typing import Any

from cuzk_diag.factrows import FactRows


def encoder(
    *,
    separators: tuple[str, str] | None = None,
    allow_nan: bool = True,
    default: Callable[[Any], Any] | None = None,
    ensure_ascii: bool = False,
) -> Callable[[object], str]:
    """``json.JSONEncoder(ensure_ascii=ensure_ascii, ...).encode``, with the C encoder that
    call makes every time made once: half the cost of a small object, the same text.

    Without a cycle check: for objects that hold no reference cycles (rows, records, the
    ``to_dict`` of findings), as everything this package writes."""
    c_encode = chunk_encoder(
        separators=separators, allow_nan=allow_nan, default=default, ensure_ascii=ensure_ascii
    )
    return lambda obj: "".join(c_encode(obj, 0))


def chunk_encoder(
    *,
    separators: tuple[str, str] | None = None,
    allow_nan: bool = True,
    default: Callable[[Any], Any] | None = None,
    ensure_ascii: bool = False,
) -> Callable[[object, int], list[str]]:
    """What ``encoder`` calls: ``f(obj, 0)`` is the list of pieces whose join is the JSON text
    of ``obj`` (the C encoder's call; a compiled module that writes many small objects joins
    them itself and saves the interpreted frame of ``encoder``'s wrapper per object)."""
    enc = json.JSONEncoder(
        ensure_ascii=ensure_ascii, separators=separators, allow_nan=allow_nan, default=default
    )
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # a Python built without the _json accelerator
        return lambda obj, _level: [enc.encode(obj)]
    return make(  # type: ignore[no-any-return]
        None,  # no cycle check (see ``encoder``)
        enc.default,
        json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring,
        None,
        enc.key_separator,
        enc.item_separator,
        enc.sort_keys,
        enc.skipkeys,
        enc.allow_nan,
    )


#: The types the C encoder writes as one token: a container of these alone is written whole.
_SCALARS = frozenset({str, int, float, bool, type(None)})


class _Indented:
    """The text of ``json.dumps(obj, indent=...)`` in pieces. That call runs the standard
    library's Python encoder, a step per value; here every list or dict that holds no list or
    dict is written by one call of the C encoder, whose item separator is the newline and
    indentation of its depth. On a long log's report, whose bulk is thousands of small dicts
    (jobs, proofs), that is a call per dict instead of a step per value.

    ``clean``, if given, is ``(looks_clean, cleaned)``: a piece whose text ``looks_clean``
    rejects is written as the text of ``cleaned`` of its value instead (for a dict's keys, of
    the whole dict), so that the document comes out as ``cleaned`` of it would without a walk
    of every value (``sanitize.write_neutralised_json``)."""

    def __init__(
        self,
        indent: int,
        clean: tuple[Callable[[str], bool], Callable[[Any], Any]] | None = None,
        **options: Any,
    ) -> None:
        self.indent = indent
        self.clean = clean
        self.options = options
        self.scalar = encoder(**options)
        # (A text key as the encoder writes a text, without the encoder's call: the C function
        # it calls for one.)
        self.text = (
            json.encoder.encode_basestring_ascii
            if options.get("ensure_ascii")
            else json.encoder.encode_basestring
        )
        self._depths: list[tuple[str, str, Callable[[object, int], list[str]]]] = []

    def depth(self, depth: int) -> tuple[str, str, Callable[[object, int], list[str]]]:
        """At ``depth``: the newline and indentation of an item, and of the closing bracket;
        the C encoder of a container of scalars (``chunk_encoder``: the join of its pieces is
        the text)."""
        while len(self._depths) <= depth:
            d = len(self._depths)
            inner = "\n" + " " * (self.indent * (d + 1))
            enc = chunk_encoder(separators=("," + inner, ": "), **self.options)
            self._depths.append((inner, "\n" + " " * (self.indent * d), enc))
        return self._depths[depth]

    def key(self, k: object) -> str:
        if type(k) is str:
            return self.text(k)
        # (A key of another type is written as the encoder writes it: 1 -> "1", None -> "null".)
        return self.scalar({k: 0})[1:-4]

    def flat(self, obj: Any, depth: int) -> str | None:
        """The text of a value other than a list or dict (``default`` converts what the
        encoder does not know), or of a list or dict that holds only scalars; else None."""
        text = self._flat(obj, depth)
        if text is not None and self.clean is not None and not self.clean[0](text):
            return self._flat(self.clean[1](obj), depth)
        return text

    def _flat(self, obj: Any, depth: int) -> str | None:
        typ = type(obj)
        if typ is dict:
            values: Any = obj.values()
        elif typ is list or typ is tuple:
            values = obj
        elif isinstance(obj, dict | list | tuple | Mapping | FactRows):
            # (A subclass of a container, another mapping, rows of facts: item by item.)
            return None
        else:
            return self.scalar(obj)
        if not obj:
            return "{}" if typ is dict else "[]"
        if not _SCALARS.issuperset(map(type, values)):
            return None
        inner, end, enc = self.depth(depth)
        text = "".join(enc(obj, 0))
        return text[0] + inner + text[1:-1] + end + text[-1]

    def pieces(self, obj: Any, depth: int = 0) -> Iterator[str]:
        text = self.flat(obj, depth)
        if text is not None:
            yield text
            return
        # (A list or dict that holds a list or dict, a subclass of either, another mapping,
        # or rows of facts, each made a dict as it is written: ``factrows``.)
        if isinstance(obj, Mapping):
            keys = [self.key(k) for k in obj]
            if self.clean is not None and not all(map(self.clean[0], keys)):
                obj = self.clean[1](obj)
                keys = [self.key(k) for k in obj]
            heads: Any = [k + ": " for k in keys]
            values: Any = obj.values()
            opening, closing = "{", "}"
        else:
            heads, values = repeat(""), obj
            opening, closing = "[", "]"
        if not obj:
            yield opening + closing
            return
        inner, end, _ = self.depth(depth)
        sep = opening + inner
        flat, pieces = self.flat, self.pieces
        for head, v in zip(heads, values, strict=False):  # (a head per key, or "" for ever)
            text = flat(v, depth + 1)
            if text is not None:
                yield sep + head + text
            else:
                yield sep + head
                yield from pieces(v, depth + 1)
            sep = "," + inner
        yield end + closing


def indented_parts(
    obj: Any,
    *,
    indent: int = 2,
    allow_nan: bool = True,
    default: Callable[[Any], Any] | None = None,
    ensure_ascii: bool = False,
    clean: tuple[Callable[[str], bool], Callable[[Any], Any]] | None = None,
    size: int = 4096,
) -> Iterator[str]:
    """The text of ``json.dumps(obj, indent=indent, ensure_ascii=..., allow_nan=...,
    default=...)`` in parts of about ``size`` pieces each (a few hundred KB: a long log's
    report is written without being held whole), most of it written by the C encoder
    (``_Indented``, which also says what ``clean`` does). Without a cycle check, like
    ``encoder``: for documents that hold no reference cycles."""
    options = {"allow_nan": allow_nan, "default": default, "ensure_ascii": ensure_ascii}
    batch: list[str] = []
    for piece in _Indented(indent, clean, **options).pieces(obj):
        batch.append(piece)
        if len(batch) >= size:
            yield "".join(batch)
            batch.clear()
    if batch:
        yield "".join(batch)


def indented(obj: Any, **options: Any) -> str:
    """The whole text of ``indented_parts`` (``options`` as its)."""
    return "".join(indented_parts(obj, **options))
