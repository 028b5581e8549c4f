"""One C++ proving call, and the clock helpers placements use."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TypeAlias

from cuzk_diag.ingest.assemble.blocks import (
    Block,
    presized,
)
from cuzk_diag.records import (
    Attribution,
    Value,
)

# (see records.Family)
_EXACT, _INFERRED, _NONE = Attribution.EXACT, Attribution.INFERRED, Attribution.NONE

#: A TIMELINE-clock reading (ms), or None. (A name for it: in a module compiled with annotation
#: typing, ``float | None`` types an argument as a Python float, which no .pxd declaration
#: matches, so a function taking one could be no C function.)
Clock: TypeAlias = float | None
#: A number a line names (a partition, a worker), or None (a name for it, as for ``Clock``).
MaybeInt: TypeAlias = int | None


#: The CPU-side kinds of line a call holds (``Call.kinds``), a bit each: one integer, tested and
#: set by its bit, where a set of kinds hashed the kind for each test (a CPU-side line tests
#: every open call).
KIND_BIT = {
    "split_vectors": 1,  # T1
    "prep_msm": 2,  # T2
    "b_g2_msm": 4,  # T3
    "async_dealloc": 8,  # T8
    "host_register": 16,  # T9
    "epilogue": 32,  # T7
}


def _t0(c: Call) -> float:
    """A call's TIMELINE start (callers only predict for calls that have one)."""
    return c.start if c.start is not None else 0.0


def _int0(v: Value) -> int:
    return v if isinstance(v, int) else 0


def _call_done(c: Call) -> float:
    """Clock time at which a call's main/finalizer thread finished (before its dealloc)."""
    tl = c.tl or {}
    end = tl.get("end_ms")
    if isinstance(end, int):
        return float(end)
    pd = c.fields.get("pre_destructor_ms")
    if c.start is not None and isinstance(pd, int):
        return c.start + pd
    return c.start if c.start is not None else 0.0


def _span(lines: list[int]) -> tuple[int | None, int | None]:
    """The first and the last of some line numbers, in one pass (None and None for none)."""
    if not lines:
        return None, None
    lo = hi = lines[0]
    for n in lines:
        if n < lo:
            lo = n
        elif n > hi:
            hi = n
    return lo, hi


_fromisoformat = datetime.fromisoformat
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)
#: Epoch seconds of each UTC minute a timestamp named (``_epoch_minute``), None for one that is
#: no date; emptied when it holds ``_MINUTES_HELD``.
_minutes: dict[str, int | None] = {}
_MINUTES_HELD = 4096
#: The minute ``_ts_ms`` read last: its 16 characters, its epoch seconds and whether it is a
#: date at all. The daemon's timestamps come in time order, so most name the minute the one
#: before named: comparing the characters in place costs less than slicing them out and looking
#: them up. (At first, 16 characters that no timestamp reads as a minute.)
_last_minute = "????????????????"
_last_sec = 0
_last_ok = False
#: 2**53: whole microseconds below it in size are exact as a float.
_EXACT_US = 9_007_199_254_740_992


def _ts_ms(ts: str) -> float | None:
    """A tracing timestamp (``classify.TRACING_TS_RE2``: a trailing ``Z`` or an offset) in
    epoch ms; None when it does not read as a date.

    The value is ``datetime.fromisoformat(ts).timestamp() * 1000``. The daemon's own form
    (``2026-03-13T15:13:19.949686Z``) is read without making a datetime: the epoch seconds of
    its minute (``_epoch_minute``, read once per minute), its seconds and its microseconds,
    divided as ``timestamp()`` divides them (the whole microseconds by 10**6, one rounding), so
    the value is the same float (a minute too far from 1970 for that is read the slow way)."""
    if len(ts) == 27 and ts[16] == ":" and ts[19] == "." and ts[26] == "Z":
        us = 0
        for i in range(17, 26):  # (the seconds' digits and the microseconds', around a ".")
            if i == 19:
                continue
            d = ord(ts[i]) - 48
            if d < 0 or d > 9:
                break
            us = us * 10 + d
        else:
            if us < 60_000_000:  # (a 60th second is no time)
                if not ts.startswith(_last_minute):
                    _note_minute(ts[:16])
                if _last_ok:
                    n = _last_sec * 1_000_000 + us
                    if -_EXACT_US < n < _EXACT_US:
                        # (Whole microseconds within 2**53 are exact as a float: one division,
                        # the one rounding ``timestamp()`` makes.)
                        return float(n) / 1_000_000.0 * 1000.0
    try:
        return _fromisoformat(ts).timestamp() * 1000.0
    except ValueError:
        return None


def _note_minute(minute: str) -> None:
    """Make ``minute`` (``2026-03-13T15:13``) the one ``_ts_ms`` read last."""
    global _last_minute, _last_sec, _last_ok
    sec = _epoch_minute(minute)
    _last_minute = minute
    _last_ok = sec is not None
    _last_sec = sec if sec is not None else 0


def _epoch_minute(minute: str) -> int | None:
    """Epoch seconds of a UTC minute (``2026-03-13T15:13``); None when it is no date."""
    if minute in _minutes:
        return _minutes[minute]
    if len(_minutes) >= _MINUTES_HELD:
        _minutes.clear()
    try:
        sec: int | None = (_fromisoformat(minute + ":00+00:00") - _EPOCH) // _SECOND
    except ValueError:
        sec = None
    _minutes[minute] = sec
    return sec


#: Room the fields of a call are made with (``presized``): one of main code holds 7-9.
CALL_SLOTS = 10


class Call:
    """One C++ proving call: TIMELINE identity, CPU-side lines and (bound later) its block."""

    __slots__ = (
        "job_id",
        "partition",
        "worker",
        "gpu",
        "start",
        "seq",
        "fields",
        "kinds",
        "block",
        "ended",
        "closed_out",
        "status",
        "lines",
        "attr_ids",
        "attr_cpu",
        "cpu_weak",
        "tl",
        "extra",
        "segment",
        "source",
        "emitted",
        "klines",
        "overtaken",
    )

    def __init__(
        self,
        seq: int,
        job_id: str | None,
        partition: int | None,
        worker: int | None,
        start: float | None,
        segment: int,
        source: int,
    ) -> None:
        self.job_id = job_id
        self.partition = partition
        self.worker = worker
        self.gpu: int | None = None
        self.start = start
        self.seq = seq
        self.fields: dict[str, Value] = presized(CALL_SLOTS)
        self.kinds = 0  # the CPU-side lines it holds, a bit per kind (``KIND_BIT``)
        self.block: Block | None = None
        self.ended = False  # nothing but late lines (T3, T8) can follow
        self.closed_out = False  # its thread printed its last main-path line (GPU_END, failure)
        self.status = "incomplete"
        self.lines: list[int] = []
        self.attr_ids = _EXACT if job_id is not None else _NONE
        self.attr_cpu = _NONE
        self.cpu_weak = False
        self.tl: dict[str, Value] | None = None
        self.extra: dict[str, Value] = {}
        self.segment = segment
        self.source = source
        self.emitted = False
        self.klines: dict[str, int] = {}  # CPU-side kind -> its line number
        self.overtaken = 0  # calls of its worker started after it (TIMELINE)
