"""Utilisation rules: how much of the run the GPUs had work, and the holes between calls."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from cuzk_diag.facts import GAP_BUCKETS
from cuzk_diag.records import Finding, Severity
from cuzk_diag.rules.base import Option, Rule, RuleContext, ms, pct, register

#: The views ``RunFacts.over_span`` names, in words.
_OVER_SPAN_VIEWS = {"held": "lock-held", "kernel": "kernel stage"}


def _secs(x: float | None) -> str:
    return "n/a" if x is None else f"{x / 1000:,.1f} s"


@register
class GpuIdle(Rule):
    """
    ## What it flags
    GPUs without work for a large part of the run. For each GPU the TIMELINE
    `[GPU_START, GPU_END]` intervals of all its workers are merged; utilisation is the union's
    length over the span from the first GPU_START to the last GPU_END, and every hole in the
    union is an idle gap (format reference section 7). Warning when the run's utilisation is
    below `min_util`; info when it is not but an idle gap of at least `long_gap_ms` occurs.
    This is the scheduler view of utilisation: a GPU counts as idle only when no call holds
    one of its workers, which is what "no work queued" means. The message also gives the
    lock-held view (Σ `mutex_held_ms`, else Σ `gpu_total_ms`, over the same span) and the
    kernel view (Σ of the measured kernel stages `ntt_msm_h_ms + batch_add_ms + tail_msm_ms`,
    or the `CUZK_NTT_H` kernel parts), so a busy but CPU-bound GPU is not mistaken for a
    saturated one. Runs with fewer than `min_calls` complete GPU calls are not judged.

    ## Why it matters
    Idle GPU time is throughput lost: the GPU-bound limit is partitions × kernel time per
    proof (Phase 8: 10 × 3.75 s = 37.5 s against 37.4 s measured). Gaps between proofs
    (3-11 s, "12 gaps totaling 66.5 s at c=20 j=15" in proposal-11) show the pipeline running
    dry between jobs; gaps inside a proof show synthesis not keeping up.

    ## Example log lines
    ```
    TIMELINE,415854,GPU_END,0b1e6c52-7d0f-4b8e-9d51-3f6a2c9e8a41,worker=1,partition=9,gpu_ms=2951
    TIMELINE,426911,GPU_START,5f0c2a19-3b7e-4d6a-8c1f-9e2d4b7a6c30,worker=0,partition=0
    ```

    ## What to do
    Keep work queued for the GPU: more proofs in flight (`cuzk-bench batch -j`), enough
    synthesis concurrency that partitions are ready when a worker frees up. For a benchmark,
    remember that total time includes pipeline fill and drain.

    ## Known false positives
    The merged intervals overstate kernel occupancy: from Phase 8 on they include the mutex
    wait and from Phase 12 on the b_g2/finalize tail, and the lock-held view includes the GPU
    thread's barrier wait for the CPU, which is why the kernel view is given too. Short runs
    are dominated by fill and drain.

    A lock-held or kernel view whose durations add up to more than the span (by more than 2 %
    and a millisecond a call, which rounding and the two clocks explain) is left out, and the
    message says so: a GPU's calls hold its lock one at a time inside the span, so one of those
    durations is a damaged value (`over_span` in the run facts).
    """

    code = "CZ401"
    name = "gpu-idle"
    area = "utilisation"
    severity = Severity.WARNING
    title = "GPU idle for a large part of the run"
    options = (
        Option(
            "min_util", 0.75, "merged-interval utilisation below which the rule warns", maximum=1.0
        ),
        Option("long_gap_ms", 5000, "idle gap (ms) that earns an info when utilisation is fine"),
        Option("min_calls", 3, "GPU calls with GPU_START and GPU_END needed before judging"),
    )
    evidence = {
        "gpu_util": "scheduler view: merged-interval utilisation over all GPUs (Σ busy / Σ span)",
        "held_util": "lock-held view: Σ mutex_held_ms (else gpu_total_ms) / Σ span",
        "kernel_util": "kernel view: Σ ntt_msm_h + batch_add + tail_msm (or the CUZK_NTT_H "
        "kernel parts) / Σ span",
        "span_ms": "Σ over GPUs of first GPU_START .. last GPU_END",
        "idle_ms": "Σ idle gaps",
        "idle_gaps": "number of idle gaps",
        "gaps_between_proofs": "idle gaps whose neighbouring calls belong to different proofs",
        "largest_gap_ms": "longest idle gap",
        "gap_buckets": "idle gaps by length: < 50 ms, 50-500 ms, > 500 ms",
        "per_gpu_util": "merged utilisation per GPU ordinal",
    }

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        f = ctx.facts
        o = ctx.options
        calls = sum(u.calls for u in f.per_gpu)
        if calls < o["min_calls"] or f.gpu_util is None:
            return
        summary = f.gap_summary()
        largest = summary["largest_ms"]
        low = f.gpu_util < o["min_util"]
        if not low and not (largest is not None and largest >= o["long_gap_ms"]):
            return
        per_gpu = {str(u.gpu): u.util for u in f.per_gpu}
        scope = "The GPU was" if len(f.per_gpu) == 1 else f"The {len(f.per_gpu)} GPUs were"
        msg = (
            f"{scope} busy {pct(f.gpu_util)} of the {_secs(f.span_ms)} span (merged "
            f"GPU_START..GPU_END intervals)"
        )
        if summary["count"]:
            msg += (
                f"; {summary['count']} idle gap(s) total {_secs(summary['total_ms'])}, largest "
                f"{_secs(largest)} ({summary['between_proofs']} between proofs)"
            )
        if f.held_util is not None and f.kernel_util is not None:
            msg += (
                f". The lock is held {pct(f.held_util)} and the kernels run "
                f"{pct(f.kernel_util)} of the span"
            )
        elif f.held_util is not None:
            msg += f". The lock is held {pct(f.held_util)} of the span"
        if f.over_span:
            views = " and the ".join(_OVER_SPAN_VIEWS[v] for v in f.over_span)
            msg += (
                f". The {views} durations add up to more than the span: one of them is a "
                "damaged value, and the view is left out"
            )
        if len(f.per_gpu) > 1:
            msg += " (" + ", ".join(f"GPU {k}: {pct(v)}" for k, v in per_gpu.items()) + ")"
        msg += "."
        yield self.finding(
            Severity.WARNING if low else Severity.INFO,
            msg,
            {
                "affected": int(np.count_nonzero(f.idle_gaps.duration_ms >= GAP_BUCKETS[0])),
                "total": calls,
                "gpu_util": f.gpu_util,
                "held_util": f.held_util,
                "kernel_util": f.kernel_util,
                "span_ms": f.span_ms,
                "idle_ms": summary["total_ms"],
                "idle_gaps": summary["count"],
                "gaps_between_proofs": summary["between_proofs"],
                "largest_gap_ms": largest,
                "gap_buckets": summary["buckets"],
                "per_gpu_util": per_gpu,
            },
            advice=(
                "Keep work queued for the GPU: more proofs in flight (cuzk-bench batch -j) and "
                "enough synthesis concurrency that partitions are ready; gaps ≥ "
                f"{ms(GAP_BUCKETS[1])} between proofs mean the pipeline ran dry between jobs."
            ),
        )
