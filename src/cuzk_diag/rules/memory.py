"""Memory rules: VRAM pre-staging fallbacks, unpinned host memory, deallocation backlog."""

from __future__ import annotations

from collections.abc import Iterator

from cuzk_diag.facts import PRESTAGE_FALLBACKS, is_one_of, is_value, median, num, present
from cuzk_diag.records import Finding, Severity
from cuzk_diag.rules.base import Option, Rule, RuleContext, calls_of, lines_of, ms, pct, register

#: ``SAFETY_MARGIN = (size_t)512 << 20`` in groth16_cuda.cu (V4-V8).
SAFETY_MARGIN_MIB = 512


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


@register
class PrestageFallback(Rule):
    """
    ## What it flags
    Calls whose VRAM pre-staging (Phase 9-12 code, V4-V8) did not happen:
    `prestage_setup=skip_vram` (free VRAM below the buffers plus the 512 MiB margin),
    `prestage_setup=fallback` (a pre-stage CUDA call failed), a `prestage_vram` line with no
    outcome line (`silent`: `cudaMalloc` ran out of memory after the check passed), or
    `host_register=fallback` (`cudaHostRegister` of a/b/c failed, so pre-staging was not tried).
    The severity is error when more than `error_share` of the calls that tried pre-staging fell
    back, warning otherwise.

    ## Why it matters
    Pre-staging uploads a, b and c to VRAM ahead of the kernels. A call that falls back uses the
    original path: `Dmalloc` of `d_a` and unpinned host-to-device copies *inside* the GPU lock,
    so its `ntt_msm_h_ms` returns to Phase 8 values (about 2.4 s instead of 0.7 s) and every
    other worker waits that much longer for the lock. Pre-staging needs `d_a` 4 GiB + `d_bc`
    8 GiB = 12 GiB (32 GiB PoRep) plus the margin, i.e. 12,800 MiB free: on a 16 GB card with
    several workers per GPU another worker's buffers are usually still resident. In the Phase 10
    single-proof test (gw=3) every partition fell back (`skip_vram`) and the proof took 72.5 s,
    against 32.1 s for Phase 9 with one worker per GPU.

    ## Example log lines
    ```
    CUZK_TIMING: prestage_vram free_mib=9870 usable_mib=9358 need_da_mib=4096 need_dbc_mib=8192 total_mib=12288
    CUZK_TIMING: prestage_setup=skip_vram
    CUZK_TIMING: host_register=fallback err=2
    ```

    ## What to do
    Give each call the VRAM it needs: run one worker per GPU (`gpus.gpu_workers_per_device = 1`)
    when pre-staging matters, or use a GPU with room for the buffers of every worker. The
    pre-staging design was replaced in b5962135 (persistent per-GPU `d_a`, pool-cached `d_b`);
    later code does not need it. For `host_register` fallbacks look at the CUDA error code.

    ## Known false positives
    Another process on the same GPU (a second daemon, a desktop session, any CUDA context)
    lowers free VRAM and causes fallbacks that the daemon's configuration did not. The free
    figure is read after `cudaMemPoolTrimTo` when the lock is taken; memory another worker frees
    a moment later does not help that call.
    """  # noqa: E501 (example log lines are quoted verbatim)

    code = "CZ101"
    name = "prestage-fallback"
    area = "memory"
    severity = Severity.ERROR
    title = "VRAM pre-staging fell back to the in-lock upload path"
    options = (
        Option(
            "error_share",
            0.5,
            "share of pre-staging calls that must fall back for an error (more than this); "
            "fewer fallbacks give a warning",
            maximum=1.0,
        ),
    )
    evidence = {
        "share": "affected / total",
        "by_kind": "fallbacks per kind: skip_vram, fallback, silent, host_register",
        "prestaged": "calls with `prestage_setup=ok`",
        "free_mib_median": "median `free_mib` of the fallen-back calls",
        "needed_mib": "median `total_mib` (d_a + d_bc) the calls needed",
        "margin_mib": "the code's 512 MiB safety margin",
        "required_free_mib": "needed_mib + margin_mib: free VRAM pre-staging requires",
        "shortfall_mib": "required_free_mib − free_mib_median",
        "host_register_errors": "CUDA error codes of `host_register=fallback` lines",
    }

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        df = ctx.partitions
        tried = (
            present(df, "prestage_setup")
            | present(df, "host_register")
            | num(df, "free_mib").notna()
        )
        total = int(tried.sum())
        if not total:
            return
        by_kind = {k: int(is_value(df, "prestage_setup", k).sum()) for k in PRESTAGE_FALLBACKS}
        hreg_fell = is_value(df, "host_register", "fallback")
        by_kind["host_register"] = int(hreg_fell.sum())
        fell = is_one_of(df, "prestage_setup", PRESTAGE_FALLBACKS) | hreg_fell
        affected = int(fell.sum())
        if not affected:
            return
        share = affected / total
        free = median(num(df, "free_mib")[fell])
        needed = median(num(df, "total_mib")[fell]) or median(num(df, "total_mib"))
        required = needed + SAFETY_MARGIN_MIB if needed is not None else None
        shortfall = required - free if required is not None and free is not None else None
        errs = sorted({int(e) for e in num(df, "host_register_err").dropna()})
        kinds = ", ".join(f"{n} {k}" for k, n in by_kind.items() if n)
        who = (
            f"Every partition ({affected} of {total})"
            if affected == total
            else f"{affected} of {total} partitions ({pct(share)})"
        )
        msg = f"{who} fell back from VRAM pre-staging ({kinds})"
        if free is not None and required is not None and needed is not None:
            if free < required:
                msg += (
                    f": median free VRAM {free:,.0f} MiB < {required:,.0f} MiB needed "
                    f"({needed:,.0f} MiB of buffers + {SAFETY_MARGIN_MIB} MiB margin)"
                )
            else:
                # Enough VRAM was free: the fallbacks are CUDA failures, not a shortage.
                msg += (
                    f": median free VRAM {free:,.0f} MiB was enough for the "
                    f"{required:,.0f} MiB needed, so CUDA calls failed (prestage_setup=fallback, "
                    "host_register=fallback or a silent allocation failure), not VRAM"
                )
        msg += ", so their NTT inputs were allocated and uploaded inside the GPU lock."
        sev = Severity.ERROR if share > ctx.options["error_share"] else Severity.WARNING
        yield self.finding(
            sev,
            msg,
            {
                "affected": affected,
                "total": total,
                "share": share,
                "by_kind": by_kind,
                "prestaged": int(is_value(df, "prestage_setup", "ok").sum()),
                "free_mib_median": free,
                "needed_mib": needed,
                "margin_mib": SAFETY_MARGIN_MIB,
                "required_free_mib": required,
                "shortfall_mib": shortfall,
                "host_register_errors": errs,
            },
            lines=lines_of(df, fell),
            calls=calls_of(df, fell),
            advice=(
                "Each worker needs about 12 GiB of free VRAM plus the 512 MiB margin when it "
                "takes the lock; with several workers per 16 GB GPU that is rarely there. Run "
                "one worker per GPU for pre-staged code, or move to code from b5962135 on "
                "(persistent d_a, pool-cached d_b), which does not pre-stage."
            ),
        )


