"""One log line -> one typed ``Event``, for every line family and code era of the daemon.

The hot path is ``LineParser.feed``: it splits a whole cleaned chunk at once (C code), dispatches
on the first character, and parses only what a family needs with ``str`` methods; regular
expressions run only on tracing and bench lines. Line numbers are kept on every event.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from cuzk_diag.records import Accounting, Event, Family, RunInfo, Value
from cuzk_diag.sources import DAMAGED, MAX_LINE, Source

TIMING_PREFIX = "CUZK_TIMING: "
NTT_H_PREFIX = "CUZK_NTT_H: "
TIMELINE_PREFIX = "TIMELINE,"

TIMELINE_EVENTS = frozenset(
    {"SYNTH_START", "SYNTH_END", "CHAN_SEND", "GPU_QUEUE", "GPU_PICKUP", "GPU_START", "GPU_END"}
)

# ---------------------------------------------------------------------------------------------
# CUZK_TIMING: the kind of a line follows from its first key (reference section 1.2).
# ---------------------------------------------------------------------------------------------

#: kind -> the keys its format string prints. Other keys are kept and counted as unknown.
TIMING_KEYS: dict[str, frozenset[str]] = {
    "split_vectors": frozenset({"split_vectors_ms", "setup_to_split_ms"}),
    "prep_msm": frozenset({"prep_msm_ms"}),
    "b_g2_msm": frozenset({"b_g2_msm_ms", "num_circuits"}),
    "ntt_msm_h": frozenset({"gpu_tid", "ntt_msm_h_ms"}),
    "batch_add": frozenset({"gpu_tid", "batch_add_ms"}),
    "tail_msm": frozenset({"gpu_tid", "tail_msm_ms", "gpu_total_ms"}),
    "barrier_wait": frozenset({"gpu_tid", "barrier_wait_ms"}),
    "epilogue": frozenset({"epilogue_ms", "pre_destructor_ms"}),
    "async_dealloc": frozenset({"async_dealloc_ms"}),
    "host_register": frozenset({"host_register", "err"}),
    "prestage_vram": frozenset(
        {"free_mib", "usable_mib", "need_da_mib", "need_dbc_mib", "total_mib"}
    ),
    "prestage_setup": frozenset(
        {
            "prestage_setup",
            "domain",
            "lot_of_memory",
            "err",
            "sync_ms",
            "trim_ms",
            "alloc_ms",
            "upload_ms",
            "total_ps_ms",
        }
    ),
    "mutex_wait": frozenset({"pre_lock_cpu_ms", "mutex_wait_ms"}),
    "mutex_held": frozenset({"mutex_held_ms", "total_start_fn_ms"}),
    "pool_threshold": frozenset({"gpu"}),
    "d_a_cache": frozenset({"d_a_cache_mib", "gpu"}),
}

_FIRST_KEY_KIND = {
    "split_vectors_ms": "split_vectors",
    "prep_msm_ms": "prep_msm",
    "b_g2_msm_ms": "b_g2_msm",
    "epilogue_ms": "epilogue",
    "async_dealloc_ms": "async_dealloc",
    "host_register": "host_register",
    "prestage_setup": "prestage_setup",
    "pre_lock_cpu_ms": "mutex_wait",
    "mutex_held_ms": "mutex_held",
}
_GPU_TID_KIND = {
    "ntt_msm_h_ms": "ntt_msm_h",
    "batch_add_ms": "batch_add",
    "tail_msm_ms": "tail_msm",
    "barrier_wait_ms": "barrier_wait",
}
#: Keys whose values are words, not numbers.
_WORD_KEYS = frozenset({"prestage_setup", "host_register"})

#: The exact key sequence of every all-integer format string -> kind (fast path).
_CANONICAL: dict[tuple[str, ...], str] = {
    ("split_vectors_ms", "setup_to_split_ms"): "split_vectors",
    ("prep_msm_ms",): "prep_msm",
    ("b_g2_msm_ms", "num_circuits"): "b_g2_msm",
    ("gpu_tid", "ntt_msm_h_ms"): "ntt_msm_h",
    ("gpu_tid", "batch_add_ms"): "batch_add",
    ("gpu_tid", "tail_msm_ms", "gpu_total_ms"): "tail_msm",
    ("gpu_tid", "barrier_wait_ms"): "barrier_wait",
    ("epilogue_ms", "pre_destructor_ms"): "epilogue",
    ("async_dealloc_ms",): "async_dealloc",
    ("pre_lock_cpu_ms", "mutex_wait_ms"): "mutex_wait",
    ("mutex_held_ms", "total_start_fn_ms"): "mutex_held",
}
_new = tuple.__new__
_TIMING = Family.TIMING

_POOL_RE = re.compile(r"set pool release threshold to MAX on gpu (-?\d+)\s*$")
_DA_CACHE_RE = re.compile(r"d_a_cache allocated (\d+) MiB on gpu (-?\d+)\s*$")

NTT_H_KEYS = (
    "d_b_alloc",
    "ntt_kernels",
    "coset_intt_sync",
    "msm_init",
    "msm_invoke",
    "msm_dtor",
    "total",
)
_NTT_H_COLUMN = {k: f"{k}_ms" for k in NTT_H_KEYS} | {"total": "ntt_h_total_ms"}

# ---------------------------------------------------------------------------------------------
# Tracing lines (tracing-subscriber's default `Full` format, reference section 4.1).
# ---------------------------------------------------------------------------------------------

_TRACING_RE = re.compile(
    r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)) +"
    r"(TRACE|DEBUG|INFO|WARN|ERROR) (.*)"
)
_SPAN_RE = re.compile(r"([A-Za-z_][\w]*)(?:\{(.*?)\})?:(?=[\w{ ])")
_TARGET_RE = re.compile(r"([A-Za-z_][\w]*(?:::[A-Za-z_][\w]*)*): ")
_FIELD_SPLIT_RE = re.compile(r" (?=[A-Za-z_][\w.]*=)")
# Patterns that are searched start only where their digit run starts (the lookbehind) and never
# give digits back (possessive): a long run of digits costs linear time, not quadratic.
_DURATION_RE = re.compile(r"(?<![0-9])([0-9]++(?:\.[0-9]++)?)(ns|µs|us|ms|s)\b")
_DURATION_MS = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1000.0}

#: Message prefix -> event kind, for the diagnosis-relevant messages of reference section 4.2.
#: Longer prefixes first where one is the prefix of another.
TRACING_KINDS: list[tuple[str, str]] = [
    ("starting cuzk engine", "engine_start"),
    ("cuzk-daemon starting", "daemon_start"),
    ("initializing GPU workers", "gpu_workers_init"),
    ("spawning GPU workers with Phase 8 dual-worker interlock", "interlock"),
    ("pipeline GPU worker started", "gpu_worker_started"),
    ("set CUZK_GPU_THREADS for C++ groth16_pool", "gpu_threads"),
    ("rayon global thread pool configured", "rayon_threads"),
    ("starting pipeline: synthesis task + GPU workers", "pipeline_start"),
    ("Phase 7: dispatching per-partition synthesis", "dispatch"),
    ("dispatching per-partition synthesis", "dispatch"),
    ("Phase 7: all partitions complete, proof assembled", "proof_assembled"),
    ("Phase 7: PoRep proof self-check FAILED", "self_check_failed"),
    ("partition synthesis complete, sending to GPU", "partition_synth_complete"),
    ("partition synthesis complete, pushing to GPU queue", "partition_synth_complete"),
    ("partition synthesis complete", "partition_synth_complete"),
    ("GPU worker picked up synthesized proof", "picked_up"),
    ("GPU prove time:", "gpu_prove_time"),
    ("GPU prove complete (split)", "gpu_prove_complete"),
    ("GPU prove complete", "gpu_prove_complete"),
    ("partition GPU prove complete", "partition_gpu_complete"),
    ("partition GPU proving failed", "partition_gpu_failed"),
    ("GPU prove start failed", "gpu_prove_start_failed"),
    ("skipping GPU prove for failed partitioned job", "skip_failed_job"),
    ("skipping synthesis for failed job", "skip_failed_synthesis"),
    ("GPU_TIMING hot_path pre-prove overhead", "gpu_timing_overhead"),
    ("GPU_TIMING spawn_blocking prove_start", "gpu_timing_prove_start"),
    ("GPU_TIMING prove_start returned", "gpu_timing_prove_returned"),
    ("FIN_TIMING malloc_trim", "fin_timing_malloc_trim"),
    ("FIN_TIMING finalizer partition", "fin_timing_finalizer"),
    ("FIN_TIMING finalizer monolithic", "fin_timing_finalizer_monolithic"),
    ("pinned pool checkout FAILED", "pinned_fallback"),
    ("memory budget initialized", "memory_budget"),
]
_TRACING_KIND_BY_WORD: dict[str, list[tuple[str, str]]] = {}
for _prefix, _kind in TRACING_KINDS:
    _TRACING_KIND_BY_WORD.setdefault(_prefix.split(" ", 1)[0], []).append((_prefix, _kind))

# ---------------------------------------------------------------------------------------------
# cuzk-bench `batch` / `single` output (reference section 5.2).
# ---------------------------------------------------------------------------------------------

_BENCH_PROOF_RE = re.compile(
    r"\s*\[(\d+)/(\d+)\] ([A-Z]+) \u2014 ([0-9.]+)s \(prove=(\d+) ms, queue=(\d+) ms\)\s*$"
)
_BENCH_STAT_RE = re.compile(r"avg=([0-9.]++)s min=([0-9.]++)s max=([0-9.]++)s")
_BENCH_THROUGHPUT_RE = re.compile(r"(?<![0-9.])([0-9.]++) proofs/min \(([0-9.]++)s/proof\)")
_BENCH_HEADERS = {
    "=== Batch Benchmark ===": "bench_header",
    "=== Batch Summary ===": "bench_summary_header",
    "=== Proof Result ===": "bench_single_header",
}


def _int(v: str) -> int | None:
    try:
        return int(v)
    except ValueError:
        return None


def _scalar(v: str) -> Value:
    """Render a tracing field value: Debug `Some(3)` -> 3, `None` -> None, quotes removed."""
    if v[:5] == "Some(" and v[-1:] == ")":
        v = v[5:-1]
    elif v == "None":
        return None
    if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        return v[1:-1]
    if v.isdigit():
        return int(v)
    if v[:1] == "-" and v[1:].isdigit():
        return int(v)
    return v


def parse_duration_ms(text: str) -> float | None:
    """Rust `Duration` Debug (`5.318412345s`, `718.2ms`, `12µs`) -> milliseconds."""
    m = _DURATION_RE.search(text)
    if m is None:
        return None
    return float(m.group(1)) * _DURATION_MS[m.group(2)]


class LineParser:
    """Turns cleaned text chunks into events, keeping line numbers and the accounting.

    State carried across chunks: the line counter, a TIMELINE line torn at a chunk boundary,
    and whether a cuzk-bench block is open. ``full`` parses every tracing line's fields (for
    the line table); otherwise unrecognised INFO/DEBUG tracing lines keep only their header.
    """

    def __init__(
        self,
        source: int = 0,
        accounting: Accounting | None = None,
        *,
        full: bool = True,
        first_line: int = 1,
    ) -> None:
        self.source = source
        self.acc = accounting if accounting is not None else Accounting()
        self.full = full
        self.next_line = first_line
        self._bench_open = False
        self._torn: tuple[int, str] | None = None  # (line number, head line) awaiting its tail

    # -- public -----------------------------------------------------------------------------

    def feed(self, text: str) -> list[Event]:
        """Parse a chunk of whole lines (ending in a newline) and return its events.

        With ``full=False`` only the lines analysis needs become events (every C++ and TIMELINE
        line, the tracing messages of ``TRACING_KINDS``, warnings, errors and bench output); the
        rest are classified and counted in bulk by Arrow compute kernels, never touched by Python.
        """
        if not self.full and len(text) > 4096:
            return self._feed_selected(text)
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(text) > MAX_LINE and max(map(len, lines)) > MAX_LINE:
            lines = self._cut(lines)
        out: list[Event] = []
        append = out.append
        lineno = self.next_line
        self.next_line += len(lines)
        acc = self.acc
        counts = Counter[str]()
        n_timing = n_ntt = n_timeline = n_tracing = n_other = n_blank = 0
        source = self.source
        parse_timing = self._timing
        i = 0
        if self._torn is not None and lines:
            i = self._finish_torn(lines[0], lineno, out, counts)
        n = len(lines)
        while i < n:
            ln = lines[i]
            no = lineno + i
            c = ln[:1]
            if c == "C" and ln.startswith(TIMING_PREFIX):
                append(parse_timing(ln, no))
                n_timing += 1
            elif c == "T" and ln.startswith(TIMELINE_PREFIX):
                ev = self._timeline(ln, no)
                if ev is None:
                    # A TIMELINE line split by another writer: join it with the next line.
                    n_timeline += 1  # the head line; the tail counts as the line that tore it
                    if i + 1 < n:
                        if self._repair(ln, no, lines[i + 1], no + 1, out, counts):
                            i += 2
                            continue
                        self._unrepaired(ln, no, out, counts)
                    else:
                        self._torn = (no, ln)
                    i += 1
                    continue
                append(ev)
                n_timeline += 1
            elif c == "2" or (c.isdigit() and ln[4:5] == "-"):
                ev = self._tracing(ln, no)
                append(ev)
                if ev.family is Family.TRACING:
                    n_tracing += 1
                else:
                    n_other += 1
            elif c == "C" and ln.startswith(NTT_H_PREFIX):
                append(self._ntt_h(ln, no))
                n_ntt += 1
            elif not ln:
                append(Event(no, source, Family.BLANK, "blank", {}))
                n_blank += 1
            else:
                ev = self._misc(ln, no)
                append(ev)
                counts[ev.family.value] += 1
            i += 1
        counts["timing"] += n_timing
        counts["ntt_h"] += n_ntt
        counts["timeline"] += n_timeline
        counts["tracing"] += n_tracing
        counts["other"] += n_other
        counts["blank"] += n_blank
        acc.by_family.update(counts)
        acc.lines_total += n
        return out

    def _feed_selected(self, text: str) -> list[Event]:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pc.list_flatten(pc.split_pattern(pa.array([text]), "\n"))
        n = len(arr) - 1 if text.endswith("\n") else len(arr)
        arr = arr.slice(0, n)
        if len(text) > MAX_LINE and (pc.max(pc.binary_length(arr)).as_py() or 0) > MAX_LINE:
            arr = pa.array(self._cut(arr.to_pylist()), pa.string())
        timing = pc.starts_with(arr, "CUZK_")
        timeline = pc.starts_with(arr, TIMELINE_PREFIX)
        tracing = pc.match_substring_regex(arr, _TRACING_HEAD_RE2)
        relevant = pc.and_(tracing, pc.match_substring_regex(arr, _RELEVANT_RE2))
        bench = pc.and_not(pc.match_substring_regex(arr, _BENCH_HEAD_RE2), tracing)
        selected = pc.or_(pc.or_(timing, timeline), pc.or_(relevant, bench))
        if DAMAGED in text:
            selected = pc.or_(selected, pc.starts_with(arr, DAMAGED))
        # Tracing lines right before or after a C++ line carry the clock the assembler needs
        # to place it; they become cheap "clock" events (timestamp only).
        cpp = timing.to_numpy(zero_copy_only=False)
        near = np.zeros(len(cpp), dtype=bool)
        if len(cpp) > 1:
            near[:-1] |= cpp[1:]
            near[1:] |= cpp[:-1]
        clock = pc.and_not(pc.and_(tracing, pa.array(near)), relevant)
        selected = pc.or_(selected, clock)
        clock_np = clock.to_numpy(zero_copy_only=False)
        lineno = self.next_line
        self.next_line += n
        # Physical lines by family, counted in bulk; the parse loop below only corrects bench
        # lines (counted as other here) and torn TIMELINE tails.
        counts = Counter[str]()
        n_timing = pc.sum(pc.starts_with(arr, TIMING_PREFIX)).as_py() or 0
        n_ntt = pc.sum(pc.starts_with(arr, NTT_H_PREFIX)).as_py() or 0
        counts["timing"] = n_timing
        counts["ntt_h"] = n_ntt
        counts["timeline"] = pc.sum(timeline).as_py() or 0
        counts["tracing"] = pc.sum(tracing).as_py() or 0
        counts["blank"] = pc.sum(pc.equal(pc.binary_length(arr), 0)).as_py() or 0
        counts["other"] = n - sum(counts.values())
        out: list[Event] = []
        skip = -1
        if self._torn is not None and n:
            first = arr[0].as_py()
            if self._finish_torn(first, lineno, out, counts):
                skip = 0
                counts[_mask_family(first)] -= 1
        idx = pc.indices_nonzero(selected).to_pylist()
        sel = arr.filter(selected).to_pylist()
        append = out.append
        parse_timing = self._timing
        for j, ln in zip(idx, sel, strict=True):
            if j == skip:
                continue
            no = lineno + j
            c = ln[:1]
            if c == "C":
                if ln.startswith(TIMING_PREFIX):
                    append(parse_timing(ln, no))
                    continue
                if ln.startswith(NTT_H_PREFIX):
                    append(self._ntt_h(ln, no))
                    continue
            elif c == "T" and ln.startswith(TIMELINE_PREFIX):
                ev = self._timeline(ln, no)
                if ev is not None:
                    append(ev)
                elif j + 1 < n:
                    tail = arr[j + 1].as_py()
                    if self._repair(ln, no, tail, no + 1, out, counts):
                        skip = j + 1
                        counts[_mask_family(tail)] -= 1
                    else:
                        self._unrepaired(ln, no, out, counts)
                else:
                    self._torn = (no, ln)
                continue
            if clock_np[j]:
                append(
                    _new(
                        Event,
                        (
                            no,
                            self.source,
                            Family.TRACING,
                            "clock",
                            {"ts": ln[: ln.find(" ")]},
                            False,
                        ),
                    )
                )
                continue
            ev = self._tracing(ln, no) if c.isdigit() else self._misc(ln, no)
            append(ev)
            if ev.family is Family.BENCH:
                counts["bench"] += 1
                counts["other"] -= 1
        self.acc.by_family.update(counts)
        self.acc.lines_total += n
        return out

    def _cut(self, lines: list[str]) -> list[str]:
        """Cut lines longer than MAX_LINE (counted as oversized)."""
        out = []
        for ln in lines:
            if len(ln) > MAX_LINE:
                self.acc.oversized_lines += 1
                ln = ln[:MAX_LINE]
            out.append(ln)
        return out

    def close(self) -> list[Event]:
        """End of input: a torn head that never got its tail is counted as malformed."""
        out: list[Event] = []
        if self._torn is not None:
            no, head = self._torn
            self._torn = None
            counts = Counter[str]()
            self._unrepaired(head, no, out, counts)
            self.acc.by_family.update(counts)
        return out

    # -- families -----------------------------------------------------------------------------

    def _timing(self, ln: str, no: int) -> Event:
        # Fast path: a canonical line (known key sequence, integer values).
        try:
            fields: dict[str, Value] = {
                k: int(v) for k, v in (t.split("=", 1) for t in ln[13:].split())
            }
            kind = _CANONICAL.get(tuple(fields))
            if kind is not None:
                return _new(Event, (no, self.source, _TIMING, kind, fields, False))
        except ValueError:
            pass
        return self._timing_general(ln, no)

    def _timing_general(self, ln: str, no: int) -> Event:
        body = ln[13:].strip()
        if body[:1] in ("s", "d") and "=" not in body:
            m = _POOL_RE.match(body)
            if m is not None:
                return Event(
                    no, self.source, Family.TIMING, "pool_threshold", {"gpu": int(m.group(1))}
                )
            m = _DA_CACHE_RE.match(body)
            if m is not None:
                return Event(
                    no,
                    self.source,
                    Family.TIMING,
                    "d_a_cache",
                    {"d_a_cache_mib": int(m.group(1)), "gpu": int(m.group(2))},
                )
        tokens = body.split()
        fields: dict[str, Value] = {}
        malformed = False
        kind = ""
        bare: list[str] = []
        for tok in tokens:
            k, sep, v = tok.partition("=")
            if not sep:
                bare.append(tok)
                continue
            if k in _WORD_KEYS:
                if not v:
                    malformed = True
                fields[k] = v or None
                continue
            try:
                fields[k] = int(v)
            except ValueError:
                fields[k] = None
                malformed = True
        if bare:
            if bare[0] == "prestage_vram" and tokens[0] == "prestage_vram":
                kind = "prestage_vram"
                bare = bare[1:]
            if bare:
                malformed = True
                fields["_words"] = " ".join(bare)
        if not kind:
            first = next(iter(fields), "")
            kind = _FIRST_KEY_KIND.get(first, "")
            if not kind and first == "gpu_tid" and len(fields) > 1:
                kind = _GPU_TID_KIND.get(list(fields)[1], "")
        if not kind:
            kind = "timing_unknown"
            self.acc.unknown_timing_lines += 1
            for k in fields:
                self.acc.unknown_keys[k] += 1
        else:
            known = TIMING_KEYS[kind]
            for k in fields:
                if k not in known and k != "_words":
                    self.acc.unknown_keys[k] += 1
        if not fields and kind == "timing_unknown":
            malformed = True
        if malformed:
            self.acc.note_malformed(no)
        return Event(no, self.source, Family.TIMING, kind, fields, malformed)

    def _ntt_h(self, ln: str, no: int) -> Event:
        fields: dict[str, Value] = {}
        malformed = False
        for tok in ln[12:].split():
            k, sep, v = tok.partition("=")
            col = _NTT_H_COLUMN.get(k)
            if col is None:
                self.acc.unknown_keys[k] += 1
                col = k
            if not sep or not v.endswith("ms"):
                malformed = True
                fields[col] = None
                continue
            try:
                fields[col] = int(v[:-2])
            except ValueError:
                fields[col] = None
                malformed = True
        if malformed or not fields:
            malformed = True
            self.acc.note_malformed(no)
        return Event(no, self.source, Family.NTT_H, "ntt_h", fields, malformed)

    def _timeline(self, ln: str, no: int) -> Event | None:
        """Parse a TIMELINE line; None when it is not one whole line (torn)."""
        parts = ln.split(",", 4)
        if len(parts) != 5:
            return None
        _, off, event, job, detail = parts
        if not off.isdigit() or event not in TIMELINE_EVENTS:
            return None
        if "CUZK_" in detail or "CUZK_" in job or "TIMELINE," in detail:
            return None
        if ("Z " in job or "Z " in detail) and _INTRUDER_RE.search(ln, 9) is not None:
            return None  # a tracing line was written into it
        fields: dict[str, Value] = {"offset_ms": int(off), "job_id": job}
        malformed = False
        if detail:
            for kv in detail.split(","):
                k, sep, v = kv.partition("=")
                if not sep:
                    if k == "monolithic":
                        fields["monolithic"] = 1
                    else:
                        malformed = True
                    continue
                if k == "kind":
                    fields[k] = v
                    continue
                try:
                    fields[k] = int(v)
                except ValueError:
                    fields[k] = v or None
                    malformed = True
                if k not in _TIMELINE_DETAIL_KEYS:
                    self.acc.unknown_keys[k] += 1
        if malformed:
            self.acc.note_malformed(no)
        return Event(no, self.source, Family.TIMELINE, event, fields, malformed)

    def _tracing(self, ln: str, no: int) -> Event:
        m = _TRACING_RE.match(ln)
        if m is None:
            return self._misc(ln, no)
        ts, level, rest = m.groups()
        fields: dict[str, Value] = {"ts": ts, "level": level}
        spans: list[str] = []
        pos = 0
        # Span scope: `name{fields}:` repeated (no space between), then ` target: `.
        while True:
            sm = _SPAN_RE.match(rest, pos)
            if sm is None or (sm.group(2) is None and rest.startswith(" ", sm.end())):
                break  # `name: ` without fields is the target
            spans.append(rest[sm.start() : sm.end() - 1])
            if sm.group(2):
                _put_fields(fields, sm.group(2))
            pos = sm.end()
            if rest.startswith(" ", pos):
                pos += 1
                break
        tm = _TARGET_RE.match(rest, pos)
        if tm is not None:
            fields["target"] = tm.group(1)
            pos = tm.end()
        body = rest[pos:]
        if spans:
            fields["spans"] = ":".join(spans)
        kind = _tracing_kind(body)
        if kind is None:
            kind = "tracing"
            if not self.full and level in ("INFO", "DEBUG", "TRACE"):
                fields["message"] = body
                return Event(no, self.source, Family.TRACING, kind, fields)
        pieces = _FIELD_SPLIT_RE.split(body)
        first = pieces[0]
        if "=" in first and _FIELD_SPLIT_RE.match(" " + first):
            fields["message"] = ""
            start = 0
        else:
            fields["message"] = first
            start = 1
        for piece in pieces[start:]:
            k, _, v = piece.partition("=")
            fields[k] = _scalar(v.rstrip())
        if kind == "gpu_prove_time":
            fields["gpu_prove_time_ms"] = parse_duration_ms(first)
        return Event(no, self.source, Family.TRACING, kind, fields)

    def _misc(self, ln: str, no: int) -> Event:
        """Bench output, other text, lines damaged by NUL bytes."""
        if ln[:1] == DAMAGED:
            self.acc.note_malformed(no)
            return Event(no, self.source, Family.OTHER, "damaged", {"text": ln[1:201]}, True)
        s = ln.strip()
        head = _BENCH_HEADERS.get(s)
        if head is not None:
            self._bench_open = True
            return Event(no, self.source, Family.BENCH, head, {})
        if self._bench_open or (s[:1] == "[" and "\u2014" in s):
            ev = self._bench(s, no)
            if ev is not None:
                return ev
        return Event(no, self.source, Family.OTHER, "other", {})

    def _bench(self, s: str, no: int) -> Event | None:
        src = self.source
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

    # -- torn TIMELINE lines (reference section 3.4) -----------------------------------------

    def _repair(
        self,
        head: str,
        head_no: int,
        tail: str,
        tail_no: int,
        out: list[Event],
        counts: Counter[str],
    ) -> bool:
        m = _INTRUDER_RE.search(head, len(TIMELINE_PREFIX))
        if m is None:
            return False
        joined = head[: m.start()] + tail
        ev = self._timeline(joined, head_no)
        if ev is None:
            return False
        ev.fields["torn_line"] = tail_no
        out.append(ev)
        # The head line is counted as TIMELINE by the caller; the tail line is counted under
        # the family of the line that tore it (so families still add up to physical lines).
        self.acc.torn_repaired += 1
        intruder = head[m.start() :]
        out.extend(self._reparse_intruder(intruder, head_no))
        self.acc.lines_total += 0  # both physical lines are counted by feed()
        return True

    def _reparse_intruder(self, text: str, no: int) -> list[Event]:
        """Parse the line that tore a TIMELINE line; it is not a physical line of its own."""
        sub = LineParser(self.source, self.acc, full=True, first_line=no)
        events = sub.feed(text + "\n")
        self.acc.lines_total -= 1  # feed() counts the tail line as the physical line
        return events

    def _unrepaired(self, ln: str, no: int, out: list[Event], counts: Counter[str]) -> None:
        self.acc.torn_unrepaired += 1
        self.acc.note_malformed(no)
        out.append(Event(no, self.source, Family.TIMELINE, "torn", {"text": ln[:200]}, True))

    def _finish_torn(self, first: str, no: int, out: list[Event], counts: Counter[str]) -> int:
        assert self._torn is not None
        head_no, head = self._torn
        self._torn = None
        if self._repair(head, head_no, first, no, out, counts):
            return 1
        self._unrepaired(head, head_no, out, counts)
        return 0


def _mask_family(line: str) -> str:
    """The family the bulk classifier counted a line under (for moving a torn tail)."""
    if line.startswith(TIMING_PREFIX):
        return "timing"
    if line.startswith(NTT_H_PREFIX):
        return "ntt_h"
    if _TRACING_RE.match(line):
        return "tracing"
    return "blank" if not line else "other"


# RE2 forms (Arrow compute) of the classifiers the per-line parser applies.
_TRACING_HEAD_RE2 = (
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) +"
    r"(?:TRACE|DEBUG|INFO|WARN|ERROR) "
)
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


def _relevant_re2() -> str:
    import re as _re

    words = [_re.escape(p) for p, k in TRACING_KINDS if k in ANALYSIS_TRACING_KINDS]
    return r"^\S+ +(?:WARN|ERROR) |" + "|".join(words)


_RELEVANT_RE2 = _relevant_re2()

_TIMELINE_DETAIL_KEYS = frozenset(
    {"partition", "snap_partition", "worker", "gpu_ms", "synth_ms", "kind", "monolithic"}
)
_INTRUDER_RE = re.compile(r"CUZK_TIMING: |CUZK_NTT_H: |\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def _put_fields(fields: dict[str, Value], text: str) -> None:
    for piece in _FIELD_SPLIT_RE.split(text):
        k, sep, v = piece.partition("=")
        if sep:
            fields[k] = _scalar(v.rstrip())


def _tracing_kind(body: str) -> str | None:
    word = body.split(" ", 1)[0]
    cands = _TRACING_KIND_BY_WORD.get(word)
    if cands:
        for prefix, kind in cands:
            if body.startswith(prefix):
                return kind
    return None


# ---------------------------------------------------------------------------------------------
# Code era detection (reference section 8.2).
# ---------------------------------------------------------------------------------------------

ERAS = ("phase4-8", "phase9-11", "phase12", "pool-cache", "main")
ERA_LABELS = {
    "phase4-8": "Phases 4-8 (V1-V3, Feb 18-19)",
    "phase9-11": "Phases 9-11, pre-staging (V4-V7, Feb 19)",
    "phase12": "Phase 12, split start/finalize with pre-staging (V8, Feb 20)",
    "pool-cache": "pool caching (V9-V10, Feb 27 - Mar 6)",
    "main": "main: pinned pool, mutex timing (V11, Mar 13 on)",
    "unknown": "unknown (no era-specific lines)",
}


class EraDetector:
    """Collects era markers from events and names the code era (and TIMELINE era)."""

    _MARKERS = {
        "mutex_wait": "mutex_wait",
        "mutex_held": "mutex_wait",
        "barrier_wait": "mutex_wait",
        "pool_threshold": "ntt_h",
        "d_a_cache": "ntt_h",
        "prestage_vram": "prestage",
        "prestage_setup": "prestage",
        "host_register": "prestage",
        "epilogue": "epilogue",
        "split_vectors": "timing",
    }

    def __init__(self) -> None:
        self.markers: dict[str, int] = {}

    def observe(self, ev: Event) -> None:
        fam = ev.family
        if fam is Family.TIMING:
            key = self._MARKERS.get(ev.kind)
            if key is not None and key not in self.markers:
                self.markers[key] = ev.line
        elif fam is Family.NTT_H:
            self.markers.setdefault("ntt_h", ev.line)
        elif fam is Family.TIMELINE:
            k = ev.kind
            if k == "GPU_QUEUE":
                self.markers.setdefault("gpu_queue", ev.line)
            elif k == "CHAN_SEND":
                self.markers.setdefault("chan_send", ev.line)
            if "snap_partition" in ev.fields:
                self.markers.setdefault("snap_partition", ev.line)
            if "partition" in ev.fields:
                self.markers.setdefault("timeline_partition", ev.line)
            if "kind" in ev.fields or "monolithic" in ev.fields:
                self.markers.setdefault("timeline_monolithic", ev.line)

    @property
    def era(self) -> str:
        m = self.markers
        if "mutex_wait" in m:
            return "main"
        if "ntt_h" in m:
            return "pool-cache"
        if "prestage" in m:
            return "phase9-11" if "epilogue" in m else "phase12"
        if "epilogue" in m:
            return "phase4-8"
        return "unknown"

    @property
    def timeline_era(self) -> str:
        m = self.markers
        if "gpu_queue" in m:
            return "T4"
        if "snap_partition" in m:
            return "T2"
        if "timeline_partition" in m:
            return "T1-T3"
        if "timeline_monolithic" in m or "chan_send" in m:
            return "T0"
        return "none"

    def apply(self, info: RunInfo) -> None:
        info.era = self.era
        info.timeline_era = self.timeline_era
        info.era_evidence = dict(self.markers)


def parse_text(text: str, *, full: bool = True) -> tuple[list[Event], Accounting]:
    """Parse a whole text (tests, notebooks): returns events and accounting."""
    from cuzk_diag.sources import SourceStats, clean_text

    stats = SourceStats("<text>")
    if text and not text.endswith("\n"):
        text += "\n"
    p = LineParser(full=full)
    cleaned = clean_text(text.encode("utf-8", "surrogateescape"), stats)
    events = p.feed(cleaned) + p.close()
    apply_source_stats(p.acc, stats)
    return events, p.acc


def apply_source_stats(acc: Accounting, stats: Any) -> None:
    """Add one input's cleaning counts (sources.SourceStats) to the accounting."""
    acc.ansi_lines += stats.ansi_lines
    acc.journald_lines += stats.journald_lines
    acc.journald_sources.update(stats.journald_hosts)
    acc.decode_errors += stats.decode_errors
    acc.oversized_lines += stats.oversized_lines
    if stats.truncated:
        acc.truncated_inputs[stats.name] = stats.truncated
    acc.stray_cr_lines += stats.stray_cr_lines


def iter_events(
    inputs: Iterable[str | Source],
    accounting: Accounting | None = None,
    *,
    full: bool = True,
    progress: Any = None,
) -> Iterator[Event]:
    """Stream events from several inputs (paths, ``-``, opened ``Source``s) in order;
    ``accounting`` is filled as it goes."""
    from cuzk_diag.sources import iter_input

    acc = accounting if accounting is not None else Accounting()
    for idx, name in enumerate(inputs):
        parser = LineParser(idx, acc, full=full)
        stats = None
        for chunk_stats, chunk in iter_input(name):
            stats = chunk_stats
            if chunk:
                yield from parser.feed(chunk)
                if progress is not None:
                    progress(len(chunk))
        yield from parser.close()
        if stats is not None:  # always: iter_input yields at least once
            apply_source_stats(acc, stats)
            acc.sources.append(stats.name)
