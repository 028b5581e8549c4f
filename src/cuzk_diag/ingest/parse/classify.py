"""Bulk classification of a whole chunk of lines (Arrow compute kernels, in C).

Every line is counted under its family here; which lines become events is decided here too, so
lines analysis does not need are never touched by Python: every C++ and TIMELINE line, the
tracing messages analysis uses (``ANALYSIS_TRACING_KINDS``), warnings, errors, bench output and
damaged lines; tracing lines right before or after a C++ line are selected as cheap "clock"
events (their timestamp only), since they bracket the C++ line in time.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cuzk_diag.ingest.parse import scan
from cuzk_diag.ingest.parse.timeline import TIMELINE_PREFIX
from cuzk_diag.ingest.parse.timing import NTT_H_PREFIX, TIMING_PREFIX
from cuzk_diag.ingest.parse.tracing import TRACING_KINDS, is_tracing
from cuzk_diag.sources import DAMAGED

# RE2 forms (Arrow compute) of the classifiers the per-line parsers apply.
#: A tracing line's timestamp (``tracing._TRACING_RE``).
TRACING_TS_RE2 = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)"
_TRACING_HEAD_RE2 = rf"^{TRACING_TS_RE2} +(?:TRACE|DEBUG|INFO|WARN|ERROR) "
_BENCH_HEAD_RE2 = (
    r"^(?:=== |\s*\[\d+/\d+\] |(?:proof type|count|concurrency|total time|completed|failed|"
    r"wall time|prove time|throughput|status|job_id|timings|proof):)"
)
#: Tracing lines analysis needs; the others are only counted.
ANALYSIS_TRACING_KINDS = frozenset(
    {
        "engine_start",
        "gpu_workers_init",
        "interlock",
        "gpu_worker_started",
        "gpu_threads",
        "rayon_threads",
        "pipeline_start",
        "dispatch",
        "proof_assembled",
        "self_check_failed",
        "gpu_prove_time",
        "partition_gpu_failed",
        "gpu_prove_start_failed",
        "skip_failed_job",
        "gpu_timing_prove_start",
        "fin_timing_finalizer",
        "pinned_fallback",
    }
)


#: The messages of those kinds: a tracing line is selected when one is anywhere in it.
_RELEVANT_WORDS = [p for p, k in TRACING_KINDS if k in ANALYSIS_TRACING_KINDS]
#: The tracing lines analysis needs: warnings, errors and those messages.
_RELEVANT_RE2 = r"^\S+ +(?:WARN|ERROR) |" + "|".join(map(re.escape, _RELEVANT_WORDS))
#: The tracing headers and the relevant lines are found by one loop over each line's bytes
#: (``scan.tracing_fill``) in the compiled build, else by the RE2 kernels of the two regexes
#: above; both give the same lines. (A module variable: the tests set it.)
BYTE_SCAN = scan.COMPILED
_WORDS = scan.Words(_RELEVANT_WORDS)


@dataclass
class Classified:
    """One chunk's lines, their counts by family, and the lines to parse."""

    lines: pa.StringArray  # every line of the chunk (cut to the length limit)
    counts: Counter[str]  # physical lines by family
    index: np.ndarray  # positions of the lines to parse, ascending
    selected: pa.StringArray  # those lines
    clock: np.ndarray | None  # per selected line: a tracing line wanted for its timestamp only
    tracing: np.ndarray  # per selected line: it has a tracing line's header
    #: per selected line: it starts with ``TIMING_PREFIX``, ``NTT_H_PREFIX``, ``TIMELINE_PREFIX``
    #: (the column-wise parse picks its lines by these)
    prefixed: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    #: The chunk's edges, for the clock lines beside a C++ line of the next or the previous
    #: chunk (``LineParser`` joins them): its first line is a C++ line, its last one is, and
    #: its last one is a tracing line left out (that would be a clock line before a C++ line).
    first_cpp: bool = False
    last_cpp: bool = False
    last_left: bool = False