@register
class UnpinnedHostMemory(Rule):
    """
    ## What it flags
    Partitions whose a/b/c vectors were in pageable (unpinned) host memory: the tracing warning
    `pinned pool checkout FAILED — falling back to unpinned` (main code), or a
    `CUZK_NTT_H ntt_kernels` time of at least `ntt_kernels_ms` (V9 on). With pinned memory the
    copies are asynchronous and `ntt_kernels` is a few ms; with pageable memory the host-to-device
    copies block the GPU thread inside that interval. Warning when more than `warn_share` of the
    partitions are affected, info otherwise.

    ## Why it matters
    An unpinned call spends seconds copying 12 GiB over PCIe at pageable speed while holding the
    GPU lock. The pinned pool commit (48dccd93) reports NTT+H2D dropping from 2-14 s to 0 ms per
    partition and total GPU time from 8-19 s to about 950 ms.

    ## Example log lines
    ```
    2026-03-13T20:41:06.118034Z  WARN cuzk_core::pipeline: pinned pool checkout FAILED — falling back to unpinned num_constraints=130278869 pool_free=0 pool_total_gib=48
    CUZK_NTT_H: d_b_alloc=0ms ntt_kernels=2315ms coset_intt_sync=301ms msm_init=0ms msm_invoke=148ms msm_dtor=1ms total=2765ms
    ```

    ## What to do
    Keep the partitions in flight (synthesis workers plus the GPU queue) within what the pinned
    pool holds: lower synthesis concurrency (`pipeline.max_parallel_synthesis`) or give the host
    more free memory for the pool.

    ## Known false positives
    The first call on each GPU also allocates the 8 GiB `d_b` (see `d_b_alloc`), which does not
    affect `ntt_kernels`; a single slow call after start-up can be page-cache noise.
    """  # noqa: E501 (example log lines are quoted verbatim)

    code = "CZ102"
    name = "unpinned-host-memory"
    area = "memory"
    severity = Severity.WARNING
    title = "Host-to-device copies from unpinned memory"
    options = (
        Option(
            "ntt_kernels_ms",
            100,
            "`ntt_kernels` time (ms) at or above which a call counts as an unpinned upload",
        ),
        Option(
            "warn_share",
            0.1,
            "share of partitions above which the finding is a warning",
            maximum=1.0,
        ),
    )
    evidence = {
        "pinned_fallback": "`pinned pool checkout FAILED` warnings",
        "slow_ntt_kernels": "partitions with `ntt_kernels_ms` >= the threshold",
        "ntt_kernels_ms_median": "median `ntt_kernels_ms` of those partitions",
        "ntt_kernels_ms_median_all": "median `ntt_kernels_ms` of all partitions",
        "threshold_ms": "the `ntt_kernels_ms` option",
    }

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        df = ctx.partitions
        fallbacks = int(ctx.info.warnings.get("pinned_fallback", 0))
        ntt = num(df, "ntt_kernels_ms")
        thr = ctx.options["ntt_kernels_ms"]
        slow = ntt >= thr
        n_slow = int(slow.sum())
        if not fallbacks and not n_slow:
            return
        total = len(df)
        affected = min(total, max(fallbacks, n_slow)) if total else max(fallbacks, n_slow)
        share = affected / total if total else 1.0
        parts = []
        if fallbacks:
            parts.append(f"{fallbacks} pinned-pool checkout failure(s)")
        if n_slow:
            parts.append(
                f"{n_slow} partition(s) with ntt_kernels ≥ {ms(thr)} "
                f"(median {ms(median(ntt[slow]))} vs {ms(median(ntt))} overall)"
            )
        sev = Severity.WARNING if share > ctx.options["warn_share"] else Severity.INFO
        yield self.finding(
            sev,
            f"{_sentence(' and '.join(parts))}: about {affected} of {total} partitions "
            "copied a/b/c from pageable host memory inside the GPU lock.",
            {
                "affected": affected,
                "total": total,
                "pinned_fallback": fallbacks,
                "slow_ntt_kernels": n_slow,
                "ntt_kernels_ms_median": median(ntt[slow]),
                "ntt_kernels_ms_median_all": median(ntt),
                "threshold_ms": thr,
            },
            lines=[*ctx.info.warning_lines.get("pinned_fallback", []), *lines_of(df, slow)],
            calls=calls_of(df, slow),
            advice=(
                "Keep the partitions in flight within what the pinned pool holds (lower "
                "pipeline.max_parallel_synthesis) or free host memory for the pool."
            ),
        )


