"""Locking rules: where the time between a call's entry and its kernels goes, and the GPU mutex."""

from __future__ import annotations

from collections.abc import Iterator

from cuzk_diag.facts import barrier_estimate, has, median, num
from cuzk_diag.records import Finding, Severity
from cuzk_diag.rules.base import Option, Rule, RuleContext, calls_of, lines_of, ms, pct, register

_METHOD_TEXT = {
    "measured": "measured, mutex_wait_ms",
    "pre_destructor": "not logged by this code version; solved from the pre_destructor_ms gap",
    "clock": "not logged by this code version; estimated from the per-GPU queue of "
    "GPU_START..GPU_END and the holds",
}


def _model_text(gw: int | None, hold: float, wait: float) -> tuple[float | None, str]:
    """The steady-state queueing model: with gw workers saturating one GPU, wait ≈ (gw−1)×hold."""
    if not gw or gw < 2:
        return None, ""
    model = (gw - 1) * hold
    close = abs(wait - model) <= 0.25 * model
    verb = "matches" if close else "predicts"
    return model, f"the ({gw}−1) × {ms(hold)} = {ms(model)} queueing model {verb} it"


@register
class PreDestructorGap(Rule):
    """
    ## What it flags
    Calls whose `pre_destructor_ms` (Phases 4-11: function entry to the end of the epilogue) is
    at least `min_ratio` × their `gpu_total_ms`, and says what the gap consists of. Following the
    gap decomposition of the format reference (section 1.5):
    `pre_destructor − gpu_total ≈ setup_to_split + mutex wait + pre-stage setup +
    max(0, prep_msm + b_g2_msm − (mutex wait + gpu_total)) + epilogue`. The logged terms
    (setup, epilogue, pre-stage `total_ps_ms`) are subtracted; of the rest, whatever exceeds the
    CPU excess `max(0, prep_msm + b_g2_msm − gpu_total)` must be lock wait, because the CPU
    residual is zero once the wait outlasts the CPU work.

    ## Why it matters
    Code before March 13 does not log the GPU-mutex wait, so `pre_destructor_ms` far above
    `gpu_total_ms` is the only sign of it. In steady state with gw workers saturating one GPU,
    `pre_destructor_ms ≈ gw × lock hold time`: the Phase 10 single-proof test (gw=3) showed
    about 11-12 s against 3.8 s of kernels, i.e. workers queueing, not slow kernels.

    ## Example log lines
    ```
    CUZK_TIMING: gpu_tid=0 tail_msm_ms=125 gpu_total_ms=3790
    CUZK_TIMING: epilogue_ms=5 pre_destructor_ms=11520
    ```

    ## What to do
    If lock wait dominates, see `lock-wait` (CZ202): fewer workers per GPU or a run shape that
    lets workers overlap. If the CPU residual dominates, see `cpu-critical-path` (CZ301).

    ## Known false positives
    With gw=2 a ratio near 2 is the designed interlock (one worker waits while the other
    computes): when the lock wait is below `queue_ratio` × `gpu_total_ms` the finding is only an
    info and says so. Unlogged overheads
    (thread spawn/join, `msm_t` destructors, pre-stage cleanup, `cudaHostUnregister`) are a few
    tens of ms and land in the lock-wait share.
    """

    code = "CZ201"
    name = "pre-destructor-gap"
    area = "locking"
    severity = Severity.WARNING
    title = "Call time far above GPU time (pre_destructor_ms vs gpu_total_ms)"
    options = (
        Option(
            "queue_ratio",
            1.5,
            "lock wait / gpu_total_ms from which a lock-wait-dominated gap is queueing "
            "(warning); below it the gap is one call of interlock waiting (info)",
        ),
        Option(
            "min_ratio",
            1.5,
            "median pre_destructor_ms / median gpu_total_ms at or above which the rule fires",
        ),
    )
    evidence = {
        "pre_destructor_ms_median": "median `pre_destructor_ms`",
        "gpu_total_ms_median": "median `gpu_total_ms`",
        "gap_ms_median": "median of pre_destructor_ms − gpu_total_ms over the affected calls",
        "ratio": "pre_destructor_ms_median / gpu_total_ms_median",
        "setup_epilogue_ms_median": "median logged part of the gap: setup_to_split_ms + "
        "epilogue_ms + total_ps_ms",
        "cpu_residual_ms_median": "median CPU residual: prep_msm + b_g2_msm not hidden behind "
        "the lock wait and the kernels",
        "lock_wait_ms_median": "median inferred GPU-mutex wait",
        "lock_wait_share": "Σ lock wait / Σ gap over the affected calls",
        "dominant": "the largest part of the gap: lock_wait, cpu_residual or setup_epilogue",
        "gw": "GPU workers per device",
        "model_wait_ms": "(gw − 1) × gpu_total_ms_median: the steady-state queueing model",
        "wait_to_hold": "lock_wait_ms_median / gpu_total_ms_median",
    }

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        df = ctx.partitions
        pdm, g = num(df, "pre_destructor_ms"), num(df, "gpu_total_ms")
        both = pdm.notna() & g.notna() & (g > 0)
        total = int(both.sum())
        if not total:
            return
        # (Medians of ``total`` values each: numbers, not None.)
        med_pd, med_g = median(pdm[both]) or 0.0, median(g[both]) or 0.0
        ratio = med_pd / med_g
        min_ratio = ctx.options["min_ratio"]
        if ratio < min_ratio:
            return
        hit = both & (pdm >= min_ratio * g)
        lock = ctx.lock_wait()
        parts = {
            "lock_wait": float(lock.wait[hit].sum()),
            "cpu_residual": float(lock.cpu_residual[hit].sum()),
            "setup_epilogue": float(lock.known[hit].sum()),
        }
        gap_sum = float(lock.gap[hit].sum())
        dominant = max(parts, key=lambda k: parts[k])
        share = parts["lock_wait"] / gap_sum if gap_sum > 0 else None
        gap_med = median(lock.gap[hit])  # the same calls as the parts below
        wait_med = median(lock.wait[hit]) or 0.0
        model, model_txt = _model_text(ctx.facts.gw, med_g, wait_med)
        msg = (
            f"Median pre_destructor_ms {ms(med_pd)} is {ratio:.1f}× gpu_total_ms {ms(med_g)} "
            f"({int(hit.sum())} of {total} calls ≥ {min_ratio:g}×). Of the {ms(gap_med)} gap, "
            f"{ms(wait_med)} ({pct(share)}) is GPU-mutex wait (not logged by this code; solved "
            f"from the gap), {ms(median(lock.known[hit]))} setup and epilogue and "
            f"{ms(median(lock.cpu_residual[hit]))} CPU residual"
        )
        severity = Severity.WARNING
        wait_to_hold = wait_med / med_g
        if dominant == "lock_wait" and wait_to_hold < ctx.options["queue_ratio"]:
            severity = Severity.INFO
            msg += (
                f": lock wait dominates, but at {wait_to_hold:.1f}× gpu_total_ms it is about one "
                "call ahead — interlock waiting: one call computes while the next waits."
            )
            advice = "Nothing to fix unless latency per partition matters more than throughput."
        elif dominant == "lock_wait":
            gw = ctx.facts.gw
            who = f"{gw} workers queueing on one GPU" if gw and gw >= 2 else "workers queueing"
            msg += f": lock wait dominates — {who}"
            msg += f"; {model_txt}." if model_txt else "."
            advice = (
                "The kernels are not slow; calls wait for the GPU mutex. See lock-wait (CZ202): "
                "fewer workers per GPU, or concurrent proofs so the extra workers overlap."
            )
        elif dominant == "cpu_residual":
            msg += ": the CPU path (prep_msm + b_g2_msm) outlasting the kernels dominates."
            advice = "The CPU side is the critical path; see cpu-critical-path (CZ301)."
        else:
            msg += ": setup and epilogue dominate."
            advice = "Look at setup_to_split_ms, epilogue_ms and the pre-stage setup times."
        yield self.finding(
            severity,
            msg,
            {
                "affected": int(hit.sum()),
                "total": total,
                "pre_destructor_ms_median": med_pd,
                "gpu_total_ms_median": med_g,
                "gap_ms_median": gap_med,
                "ratio": ratio,
                "setup_epilogue_ms_median": median(lock.known[hit]),
                "cpu_residual_ms_median": median(lock.cpu_residual[hit]),
                "lock_wait_ms_median": wait_med,
                "lock_wait_share": share,
                "dominant": dominant,
                "gw": ctx.facts.gw,
                "model_wait_ms": model,
                "wait_to_hold": wait_to_hold,
            },
            lines=lines_of(df, hit),
            calls=calls_of(df, hit),
            advice=advice,
        )


