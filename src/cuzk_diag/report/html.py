"""The HTML report: one self-contained file to attach to a pull request or a chat thread.

Everything is inlined: the styles, the data, and the Vega, Vega-Lite and vega-embed builds that
draw the charts (vendored in ``assets/``, see ``assets/README.md``), so the file opens without a
network. Text from the log (job ids, messages, paths) is escaped for HTML, and for the JSON
islands that carry the chart data.

``render(analysis, stream)`` writes the analysis report (``analyze --format html``);
``render_compare(comparison, stream, base=..., cand=...)`` the comparison (``compare --format
html``).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from typing import IO, TYPE_CHECKING, Any

from cuzk_diag import __version__
from cuzk_diag.analysis import jsonable
from cuzk_diag.report import common, html_charts

if TYPE_CHECKING:
    from cuzk_diag.analysis import Analysis
    from cuzk_diag.compare import Comparison
    from cuzk_diag.gate import RunMetrics

ZOOM_HINT = "Scroll to zoom, drag to pan, double-click to reset"
#: The vendored scripts, in load order.
SCRIPTS = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")


def esc(value: object) -> str:
    """Text for HTML element content and attribute values."""
    return html.escape(str(value), quote=True)


def json_island(obj: Any) -> str:
    """JSON for a ``<script type="application/json">`` element: nothing in it can end the
    element or open a comment (``<``, ``>``, ``&`` and the JS line separators are escaped)."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch, rep in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(ch, rep)
    return text


@cache
def _asset(name: str) -> str:
    return (resources.files("cuzk_diag.report") / "assets" / name).read_text(encoding="utf-8")


@cache
def vendored() -> dict[str, dict[str, str]]:
    """Versions and licences of the vendored chart libraries (``assets/VENDORED.json``)."""
    data: dict[str, dict[str, str]] = json.loads(_asset("VENDORED.json"))
    return data


class Page:
    """An HTML document under construction: sections of markup plus the chart specs."""

    def __init__(self, title: str, subtitle: str) -> None:
        self.title = title
        self.subtitle = subtitle
        self.parts: list[str] = []
        self.toc: list[tuple[str, str]] = []
        self.specs: dict[str, Any] = {}

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def section(self, anchor: str, heading: str) -> None:
        self.toc.append((anchor, heading))
        self.add(f'<h2 id="{esc(anchor)}">{esc(heading)}</h2>')

    def chart(
        self, anchor: str, spec: dict[str, Any] | None, notes: Iterable[str] = (), hint: str = ""
    ) -> None:
        """A chart drawn from ``spec`` (none when None), a hint above it, notes below."""
        if spec is not None:
            self.specs[anchor] = spec
            if hint:
                self.add(f'<p class="hint">{esc(hint)}</p>')
            self.add(f'<div class="chart" id="{esc(anchor)}"></div>')
        for note in notes:
            self.add(f'<p class="note">{esc(note)}</p>')

    def html(self) -> str:
        libs = vendored()
        credit = ", ".join(f"{name} {v['version']}" for name, v in libs.items())
        toc = " ".join(f'<a href="#{esc(a)}">{esc(h)}</a>' for a, h in self.toc)
        scripts = "\n".join(f"<script>{_asset(name)}</script>" for name in SCRIPTS)
        return "\n".join(
            [
                "<!DOCTYPE html>",
                '<html lang="en">',
                "<head>",
                '<meta charset="utf-8">',
                '<meta name="viewport" content="width=device-width, initial-scale=1">',
                f'<meta name="generator" content="cuzk-diag {esc(__version__)}">',
                f"<title>{esc(self.title)}</title>",
                f"<style>{_asset('report.css')}</style>",
                "</head>",
                '<body data-charts="pending">',
                "<main>",
                f"<h1>{esc(self.title)}</h1>",
                f'<p class="subtitle">{esc(self.subtitle)}</p>',
                f'<nav class="toc">{toc}</nav>',
                *self.parts,
                f"<footer>cuzk-diag {esc(__version__)} · charts drawn with {esc(credit)} "
                "(BSD-3-Clause, University of Washington Interactive Data Lab), inlined."
                "</footer>",
                "</main>",
                '<script type="application/json" id="cuzk-diag-specs">'
                f"{json_island(jsonable(self.specs))}</script>",
                f"<!-- {esc(credit)}: BSD-3-Clause licensed, see their LICENSE files -->",
                scripts,
                f"<script>{_asset('report.js')}</script>",
                "</body>",
                "</html>",
                "",
            ]
        )


# -- pieces ---------------------------------------------------------------------------------