#: The lines' buffers are made by a loop of the C library's ``memchr`` and ``memcpy`` in the
#: compiled build (``scan.line_breaks``), else by numpy (``line_buffers``); both give the same
#: buffers. (``split_lines`` of the 10 MB benchmark log: 15.4 M instructions against 48.0 M,
#: callgrind.) (A module variable: the tests set it.)
LINE_SCAN = scan.COMPILED


def line_buffers(data: bytes) -> tuple[np.ndarray, bytes]:
    """``scan.line_breaks`` by numpy: each line's end found among the bytes (its newline), less
    the newlines before it, and the bytes with the newlines taken out."""
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    n = len(ends) + (not data.endswith(b"\n") and bool(data))
    offsets = np.empty(n + 1, dtype=np.int32)
    offsets[0] = 0
    # (the end of line i among the bytes with the i newlines before it taken out)
    offsets[1 : len(ends) + 1] = ends - np.arange(len(ends))
    if n > len(ends):
        offsets[n] = len(data) - len(ends)
    return offsets, data.replace(b"\n", b"")


def split_lines(text: str | bytes, max_line: int) -> tuple[pa.StringArray, int]:
    """The lines of ``text`` (whole lines, each ending in a newline; as a ``str`` or as valid
    UTF-8, as ``sources`` hands them on) as one Arrow array, and how many of them were longer
    than ``max_line`` (cut to it).

    The array is made from buffers: the text's bytes without its newlines, and each line's
    end among them (``line_buffers``). (A split kernel copied every line on its own, and the
    ``pa.array`` of the text made pyarrow import pandas.)"""
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    offsets, kept = scan.line_breaks(data) if LINE_SCAN else line_buffers(data)
    n = len(offsets) - 1
    arr = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(kept))
    cut = 0
    if len(data) > max_line and n and int(np.diff(offsets).max()) > max_line:
        long = pc.greater(pc.utf8_length(arr), scalar(max_line))
        cut = pc.sum(long).as_py() or 0
        arr = pc.if_else(long, pc.utf8_slice_codeunits(arr, 0, max_line), arr)
    return arr, cut


def classify(arr: pa.StringArray, *, full: bool, after_cpp: bool = False) -> Classified:
    """Count every line of ``arr`` under its family and pick the lines to parse: all of them
    with ``full``, else those analysis needs (see the module text). ``after_cpp``: the line
    before the chunk is a C++ line (its first line, if a tracing line, is then a clock line,
    as within a chunk)."""
    n = len(arr)
    cpp, is_timeline, timing_lines, ntt_h_lines, blank = _prefixes(arr)
    # The tracing header is looked for on the lines that start with neither ``CUZK_`` nor
    # ``TIMELINE,`` only (it fails on those at their first character, but a test of a line
    # cost more than taking the others).
    is_tracing, relevant = _tracing(arr, ~(cpp | is_timeline), search=not full)
    counts = Counter[str]()
    counts["timing"] = int(np.count_nonzero(timing_lines))
    counts["ntt_h"] = int(np.count_nonzero(ntt_h_lines))
    counts["timeline"] = int(np.count_nonzero(is_timeline))
    counts["tracing"] = int(np.count_nonzero(is_tracing))
    counts["blank"] = blank
    counts["other"] = n - sum(counts.values())  # bench lines are moved by the parse loop
    if full:
        prefixed = timing_lines, ntt_h_lines, is_timeline
        return Classified(arr, counts, np.arange(n), arr, None, is_tracing, prefixed)
    # Bench output and damaged lines start with neither ``CUZK_`` nor ``TIMELINE,`` nor a
    # tracing header (the bench regex is anchored at a space, ``=``, ``[`` or a lowercase word):
    # both tests run on the other lines only, mostly none.
    other = ~(cpp | is_timeline | is_tracing)
    if other.any():
        rows = np.flatnonzero(other)
        lines = arr.take(ints_array(rows))
        found = pc.or_(
            pc.match_substring_regex(lines, _BENCH_HEAD_RE2),
            pc.starts_with(lines, DAMAGED),  # (a kernel costs less than a search of the text)
        )
        other[rows] = _bools(found)
    selected = cpp | is_timeline | relevant | other
    near = np.zeros(len(cpp), dtype=bool)
    if len(cpp) > 1:
        near[:-1] |= cpp[1:]
        near[1:] |= cpp[:-1]
    if after_cpp and n:
        near[0] = True
    clock = near & is_tracing & ~relevant
    selected |= clock
    index = np.flatnonzero(selected)
    prefixed = (
        timing_lines[index],
        ntt_h_lines[index],
        is_timeline[index],
    )
    return Classified(
        arr,
        counts,
        index,
        arr.take(ints_array(index)),
        clock[index],
        is_tracing[index],
        prefixed,
        first_cpp=bool(n and cpp[0]),
        last_cpp=bool(n and cpp[-1]),
        last_left=bool(n and is_tracing[-1] and not selected[-1]),
    )


