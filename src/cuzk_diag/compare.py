"""Side-by-side comparison of two runs: every stage's median and p95, the change, and whether the
change is statistically real (Mann-Whitney U on the per-partition values), plus run-level
numbers and the findings that appear in only one run.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuzk_diag.gate import (
    DURATION_FIELDS,
    KERNEL_FIELD,
    QUEUE_WAIT_FIELD,
    RunMetrics,
    RunShape,
    check_shapes,
    metrics_from_analysis,
    require_calls,
)
from cuzk_diag.records import Finding, Severity
from cuzk_diag.sanitize import md_code, md_text
from cuzk_diag.stats import holm, mann_whitney_u, relative_change

#: Run-level metrics shown under the stage table, in this order, when either run has them.
RUN_ROWS: tuple[str, ...] = (
    "s_per_proof",
    "proofs_per_min",
    "proofs",
    "partitions",
    "calls.n",
    "calls.failed",
    "util_merged",
    "util_held",
    "util_kernel",
    "prestage_fallback.rate",
    "findings.error",
    "findings.warning",
)


@dataclass(frozen=True, slots=True)
class StageRow:
    """One stage (timing column) in both runs."""

    field: str
    n_base: int
    n_cand: int
    base_p50: float | None
    cand_p50: float | None
    base_p95: float | None
    cand_p95: float | None
    base_mean: float | None
    cand_mean: float | None
    delta_p50: float | None  # relative change of the median, candidate over baseline
    delta_p95: float | None
    delta_mean: float | None
    shift: float | None  # Hodges-Lehmann shift, candidate minus baseline, in ms
    p_value: float | None  # two-sided Mann-Whitney U
    p_adjusted: float | None  # Holm-adjusted over every tested stage of the comparison
    rank_biserial: float | None  # > 0: candidate values tend to be larger (slower)
    cles: float | None  # P(candidate > baseline) + ties / 2
    significant: bool

    @property
    def verdict(self) -> str:
        """slower | faster | same | only-baseline | only-candidate."""
        if self.n_cand == 0:
            return "only-baseline"
        if self.n_base == 0:
            return "only-candidate"
        # The direction is the test's own: the sign of the rank-biserial effect (U above or
        # below its null mean). The Hodges-Lehmann shift is an estimate of the size, and is 0
        # whenever most values of both runs are equal (a queue wait that is usually 0), so it
        # cannot say which way a significant difference goes.
        r = self.rank_biserial or 0.0
        if not self.significant or r == 0.0:
            return "same"
        return "slower" if r > 0 else "faster"

    def to_dict(self) -> dict[str, Any]:
        d = {
            k: _clean(getattr(self, k))
            for k in (
                "field",
                "n_base",
                "n_cand",
                "base_p50",
                "cand_p50",
                "base_p95",
                "cand_p95",
                "base_mean",
                "cand_mean",
                "delta_p50",
                "delta_p95",
                "delta_mean",
                "shift",
                "p_value",
                "p_adjusted",
                "rank_biserial",
                "cles",
                "significant",
            )
        }
        d["verdict"] = self.verdict
        return d


@dataclass(frozen=True, slots=True)
class RunRow:
    """A run-level number in both runs (no per-partition samples, so no test)."""

    metric: str
    base: float | None
    cand: float | None
    delta: float | None  # relative change

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "base": _clean(self.base),
            "cand": _clean(self.cand),
            "delta": _clean(self.delta),
        }


@dataclass(frozen=True, slots=True)
class FindingDiff:
    """A finding code and how often it fired in each run."""

    code: str
    name: str
    severity: Severity
    title: str
    base_count: int
    cand_count: int

    @property
    def status(self) -> str:
        """new (candidate only) | gone (baseline only) | both."""
        if self.base_count == 0:
            return "new"
        if self.cand_count == 0:
            return "gone"
        return "both"

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": str(self.severity),
            "title": self.title,
            "status": self.status,
            "base_count": self.base_count,
            "cand_count": self.cand_count,
        }


@dataclass(frozen=True)
class Comparison:
    """Two runs side by side."""

    base_label: str
    cand_label: str
    base_shape: RunShape
    cand_shape: RunShape
    shape_differences: tuple[tuple[str, Any, Any], ...]
    alpha: float
    stages: tuple[StageRow, ...]
    runs: tuple[RunRow, ...]
    findings: tuple[FindingDiff, ...] = field(default=())
    # the per-call samples compared (baseline, candidate), for reports that draw them
    samples: tuple[Any, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def findings_new(self) -> list[FindingDiff]:
        return [f for f in self.findings if f.status == "new"]

    @property
    def findings_gone(self) -> list[FindingDiff]:
        return [f for f in self.findings if f.status == "gone"]

    @property
    def findings_both(self) -> list[FindingDiff]:
        return [f for f in self.findings if f.status == "both"]

    @property
    def significant(self) -> list[StageRow]:
        return [s for s in self.stages if s.significant]

    def stage(self, name: str) -> StageRow:
        for s in self.stages:
            if s.field == name:
                return s
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.base_label,
            "candidate": self.cand_label,
            "shape": {
                "baseline": self.base_shape.to_dict(),
                "candidate": self.cand_shape.to_dict(),
            },
            "shape_differences": [
                {"field": k, "baseline": a, "candidate": b} for k, a, b in self.shape_differences
            ],
            "alpha": self.alpha,
            "test": "Mann-Whitney U, two-sided, Holm-adjusted over stages",
            "stages": [s.to_dict() for s in self.stages],
            "run": [r.to_dict() for r in self.runs],
            "findings": {
                "new": [f.to_dict() for f in self.findings_new],
                "gone": [f.to_dict() for f in self.findings_gone],
                "both": [f.to_dict() for f in self.findings_both],
            },
        }


def _clean(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _stage_fields(base: RunMetrics, cand: RunMetrics) -> list[str]:
    present = set(base.samples) | set(cand.samples)
    return [f for f in (*DURATION_FIELDS, QUEUE_WAIT_FIELD, KERNEL_FIELD) if f in present]


def _finding_diffs(base: Sequence[Finding], cand: Sequence[Finding]) -> list[FindingDiff]:
    bc = Counter(f.code for f in base)
    cc = Counter(f.code for f in cand)
    first: dict[str, Finding] = {}
    for f in (*cand, *base):
        first.setdefault(f.code, f)
    out = [
        FindingDiff(code, f.name, f.severity, f.title, bc.get(code, 0), cc.get(code, 0))
        for code, f in first.items()
    ]
    order = {"new": 0, "gone": 1, "both": 2}
    out.sort(key=lambda d: (order[d.status], -int(d.severity), d.code))
    return out


def compare_metrics(
    base: RunMetrics,
    cand: RunMetrics,
    *,
    alpha: float = 0.05,
    allow_different_config: bool = False,
) -> Comparison:
    """Compare two runs. Raises NoDataError for a run without GPU calls and ShapeMismatchError
    when the runs differ in configuration (unless ``allow_different_config``)."""
    require_calls(base)
    require_calls(cand)
    diffs = check_shapes(base, cand, allow_different_config=allow_different_config)

    partial: list[dict[str, Any]] = []
    for name in _stage_fields(base, cand):
        bs, cs = base.samples.get(name), cand.samples.get(name)
        row: dict[str, Any] = {"field": name}
        row["n_base"] = int(bs.size) if bs is not None else 0
        row["n_cand"] = int(cs.size) if cs is not None else 0
        for side, s in (("base", bs), ("cand", cs)):
            row[f"{side}_p50"] = float(np.percentile(s, 50)) if s is not None else None
            row[f"{side}_p95"] = float(np.percentile(s, 95)) if s is not None else None
            row[f"{side}_mean"] = float(np.mean(s)) if s is not None else None
        for stat in ("p50", "p95", "mean"):
            row[f"delta_{stat}"] = relative_change(row[f"base_{stat}"], row[f"cand_{stat}"])
        if bs is not None and cs is not None:
            mw = mann_whitney_u(cs, bs, "two-sided")
            row.update(
                shift=mw.hodges_lehmann,
                p_value=mw.p_value,
                rank_biserial=mw.rank_biserial,
                cles=mw.cles,
            )
        else:
            row.update(shift=None, p_value=None, rank_biserial=None, cles=None)
        partial.append(row)

    adjusted = holm([r["p_value"] if r["p_value"] is not None else math.nan for r in partial])
    stages = []
    for row, p_adj in zip(partial, adjusted, strict=True):
        p_adj_v = None if math.isnan(p_adj) else p_adj
        stages.append(
            StageRow(
                **row,
                p_adjusted=p_adj_v,
                significant=p_adj_v is not None and p_adj_v < alpha,
            )
        )

    runs = []
    for metric in RUN_ROWS:
        b, c = base.values.get(metric), cand.values.get(metric)
        if b is None and c is None:
            continue
        runs.append(RunRow(metric, b, c, relative_change(b, c)))

    return Comparison(
        base_label=base.label,
        cand_label=cand.label,
        base_shape=base.shape,
        cand_shape=cand.shape,
        shape_differences=tuple(diffs),
        alpha=alpha,
        stages=tuple(stages),
        runs=tuple(runs),
        findings=tuple(_finding_diffs(base.findings, cand.findings)),
        samples=(base, cand),
    )


def compare_analyses(
    base: Any,
    cand: Any,
    *,
    base_label: str = "baseline",
    cand_label: str = "candidate",
    alpha: float = 0.05,
    allow_different_config: bool = False,
) -> Comparison:
    """Compare two ``analysis.Analysis`` objects."""
    return compare_metrics(
        metrics_from_analysis(base, base_label),
        metrics_from_analysis(cand, cand_label),
        alpha=alpha,
        allow_different_config=allow_different_config,
    )


# --------------------------------------------------------------------------------------------
# Plain-text renderings (JSON and Markdown); the rich table lives in report/compare_console.py
# --------------------------------------------------------------------------------------------


def fmt_ms(v: float | None) -> str:
    if v is None:
        return "–"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def fmt_delta(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v * 100:+.1f}%"


def fmt_p(v: float | None) -> str:
    if v is None:
        return "–"
    if v < 1e-4:
        return "<1e-4"
    return f"{v:.3g}"


def fmt_value(metric: str, v: float | None) -> str:
    if v is None:
        return "–"
    if metric.endswith(".rate") or metric.startswith("util_"):
        return f"{v * 100:.1f}%" if v <= 1.0 else f"{v:.1f}"
    if v == int(v):
        return f"{int(v)}"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:,.1f}"


def verdict_mark(row: StageRow) -> str:
    return {
        "slower": "▲ slower",
        "faster": "▼ faster",
        "same": "",
        "only-baseline": "baseline only",
        "only-candidate": "candidate only",
    }[row.verdict]


def to_markdown(cmp: Comparison) -> str:
    """GitHub-flavoured Markdown: the stage table in the style of the Phase 8 -> 9 table."""
    lines = [
        f"## cuzk-diag compare: {md_code(cmp.base_label)} → {md_code(cmp.cand_label)}",
        "",
    ]
    if cmp.shape_differences:
        diff = "; ".join(
            f"{RunShape.LABELS.get(k, k)} {a} → {b}" for k, a, b in cmp.shape_differences
        )
        lines += [f"> **Different configuration** (compared anyway): {diff}", ""]
    lines += [
        "| stage | n | median (ms) | Δ median | p95 (ms) | Δ p95 | shift (ms) | p (Holm) "
        "| effect r | |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in cmp.stages:
        sig = "**" if s.significant else ""
        lines.append(
            f"| `{s.field}` | {s.n_base} / {s.n_cand} "
            f"| {fmt_ms(s.base_p50)} → {fmt_ms(s.cand_p50)} | {sig}{fmt_delta(s.delta_p50)}{sig} "
            f"| {fmt_ms(s.base_p95)} → {fmt_ms(s.cand_p95)} | {fmt_delta(s.delta_p95)} "
            f"| {fmt_ms(s.shift) if s.shift is None else f'{s.shift:+,.0f}'} "
            f"| {fmt_p(s.p_adjusted)} "
            f"| {'–' if s.rank_biserial is None else f'{s.rank_biserial:+.2f}'} "
            f"| {verdict_mark(s)} |"
        )
    lines += [
        "",
        f"Significant (bold): Holm-adjusted two-sided Mann-Whitney U p < {cmp.alpha:g} over the "
        "per-partition values. Effect r: rank-biserial correlation, > 0 when the candidate is "
        "slower.",
    ]
    if cmp.runs:
        lines += ["", "| run | baseline | candidate | Δ |", "|---|---|---|---|"]
        for r in cmp.runs:
            lines.append(
                f"| `{r.metric}` | {fmt_value(r.metric, r.base)} | {fmt_value(r.metric, r.cand)} "
                f"| {fmt_delta(r.delta)} |"
            )
    lines += ["", "### Findings", ""]
    if not cmp.findings:
        lines.append("No findings in either run.")
    for title, group in (
        ("Only in the candidate (new)", cmp.findings_new),
        ("Only in the baseline (gone)", cmp.findings_gone),
    ):
        if group:
            lines.append(f"**{title}**")
            lines.append("")
            for f in group:
                n = max(f.base_count, f.cand_count)
                times = f" ×{n}" if n > 1 else ""
                lines.append(f"- `{f.code}` {f.severity}: {md_text(f.title)}{times}")
            lines.append("")
    if cmp.findings_both:
        codes = ", ".join(f"`{f.code}`" for f in cmp.findings_both)
        lines.append(f"In both runs: {codes}")
    return "\n".join(lines).rstrip() + "\n"