def _table(
    head: Sequence[str],
    rows: Iterable[Sequence[str]],
    classes: Sequence[str] = (),
    row_classes: Sequence[str] = (),
) -> str:
    """A table of already formatted text cells (escaped here); ``classes`` per column (``num``
    right-aligns), ``row_classes`` per row."""
    cls = list(classes) + [""] * (len(head) - len(classes))

    def cell(tag: str, text: str, c: str) -> str:
        return (
            f'<{tag} class="{esc(c)}">{esc(text)}</{tag}>' if c else f"<{tag}>{esc(text)}</{tag}>"
        )

    out = ["<table><thead><tr>"]
    out += [cell("th", h, c.split()[0] if c else "") for h, c in zip(head, cls, strict=True)]
    out.append("</tr></thead><tbody>")
    for i, row in enumerate(rows):
        rc = row_classes[i] if i < len(row_classes) else ""
        out.append(f'<tr class="{esc(rc)}">' if rc else "<tr>")
        out += [cell("td", c, k) for c, k in zip(row, cls, strict=True)]
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _kv_table(rows: Iterable[tuple[str, str]], cls: str = "facts") -> str:
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="{esc(cls)}"><tbody>{body}</tbody></table>'


def rule_anchor(code: str) -> str:
    return f"rule-{code}"


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table")


def rule_docs(codes: Iterable[str]) -> str:
    """The documentation of these rules, each in a collapsed ``<details>`` (raw HTML in the
    docs is escaped by the Markdown renderer)."""
    from cuzk_diag.rules import get_rule, render_rule_markdown

    out = []
    for code in dict.fromkeys(codes):
        try:
            rule = get_rule(code)
        except KeyError:
            continue
        text = render_rule_markdown(rule, level=4)
        body = text.split("\n", 1)[1] if "\n" in text else ""
        out.append(
            f'<details class="rule" id="{esc(rule_anchor(rule.code))}">'
            f"<summary>{esc(rule.code)} <code>{esc(rule.name)}</code>: {esc(rule.title)}</summary>"
            f"{_markdown().render(body)}</details>"
        )
    return "".join(out)


def _severity_badge(severity: object) -> str:
    s = str(severity)
    return f'<span class="badge {esc(s)}">{esc(s.upper())}</span>'


# -- the analysis report --------------------------------------------------------------------


def render(analysis: Analysis, stream: IO[str], *, color: str = "auto") -> None:
    """Write the analysis report as one HTML document (``color`` is ignored)."""
    stream.write(analysis_page(analysis))


