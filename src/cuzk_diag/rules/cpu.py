"""CPU rules: the CPU side of a call on the GPU's critical path."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from cuzk_diag.facts import barrier_estimate, median, num, num_array
from cuzk_diag.records import Finding, Severity
from cuzk_diag.rules.base import Option, Rule, RuleContext, calls_of, lines_of, ms, pct, register

_BARRIER_TEXT = {
    "measured": "barrier_wait_ms",
    "estimated": (
        "estimated as gpu_total − ntt − batch − tail, capped by prep_msm − lock wait − ntt"
    ),
    "upper_bound": "upper bound: gpu_total − ntt − batch − tail",
}


@register
class CpuCriticalPath(Rule):
    """
    ## What it flags
    Calls where the GPU thread, holding the lock, sits idle waiting for the CPU pre-processing
    (`prep_msm`) at the barrier before the batch additions: median barrier wait of at least
    `min_barrier_ms` and `min_barrier_share` of `gpu_total_ms`. It is a warning when the GPU is
    in demand (the lock-held view of utilisation, Σ `mutex_held_ms` or else Σ `gpu_total_ms`
    over the span, at least `busy_util`, or calls wait for the lock at least as long as the
    barrier wait): then the idle lock holder delays everyone. The lock-held view is the one
    that fits: the scheduler view also counts calls queued for the lock, and the kernel view
    leaves out the very barrier wait that blocks the lock. On an under-loaded GPU it is an
    info, since it lengthens each call without limiting throughput. The wait is
    `barrier_wait_ms` on main; before that it is estimated as `gpu_total − ntt_msm_h −
    batch_add − tail_msm`, attributed to the barrier only as far as
    `prep_msm − lock wait − ntt_msm_h` allows (prep starts at the lock request, the GPU thread
    at the acquisition). With one worker per GPU it also reports (info) a CPU path
    `prep_msm + b_g2_msm` longer than `cpu_ratio` × the kernels, since then nothing overlaps
    the CPU work and it sets the throughput floor.

    ## Why it matters
    `gpu_total_ms` includes the barrier wait, so a CPU-bound call looks like slow kernels while
    the GPU is idle under the lock and every other worker waits too. The Phase 9 steady state
    had a CPU path of 2,393 ms against 1,824 ms `gpu_total_ms` (1,423 ms of kernels, about
    400 ms barrier wait), a CPU-limited floor of 10 × 2.4 s = 24 s/proof.

    ## Example log lines
    ```
    CUZK_TIMING: prep_msm_ms=1909
    CUZK_TIMING: gpu_tid=0 barrier_wait_ms=412
    CUZK_TIMING: gpu_tid=0 tail_msm_ms=83 gpu_total_ms=1824
    ```

    ## What to do
    Overlap or shorten the CPU side: with one worker per GPU, run two so one worker's prep
    overlaps the other's kernels (the Phase 8 interlock); reduce memory-bandwidth contention
    from synthesis (under load prep_msm grew from 1.7 to 2.7 s in the Phase 9 sweeps); size the
    C++ pool with `gpus.gpu_threads`.

    ## Known false positives
    Before main the barrier is estimated: the GPU region also holds unmeasured gaps (Phase 8
    averages left about 550 ms unexplained), reported as `unaccounted_ms_median` rather than
    barrier wait when the lock wait shows prep finished first. Without a lock-wait estimate
    the remainder is only an upper bound.
    """

    code = "CZ301"
    name = "cpu-critical-path"
    area = "cpu"
    severity = Severity.WARNING
    title = "GPU waits for CPU pre-processing"
    options = (
        Option("min_barrier_ms", 200, "median barrier wait (ms) needed for a warning"),
        Option(
            "min_barrier_share",
            0.1,
            "median barrier wait / gpu_total_ms needed for a warning",
            maximum=1.0,
        ),
        Option(
            "cpu_ratio",
            1.0,
            "CPU path / kernel time above which a one-worker-per-GPU run gets an info",
        ),
        Option(
            "busy_util",
            0.75,
            "lock-held utilisation (Σ mutex_held_ms, else Σ gpu_total_ms, over the span) "
            "from which a barrier wait costs throughput (warning); below it, and with no lock "
            "wait longer than the barrier wait, the lock is free often enough anyway (info)",
            maximum=1.0,
        ),
    )
    evidence = {
        "barrier_ms_median": "median barrier wait",
        "barrier_method": "measured | estimated | upper_bound",
        "barrier_share": "barrier_ms_median / gpu_total_ms_median",
        "unaccounted_ms_median": "median GPU-region time in no measured phase (estimate only)",
        "prep_msm_ms_median": "median `prep_msm_ms`",
        "b_g2_msm_ms_median": "median `b_g2_msm_ms`",
        "cpu_path_ms": "median prep_msm_ms + b_g2_msm_ms",
        "gpu_total_ms_median": "median `gpu_total_ms`",
        "kernel_ms": "gpu_total_ms_median − barrier_ms_median",
        "gw": "GPU workers per device",
        "cpu_floor_s_per_proof": "partitions per proof × cpu_path / GPUs (one worker per GPU)",
        "gpu_util": "scheduler view: merged GPU_START..GPU_END utilisation of the run",
        "held_util": "lock-held view: Σ mutex_held_ms (else gpu_total_ms) / span; judged "
        "against busy_util",
        "kernel_util": "kernel view: Σ measured kernel stages / span",
        "lock_wait_ms_median": "median lock wait (measured or inferred)",
    }

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        df = ctx.partitions
        o = ctx.options
        g = num(df, "gpu_total_ms")
        if not g.notna().any():
            return
        lock = ctx.lock_wait()
        barrier, unaccounted, method = barrier_estimate(df, lock)
        unaccounted_med = median(unaccounted) if method == "estimated" else None
        del unaccounted
        prep_med, bg2_med = ctx.median("prep_msm_ms"), ctx.median("b_g2_msm_ms")
        # (The CPU path, prep_msm + b_g2_msm where prep_msm is logged, made in place and its
        # parts let go once added: the rule's Series of a value per call took 26 MiB of the
        # 1 GB log's analysis.)
        prep = num_array(df, "prep_msm_ms")
        bg2 = num_array(df, "b_g2_msm_ms")  # (may be the frame's own column: not written)
        path = np.where(np.isnan(bg2), 0.0, bg2)  # (``fillna(0)``)
        del bg2
        path += prep  # (NaN where prep_msm is missing, as ``where(prep.notna())`` made it)
        cpu = pd.Series(path, index=df.index)
        del prep, path
        gmed = ctx.median("gpu_total_ms") or 0.0  # (``g`` has a value: a number)
        bmed = median(barrier) or 0.0
        cpu_path = median(cpu)
        kernel = gmed - bmed
        gw = ctx.facts.gw
        share = bmed / gmed if gmed > 0 else 0.0
        n_gpus = max(1, ctx.facts.n_gpus)
        ppp = ctx.facts.partitions_per_proof
        floor = (
            ppp * cpu_path / 1000.0 / n_gpus if gw == 1 and ppp and cpu_path is not None else None
        )
        evidence = {
            "total": int((barrier.notna() & g.notna()).sum()),
            "barrier_ms_median": bmed,
            "barrier_method": method,
            "barrier_share": share,
            "unaccounted_ms_median": unaccounted_med,
            "prep_msm_ms_median": prep_med,
            "b_g2_msm_ms_median": bg2_med,
            "cpu_path_ms": cpu_path,
            "gpu_total_ms_median": gmed,
            "kernel_ms": kernel,
            "gw": gw,
            "cpu_floor_s_per_proof": floor,
            "gpu_util": ctx.facts.gpu_util,
            "held_util": ctx.facts.held_util,
            "kernel_util": ctx.facts.kernel_util,
            # (The facts' median of the same estimate: ``RunFacts.lock_wait_ms``.)
            "lock_wait_ms_median": ctx.facts.lock_wait_ms,
        }
        cpu_txt = (
            f" The CPU path prep_msm {ms(prep_med)} + b_g2_msm {ms(bg2_med)} = "
            f"{ms(cpu_path)} against {ms(kernel)} of kernels."
            if cpu_path is not None
            else ""
        )
        if bmed >= o["min_barrier_ms"] and share >= o["min_barrier_share"]:
            # (Of the calls counted in ``total``: with a gpu_total_ms too, as a damaged line
            # may leave a call without one.)
            mask = (barrier >= o["min_barrier_ms"]) & g.notna()
            f = ctx.facts
            util = f.held_util if f.held_util is not None else f.gpu_util
            wait = ctx.facts.lock_wait_ms
            contended = util is None or util >= o["busy_util"] or (wait or 0) >= bmed
            idle_txt = (
                ""
                if contended
                else f" The lock is held only {pct(util)} of the run and calls hardly wait for "
                "it, so this lengthens each call but does not limit throughput."
            )
            yield self.finding(
                Severity.WARNING if contended else Severity.INFO,
                f"The GPU waits for CPU pre-processing under the lock: median barrier wait "
                f"{ms(bmed)} ({pct(share)} of gpu_total_ms {ms(gmed)}; "
                f"{_BARRIER_TEXT[method]}).{cpu_txt}{idle_txt}",
                {"affected": int(mask.sum()), **evidence},
                lines=lines_of(df, mask),
                calls=calls_of(df, mask),
                advice=(
                    "Shorten or overlap prep_msm: two workers per GPU let one worker's prep run "
                    "during the other's kernels; reduce memory-bandwidth pressure from "
                    "synthesis; size the C++ pool with gpus.gpu_threads."
                ),
            )
        elif gw == 1 and cpu_path is not None and kernel > 0 and cpu_path > o["cpu_ratio"] * kernel:
            mask = cpu > o["cpu_ratio"] * (g - barrier.fillna(0))
            # (Of the calls with both sides of that comparison: its own total, not the barrier's.)
            evidence["total"] = int((cpu.notna() & g.notna()).sum())
            floor_txt = (
                f"; with one worker per GPU it sets a floor of {ppp:g} × {cpu_path / 1000:.2f} s"
                f" = {floor:.1f} s/proof"
                if floor is not None
                else ""
            )
            yield self.finding(
                Severity.INFO,
                f"Per-partition CPU path prep_msm + b_g2_msm = {ms(cpu_path)} is longer than "
                f"the {ms(kernel)} of kernels{floor_txt}.",
                {"affected": int(mask.sum()), **evidence},
                lines=lines_of(df, mask),
                calls=calls_of(df, mask),
                advice=(
                    "Run two workers per GPU so the CPU work of one call overlaps the kernels "
                    "of another."
                ),
            )