@register
class AsyncDeallocBacklog(Rule):
    """
    ## What it flags
    `async_dealloc_ms` (the detached thread that frees the split vectors and tail-MSM bases
    after each call) taking longer than the run's interval between calls: the median dealloc
    time exceeds `backlog_ratio` × (GPU span / calls), so deallocation threads pile up. Info
    when the median is merely above `slow_ms`. Runs with fewer than `min_calls` dealloc lines
    are not judged.

    ## Why it matters
    The dealloc thread returns tens of GB of host memory per batch. Phase 11 (39387fbe) puts
    it behind a process-wide `dealloc_mtx`; the lock wait is not in `async_dealloc_ms`, so a
    backlog shows only as dealloc times close to or above the call interval. A backlog keeps
    host memory allocated longer and, before Phase 11, several concurrent frees compete for
    memory bandwidth with synthesis (Phase 11 measured 0.5 s → 1.7 s per dealloc with
    `gpu_threads=32`).

    ## Example log lines
    ```
    CUZK_TIMING: async_dealloc_ms=1702
    ```

    ## What to do
    Check host memory pressure (swap, THP compaction) and synthesis concurrency; with the
    backlog persistent, lower the number of partitions in flight.

    ## Known false positives
    Short runs: with few calls the interval estimate is coarse. The V1-V6 dealloc thread has no
    mutex, so concurrent frees overlap without a backlog.
    """

    code = "CZ103"
    name = "async-dealloc-backlog"
    area = "memory"
    severity = Severity.WARNING
    title = "Asynchronous deallocation slower than the call rate"
    options = (
        Option(
            "backlog_ratio",
            1.0,
            "median async_dealloc_ms / call interval at or above "
            "which deallocation is a backlog (warning)",
        ),
        Option("slow_ms", 1000, "median async_dealloc_ms at or above which an info is given"),
        Option("min_calls", 5, "calls needed before the rule judges the interval"),
    )
    evidence = {
        "async_dealloc_ms_median": "median `async_dealloc_ms`",
        "async_dealloc_ms_p95": "95th percentile `async_dealloc_ms`",
        "call_interval_ms": "GPU span / calls: how often a new dealloc thread starts",
        "ratio": "async_dealloc_ms_median / call_interval_ms",
    }

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        df = ctx.partitions
        d = num(df, "async_dealloc_ms").dropna()
        if len(d) < ctx.options["min_calls"]:
            return
        med = float(d.median())
        calls = sum(u.calls for u in ctx.facts.per_gpu)
        span = max((u.span_ms for u in ctx.facts.per_gpu), default=0.0)
        interval = span / calls if calls and span > 0 else None
        ratio = med / interval if interval else None
        if ratio is not None and ratio >= ctx.options["backlog_ratio"]:
            sev = Severity.WARNING
            msg = (
                f"Median async_dealloc_ms {ms(med)} is {ratio:.1f}× the {ms(interval)} between "
                "calls: deallocation threads start faster than they finish and pile up."
            )
        elif med >= ctx.options["slow_ms"]:
            sev = Severity.INFO
            msg = f"Median async_dealloc_ms is {ms(med)} (p95 {ms(float(d.quantile(0.95)))})."
        else:
            return
        mask = num(df, "async_dealloc_ms") >= (interval or ctx.options["slow_ms"])
        yield self.finding(
            sev,
            msg,
            {
                "affected": int(mask.sum()),
                "total": len(d),
                "async_dealloc_ms_median": med,
                "async_dealloc_ms_p95": float(d.quantile(0.95)),
                "call_interval_ms": interval,
                "ratio": ratio,
            },
            lines=lines_of(df, mask),
            calls=calls_of(df, mask),
            advice=(
                "Look for host memory pressure (swap, page compaction) and reduce the partitions "
                "in flight if the backlog persists."
            ),
        )
