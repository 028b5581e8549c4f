"""Typed records shared by every layer: events, partition records, findings, accounting.

Only data lives here; the logic that fills these types is in ``lines``, ``assemble`` and ``rules``.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from cuzk_diag.event import Event as Event  # (where it is defined: a C type compiled)
from cuzk_diag.factrows import FactRows, KeyedFactRows, plain_rows

Value = int | float | str | None


class Family(enum.StrEnum):
    """The family of a log line (reference section 0.1 plus cuzk-bench output).

    Code that runs per line binds the members it compares with to module constants
    (``_TIMING = Family.TIMING``): on Python 3.11 reading a member off an enum class goes
    through the enum's metaclass each time (about 850 machine instructions, compiled or not),
    a module constant is a dictionary read. The same holds for ``Attribution``.
    """

    TIMING = "timing"  # CUZK_TIMING: ...
    NTT_H = "ntt_h"  # CUZK_NTT_H: ...
    TIMELINE = "timeline"  # TIMELINE,<offset>,<event>,<job>,<detail>
    TRACING = "tracing"  # tracing-subscriber fmt lines
    BENCH = "bench"  # cuzk-bench batch output
    OTHER = "other"  # anything else (kept, counted)
    BLANK = "blank"  # empty line


class Severity(enum.IntEnum):
    """Finding severity; ordered so that comparisons work."""

    INFO = 10
    WARNING = 20
    ERROR = 30

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(
                f"unknown severity {text!r} (expected info, warning or error)"
            ) from None


class Attribution(enum.StrEnum):
    """How a group of fields in a partition record was attributed to its call."""

    EXACT = "exact"  # by an anchor that admits one answer (mutex block, ids, same thread)
    INFERRED = "inferred"  # by ordering/FIFO heuristics that were consistent
    AMBIGUOUS = "ambiguous"  # several candidates fitted; the most likely was chosen
    NONE = "none"  # the group has no lines in this record


@dataclass(frozen=True, slots=True)
class Finding:
    """One diagnosis: a rule that fired, with its numbers and advice."""

    code: str
    name: str
    severity: Severity
    title: str
    message: str
    evidence: dict[str, Any]
    lines: tuple[int, ...] = ()
    advice: str = ""
    #: First log line of every call the finding applies to (not in the report; the trace
    #: marks these calls): 64-bit integers in file order (``array("q")``, 8 bytes a call;
    #: ``Rule.finding`` makes it of any iterable of ints).
    calls: Sequence[int] = field(default=(), compare=False, repr=False)
    #: What the configuration the advice points to would give, predicted by the daemon model
    #: (``cuzk_diag.model.savings``); None when not estimated.
    estimate: dict[str, Any] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        d = {
            "code": self.code,
            "name": self.name,
            "severity": str(self.severity),
            "title": self.title,
            "message": self.message,
            "evidence": self.evidence,
            "lines": list(self.lines),
            "advice": self.advice,
        }
        if self.estimate is not None:
            d["estimate"] = self.estimate
        return d


@dataclass(slots=True)
class Accounting:
    """Where every input line went. Nothing is dropped without a count here."""

    lines_total: int = 0
    by_family: Counter[str] = field(default_factory=Counter)
    malformed: int = 0
    malformed_examples: list[int] = field(default_factory=list)  # line numbers, first few
    unknown_keys: Counter[str] = field(default_factory=Counter)  # key -> occurrences
    unknown_timing_lines: int = 0  # CUZK_TIMING lines of no known form
    torn_repaired: int = 0  # TIMELINE lines torn by another writer and joined again
    torn_unrepaired: int = 0  # torn pieces that could not be joined (counted as malformed)
    ansi_lines: int = 0
    journald_lines: int = 0
    journald_sources: Counter[str] = field(default_factory=Counter)  # "host unit[pid]" -> lines
    decode_errors: int = 0  # lines with bytes that were not UTF-8 (replaced)
    oversized_lines: int = 0  # lines longer than the reader's limit (truncated)
    stray_cr_lines: int = 0  # lines with a CR inside: read from after their last CR
    unattributed: int = 0  # timing lines the assembler could not place (set by assembly)
    unattributed_examples: list[int] = field(default_factory=list)
    # Values that did not fit their column (an integer beyond int64, say: moved to the
    # record's ``extra`` as ``invalid_<column>``, the column left null; set as records become
    # tables), and the first lines of their records.
    invalid_values: int = 0
    invalid_values_examples: list[int] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    truncated_inputs: dict[str, str] = field(default_factory=dict)  # source -> why it ended early

    MAX_EXAMPLES = 20

    def note_malformed(self, line: int) -> None:
        self.malformed += 1
        if len(self.malformed_examples) < self.MAX_EXAMPLES:
            self.malformed_examples.append(line)

    def note_unattributed(self, line: int) -> None:
        self.unattributed += 1
        if len(self.unattributed_examples) < self.MAX_EXAMPLES:
            self.unattributed_examples.append(line)

    def note_invalid(self, line: int | None, values: int = 1) -> None:
        """``values`` values of the record whose first line is ``line`` did not fit their
        columns."""
        self.invalid_values += values
        if line is not None and len(self.invalid_values_examples) < self.MAX_EXAMPLES:
            self.invalid_values_examples.append(line)

    def add(self, later: Accounting) -> None:
        """Take in the counts of input read after this accounting's (a chunk parsed apart):
        numbers are added, example lists keep their first ``MAX_EXAMPLES``, the rest appended
        or updated, as if one accounting had counted both in order."""
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(later, f.name)
            if isinstance(mine, dict):  # (a Counter adds)
                mine.update(theirs)
            elif isinstance(mine, list):
                room = self.MAX_EXAMPLES - len(mine) if f.name.endswith("_examples") else None
                mine.extend(theirs if room is None else theirs[: max(0, room)])
            else:
                setattr(self, f.name, mine + theirs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sources": list(self.sources),
            "lines_total": self.lines_total,
            "by_family": {f.value: self.by_family.get(f.value, 0) for f in Family},
            "malformed": self.malformed,
            "malformed_examples": list(self.malformed_examples),
            "unknown_keys": dict(self.unknown_keys),
            "unknown_timing_lines": self.unknown_timing_lines,
            "torn_repaired": self.torn_repaired,
            "torn_unrepaired": self.torn_unrepaired,
            "ansi_lines": self.ansi_lines,
            "journald_lines": self.journald_lines,
            "journald_sources": dict(self.journald_sources),
            "decode_errors": self.decode_errors,
            "oversized_lines": self.oversized_lines,
            "stray_cr_lines": self.stray_cr_lines,
            "unattributed": self.unattributed,
            "unattributed_examples": list(self.unattributed_examples),
            "invalid_values": self.invalid_values,
            "invalid_values_examples": list(self.invalid_values_examples),
            "truncated_inputs": dict(self.truncated_inputs),
        }


def ascii_int(text: str, *, signed: bool = False) -> int | None:
    """``int(text)`` for a run of ASCII digits (after a ``-`` when ``signed``) that Python reads
    as a number; None for anything else: other text, other scripts' digits (which
    ``str.isdigit`` takes), more digits than ``int`` converts (``sys.get_int_max_str_digits``)."""
    digits = text[1:] if signed and text[:1] == "-" else text
    if not (digits.isascii() and digits.isdigit()):
        return None
    try:
        return int(text)
    except ValueError:
        return None


#: Integers a double holds exactly: those no larger in size than this (``2**53``).
EXACT_INT = 1 << 53


def is_int64(v: object) -> bool:
    """An ``int`` (not a bool) that an int64 column holds (a log value may have 25 digits)."""
    return isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < 1 << 63


# --------------------------------------------------------------------------------------------
# The partition record schema: one row per GPU call. Column names are the log's own keys.
# --------------------------------------------------------------------------------------------

_I = pa.int64()
_S = pa.string()
_F = pa.float64()
#: The wall-clock columns' type (``start_ts``, ``end_ts``), and the span of their values:
#: 0001-01-01 to 9999-12-31T23:59:59.999 UTC in ms since the epoch, the years their ISO 8601
#: text writes in four digits (beyond it a wall clock is an offset of a damaged line: null).
WALL_CLOCK = pa.timestamp("ms", tz="UTC")
WALL_CLOCK_MIN_MS, WALL_CLOCK_MAX_MS = -62_135_596_800_000, 253_402_300_799_999
_T = WALL_CLOCK

#: Identity and provenance of a call.
IDENTITY_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("record", _I),  # sequential id in lock-acquisition (GPU region) order
    ("source", _I),  # index of the input file
    ("job_id", _S),  # TIMELINE job id (request id; may hold spaces and brackets)
    ("partition", _I),  # null for a monolithic (batch) call
    ("worker", _I),  # global GPU worker index (TIMELINE worker=)
    ("gpu", _I),  # GPU ordinal
    ("proof_kind", _S),  # from SYNTH_START kind= (monolithic path)
    ("era", _S),  # code era of the C++ lines: phase4-8, phase9-11, phase12, pool-cache, main
    ("num_circuits", _I),  # circuits in the call (b_g2_msm line): 1 per partition
    ("status", _S),  # ok, failed (error line, no GPU_END) or incomplete (lines missing)
]

#: TIMELINE offsets (ms since engine start) and durations.
TIMELINE_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("synth_start_ms", _I),
    ("synth_end_ms", _I),
    ("queue_ms", _I),  # CHAN_SEND (eras T0-T3) or GPU_QUEUE (T4)
    ("pickup_ms", _I),
    ("start_ms", _I),
    ("end_ms", _I),
    ("start_ts", _T),  # GPU_START as UTC time: engine-start line + offset; null without one
    ("end_ts", _T),  # GPU_END as UTC time; null where the log has no wall clock
    ("synth_ms", _I),
    ("gpu_ms", _I),
]

#: Every CUZK_TIMING / CUZK_NTT_H field, by its log key (NTT_H keys get their ``ms`` unit).
TIMING_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("split_vectors_ms", _I),
    ("setup_to_split_ms", _I),
    ("prep_msm_ms", _I),
    ("b_g2_msm_ms", _I),
    ("ntt_msm_h_ms", _I),
    ("batch_add_ms", _I),
    ("tail_msm_ms", _I),
    ("gpu_total_ms", _I),
    ("epilogue_ms", _I),
    ("pre_destructor_ms", _I),
    ("async_dealloc_ms", _I),
    ("host_register", _S),  # "fallback" when T9 printed
    ("host_register_err", _I),
    ("free_mib", _I),
    ("usable_mib", _I),
    ("need_da_mib", _I),
    ("need_dbc_mib", _I),
    ("total_mib", _I),
    ("prestage_setup", _S),  # ok, skip_vram, fallback, or silent (T10 with no outcome line)
    ("prestage_err", _I),
    ("domain", _I),
    ("lot_of_memory", _I),
    ("sync_ms", _I),
    ("trim_ms", _I),
    ("alloc_ms", _I),
    ("upload_ms", _I),
    ("total_ps_ms", _I),
    ("pool_threshold_gpu", _I),  # T14, first call on a GPU
    ("d_a_cache_mib", _I),  # T15
    ("d_a_cache_gpu", _I),
    ("d_b_alloc_ms", _I),  # CUZK_NTT_H (summed over circuits for N-circuit calls)
    ("ntt_kernels_ms", _I),
    ("coset_intt_sync_ms", _I),
    ("msm_init_ms", _I),
    ("msm_invoke_ms", _I),
    ("msm_dtor_ms", _I),
    ("ntt_h_total_ms", _I),
    ("pre_lock_cpu_ms", _I),
    ("mutex_wait_ms", _I),
    ("barrier_wait_ms", _I),
    ("mutex_held_ms", _I),
    ("total_start_fn_ms", _I),
    ("gpu_threads", _I),  # number of GPU threads (gpu_tid values) seen in the call
]

#: Values from tracing lines tied to the call.
TRACING_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("prove_start_ms", _I),  # GPU_TIMING spawn_blocking prove_start
    ("spawn_to_enter_ms", _I),
    ("finish_ms", _I),  # FIN_TIMING finalizer partition
    ("gpu_prove_time_ms", _F),  # bellperson "GPU prove time: 5.318s"
]

#: How each group was attributed (records.Attribution values) and where its lines are.
ATTRIBUTION_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("attr_ids", _S),  # job/partition/worker
    ("attr_gpu", _S),  # GPU-region lines (lock .. unlock)
    ("attr_cpu", _S),  # CPU-side lines (split_vectors, prep_msm, b_g2_msm, async_dealloc)
    ("first_line", _I),
    ("last_line", _I),
    ("extra", _S),  # JSON object of this call's lines' unknown keys and invalid_<column> values
]

PARTITION_COLUMNS = (
    IDENTITY_COLUMNS + TIMELINE_COLUMNS + TIMING_COLUMNS + TRACING_COLUMNS + ATTRIBUTION_COLUMNS
)
PARTITION_SCHEMA = pa.schema([pa.field(name, typ) for name, typ in PARTITION_COLUMNS])
TIMING_FIELD_NAMES = [name for name, _ in TIMING_COLUMNS]
#: TIMELINE columns that are offsets since engine start, not durations.
OFFSET_COLUMNS = frozenset(
    {"synth_start_ms", "synth_end_ms", "queue_ms", "pickup_ms", "start_ms", "end_ms"}
)


def _itself(value: Any) -> Any:
    return value


@dataclass(slots=True)
class RunInfo:
    """What the log says about the run as a whole (startup lines, bench output, failures)."""

    era: str = "unknown"  # phase4-8, phase9-11, phase12, pool-cache, main or unknown
    era_evidence: dict[str, int] = field(default_factory=dict)  # marker -> first line number
    timeline_era: str = "none"  # T0, T1-T3, T2, T4 or none
    n_gpus: int | None = None
    gpus: list[int] = field(default_factory=list)  # GPU ordinals from `initializing GPU workers`
    gw: int | None = None  # gpu_workers_per_device
    total_workers: int | None = None
    worker_gpu: dict[int, int] = field(default_factory=dict)  # worker -> GPU ordinal
    gpu_threads: int | None = None  # CUZK_GPU_THREADS
    rayon_threads: int | None = None
    partition_workers: int | None = None
    engine_start_ts: str | None = None  # wall clock of TIMELINE offset 0
    #: every engine start in input order: {"source", "line", "ts"} (TIMELINE offset 0 from there)
    clocks: list[dict[str, Any]] = field(default_factory=list)
    #: cuzk-bench batch output, parsed; its ``proofs``, a row per proof, are ``FactRows``
    bench: dict[str, Any] = field(default_factory=dict)
    #: job_id -> facts (``KeyedFactRows``: a dict of dicts held as columns; one given as a
    #: dict is made one)
    jobs: KeyedFactRows = field(default_factory=KeyedFactRows)
    failures: list[dict[str, Any]] = field(default_factory=list)  # line, kind, level, message, ...
    warnings: Counter[str] = field(default_factory=Counter)  # e.g. pinned_fallback -> count
    warning_lines: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.jobs, KeyedFactRows):
            if not isinstance(self.jobs, Mapping):
                raise TypeError(f"RunInfo.jobs: a mapping of job ids, not {type(self.jobs)}")
            self.jobs = KeyedFactRows(self.jobs)
        proofs = self.bench.get("proofs") if isinstance(self.bench, dict) else None
        if isinstance(proofs, list):
            self.bench["proofs"] = FactRows(proofs)

    def to_dict(self, *, compact: bool = False) -> dict[str, Any]:
        """The run facts as plain values; with ``compact``, the jobs and the proofs as their
        ``KeyedFactRows`` and ``FactRows`` themselves (for ``jsontext``, which writes them a
        row at a time: the JSON report)."""
        rows: Callable[[Any], Any] = _itself if compact else plain_rows
        return {
            "era": self.era,
            "era_evidence": dict(self.era_evidence),
            "timeline_era": self.timeline_era,
            "n_gpus": self.n_gpus,
            "gpus": list(self.gpus),
            "gw": self.gw,
            "total_workers": self.total_workers,
            "worker_gpu": {str(k): v for k, v in self.worker_gpu.items()},
            "gpu_threads": self.gpu_threads,
            "rayon_threads": self.rayon_threads,
            "partition_workers": self.partition_workers,
            "engine_start_ts": self.engine_start_ts,
            "clocks": list(self.clocks),
            "bench": {k: rows(v) for k, v in self.bench.items()},
            "jobs": rows(self.jobs),
            "failures": list(self.failures),
            "warnings": dict(self.warnings),
            "warning_lines": dict(self.warning_lines),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunInfo:
        info = cls()
        for k, v in d.items():
            if k == "worker_gpu":
                info.worker_gpu = {int(a): int(b) for a, b in v.items()}
            elif k == "warnings":
                info.warnings = Counter(v)
            elif hasattr(info, k):
                setattr(info, k, v)
        info.__post_init__()  # (the jobs and the proofs as rows)
        return info
