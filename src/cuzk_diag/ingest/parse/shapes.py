"""Tracing lines parsed column-wise, one printed shape at a time.

A daemon log's tracing lines come from a few dozen ``info!`` calls, each printing the same
text with other values: ``<ts>  INFO gpu_worker{worker_id=2 gpu=1 ...}: cuzk_core::engine:
partition GPU prove complete job_id=... partition=7 gpu_ms=3021``. Lines are grouped by their
shape (the text with the timestamp and every field value taken out); for each frequent shape
one line is read by the per-line parser (``tracing.parse_tracing``) and cut into literal text
and values, which gives one RE2 pattern for the shape: the literal text as it is, each value
captured by a class the per-line parser reads in one way only (whole numbers, ``Some(n)``,
quoted text, plain text with no space, brace, quote or non-ASCII character). The lines of the
shape that match it become a column ``Group``; the others, and every line of a rare or unusual
shape, stay with the per-line parser.

A line that matches a shape's pattern has that shape's literal text at the same places, and
no value holds a space, so the per-line parser splits it at the same places into the same
keys, spans, target and message: both give the same event (held to it by
``tests/test_shapes.py`` over every fixture, and by the line-table digests).
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cuzk_diag.ingest.parse.classify import TRACING_TS_RE2
from cuzk_diag.ingest.parse.columnar import Group
from cuzk_diag.ingest.parse.tracing import _scalar, parse_tracing
from cuzk_diag.records import Family, Value

#: The column-wise parse of tracing shapes is on (tests turn it off to compare).
ENABLED = True
#: Levels whose lines of no known message the per-line parser reads whole without ``full``.
_WHOLE = frozenset({"WARN", "ERROR"})
#: The most frequent shapes of a chunk get a pattern; a shape needs this many lines.
MAX_SHAPES = 48
MIN_LINES = 8
#: Longer lines, or lines of more fields, stay with the per-line parser: a pattern's cost (to
#: make, to compile, to run with its captures) grows with them, a line's should not.
MAX_LINE = 1024
MAX_FIELDS = 40

#: What the shape of a line leaves out: its timestamp, and each value after a ``key=``.
_SHAPE_TS_RE2 = rf"^{TRACING_TS_RE2}"
_SHAPE_VALUE_RE2 = r'=(?:"[^"]*"|[^ {}]*)'
_INT = r"-?[0-9]{1,18}"
_INT_RE = re.compile(_INT)
_TEXT = r"[!#-z|~]*"  # printable ASCII but space, quote and braces
#: Plain text the per-line parser would not keep as it is (a number, None, Some(...)).
_NOT_TEXT_RE2 = r"^(?:-?[0-9]+|None|Some\(.*\))$"
_RE2_SPECIAL = frozenset("\\.^$|?*+()[]{}")

#: How a value reads: its pattern (a named group ``{g}``) and whether its column is numeric.
_CLASSES = {
    "int": ("(?P<{g}>" + _INT + ")", True),
    "some": (r"Some\((?P<{g}>" + _INT + r")\)", True),
    "quoted": ('"(?P<{g}>' + _TEXT + ')"', False),
    "text": ("(?P<{g}>" + _TEXT + ")", False),
}


def _escape(text: str) -> str:
    return "".join("\\" + c if c in _RE2_SPECIAL else c for c in text)


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


class Plan(NamedTuple):
    """How the lines of one shape are read column-wise."""

    pattern: str  # RE2, anchored at both ends
    kind: str
    level: str
    names: list[str]  # the event's fields, in the per-line parser's order
    #: per name: ``("group", name)`` (timestamp, spans), ``("value", (group, class))`` or
    #: ``("const", text)``
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
    parts = [f"(?P<ts>{TRACING_TS_RE2})"]
    groups: dict[str, tuple[str, str]] = {}
    pos = len(ts)
    for found, k in marks:
        start = found + len(k) + 2
        if start <= pos:
            return None
        end = start
        while end < len(line) and line[end] not in " {}":
            end += 1
        literal = line[pos:start]
        if pos <= spans_at < start:  # the spans start in this stretch of text
            cut = spans_at - pos
            parts.append(_escape(literal[:cut]) + "(?P<spans>" + _escape(literal[cut:]))
        else:
            parts.append(_escape(literal))
        raw = line[start:end]
        if found == last[k]:
            value = fields[k]
            cls = _value_class(raw, value) if _scalar(raw) == value else None
            if cls is None:
                return None
            group = f"v{len(groups)}"
            groups[k] = (group, cls)
            parts.append(_CLASSES[cls][0].replace("{g}", group))
        else:
            parts.append("[^ {}]*")  # (overwritten by the key's last value)
        pos = end
        if spans_end > pos and line[pos:spans_end] == "}":  # the spans end after this value
            parts.append(r"\})")
            pos = spans_end
            spans_at = spans_end = -1
    if spans_end >= 0:
        return None  # spans without a field of their own: left to the per-line parser
    parts.append(_escape(line[pos:]))
    how: list[tuple[str, object]] = []
    for k in fields:
        if k in ("ts", "spans"):
            how.append(("group", k))
        elif k in _HEADER_FIELDS:
            how.append(("const", fields[k]))
        else:
            how.append(("value", groups[k]))
    names = [sys.intern(k) for k in fields]  # (see columnar._interned)
    return Plan("^" + "".join(parts) + "$", ev.kind, level, names, how)


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
    texts = sel.take(pa.array(rows))
    shape = pc.replace_substring_regex(texts, _SHAPE_TS_RE2, "")
    shape = pc.replace_substring_regex(shape, _SHAPE_VALUE_RE2, "=")
    enc = pc.dictionary_encode(shape)
    codes = enc.indices.to_numpy(zero_copy_only=False)
    counts = np.bincount(codes, minlength=len(enc.dictionary))
    groups: list[Group] = []
    for code in np.argsort(-counts, kind="stable")[:MAX_SHAPES].tolist():
        if counts[code] < MIN_LINES:
            break
        pick = np.flatnonzero(codes == code)
        plan = shape_plan(texts[int(pick[0])].as_py())
        if plan is None or not full and plan.kind == "tracing" and plan.level not in _WHOLE:
            continue
        group = _group(texts.take(pa.array(pick)), rows[pick], nos, plan)
        if group is not None:
            groups.append(group)
    return groups


def _group(texts: pa.StringArray, rows: np.ndarray, nos: np.ndarray, plan: Plan) -> Group | None:
    """The lines of one shape that match its pattern, as a column group."""
    how = plan.how
    try:
        m = pc.extract_regex(texts, plan.pattern)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None  # a pattern RE2 will not take: the per-line parser reads these lines
    ok = m.is_valid()
    for way, what in how:
        if way == "value" and isinstance(what, tuple) and what[1] == "text":
            plain = pc.invert(pc.match_substring_regex(m.field(what[0]), _NOT_TEXT_RE2))
            ok = pc.and_(ok, pc.fill_null(plain, False))
    if not pc.any(ok).as_py():
        return None
    if not pc.all(ok).as_py():
        m = m.filter(ok)
        rows = rows[ok.to_numpy(zero_copy_only=False)]
    n = len(rows)
    cols: list[pa.Array | int] = []
    for way, what in how:
        if way == "const":
            cols.append(pa.array([what] * n, pa.string()))
        elif way == "group":
            assert isinstance(what, str)
            cols.append(m.field(what))
        else:
            assert isinstance(what, tuple)
            group, cls = what
            col = m.field(group)
            cols.append(pc.cast(col, pa.int64()) if _CLASSES[cls][1] else col)
    return Group(rows, nos[rows], Family.TRACING, plan.kind, plan.names, cols)
