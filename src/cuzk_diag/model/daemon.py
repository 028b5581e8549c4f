"""Discrete-event model of the cuzk proving daemon that writes realistic logs plus ground truth.

The model follows the cuzk log formats of docs/log-formats.md (section numbers below are its own):
bench submissions, the synthesis pool, the GPU queue, ``n_gpus`` x ``gw`` GPU workers with one
C++ mutex per GPU, and the C++ call structure of each ``groth16_cuda.cu`` version (threads
*main*, *prep*, *gpu*, *dealloc*). Every line gets a simulated time; the output is sorted by
time, and lines of one thread come out in code order. Durations printed by the C++ code are
derived from the simulated instants with the same truncation rules as the code
(``duration_cast`` floors, ``gettimeofday`` differences truncate toward zero).

Library use::

    from cuzk_diag.model.daemon import SimConfig, simulate
    res = simulate(SimConfig(era="main", n_gpus=2, gw=2, proofs=4, concurrency=2, seed=1))
    res.text        # the log
    res.truth       # one dict per GPU call, in lock-acquisition order
    res.expected    # what a line accountant should find in res.text

Big logs are streamed with :func:`write_log` or
``python -m cuzk_diag.model.daemon ... --target-mb 250``.

Conventions of the ground truth (``SimResult.truth``):

- keys are ``records.PARTITION_COLUMNS`` names; a key is present only when the log carries
  that value for the call (TIMELINE columns need ``streams`` ``all``/``stderr``, tracing-derived
  columns need ``all``); identity columns (``job_id``, ``partition``, ``worker``, ``gpu``) are
  always the simulated truth;
- a value printed malformed (``prep_msm_ms=``) is ``None`` and listed in ``_malformed``;
- a C++ line the messy mode lost (``drop_rate``) or damaged with a NUL byte (``nul_rate``) takes
  its values out of the truth and is listed in ``_lost``; a call that lost (or printed
  malformed) a GPU-region line has ``status`` ``incomplete``;
- for calls with several GPU threads (monolithic batches fanned out over GPUs) the per-thread
  fields (``ntt_msm_h_ms``, ``batch_add_ms``, ``tail_msm_ms``, ``gpu_total_ms``,
  ``barrier_wait_ms``) hold the maximum over threads, ``_per_tid`` holds each thread's values,
  and the ``CUZK_NTT_H`` fields are summed over circuits;
- private keys start with ``_``: ``_lines`` (line numbers of the call's C++ lines),
  ``_gpu_lines`` (the subset printed while the GPU mutex was held), ``_t_lock_ms`` (simulated
  lock time, ms since engine start); with ``SimConfig.lock_truth`` also ``_mutex_wait_ms`` and
  ``_mutex_held_ms`` (the simulated lock request to acquisition and acquisition to release, ms,
  for every code version, including those that do not log them).

Conventions of the accounting (``SimResult.expected``): ``lines_total`` counts physical lines;
``by_family`` counts logical lines, so a torn TIMELINE line (reference 3.4) counts once as
``timeline`` and the C++ or tracing line written into it counts once in its own family, while
the trailing piece is not counted again; the families therefore add up to ``lines_total``.
``bench`` holds the cuzk-bench summary and, under ``proofs``, each proof's printed values.

Modelling choices where the reference leaves room: engine calls before the ``gpu_index``
routing (V10) run on GPU 0 whatever the worker's GPU, so on multi-GPU hosts the V4-V8 VRAM
check sees the other mutex's buffers (``skip_vram``); a call whose GPU prove fails raises
during ``batch_add`` (after ``ntt_msm_h_ms`` and, in V11, ``barrier_wait_ms``) and prints no
``b_g2_msm_ms``, ``tail_msm_ms``, ``mutex_held_ms``, ``epilogue_ms`` or ``async_dealloc_ms``;
in the split API (V8+) that error surfaces from the finalizer, so ``GPU_TIMING`` start lines
still print.
"""

from __future__ import annotations

import argparse
import calendar
import heapq
import io
import json
import math
import random
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import IO, Any

__all__ = [
    "ERAS",
    "MESSY",
    "STREAMS",
    "TIMELINE_ERAS",
    "SimConfig",
    "SimResult",
    "simulate",
    "write_log",
    "main",
]

ERAS = ("phase4-8", "phase9-11", "phase12", "pool-cache", "main")
TIMELINE_ERAS = ("T0", "T1", "T2", "T3", "T4")
STREAMS = ("all", "stderr", "cpp")

#: groth16_cuda.cu versions (reference section 1.1) allowed per era, first one is the default.
ERA_CPP: dict[str, tuple[int, ...]] = {
    "phase4-8": (3, 1, 2),
    "phase9-11": (4, 5, 6, 7),
    "phase12": (8,),
    "pool-cache": (10, 9),
    "main": (11,),
}

#: Commit date of each C++ version; used for the wall clock of the simulated run.
_CPP_DATE = {
    1: "2026-02-18",
    2: "2026-02-18",
    3: "2026-02-19",
    4: "2026-02-19",
    5: "2026-02-19",
    6: "2026-02-19",
    7: "2026-02-19",
    8: "2026-02-20",
    9: "2026-02-27",
    10: "2026-03-06",
    11: "2026-03-13",
}

#: Messy-log preset used by ``--messy`` and the fixtures.
MESSY: dict[str, Any] = {
    "ansi": True,
    "journald": False,
    "crlf": True,
    "junk_rate": 0.01,
    "huge_line_bytes": 20000,
    "malformed_rate": 0.1,
    "unknown_key_rate": 0.15,
    "torn_rate": 0.03,
    "truncate_last": True,
    "garbage_rate": 0.01,
    "drop_rate": 0.02,
    "nul_rate": 0.01,
}

# Line families, as counted in records.Accounting.by_family.
_TIMING, _NTT, _TL, _TR, _BENCH, _OTHER, _BLANK = range(7)
FAMILY_NAMES = ("timing", "ntt_h", "timeline", "tracing", "bench", "other", "blank")

_DOMAIN = 134217728  # 2^27, 32 GiB PoRep
_NEED_DA_MIB = 4096
_SAFETY_MIB = 512
_UNKNOWN_KEYS = ("h2d_stall_ms", "pool_hits", "retry_count", "l2_flush_ms")


@dataclass
class SimConfig:
    """Parameters of one simulated daemon run (cuzk-bench ``batch -c proofs -j concurrency``)."""

    era: str = "main"  # one of ERAS
    cpp_version: int | None = None  # 1..11 (reference section 1.1); None = era default
    timeline_era: str | None = None  # T0..T4; None = matching the code version
    n_gpus: int = 1
    gw: int = 2  # gpus.gpu_workers_per_device
    proofs: int = 3  # cuzk-bench -c
    concurrency: int = 1  # cuzk-bench -j
    pw: int = 10  # concurrent partition syntheses (synthesis workers / partition_workers)
    partitions_per_proof: int = 10
    seed: int = 0
    streams: str = "all"  # all | stderr (C++ + TIMELINE) | cpp (C++ only)
    gpu_threads: int | None = None  # gpus.gpu_threads; None = 0 before Phase 11, 32 after
    monolithic: bool = False  # batch-all calls (num_circuits = partitions_per_proof)
    force_skip_vram: bool = False  # V4-V8: every pre-stage VRAM check fails (the incident)
    vram_mib: int = 16303  # total VRAM of each GPU (RTX 5070 Ti)
    failures: int = 0  # number of proofs with one partition whose GPU prove fails
    failure_error: str = (  # the error such a failed prove reports
        'GPU prove failed: RustError { code: 700, message: "an illegal memory access was '
        'encountered" }'
    )
    self_check_failures: int = 0  # proofs whose assembled proof fails the self-check (V9+)
    bench_output: bool = True  # append the cuzk-bench batch output
    id_style: str = "uuid"  # uuid (cuzk-bench) | curio (porep-<miner>-<sector> ...)
    snap_every: int = 0  # every n-th proof is a SnapDeals job (16 partitions)
    wdpost_every: int = 0  # a WindowPoSt job (Curio id with spaces) after every n-th proof
    prestage_fail_rate: float = 0.0  # V4-V8: pre-stage CUDA failure (half fallback, half silent)
    host_register_fail_rate: float = 0.0  # V4-V8: cudaHostRegister failure (T9)
    pinned_fail_rate: float = 0.0  # main: pinned pool checkout failure (slow unpinned HtoD)
    scale: float = 1.0  # multiplies every modelled duration
    durations: dict[str, float] = field(default_factory=dict)  # overrides of _BASE means (ms)
    target_bytes: int = 0  # keep submitting proofs until the log reaches this size
    # measured calls to resample (cuzk_diag.model.replay): each partition draws one whole call
    # and takes its durations (keys are duration names of _BASE plus "prestage", the call's
    # pre-staging outcome); durations a call lacks are drawn around the modelled means
    replay: tuple[dict[str, Any], ...] = ()
    host: str = "curio-gpu01"  # host name of journald prefixes
    start_date: str | None = None  # YYYY-MM-DD of the run; None = the code version's date
    # messy-log knobs
    ansi: bool = False  # colour tracing lines as tracing-subscriber does by default
    journald: bool = False  # prefix daemon lines with "Mon DD HH:MM:SS host cuzk[pid]: "
    crlf: bool = False
    junk_rate: float = 0.0  # probability of a junk line (random bytes, invalid UTF-8) per line
    huge_line_bytes: int = 0  # one junk line of this size (0 = none)
    malformed_rate: float = 0.0  # per call: prep_msm_ms or ntt_msm_h_ms printed unparseable
    unknown_key_rate: float = 0.0  # per call: an unknown key appended to the tail_msm line
    torn_rate: float = 0.0  # per TIMELINE line: torn by the next C++/tracing line (ref. 3.4)
    truncate_last: bool = False  # end with a truncated line that has no newline
    lock_truth: bool = False  # add the simulated mutex wait and hold to the truth (private keys)
    garbage_rate: float = 0.0  # per C++ line: a malformed C++ line of no call written after it
    drop_rate: float = 0.0  # per GPU-region C++ line: the line is lost (never written)
    nul_rate: float = 0.0  # per C++ line: a NUL byte inside it (the line is damaged)

    def resolved(self) -> SimConfig:
        """Return a copy with era defaults filled in; raises ValueError on bad values."""
        if self.era not in ERAS:
            raise ValueError(f"unknown era {self.era!r} (expected one of {', '.join(ERAS)})")
        cpp = self.cpp_version if self.cpp_version is not None else ERA_CPP[self.era][0]
        if cpp not in ERA_CPP[self.era]:
            raise ValueError(f"cpp_version {cpp} does not belong to era {self.era}")
        tle = self.timeline_era
        if tle is None:
            tle = "T0" if cpp == 1 else "T4" if cpp == 11 else "T2" if cpp == 10 else "T1"
        if tle not in TIMELINE_ERAS:
            raise ValueError(f"unknown timeline era {tle!r}")
        if self.streams not in STREAMS:
            raise ValueError(f"unknown streams {self.streams!r}")
        if self.id_style not in ("uuid", "curio"):
            raise ValueError(f"unknown id_style {self.id_style!r}")
        if self.n_gpus < 1 or self.gw < 1 or self.pw < 1 or self.partitions_per_proof < 1:
            raise ValueError("n_gpus, gw, pw and partitions_per_proof must be >= 1")
        if self.start_date is not None:
            try:
                time.strptime(self.start_date, "%Y-%m-%d")
            except ValueError:
                raise ValueError(f"start_date {self.start_date!r} is not YYYY-MM-DD") from None
        gt = self.gpu_threads if self.gpu_threads is not None else (32 if cpp >= 7 else 0)
        return replace(self, cpp_version=cpp, timeline_era=tle, gpu_threads=gt)


@dataclass
class SimResult:
    """Output of a simulation: the log bytes (unless streamed), ground truth and accounting."""

    data: bytes | None
    truth: list[dict[str, Any]]
    expected: dict[str, Any]
    config: SimConfig

    @property
    def text(self) -> str:
        """The log as text (invalid UTF-8 from junk lines replaced)."""
        if self.data is None:
            raise ValueError("the log was streamed to a file; read it from there")
        return self.data.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------
