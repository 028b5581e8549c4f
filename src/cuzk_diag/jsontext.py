"""JSON text at the C encoder's speed: many small objects one at a time (``encoder``), and
large indented documents (``indented_parts``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice, repeat
from typing import Any, cast

from cuzk_diag.factrows import FactRows, KeyedFactRows


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
#: Rows of facts made into text at a time (``_Indented._rows_pieces``): a bound on the texts
#: held at once (a week's log names tens of thousands of jobs).
ROWS_AT_ONCE = 512
#: The most characters of a part of ``indented_parts`` but for its last piece.
PART_CHARS = 1 << 18
#: ``float.__repr__`` of the floats the encoder writes otherwise (``NaN``, ``Infinity``).
_NOT_FINITE = frozenset({"nan", "inf", "-inf"})


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

    def keys(self, obj: Mapping[Any, Any]) -> list[str]:
        """The texts of ``obj``'s keys (``key``; texts, as mostly, by one ``map``)."""
        if set(map(type, obj)) <= {str}:
            return list(map(self.text, obj))
        return [self.key(k) for k in obj]

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
            keys = self.keys(obj)
            if self.clean is not None and not all(map(self.clean[0], keys)):
                obj = self.clean[1](obj)
                keys = self.keys(obj)
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
        if isinstance(obj, FactRows | KeyedFactRows):
            yield from self._rows_pieces(obj, heads, opening, depth)
            yield end + closing
            return
        sep = opening + inner
        # (A head per key, or "" for ever.)
        for head, v in zip(heads, values, strict=False):
            yield from self._item(sep + head, v, depth + 1)
            sep = "," + inner
        yield end + closing

    def _item(self, before: str, value: Any, depth: int, text: str | None = None) -> Iterator[str]:
        """An item of a list or dict (``before``: its separator and key) whose value is at
        ``depth``: the value's text (``text``, made already, or ``flat``'s), or its pieces."""
        if text is None:
            text = self.flat(value, depth)
        if text is not None:
            yield before + text
        else:
            yield before
            yield from self.pieces(value, depth)

    def _rows_pieces(
        self, obj: FactRows | KeyedFactRows, heads: Iterable[str], opening: str, depth: int
    ) -> Iterator[str]:
        """The items of rows of facts (``obj``, at ``depth``; ``heads``: a key's text and
        colon before each row, or ""), ``ROWS_AT_ONCE`` rows at a time: their texts made a
        shape at a time (``_rows_texts``), a block whose rows all have theirs one piece; a row
        without (a value not of ``_SCALARS``, a text to clean) made a dict and written as
        before, alone."""
        rows, at = (
            obj.rows_and_places() if isinstance(obj, KeyedFactRows) else (obj, range(len(obj)))
        )
        inner = self.depth(depth)[0]
        sep, heads = opening + inner, iter(heads)
        for lo in range(0, len(at), ROWS_AT_ONCE):
            block = at[lo : lo + ROWS_AT_ONCE]
            texts = self._rows_texts(rows, block, depth + 1)
            before = list(islice(heads, len(block)))
            if None not in texts:
                yield sep + ("," + inner).join(map(str.__add__, before, cast("list[str]", texts)))
                sep = "," + inner
                continue
            made = rows.rows_at([i for i, t in zip(block, texts, strict=True) if t is None])
            for head, text in zip(before, texts, strict=True):
                row = next(made) if text is None else None
                yield from self._item(sep + head, row, depth + 1, text)
                sep = "," + inner

    def _rows_texts(self, rows: FactRows, at: Sequence[int], depth: int) -> list[str | None]:
        """The text ``flat`` gives each row of ``rows`` at ``at`` (indices) at ``depth``, made
        a shape at a time: a text per field's value by one ``map`` over the field's values,
        then each row's by one ``str.format`` of its shape's text; None for a row whose values
        are not all scalars or whose text ``clean`` rejects."""
        out: list[str | None] = [None] * len(at)
        inner, end, _ = self.depth(depth)
        for fields, places, values in rows.by_shape(at):
            if not fields:
                texts: list[str | None] = ["{}"] * (len(at) if places is None else len(places))
            elif not all(type(k) is str for k in fields):
                continue  # (a key the encoder writes otherwise: each such row as before)
            else:
                shape = "{{" + inner  # (a format: its own braces doubled)
                shape += ("," + inner).join(
                    self.text(k).replace("{", "{{").replace("}", "}}") + ": {}" for k in fields
                )
                columns = [self._value_texts(v) for v in values]
                texts = list(map((shape + end + "}}").format, *columns))
                for column in columns:
                    if None in column:  # (a value of another type: the row as before)
                        for j, t in enumerate(column):
                            if t is None:
                                texts[j] = None
            if self.clean is not None:
                # (A part of a text that shows nothing to neutralise shows nothing either, and
                # no text of a row begins or ends with what the test looks for: the rows
                # looked at together, and one at a time only when they show something.)
                looks_clean = self.clean[0]
                if None in texts or not looks_clean("".join(cast("list[str]", texts))):
                    texts = [t if t is not None and looks_clean(t) else None for t in texts]
            if places is None:
                out = texts
            else:
                for j, t in zip(places, texts, strict=True):
                    out[j] = t
        return out

    def _value_texts(self, values: list[Any]) -> list[str | None]:
        """Each value's text as the encoder writes it, None for one not of ``_SCALARS``."""
        types = set(map(type, values))
        if types == {int}:
            return list(map(int.__repr__, values))
        if types == {str}:
            return list(map(self.text, values))
        if types == {float}:
            texts: list[str | None] = list(map(float.__repr__, values))
            if _NOT_FINITE.isdisjoint(texts):
                return texts
        if types <= _SCALARS:
            return list(map(self.scalar, values))
        return [self.scalar(v) if type(v) in _SCALARS else None for v in values]


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
    default=...)`` in parts of about ``size`` pieces or ``PART_CHARS`` characters each (a few
    hundred KB: a long log's report is written without being held whole), most of it
    written by the C encoder (``_Indented``, which also says what ``clean`` does). Without a
    cycle check, like ``encoder``: for documents that hold no reference cycles."""
    options = {"allow_nan": allow_nan, "default": default, "ensure_ascii": ensure_ascii}
    batch: list[str] = []
    held = 0  # (characters: a piece of many rows of facts is long)
    for piece in _Indented(indent, clean, **options).pieces(obj):
        batch.append(piece)
        held += len(piece)
        if len(batch) >= size or held >= PART_CHARS:
            yield "".join(batch)
            batch.clear()
            held = 0
    if batch:
        yield "".join(batch)


def indented(obj: Any, **options: Any) -> str:
    """The whole text of ``indented_parts`` (``options`` as its)."""
    return "".join(indented_parts(obj, **options))
