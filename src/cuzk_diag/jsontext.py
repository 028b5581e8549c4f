"""JSON text at the C encoder's speed: many small objects one at a time (``encoder``), and
large indented documents (``indented_parts``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import chain, islice, repeat
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
            # (The keys looked at together: the text of each begins and ends with a quote, which
            # no text the test looks for holds.)
            if self.clean is not None and not self.clean[0]("".join(keys)):
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
        colon before each row, or ""), ``ROWS_AT_ONCE`` rows at a time: a block of rows of one
        shape that ``clean`` passes is one text, made by one join of the texts of its values
        and of the shape between them (``_shape_parts``); the rows of a block of several
        shapes have each their text made alone (``_rows_texts``), and a row without one (a
        value not of ``_SCALARS``, a text to clean) is made a dict and written as before,
        alone."""
        rows, at = (
            obj.rows_and_places() if isinstance(obj, KeyedFactRows) else (obj, range(len(obj)))
        )
        inner = self.depth(depth)[0]
        sep, heads = opening + inner, iter(heads)
        for lo in range(0, len(at), ROWS_AT_ONCE):
            block = at[lo : lo + ROWS_AT_ONCE]
            before = list(islice(heads, len(block)))
            # (Each row's separator and head.)
            leads = [sep + before[0], *map(("," + inner).__add__, before[1:])]
            sep = "," + inner
            shapes = [
                (places, self._shape_parts(fields, values, depth + 1))
                for fields, places, values in rows.by_shape(block)
            ]
            one = shapes[0][1] if len(shapes) == 1 else None  # (one shape: places None)
            if one is not None and one[1]:
                parts = zip(leads, *one[0], strict=False)  # (as many as the leads)
                yield "".join(chain.from_iterable(parts))
                continue
            texts = self._rows_texts(shapes, len(block))
            if None not in texts:
                yield "".join(map(str.__add__, leads, cast("list[str]", texts)))
                continue
            made = rows.rows_at([i for i, t in zip(block, texts, strict=True) if t is None])
            for lead, text in zip(leads, texts, strict=True):
                row = next(made) if text is None else None
                yield from self._item(lead, row, depth + 1, text)

    def _shape_parts(
        self, fields: tuple[str, ...], values: list[list[Any]], depth: int
    ) -> tuple[list[Iterable[str]], bool] | None:
        """The texts that rows of one shape (``fields``; each field's ``values``) at ``depth``
        are made of, as ``flat`` writes them: the text before the first value (an opening
        brace, a key and a colon), the first value's texts, the text between the first value
        and the second, ..., the text after the last: the join of the ``i``-th of each (an
        endless ``repeat`` of the text between values, a list of a field's values' texts) is
        row ``i``'s text. And whether ``clean`` passes every row's text (the texts of the
        shape and of the values looked at together, as in ``_rows_texts``; a number's text
        holds nothing the test looks for, nor makes it with the text beside it). None for a
        shape with a key the encoder writes otherwise, or a value not of ``_SCALARS`` (each
        such row is made a dict)."""
        if not fields:
            return [repeat("{}")], True
        if not all(type(k) is str for k in fields):
            return None
        made = [self._value_texts(v) for v in values]
        if None in made:
            return None
        pairs = cast("list[tuple[list[str], bool]]", made)
        columns = [texts for texts, _ in pairs]
        words = [texts for texts, of_words in pairs if of_words]
        inner, end, _ = self.depth(depth)
        keys = [self.text(k) + ": " for k in fields]
        passed = self.clean is None or self.clean[0]("".join(chain(keys, *words)))
        parts: list[Iterable[str]] = [repeat("{" + inner + keys[0])]
        for key, column in zip(keys[1:], columns, strict=False):
            parts += [column, repeat("," + inner + key)]
        parts += [columns[-1], repeat(end + "}")]
        return parts, passed

    def _rows_texts(
        self,
        shapes: list[tuple[list[int] | None, tuple[list[Iterable[str]], bool] | None]],
        n: int,
    ) -> list[str | None]:
        """The text ``flat`` gives each of ``n`` rows of ``shapes`` (each shape's places among
        them, None: all of them; its ``_shape_parts``), made by one join per row; None for a
        row whose shape has no parts or whose text ``clean`` rejects (looked at one row at a
        time only where the shape's texts together show something)."""
        out: list[str | None] = [None] * n
        for places, made in shapes:
            if made is None:
                continue
            parts, passed = made
            rows = islice(zip(*parts, strict=False), n if places is None else len(places))
            texts: list[str | None] = list(map("".join, rows))
            if not passed and self.clean is not None:
                texts = [t if self.clean[0](cast("str", t)) else None for t in texts]
            if places is None:
                out = texts
            else:
                for j, t in zip(places, texts, strict=True):
                    out[j] = t
        return out

    def _value_texts(self, values: list[Any]) -> tuple[list[str], bool] | None:
        """Each value's text as the encoder writes it, and whether any is not a number's
        (digits, a sign, a point, an exponent, ``NaN``, ``Infinity``); None if a value is not
        of ``_SCALARS``."""
        types = set(map(type, values))
        if types == {int}:
            return list(map(repr, values)), False
        if types == {str}:
            return list(map(self.text, values)), True
        if types == {float}:
            texts = list(map(repr, values))
            if _NOT_FINITE.isdisjoint(texts):
                return texts, False
        if types <= _SCALARS:
            return list(map(self.scalar, values)), True
        return None


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