# Durations (ms). Sources: reference section 6.1 and the documented phase tables.
# ---------------------------------------------------------------------------------------------

_BASE: dict[str, float] = {
    "synth": 33000.0,  # one partition synthesis, uncontended
    "synth_contention": 0.35,  # +35% when all pw syntheses run at once (memory bandwidth)
    "synth_mono": 48000.0,  # whole-proof batch synthesis (10 circuits)
    "synth_snap": 21000.0,
    "synth_wdpost": 9000.0,
    "c1_parse": 450.0,
    "srs_load": 12000.0,  # first proof only
    "split_vectors": 2.6,
    "setup_extra": 0.9,
    "prep_msm": 1900.0,
    "b_g2": 480.0,  # gpu_threads = 0 (all CPUs)
    "b_g2_gt": 1700.0,  # gpu_threads = 32 (Phase 11 on)
    "b_g2_multi": 21000.0,  # N single-threaded Pippengers (batch call)
    "ntt": 2430.0,  # NTT + H-MSM, unpinned HtoD inside the mutex
    "ntt_prestaged": 690.0,  # V4-V8 pre-staged
    "post_ntt_gap": 500.0,  # unlogged GPU-thread time between T4 and batch_add (before V11)
    "ntt_kernels": 2100.0,  # CUZK_NTT_H ntt_kernels with pageable a/b/c (V9-V10, pool miss)
    "ntt_kernels_pinned": 2.0,  # main: a/b/c in the pinned pool, copies are async
    "coset_intt_sync": 300.0,
    "msm_invoke": 150.0,
    "d_b_alloc_first": 700.0,
    "d_a_alloc_first": 150.0,
    "batch_add": 645.0,
    "tail_msm": 83.0,
    "msm_dtors": 6.0,
    "epilogue": 5.0,
    "async_dealloc": 260.0,
    "async_dealloc_multi": 9000.0,
    "host_register": 5.0,
    "host_unregister": 3.0,
    "ps_sync": 2.0,
    "ps_trim": 0.3,
    "ps_alloc": 9.0,
    "ps_upload": 7.0,
    "ps_cleanup": 2.0,
    "rust_setup": 1.0,
    "release_abc": 18.0,
    "malloc_trim": 12.0,
    "verify": 45.0,
}

_CPP_OVERRIDES: dict[int, dict[str, float]] = {
    1: {"prep_msm": 1700.0, "b_g2": 380.0, "tail_msm": 125.0, "batch_add": 640.0},
    2: {"prep_msm": 1700.0, "b_g2": 380.0, "tail_msm": 125.0, "batch_add": 640.0},
    3: {"prep_msm": 1700.0, "b_g2": 380.0, "tail_msm": 125.0, "batch_add": 640.0},
    11: {
        "prep_msm": 1250.0,
        "msm_invoke": 148.0,
        "batch_add": 400.0,
        "tail_msm": 79.0,
        "post_ntt_gap": 1.0,
        "async_dealloc": 220.0,
        "release_abc": 22.0,
    },
}


def synth_contention(active: int, pw: int, contention: float = _BASE["synth_contention"]) -> float:
    """Slow-down of a partition synthesis that starts while ``active`` syntheses run (itself
    included) in ``pw`` slots: memory bandwidth, ``1 + contention`` when all slots are busy."""
    return 1.0 + contention * (active - 1) / (pw - 1) if pw > 1 else 1.0


class _D:
    """Resolved duration means for one run (attribute access is faster than dict lookups)."""

    def __init__(self, cpp: int, gt: int, scale: float, over: dict[str, float]) -> None:
        vals = dict(_BASE)
        vals.update(_CPP_OVERRIDES.get(cpp, {}))
        if gt > 0:
            vals["b_g2"] = vals["b_g2_gt"]
        for k, v in over.items():
            if k not in vals:
                raise ValueError(f"unknown duration {k!r}")
            vals[k] = float(v)
        for k, v in vals.items():
            setattr(self, k, v if k == "synth_contention" else v * scale)

    def __getattr__(self, name: str) -> float:  # pragma: no cover - typing aid only
        raise AttributeError(name)


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------


def _tv(t1: float, t2: float, base_us: int) -> int:
    """A gettimeofday difference in ms as the C++ computes it: sec*1000 + usec_diff/1000."""
    a = base_us + int(t1 * 1000.0)
    b = base_us + int(t2 * 1000.0)
    s1, u1 = divmod(a, 1_000_000)
    s2, u2 = divmod(b, 1_000_000)
    du = u2 - u1
    q = du // 1000 if du >= 0 else -((-du) // 1000)
    return (s2 - s1) * 1000 + q


def _fl(x: float) -> int:
    """Truncate a non-negative duration to whole ms (duration_cast / as_millis)."""
    return int(x) if x > 0 else 0


def _rust_duration(ms: float, extra_ns: int) -> str:
    """Render a duration like Rust's ``Debug for Duration`` (``5.318412345s``, ``812.5ms``)."""
    ns = int(ms * 1_000_000) + extra_ns
    if ns >= 1_000_000_000:
        s, rest = divmod(ns, 1_000_000_000)
        frac = f"{rest:09d}".rstrip("0")
        return f"{s}.{frac}s" if frac else f"{s}s"
    ms_i, rest = divmod(ns, 1_000_000)
    frac = f"{rest:06d}".rstrip("0")
    return f"{ms_i}.{frac}ms" if frac else f"{ms_i}ms"


def _uuid4(rng: random.Random) -> str:
    h = rng.getrandbits(128)
    h = (h & ~(0xF << 76)) | (0x4 << 76)
    h = (h & ~(0x3 << 62)) | (0x2 << 62)
    x = f"{h:032x}"
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

_ANSI_LEVEL = {
    "INFO": "\x1b[32m INFO\x1b[0m",
    "WARN": "\x1b[33m WARN\x1b[0m",
    "ERROR": "\x1b[31mERROR\x1b[0m",
    "DEBUG": "\x1b[34mDEBUG\x1b[0m",
}
_PLAIN_LEVEL = {"INFO": " INFO", "WARN": " WARN", "ERROR": "ERROR", "DEBUG": "DEBUG"}

Fields = tuple[tuple[str, object], ...]


# ---------------------------------------------------------------------------------------------
# Model objects
# ---------------------------------------------------------------------------------------------


class _Job:
    __slots__ = (
        "idx",
        "bench_idx",
        "job_id",
        "kind",
        "proof_kind",
        "circuit_id",
        "nparts",
        "ncirc",
        "seq",
        "bench_submit",
        "recv_t",
        "dispatch_t",
        "fail_part",
        "self_check_fail",
        "done",
        "failed",
        "end_t",
        "gpu_sum",
        "synth_sum",
        "ok",
        "synth_span",
    )
    idx: int
    job_id: str
    kind: str
    proof_kind: str
    circuit_id: str
    nparts: int  # 0 = monolithic
    ncirc: int
    seq: int
    bench_submit: float
    recv_t: float
    dispatch_t: float
    synth_span: str

    def __init__(self) -> None:
        self.done = 0
        self.failed = False
        self.ok = False
        self.gpu_sum = 0.0
        self.synth_sum = 0
        self.end_t = -1.0
        self.fail_part: int | None = None
        self.self_check_fail = False
        self.bench_idx = -1
        self.dispatch_t = 0.0
        self.seq = 0
        self.synth_span = ""


class _Unit:
    """One piece of GPU work: a partition, or a whole monolithic job."""

    __slots__ = (
        "job",
        "p",
        "ncirc",
        "synth_start",
        "synth_end",
        "synth_ms",
        "queue_t",
        "pinned_fail",
        "rep",
    )

    def __init__(self, job: _Job, p: int | None, ncirc: int) -> None:
        self.job = job
        self.p = p
        self.ncirc = ncirc
        self.pinned_fail = False
        self.synth_ms = 0
        self.synth_start = 0.0
        self.synth_end = 0.0
        self.queue_t = 0.0
        self.rep: dict[str, Any] | None = None


class _Call:
    """One GPU call (C++ proving function invocation) and its timeline."""

    __slots__ = (
        "unit",
        "job",
        "w",
        "gpu",
        "nc",
        "tr",
        "lines",
        "gpu_lines",
        "fail",
        "hot_start",
        "t_start",
        "spawn_t",
        "enter_t",
        "gstart",
        "t_entry",
        "t_req",
        "t_T1",
        "t_T2",
        "t_notify",
        "t_T3",
        "registered",
        "span_w",
        "gpu_dur",
        "malformed",
        "fin_start",
        "finish_ms",
        "work",
        "rep",
    )
    hot_start: float
    t_start: float
    spawn_t: float
    enter_t: float
    gstart: float
    t_entry: float
    t_req: float
    t_T1: float
    t_T2: float
    t_notify: float
    t_T3: float
    span_w: str

    def __init__(self, unit: _Unit, w: int, gpu: int) -> None:
        self.unit = unit
        self.job = unit.job
        self.w = w
        self.gpu = gpu
        self.nc = unit.ncirc
        # SnapDeals partitions have ~81M constraints against PoRep's ~130M: smaller MSMs
        self.work = 0.65 if unit.job.kind == "snap" else 1.0
        self.tr: dict[str, Any] | None = None
        self.lines: list[int] | None = None
        self.gpu_lines: list[int] | None = None
        self.fail = False
        self.registered = True
        self.malformed = ""
        self.gpu_dur = 0.0
        self.finish_ms = -1
        self.fin_start = 0.0
        self.rep = unit.rep


class _Mutex:
    __slots__ = ("owner", "waiters")

    def __init__(self) -> None:
        self.owner: _Call | None = None
        self.waiters: deque[_Call] = deque()


# ---------------------------------------------------------------------------------------------
# Output writer: numbering, family counts, messy transformations
# ---------------------------------------------------------------------------------------------


