"""Run-shape rules: whether the run can measure what a benchmark is usually meant to measure."""

from __future__ import annotations

from collections.abc import Iterator

from cuzk_diag.records import Finding, Severity
from cuzk_diag.rules.base import Option, Rule, RuleContext, register

SUGGESTED_RUN = "cuzk-bench batch -t porep --c1 c1.json -c 15 -j 10"


@register
class BenchmarkShape(Rule):
    """
    ## What it flags
    Runs whose shape limits what they can show:

    - *single_proof_contended* (warning): one proof with two or more GPU workers per GPU. All
      workers take partitions of the same proof and queue on one GPU mutex: the run measures
      latency under maximum contention with no overlap between proofs, not throughput, so it
      cannot show the benefit of a multi-worker design.
    - *single_proof* (info): one proof with one worker per GPU; its s/proof includes the whole
      pipeline fill and drain.
    - *sequential_proofs* (info): several proofs but never two in flight at once (`-j 1`),
      with two or more workers per GPU.
    - *few_partitions* (info): fewer than `min_partitions` GPU calls, too few for stable
      medians and percentiles.

    ## Why it matters
    The Phase 10 test ran a single proof (c=1 j=1) with gw=3: 72.5 s, against 32.1 s for the
    Phase 9 single proof at gw=1, largely because three workers queued on one GPU for the same
    proof's ten partitions. The design could only be judged with concurrent proofs, where
    workers overlap different proofs' partitions (its own plan: gw=3 with c=3 j=1, c=10 j=5,
    c=15 j=10).

    ## Example log lines
    ```
    2026-02-19T21:02:11.530127Z  INFO cuzk_core::engine: initializing GPU workers num_gpus=1 gpu_workers_per_device=3 total_workers=3 gpus=[0]
    === Batch Benchmark ===
    count:       1
    concurrency: 1
    ```

    ## What to do
    Measure throughput with concurrent proofs, e.g.
    `cuzk-bench batch -t porep --c1 c1.json -c 15 -j 10` (Phase 9: 42.9 s/proof at gw=1;
    Phase 11, c=20 j=15 at gw=2: 36.7 s/proof), on the candidate and on the baseline build with
    the same shape. Keep single-proof runs for correctness checks and latency.

    ## Known false positives
    A single-proof run meant to measure latency is fine as it is. Without TIMELINE lines or
    bench output the number of proofs is unknown and the rule says nothing.
    """  # noqa: E501 (example log lines are quoted verbatim)

    code = "CZ501"
    name = "benchmark-shape"
    area = "shape"
    severity = Severity.WARNING
    title = "Run shape cannot show throughput"
    options = (
        Option("min_partitions", 20, "GPU calls below which statistics are called unstable"),
    )
    evidence = {
        "kind": "list of: single_proof_contended, single_proof, sequential_proofs, few_partitions",
        "proofs": "proofs (jobs) in the log",
        "partitions": "GPU calls in the log",
        "gw": "GPU workers per device",
        "gpus": "GPU ordinals",
        "bench_count": "cuzk-bench `-c` (count), if its output is in the input",
        "bench_concurrency": "cuzk-bench `-j` (concurrency), if its output is in the input",
        "max_proofs_in_flight": "most proofs whose TIMELINE spans overlapped",
        "suggested_run": "a run that measures throughput",
    }

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        f = ctx.facts
        gw = f.gw or 0
        kinds: list[str] = []
        texts: list[str] = []
        if f.proofs == 1 and gw >= 2:
            kinds.append("single_proof_contended")
            texts.append(
                f"A single proof ({f.partitions} partitions) with gw={gw} workers per GPU: all "
                f"{gw} workers take partitions of the same proof and queue on one GPU mutex, so "
                "the run measures latency under maximum contention, not throughput — a "
                "single-proof run cannot show the benefit of a multi-worker design."
            )
        elif f.proofs == 1:
            kinds.append("single_proof")
            texts.append(
                "A single proof: its s/proof includes the whole pipeline fill and drain and "
                "says little about throughput."
            )
        elif (
            f.proofs is not None
            and f.proofs > 1
            and gw >= 2
            and (f.bench_concurrency == 1 or f.max_proofs_in_flight == 1)
        ):
            kinds.append("sequential_proofs")
            texts.append(
                f"{f.proofs} proofs ran one at a time: the {gw} workers per GPU only overlap "
                "partitions of the same proof."
            )
        if 0 < f.partitions < ctx.options["min_partitions"]:
            kinds.append("few_partitions")
            texts.append(
                f"Only {f.partitions} GPU calls: too few for stable medians and percentiles."
            )
        if not kinds:
            return
        sev = Severity.WARNING if "single_proof_contended" in kinds else Severity.INFO
        yield self.finding(
            sev,
            " ".join(texts),
            {
                "affected": f.partitions,
                "total": f.partitions,
                "kind": kinds,
                "proofs": f.proofs,
                "partitions": f.partitions,
                "gw": f.gw,
                "gpus": f.gpus,
                "bench_count": f.bench_count,
                "bench_concurrency": f.bench_concurrency,
                "max_proofs_in_flight": f.max_proofs_in_flight,
                "suggested_run": SUGGESTED_RUN,
            },
            advice=(
                f"Measure throughput with concurrent proofs, e.g. `{SUGGESTED_RUN}` (Phase 9: "
                "42.9 s/proof at gw=1; Phase 11 c=20 j=15 at gw=2: 36.7 s/proof), on the "
                "candidate and the baseline with the same shape; keep single-proof runs for "
                "correctness and latency."
            ),
        )
