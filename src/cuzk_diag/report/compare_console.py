"""Terminal renderings (rich) of ``cuzk-diag compare`` and ``cuzk-diag check`` results."""

from __future__ import annotations

from typing import TextIO

from rich.table import Table
from rich.text import Text

from cuzk_diag.compare import (
    Comparison,
    fmt_delta,
    fmt_ms,
    fmt_p,
    fmt_value,
    verdict_mark,
)
from cuzk_diag.gate import CheckResult, GateStatus, RunShape
from cuzk_diag.report.console import make_console, print_table
from cuzk_diag.sanitize import neutralise


def _delta_text(v: float | None, significant: bool) -> Text:
    t = fmt_delta(v)
    if not significant or v is None:
        return Text(t)
    return Text(t, style="bold red" if v > 0 else "bold green")


def render_compare(cmp: Comparison, stream: TextIO, color: str = "auto") -> None:
    """The stage table (median and p95 base -> candidate, change, significance) and findings."""
    console = make_console(stream, color)
    console.print(
        Text.assemble(
            ("cuzk-diag compare ", "bold"),
            (neutralise(cmp.base_label), "cyan"),
            " → ",
            (neutralise(cmp.cand_label), "cyan"),
        )
    )
    if cmp.shape_differences:
        diff = "; ".join(
            f"{RunShape.LABELS.get(k, k)} {a} → {b}" for k, a, b in cmp.shape_differences
        )
        console.print(Text(f"different configuration (compared anyway): {diff}", style="yellow"))
    table = Table(show_edge=False, header_style="bold", pad_edge=False)
    table.add_column("stage")
    table.add_column("n", justify="right")
    table.add_column("median ms", justify="right")
    table.add_column("Δ median", justify="right")
    table.add_column("p95 ms", justify="right")
    table.add_column("Δ p95", justify="right")
    table.add_column("shift ms", justify="right")
    table.add_column("p (Holm)", justify="right")
    table.add_column("r", justify="right")
    table.add_column("")
    for s in cmp.stages:
        mark = verdict_mark(s)
        style = {"slower": "red", "faster": "green"}.get(s.verdict, "dim")
        table.add_row(
            s.field,
            f"{s.n_base}/{s.n_cand}",
            f"{fmt_ms(s.base_p50)} → {fmt_ms(s.cand_p50)}",
            _delta_text(s.delta_p50, s.significant),
            f"{fmt_ms(s.base_p95)} → {fmt_ms(s.cand_p95)}",
            fmt_delta(s.delta_p95),
            "–" if s.shift is None else f"{s.shift:+,.0f}",
            fmt_p(s.p_adjusted),
            "–" if s.rank_biserial is None else f"{s.rank_biserial:+.2f}",
            Text(mark, style=style),
        )
    print_table(console, table)
    console.print(
        Text(
            f"significant: Holm-adjusted two-sided Mann-Whitney U p < {cmp.alpha:g}; "
            "r = rank-biserial effect (> 0: candidate slower); shift = Hodges-Lehmann, ms",
            style="dim",
        )
    )
    if cmp.runs:
        runs = Table(show_edge=False, header_style="bold", pad_edge=False)
        runs.add_column("run")
        runs.add_column("baseline", justify="right")
        runs.add_column("candidate", justify="right")
        runs.add_column("Δ", justify="right")
        for r in cmp.runs:
            runs.add_row(
                r.metric,
                fmt_value(r.metric, r.base),
                fmt_value(r.metric, r.cand),
                fmt_delta(r.delta),
            )
        console.print()
        console.print(runs)
    console.print()
    if not cmp.findings:
        console.print("findings: none in either run")
    for title, group, style in (
        ("only in the candidate (new)", cmp.findings_new, "red"),
        ("only in the baseline (gone)", cmp.findings_gone, "green"),
    ):
        if group:
            console.print(Text(f"findings {title}:", style=f"bold {style}"))
            for f in group:
                n = max(f.base_count, f.cand_count)
                times = f" ×{n}" if n > 1 else ""
                console.print(f"  {f.code} {f.severity}: {f.title}{times}")
    if cmp.findings_both:
        console.print("findings in both: " + ", ".join(f.code for f in cmp.findings_both))


_STATUS_STYLE = {
    GateStatus.PASS: ("PASS", "green"),
    GateStatus.FAIL: ("FAIL", "bold red"),
    GateStatus.ERROR: ("ERROR", "bold magenta"),
    GateStatus.SKIP: ("SKIP", "dim"),
}


def render_check(result: CheckResult, stream: TextIO, color: str = "auto") -> None:
    """One line per gate with its verdict and numbers, then the overall verdict."""
    console = make_console(stream, color)
    head = Text.assemble(("cuzk-diag check ", "bold"), (neutralise(result.candidate), "cyan"))
    if result.baseline:
        head.append(" against ")
        head.append(neutralise(result.baseline), style="cyan")
    console.print(head)
    table = Table(show_edge=False, show_header=False, pad_edge=False, box=None)
    table.add_column("status")
    table.add_column("gate")
    table.add_column("result", overflow="fold")
    for gate in result.results:
        label, style = _STATUS_STYLE[gate.status]
        table.add_row(
            Text(label, style=style), Text(neutralise(gate.name)), Text(neutralise(gate.message))
        )
    if result.results:
        console.print(table)
    else:
        console.print("no gates configured")
    for note in result.notes:
        console.print(Text(f"note: {note}", style="yellow"))
    c = result.counts()
    if result.errored:
        verdict = Text("could not be evaluated", style="bold magenta")
    elif result.passed:
        verdict = Text("passed", style="bold green")
    else:
        verdict = Text("failed", style="bold red")
    console.print(
        Text.assemble(
            verdict,
            f": {c['pass']} passed, {c['fail']} failed, {c['error']} not evaluated, "
            f"{c['skip']} skipped",
        )
    )