def analysis_page(a: Analysis) -> str:
    """The analysis report: facts, findings, timeline, waterfall, distributions, utilisation
    and s/proof over time, the stage table, the accounting and the rules' documentation."""
    title = ", ".join(a.inputs) if a.inputs else "run"
    page = Page(
        f"cuzk-diag: {title}",
        f"{a.facts.partitions:,} GPU calls · {common.counts_text(a.counts())}",
    )
    page.section("facts", "Run")
    page.add(_kv_table(common.facts_rows(a)))

    page.section("findings", "Findings")
    page.add(f'<p class="counts">{esc(common.counts_text(a.counts()))}</p>')
    if not a.findings:
        page.add("<p>No findings: nothing above the thresholds.</p>")
    for f in a.findings:
        sev = str(f.severity)
        page.add(
            f'<article class="finding {esc(sev)}" id="finding-{esc(f.code)}" '
            f'data-code="{esc(f.code)}">'
            f'<h3>{_severity_badge(f.severity)} <span class="code">{esc(f.code)}</span> '
            f'<span class="slug">{esc(f.name)}</span> {esc(f.title)}</h3>'
            f"<p>{esc(f.message)}</p>"
        )
        items = common.evidence_items(f.evidence)
        if items:
            page.add(
                '<p class="evidence">'
                + "".join(
                    f'<span class="ev"><span class="k">{esc(k)}</span> {esc(v)}</span>'
                    for k, v in items
                )
                + "</p>"
            )
        if f.lines:
            page.add(f'<p class="lines">log lines {esc(", ".join(map(str, f.lines)))}</p>')
        if f.advice:
            page.add(f'<p class="advice">{esc(f.advice)}</p>')
        estimate = common.estimate_text(f.estimate)
        if estimate:
            page.add(f'<p class="estimate">estimate: {esc(estimate)}</p>')
        page.add(
            f'<p class="doclink"><a href="#{esc(rule_anchor(f.code))}">{esc(f.code)} '
            f"{esc(f.name)}: what it flags, why it matters, what to do</a></p></article>"
        )

    page.section("timeline", "Timeline")
    prep = html_charts.prepare(a)
    spec, notes = html_charts.timeline(a, prep)
    page.chart("chart-timeline", spec, notes, ZOOM_HINT + "; hover a bar for its numbers.")

    wf = a.facts.waterfall
    page.section("waterfall", "Typical partition")
    if wf is not None and wf.segments:
        page.chart(
            "chart-waterfall",
            html_charts.waterfall(wf),
            [
                common.waterfall_caption(wf)
                + " Faded, dashed bars are estimated (not logged by this code version); dashed "
                "lines mark the measured whole-call medians."
            ],
        )
    else:
        page.add('<p class="note">No gpu_total_ms in the log: no typical partition.</p>')

    page.section("distributions", "Stage distributions")
    spec, notes = html_charts.stage_distributions(a)
    page.chart("chart-distributions", spec, notes)

    page.section("over-time", "Utilisation and s/proof over time")
    spec, notes = html_charts.over_time(a, prep)
    page.chart("chart-over-time", spec, notes, ZOOM_HINT + ".")
    if a.facts.per_gpu:
        page.add(
            _table(
                [
                    "GPU",
                    "calls",
                    "workers",
                    "span",
                    "busy",
                    "kernels",
                    "idle gaps",
                    "idle",
                ],
                [
                    [
                        str(u.gpu),
                        f"{u.calls:,}",
                        str(u.workers),
                        common.secs(u.span_ms),
                        common.pct(u.util),
                        common.pct(u.kernel_util),
                        f"{len(u.gaps):,}",
                        common.secs(u.gaps.total_ms()),
                    ]
                    for u in a.facts.per_gpu
                ],
                ["num"] * 8,
            )
        )

    page.section("stages", "Stages (ms)")
    if a.stages.empty:
        page.add("<p>No timing fields.</p>")
    else:
        page.add(
            _table(
                ["field", "n", "median", "p95", "mean", "min", "max"],
                [
                    [
                        str(r.field),
                        f"{int(r.n):,}",
                        common.num(r.median),
                        common.num(r.p95),
                        common.num(r.mean),
                        common.num(r.min),
                        common.num(r.max),
                    ]
                    for r in a.stages.itertuples(index=False)
                ],
                ["", *["num"] * 6],
            )
        )

    page.section("accounting", "Accounting")
    rows = common.accounting_rows(a.accounting)
    acc = a.accounting
    if acc.malformed_examples:
        rows.append(("Malformed lines", ", ".join(map(str, acc.malformed_examples))))
    if acc.unattributed_examples:
        rows.append(("Unattributed lines", ", ".join(map(str, acc.unattributed_examples))))
    if acc.invalid_values_examples:
        rows.append(
            (
                "Records with a value their column cannot hold (first lines)",
                ", ".join(map(str, acc.invalid_values_examples)),
            )
        )
    if acc.unknown_keys:
        rows.append(
            ("Unknown keys", ", ".join(f"{k} {v:,}" for k, v in sorted(acc.unknown_keys.items())))
        )
    page.add(_kv_table(rows))

    if a.findings:
        page.section("rules", "Rules")
        page.add(rule_docs(f.code for f in a.findings))
    return page.html()


# -- the comparison report ------------------------------------------------------------------


def render_comparison(cmp: Comparison, stream: IO[str], *, color: str = "auto") -> None:
    """Registry entry (``compare --format html``): the page with the runs' per-call samples
    carried by the comparison (``color`` is ignored)."""
    base, cand = cmp.samples if cmp.samples is not None else (None, None)
    render_compare(cmp, stream, base=base, cand=cand)


def render_compare(
    cmp: Comparison,
    stream: IO[str],
    *,
    base: RunMetrics | None = None,
    cand: RunMetrics | None = None,
) -> None:
    """Write the comparison as one HTML document; ``base``/``cand`` give the per-call samples
    for the overlaid distributions (left out without them)."""
    stream.write(compare_page(cmp, base, cand))


