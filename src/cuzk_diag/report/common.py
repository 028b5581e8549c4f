"""Text pieces shared by the human-readable reporters: numbers, evidence, facts, waterfall bars."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from cuzk_diag.records import Accounting
from cuzk_diag.sanitize import neutralise

if TYPE_CHECKING:
    from cuzk_diag.analysis import Analysis
    from cuzk_diag.facts import RunFacts, Waterfall

EIGHTHS = " ▏▎▍▌▋▊▉"
FULL = "█"
ESTIMATE = "▒"
PERCENT_SUFFIXES = ("share", "util")


def num(v: float | int | None, unit: str = "") -> str:
    """1234.5 -> '1,234'; 12.34 -> '12.3'; 0.123 -> '0.123'; None -> 'n/a'."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int) or float(v).is_integer():
        out = f"{int(v):,}"
    elif abs(v) >= 100:
        out = f"{v:,.0f}"
    elif abs(v) >= 10:
        out = f"{v:.1f}"
    else:
        out = f"{v:.3g}"
    return f"{out}{unit}"


def pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def secs(ms: float | None) -> str:
    return "n/a" if ms is None else f"{ms / 1000:,.1f} s"


def value(key: str, v: Any) -> str:
    """An evidence value for humans; shares and utilisations as percentages."""
    if isinstance(v, dict):
        return ", ".join(f"{k}={value(str(k), x)}" for k, x in v.items()) or "-"
    if isinstance(v, list | tuple):
        return ", ".join(value(key, x) for x in v) or "-"
    if isinstance(v, float) and key.endswith(PERCENT_SUFFIXES):
        return pct(v)
    if isinstance(v, int | float):
        return num(v)
    return "n/a" if v is None else str(v)


def counts_text(counts: dict[str, int]) -> str:
    """{'error': 1, 'warning': 3, 'info': 0} -> '1 error, 3 warnings, 0 info'."""
    return ", ".join(f"{n} {k}{'s' if n != 1 and k != 'info' else ''}" for k, n in counts.items())


def evidence_items(evidence: dict[str, Any]) -> list[tuple[str, str]]:
    """(key, text) pairs, ``affected``/``total`` first, empty values dropped."""
    out = []
    if "affected" in evidence and "total" in evidence:
        out.append(("affected", f"{evidence['affected']:,} of {evidence['total']:,}"))
    for k, v in evidence.items():
        if k in ("affected", "total") or v is None or v == [] or v == {}:
            continue
        out.append((k, value(k, v)))
    return out


def estimate_text(estimate: dict[str, Any] | None) -> str | None:
    """A finding's estimated saving as one sentence (None when it has none): the model's
    prediction for the configuration the advice points to, and the command that details it."""
    if not estimate:
        return None
    seeds = estimate.get("seeds")
    runs = f"medians of {seeds} runs" if seeds else "medians"
    how = f"daemon model, {runs}, against its replay of this run as measured"
    return f"{estimate['summary']} [{how}; details: {estimate['command']}]"


