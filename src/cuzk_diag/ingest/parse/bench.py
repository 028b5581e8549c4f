"""cuzk-bench ``batch`` / ``single`` output (reference section 5.2) and the other non-daemon
lines: text of no family, and lines damaged by NUL bytes."""

from __future__ import annotations

import re

from cuzk_diag.records import Accounting, Event, Family
from cuzk_diag.sources import DAMAGED

_BENCH_PROOF_RE = re.compile(
    r"\s*\[([0-9]{1,18})/([0-9]{1,18})\] ([A-Z]+) \u2014 ([0-9]++(?:\.[0-9]++)?)s "
    r"\(prove=([0-9]{1,18}) ms, queue=([0-9]{1,18}) ms\)\s*$"
)
_BENCH_STAT_RE = re.compile(r"avg=([0-9.]++)s min=([0-9.]++)s max=([0-9.]++)s")
_BENCH_THROUGHPUT_RE = re.compile(r"(?<![0-9.])([0-9.]++) proofs/min \(([0-9.]++)s/proof\)")
_BENCH_HEADERS = {
    "=== Batch Benchmark ===": "bench_header",
    "=== Batch Summary ===": "bench_summary_header",
    "=== Proof Result ===": "bench_single_header",
}


class MiscParser:
    """Lines of no daemon family. Keeps whether a cuzk-bench block is open (its parameter
    lines, ``count: 4``, are bench output only inside one)."""

    def __init__(self, source: int, acc: Accounting) -> None:
        self.source = source
        self.acc = acc
        self.bench_open = False

    def parse(self, ln: str, no: int) -> Event:
        """Bench output, other text, lines damaged by NUL bytes."""
        if ln[:1] == DAMAGED:
            self.acc.note_malformed(no)
            return Event(no, self.source, Family.OTHER, "damaged", {"text": ln[1:201]}, True)
        s = ln.strip()
        head = _BENCH_HEADERS.get(s)
        if head is not None:
            self.bench_open = True
            return Event(no, self.source, Family.BENCH, head, {})
        if self.bench_open or (s[:1] == "[" and "\u2014" in s):
            ev = parse_bench(s, no, self.source)
            if ev is not None:
                return ev
        return Event(no, self.source, Family.OTHER, "other", {})


def parse_bench(s: str, no: int, src: int) -> Event | None:
    """One stripped line of cuzk-bench output, or None when it is not one."""
    if s.startswith("["):
        m = _BENCH_PROOF_RE.match(s)
        if m is None:
            return None
        i, tot, status, wall, prove, queue = m.groups()
        return Event(
            no,
            src,
            Family.BENCH,
            "bench_proof",
            {
                "index": int(i),
                "total": int(tot),
                "status": status,
                "wall_s": float(wall),
                "prove_ms": int(prove),
                "queue_ms": int(queue),
            },
        )
    key, sep, value = s.partition(":")
    if not sep:
        return None
    value = value.strip()
    try:
        if key == "proof type":
            return Event(no, src, Family.BENCH, "bench_param", {"proof_type": value})
        if key in ("count", "concurrency"):
            return Event(no, src, Family.BENCH, "bench_param", {key: int(value)})
        if key == "total time":
            return Event(no, src, Family.BENCH, "bench_total", {"total_s": float(value[:-1])})
        if key in ("completed", "failed"):
            return Event(no, src, Family.BENCH, f"bench_{key}", {key: int(value)})
        if key in ("wall time", "prove time"):
            m = _BENCH_STAT_RE.search(value)
            if m is None:
                return None
            name = key.split()[0]
            return Event(
                no,
                src,
                Family.BENCH,
                f"bench_{name}",
                {"avg_s": float(m[1]), "min_s": float(m[2]), "max_s": float(m[3])},
            )
        if key == "throughput":
            m = _BENCH_THROUGHPUT_RE.search(value)
            if m is None:
                return None
            return Event(
                no,
                src,
                Family.BENCH,
                "bench_throughput",
                {"proofs_per_min": float(m[1]), "s_per_proof": float(m[2])},
            )
        if key in ("status", "job_id", "timings", "wall time", "proof"):
            return Event(no, src, Family.BENCH, f"bench_single_{key}", {key: value})
    except ValueError:
        return None
    return None
