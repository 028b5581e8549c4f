"""Column-wise parse of the lines whose format is fixed (Arrow compute kernels over a chunk).

Most lines of a daemon log are printed by a handful of format strings: the C++ prover's
``CUZK_TIMING:`` lines with integer values (T1-T8, T17-T19), its ``CUZK_NTT_H:`` line, the
engine's TIMELINE lines, and the tracing lines kept for their timestamp only ("clock" lines).
Lines in the exact printed form of one of those are parsed here, a whole chunk at a time: the
C++ lines from their bytes by numpy (a line with its values' digits taken out is the text of
its format string; each value is read from its digits), the others split into their words and
values (string columns; a regex, where one is used, only tests lines) with one cast per
integer column, and the events built from the columns.
A line in any other form (extra spaces, unknown keys, values that are not plain integers, torn
lines) is left to the per-line parsers of its family, which take every form; both give the
same event for a line in the exact form.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cuzk_diag.ingest.parse.classify import (
    _bools,
    bools_array,
    ints_array,
    numbers,
    scalar,
    split_lines,
    tracing_heads,
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
    TIMING_PREFIX,
)
from cuzk_diag.records import Event, Family, Value

_new = tuple.__new__
_INT = r"-?[0-9]{1,18}"  # the values a cast to int64 takes exactly as int() does

#: The ``CUZK_TIMING:`` line of each format string with its values taken out (what
#: ``_cpp`` groups lines by), with the event kind and the keys.
_TIMING_SHAPES = {
    TIMING_PREFIX + " ".join(f"{k}=" for k in keys): (kind, keys)
    for keys, kind in _CANONICAL.items()
}
#: The ``CUZK_NTT_H:`` line with its values' digits taken out (``_digit_values``), with its
#: event kind and columns.
_NTT_H_SHAPES = {
    NTT_H_PREFIX + " ".join(f"{k}=ms" for k in NTT_H_KEYS): (
        "ntt_h",
        tuple(_NTT_H_COLUMN[k] for k in NTT_H_KEYS),
    )
}
_TIMELINE_PARTS = ("off", "event", "job", "detail")  # (after the prefix, split at commas)
_TIMELINE_EVENT_SET = split_lines("".join(f"{e}\n" for e in sorted(TIMELINE_EVENTS)), 64)[0]
# What makes the per-line TIMELINE parser look closer (another writer's line inside it).
_TIMELINE_SUSPECT_RE2 = r"CUZK_|Z |.TIMELINE,"
#: At most this many detail shapes of one chunk are parsed in bulk (each costs a few kernels).
_MAX_SHAPES = 32


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

    def events(self, source: int) -> list[Event]:
        n = len(self.rows)
        cols = [
            _values(c, shared=k == "job_id") if isinstance(c, pa.Array) else c
            for k, c in zip(self.names, self.cols, strict=True)
        ]
        fields = _dicts(self.names, cols, n)
        kinds = repeat(self.kind) if isinstance(self.kind, str) else _interned(self.kind)
        lines = self.lines.tolist()
        rest = repeat(source), repeat(self.family), kinds, fields, repeat(False)
        # (``tuple.__new__`` mapped over the zipped columns makes each event in C: a loop here
        # built a tuple per event and passed it through a generic call, ~230 instructions more.
        # Not strict: the repeats never end.)
        return list(map(_new, repeat(Event), zip(lines, *rest, strict=False)))


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


def fixed_events(groups: list[Group], size: int, source: int) -> tuple[list[Event], np.ndarray]:
    """The events of ``groups`` (group after group), and for each of ``size`` selected lines
    the index of its event among them (-1 for a line no group holds)."""
    evs: list[Event] = []
    at = np.full(size, -1, dtype=np.int64)
    for g in groups:
        at[g.rows] = np.arange(len(evs), len(evs) + len(g.rows))
        evs.extend(g.events(source))
    return evs, at


def parse_fixed(
    sel: pa.StringArray, index: np.ndarray, lineno: int, source: int, clock: np.ndarray | None
) -> list[Event | None]:
    """Events of the selected lines ``sel`` that have a fixed form, None for the others."""
    tracing = _bools(tracing_heads(sel))
    groups = extract_fixed(sel, index, lineno, clock, tracing)
    evs, at = fixed_events(groups, len(sel), source)
    return [evs[i] if i >= 0 else None for i in at.tolist()]


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


def _dicts(
    keys: Sequence[str], cols: Sequence[list[Value] | Value], n: int
) -> list[dict[str, Value]]:
    """One dict per row of ``n`` rows: a key per column of ``cols``, in key order; a column is a
    list of each row's value, or a value every row has (not a list)."""
    if len(keys) <= 4:
        lists: list[list[Value]] = [c if isinstance(c, list) else [c] * n for c in cols]
        if len(keys) == 1:
            (k1,) = keys
            return [{k1: a} for a in lists[0]]
        if len(keys) == 2:
            k1, k2 = keys
            return [{k1: a, k2: b} for a, b in zip(lists[0], lists[1], strict=True)]
        if len(keys) == 3:
            k1, k2, k3 = keys
            return [{k1: a, k2: b, k3: c} for a, b, c in zip(*lists, strict=True)]
        k1, k2, k3, k4 = keys
        return [{k1: a, k2: b, k3: c, k4: d} for a, b, c, d in zip(*lists, strict=True)]
    # (A dict display per row, as above, is the fastest: 120 ns a row, compiled. Wider rows
    # are rarer: each a copy of one dict with every key, in order, and the values every row
    # has, whose other values are then set a column at a time: ~260 instructions a value,
    # compiled, against ~700 for a dict of each row's zip with the keys.)
    first: dict[str, Value] = {
        k: None if isinstance(c, list) else c for k, c in zip(keys, cols, strict=True)
    }
    out = [first.copy() for _ in range(n)]
    for k, c in zip(keys, cols, strict=True):
        if isinstance(c, list):
            _fill(out, k, c)
    return out