class _Writer:
    def __init__(
        self,
        sink: IO[bytes],
        cfg: SimConfig,
        mrng: random.Random,
        base_us: int,
        host: str,
        pid: int,
    ) -> None:
        self.sink = sink
        self.buf: list[str] = []
        self.bytes = 0
        self.lineno = 0
        self.counts = [0] * 7
        self.eol = "\r\n" if cfg.crlf else "\n"
        self.mrng = mrng
        self.torn_rate = cfg.torn_rate
        self.junk_rate = cfg.junk_rate
        self.huge = cfg.huge_line_bytes
        self.huge_at = 80
        self.journald = cfg.journald
        self.base_us = base_us
        self.jprefix = f" {host} cuzk[{pid}]: "
        self.jcache: dict[int, str] = {}
        self.pending: tuple[float, str, str] | None = None
        self.torn = 0
        self.junk = 0
        self.invalid_utf8 = 0
        self.huge_lines = 0
        self.journald_lines = 0
        self.garbage_rate = cfg.garbage_rate
        self.drop_rate = cfg.drop_rate
        self.nul_rate = cfg.nul_rate
        self.garbage = 0
        self.dropped = 0
        self.nul_lines = 0
        self.messy = bool(
            self.torn_rate
            or self.junk_rate
            or self.huge
            or self.journald
            or self.garbage_rate
            or self.drop_rate
            or self.nul_rate
        )

    # -- low level --------------------------------------------------------------------------

    def _jp(self, t: float) -> str:
        sec = (self.base_us + int(t * 1000.0)) // 1_000_000
        p = self.jcache.get(sec)
        if p is None:
            if len(self.jcache) > 4096:
                self.jcache.clear()
            tm = time.gmtime(sec)
            p = (
                f"{_MONTHS[tm.tm_mon - 1]} {tm.tm_mday:02d} {tm.tm_hour:02d}:{tm.tm_min:02d}:"
                f"{tm.tm_sec:02d}{self.jprefix}"
            )
            self.jcache[sec] = p
        return p

    def _put(self, t: float, text: str) -> None:
        self.lineno += 1
        if self.journald:
            self.journald_lines += 1
            text = self._jp(t) + text
        self.buf.append(text)
        if len(self.buf) >= 8192:
            self.flush_buf()

    def flush_buf(self) -> None:
        if self.buf:
            data = (self.eol.join(self.buf) + self.eol).encode("utf-8")
            self.buf = []
            self.bytes += len(data)
            self.sink.write(data)

    def _put_bytes(self, t: float, raw: bytes) -> None:
        self.flush_buf()
        self.lineno += 1
        if self.journald:
            self.journald_lines += 1
            raw = self._jp(t).encode() + raw
        data = raw + self.eol.encode()
        self.bytes += len(data)
        self.sink.write(data)

    def _junk(self, t: float, huge: bool = False) -> None:
        rng = self.mrng
        if huge:
            body = b"DEBUG dump: " + b"0123456789abcdef" * max(1, (self.huge - 12) // 16)
            self.huge_lines += 1
        else:
            kind = rng.randrange(4)
            if kind == 0:
                body = bytes([0xFF, 0xFE]) + bytes(rng.randrange(32, 127) for _ in range(24))
                self.invalid_utf8 += 1
            elif kind == 1:
                body = b"garbage \xc3\x28 \xa0\xa1 " + bytes(
                    rng.randrange(65, 91) for _ in range(12)
                )
                self.invalid_utf8 += 1
            elif kind == 2:
                body = b"watchdog: heartbeat " + str(rng.randrange(10**6)).encode()
            else:
                body = b"   at <unknown> 0x" + f"{rng.getrandbits(48):012x}".encode()
        self.junk += 1
        self.counts[_OTHER] += 1
        self._put_bytes(t, body)

    # -- public ------------------------------------------------------------------------------

    def line(self, t: float, text: str, fam: int, call: _Call | None, region: bool) -> None:
        if self.messy:
            if self.huge and not self.huge_lines and self.lineno >= self.huge_at:
                self._junk(t, huge=True)
            if self.junk_rate and self.mrng.random() < self.junk_rate:
                self._junk(t)
            if (self.drop_rate or self.nul_rate) and call is not None and _damageable(text, call):
                rng = self.mrng
                if self.drop_rate and region and rng.random() < self.drop_rate:
                    # Lost from the capture: never written, its values are not in the log.
                    self.dropped += 1
                    _lose(call, text, region)
                    return
                if self.nul_rate and rng.random() < self.nul_rate:
                    # A NUL byte inside the line: a damaged line, none of its values readable.
                    self.nul_lines += 1
                    _lose(call, text, region)
                    p = rng.randrange(1, len(text))
                    self.counts[_OTHER] += 1
                    self._put(t, text[:p] + "\x00" + text[p:])
                    return
            if self.garbage_rate and fam in (_TIMING, _NTT):
                if self.mrng.random() < self.garbage_rate:
                    # A malformed C++ line that belongs to no call, before this one.
                    self.garbage += 1
                    self.counts[_TIMING] += 1
                    self._put(t, self.mrng.choice(_GARBAGE))
            if self.pending is not None:
                pt, prefix, suffix = self.pending
                self.pending = None
                if fam in (_TIMING, _NTT, _TR):
                    # TIMELINE piece + the whole other line, then the rest of the TIMELINE line
                    self.counts[_TL] += 1
                    self.counts[fam] += 1
                    self.torn += 1
                    self._put(pt, prefix + text)
                    if call is not None:
                        self._attr(call, region)
                    self._put(t, suffix)
                    return
                self.counts[_TL] += 1
                self._put(pt, prefix + suffix)
            if fam == _TL and self.torn_rate and self.mrng.random() < self.torn_rate:
                parts = text.split(",", 4)
                pieces = ["TIMELINE,", parts[1], ",", parts[2], ",", parts[3], ",", parts[4]]
                hi = 7 if parts[4] else 6
                cut = self.mrng.randint(1, hi)
                self.pending = (t, "".join(pieces[:cut]), "".join(pieces[cut:]))
                return
        self.counts[fam] += 1
        self._put(t, text)
        if call is not None:
            self._attr(call, region)

    def _attr(self, call: _Call, region: bool) -> None:
        lines = call.lines
        if lines is not None:
            lines.append(self.lineno)
            if region and call.gpu_lines is not None:
                call.gpu_lines.append(self.lineno)

    def finish(self, t: float) -> None:
        if self.pending is not None:
            pt, prefix, suffix = self.pending
            self.pending = None
            self.counts[_TL] += 1
            self._put(pt, prefix + suffix)
        if self.huge and not self.huge_lines:
            self._junk(t, huge=True)

    def plain(self, text: str, fam: int) -> None:
        """A line outside the daemon (bench output): no journald prefix."""
        self.lineno += 1
        self.counts[fam] += 1
        self.buf.append(text)

    def raw_tail(self, text: str) -> None:
        """A final truncated line without newline."""
        self.flush_buf()
        data = text.encode("utf-8")
        self.lineno += 1
        self.bytes += len(data)
        self.sink.write(data)


#: Malformed C++ lines the messy mode writes between real ones (reference 1.2 keys, bad values).
_GARBAGE = ("CUZK_TIMING: prep_msm_ms=", "CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=abc")
#: C++ lines whose loss the ground truth can state (plain ``key=value`` columns).
_DAMAGEABLE = (
    "CUZK_TIMING: split_vectors_ms=",
    "CUZK_TIMING: prep_msm_ms=",
    "CUZK_TIMING: b_g2_msm_ms=",
    "CUZK_TIMING: gpu_tid=0 ",
    "CUZK_TIMING: async_dealloc_ms=",
    "CUZK_TIMING: epilogue_ms=",
    "CUZK_TIMING: pre_lock_cpu_ms=",
    "CUZK_TIMING: mutex_held_ms=",
    "CUZK_NTT_H: ",
)
_NTT_KEYS = {"total": "ntt_h_total_ms"}


def _damageable(text: str, call: _Call) -> bool:
    return (
        call.nc == 1
        and text.startswith(_DAMAGEABLE)
        and not text.endswith("=")
        and "=abc" not in text
    )


def _lose(call: _Call, text: str, region: bool) -> None:
    """The truth of a call one of whose C++ lines the log lost: its values are not there."""
    tr = call.tr
    if tr is None:
        return
    ntt = text.startswith("CUZK_NTT_H")
    for tok in text.split(": ", 1)[1].split():
        k = tok.partition("=")[0]
        if ntt:
            k = _NTT_KEYS.get(k, k + "_ms")
        if k not in ("gpu_tid", "num_circuits"):
            tr.pop(k, None)
        if k == "gpu_total_ms":
            tr.pop("extra", None)  # an unknown key on the same line
    tr.setdefault("_lost", []).append(text)
    if region and tr.get("status") == "ok":
        tr["status"] = "incomplete"


# ---------------------------------------------------------------------------------------------
# The simulator
# ---------------------------------------------------------------------------------------------


class _Sim:
    def __init__(self, cfg: SimConfig, sink: IO[bytes], track: bool) -> None:
        self.cfg = cfg
        cpp = int(cfg.cpp_version or 11)
        self.cpp = cpp
        self.tle = str(cfg.timeline_era)
        gt = int(cfg.gpu_threads or 0)
        self.gt = gt
        self.rng = random.Random(cfg.seed)
        self.mrng = random.Random(cfg.seed * 7919 + 17)
        self.pool = cfg.replay
        self.prng = random.Random(cfg.seed * 104729 + 3)
        self.track = track
        self.d = _D(cpp, gt, cfg.scale, cfg.durations)
        self.now = -10_000.0
        self.seq = 0
        self.ev: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self.lines: list[tuple[float, int, str, int, _Call | None, bool]] = []
        # wall clock: era date, an afternoon start time
        day = time.strptime(cfg.start_date or _CPP_DATE[cpp], "%Y-%m-%d")
        start_s = calendar.timegm(day) + 3600 * 14 + self.rng.randrange(0, 6 * 3600)
        self.base_us = start_s * 1_000_000 + self.rng.randrange(1_000_000)
        self.w = _Writer(sink, cfg, self.mrng, self.base_us, cfg.host, 4242)
        self.tscache: dict[int, str] = {}
        # code-version features
        self.static_lock = cpp <= 2
        self.prestage = 4 <= cpp <= 8
        self.t7 = cpp <= 7
        self.ntth = cpp >= 9
        self.v11 = cpp == 11
        self.split = cpp >= 8
        self.t12b = cpp == 5
        self.dealloc_mtx = cpp >= 7
        self.pinned_engine = cpp >= 10
        self.picked_line = cpp <= 10  # removed by the pinned-pool commit (V11)
        self.selfcheck = cpp >= 9
        self.budget = cpp == 11
        self.queue_ev = "GPU_QUEUE" if self.tle == "T4" else "CHAN_SEND"
        self.prio = self.tle == "T4"
        self.mono_all = self.tle == "T0" or cfg.monolithic
        self.lot = 1 if 3 * _NEED_DA_MIB < cfg.vram_mib - 1024 else 0
        self.need_dbc = _NEED_DA_MIB * (self.lot + 1)
        self.need_total = _NEED_DA_MIB + self.need_dbc
        # streams
        s = cfg.streams
        self.allow = [True, True, s != "cpp", s == "all", True, True, True]
        self.allow_tr = s == "all"
        self.allow_tl = s != "cpp"
        self.ansi = cfg.ansi and self.allow_tr
        self.lvl = _ANSI_LEVEL if self.ansi else _PLAIN_LEVEL
        # resources
        self.n_workers = cfg.n_gpus * cfg.gw
        self.idle: deque[int] = deque(range(self.n_workers))
        self.mutex: dict[int, _Mutex] = {}
        self.synth_free = cfg.pw
        self.synth_q: deque[_Unit] = deque()
        self.gpu_q_fifo: deque[_Unit] = deque()
        self.gpu_q_heap: list[tuple[tuple[int, int], int, _Unit]] = []
        self.gpu_init: set[int] = set()
        self.vram_regions: dict[int, list[tuple[float, float, int]]] = {}
        self.dealloc_free = -1e18
        self.disp_free = -1e18
        self.srs_loaded: set[str] = set()
        self.nrec = 0
        self.truth: list[dict[str, Any]] = []
        self.bench_summary: dict[str, Any] = {}
        self.calls_total = 0
        self.calls_failed = 0
        self.malformed = 0
        self.unknown_lines = 0
        # jobs / bench
        self.jobs: list[_Job] = []
        self.bench_jobs: list[_Job] = []
        self.job_seq = 0
        self.submitted = 0
        self.outstanding = 0
        self.bench_start = 0.0
        self.last_resp = 0.0
        self.miner = self.rng.randrange(1000, 99999)
        self.sector = self.rng.randrange(1, 5000)
        n = cfg.proofs
        self.fail_idx = set(self.rng.sample(range(n), min(cfg.failures, n))) if n else set()
        rest = [i for i in range(n) if i not in self.fail_idx]
        k = min(cfg.self_check_failures, len(rest)) if self.selfcheck else 0
        self.selfcheck_idx = set(self.rng.sample(rest, k)) if k else set()

    # -- scheduling ----------------------------------------------------------------------------

    def _at(self, t: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        heapq.heappush(self.ev, (t, self.seq, fn, arg))
        self.seq += 1

    def _emit(
        self, t: float, text: str, fam: int, call: _Call | None = None, region: bool = False
    ) -> None:
        if t < self.now - 1e-6:
            raise RuntimeError(f"line at {t:.3f} ms emitted at {self.now:.3f} ms: {text[:60]}")
        if self.allow[fam]:
            heapq.heappush(self.lines, (t, self.seq, text, fam, call, region))
            self.seq += 1

    def _flush(self, upto: float) -> None:
        lines = self.lines
        w = self.w
        pop = heapq.heappop
        while lines and lines[0][0] < upto:
            t, _, text, fam, call, region = pop(lines)
            w.line(t, text, fam, call, region)

    def _n(self, mean: float, sd: float = 0.08) -> float:
        v = self.rng.gauss(mean, mean * sd)
        lo = mean * 0.3
        return v if v > lo else lo

    def _x(self, rep: dict[str, Any] | None, key: str, mean: float, sd: float = 0.08) -> float:
        """The replayed call's measured ``key`` when it has one, else a draw around ``mean``."""
        if rep is not None:
            v = rep.get(key)
            if v is not None:
                return float(v)
        return self._n(mean, sd)

    # -- line builders -------------------------------------------------------------------------

    def _ts(self, t: float) -> str:
        us = self.base_us + int(t * 1000.0)
        sec, frac = divmod(us, 1_000_000)
        p = self.tscache.get(sec)
        if p is None:
            if len(self.tscache) > 4096:
                self.tscache.clear()
            p = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
            self.tscache[sec] = p
        return f"{p}.{frac:06d}Z"

    def _fields(self, fields: Fields) -> str:
        if self.ansi:
            return " ".join([f"\x1b[3m{k}\x1b[0m\x1b[2m=\x1b[0m{v}" for k, v in fields])
        return " ".join([f"{k}={v}" for k, v in fields])

    def _span(self, name: str, fields: Fields) -> str:
        if not self.allow_tr:
            return ""
        if self.ansi:
            return (
                f"\x1b[1m{name}\x1b[0m\x1b[1m{{\x1b[0m{self._fields(fields)}\x1b[1m}}\x1b[0m"
                f"\x1b[2m:\x1b[0m "
            )
        return f"{name}{{{self._fields(fields)}}}: "

    def _tr(
        self,
        t: float,
        target: str,
        msg: str,
        fields: Fields = (),
        span: str = "",
        level: str = "INFO",
    ) -> None:
        if not self.allow_tr:
            return
        body = f"{msg} {self._fields(fields)}" if fields else msg
        if self.ansi:
            text = (
                f"\x1b[2m{self._ts(t)}\x1b[0m {self.lvl[level]} {span}"
                f"\x1b[2m{target}\x1b[0m\x1b[2m:\x1b[0m {body}"
            )
        else:
            text = f"{self._ts(t)} {self.lvl[level]} {span}{target}: {body}"
        self._emit(t, text, _TR)

    def _tl(self, t: float, event: str, job_id: str, detail: str) -> None:
        if self.allow_tl:
            self._emit(t, f"TIMELINE,{_fl(t)},{event},{job_id},{detail}", _TL)

    def _cpp_line(self, t: float, text: str, call: _Call, region: bool = False) -> None:
        self._emit(
            t, text, _NTT if text[5] == "N" else _TIMING, call if self.track else None, region
        )

    # -- run -----------------------------------------------------------------------------------

    def run(self) -> None:
        self._startup()
        ev = self.ev
        pop = heapq.heappop
        while ev:
            t, _, fn, arg = pop(ev)
            if t > self.now:
                self.now = t
                self._flush(t)
            fn(arg)
        self._flush(math.inf)
        self.w.finish(self.now)

    # -- startup -------------------------------------------------------------------------------

    def _startup(self) -> None:
        cfg = self.cfg
        rng = self.rng
        t = -2600.0 - rng.random() * 400.0
        self.now = t
        tr = self._tr
        D, E, C = "cuzk_daemon", "cuzk_core::engine", "cuzk_core::config"
        tr(t, D, "cuzk-daemon starting")
        tr(t + 1.2, D, "configuration loaded", (("listen", "0.0.0.0:9820"),))
        if self.gt > 0 and self.cpp >= 2:
            tr(t + 1.5, D, "set CUZK_GPU_THREADS for C++ groth16_pool", (("gpu_threads", self.gt),))
        tr(t + 2.0, D, "rayon global thread pool configured", (("rayon_threads", 192),))
        if self.budget:
            tr(
                t + 3.1,
                C,
                "synthesis.partition_workers is deprecated — concurrency is now "
                "managed by the memory budget",
                level="WARN",
            )
            tr(t + 9.4, E, "memory budget initialized", (("total_budget_gib", 700),))
            tr(t + 2210.0, E, "CUDA pinned memory pool initialized")
        t0 = 0.05
        tr(t0, E, "starting cuzk engine", (("pipeline_enabled", "true"),))
        if self.budget:
            tr(t0 + 0.2, E, "evictor callback wired")
        gpus = ", ".join(str(g) for g in range(cfg.n_gpus))
        if self.cpp >= 3:
            tr(
                t0 + 41.0,
                E,
                "initializing GPU workers",
                (
                    ("num_gpus", cfg.n_gpus),
                    ("gpu_workers_per_device", cfg.gw),
                    ("total_workers", self.n_workers),
                    ("gpus", f"[{gpus}]"),
                ),
            )
        else:
            tr(
                t0 + 41.0,
                E,
                "initializing GPU workers",
                (("num_gpus", cfg.n_gpus), ("gpus", f"[{gpus}]")),
            )
        t1 = t0 + 41.5
        if self.budget:
            mpb = max(50, cfg.pw)
            tr(t1, E, "synthesis priority dispatcher started (PI pacer)")
            tr(
                t1 + 0.2,
                E,
                "starting pipeline: synthesis task + GPU workers (budget-gated)",
                (
                    ("configured_lookahead", 1),
                    ("max_partitions_in_budget", mpb),
                    ("effective_lookahead", min(mpb, 32)),
                    ("synth_worker_count", cfg.pw),
                    ("num_gpus", self.n_workers),
                ),
            )
            tr(
                t1 + 0.3,
                E,
                "synthesis dispatcher started (budget-gated)",
                (
                    ("max_batch_size", 1),
                    ("max_batch_wait_ms", 10000),
                    ("slot_size", 0),
                    ("synthesis_concurrency", 1),
                ),
            )
        elif not self.mono_all:
            tr(
                t1 + 0.2,
                E,
                "starting pipeline: synthesis task + GPU workers",
                (("lookahead", max(1, cfg.pw)), ("num_gpus", cfg.n_gpus)),
            )
        if self.cpp >= 3:
            tr(
                t1 + 0.5,
                E,
                "spawning GPU workers with Phase 8 dual-worker interlock",
                (("gpu_workers_per_device", cfg.gw),),
            )
        for w in range(self.n_workers):
            g, sub = divmod(w, cfg.gw)
            f: Fields = (
                (("worker_id", w), ("gpu", g), ("sub_id", sub))
                if self.cpp >= 3
                else (("worker_id", w), ("gpu", g))
            )
            tr(t1 + 0.6 + 0.05 * w, E, "pipeline GPU worker started", f)
        tr(
            t1 + 0.6 + 0.05 * self.n_workers + 0.1,
            E,
            "cuzk engine started",
            (("num_workers", self.n_workers), ("pipeline", "true")),
        )
        self.bench_start = 1800.0 + rng.random() * 1500.0
        self._at(self.bench_start, self._ev_bench_fill)

    # -- bench and jobs ------------------------------------------------------------------------

    def _more(self) -> bool:
        cfg = self.cfg
        if cfg.target_bytes:
            return self.w.bytes + 150 * len(self.lines) < cfg.target_bytes
        return self.submitted < cfg.proofs

    def _ev_bench_fill(self, _: Any) -> None:
        j = max(1, self.cfg.concurrency)
        t = self.now
        while self.outstanding < j and self._more():
            t += 0.4 + self.rng.random() * 1.5
            self._submit(t)

    def _new_job(self, kind: str) -> _Job:
        cfg = self.cfg
        rng = self.rng
        job = _Job()
        job.idx = len(self.jobs)
        self.jobs.append(job)
        job.kind = kind
        ppp = cfg.partitions_per_proof
        if kind == "wdpost":
            job.proof_kind, job.circuit_id, job.nparts, job.ncirc = (
                "window-post",
                "wpost-32g",
                0,
                1,
            )
            rb = " ".join(str(rng.randrange(256)) for _ in range(8))
            job.job_id = f"wdpost-{self.miner}-{rng.randrange(4)}-[{rb}]"
            return job
        if kind == "snap":
            job.proof_kind, job.circuit_id = "snap-update", "snap-32g"
            n = 16 if ppp == 10 else ppp
        else:
            job.proof_kind, job.circuit_id = "porep-c2", "porep-32g"
            n = ppp
        if self.mono_all:
            job.nparts, job.ncirc = 0, n
        else:
            job.nparts, job.ncirc = n, 1
        if cfg.id_style == "uuid":
            job.job_id = _uuid4(rng)
        else:
            self.sector += 1 + rng.randrange(3)
            prefix = "porep" if kind == "porep" else "snap"
            if rng.random() < 0.5:
                job.job_id = f"ps-{prefix}-{self.miner}-{self.sector}-{rng.randrange(10**5, 10**6)}"
            else:
                job.job_id = f"{prefix}-{self.miner}-{self.sector}"
        return job

    def _submit(self, t: float) -> None:
        cfg = self.cfg
        i = self.submitted
        self.submitted += 1
        self.outstanding += 1
        kind = "snap" if cfg.snap_every and (i + 1) % cfg.snap_every == 0 else "porep"
        job = self._new_job(kind)
        job.bench_idx = i
        self.bench_jobs.append(job)
        job.bench_submit = t
        if i in self.fail_idx:
            job.fail_part = self.rng.randrange(max(1, job.nparts))
        if i in self.selfcheck_idx:
            job.self_check_fail = True
        self._at(t + 2.0 + self.rng.random() * 2.0, self._ev_receive, job)
        if cfg.wdpost_every and (i + 1) % cfg.wdpost_every == 0:
            wj = self._new_job("wdpost")
            wj.bench_submit = t
            self._at(t + 900.0 + self.rng.random() * 3000.0, self._ev_receive, wj)

    def _ev_receive(self, job: _Job) -> None:
        d = self.d
        job.recv_t = self.now
        if job.nparts == 0:
            # monolithic: synthesis includes parsing; SRS loads after the first synthesis
            self._queue_units(job, self.now)
            return
        start = max(self.now, self.disp_free)
        dur = self._n(d.c1_parse, 0.1)
        if job.circuit_id not in self.srs_loaded:
            self.srs_loaded.add(job.circuit_id)
            dur += self._n(d.srs_load, 0.05)
        self.disp_free = start + dur
        if self.budget:
            job.synth_span = self._span("synth_single", (("proof_kind", job.proof_kind),))
            self._tr(
                start + 0.1,
                "cuzk_core::engine",
                "processing batch",
                (("batch_size", 1), ("proof_kind", job.proof_kind), ("slot_size", 0)),
                job.synth_span,
            )
        self._at(start + dur, self._ev_dispatch, job)

    def _ev_dispatch(self, job: _Job) -> None:
        t = self.now
        job.dispatch_t = t
        job.seq = self.job_seq
        self.job_seq += 1
        E = "cuzk_core::engine"
        if self.budget:
            msg = (
                "dispatching per-partition SnapDeals synthesis (budget-gated)"
                if job.kind == "snap"
                else "dispatching per-partition synthesis (budget-gated)"
            )
            self._tr(
                t + 0.05,
                E,
                msg,
                (
                    ("job_id", job.job_id),
                    ("num_partitions", job.nparts),
                    ("budget_available_gib", 610 - 14 * min(40, self.outstanding)),
                ),
                job.synth_span,
            )
            self._tr(
                t + 0.1,
                E,
                "assigned pipeline sequence number",
                (("job_id", job.job_id), ("job_seq", job.seq)),
                job.synth_span,
            )
        elif job.kind == "snap":
            self._tr(
                t + 0.05,
                E,
                "dispatching per-partition SnapDeals synthesis",
                (
                    ("job_id", job.job_id),
                    ("num_partitions", job.nparts),
                    ("partition_workers", self.cfg.pw),
                ),
            )
        else:
            self._tr(
                t + 0.05,
                E,
                "Phase 7: dispatching per-partition synthesis",
                (
                    ("job_id", job.job_id),
                    ("num_partitions", job.nparts),
                    ("partition_workers", self.cfg.pw),
                ),
            )
        self._queue_units(job, t + 0.2)

    def _queue_units(self, job: _Job, t: float) -> None:
        if job.nparts == 0:
            self.synth_q.append(_Unit(job, None, job.ncirc))
        else:
            for p in range(job.nparts):
                self.synth_q.append(_Unit(job, p, 1))
        self._at(t, self._ev_try_synth)

    # -- synthesis -----------------------------------------------------------------------------

    def _ev_try_synth(self, _: Any) -> None:
        cfg = self.cfg
        d = self.d
        t = self.now
        while self.synth_free > 0 and self.synth_q:
            u = self.synth_q.popleft()
            job = u.job
            t += 0.03 + self.rng.random() * 0.1
            if job.failed and u.p is not None:
                self._tr(
                    t,
                    "cuzk_core::engine",
                    "skipping synthesis for failed job",
                    (("job_id", job.job_id), ("partition", u.p)),
                )
                continue
            self.synth_free -= 1
            active = cfg.pw - self.synth_free
            if job.kind == "porep":
                mean = d.synth_mono if u.p is None else d.synth
            elif job.kind == "snap":
                mean = d.synth_snap
            else:
                mean = d.synth_wdpost
            if self.pool and u.p is not None:
                u.rep = self.pool[self.prng.randrange(len(self.pool))]
            if u.p is not None:
                mean *= synth_contention(active, cfg.pw, d.synth_contention)
            base = u.rep.get("synth") if u.rep is not None else None
            if base is not None:
                dur = base * synth_contention(active, cfg.pw, d.synth_contention)
            else:
                dur = self._n(mean, 0.06)
            u.synth_start = t
            u.synth_ms = _fl(dur)
            if u.p is None:
                self._tl(t, "SYNTH_START", job.job_id, f"kind={job.proof_kind}")
            elif self.tle == "T2" and job.kind == "snap":
                self._tl(t, "SYNTH_START", job.job_id, f"snap_partition={u.p}")
            else:
                self._tl(t, "SYNTH_START", job.job_id, f"partition={u.p}")
            if (
                self.budget
                and u.p is not None
                and cfg.pinned_fail_rate
                and self.rng.random() < cfg.pinned_fail_rate
            ):
                u.pinned_fail = True
                self._tr(
                    t + 850.0,
                    "cuzk_core::pipeline",
                    "pinned pool checkout FAILED — falling back to unpinned",
                    (("num_constraints", 130278869), ("pool_free", 0), ("pool_total_gib", 96)),
                    level="WARN",
                )
            self._at(t + dur + 0.4 + self.rng.random() * 0.6, self._ev_synth_end, u)

    def _ev_synth_end(self, u: _Unit) -> None:
        t = self.now
        job = u.job
        self.synth_free += 1
        u.synth_end = t + 0.2
        P, E = "cuzk_core::pipeline", "cuzk_core::engine"
        if u.p is None:
            self._tl(t + 0.2, "SYNTH_END", job.job_id, f"synth_ms={u.synth_ms}")
            self._tr(
                t + 0.25,
                E,
                "synthesis complete, sending to GPU",
                (
                    ("synth_ms", u.synth_ms),
                    ("circuit_id", job.circuit_id),
                    ("batch_size", 1),
                    ("sectors", 1),
                ),
            )
            tq = t + 0.3
            if job.circuit_id not in self.srs_loaded:
                self.srs_loaded.add(job.circuit_id)
                tq += self._n(self.d.srs_load, 0.05)
            u.queue_t = tq
            self._tl(tq, self.queue_ev, job.job_id, "monolithic" if self.prio else "")
        else:
            if self.budget:
                self._tr(
                    t + 0.01,
                    P,
                    "partition synthesis complete",
                    (
                        ("partition", u.p),
                        ("synth_ms", u.synth_ms),
                        ("is_pinned", "false" if u.pinned_fail else "true"),
                    ),
                )
            sp = "snap_partition" if self.tle == "T2" and job.kind == "snap" else "partition"
            self._tl(t + 0.2, "SYNTH_END", job.job_id, f"{sp}={u.p},synth_ms={u.synth_ms}")
            msg = (
                "partition synthesis complete, pushing to GPU queue"
                if self.prio
                else "partition synthesis complete, sending to GPU"
            )
            self._tr(
                t + 0.25,
                E,
                msg,
                (("job_id", job.job_id), ("partition", u.p), ("synth_ms", u.synth_ms)),
            )
            tq = t + 0.3
            u.queue_t = tq
            self._tl(tq, self.queue_ev, job.job_id, f"{sp}={u.p}")
        self._at(u.queue_t + 0.01, self._ev_gpu_push, u)
        self._ev_try_synth(None)

    # -- GPU queue and workers -----------------------------------------------------------------

    def _ev_gpu_push(self, u: _Unit) -> None:
        if self.prio:
            key = (0, 0) if u.p is None else (u.job.seq, u.p)
            heapq.heappush(self.gpu_q_heap, (key, self.seq, u))
            self.seq += 1
        else:
            self.gpu_q_fifo.append(u)
        self._try_pickup()

    def _try_pickup(self) -> None:
        while self.idle and (self.gpu_q_heap or self.gpu_q_fifo):
            w = self.idle.popleft()
            if self.prio:
                u = heapq.heappop(self.gpu_q_heap)[2]
            else:
                u = self.gpu_q_fifo.popleft()
            self._at(self.now + 0.02 + self.rng.random() * 0.2, self._ev_pickup, (w, u))

    def _ev_worker_free(self, w: int) -> None:
        self.idle.append(w)
        self._try_pickup()

    def _ev_pickup(self, arg: tuple[int, _Unit]) -> None:
        w, u = arg
        cfg = self.cfg
        rng = self.rng
        d = self.d
        job = u.job
        t = self.now
        g = w // cfg.gw
        E = "cuzk_core::engine"
        pdet = "" if u.p is None else f",partition={u.p}"
        sf: Fields = (
            ("worker_id", w),
            ("gpu", g),
            ("job_id", job.job_id),
            ("proof_kind", job.proof_kind),
            ("batch_size", 1),
        )
        if self.tle != "T0":  # the partition span field arrived with Phase 7
            sf += (("partition", "None" if u.p is None else f"Some({u.p})"),)
        span_w = self._span("gpu_worker", sf)
        hot_start = t - 0.01
        self._tl(t, "GPU_PICKUP", job.job_id, f"worker={w}{pdet}")
        if self.picked_line:
            pf: Fields = (
                ()
                if self.tle == "T0"
                else (
                    ("batched", "false"),
                    ("partitioned", "false" if u.p is None else "true"),
                    ("partition", "None" if u.p is None else f"Some({u.p})"),
                )
            )
            self._tr(t + 0.02, E, "GPU worker picked up synthesized proof", pf, span_w)
        if job.failed and u.p is not None:
            self._tr(
                t + 0.05,
                E,
                "skipping GPU prove for failed partitioned job",
                (("job_id", job.job_id), ("partition", f"Some({u.p})")),
                span_w,
            )
            self._at(t + 0.1, self._ev_worker_free, w)
            return
        call = _Call(u, w, g)
        call.span_w = span_w
        call.hot_start = hot_start
        self.calls_total += 1
        if job.fail_part is not None and job.fail_part == (u.p or 0) and not job.failed:
            call.fail = True
        if self.track:
            call.lines = []
            call.gpu_lines = []
            tr: dict[str, Any] = {
                "source": 0,
                "job_id": job.job_id,
                "partition": u.p,
                "worker": w,
                "gpu": g,
                "proof_kind": job.proof_kind,
                "era": cfg.era,
                "num_circuits": call.nc,
                "status": "failed" if call.fail else "ok",
                "_lines": call.lines,
                "_gpu_lines": call.gpu_lines,
            }
            call.tr = tr
        ts = t + 0.05
        if self.v11:
            self._tr(
                ts,
                E,
                "GPU_TIMING hot_path pre-prove overhead",
                (
                    ("worker_id", w),
                    ("partition", "None" if u.p is None else f"Some({u.p})"),
                    ("status_ms", 0),
                    ("fail_check_ms", 0),
                    ("mark_busy_ms", 0),
                    ("total_overhead_ms", 0),
                ),
                span_w,
            )
            ts += 0.01
        call.t_start = ts
        self._tl(ts, "GPU_START", job.job_id, f"worker={w}{pdet}")
        call.spawn_t = ts + 0.01
        enter = call.spawn_t + 0.02 + (rng.random() * 3.0 if rng.random() < 0.03 else 0.0)
        call.enter_t = enter
        call.gstart = enter + 0.01
        call.t_entry = call.gstart + 0.7 + rng.random() * 0.8 * d.rust_setup
        if self.static_lock:
            call.t_req = call.t_entry
        else:
            self._pre_lock(call, call.t_entry)
        self._at(call.t_req, self._ev_lock_req, call)

    # -- the C++ call --------------------------------------------------------------------------

    def _pre_lock(self, call: _Call, t_entry: float) -> None:
        """main: setup + split vectors (T1), prep thread (T2, T3), V4-V8 host registration."""
        d = self.d
        rng = self.rng
        nc = call.nc
        split = d.split_vectors * (0.6 + 0.8 * rng.random()) * (1.0 + 0.2 * (nc - 1))
        setup = d.setup_extra * (0.5 + rng.random()) + split
        t_split_end = t_entry + setup
        split_ms = _tv(t_split_end - split, t_split_end, self.base_us)
        setup_ms = _tv(t_entry, t_split_end, self.base_us)
        t1 = t_split_end + 0.005
        call.t_T1 = t1
        self._cpp_line(
            t1, f"CUZK_TIMING: split_vectors_ms={split_ms} setup_to_split_ms={setup_ms}", call
        )
        prep_start = t1 + 0.05
        pm = d.prep_msm if nc == 1 else d.prep_msm * (1.0 + 0.25 * (nc - 1))
        rep = call.rep
        prep = self._x(rep, "prep_msm", pm * call.work, 0.09)
        call.t_T2 = prep_start + prep
        call.t_notify = call.t_T2 + 0.01
        b2 = self._x(rep, "b_g2", (d.b_g2 if nc == 1 else d.b_g2_multi) * call.work, 0.08)
        call.t_T3 = call.t_notify + b2
        prep_ms = _fl(prep)
        b2_ms = _fl(b2)
        if (
            call.malformed == ""
            and self.cfg.malformed_rate
            and self.mrng.random() < self.cfg.malformed_rate
        ):
            call.malformed = "prep_msm_ms" if self.mrng.random() < 0.5 else "ntt_msm_h_ms"
        if call.malformed == "prep_msm_ms":
            self._cpp_line(call.t_T2, "CUZK_TIMING: prep_msm_ms=", call)
            self.malformed += 1
        else:
            self._cpp_line(call.t_T2, f"CUZK_TIMING: prep_msm_ms={prep_ms}", call)
        if not call.fail:
            self._cpp_line(call.t_T3, f"CUZK_TIMING: b_g2_msm_ms={b2_ms} num_circuits={nc}", call)
        t_req = t1 + 0.1
        host_err = 0
        if self.prestage and nc == 1:
            t_req += self._n(d.host_register, 0.2)
            cfg = self.cfg
            if cfg.host_register_fail_rate and rng.random() < cfg.host_register_fail_rate:
                call.registered = False
                host_err = rng.choice((1, 2, 712))
                self._cpp_line(t_req, f"CUZK_TIMING: host_register=fallback err={host_err}", call)
            t_req += 0.05
        call.t_req = t_req
        tr = call.tr
        if tr is not None:
            tr["split_vectors_ms"] = split_ms
            tr["setup_to_split_ms"] = setup_ms
            tr["prep_msm_ms"] = None if call.malformed == "prep_msm_ms" else prep_ms
            if not call.fail:
                tr["b_g2_msm_ms"] = b2_ms
            if not call.registered:
                tr["host_register"] = "fallback"
                tr["host_register_err"] = host_err

    def _ev_lock_req(self, call: _Call) -> None:
        key = -1 if self.static_lock else call.gpu
        m = self.mutex.get(key)
        if m is None:
            m = self.mutex[key] = _Mutex()
        if m.owner is None:
            m.owner = call
            self._acquire(call, self.now)
        else:
            m.waiters.append(call)

    def _ev_unlock(self, key: int) -> None:
        m = self.mutex[key]
        m.owner = None
        if m.waiters:
            nxt = m.waiters.popleft()
            m.owner = nxt
            self._acquire(nxt, self.now + 0.03 + self.rng.random() * 0.05)

    def _free_vram(self, phys: int, t: float) -> int:
        cfg = self.cfg
        regs = self.vram_regions.setdefault(phys, [])
        regs[:] = [r for r in regs if r[1] > t]
        used = sum(r[2] for r in regs if r[0] <= t)
        free = cfg.vram_mib - 1092 + self.rng.randrange(-40, 41) - used
        if cfg.force_skip_vram:
            free -= self.rng.randrange(5200, 6400)
        return max(0, free)

    def _acquire(self, call: _Call, t_lock: float) -> None:
        cfg = self.cfg
        d = self.d
        rng = self.rng
        tr = call.tr
        rec_no = self.nrec
        self.nrec += 1
        if tr is not None:
            tr["record"] = rec_no
            tr["_t_lock_ms"] = round(t_lock, 3)
            if cfg.lock_truth:
                tr["_mutex_wait_ms"] = round(t_lock - call.t_req, 3)
            self.truth.append(tr)
        nc = call.nc
        cl = self._cpp_line
        # GPU threads: a 1-circuit call uses one thread; batch calls fan out before gpu_index
        if nc == 1 or self.pinned_engine:
            ntids = 1
        else:
            ntids = min(cfg.n_gpus, nc)
        # before gpu_index routing (V10) every engine call ran on GPU 0 (reference 1.3)
        phys0 = call.gpu if self.pinned_engine else 0
        if self.static_lock:
            t_entry = t_lock + 0.01
            call.t_entry = t_entry
            self._pre_lock(call, t_entry)
            t_free = call.t_T1 + 0.1
        else:
            t_entry = call.t_entry
            t_free = t_lock + 0.005
            if self.v11:
                pre_lock = _fl(call.t_req - t_entry)
                wait = _fl(t_lock - call.t_req)
                cl(
                    t_lock + 0.005,
                    f"CUZK_TIMING: pre_lock_cpu_ms={pre_lock} mutex_wait_ms={wait}",
                    call,
                    True,
                )
                t_free = t_lock + 0.01
                if tr is not None:
                    tr["pre_lock_cpu_ms"] = pre_lock
                    tr["mutex_wait_ms"] = wait
        # V4-V8 pre-staging (under the lock, before the GPU threads)
        prestaged = False
        if self.prestage and nc == 1 and call.registered:
            t_ps0 = t_free + 0.01
            t_ps1 = t_ps0 + self._n(d.ps_sync, 0.3)
            t_ps2 = t_ps1 + self._n(d.ps_trim, 0.5)
            t10 = t_ps2 + 0.2
            free = self._free_vram(phys0, t_lock)
            usable = max(0, free - _SAFETY_MIB)
            cl(
                t10,
                f"CUZK_TIMING: prestage_vram free_mib={free} usable_mib={usable} "
                f"need_da_mib={_NEED_DA_MIB} need_dbc_mib={self.need_dbc} "
                f"total_mib={self.need_total}",
                call,
                True,
            )
            outcome = "ok"
            err = 0
            # a replayed call keeps its measured outcome
            forced = call.rep.get("prestage") if call.rep is not None else None
            if forced == "skip_vram" or (forced is None and usable < self.need_total):
                outcome = "skip_vram"
                cl(t10 + 0.01, "CUZK_TIMING: prestage_setup=skip_vram", call, True)
                t_free = t10 + 0.05
            else:
                r = rng.random()
                rate = cfg.prestage_fail_rate
                t_ps3 = t10 + self._n(d.ps_alloc, 0.2)
                if forced == "silent" or (forced is None and r < rate / 2):
                    outcome = "silent"
                    t_free = t_ps3 + 0.05
                elif forced == "fallback" or (forced is None and r < rate):
                    outcome = "fallback"
                    err = rng.choice((1, 46, 999))
                    cl(t_ps3 + 0.5, f"CUZK_TIMING: prestage_setup=fallback err={err}", call, True)
                    t_free = t_ps3 + 0.6
                else:
                    prestaged = True
                    t_ps4 = t_ps3 + self._n(d.ps_upload, 0.2)
                    if self.t12b:
                        ps = (
                            _fl(t_ps1 - t_ps0),
                            _fl(t_ps2 - t_ps1),
                            _fl(t_ps3 - t_ps2),
                            _fl(t_ps4 - t_ps3),
                            _fl(t_ps4 - t_ps0),
                        )
                        cl(
                            t_ps4 + 0.01,
                            f"CUZK_TIMING: prestage_setup=ok domain={_DOMAIN} "
                            f"lot_of_memory={self.lot} sync_ms={ps[0]} trim_ms={ps[1]} "
                            f"alloc_ms={ps[2]} upload_ms={ps[3]} total_ps_ms={ps[4]}",
                            call,
                            True,
                        )
                        if tr is not None:
                            tr.update(
                                sync_ms=ps[0],
                                trim_ms=ps[1],
                                alloc_ms=ps[2],
                                upload_ms=ps[3],
                                total_ps_ms=ps[4],
                            )
                    else:
                        cl(
                            t_ps4 + 0.01,
                            f"CUZK_TIMING: prestage_setup=ok domain={_DOMAIN} "
                            f"lot_of_memory={self.lot}",
                            call,
                            True,
                        )
                    if tr is not None:
                        tr["domain"] = _DOMAIN
                        tr["lot_of_memory"] = self.lot
                    t_free = t_ps4 + 0.05
            if tr is not None:
                tr.update(
                    free_mib=free,
                    usable_mib=usable,
                    need_da_mib=_NEED_DA_MIB,
                    need_dbc_mib=self.need_dbc,
                    total_mib=self.need_total,
                    prestage_setup=outcome,
                )
                if outcome == "fallback":
                    tr["prestage_err"] = err
        t_g0 = t_free + 0.1 + rng.random() * 0.1
        # circuits per GPU thread: contiguous split, the first ones get one extra
        per, extra = divmod(nc, ntids)
        ends: list[float] = []
        per_tid: list[dict[str, int]] = []
        ntt_h_sum = [0] * 7
        fail_done = False
        for tid in range(ntids):
            c = per + (1 if tid < extra else 0)
            phys = phys0 + tid
            tg = t_g0 + 0.02 * tid
            tcur = tg + 0.02
            if self.ntth and phys not in self.gpu_init:
                self.gpu_init.add(phys)
                first = True
                cl(
                    tcur + 0.01,
                    f"CUZK_TIMING: set pool release threshold to MAX on gpu {phys}",
                    call,
                    True,
                )
                tcur += 0.02 + self._n(d.d_a_alloc_first, 0.15)
                cl(
                    tcur,
                    f"CUZK_TIMING: d_a_cache allocated {_NEED_DA_MIB} MiB on gpu {phys}",
                    call,
                    True,
                )
                tcur += 0.02
                if tr is not None:
                    tr["pool_threshold_gpu"] = phys
                    tr["d_a_cache_mib"] = _NEED_DA_MIB
                    tr["d_a_cache_gpu"] = phys
            else:
                first = False
            if self.ntth:
                for ci in range(c):
                    v = self._ntt_h(call, first and ci == 0, tcur)
                    tcur = v[0]
                    for k in range(7):
                        ntt_h_sum[k] += v[1][k]
                    cl(
                        tcur,
                        "CUZK_NTT_H: d_b_alloc={}ms ntt_kernels={}ms coset_intt_sync={}ms "
                        "msm_init={}ms msm_invoke={}ms msm_dtor={}ms total={}ms".format(*v[1]),
                        call,
                        True,
                    )
                    tcur += 0.3 + rng.random() * 0.4
            else:
                mean = d.ntt_prestaged if prestaged else d.ntt
                for _ in range(c):
                    tcur += self._x(call.rep, "ntt", mean, 0.05)
            t4 = tcur
            ntt_ms = _fl(t4 - tg)
            if call.malformed == "ntt_msm_h_ms":
                cl(t4, f"CUZK_TIMING: gpu_tid={tid} ntt_msm_h_ms=abc", call, True)
                self.malformed += 1
            else:
                cl(t4, f"CUZK_TIMING: gpu_tid={tid} ntt_msm_h_ms={ntt_ms}", call, True)
            t_reach = t4 + 0.01 + self._x(call.rep, "post_ntt_gap", d.post_ntt_gap, 0.15)
            t_bar = max(t_reach, call.t_notify + 0.02)
            bw = _fl(t_bar - t_reach)
            tdone = t_bar + 0.01
            if self.v11:
                cl(t_bar + 0.005, f"CUZK_TIMING: gpu_tid={tid} barrier_wait_ms={bw}", call, True)
            rec = {"ntt_msm_h_ms": ntt_ms}
            if self.v11:
                rec["barrier_wait_ms"] = bw
            batch = self._x(call.rep, "batch_add", d.batch_add * c * call.work, 0.05)
            if call.fail and not fail_done:
                fail_done = True
                ends.append(tdone + batch * (0.2 + 0.6 * rng.random()) + 1.0)
                per_tid.append(rec)
                continue
            t5 = tdone + batch
            cl(t5, f"CUZK_TIMING: gpu_tid={tid} batch_add_ms={_fl(batch)}", call, True)
            tail = self._x(call.rep, "tail_msm", d.tail_msm * c * call.work, 0.06)
            t6 = t5 + 0.01 + tail
            gt_ms = _fl(t6 - tg)
            tail_ms = _fl(tail)
            line6 = f"CUZK_TIMING: gpu_tid={tid} tail_msm_ms={tail_ms} gpu_total_ms={gt_ms}"
            if cfg.unknown_key_rate and tid == 0 and self.mrng.random() < cfg.unknown_key_rate:
                key = self.mrng.choice(_UNKNOWN_KEYS)
                val = self.mrng.randrange(0, 40)
                line6 += f" {key}={val}"
                self.unknown_lines += 1
                if tr is not None:
                    tr["extra"] = json.dumps({key: val}, sort_keys=True)
            cl(t6, line6, call, True)
            rec.update(batch_add_ms=_fl(batch), tail_msm_ms=tail_ms, gpu_total_ms=gt_ms)
            per_tid.append(rec)
            ends.append(t6 + self._n(d.msm_dtors * c, 0.2))
        t_join = max(ends) + 0.05
        t_bu = t_join + (self._n(d.ps_cleanup, 0.2) if prestaged else 0.0)
        if self.v11 and not call.fail:
            held = _fl(t_bu - t_lock)
            total_fn = _fl(t_bu - t_entry)
            cl(t_bu, f"CUZK_TIMING: mutex_held_ms={held} total_start_fn_ms={total_fn}", call, True)
            if tr is not None:
                tr["mutex_held_ms"] = held
                tr["total_start_fn_ms"] = total_fn
        t_unlock = t_bu + 0.005
        if tr is not None and cfg.lock_truth:
            tr["_mutex_held_ms"] = round(t_unlock - t_lock, 3)
        if self.prestage:
            mib = 12288 if prestaged else 6144
            self.vram_regions.setdefault(phys0, []).append((t_lock, t_unlock, mib))
        if tr is not None:
            tr["gpu_threads"] = ntids
            for key in (
                "ntt_msm_h_ms",
                "barrier_wait_ms",
                "batch_add_ms",
                "tail_msm_ms",
                "gpu_total_ms",
            ):
                vals = [r[key] for r in per_tid if key in r]
                if vals:
                    tr[key] = max(vals)
            if call.malformed == "ntt_msm_h_ms":
                tr["ntt_msm_h_ms"] = None
            if call.malformed:
                tr["_malformed"] = [call.malformed]
            if call.malformed == "ntt_msm_h_ms" and tr.get("status") == "ok":
                tr["status"] = "incomplete"  # a GPU-region value the log does not hold
            if ntids > 1:
                tr["_per_tid"] = per_tid
            if self.ntth:
                for k, name in enumerate(
                    (
                        "d_b_alloc_ms",
                        "ntt_kernels_ms",
                        "coset_intt_sync_ms",
                        "msm_init_ms",
                        "msm_invoke_ms",
                        "msm_dtor_ms",
                        "ntt_h_total_ms",
                    )
                ):
                    tr[name] = ntt_h_sum[k]
        if call.fail:
            self.calls_failed += 1
        # after the GPU region
        if self.split:
            self._after_unlock_split(call, t_unlock)
        else:
            self._after_unlock_sync(call, t_unlock, t_entry)
        if not self.static_lock:
            self._at(t_unlock, self._ev_unlock, call.gpu)

    def _ntt_h(self, call: _Call, first: bool, t0: float) -> tuple[float, list[int]]:
        """One CUZK_NTT_H block (per circuit); returns (print time, field values)."""
        d = self.d
        rng = self.rng
        base = self.base_us
        pinned = self.v11 and not call.unit.pinned_fail
        tv = [t0]
        t = t0
        t += self._n(d.d_b_alloc_first, 0.1) if first else rng.random() * 0.6
        tv.append(t)
        rep = call.rep
        if pinned and (rep is None or rep.get("ntt_kernels") is None):
            t += d.ntt_kernels_pinned * (0.5 + rng.random())
        else:
            t += self._x(rep, "ntt_kernels", d.ntt_kernels, 0.25 if self.v11 else 0.15)
        tv.append(t)
        t += self._x(rep, "coset_intt_sync", d.coset_intt_sync, 0.05)
        tv.append(t)
        t += 0.05 + rng.random() * 0.5
        tv.append(t)
        t += self._x(rep, "msm_invoke", d.msm_invoke * call.work, 0.05)
        tv.append(t)
        t += 0.3 + rng.random() * 1.2
        tv.append(t)
        vals = [_tv(tv[i], tv[i + 1], base) for i in range(6)]
        vals.append(_tv(tv[0], tv[6], base))
        return t + 0.01, vals

    def _after_unlock_sync(self, call: _Call, t_unlock: float, t_entry: float) -> None:
        """V1-V7: the rest of generate_groth16_proofs_c, then the Rust wrapper (same thread)."""
        d = self.d
        rng = self.rng
        tr = call.tr
        job = call.job
        u = call.unit
        t_u = t_unlock + (
            self._n(d.host_unregister, 0.2)
            if self.prestage and call.registered and call.nc == 1
            else 0.0
        )
        if call.fail:
            t_ret = max(t_u, call.t_notify) + 0.2
            if self.static_lock:
                self._at(t_ret, self._ev_unlock, -1)
            self._at(t_ret + 0.3, self._ev_call_done, call)
            return
        t_jp = max(t_u, call.t_T3 + 0.02) + 0.01
        t7 = t_jp + self._x(call.rep, "epilogue", d.epilogue * (1 + 0.5 * (call.nc - 1)), 0.2)
        epi = _tv(t_jp, t7, self.base_us)
        pd = _tv(t_entry, t7, self.base_us)
        if self.t7:
            self._cpp_line(
                t7 + 0.005, f"CUZK_TIMING: epilogue_ms={epi} pre_destructor_ms={pd}", call
            )
            if tr is not None:
                tr["epilogue_ms"] = epi
                tr["pre_destructor_ms"] = pd
        self._at(t7 + 0.05, self._ev_dealloc, call)
        t_ret = t7 + 0.1
        if self.static_lock:
            self._at(t_ret, self._ev_unlock, -1)
        # Rust: bellperson wrapper, then cuzk gpu_prove, then GPU_END
        bp = t_ret + 0.15 - (call.gstart + 0.2)
        gpu_dur = t_ret + 0.3 - call.gstart
        call.gpu_dur = gpu_dur
        G = _fl(gpu_dur)
        pdet = "None" if u.p is None else f"Some({u.p})"
        span_g = self._span("gpu_prove", (("circuit_id", job.circuit_id), ("partition", pdet)))
        self._tr(
            t_ret + 0.2,
            "bellperson::groth16::prover::supraseal",
            f"GPU prove time: {_rust_duration(bp, rng.randrange(1000))}",
            (),
            span_g,
        )
        self._tr(
            t_ret + 0.35,
            "cuzk_core::pipeline",
            "GPU prove complete",
            (("proof_count", call.nc), ("proof_bytes", 192 * call.nc), ("gpu_ms", G)),
            span_g,
        )
        det = (
            f"worker={call.w},gpu_ms={G}"
            if u.p is None
            else f"worker={call.w},partition={u.p},gpu_ms={G}"
        )
        self._tl(t_ret + 0.4, "GPU_END", job.job_id, det)
        if tr is not None:
            if self.allow_tl:
                tr["end_ms"] = _fl(t_ret + 0.4)
                tr["gpu_ms"] = G
            if self.allow_tr:
                tr["gpu_prove_time_ms"] = round(bp, 6)
        self._at(t_ret + 0.5, self._ev_call_done, call)

    def _after_unlock_split(self, call: _Call, t_unlock: float) -> None:
        """V8+: start returns after unlock; a finalizer task joins b_g2, runs the epilogue."""
        d = self.d
        tr = call.tr
        job = call.job
        u = call.unit
        E = "cuzk_core::engine"
        t_cret = (
            t_unlock
            + 0.1
            + (
                self._n(d.host_unregister, 0.2)
                if self.prestage and call.registered and call.nc == 1
                else 0.0
            )
        )
        prove_done = t_cret + 0.02 + self._n(d.release_abc, 0.3)
        pdet = "None" if u.p is None else f"Some({u.p})"
        if self.v11:
            pst = _fl(prove_done - call.enter_t)
            ste = _fl(call.enter_t - call.spawn_t)
            self._tr(
                prove_done + 0.01,
                E,
                "GPU_TIMING spawn_blocking prove_start",
                (
                    ("worker_id", call.w),
                    ("partition", pdet),
                    ("spawn_to_enter_ms", ste),
                    ("prove_start_ms", pst),
                ),
            )
            t = prove_done + 0.06
            self._tr(
                t,
                E,
                "GPU_TIMING prove_start returned",
                (
                    ("worker_id", call.w),
                    ("partition", pdet),
                    ("total_pre_prove_ms", _fl(t - call.hot_start)),
                    ("spawn_blocking_wall_ms", _fl(t - call.spawn_t)),
                ),
                call.span_w,
            )
            if tr is not None and self.allow_tr:
                tr["prove_start_ms"] = pst
                tr["spawn_to_enter_ms"] = ste
        self._at(prove_done + 0.12, self._ev_worker_free, call.w)
        fin_start = prove_done + 0.09
        call.fin_start = fin_start
        fin_enter = fin_start + 0.03
        if call.fail:
            call.finish_ms = _fl(fin_enter + 0.25 - fin_start)
            self._at(fin_enter + 0.3, self._ev_call_done, call)
            return
        t_jp = max(fin_enter, call.t_T3 + 0.02) + 0.01
        t_epi = t_jp + self._n(d.epilogue * (1 + 0.5 * (call.nc - 1)), 0.2)
        self._at(t_epi + 0.02, self._ev_dealloc, call)
        t_cf = t_epi + 0.05
        gpu_dur = t_cf + 0.05 - call.gstart
        call.gpu_dur = gpu_dur
        G = _fl(gpu_dur)
        self._tr(
            t_cf + 0.06,
            "cuzk_core::pipeline",
            "GPU prove complete (split)",
            (("proof_count", call.nc), ("proof_bytes", 192 * call.nc), ("gpu_ms", G)),
        )
        det = (
            f"worker={call.w},gpu_ms={G}"
            if u.p is None
            else f"worker={call.w},partition={u.p},gpu_ms={G}"
        )
        self._tl(t_cf + 0.1, "GPU_END", job.job_id, det)
        call.finish_ms = _fl(t_cf + 0.12 - fin_start)
        if tr is not None and self.allow_tl:
            tr["end_ms"] = _fl(t_cf + 0.1)
            tr["gpu_ms"] = G
        self._at(t_cf + 0.15, self._ev_call_done, call)

    def _ev_dealloc(self, call: _Call) -> None:
        d = self.d
        start = self.now + 0.02
        if self.dealloc_mtx:
            start = max(start, self.dealloc_free + 0.02)
        mean = d.async_dealloc if call.nc == 1 else d.async_dealloc_multi
        dur = self._x(call.rep, "async_dealloc", mean, 0.3)
        end = start + dur
        if self.dealloc_mtx:
            self.dealloc_free = end
        ms = _tv(start, end, self.base_us)
        self._cpp_line(end + 0.01, f"CUZK_TIMING: async_dealloc_ms={ms}", call)
        if call.tr is not None:
            call.tr["async_dealloc_ms"] = ms

    # -- results -------------------------------------------------------------------------------

    def _ev_call_done(self, call: _Call) -> None:
        t = self.now
        d = self.d
        job = call.job
        u = call.unit
        tr = call.tr
        E = "cuzk_core::engine"
        span = "" if self.split else call.span_w
        pdet = "None" if u.p is None else f"Some({u.p})"
        if tr is not None:
            if self.allow_tl:
                tr.update(
                    synth_start_ms=_fl(u.synth_start),
                    synth_end_ms=_fl(u.synth_end),
                    queue_ms=_fl(u.queue_t),
                    start_ms=_fl(call.t_start),
                    pickup_ms=_fl(call.hot_start + 0.01),
                    synth_ms=u.synth_ms,
                )
            if self.v11 and u.p is not None and self.allow_tr:
                tr["finish_ms"] = call.finish_ms
        t_proc = t + 0.05
        if call.fail:
            err = self.cfg.failure_error
            if u.p is not None:
                self._tr(
                    t_proc,
                    E,
                    "partition GPU proving failed",
                    (("error", err), ("job_id", job.job_id), ("partition", u.p)),
                    span,
                    level="ERROR",
                )
            else:
                self._tr(t_proc, E, "GPU proving failed", (("error", err),), span, level="ERROR")
            t_proc += 0.05
            if not job.failed:
                job.failed = True
                self._job_finished(job, t_proc, ok=False)
        elif job.failed:
            if u.p is not None:
                self._tr(
                    t_proc,
                    E,
                    "discarding GPU result for failed job",
                    (("job_id", job.job_id), ("partition", u.p)),
                    span,
                )
                if self.v11:
                    t_proc += self._n(d.malloc_trim, 0.3)
                    self._tr(
                        t_proc,
                        E,
                        "FIN_TIMING malloc_trim (discard path)",
                        (
                            ("job_id", job.job_id),
                            ("partition", u.p),
                            ("malloc_trim_ms", _fl(t_proc - t - 0.05)),
                        ),
                    )
        elif u.p is not None:
            job.done += 1
            job.gpu_sum += call.gpu_dur
            job.synth_sum += u.synth_ms
            filled = 1 if job.done == job.nparts else 0
            self._tr(
                t_proc,
                E,
                "partition GPU prove complete",
                (
                    ("job_id", job.job_id),
                    ("partition", u.p),
                    ("gpu_ms", _fl(call.gpu_dur)),
                    ("filled", filled),
                ),
                span,
            )
            if self.v11:
                t0 = t_proc
                t_proc += self._n(d.malloc_trim, 0.3)
                self._tr(
                    t_proc,
                    E,
                    "FIN_TIMING malloc_trim (success path)",
                    (
                        ("job_id", job.job_id),
                        ("partition", u.p),
                        ("malloc_trim_ms", _fl(t_proc - t0)),
                    ),
                )
            if filled:
                t_proc += 0.1
                self._tr(
                    t_proc,
                    E,
                    "Phase 7: all partitions complete, proof assembled",
                    (
                        ("job_id", job.job_id),
                        ("proof_len", 192 * job.nparts),
                        ("total_ms", _fl(t_proc - job.recv_t)),
                        ("synth_ms", job.synth_sum),
                        ("gpu_ms", _fl(job.gpu_sum)),
                    ),
                    span,
                )
                ok = True
                if self.selfcheck and job.kind == "porep":
                    t_proc += self._n(d.verify, 0.2)
                    if job.self_check_fail:
                        ok = False
                        self._tr(
                            t_proc,
                            E,
                            "Phase 7: PoRep proof self-check FAILED — proof will "
                            "NOT be returned to caller",
                            (
                                ("job_id", job.job_id),
                                ("proof_len", 192 * job.nparts),
                                ("sector", 1),
                                ("miner", 1000),
                            ),
                            span,
                            level="ERROR",
                        )
                        t_proc += self._n(d.verify * 3, 0.2)
                        bad = self.rng.randrange(job.nparts)
                        valid = ", ".join(str(i) for i in range(job.nparts) if i != bad)
                        self._tr(
                            t_proc,
                            E,
                            "Phase 7: per-partition verification results "
                            "(invalid partitions produced bad proofs)",
                            (
                                ("job_id", job.job_id),
                                ("valid_partitions", f"[{valid}]"),
                                ("invalid_partitions", f"[{bad}]"),
                            ),
                            span,
                            level="ERROR",
                        )
                    else:
                        self._tr(
                            t_proc,
                            E,
                            "Phase 7: PoRep proof self-check PASSED",
                            (("job_id", job.job_id),),
                            span,
                        )
                job.ok = ok
                self._job_finished(job, t_proc, ok=ok)
        else:
            job.gpu_sum = call.gpu_dur
            job.synth_sum = u.synth_ms
            total = t_proc - job.recv_t
            proving = u.synth_ms + call.gpu_dur
            self._tr(
                t_proc,
                E,
                "proof completed successfully (pipeline)",
                (
                    ("proof_len", 192 * call.nc),
                    ("total_ms", _fl(total)),
                    ("queue_ms", _fl(total - proving)),
                    ("synth_ms", u.synth_ms),
                    ("gpu_ms", _fl(call.gpu_dur)),
                ),
                span,
            )
            if self.selfcheck and job.kind == "porep":
                t_proc += self._n(d.verify, 0.2)
                self._tr(
                    t_proc,
                    E,
                    "Pipeline single-sector PoRep proof self-check PASSED",
                    (("job_id", job.job_id),),
                    span,
                )
            job.ok = True
            self._job_finished(job, t_proc, ok=True)
        t_proc += 0.05
        if self.v11:
            fin = call.fin_start
            f: Fields = (
                (("worker_id", call.w),)
                + ((("partition", pdet),) if u.p is not None else ())
                + (
                    ("finish_ms", call.finish_ms),
                    ("drop_res_ms", 0),
                    ("lock_wait_ms", 0),
                    ("process_ms", _fl(t_proc - t)),
                    ("total_ms", _fl(t_proc - fin)),
                )
            )
            msg = (
                "FIN_TIMING finalizer partition"
                if u.p is not None
                else "FIN_TIMING finalizer monolithic"
            )
            self._tr(t_proc, E, msg, f)
        if not self.split:
            self._at(t_proc + 0.05, self._ev_worker_free, call.w)
        if tr is not None and not self.track:
            call.tr = None

    def _job_finished(self, job: _Job, t: float, ok: bool) -> None:
        job.end_t = t
        if job.bench_idx < 0:
            return
        self.outstanding -= 1
        resp = t + 1.0 + self.rng.random()
        self.last_resp = max(self.last_resp, resp)
        job.end_t = resp
        if self._more():
            self._at(resp + 1.5 + self.rng.random() * 2.0, self._ev_bench_fill)

    # -- bench output and accounting -----------------------------------------------------------

    def bench_lines(self) -> list[str]:
        cfg = self.cfg
        jobs = self.bench_jobs
        n = len(jobs)
        out = [
            "=== Batch Benchmark ===",
            "proof type:  porep",
            f"count:       {n}",
            f"concurrency: {cfg.concurrency}",
            "",
        ]
        completed: list[tuple[float, float]] = []
        proofs: list[dict[str, Any]] = []
        for i, job in enumerate(jobs):
            wall = (job.end_t - job.bench_submit) / 1000.0
            rec: dict[str, Any] = {"job_id": job.job_id, "wall_s": round(wall, 1)}
            proofs.append(rec)
            if job.ok:
                prove = _fl(job.gpu_sum)
                queue = (
                    _fl(job.dispatch_t - job.recv_t)
                    if job.nparts
                    else _fl(job.end_t - job.recv_t - job.synth_sum - job.gpu_sum)
                )
                completed.append((wall, prove / 1000.0))
                rec.update(status="COMPLETED", prove_ms=prove, queue_ms=queue)
                out.append(
                    f"  [{i + 1}/{n}] COMPLETED \u2014 {wall:.1f}s "
                    f"(prove={prove} ms, queue={queue} ms)"
                )
            else:
                rec.update(status="FAILED", prove_ms=0, queue_ms=0)
                out.append(f"  [{i + 1}/{n}] FAILED \u2014 {wall:.1f}s (prove=0 ms, queue=0 ms)")
        total = (self.last_resp + 0.5 - self.bench_start) / 1000.0
        out += [
            "",
            "=== Batch Summary ===",
            f"total time:    {total:.1f}s",
            f"completed:     {len(completed)}",
            f"failed:        {n - len(completed)}",
        ]
        if completed:
            ws = [c[0] for c in completed]
            ps = [c[1] for c in completed]
            out.append(
                f"wall time:     avg={sum(ws) / len(ws):.1f}s min={min(ws):.1f}s max={max(ws):.1f}s"
            )
            out.append(
                f"prove time:    avg={sum(ps) / len(ps):.1f}s min={min(ps):.1f}s max={max(ps):.1f}s"
            )
            out.append(
                f"throughput:    {len(completed) / total * 60.0:.3f} proofs/min "
                f"({total / len(completed):.1f}s/proof)"
            )
        self.bench_summary = {
            "count": n,
            "completed": len(completed),
            "failed": n - len(completed),
            "total_s": round(total, 3),
            "s_per_proof": round(total / len(completed), 3) if completed else None,
            "proofs": proofs,
        }
        return out

    def finish_output(self) -> dict[str, Any]:
        cfg = self.cfg
        w = self.w
        if self.bench_jobs:
            lines = self.bench_lines()
            if cfg.bench_output and cfg.streams == "all":
                for line in lines:
                    w.plain(line, _BLANK if not line else _BENCH)
        truncated = False
        if cfg.truncate_last:
            # a tracing line cut mid-write (the file was copied while the daemon ran)
            saved = self.allow_tr
            self.allow_tr = True
            self._tr(
                self.now + 5.0,
                "cuzk_core::engine",
                "FIN_TIMING finalizer partition",
                (("worker_id", 0), ("partition", "Some(0)"), ("finish_ms", 711)),
            )
            self.allow_tr = saved
            t_last, _, text, _, _, _ = heapq.heappop(self.lines)
            w.flush_buf()
            w.counts[_TR] += 1
            if w.journald:
                w.journald_lines += 1
                text = w._jp(t_last) + text
            w.raw_tail(text[: len(text) * 2 // 3])
            truncated = True
        w.flush_buf()
        counts = w.counts
        return {
            "lines_total": w.lineno,
            "bytes": w.bytes,
            "by_family": {FAMILY_NAMES[i]: counts[i] for i in range(7)},
            "torn": w.torn,
            "malformed": self.malformed + w.garbage + w.nul_lines,
            "garbage_lines": w.garbage,
            "dropped_lines": w.dropped,
            "nul_lines": w.nul_lines,
            "junk": w.junk,
            "invalid_utf8_lines": w.invalid_utf8,
            "huge_lines": w.huge_lines,
            "unknown_key_lines": self.unknown_lines,
            "ansi_lines": counts[_TR] if self.ansi else 0,
            "journald_lines": w.journald_lines,
            "crlf": cfg.crlf,
            "truncated_last_line": truncated,
            "calls": self.calls_total,
            "calls_failed": self.calls_failed,
            "proofs_submitted": len(self.bench_jobs),
            "proofs_ok": sum(1 for j in self.bench_jobs if j.ok),
            "bench": self.bench_summary,
            "cpp_version": self.cpp,
            "timeline_era": self.tle,
            "streams": cfg.streams,
            "engine_start_utc": self._ts(0.0),
        }


def write_log(cfg: SimConfig, out: str | IO[bytes], truth: bool = True) -> SimResult:
    """Simulate and stream the log to ``out`` (a path or a binary stream).

    With ``truth=False`` no per-call data is kept, so arbitrarily large logs (``target_bytes``)
    run in bounded memory. ``SimResult.data`` is None.
    """
    rc = cfg.resolved()
    if isinstance(out, str):
        with open(out, "wb") as fh:
            return _run(rc, fh, truth)
    return _run(rc, out, truth)


def simulate(cfg: SimConfig) -> SimResult:
    """Simulate in memory; the log is ``SimResult.data`` / ``SimResult.text``."""
    rc = cfg.resolved()
    buf = io.BytesIO()
    res = _run(rc, buf, True)
    res.data = buf.getvalue()
    return res


def _run(cfg: SimConfig, sink: IO[bytes], truth: bool) -> SimResult:
    sim = _Sim(cfg, sink, truth)
    sim.run()
    expected = sim.finish_output()
    rows = sim.truth if truth else []
    return SimResult(data=None, truth=rows, expected=expected, config=cfg)


# ---------------------------------------------------------------------------------------------
# Command line: python -m cuzk_diag.model.daemon --era main --gpus 2 --gw 2 --proofs 20 ... -o x.log
# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m cuzk_diag.model.daemon", description="Write a simulated cuzk daemon log."
    )
    ap.add_argument("--era", default="main", choices=ERAS)
    ap.add_argument("--cpp-version", type=int, default=None)
    ap.add_argument("--timeline-era", default=None, choices=TIMELINE_ERAS)
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--gw", type=int, default=2)
    ap.add_argument("--pw", type=int, default=10)
    ap.add_argument("--proofs", "-c", type=int, default=3)
    ap.add_argument("--concurrency", "-j", type=int, default=1)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--streams", default="all", choices=STREAMS)
    ap.add_argument("--failures", type=int, default=0)
    ap.add_argument("--force-skip-vram", action="store_true")
    ap.add_argument("--messy", action="store_true", help="enable the messy-log preset")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument(
        "--target-mb",
        type=float,
        default=0.0,
        help="keep adding proofs until the log is this large (MB)",
    )
    ap.add_argument("--truth", default=None, help="write the ground truth as JSON here")
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args(argv)
    kw: dict[str, Any] = {}
    if a.messy:
        kw.update(MESSY)
    cfg = SimConfig(
        era=a.era,
        cpp_version=a.cpp_version,
        timeline_era=a.timeline_era,
        n_gpus=a.gpus,
        gw=a.gw,
        pw=a.pw,
        proofs=a.proofs,
        concurrency=a.concurrency,
        partitions_per_proof=a.partitions,
        seed=a.seed,
        streams=a.streams,
        failures=a.failures,
        force_skip_vram=a.force_skip_vram,
        bench_output=not a.no_bench,
        target_bytes=int(a.target_mb * 1_000_000),
        **kw,
    )
    t0 = time.perf_counter()
    want_truth = a.truth is not None
    if a.output == "-":
        res = write_log(cfg, sys.stdout.buffer, truth=want_truth)
    else:
        res = write_log(cfg, a.output, truth=want_truth)
    dt = time.perf_counter() - t0
    if want_truth:
        with open(a.truth, "w", encoding="utf-8") as fh:
            json.dump(res.truth, fh, indent=1)
    mb = res.expected["bytes"] / 1e6
    print(
        f"wrote {mb:.1f} MB, {res.expected['lines_total']} lines, {res.expected['calls']} "
        f"GPU calls in {dt:.1f}s ({mb / dt if dt > 0 else 0.0:.1f} MB/s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
