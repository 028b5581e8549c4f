"""GitHub Actions output for ``cuzk-diag check``: workflow-command annotations on stdout and a
Markdown job summary (appended to ``$GITHUB_STEP_SUMMARY`` when the runner sets it).

Annotations use the documented workflow commands ``::error title=...::message`` and
``::warning``/``::notice``; messages are escaped so that a newline or ``%`` in a finding cannot
end the command early.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from cuzk_diag.gate import CheckResult, GateKind, GateResult, GateStatus
from cuzk_diag.records import Finding, Severity
from cuzk_diag.sanitize import md_code, md_text, neutralise

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"

#: Metrics shown in the job summary when the run has them.
SUMMARY_METRICS: tuple[str, ...] = (
    "s_per_proof",
    "proofs",
    "calls.n",
    "gpu_total_ms.p50",
    "gpu_total_ms.p95",
    "kernel_ms.p50",
    "gpu_ms.p50",
    "prep_msm_ms.p50",
    "b_g2_msm_ms.p50",
    "util_merged",
    "util_held",
    "util_kernel",
    "prestage_fallback.rate",
    "findings.error",
    "findings.warning",
)

_ICON = {
    GateStatus.PASS: "✅",
    GateStatus.FAIL: "❌",
    GateStatus.ERROR: "⛔",
    GateStatus.SKIP: "⏭️",
}


_LINE_BREAK_RE = re.compile(r"(\r|\n)")


def escape_data(text: str) -> str:
    """Escape a workflow-command message (the part after ``::``): each line neutralised (no
    controls, no ``::`` or ``##[``), then ``%``, CR and LF escaped."""
    parts = _LINE_BREAK_RE.split(text)  # line breaks at odd indices
    text = "".join(p if i % 2 else neutralise(p) for i, p in enumerate(parts))
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow-command property value (``title=...``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, *, title: str | None = None) -> str:
    """One workflow command line, e.g. ``::error title=x::message``."""
    props = f" title={escape_property(title)}" if title else ""
    return f"::{level}{props}::{escape_data(message)}"


def _finding_level(f: Finding, fail_on: Severity | None) -> str:
    if fail_on is not None and f.severity >= fail_on:
        return "error"
    return "warning" if f.severity >= Severity.WARNING else "notice"


def workflow_commands(result: CheckResult) -> list[str]:
    """Workflow commands for every failed or unevaluable gate and every finding of the run."""
    lines: list[str] = []
    fail_on = result.spec.fail_on
    for gate in result.results:
        if gate.kind is GateKind.SEVERITY:
            continue  # the findings themselves are annotated below
        if gate.status is GateStatus.FAIL:
            lines.append(
                command("error", gate.message, title=f"cuzk-diag gate failed: {gate.name}")
            )
        elif gate.status is GateStatus.ERROR:
            lines.append(
                command("error", gate.message, title=f"cuzk-diag gate not evaluated: {gate.name}")
            )
    findings = _findings(result)
    for f in findings:
        where = f" (log lines {', '.join(map(str, f.lines[:5]))})" if f.lines else ""
        advice = f"\n{f.advice}" if f.advice else ""
        lines.append(
            command(
                _finding_level(f, fail_on),
                f"{f.message}{where}{advice}",
                title=f"{f.code} {f.title}",
            )
        )
    for note in result.notes:
        lines.append(command("notice", note, title="cuzk-diag"))
    return lines


def _findings(result: CheckResult) -> list[Finding]:
    return list(result.findings)


def render_github(result: CheckResult) -> str:
    """stdout of ``--format github``: annotations, then one plain line per gate."""
    out = workflow_commands(result)
    out.append(_verdict_line(result))
    for gate in result.results:
        out.append(
            f"  {gate.status.value.upper():5}  {neutralise(gate.name)}: {neutralise(gate.message)}"
        )
    return "\n".join(out) + "\n"


def _verdict_line(result: CheckResult) -> str:
    c = result.counts()
    verdict = "passed" if result.passed else "FAILED"
    if result.errored:
        verdict = "could not be evaluated"
    base = f" against {result.baseline}" if result.baseline else ""
    return neutralise(
        f"cuzk-diag check {verdict}: {result.candidate}{base}: "
        f"{c['pass']} passed, {c['fail']} failed, {c['error']} not evaluated, {c['skip']} skipped"
    )


def _fmt_metric(name: str, value: float) -> str:
    if name.endswith(".rate") or name.startswith("util_"):
        return f"{value * 100:.1f}%" if value <= 1.0 else f"{value:.1f}"
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3g}"