def facts_rows(a: Analysis) -> list[tuple[str, str]]:
    """Label/value pairs describing the run."""
    from cuzk_diag.ingest.parse import ERA_LABELS

    f: RunFacts = a.facts
    rows = [
        (
            "Code era",
            f"{f.era} — {ERA_LABELS.get(f.era, f.era)}; TIMELINE {f.timeline_era}",
        )
    ]
    gw = (
        f"{f.gw} per GPU ({'from the log' if f.gw_source == 'log' else 'inferred'})"
        if f.gw
        else "n/a"
    )
    ordinals = ", ".join(map(str, f.gpus))
    gpus = f"{len(f.gpus)} (GPU{'s' if len(f.gpus) > 1 else ''} {ordinals})" if f.gpus else "n/a"
    rows.append(("GPUs", f"{gpus} · workers {gw} · gpu_threads {num(f.gpu_threads)}"))
    proofs = "n/a" if f.proofs is None else f"{f.proofs}"
    pp = f" ({num(f.partitions_per_proof)} per proof)" if f.partitions_per_proof else ""
    inflight = f" · at most {f.max_proofs_in_flight} in flight" if f.max_proofs_in_flight else ""
    rows.append(
        (
            "Proofs",
            f"{proofs} ({f.proofs_completed} completed, {f.proofs_failed} failed) · "
            f"{f.partitions} partitions{pp}{inflight}",
        )
    )
    if f.s_per_proof is not None:
        if f.s_per_proof_source == "bench":
            src = "cuzk-bench: "
        else:
            src = "TIMELINE, first SYNTH_START to last GPU_END: "
        total = (
            f"{f.total_secs:,.1f} s / {f.proofs_completed} completed"
            if f.total_secs is not None and f.proofs_completed
            else "bench summary"
        )
        shape = ""
        if f.bench_count is not None or f.bench_concurrency is not None:
            shape = f"; -c {num(f.bench_count)} -j {num(f.bench_concurrency)}"
        rows.append(("Throughput", f"{f.s_per_proof:,.1f} s/proof ({src}{total}{shape})"))
    else:
        rows.append(("Throughput", "n/a (no completed proof with TIMELINE or bench output)"))
    if f.gpu_util is not None:
        rows.extend(("GPU" if i == 0 else "", text) for i, text in enumerate(utilisation_lines(f)))
        g = f.gap_summary()
        if g["count"]:
            rows.append(
                (
                    "Idle gaps",
                    f"{g['count']} totalling {secs(g['total_ms'])}, largest "
                    f"{secs(g['largest_ms'])} ({g['between_proofs']} between proofs)",
                )
            )
        else:
            rows.append(("Idle gaps", "none"))
    if f.wall_clock_calls:
        start = (f.wall_clock_start or "").replace("T", " ").rstrip("Z")
        end = (f.wall_clock_end or "").replace("T", " ").rstrip("Z")
        if end[:10] == start[:10]:
            end = end[11:]
        text = f"{start} .. {end} UTC (engine-start line + TIMELINE offsets)"
        if f.wall_clock_calls < f.partitions:
            text += f"; {f.partitions - f.wall_clock_calls} calls without"
        rows.append(("Wall clock", text))
    elif f.partitions:
        rows.append(("Wall clock", "none: no engine-start line in the log (start_ts/end_ts null)"))
    method = {
        "measured": "measured (mutex_wait_ms)",
        "pre_destructor": "inferred from pre_destructor_ms − gpu_total_ms",
        "clock": "estimated from the clock (per-GPU queue of GPU_START..GPU_END and holds)",
        "none": "unknown",
    }[f.lock_wait_method]
    if f.lock_wait_method == "clock" and f.lock_wait_ms is not None:
        method += (
            f": median {num(f.lock_wait_ms, ' ms')} (between {num(f.lock_wait_ms_low, ' ms')}"
            f" and {num(f.lock_wait_ms_high, ' ms')})"
        )
    rows.append(("Lock wait", method))
    return [(k, neutralise(v)) for k, v in rows]  # values quote the log


#: Short names of the fields behind the lock-held and kernel views, for the report header.
_VIEW_FIELDS = {
    "mutex_held_ms": "Σ mutex_held_ms",
    "gpu_total_ms": "Σ gpu_total_ms",
    "ntt_msm_h_ms + batch_add_ms + tail_msm_ms": "Σ ntt_msm_h + batch_add + tail_msm",
}
_BARRIER_HOW = {
    "measured": "barrier_wait_ms",
    "estimated": "estimated",
    "upper_bound": "upper bound, barrier wait not logged",
}


def _share(v: float) -> str:
    return f"{100 * v:.0f}%"


#: A view whose durations add up to more than its span (``RunFacts.over_span``), in words.
OVER_SPAN_TEXT = "not shown: its durations add up to more than the span (a damaged value)"


def _view(util: float | None, over: bool, source: str, missing: str) -> str:
    """A utilisation view's share and what it sums, or why it has none (``over``: it is in
    ``RunFacts.over_span``; ``missing``: what it would be summed from)."""
    if util is not None:
        return f"{pct(util)}: {source}"
    return OVER_SPAN_TEXT if over else f"n/a ({missing})"


