"""Tracing lines parsed column-wise, one printed shape at a time.

A daemon log's tracing lines come from a few dozen ``info!`` calls, each printing the same
text with other values: ``<ts>  INFO gpu_worker{worker_id=2 gpu=1 ...}: cuzk_core::engine:
partition GPU prove complete job_id=... partition=7 gpu_ms=3021``. Lines are grouped by their
shape (the text with the timestamp and every field value taken out); for each frequent shape
one line is read by the per-line parser (``tracing.parse_tracing``) and cut into literal text
and values, which gives the shape's plan (made once, and kept for the chunks after:
``_PLANS``): where each value stands, counted in the line's space-separated words (which
word, how many characters in, how many before the word ends), and its class, which the
per-line parser reads in one way only (whole numbers, ``Some(n)``, quoted text, plain text
with no space, brace, quote or non-ASCII character). The shapes and
the pieces a plan cuts from each line are found by loops over the lines' bytes (``scan``:
compiled, C loops; in the pure build the per-line parser reads every tracing line, see
``ENABLED``); a line with as many words whose values are each of their class (tested by the
same loop as it cuts them, which also reads the whole numbers) becomes a row of the shape's
column ``Group``; the others, and every line of a rare or unusual shape, stay with the
per-line parser.

Lines of one shape have the same literal text in the same order. A value of its class holds
no space, so such a line has its words, and its values within them, at the plan's places:
the per-line parser splits it at the same places into the same keys, spans, target and
message, and both give the same event (held to it by ``tests/test_shapes.py`` over every
fixture and over values of every odd form, and by the line-table digests).
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from cuzk_diag.ingest.parse.classify import ints_array
from cuzk_diag.ingest.parse.columnar import (
    _INT,
    Group,
    _shape_buffers,
    _shapes,
    by_code,
)
from cuzk_diag.ingest.parse.scan import (
    COMPILED,
    CUT_INT,
    CUT_PIECE,
    CUT_QUOTED,
    CUT_SOME,
    CUT_TEXT,
    buffers,
    cut_fill,
    texts,
    tracing_shape_fill,
)
from cuzk_diag.ingest.parse.tracing import _scalar, parse_tracing
from cuzk_diag.records import Family, Value

#: The column-wise parse of tracing shapes is on: in the compiled build (its shapes and cuts
#: are ``scan``'s loops over the lines' bytes; in the pure build the per-line parser reads the
#: lines, see ``scan``). Tests set it either way to compare.
ENABLED = COMPILED
#: Levels whose lines of no known message the per-line parser reads whole without ``full``.
_WHOLE = frozenset({"WARN", "ERROR"})
#: The most frequent shapes of a chunk get a plan; a shape needs this many lines.
MAX_SHAPES = 48
MIN_LINES = 8
#: Longer lines, or lines of more fields, stay with the per-line parser: a plan's cost (to make,
#: to run a kernel per field) grows with them, a line's should not.
MAX_LINE = 1024
MAX_FIELDS = 40

#: A whole number as a plan's sample line prints it (``_value_class``).
_INT_RE = re.compile(_INT)
#: Each class of value as ``scan.cut_fill`` checks it (the pieces of every other cut are taken
#: as they are).
_CLASSES = {"int": CUT_INT, "some": CUT_SOME, "quoted": CUT_QUOTED, "text": CUT_TEXT}


def _value_class(raw: str, value: Value) -> str | None:
    """The class of a value printed as ``raw`` that the per-line parser read as ``value``."""
    if not raw.isascii() or any(c in raw for c in " {}"):
        return None
    if type(value) is int:
        some = raw.startswith("Some(") and raw.endswith(")")
        digits = raw[5:-1] if some else raw
        if _INT_RE.fullmatch(digits) and int(digits) == value:
            return "some" if some else "int"
        return None
    if type(value) is str and '"' not in value:
        if raw == f'"{value}"':
            return "quoted"
        if raw == value:
            return "text"
    return None


#: What may stand before the target and before the message (after the spans or the level).
_TARGET_GAPS = ("", " ", ":", ": ")
_MESSAGE_GAPS = ("", " ", ": ")
_HEADER_FIELDS = ("ts", "level", "target", "spans", "message")


class Cut(NamedTuple):
    """Where a piece of a line stands among its words (split at each space): from ``a``
    characters into word ``first`` to ``b`` characters before the end of word ``last``."""

    first: int
    last: int
    a: int
    b: int

    @classmethod
    def of(cls, line: str, start: int, end: int) -> Cut:
        """The cut of ``line[start:end]``."""
        word_end = line.find(" ", end)
        return cls(
            line.count(" ", 0, start),
            line.count(" ", 0, end),
            start - (line.rfind(" ", 0, start) + 1),
            (len(line) if word_end < 0 else word_end) - end,
        )


class Plan(NamedTuple):
    """How the lines of one shape are read column-wise."""

    words: int  # how many words (split at each space) a line of the shape has
    kind: str
    level: str
    names: list[str]  # the event's fields, in the per-line parser's order
    #: per name: ``("cut", Cut)`` (timestamp, spans), ``("value", (Cut, class))`` (the value's
    #: printed text) or ``("const", text)``
    how: list[tuple[str, object]]


def shape_plan(line: str) -> Plan | None:
    """The plan of one tracing line's shape; None when lines of its shape are left to the
    per-line parser."""
    if len(line) > MAX_LINE:
        return None
    ev = parse_tracing(line, 0, 0, True)
    if ev is None or ev.kind == "gpu_prove_time":  # (its duration is read from the message)
        return None
    fields = ev.fields
    if len(fields) > MAX_FIELDS:
        return None
    ts, level, target = fields.get("ts"), fields.get("level"), fields.get("target")
    message, spans = fields.get("message"), fields.get("spans")
    if not isinstance(ts, str) or not isinstance(level, str) or not line.startswith(ts):
        return None
    if not isinstance(message, str) or not message or spans is not None and not spans:
        return None
    # Where the header fields are: level, the spans right after it, target, message.
    at = line.find(level, len(ts))
    if at < 0 or line[len(ts) : at].strip(" ") or at == len(ts):
        return None
    after = at + len(level)
    spans_at = spans_end = -1
    if isinstance(spans, str):
        spans_at, spans_end = after + 1, after + 1 + len(spans)
        if line[spans_at:spans_end] != spans:
            return None
        after = spans_end
    if isinstance(target, str):
        at = line.find(target, after)
        if at < 0 or line[after:at] not in _TARGET_GAPS:
            return None
        after = at + len(target)
    at = line.find(message, after)
    if at < 0 or line[after:at] not in _MESSAGE_GAPS:
        return None
    body = at + len(message)
    # Every `key=` of a field (in a span, or after the message), in line order; a key printed
    # twice keeps its first place and its last value, as the parser's dict does.
    keys = [k for k in fields if k not in _HEADER_FIELDS]
    marks: list[tuple[int, str]] = []
    for k in keys:
        for lead in (" ", "{"):
            found = line.find(f"{lead}{k}=")
            while found >= 0:
                if not (spans_at <= found < spans_end or found >= body):
                    return None
                marks.append((found, k))
                found = line.find(f"{lead}{k}=", found + 1)
    marks.sort()
    last = {k: found for found, k in marks}
    if set(last) != set(keys):
        return None
    values: dict[str, tuple[Cut, str]] = {}
    pos = len(ts)
    for found, k in marks:
        start = found + len(k) + 2
        if start <= pos:
            return None
        end = start
        while end < len(line) and line[end] not in " {}":
            end += 1
        if found == last[k]:
            raw = line[start:end]
            value = fields[k]
            cls = _value_class(raw, value) if _scalar(raw) == value else None
            if cls is None:
                return None
            values[k] = (Cut.of(line, start, end), cls)
        # (an earlier value of a key printed twice is overwritten: any text of no space)
        pos = end
        if spans_end > pos and line[pos:spans_end] == "}":  # the spans end after this value
            pos = spans_end
            spans_end = -2  # (closed)
    if spans_end >= 0:
        return None  # spans without a field of their own: left to the per-line parser
    cuts = {"ts": Cut.of(line, 0, len(ts))}
    if isinstance(spans, str):
        cuts["spans"] = Cut.of(line, spans_at, spans_at + len(spans))
    how: list[tuple[str, object]] = []
    for k in fields:
        if k in ("ts", "spans"):
            how.append(("cut", cuts[k]))
        elif k in _HEADER_FIELDS:
            how.append(("const", fields[k]))
        else:
            how.append(("value", values[k]))
    names = [sys.intern(k) for k in fields]  # (see columnar._interned)
    return Plan(line.count(" ") + 1, ev.kind, level, names, how)


def tracing_groups(
    sel: pa.StringArray, nos: np.ndarray, free: np.ndarray, *, full: bool = True
) -> list[Group]:
    """Column groups of the tracing lines of ``sel`` (a chunk's selected lines, at line numbers
    ``nos``) in a frequent shape; ``free`` marks the tracing lines no other group holds. Without
    ``full`` only shapes the per-line parser reads whole either way: a known message, or a
    warning or error (``tracing.parse_tracing`` keeps only the message of the others)."""
    if not ENABLED or not len(sel):
        return []
    rows = np.flatnonzero(free)
    if len(rows) < MIN_LINES:
        return []
    data, offs, rows = buffers(sel, rows)
    shape, shape_at, spaced = scan_shapes(data, offs, rows)
    codes, shape_texts = _shapes(len(rows), shape, shape_at)
    at_code = by_code(codes, len(shape_texts))
    counts = np.fromiter(map(len, at_code), dtype=np.int64, count=len(at_code))
    found: list[_Found] = []
    for code in np.argsort(-counts, kind="stable")[:MAX_SHAPES].tolist():
        if counts[code] < MIN_LINES:
            break
        pick = at_code[code]
        text = shape_texts[code]
        plan = _PLANS.get(text)
        if plan is not None and not _wanted(plan, full):
            continue
        spaces = Spaces(*spaced, pick)
        one = None if plan is None else _Found.cut(data, offs, rows[pick], plan, spaces)
        if one is None or 2 * len(one.rows) < len(pick):
            # No plan yet, or one that most of these lines do not fit (made from a line whose
            # values were of other classes): the plan of this chunk's first line of the shape.
            fresh = shape_plan(sel[int(rows[pick[0]])].as_py())
            if fresh is not None and fresh != plan and _wanted(fresh, full):
                if len(_PLANS) >= PLANS_KEPT:
                    _PLANS.clear()
                _PLANS[text] = fresh
                one = _Found.cut(data, offs, rows[pick], fresh, spaces)
        if one is not None:
            found.append(one)
    return [one.group(nos) for one in found]


#: The plans made so far, by shape text. A plan reads every line of its shape that fits it
#: (has its number of words and each value of its class) as the per-line parser does,
#: whichever line of the shape it was made from: made once, it serves the chunks after (made
#: in every chunk, by a per-line parse of a sample line, the plans cost about a tenth of the
#: tracing shapes' parse); a chunk whose lines of the shape mostly do not fit it makes its
#: own. At most ``PLANS_KEPT`` are kept.
_PLANS: dict[str, Plan] = {}
PLANS_KEPT = 4096


def _wanted(plan: Plan, full: bool) -> bool:
    """Are the lines of ``plan``'s shape read by columns? Every plan's with ``full``, else
    only those of a known message or of a warning or error (see ``tracing_groups``)."""
    return full or plan.kind != "tracing" or plan.level in _WHOLE


class Spaces(NamedTuple):
    """Where the spaces of lines stand, as ``scan.tracing_shape_fill`` wrote them: line ``i``'s
    from ``spaces[space_at[at[i]]]`` to ``spaces[space_at[at[i] + 1] - 1]``."""

    spaces: np.ndarray
    space_at: np.ndarray
    at: np.ndarray


def scan_shapes(
    data: np.ndarray, offs: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """The shapes of the lines ``rows`` (of a text's ``data`` and ``offs``, as ``scan.buffers``
    gives them) and their offsets, and the lines' spaces and their offsets: one pass of
    ``scan.tracing_shape_fill``."""
    shape, shape_at = _shape_buffers(offs, rows)
    spaces = np.empty(len(shape), dtype=np.int32)  # (a line has no more spaces than bytes)
    space_at = np.zeros(len(rows) + 1, dtype=np.int32)
    tracing_shape_fill(data.data, offs, rows, shape, shape_at, spaces, space_at)
    return shape, shape_at, (spaces, space_at)


def cut_pieces(
    data: np.ndarray,
    offs: np.ndarray,
    rows: np.ndarray,
    words: int,
    cuts: list[Cut],
    classes: list[int] | None = None,
    spaces: Spaces | None = None,
) -> tuple[np.ndarray, list[pa.Array]]:
    """Which lines ``rows`` (of a text's ``data`` and ``offs``, as ``scan.buffers``
    gives them) have ``words`` words (split at each space) and each piece of its class
    (``classes``: a ``scan.CUT_*`` per cut; None: every piece as it is), and the piece of each
    of ``cuts`` in those lines: a text, or the int64 values of a whole number's class (a quoted
    text without its quotes). ``spaces``: where the lines' spaces stand, found already
    (``scan_shapes``); None: found here."""
    if spaces is None:
        _, _, found = scan_shapes(data, offs, rows)
        spaces = Spaces(*found, np.arange(len(rows), dtype=np.int64))
    kinds = np.array(classes if classes is not None else [CUT_PIECE] * len(cuts), dtype=np.uint8)
    table = np.array([tuple(c) for c in cuts], dtype=np.int64).reshape(-1, 4)
    spans = np.empty((len(rows), len(cuts), 2), dtype=np.int64)
    vals = np.empty((len(rows), len(cuts)), dtype=np.int64)
    fit = np.zeros(len(rows), dtype=np.uint8)
    cut_fill(data.data, offs, rows, *spaces, words, table, spans, fit, kinds, vals)
    ok = fit == 1
    if not ok.all():  # (mostly every line fits: no copies then)
        spans, vals = spans[ok], vals[ok]
    return ok, [
        ints_array(vals[:, f])
        if kinds[f] in (CUT_INT, CUT_SOME)
        else texts(data, spans[:, f, 0], spans[:, f, 1])
        for f in range(len(cuts))
    ]


class _Found:
    """The lines of one shape with as many words as its plan says and each value of its class,
    and each field's column cut from them (``raw``: None for a constant)."""

    def __init__(self, rows: np.ndarray, plan: Plan, raw: list[pa.Array | None]) -> None:
        self.rows, self.plan, self.raw = rows, plan, raw

    @classmethod
    def cut(
        cls, data: np.ndarray, offs: np.ndarray, rows: np.ndarray, plan: Plan, spaces: Spaces
    ) -> _Found | None:
        """The lines ``rows`` of the shape of ``plan`` that have its number of words and each
        value of its class, and each field's column cut from them (``cut_pieces``; ``spaces``:
        where their spaces stand)."""
        cuts: list[Cut] = []
        classes: list[int] = []
        for way, what in plan.how:
            if way == "cut":
                assert isinstance(what, Cut)
                cuts.append(what)
                classes.append(CUT_PIECE)
            elif way == "value":
                assert isinstance(what, tuple)
                cuts.append(what[0])
                classes.append(_CLASSES[what[1]])
        ok, pieces = cut_pieces(data, offs, rows, plan.words, cuts, classes, spaces)
        if not ok.any():
            return None
        taken = iter(pieces)
        raw = [None if way == "const" else next(taken) for way, _ in plan.how]
        return cls(rows[ok], plan, raw)

    def group(self, nos: np.ndarray) -> Group:
        cols: list[pa.Array | Value] = []
        for (_, what), col in zip(self.plan.how, self.raw, strict=True):
            if col is None:
                assert isinstance(what, str)
                cols.append(what)
            else:
                cols.append(col)
        plan, rows = self.plan, self.rows
        return Group(rows, nos[rows], Family.TRACING, plan.kind, plan.names, cols)