#: The prefixes ``_prefixes`` looks for, in the order of its bits.
_PREFIXES = ["CUZK_", TIMELINE_PREFIX, TIMING_PREFIX, NTT_H_PREFIX]
_PREFIX_WORDS = scan.Words(_PREFIXES)


def _prefixes(arr: pa.StringArray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Per line of ``arr``: whether it starts with ``CUZK_``, ``TIMELINE_PREFIX``,
    ``TIMING_PREFIX`` and ``NTT_H_PREFIX``; and how many lines are empty. Compiled, one loop
    over the lines' first bytes (``scan.prefix_fill``: Arrow's ``starts_with`` calls a function
    per line, four times); else Arrow's kernels."""
    if BYTE_SCAN:
        data, offs, _ = scan.buffers(arr)
        codes = np.empty(len(arr), dtype=np.uint8)
        scan.prefix_fill(data.data, offs, _PREFIX_WORDS, codes)
        blank = len(arr) - int(np.count_nonzero(offs[1:] - offs[:-1]))
        cpp, timeline, timing, ntt_h = ((codes & (1 << k)) != 0 for k in range(4))
        return cpp, timeline, timing, ntt_h, blank
    cpp, timeline, timing, ntt_h = (_bools(pc.starts_with(arr, w)) for w in _PREFIXES)
    return (
        cpp,
        timeline,
        timing,
        ntt_h,
        pc.sum(pc.equal(pc.binary_length(arr), scalar(0))).as_py() or 0,
    )


def tracing_heads(arr: pa.StringArray) -> np.ndarray:
    """Per line of ``arr``: whether it has a tracing line's header (timestamp, level)."""
    return _tracing(arr, np.ones(len(arr), dtype=bool), search=False)[0]