def markdown_summary(result: CheckResult) -> str:
    """The job summary: verdict, gate table, notes, headline metrics and findings."""
    head = "✅ passed" if result.passed else "❌ failed"
    if result.errored:
        head = "⛔ could not be evaluated"
    lines = [f"## cuzk-diag check {head}", ""]
    target = md_code(result.candidate)
    if result.baseline:
        target += f" against baseline {md_code(result.baseline)}"
    lines += [f"Run: {target}", ""]
    lines += ["| | gate | result |", "|---|---|---|"]
    for gate in result.results:
        lines.append(
            f"| {_ICON[gate.status]} | {md_code(gate.name, cell=True)} | {md_text(gate.message)} |"
        )
    if not result.results:
        lines.append("| | (no gates) | |")
    if result.notes:
        lines.append("")
        lines += [f"> {md_text(n)}" for n in result.notes]
    regs = [r for r in result.results if r.kind is GateKind.REGRESSION and "change" in r.evidence]
    if regs:
        lines += ["", regression_table(regs).rstrip()]
    shown = [(m, v) for m in SUMMARY_METRICS if (v := result.metrics.get(m)) is not None]
    if shown:
        lines += ["", "| metric | value |", "|---|---|"]
        lines += [f"| `{m}` | {_fmt_metric(m, v)} |" for m, v in shown]
    findings = _findings(result)
    if findings:
        lines += ["", "### Findings", ""]
        for f in findings[:50]:
            lines.append(f"- **{f.code}** ({f.severity}) {md_text(f.title)}: {md_text(f.message)}")
        if len(findings) > 50:
            lines.append(f"- … and {len(findings) - 50} more")
    return "\n".join(lines) + "\n"


def regression_table(results: list[GateResult]) -> str:
    """Markdown rows of regression evidence (baseline, candidate, change, p, effect)."""
    rows = [
        "| metric | baseline | candidate | change | p | effect r |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        e = r.evidence
        p = e.get("p_value")
        eff = e.get("rank_biserial")
        change = e.get("change")
        metric = str(e.get("metric"))
        shown = md_code(metric, cell=True)
        b, c = e.get("baseline"), e.get("candidate")
        rows.append(
            f"| {shown} | {'–' if b is None else _fmt_metric(metric, b)} "
            f"| {'–' if c is None else _fmt_metric(metric, c)} "
            f"| {'' if change is None else f'{change * 100:+.1f}%'} "
            f"| {'limit only' if p is None else f'{p:.3g}'} "
            f"| {'' if eff is None else f'{eff:+.2f}'} |"
        )
    return "\n".join(rows) + "\n"


def append_step_summary(markdown: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """Append to ``$GITHUB_STEP_SUMMARY`` when set; returns the path written, else None."""
    env = os.environ if environ is None else environ
    target = env.get(STEP_SUMMARY_ENV)
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return path


def render(analysis: Any, stream: IO[str], *, color: str = "auto") -> None:
    """Reporter-registry entry (``--format github`` of ``analyze``): one workflow command per
    finding (error, warning or notice by severity), then a one-line count."""
    del color  # workflow commands carry no colour
    for f in analysis.findings:
        level = {Severity.ERROR: "error", Severity.WARNING: "warning"}.get(f.severity, "notice")
        where = f" (log lines {', '.join(map(str, f.lines[:5]))})" if f.lines else ""
        advice = f"\n{f.advice}" if f.advice else ""
        stream.write(command(level, f"{f.message}{where}{advice}", title=f"{f.code} {f.title}"))
        stream.write("\n")
    counts = ", ".join(f"{n} {k}" for k, n in analysis.counts().items())
    stream.write(neutralise(f"cuzk-diag: {len(analysis.findings)} findings ({counts})") + "\n")


def render_check(result: CheckResult, stream: IO[str], *, color: str = "auto") -> None:
    """Registry entry (``check --format github``): ``render_github`` on ``stream``."""
    stream.write(render_github(result))


def render_summary(result: CheckResult, stream: IO[str], *, color: str = "auto") -> None:
    """Registry entry (``check --format markdown``): the job summary on ``stream``."""
    stream.write(markdown_summary(result))
