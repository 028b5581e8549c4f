"""Tracing lines of the Rust daemon (tracing-subscriber's default ``Full`` format, section 4)."""

from __future__ import annotations

import math
import re

from cuzk_diag.records import Event, Family, Value, ascii_int

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


def _scalar(v: str) -> Value:
    """Render a tracing field value: Debug `Some(3)` -> 3, `None` -> None, quotes removed."""
    if v[:5] == "Some(" and v[-1:] == ")":
        v = v[5:-1]
    elif v == "None":
        return None
    if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        return v[1:-1]
    n = ascii_int(v, signed=True)
    return v if n is None else n  # (a number int cannot read is kept as the text)


def parse_duration_ms(text: str) -> float | None:
    """Rust `Duration` Debug (`5.318412345s`, `718.2ms`, `12µs`) -> milliseconds; None without
    one, or for a number too large for a float."""
    m = _DURATION_RE.search(text)
    if m is None:
        return None
    ms = float(m.group(1)) * _DURATION_MS[m.group(2)]
    return ms if math.isfinite(ms) else None


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


def is_tracing(line: str) -> bool:
    """Whether ``line`` has the header of a tracing line."""
    return _TRACING_RE.match(line) is not None


def parse_tracing(ln: str, no: int, source: int, full: bool) -> Event | None:
    """A tracing line, or None when ``ln`` is not one. Without ``full``, an INFO/DEBUG/TRACE
    line of no known message keeps only its header and message."""
    m = _TRACING_RE.match(ln)
    if m is None:
        return None
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
        if not full and level in ("INFO", "DEBUG", "TRACE"):
            fields["message"] = body
            return Event(no, source, Family.TRACING, kind, fields)
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
        ms = fields["gpu_prove_time_ms"] = parse_duration_ms(first)
        if ms is None and _DURATION_RE.search(first) is not None:
            # A duration of more digits than a float holds: the line is counted as malformed.
            return Event(no, source, Family.TRACING, kind, fields, True)
    return Event(no, source, Family.TRACING, kind, fields)