def _tracing(
    arr: pa.StringArray, mask: np.ndarray, *, search: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Per line of ``arr``: it is a line of ``mask`` with a tracing header, and (with
    ``search``; else none) such a line analysis needs (``_RELEVANT_RE2``). Only the lines of
    ``mask`` are read: the regexes search every byte of a line, and the tracing lines are a
    third of a log's lines, two thirds of its bytes."""
    rows = np.flatnonzero(mask)
    heads = np.zeros(len(arr), dtype=bool)
    relevant = np.zeros(len(arr), dtype=bool)
    if not len(rows):
        return heads, relevant
    if BYTE_SCAN:
        data, offs, rows = scan.buffers(arr, rows)
        found = np.zeros((2, len(rows)), dtype=np.uint8)
        w = _WORDS
        scan.tracing_fill(
            data.data,
            offs,
            rows,
            w.shortest,
            w.shift,
            w.text,
            w.at,
            w.tails,
            found[0],
            found[1],
            search,
        )
        heads[rows], relevant[rows] = found.view(bool)
        return heads, relevant
    heads[rows] = _matches(arr, rows, _TRACING_HEAD_RE2)
    if search and heads.any():
        rows = np.flatnonzero(heads)
        relevant[rows] = _matches(arr, rows, _RELEVANT_RE2)
    return heads, relevant


def _matches(arr: pa.StringArray, rows: np.ndarray, pattern: str) -> np.ndarray:
    """Per line ``rows[i]`` of ``arr``: ``pattern`` (RE2) is found in it."""
    return _bools(pc.match_substring_regex(arr.take(ints_array(rows)), pattern))


def ints_array(values: np.ndarray) -> pa.Int64Array:
    """An int64 Arrow array of numpy integers, on their buffer. (``pa.array`` of a numpy
    array, or of a list, makes pyarrow import pandas; so does a numpy array given to a
    kernel, which converts it by ``pa.array``.)"""
    a = np.ascontiguousarray(values, dtype=np.int64)
    out: pa.Int64Array = pa.Array.from_buffers(pa.int64(), len(a), [None, pa.py_buffer(a)])
    return out


def bools_array(mask: np.ndarray) -> pa.BooleanArray:
    """A boolean Arrow array of numpy booleans (see ``ints_array``)."""
    bits = pa.py_buffer(np.packbits(mask, bitorder="little"))
    out: pa.BooleanArray = pa.Array.from_buffers(pa.bool_(), len(mask), [None, bits])
    return out


_SCALARS: dict[object, pa.Scalar] = {}


def scalar(value: int | str) -> pa.Scalar:
    """An int64 or string scalar for a kernel: one taken from an array, as a Python value
    given to a kernel is made one by ``pa.scalar``, which makes pyarrow import pandas."""
    out = _SCALARS.get((type(value), value))
    if out is None:
        if isinstance(value, str):
            data = value.encode("utf-8")
            offsets = np.array([0, len(data)], dtype=np.int32)
            col = pa.StringArray.from_buffers(1, pa.py_buffer(offsets), pa.py_buffer(data))
        else:
            col = ints_array(np.array([value]))
        out = _SCALARS[(type(value), value)] = col[0]
    return out


_NUMPY_INTS: dict[pa.DataType, np.dtype[Any]] = {
    pa.int64(): np.dtype(np.int64),
    pa.int32(): np.dtype(np.int32),
}


def numbers(col: pa.Array) -> np.ndarray:
    """The values of an int64 or int32 Arrow array (a read-only view on its buffer, as
    ``to_numpy`` gives): ``to_numpy`` makes pyarrow import pandas. (One with nulls, never
    made here, takes ``to_numpy``.)"""
    if col.null_count:
        return col.to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]
    dtype = _NUMPY_INTS[col.type]
    data = col.buffers()[1]
    if data is None:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(data, dtype=dtype, count=len(col), offset=col.offset * dtype.itemsize)


def utf8_bytes(texts: pa.Array) -> memoryview:
    """The bytes of a string array's values, one after the other (its data buffer's part)."""
    _, offsets, data = texts.buffers()
    if not len(texts) or data is None:  # (no values, or none but empty ones or nulls)
        return memoryview(b"")
    width = 8 if pa.types.is_large_string(texts.type) else 4
    at = memoryview(offsets).cast("B")
    first = int.from_bytes(at[texts.offset * width : (texts.offset + 1) * width], "little")
    end = texts.offset + len(texts)
    last = int.from_bytes(at[end * width : (end + 1) * width], "little")
    return memoryview(data)[first:last]


def _bools(mask: pa.BooleanArray) -> np.ndarray:
    """The values of a boolean Arrow array without nulls, unpacked from its bits (see
    ``numbers``)."""
    if mask.null_count:
        return mask.to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]
    data = mask.buffers()[1]
    n, at = len(mask), mask.offset
    if data is None or not n:
        return np.zeros(n, dtype=bool)
    bits = np.frombuffer(data, dtype=np.uint8, count=(at + n + 7) >> 3)
    out: np.ndarray = np.unpackbits(bits, count=at + n, bitorder="little")[at:].view(bool)
    return out


def family_counted(line: str) -> str:
    """The family ``classify`` counted a line under (for moving a torn tail)."""
    if line.startswith(TIMING_PREFIX):
        return "timing"
    if line.startswith(NTT_H_PREFIX):
        return "ntt_h"
    if is_tracing(line):
        return "tracing"
    return "blank" if not line else "other"