def compare_page(cmp: Comparison, base: RunMetrics | None, cand: RunMetrics | None) -> str:
    """Both runs' distributions per stage, the significance table, the run-level table and the
    findings present in only one run."""
    from cuzk_diag.compare import fmt_delta, fmt_ms, fmt_p, fmt_value, verdict_mark
    from cuzk_diag.gate import RunShape

    page = Page(
        f"cuzk-diag compare: {cmp.base_label} → {cmp.cand_label}",
        f"baseline {cmp.base_label} · candidate {cmp.cand_label} · "
        f"{len(cmp.significant)} of {len(cmp.stages)} stages changed significantly",
    )
    if cmp.shape_differences:
        diff = "; ".join(
            f"{RunShape.LABELS.get(k, k)} {a} → {b}" for k, a, b in cmp.shape_differences
        )
        page.add(f'<p class="warn-box">Different configuration (compared anyway): {esc(diff)}</p>')

    if base is not None and cand is not None:
        page.section("distributions", "Distributions")
        fields = []
        for s in cmp.stages:
            mark = verdict_mark(s)
            label = f"{s.field}  {mark}" if s.significant and mark else s.field
            fields.append((s.field, label))
        page.chart(
            "chart-compare-distributions",
            html_charts.compare_distributions(
                fields, [base.samples, cand.samples], ["baseline", "candidate"]
            ),
            [
                "Per stage, the baseline's and the candidate's per-call values: boxes span the "
                "quartiles, the black tick is the median, whiskers reach the furthest value "
                "within 1.5 × IQR, circles lie beyond. Significant changes are marked after the "
                "stage name."
            ],
        )

    page.section("stages", "Significance")
    rows, classes = [], []
    for s in cmp.stages:
        rows.append(
            [
                s.field,
                f"{s.n_base}/{s.n_cand}",
                f"{fmt_ms(s.base_p50)} → {fmt_ms(s.cand_p50)}",
                fmt_delta(s.delta_p50),
                f"{fmt_ms(s.base_p95)} → {fmt_ms(s.cand_p95)}",
                fmt_delta(s.delta_p95),
                "–" if s.shift is None else f"{s.shift:+,.0f}",
                fmt_p(s.p_adjusted),
                "–" if s.rank_biserial is None else f"{s.rank_biserial:+.2f}",
                verdict_mark(s),
            ]
        )
        classes.append(f"{s.verdict}{' sig' if s.significant else ''}")
    page.add(
        _table(
            [
                "stage",
                "n",
                "median ms",
                "Δ median",
                "p95 ms",
                "Δ p95",
                "shift ms",
                "p (Holm)",
                "r",
                "",
            ],
            rows,
            ["", "num", "num", "num delta", "num", "num", "num", "num", "num", "verdict"],
            row_classes=classes,
        )
    )
    page.add(
        f'<p class="note">Significant: Holm-adjusted two-sided Mann-Whitney U p &lt; '
        f"{esc(f'{cmp.alpha:g}')} over the per-partition values; r = rank-biserial effect (&gt; 0: "
        "candidate slower); shift = Hodges-Lehmann, ms.</p>"
    )

    if cmp.runs:
        page.section("run", "Run")
        page.add(
            _table(
                ["run", "baseline", "candidate", "Δ"],
                [
                    [
                        r.metric,
                        fmt_value(r.metric, r.base),
                        fmt_value(r.metric, r.cand),
                        fmt_delta(r.delta),
                    ]
                    for r in cmp.runs
                ],
                ["", "num", "num", "num"],
            )
        )

    page.section("findings", "Findings")
    if not cmp.findings:
        page.add("<p>No findings in either run.</p>")
    for heading, group, status, run in (
        ("Only in the candidate (new)", cmp.findings_new, "new", cand),
        ("Only in the baseline (gone)", cmp.findings_gone, "gone", base),
    ):
        if not group:
            continue
        page.add(f"<h3>{esc(heading)}</h3>")
        for f in group:
            n = max(f.base_count, f.cand_count)
            times = f" ×{n}" if n > 1 else ""
            messages = [x.message for x in (run.findings if run else ()) if x.code == f.code]
            page.add(
                f'<article class="finding {esc(str(f.severity))}" data-code="{esc(f.code)}" '
                f'data-status="{status}"><h3>{_severity_badge(f.severity)} '
                f'<span class="code">{esc(f.code)}</span> <span class="slug">{esc(f.name)}</span> '
                f"{esc(f.title)}{esc(times)}</h3>"
                + "".join(f"<p>{esc(m)}</p>" for m in messages)
                + f'<p class="doclink"><a href="#{esc(rule_anchor(f.code))}">what it flags, why '
                "it matters, what to do</a></p></article>"
            )
    if cmp.findings_both:
        page.add(
            "<p>In both runs: "
            + ", ".join(f"<code>{esc(f.code)}</code> {esc(f.name)}" for f in cmp.findings_both)
            + "</p>"
        )
    one_sided = [f.code for f in (*cmp.findings_new, *cmp.findings_gone)]
    if one_sided:
        page.section("rules", "Rules")
        page.add(rule_docs(one_sided))
    return page.html()