def utilisation_lines(f: RunFacts) -> list[str]:
    """The three utilisation views, what each counts, and the gaps between them in words."""
    held_src = _VIEW_FIELDS.get(f.held_source or "", f"Σ {f.held_source}")
    kernel_src = _VIEW_FIELDS.get(f.kernel_source or "", "Σ NTT_H kernels + batch_add + tail_msm")
    lines = [
        f"scheduler {pct(f.gpu_util)} of the {secs(f.span_ms)} span: merged GPU_START..GPU_END",
        "lock held "
        + _view(f.held_util, "held" in f.over_span, held_src, "no gpu_total_ms or mutex_held_ms"),
        "kernels   "
        + _view(f.kernel_util, "kernel" in f.over_span, kernel_src, "no kernel stage timings"),
    ]
    if f.held_util and f.kernel_util is not None:
        not_kernel = max(0.0, 1.0 - f.kernel_util / f.held_util)
        if f.barrier_share is not None and f.barrier_method:
            barrier = min(f.barrier_share, not_kernel)
            how = _BARRIER_HOW.get(f.barrier_method, f.barrier_method)
            text = f"GPU thread waits on CPU {_share(barrier)} of the lock ({how})"
            if not_kernel - barrier >= 0.005:
                text += f", other non-kernel work {_share(not_kernel - barrier)}"
        else:
            text = f"{_share(not_kernel)} of the lock is not kernel time"
        lines.append(text)
    if f.gpu_util is not None and f.held_util is not None and f.gpu_util - f.held_util >= 0.005:
        lines.append(
            f"Calls outside the lock {_share(f.gpu_util - f.held_util)} of the span "
            "(lock wait, CPU setup, epilogue)"
        )
    return lines


def accounting_rows(acc: Accounting) -> list[tuple[str, str]]:
    fams = ", ".join(f"{k} {v:,}" for k, v in sorted(acc.by_family.items()) if v)
    rows = [("Lines", f"{acc.lines_total:,} ({fams or 'none'})")]
    issues = {
        "malformed": acc.malformed,
        "unattributed": acc.unattributed,
        "values their column cannot hold": acc.invalid_values,
        "unknown timing lines": acc.unknown_timing_lines,
        "unknown keys": sum(acc.unknown_keys.values()),
        "torn repaired": acc.torn_repaired,
        "torn unrepaired": acc.torn_unrepaired,
        "ANSI stripped": acc.ansi_lines,
        "journald prefixes": acc.journald_lines,
        "decode errors": acc.decode_errors,
        "oversized": acc.oversized_lines,
        "inputs ending early": len(acc.truncated_inputs),
        "stray CR": acc.stray_cr_lines,
    }
    rows.append(("Issues", ", ".join(f"{k} {v:,}" for k, v in issues.items() if v) or "none"))
    if acc.sources:
        rows.append(("Sources", ", ".join(acc.sources)))
    return [(k, neutralise(v)) for k, v in rows]  # values quote the log


def bar(start: float, dur: float, total: float, width: int, measured: bool = True) -> str:
    """A bar starting at ``start`` of ``dur`` on a ``total``-long axis ``width`` cells wide."""
    if total <= 0:
        return ""
    scale = width / total
    lead = min(int(round(start * scale)), width - 1)
    length = min(dur * scale, width - lead)
    if not measured:
        return " " * lead + ESTIMATE * max(1, int(round(length)))
    full = int(length)
    rem = int(round((length - full) * 8))
    if rem == 8:
        full, rem = full + 1, 0
    body = FULL * full + (EIGHTHS[rem] if rem else "")
    return " " * lead + (body or EIGHTHS[1])


def waterfall_rows(w: Waterfall, width: int) -> list[tuple[str, str, str, str, bool]]:
    """(name, lane, duration text, bar, measured) per segment, in time order."""
    segs = sorted(w.segments, key=lambda s: (s.start_ms, s.lane != "cpu"))
    return [
        (
            s.name,
            s.lane,
            num(s.duration_ms, " ms"),
            bar(s.start_ms, s.duration_ms, w.total_ms, width, s.measured),
            s.measured,
        )
        for s in segs
    ]


def waterfall_caption(w: Waterfall) -> str:
    ref = ", ".join(f"median {k} {num(v, ' ms')}" for k, v in w.reference.items() if v)
    text = f"Model total {num(w.total_ms, ' ms')} from the call's entry"
    return f"{text}; measured {ref}." if ref else f"{text}."
