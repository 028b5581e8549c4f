"""Column-wise parse of the lines whose format is fixed (a whole chunk at a time).

Most lines of a daemon log are printed by a handful of format strings: the C++ prover's
``CUZK_TIMING:`` lines with integer values (T1-T8, T17-T19), its ``CUZK_NTT_H:`` line, the
engine's TIMELINE lines, and the tracing lines kept for their timestamp only ("clock" lines).
Lines in the exact printed form of one of those are parsed here into columns, and the events
built from the columns: the C++ and TIMELINE lines by one loop over their bytes (``scan``: a
line's form is its text with the values taken out, numbered by one dictionary encoding; in the
compiled build only), the tracing lines by Arrow kernels (their words and values as string
columns; a regex, where one is used, only tests lines) with one cast per integer column.
A line in any other form (extra spaces, unknown keys, values that are not plain integers, torn
lines) is left to the per-line parsers of its family, which take every form; both give the
same event for a line in the exact form.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cuzk_diag.event import Columns, Event
from cuzk_diag.ingest.parse.classify import (
    _bools,
    ints_array,
    numbers,
    scalar,
    split_lines,
    tracing_heads,
)
from cuzk_diag.ingest.parse.scan import (
    COMPILED,
    DETAIL_WORDS,
    buffers,
    cpp_fill,
    texts,
    timeline_fill,
)
from cuzk_diag.ingest.parse.timeline import (
    _TIMELINE_DETAIL_KEYS,
    TIMELINE_EVENTS,
    TIMELINE_PREFIX,
)
from cuzk_diag.ingest.parse.timing import (
    _CANONICAL,
    _NTT_H_COLUMN,
    NTT_H_KEYS,
    NTT_H_PREFIX,
    PRESTAGE_VRAM,
    TIMING_PREFIX,
    WORD_FORMS,
)
from cuzk_diag.records import Family, Value

_INT = r"-?[0-9]{1,18}"  # the values a cast to int64 takes exactly as int() does

#: A plan: the event kind of the lines of one form, its fields' names in order, and the values
#: every line of the form has (the words of ``WORD_FORMS``); the other fields take the line's
#: integer values in order.
Plan = tuple[str, tuple[str, ...], dict[str, Value]]
#: The ``CUZK_TIMING:`` line of each format string with its values taken out (what
#: ``_cpp`` groups lines by), with its plan: the all-integer ones (``_CANONICAL``), those
#: that print a word (``WORD_FORMS``) and the ``prestage_vram`` line (T10) with its bare word.
_TIMING_SHAPES: dict[str, Plan] = {
    TIMING_PREFIX + " ".join(f"{k}=" for k in keys): (kind, keys, {})
    for keys, kind in _CANONICAL.items()
}
_TIMING_SHAPES.update(
    {
        TIMING_PREFIX + f"{key}={word}" + "".join(f" {k}=" for k in keys): (
            kind,
            (key, *keys),
            {key: word},
        )
        for kind, key, word, keys in WORD_FORMS
    }
)
_TIMING_SHAPES[TIMING_PREFIX + "prestage_vram" + "".join(f" {k}=" for k in PRESTAGE_VRAM)] = (
    "prestage_vram",
    PRESTAGE_VRAM,
    {},
)
#: The ``CUZK_NTT_H:`` line with its values' digits taken out (``scan.cpp_fill``), with its
#: plan.
_NTT_H_SHAPES: dict[str, Plan] = {
    NTT_H_PREFIX + " ".join(f"{k}=ms" for k in NTT_H_KEYS): (
        "ntt_h",
        tuple(_NTT_H_COLUMN[k] for k in NTT_H_KEYS),
        {},
    )
}
#: The C++ and TIMELINE lines are read by ``scan``'s loops over their bytes where those are
#: compiled; otherwise the per-line parsers read them (see ``scan``). (A module variable: the
#: tests of the scan set it in the pure build too.)
BULK_SCAN = COMPILED
#: The events the engine prints in TIMELINE lines: their texts one after another, where each
#: starts (and the last ends), and the same as a column (a group's kinds are taken from it).
_EVENTS = sorted(TIMELINE_EVENTS)
_EVENT_TEXT = np.frombuffer("".join(_EVENTS).encode("ascii"), dtype=np.uint8)
_EVENT_AT = np.cumsum([0] + [len(e) for e in _EVENTS], dtype=np.int64)
_EVENT_COLUMN = split_lines("".join(f"{e}\n" for e in _EVENTS), 64)[0]
#: The most values a ``CUZK_TIMING:`` or ``CUZK_NTT_H:`` format string prints.
_CPP_WIDTH = max(
    len(keys) - len(words) for _, keys, words in (*_TIMING_SHAPES.values(), *_NTT_H_SHAPES.values())
)


@dataclass
class Group:
    """Lines of one fixed form, as columns: which selected rows they are, their line numbers,
    their kind (one for all, or a column), and their fields (a name and a column each; an int
    or a text for a value every row has)."""

    rows: np.ndarray
    lines: np.ndarray
    family: Family
    kind: str | pa.Array
    names: list[str]
    cols: list[pa.Array | Value]

    def place_events(self, source: int, into: list[Any], places: np.ndarray) -> None:
        """The group's events of input ``source``, each put in ``into`` at its row's place:
        ``places[i]`` (int64) for row ``rows[i]``, none made for a row whose place is -1."""
        cols = [
            _values(c, shared=k == "job_id") if isinstance(c, pa.Array) else c
            for k, c in zip(self.names, self.cols, strict=True)
        ]
        # (A kinds column is the engine's event names: texts, none null.)
        kinds = self.kind if isinstance(self.kind, str) else cast("list[str]", _interned(self.kind))
        # The events read their fields from the columns: the assembly asks them for a field or
        # two (``Event.get``) and copies the others into its blocks and calls
        # (``Event.copy_fields``), never making their dict.
        fields = Columns([sys.intern(k) for k in self.names], cols)
        _made_events(self.lines.tolist(), source, self.family, kinds, fields, into, places)


def extract_fixed(
    sel: pa.StringArray,
    index: np.ndarray,
    lineno: int,
    clock: np.ndarray | None,
    tracing: np.ndarray,
    *,
    full: bool = False,
    prefixed: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> list[Group]:
    """The lines of ``sel`` (selected lines of a chunk) that have a fixed form, as columns.

    ``index`` gives each selected line's position in its chunk (line number ``lineno`` +
    position); ``clock`` marks the selected lines wanted for their timestamp only, ``tracing``
    those with a tracing header (``classify``). The other tracing lines of a frequent printed
    shape are columns too (``shapes``; without ``full``, only those the per-line parser reads
    whole then too). ``prefixed`` marks the selected lines that start with each family's prefix
    (``classify.Classified.prefixed``; tested here without it).
    """
    groups: list[Group] = []
    if not len(sel):
        return groups
    nos = index + lineno
    if prefixed is None:
        prefixes = (TIMING_PREFIX, NTT_H_PREFIX, TIMELINE_PREFIX)
        timing, ntt_h, timeline = (_bools(pc.starts_with(sel, p)) for p in prefixes)
    else:
        timing, ntt_h, timeline = prefixed
    _cpp(sel, nos, np.flatnonzero(timing), Family.TIMING, _TIMING_SHAPES, groups)
    _cpp(sel, nos, np.flatnonzero(ntt_h), Family.NTT_H, _NTT_H_SHAPES, groups)
    _timeline(sel, nos, np.flatnonzero(timeline), groups)
    if clock is not None:
        _clock(sel, nos, clock, groups)
    from cuzk_diag.ingest.parse.shapes import tracing_groups

    free = tracing.copy()  # tracing lines no group holds yet
    for g in groups:
        free[g.rows] = False
    groups.extend(tracing_groups(sel, nos, free, full=full))
    return groups


def parse_fixed(
    sel: pa.StringArray, index: np.ndarray, lineno: int, source: int, clock: np.ndarray | None
) -> list[Event | None]:
    """Events of the selected lines ``sel`` that have a fixed form, None for the others."""
    tracing = tracing_heads(sel)
    groups = extract_fixed(sel, index, lineno, clock, tracing)
    out: list[Event | None] = [None] * len(sel)
    for g in groups:
        g.place_events(source, out, np.ascontiguousarray(g.rows, dtype=np.int64))
    return out


def _interned(col: pa.Array) -> list[Value]:
    """The values of a text column of few distinct values (event kinds), each distinct value
    one interned string: the assembly compares kinds with its own literals and looks them up in
    its tables, which an identical string makes a pointer comparison."""
    enc = pc.dictionary_encode(col)
    if enc.null_count:
        return col.to_pylist()  # type: ignore[no-any-return]
    return _decoded(enc, [sys.intern(k) for k in enc.dictionary.to_pylist()])


def _decoded(enc: pa.DictionaryArray, names: list[Value]) -> list[Value]:
    """The values of a dictionary-encoded column without nulls, each of ``names`` (its
    dictionary's values) one object for all its rows."""
    out: list[Value] = np.array(names, dtype=object)[numbers(enc.indices)].tolist()
    return out


def _values(col: pa.Array, *, shared: bool = False) -> list[Value]:
    """The values of a column as Python objects; those of an integer column without nulls
    through numpy (~40 instructions a value fewer than ``to_pylist``, the same ints). With
    ``shared`` (job ids), one text object per distinct value, so that the events of a job share
    it: made, freed and hashed once (the assembly keys its calls by job id)."""
    if col.null_count:
        return col.to_pylist()  # type: ignore[no-any-return]
    if shared and pa.types.is_string(col.type):
        enc = pc.dictionary_encode(col)
        return _decoded(enc, enc.dictionary.to_pylist())
    if not pa.types.is_integer(col.type):
        return col.to_pylist()  # type: ignore[no-any-return]
    return numbers(col).tolist()  # type: ignore[no-any-return]


def _made_events(
    lines: list[int],
    source: int,
    family: Family,
    kinds: list[str] | str,
    cols: Columns,
    into: list[Any],
    places: np.ndarray,
) -> None:
    """The events of the rows of a group, one per line number of ``lines``, each put in
    ``into`` at ``places[i]`` (none made where that is -1): its kind ``kinds[i]`` (or
    ``kinds``, a text, for every row), and its fields row ``i`` of ``cols``, which it reads
    there, its dict made only when asked for (``Event.fields``). (Compiled, one C loop: each
    event made by its type's ``__new__`` and its members set in place, where a call of the type
    parses its arguments first; and stored at its place, so that a chunk's events are in line
    order as they are made.)"""
    n = len(lines)
    one_kind = kinds if isinstance(kinds, str) else None
    per_row_kinds: list[str] = [] if isinstance(kinds, str) else kinds
    for i in range(n):
        at = places[i]
        if at < 0:
            continue
        ev = Event.__new__(Event)
        ev._fields = None
        ev._cols = cols
        ev._row = i
        ev.line = lines[i]
        ev.source = source
        ev.family = family
        ev.kind = one_kind if one_kind is not None else per_row_kinds[i]
        ev.malformed = False
        into[at] = ev


def _cpp(
    sel: pa.StringArray,
    nos: np.ndarray,
    rows: np.ndarray,
    family: Family,
    plans: dict[str, Plan],
    groups: list[Group],
) -> None:
    """C++ lines (``CUZK_TIMING:``, ``CUZK_NTT_H:``) in the exact form of their format string:
    those whose text with the values taken out (``scan.cpp_fill``) is one of ``plans`` (the
    format strings' texts, each with its ``Plan``), a group per text. ``rows``: the lines of
    ``sel`` that start with the family's prefix."""
    if not BULK_SCAN or not len(rows):
        return
    data, offs, rows = buffers(sel, rows)
    n = len(rows)
    shape, shape_at = _shape_buffers(offs, rows)
    vals = np.zeros((n, _CPP_WIDTH), dtype=np.int64)
    odd = np.zeros(n, dtype=np.uint8)
    cpp_fill(data.data, offs, rows, shape, shape_at, vals, odd)
    codes, shape_texts = _shapes(n, shape, shape_at)
    for code, at_code in enumerate(by_code(codes, len(shape_texts))):
        plan = plans.get(shape_texts[code])
        if plan is None:
            continue  # not a format string's text: the per-line parser's
        kind, names, words = plan
        pick = at_code[odd[at_code] == (2 if words else 0)]
        if not len(pick):
            continue
        v = vals[pick]
        cols: list[pa.Array | Value] = []
        at = 0  # (the next of the line's integer values)
        for name in names:
            if name in words:
                cols.append(words[name])
            else:
                cols.append(ints_array(v[:, at]))
                at += 1
        r = rows[pick]
        groups.append(Group(r, nos[r], family, kind, list(names), cols))


def _shape_buffers(offs: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Room for the forms of the lines ``rows`` (none is longer than its line), and their
    offsets."""
    size = int((offs[rows + 1] - offs[rows]).sum())
    return np.empty(size, dtype=np.uint8), np.zeros(len(rows) + 1, dtype=np.int32)


def by_code(codes: np.ndarray, n_codes: int) -> list[np.ndarray]:
    """The positions of each code of ``codes`` (0 to ``n_codes`` - 1), ascending: one stable
    sort, where a comparison of every position with each code made a pass over them all per
    code (a chunk's lines hold some twenty C++ forms, several hundred tracing shapes)."""
    # (Codes of few values sorted as bytes or 16-bit words: numpy's stable sort of those is a
    # radix sort, 8-15 times as fast as its merge sort of wider integers, the same order.)
    narrow = np.uint8 if n_codes <= 1 << 8 else np.uint16 if n_codes <= 1 << 16 else None
    order = np.argsort(codes if narrow is None else codes.astype(narrow), kind="stable")
    ends = np.cumsum(np.bincount(codes, minlength=n_codes))
    return np.split(order, ends[:-1])


def _shapes(n: int, shape: np.ndarray, shape_at: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The forms the scan wrote for ``n`` lines, as a code per line and the text of each code
    (numbered in the order of their first lines)."""
    forms = pa.StringArray.from_buffers(n, pa.py_buffer(shape_at), pa.py_buffer(shape))
    enc = pc.dictionary_encode(forms)
    return numbers(enc.indices), enc.dictionary.to_pylist()


def _timeline(sel: pa.StringArray, nos: np.ndarray, rows: np.ndarray, groups: list[Group]) -> None:
    """Whole TIMELINE lines (``TIMELINE,<offset>,<event>,<job>,`` and a detail: an offset of
    1-18 ASCII digits, an event the engine prints, no other writer's text inside) whose detail
    is ``key=value`` words of known keys (``scan.timeline_fill``), a group per detail form.
    ``rows``: the lines of ``sel`` that start with ``TIMELINE_PREFIX``."""
    if not BULK_SCAN or not len(rows):
        return
    data, offs, rows = buffers(sel, rows)
    n = len(rows)
    spans = np.empty((n, 4), dtype=np.int64)
    shape, shape_at = _shape_buffers(offs, rows)
    vals = np.empty((n, DETAIL_WORDS), dtype=np.int64)
    good = np.empty((n, DETAIL_WORDS), dtype=np.uint8)
    value_spans = np.empty((n, DETAIL_WORDS, 2), dtype=np.int64)
    timeline_fill(
        data.data,
        offs,
        rows,
        _EVENT_TEXT,
        _EVENT_AT,
        spans,
        shape,
        shape_at,
        vals,
        good,
        value_spans,
    )
    whole = spans[:, 0] >= 0
    if not whole.any():
        return
    codes, texts_ = _shapes(n, shape, shape_at)
    for code, at_code in enumerate(by_code(codes, len(texts_))):
        keys = _detail_plan(texts_[code])
        if keys is None:
            continue
        pick = at_code[whole[at_code]]
        for i, (_, how) in enumerate(keys):
            if how == "int":
                pick = pick[good[pick, i] == 1]  # (a ``kind`` is text: any value of it is good)
        if not len(pick):
            continue
        s = spans[pick]
        cols: list[pa.Array | Value] = [ints_array(s[:, 1]), texts(data, s[:, 2], s[:, 3])]
        for i, (_, how) in enumerate(keys):
            if how == "one":
                cols.append(1)
            elif how == "text":
                at = value_spans[pick, i]
                cols.append(texts(data, at[:, 0], at[:, 1]))
            else:
                cols.append(ints_array(vals[pick, i]))
        names = ["offset_ms", "job_id"] + [k for k, _ in keys]
        kinds = _EVENT_COLUMN.take(ints_array(s[:, 0]))
        r = rows[pick]
        groups.append(Group(r, nos[r], Family.TIMELINE, kinds, names, cols))


def _detail_plan(shape: str) -> list[tuple[str, str]] | None:
    """For a detail shape (``partition=,worker=``): its keys with how each value reads
    (``int``, ``text`` for ``kind``, ``one`` for a bare ``monolithic``), or None when the
    per-line parser must read it (unknown or repeated keys, other bare words)."""
    if not shape:
        return []
    keys: list[tuple[str, str]] = []
    for p in shape.split(","):
        if p == "monolithic":
            keys.append(("monolithic", "one"))
            continue
        k, eq, rest = p.partition("=")
        if not eq or rest or k not in _TIMELINE_DETAIL_KEYS:
            return None
        keys.append((sys.intern(k), "text" if k == "kind" else "int"))  # (see _interned)
    if len({k for k, _ in keys}) != len(keys):
        return None
    return keys


def _clock(sel: pa.StringArray, nos: np.ndarray, clock: np.ndarray, groups: list[Group]) -> None:
    """Tracing lines read for their timestamp only (the text before the first space)."""
    rows = np.flatnonzero(clock)
    if not len(rows):
        return
    lines = sel.take(ints_array(rows))
    at = first_space(lines)
    if at is None:
        ts = pc.list_element(pc.split_pattern(lines, " ", max_splits=1), scalar(0))
    else:
        ts = byte_slice(lines, 0, at)
    groups.append(Group(rows, nos[rows], Family.TRACING, "clock", ["ts"], [ts]))


def first_space(texts: pa.StringArray) -> int | None:
    """The byte offset of the first space of every text of ``texts`` when it is the same in all
    (tracing lines: their timestamps are mostly of one length), else None. The text before or
    after that space is then a ``byte_slice`` of each text, a kernel that only copies: a split
    at the space makes a list of both parts, at some three times the cost."""
    if not len(texts):
        return None
    span = pc.min_max(pc.find_substring(texts, " "))
    at = span["min"].as_py()
    return at if at is not None and at >= 0 and at == span["max"].as_py() else None


def byte_slice(texts: pa.StringArray, start: int, stop: int | None = None) -> pa.StringArray:
    """Bytes ``start`` to ``stop`` (the end if None) of each text, both at ASCII characters of
    every text (the result is whole UTF-8). (``binary_slice`` of the texts viewed as binary;
    without a stop it fails, "Negative buffer resize", in pyarrow 26: the end is given as the
    size of the texts' data, which no text is longer than.)"""
    if stop is None:
        data = texts.buffers()[2]
        stop = start + (data.size if data is not None else 0)
    out: pa.StringArray = pc.binary_slice(texts.view(pa.binary()), start, stop).view(pa.string())
    return out
