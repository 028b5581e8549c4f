"""The Markdown report: for issues, pull requests and notebooks."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any

from cuzk_diag.report import common
from cuzk_diag.sanitize import md_code, md_text

if TYPE_CHECKING:
    from cuzk_diag.analysis import Analysis

WATERFALL_WIDTH = 60


def render(analysis: Analysis, stream: IO[str], *, color: str = "auto") -> None:
    """Write the report as GitHub-flavoured Markdown (``color`` is ignored)."""
    a = analysis
    w = stream.write
    # Every text that can quote the log or a path goes through md_text / md_code.
    title = ", ".join(md_code(i) for i in a.inputs) if a.inputs else "run"
    w(f"# cuzk-diag: {title}\n\n")
    w("| | |\n|---|---|\n")
    for k, v in common.facts_rows(a):
        w(f"| {k} | {md_text(v)} |\n")
    counts = common.counts_text(a.counts())
    w(f"\n## Findings ({counts})\n\n")
    if not a.findings:
        w("No findings: nothing above the thresholds.\n")
    for f in a.findings:
        w(f"### {str(f.severity).upper()} {f.code} `{f.name}`: {md_text(f.title)}\n\n")
        w(f"{md_text(f.message)}\n\n")
        for k, v in common.evidence_items(f.evidence):
            w(f"- **{md_text(k)}**: {md_text(v)}\n")
        if f.lines:
            w(f"- **lines**: {', '.join(map(str, f.lines))}\n")
        if f.advice:
            w(f"\n> {md_text(f.advice)}\n")
        estimate = common.estimate_text(f.estimate)
        if estimate:
            w(f"\n**Estimate**: {md_text(estimate)}\n")
        w("\n")
    wf = a.facts.waterfall
    if wf is not None and wf.segments:
        w("## Typical partition (medians)\n\n```text\n")
        rows = common.waterfall_rows(wf, WATERFALL_WIDTH)
        name_w = max(len(r[0]) for r in rows)
        dur_w = max(len(r[2]) for r in rows)
        for name, lane, dur, bar, _ in rows:
            w(f"{name:<{name_w}}  {lane:<4}  {dur:>{dur_w}}  |{bar}\n")
        w("```\n\n")
        w(f"{common.waterfall_caption(wf)} {common.ESTIMATE} = estimated.\n\n")
    if not a.stages.empty:
        w("## Stages (ms)\n\n| field | n | median | p95 | mean | min | max |\n")
        w("|---|--:|--:|--:|--:|--:|--:|\n")
        for r in a.stages.itertuples(index=False):
            w(
                f"| `{r.field}` | {int(r.n):,} | {common.num(r.median)} | {common.num(r.p95)} | "
                f"{common.num(r.mean)} | {common.num(r.min)} | {common.num(r.max)} |\n"
            )
        w("\n")
    w("## Accounting\n\n")
    for k, v in common.accounting_rows(a.accounting):
        w(f"- **{k}**: {md_text(v)}\n")


def render_comparison(cmp: Any, stream: IO[str], *, color: str = "auto") -> None:
    """Registry entry (``compare --format markdown``): ``compare.to_markdown``."""
    from cuzk_diag.compare import to_markdown

    stream.write(to_markdown(cmp))
