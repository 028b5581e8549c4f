"""Failure rules: proofs and partitions that did not complete, and why."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from cuzk_diag.facts import is_value
from cuzk_diag.records import Finding, Severity
from cuzk_diag.rules.base import Option, Rule, RuleContext, calls_of, lines_of, register

_OOM_RE = re.compile(
    r"out of memory|\bOOM\b|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY", re.I
)
_CUDA_RE = re.compile(r"\bcuda", re.I)
_SELF_CHECK_RE = re.compile(r"self-check FAILED", re.I)


def classify(failure: dict[str, Any]) -> str:
    """oom | cuda | self_check | the failure's own kind (e.g. partition_gpu_failed)."""
    msg = " ".join(str(failure.get(k) or "") for k in ("message", "error"))
    kind = str(failure.get("kind") or "")
    if "self_check" in kind or _SELF_CHECK_RE.search(msg):
        return "self_check"
    if _OOM_RE.search(msg):
        return "oom"
    if _CUDA_RE.search(msg):
        return "cuda"
    return kind or "error"


def _example(failure: dict[str, Any]) -> str:
    """A failure line's message with its error field (where the cause is), as one text."""
    msg, err = failure.get("message"), failure.get("error")
    if msg and err:
        return f"{msg}: {err}"
    return str(msg or err or failure.get("kind"))


@register
class ProvingFailures(Rule):
    """
    ## What it flags
    Anything that failed: partitions whose status is `failed`, proofs (jobs) marked failed,
    failure lines the parser collected (`partition GPU proving failed`, `GPU prove start
    failed`, `skipping GPU prove for failed partitioned job`, the PoRep self-check failure,
    ERROR-level tracing lines), CUDA out-of-memory and other CUDA errors, and failed proofs in
    the cuzk-bench summary. Error when a partition, proof or self-check failed or an
    out-of-memory occurred; warning when only warning-level failure lines were found. The
    evidence quotes the first `max_examples` failure messages.

    ## Why it matters
    A failed partition fails its whole proof, and timing statistics of a run with failures
    describe a different workload. Out-of-memory failures mark a configuration past the
    machine's limits (Phase 9 at c=30 j=20 and Phase 10 at c=3 j=3 both crashed with OOM). A
    self-check failure means the proof was not returned to the caller.

    ## Example log lines
    ```
    2026-03-13T20:45:02.118034Z ERROR cuzk_core::engine: partition GPU proving failed error=CUDA error: out of memory job_id=0b1e6c52-7d0f-4b8e-9d51-3f6a2c9e8a41 partition=4
    2026-03-13T20:45:09.501211Z ERROR cuzk_core::engine: Phase 7: PoRep proof self-check FAILED — proof will NOT be returned to caller
      [3/20] FAILED — 12.4s (prove=0 ms, queue=0 ms)
    ```

    ## What to do
    Fix failures before reading performance numbers. For out-of-memory errors lower the
    concurrency (proofs in flight, partition or synthesis workers, workers per GPU) or check
    what else holds VRAM and host memory. For self-check failures keep the log and the inputs:
    that is a correctness bug.

    ## Known false positives
    Jobs cancelled on purpose show up as failed partitions. `skipping ... for failed job` lines
    are consequences of an earlier failure, not separate ones.
    """  # noqa: E501 (example log lines are quoted verbatim)

    code = "CZ601"
    name = "proving-failures"
    area = "failures"
    severity = Severity.ERROR
    title = "Proofs or partitions failed"
    options = (Option("max_examples", 3, "failure messages quoted in the evidence"),)
    evidence = {
        "failed_partitions": "partitions with status failed",
        "failed_proofs": "proofs (jobs) that failed",
        "bench_failed": "failed proofs in the cuzk-bench summary",
        "failure_lines": "failure lines found in the log",
        "by_kind": "failure lines by kind: oom, cuda, self_check, or the parser's kind",
        "examples": "the first failure messages (with their error field)",
    }

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        df = ctx.partitions
        f = ctx.facts
        failed = is_value(df, "status", "failed")
        n_failed = int(failed.sum())
        bench_failed = int(ctx.info.bench.get("failed") or 0) if ctx.info.bench else 0
        failures = list(ctx.info.failures)
        kinds = Counter(classify(x) for x in failures)
        if not (n_failed or f.proofs_failed or bench_failed or failures):
            return
        hard = bool(
            n_failed or f.proofs_failed or bench_failed or kinds["oom"] or kinds["self_check"]
        )
        hard = hard or any(str(x.get("level", "ERROR")).upper() == "ERROR" for x in failures)
        parts = []
        if n_failed:
            parts.append(f"{n_failed} of {len(df)} partitions failed")
        if f.proofs_failed:
            parts.append(f"{f.proofs_failed} of {f.proofs} proofs failed")
        if bench_failed:
            parts.append(f"cuzk-bench reports {bench_failed} failed proof(s)")
        if failures:
            parts.append(
                f"{len(failures)} failure line(s) ("
                + ", ".join(f"{n} {k}" for k, n in kinds.most_common())
                + ")"
            )
        examples = [_example(x)[:200] for x in failures[: ctx.options["max_examples"]]]
        msg = "; ".join(parts) + "."
        if examples:
            msg += f" First: {examples[0]}"
        advice = "Fix the failures before reading the performance figures."
        if kinds["oom"]:
            advice += (
                " Out of memory: lower the concurrency (proofs in flight, synthesis or GPU "
                "workers) or find what else holds the memory."
            )
        if kinds["self_check"]:
            advice += " A self-check failure is a correctness bug: keep the log and inputs."
        yield self.finding(
            Severity.ERROR if hard else Severity.WARNING,
            msg,
            {
                "affected": n_failed,
                "total": len(df),
                "failed_partitions": n_failed,
                "failed_proofs": f.proofs_failed,
                "bench_failed": bench_failed,
                "failure_lines": len(failures),
                "by_kind": dict(kinds),
                "examples": examples,
            },
            lines=[*(int(x["line"]) for x in failures if x.get("line")), *lines_of(df, failed)],
            calls=calls_of(df, failed),
            advice=advice,
        )