def _fill(out: list[dict[str, Value]], key: str, col: list[Value]) -> None:
    """Set ``key`` of each dict of ``out`` to its value in ``col`` (as long as ``out``)."""
    for i in range(len(out)):
        d = out[i]
        d[key] = col[i]


def _cpp(
    sel: pa.StringArray,
    nos: np.ndarray,
    rows: np.ndarray,
    family: Family,
    plans: dict[str, tuple[str, tuple[str, ...]]],
    groups: list[Group],
) -> None:
    """Integer C++ lines (``CUZK_TIMING:``, ``CUZK_NTT_H:``) in the exact form of their format
    string: those whose text with the values taken out (``_digit_values``) is one of ``plans``
    (the format strings' texts, each with its event kind and keys), a group per text. ``rows``:
    the lines of ``sel`` that start with the family's prefix."""
    if not len(rows):
        return
    codes, shape_texts, ints, value_at = _digit_values(sel.take(ints_array(rows)))
    for code, text in enumerate(shape_texts):
        plan = plans.get(text)
        if plan is None:
            continue  # not a format string's text: the per-line parser's
        kind, names = plan
        pick = codes == code
        if not pick.any():
            continue
        v = value_at[pick]
        cols: list[pa.Array | Value] = [ints_array(ints[v + i]) for i in range(len(names))]
        r = rows[pick]
        groups.append(Group(r, nos[r], family, kind, list(names), cols))


def _digit_values(lines: pa.StringArray) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    """Lines of ``key=<digits>`` words read from their bytes by numpy: each line's text without
    the digits of its values (a value: the digits right after a ``=``, up to the next character
    that is not a digit) as a code, numbered in the order of their first lines, and the text
    of each code; the values as int64; and the index of each line's first value. A line with
    a ``=`` without digits after it, or a value of more than 18 digits (more than an int64 holds
    exactly), gets code -1. (A line whose text is a format string's with the values taken out
    is then in that exact form: a sign, or anything else after a value, stays in the text.)

    (Splitting the lines into words and the words into keys and values took kernels that copy
    every word, and the values' tests as many again: some 5,000 instructions a line.)"""
    _, bounds, text = lines.buffers()
    at = np.frombuffer(bounds, np.int32, len(lines) + 1, lines.offset * 4).astype(np.int64)
    data = np.frombuffer(text, dtype=np.uint8)[at[0] : at[-1]]
    n = len(at) - 1
    at -= at[0]
    digit = np.flatnonzero((data - 48) <= 9)  # (wraps around below "0": uint8)
    # The runs of digits; a value is a run right after a "=" (the first byte of a line
    # given here is a prefix's, no digit).
    head = np.ones(len(digit), dtype=bool)
    head[1:] = digit[1:] != digit[:-1] + 1
    heads = np.flatnonzero(head)
    is_value = data[digit[heads] - 1] == 61
    starts = digit[heads[is_value]]
    length = np.diff(np.append(heads, len(digit)))
    count = length[is_value]
    taken = digit[np.repeat(is_value, length)]  # the values' digits
    begin = np.cumsum(count) - count  # each value's first digit in ``taken``
    per_line = np.diff(np.searchsorted(starts, at))
    eq = np.diff(np.searchsorted(np.flatnonzero(data == 61), at))
    odd = eq != per_line
    odd[np.searchsorted(at, starts[count > 18], side="right") - 1] = True
    keep = np.ones(len(data), dtype=bool)
    keep[taken] = False
    shapes = pa.StringArray.from_buffers(
        n,
        pa.py_buffer((at - np.searchsorted(taken, at)).astype(np.int32)),
        pa.py_buffer(data[keep]),
    )
    enc = pc.dictionary_encode(shapes)
    codes = np.where(odd, -1, numbers(enc.indices))
    place = np.repeat(starts + count, count) - taken - 1  # a digit's place, from the right
    digits = (data[taken] - 48).astype(np.int64) * _POWERS[np.minimum(place, 18)]
    ints = np.add.reduceat(digits, begin) if len(begin) else begin
    return codes, enc.dictionary.to_pylist(), ints, np.cumsum(per_line) - per_line