@register
class LockWait(Rule):
    """
    ## What it flags
    Time calls spend blocked on the per-GPU C++ mutex. Where it comes from (`method`):

    - `measured`: `mutex_wait_ms` (main, March 13 on);
    - `pre_destructor`: solved from the `pre_destructor_ms` gap (Phases 4-11, see
      `pre-destructor-gap`);
    - `clock`: Phase 12 to March 6 log neither, so the wait is estimated from the clock. Calls
      of one GPU whose `GPU_START..GPU_END` intervals overlap serialise on its mutex; each
      holds it for its `gpu_total_ms` plus the work inside the lock around the GPU threads
      (spawn and join, `msm_t` destructors: about 7 ms; Phase 12 pre-staging: about 20 ms, or
      `total_ps_ms` where logged). Per GPU, in order of the lock requests (`GPU_START` + about
      1 ms + `setup_to_split_ms`, + about 5 ms of `cudaHostRegister` on pre-staging code), the
      queue is solved call by call: a call gets the lock when it asks or when the call ahead
      releases it. The clock caps it: a call releases the lock before its `GPU_END` and before
      its worker's next `GPU_START`. The estimate comes with bounds (`wait_ms_low`,
      `wait_ms_high`): low = the wait behind the call holding the lock at the request alone,
      with holds of `gpu_total_ms` only; high = the latest acquisition the clock allows. When
      no line maps workers to GPUs (a stderr-only capture), the workers sharing a mutex are
      found from the clock and the bounds cover every grouping that fits it.

    It tells harmless interlock waiting from waste:

    - *queueing* (warning): the median wait is at least `queue_ratio` × the lock hold time, i.e.
      calls queue behind more than one other call. With gw workers saturating one GPU the wait
      approaches (gw − 1) × hold: latency grows about gw× while the GPU still runs one call at
      a time, so the extra workers add no throughput.
    - *non_gpu_under_lock* (warning): `mutex_held_ms` exceeds `gpu_total_ms` by at least
      `held_excess_ms` and `held_ratio`×: work other than kernels runs under the lock.
    - *interlock* (info): waits of at least `min_wait_ms` but below `queue_ratio` hold times:
      one worker waits while the GPU runs the other's kernels. This is the Phase 8 design
      working, and harmless as long as at least `kernel_share` of the hold is kernel time;
      otherwise the message points at the holder's own barrier wait (`cpu-critical-path`).

    ## Why it matters
    Lock wait is included in `pre_destructor_ms` (V3-V7) and TIMELINE `gpu_ms`, and in the
    bench's "prove" time, so it inflates every per-partition GPU figure (Phase 8: 6.4-6.7 s
    `gpu_ms` against about 3.3 s of kernels at gw=2). The Phase 11 sweep shows the cost of more
    workers (c=20 j=15, all three interventions): average prove time 60 s (gw=2), 83 s (gw=3),
    105 s (gw=4) for 36.8, 37.2 and 37.4 s/proof.

    ## Example log lines
    ```
    CUZK_TIMING: pre_lock_cpu_ms=5 mutex_wait_ms=1260
    CUZK_TIMING: mutex_held_ms=941 total_start_fn_ms=2206
    CUZK_TIMING: epilogue_ms=5 pre_destructor_ms=11520
    ```

    ## What to do
    For queueing: use two workers per GPU (the default); more only add latency. Judge a
    multi-worker design with concurrent proofs, not a single proof. For non-GPU work under the
    lock: move destructors, frees and host synchronisation out of the locked region.

    ## Known false positives
    The waits solved from the `pre_destructor_ms` gap carry the unlogged overheads of the call
    (tens of ms). The `clock` estimate assumes one mutex per GPU and the lock order of the
    requests: on main-era logs with `mutex_wait_ms` hidden it is within a few ms of the
    measured wait (docs/architecture.md), but the pool-cache code of March 2-6 routed every
    partition through one shared mutex, where it underestimates the wait; a GPU-region line
    attributed to the wrong call shifts its hold. The mutex is not fair, so with gw=2 single
    waits above one hold time happen; the rule uses the median.
    """

    code = "CZ202"
    name = "lock-wait"
    area = "locking"
    severity = Severity.WARNING
    title = "Calls wait for the per-GPU mutex"
    options = (
        Option("min_wait_ms", 500, "median wait (ms) below which the rule stays silent"),
        Option(
            "queue_ratio",
            1.5,
            "median wait / hold time at or above which waiting is "
            "queueing (warning) rather than interlock (info)",
        ),
        Option(
            "held_ratio",
            1.3,
            "mutex_held_ms / gpu_total_ms at or above which (together "
            "with held_excess_ms) non-GPU work runs under the lock",
        ),
        Option(
            "held_excess_ms",
            200,
            "mutex_held_ms − gpu_total_ms (ms) needed for the non-GPU-under-lock warning",
        ),
        Option(
            "kernel_share",
            0.8,
            "share of the hold that must be kernel time (gpu_total − "
            "barrier wait) for interlock waiting to be called harmless",
            maximum=1.0,
        ),
    )
    evidence = {
        "kind": "list of: queueing, non_gpu_under_lock, interlock",
        "method": "measured | pre_destructor | clock: where the wait comes from",
        "wait_ms_median": "median lock wait",
        "wait_ms_low": "median of the per-call lower bounds of a `clock` estimate",
        "wait_ms_high": "median of the per-call upper bounds of a `clock` estimate",
        "wait_ms_p95": "95th percentile lock wait",
        "hold_ms": "median lock hold time: mutex_held_ms, else gpu_total_ms + total_ps_ms",
        "hold_source": "the field hold_ms comes from",
        "wait_to_hold": "wait_ms_median / hold_ms",
        "gw": "GPU workers per device",
        "model_wait_ms": "(gw − 1) × hold_ms: the steady-state queueing model",
        "call_ms_median": "median whole-call time (total_start_fn_ms, pre_destructor_ms or gpu_ms)",
        "wait_share": "wait_ms_median / call_ms_median",
        "mutex_held_ms_median": "median `mutex_held_ms` (main code only)",
        "held_to_gpu_total": "mutex_held_ms median / gpu_total_ms median",
        "gpu_util": "scheduler view: merged GPU_START..GPU_END utilisation of the run",
        "held_util": "lock-held view: Σ mutex_held_ms (else gpu_total_ms) / span",
        "kernel_util": "kernel view: Σ measured kernel stages / span",
        "kernel_share_of_hold": "(gpu_total_ms − barrier wait) / hold_ms: how much of the hold "
        "is kernel time",
    }

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        df = ctx.partitions
        o = ctx.options
        lock = ctx.lock_wait()
        if not lock.known_any:
            return
        w = lock.wait
        total = int(w.notna().sum())
        wmed = ctx.facts.lock_wait_ms or 0.0  # (the facts' median of ``w``, which has values)
        g = num(df, "gpu_total_ms")
        held = num(df, "mutex_held_ms")
        held_med = ctx.median("mutex_held_ms")
        if held_med is not None:
            hold, hold_src = held_med, "mutex_held_ms"
        else:
            hold = median(g + num(df, "total_ps_ms").fillna(0)) or 0.0
            hold_src = "gpu_total_ms"
        if hold <= 0:
            return
        gmed = ctx.median("gpu_total_ms")
        ratio = wmed / hold
        gw = ctx.facts.gw
        model, model_txt = _model_text(gw, hold, wmed)
        call_field = next(
            (c for c in ("total_start_fn_ms", "pre_destructor_ms", "gpu_ms") if has(df, c)), None
        )
        call = ctx.median(call_field) if call_field else None
        held_ratio = held_med / gmed if held_med is not None and gmed else None
        excess = held - g
        excess_med = median(excess) if held_ratio is not None else None
        non_gpu = (
            held_ratio is not None
            and held_ratio >= o["held_ratio"]
            and excess_med is not None
            and excess_med >= o["held_excess_ms"]
        )
        kinds: list[str] = []
        texts: list[str] = []
        how = _METHOD_TEXT[lock.method]
        bounds = lock.summary() if lock.method == "clock" else {"low": None, "high": None}
        if lock.method == "clock":
            how += f", between {ms(bounds['low'])} and {ms(bounds['high'])}"
        waiting = w >= o["min_wait_ms"]
        if wmed >= o["min_wait_ms"] and ratio >= o["queue_ratio"]:
            kinds.append("queueing")
            if gw and gw >= 2:
                who = f"with gw={gw} workers on one GPU each call queues behind the other {gw - 1}"
                tail = (
                    f", so per-call latency grows about {gw}× while the GPU still runs one call "
                    "at a time: no throughput gain"
                )
            else:
                who, tail = "calls queue behind more than one other call", ""
            texts.append(
                f"Workers wait a median {ms(wmed)} for the GPU mutex ({how}), {ratio:.1f}× the "
                f"{ms(hold)} the lock is held per call: {who}"
                + (f" ({model_txt})" if model_txt else "")
                + tail
                + "."
            )
        if non_gpu:
            kinds.append("non_gpu_under_lock")
            texts.append(
                f"The lock is held a median {ms(held_med)} per call but the kernels "
                f"take {ms(gmed)} ({held_ratio:.1f}×): {ms(excess_med)} of non-GPU "
                "work runs under the lock and every waiting worker pays for it."
            )
        barrier = median(barrier_estimate(df, lock)[0])
        kernel_share = (gmed - (barrier or 0.0)) / hold if gmed else None
        if not kinds and wmed >= o["min_wait_ms"]:
            kinds.append("interlock")
            util = ctx.facts.held_util
            if kernel_share is not None and kernel_share < o["kernel_share"]:
                holder = (
                    f"while one worker waits, the holder spends {pct(1 - kernel_share)} of its "
                    f"{ms(hold)} hold waiting for its own CPU prep (see cpu-critical-path)"
                )
            else:
                holder = (
                    "while one worker waits the GPU runs another worker's kernels (lock held "
                    f"{pct(util)} of the span). Harmless for throughput"
                )
            texts.append(
                f"Workers wait a median {ms(wmed)} for the GPU mutex ({how}), {ratio:.1f}× the "
                f"{ms(hold)} hold: interlock waiting — {holder}."
            )
        if not kinds:
            return
        warn = any(k != "interlock" for k in kinds)
        mask = waiting if kinds != ["non_gpu_under_lock"] else excess >= o["held_excess_ms"]
        advice = []
        if "queueing" in kinds:
            advice.append(
                "Workers beyond two per GPU add latency, not throughput, when they share one "
                "mutex: use gpu_workers_per_device = 2 (Phase 11: 36.8, 37.2 and 37.4 s/proof "
                "at gw=2, 3 and 4, with average prove time 60 → 83 → 105 s), and judge a "
                "multi-worker design with concurrent proofs."
            )
        if "non_gpu_under_lock" in kinds:
            advice.append("Move destructors, frees and host syncs out of the locked region.")
        if kinds == ["interlock"]:
            if kernel_share is not None and kernel_share < o["kernel_share"]:
                advice.append("Shorten the holder's barrier wait (see cpu-critical-path).")
            else:
                advice.append("Nothing to fix: the wait overlaps another worker's kernels.")
        yield self.finding(
            Severity.WARNING if warn else Severity.INFO,
            " ".join(texts),
            {
                "affected": int(mask.sum()),
                "total": total,
                "kind": kinds,
                "method": lock.method,
                "wait_ms_median": wmed,
                "wait_ms_low": bounds["low"],
                "wait_ms_high": bounds["high"],
                "wait_ms_p95": float(w.quantile(0.95)),
                "hold_ms": hold,
                "hold_source": hold_src,
                "wait_to_hold": ratio,
                "gw": gw,
                "model_wait_ms": model,
                "call_ms_median": call,
                "wait_share": wmed / call if call else None,
                "mutex_held_ms_median": held_med,
                "held_to_gpu_total": held_ratio,
                "gpu_util": ctx.facts.gpu_util,
                "held_util": ctx.facts.held_util,
                "kernel_util": ctx.facts.kernel_util,
                "kernel_share_of_hold": kernel_share,
            },
            lines=lines_of(df, mask),
            calls=calls_of(df, mask),
            advice=" ".join(advice),
        )
