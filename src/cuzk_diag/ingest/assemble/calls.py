"""One C++ proving call, and the clock helpers placements use."""

from __future__ import annotations

from datetime import datetime

from cuzk_diag.ingest.assemble.blocks import (
    Block,
)
from cuzk_diag.records import (
    Attribution,
    Value,
)

# (see records.Family)
_EXACT, _INFERRED, _NONE = Attribution.EXACT, Attribution.INFERRED, Attribution.NONE


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


def _ts_ms(ts: str) -> float | None:
    """A tracing timestamp (``classify.TRACING_TS_RE2``: a trailing ``Z`` or an offset) in
    epoch ms; None when it does not read as a date."""
    try:
        return _fromisoformat(ts).timestamp() * 1000.0
    except ValueError:
        return None


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
        self.fields: dict[str, Value] = {}
        self.kinds: set[str] = set()
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