#: 10 to the power of a digit's place (up to 18: the lines of longer values are left alone).
_POWERS = 10 ** np.arange(19, dtype=np.int64)


@dataclass
class _Pairs:
    """Texts cut into words at a separator, and each word into its key and value at its first
    ``=`` (a word without one is all key)."""

    line_at: np.ndarray  # the index of each text's first word, and the number of words
    keys: pa.Array  # per word
    has_value: np.ndarray  # per word: it has a ``=``
    value_at: np.ndarray  # per word with a ``=``: the index of its value in ``values``
    values: pa.Array

    @classmethod
    def of(cls, texts: pa.StringArray, sep: str) -> _Pairs:
        words = pc.split_pattern(texts, sep)
        kv = pc.split_pattern(words.flatten(), "=", max_splits=1)
        kv_at = numbers(kv.offsets)
        parts = kv.flatten()
        has_value = np.diff(kv_at) == 2
        starts = kv_at[:-1]
        return cls(
            numbers(words.offsets),
            parts.take(ints_array(starts)),
            has_value,
            np.cumsum(has_value) - 1,
            parts.take(ints_array(starts[has_value] + 1)),
        )

    def shapes(self, sep: str) -> tuple[np.ndarray, list[str]]:
        """Each text with its values taken out (its keys, each with ``=`` when it had a value,
        joined by ``sep`` again) as a code per text, and the text of each code, numbered in the
        order of their first texts (as ``dictionary_encode`` numbers them).

        A word's key and ``=`` are a digit (1 to ``base`` - 1) and a text's digits one integer,
        unique to its shape: one encoding of the words' keys and one of those integers, where
        joining the words' texts took three kernels over every word and one over every text.
        Texts of too many words for an int64 are joined."""
        keys = pc.dictionary_encode(self.keys)
        names = keys.dictionary.to_pylist()
        digit = numbers(keys.indices) * 2 + self.has_value + 1
        base = 2 * len(names) + 1
        at = self.line_at
        size = np.diff(at)
        if not len(size) or base ** int(size.max()) > 2**62:
            return self._joined_shapes(sep)
        place = np.arange(len(digit)) - np.repeat(at[:-1], size)
        number = np.add.reduceat(digit.astype(np.int64) * base**place, at[:-1])
        enc = pc.dictionary_encode(ints_array(number))
        codes: np.ndarray = numbers(enc.indices)
        _, first = np.unique(codes, return_index=True)
        marks = ("", "=")
        texts = [
            sep.join([names[(d - 1) >> 1] + marks[(d - 1) & 1] for d in digit[a:b].tolist()])
            for a, b in zip(at[first].tolist(), at[first + 1].tolist(), strict=True)
        ]
        return codes, texts

    def _joined_shapes(self, sep: str) -> tuple[np.ndarray, list[str]]:
        marked = pc.if_else(
            bools_array(self.has_value),
            pc.binary_join_element_wise(self.keys, scalar(""), scalar("=")),
            self.keys,
        )
        by_text = pa.ListArray.from_arrays(pc.cast(ints_array(self.line_at), pa.int32()), marked)
        shape = pc.dictionary_encode(pc.binary_join(by_text, scalar(sep)))
        codes: np.ndarray = numbers(shape.indices)
        return codes, shape.dictionary.to_pylist()

    def bad_values(self, good: np.ndarray) -> np.ndarray:
        """Per word: it has a value, and ``good`` (per value) says that value is not good."""
        bad = np.zeros(len(self.has_value), dtype=bool)
        bad[self.has_value] = ~good
        return bad

    def lines_with(self, marked: np.ndarray) -> np.ndarray:
        """Per text: whether any of its words is ``marked``."""
        count = np.zeros(len(marked) + 1, dtype=np.int64)
        np.cumsum(marked, out=count[1:])
        return count[self.line_at[1:]] != count[self.line_at[:-1]]  # type: ignore[no-any-return]


def _int_texts(col: pa.StringArray, *, signed: bool = True) -> pa.BooleanArray:
    """Which texts of ``col`` are whole numbers in the form the per-line parsers read (1 to 18
    ASCII digits, after a minus when ``signed``: what a cast to int64 takes exactly as int()
    does): ``^-?[0-9]{1,18}$`` in kernels that read a text's length and characters (a call of
    the regex per text cost three times as much)."""
    digits = col
    if signed:
        minus = pc.starts_with(col, "-")
        if pc.any(minus).as_py():  # (mostly none: then neither the cut nor the choice)
            digits = pc.if_else(minus, pc.utf8_slice_codeunits(col, 1), col)
    good: pa.BooleanArray = pc.and_(
        pc.ascii_is_decimal(digits), pc.less_equal(pc.binary_length(digits), scalar(18))
    )
    return good


def _int_values(col: pa.StringArray, *, signed: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Which texts of ``col`` are whole numbers (``_int_texts``), and their values (0 for the
    others)."""
    good = _int_texts(col, signed=signed)
    if not pc.all(good).as_py():
        col = pc.if_else(good, col, scalar("0"))
    ints: np.ndarray = numbers(pc.cast(col, pa.int64()))
    return _bools(good), ints


def _timeline(sel: pa.StringArray, nos: np.ndarray, rows: np.ndarray, groups: list[Group]) -> None:
    """Whole TIMELINE lines whose detail is ``key=value`` pairs of known keys (``rows``: the
    lines of ``sel`` that start with ``TIMELINE_PREFIX``)."""
    found = _timeline_parts(sel, rows)
    if found is None:
        return
    rows, m, offsets = found
    p = _Pairs.of(m.field("detail"), ",")
    good, ints = _int_values(p.values)
    # (A ``kind`` is text: any value of it is good.)
    odd = p.lines_with(p.bad_values(good) & ~_bools(pc.equal(p.keys, scalar("kind"))))
    codes, texts = p.shapes(",")
    counts = np.bincount(codes, minlength=len(texts))
    for code in np.argsort(-counts, kind="stable")[:_MAX_SHAPES].tolist():
        keys = _detail_plan(texts[code])
        if keys is None:
            continue
        pick = (codes == code) & ~odd
        if not pick.any():
            continue
        at = p.line_at[:-1][pick]
        part = m.filter(bools_array(pick))
        cols: list[pa.Array | Value] = [ints_array(offsets[pick]), part.field("job")]
        for i, (_, how) in enumerate(keys):
            if how == "one":
                cols.append(1)
            elif how == "text":
                cols.append(p.values.take(ints_array(p.value_at[at + i])))
            else:
                cols.append(ints_array(ints[p.value_at[at + i]]))
        names = ["offset_ms", "job_id"] + [k for k, _ in keys]
        r = rows[pick]
        groups.append(Group(r, nos[r], Family.TIMELINE, part.field("event"), names, cols))


def _timeline_parts(
    sel: pa.StringArray, rows: np.ndarray
) -> tuple[np.ndarray, pa.StructArray, np.ndarray] | None:
    """The rows of ``sel`` that are whole TIMELINE lines (``TIMELINE,<offset>,<event>,<job>,``
    and a detail: an offset of 1-18 ASCII digits, an event the engine prints, and no other
    writer's text inside), with their four parts and their offsets; None when there are none.

    Split at the first four commas rather than matched by a regex with groups: RE2 finds a
    match's groups by a second, slower search, which cost more than all the kernels here.
    """
    if not len(rows):
        return None
    lines = sel.take(ints_array(rows))
    split = pc.split_pattern(lines, ",", max_splits=4)
    whole = pc.equal(pc.list_value_length(split), scalar(5))
    if not pc.all(whole).as_py():
        rows, lines, split = rows[_bools(whole)], lines.filter(whole), split.filter(whole)
    cols = [pc.list_element(split, scalar(i + 1)) for i in range(4)]
    good, offsets = _int_values(cols[0], signed=False)
    ok = good & ~_bools(
        pc.or_(
            pc.invert(pc.is_in(cols[1], value_set=_TIMELINE_EVENT_SET)),
            pc.match_substring_regex(lines, _TIMELINE_SUSPECT_RE2),
        )
    )
    if not ok.any():
        return None
    parts = pa.StructArray.from_arrays(cols, names=_TIMELINE_PARTS)
    return rows[ok], parts.filter(bools_array(ok)), offsets[ok]


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
