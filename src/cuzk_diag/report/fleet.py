"""The fleet report as text: console (rich), Markdown and JSON."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any

from rich import box
from rich.table import Table
from rich.text import Text

from cuzk_diag.report import common
from cuzk_diag.report.console import SEVERITY_STYLE, make_console
from cuzk_diag.sanitize import md_text, neutralise, write_neutralised_json

if TYPE_CHECKING:
    from cuzk_diag.fleet.report import FleetReport

HOST_HEAD = (
    "host",
    "runs",
    "era",
    "GPUs",
    "gw",
    "s/proof",
    "busy",
    "kernel ms",
    "last run",
    "findings",
)
NUMERIC = {"runs", "GPUs", "gw", "s/proof", "busy", "kernel ms"}


def _host_cells(h: dict[str, Any]) -> list[str]:
    """A host's row; every text from the logs neutralised (host names come from them)."""
    cells = [
        str(h["host"]),
        str(h["runs"]),
        str(h["era"] or "?"),
        common.num(h["n_gpus"]),
        common.num(h["gw"]),
        common.num(h["s_per_proof"]),
        common.pct(h["gpu_util"]),
        common.num(h["kernel_ms_p50"]),
        (h["last_ts"] or "n/a")[:10],
        " ".join(h["findings"]) or "-",
    ]
    return [neutralise(c) for c in cells]


def _setting_text(s: dict[str, Any]) -> str:
    def shown(v: Any) -> str:
        if v is None:
            return "?"
        return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)

    return ", ".join(f"{k}={shown(s[k])}" for k in ("era", "n_gpus", "gw", "gpu_threads"))


def render_console(report: FleetReport, stream: IO[str], *, color: str = "auto") -> None:
    console = make_console(stream, color)
    console.print(
        Text(
            f"cuzk-diag fleet: {neutralise(report.dataset)} · {len(report.hosts)} hosts · "
            f"{report.runs} runs "
            f"· {report.partitions:,} GPU calls",
            style="bold",
        )
    )
    console.print()
    if report.attention:
        names = neutralise(", ".join(report.attention))
        console.print(Text("Hosts needing attention: " + names, style="bold"))
    else:
        console.print(Text("No host needs attention: no errors and no fleet findings."))
    console.print()
    for f in report.findings:
        line = Text()
        line.append(f" {str(f.severity).upper()} ", style=SEVERITY_STYLE[f.severity])
        line.append(f" {f.code} {f.name}  ")
        line.append(f.message)
        console.print(line)
        if f.advice:
            console.print(Text(f"   advice  {f.advice}", style="dim"))
    if report.findings:
        console.print()
    hosts = Table(title="Hosts (latest run)", box=box.SIMPLE_HEAD, title_justify="left")
    for head in HOST_HEAD:
        hosts.add_column(
            head,
            justify="right" if head in NUMERIC else "left",
            no_wrap=head != "findings",
            min_width=len(head),
        )
    for h in report.hosts:
        hosts.add_row(*(Text(c) for c in _host_cells(h)))
    console.print(hosts)
    if report.by_code:
        codes = Table(
            title="Findings across hosts (latest runs)", box=box.SIMPLE_HEAD, title_justify="left"
        )
        for head in ("code", "rule", "severity", "hosts", "which"):
            codes.add_column(head)
        for c in report.by_code:
            codes.add_row(
                c["code"],
                c["name"],
                c["severity"],
                f"{c['n_hosts']} of {c['of_hosts']}",
                Text(_short_list(c["hosts"])),
            )
        console.print(codes)
    settings = Table(
        title="Configurations (latest runs)", box=box.SIMPLE_HEAD, title_justify="left"
    )
    for head in ("settings", "hosts", "which"):
        settings.add_column(head)
    for s in report.settings:
        settings.add_row(_setting_text(s), str(s["n_hosts"]), Text(_short_list(s["hosts"])))
    console.print(settings)


def _short_list(items: list[str], n: int = 8) -> str:
    text = ", ".join(items[:n]) + (f", … (+{len(items) - n})" if len(items) > n else "")
    return neutralise(text)


def render_markdown(report: FleetReport, stream: IO[str], *, color: str = "auto") -> None:
    w = stream.write
    w(f"# cuzk-diag fleet: {md_text(report.dataset)}\n\n")
    w(f"{len(report.hosts)} hosts, {report.runs} runs, {report.partitions:,} GPU calls.\n\n")
    w("**Hosts needing attention:** ")
    w((", ".join(md_text(h) for h in report.attention) or "none") + "\n\n")
    if report.findings:
        w("## Fleet findings\n\n")
        for f in report.findings:
            w(f"- **{str(f.severity).upper()} {f.code} `{f.name}`**: {md_text(f.message)}\n")
        w("\n")
    w("## Hosts (latest run)\n\n| " + " | ".join(HOST_HEAD) + " |\n")
    w("|" + "---|" * len(HOST_HEAD) + "\n")
    for h in report.hosts:
        w("| " + " | ".join(md_text(c) for c in _host_cells(h)) + " |\n")
    if report.by_code:
        w("\n## Findings across hosts (latest runs)\n\n")
        w("| code | rule | severity | hosts | which |\n")
        w("|---|---|---|---|---|\n")
        for c in report.by_code:
            w(
                f"| {c['code']} | `{c['name']}` | {c['severity']} | {c['n_hosts']} of "
                f"{c['of_hosts']} | {md_text(_short_list(c['hosts']))} |\n"
            )
    w("\n## Configurations (latest runs)\n\n| settings | hosts | which |\n|---|---|---|\n")
    for s in report.settings:
        hosts = md_text(_short_list(s["hosts"]))
        w(f"| {md_text(_setting_text(s))} | {s['n_hosts']} | {hosts} |\n")


def render_json(report: FleetReport, stream: IO[str], *, color: str = "auto") -> None:
    doc = report.to_dict()
    write_neutralised_json(doc, stream, allow_nan=False, default=str, ensure_ascii=True)
    stream.write("\n")


def render_html(report: FleetReport, stream: IO[str], *, color: str = "auto") -> None:
    """One self-contained page: hosts needing attention, the fleet findings, each host's
    kernel time per call as a box, the tables and the documentation of the rules that fired."""
    from cuzk_diag.report import html_charts
    from cuzk_diag.report.html import Page, _kv_table, _severity_badge, _table, esc, rule_docs

    hosts = sorted(report.kernel_samples)
    page = Page(
        f"cuzk-diag fleet: {report.dataset}",
        f"{len(report.hosts)} hosts · {report.runs} runs · {report.partitions:,} GPU calls",
    )
    page.section("attention", "Hosts needing attention")
    page.add(_kv_table([("hosts", ", ".join(report.attention) or "none")]))
    for f in report.findings:
        page.add(
            f'<article class="finding" data-code="{esc(f.code)}">{_severity_badge(f.severity)} '
            f'<a href="#rule-{esc(f.code)}">{esc(f.code)} {esc(f.name)}</a>: '
            f"{esc(f.message)}<br><em>{esc(f.advice)}</em></article>"
        )
    page.section("kernels", "Kernel time per call, latest run of each host")
    rows = [
        row
        for host in hosts
        for row in html_charts._box_rows(
            "kernel_ms", "kernel ms per call", host, report.kernel_samples[host]
        )
    ]
    flagged = set(report.attention)
    colors = ["#d62728" if h in flagged else "#4c78a8" for h in hosts]
    page.chart(
        "chart-fleet-kernels",
        html_charts.distributions(rows, ["kernel ms per call"], hosts, colors) if rows else None,
        [
            "Per host, ntt_msm_h_ms + batch_add_ms + tail_msm_ms of each call: boxes span the "
            "quartiles, whiskers reach the furthest value within 1.5 × IQR. Hosts needing "
            "attention are red."
        ],
    )
    page.section("hosts", "Hosts (latest run)")
    page.add(_table(HOST_HEAD, [_host_cells(h) for h in report.hosts]))
    page.section("codes", "Findings across hosts (latest runs)")
    page.add(
        _table(
            ("code", "rule", "severity", "hosts", "which"),
            [
                (
                    c["code"],
                    c["name"],
                    c["severity"],
                    f"{c['n_hosts']} of {c['of_hosts']}",
                    _short_list(c["hosts"]),
                )
                for c in report.by_code
            ],
        )
    )
    page.section("settings", "Configurations (latest runs)")
    page.add(
        _table(
            ("settings", "hosts", "which"),
            [
                (_setting_text(s), str(s["n_hosts"]), _short_list(s["hosts"]))
                for s in report.settings
            ],
        )
    )
    codes = [f.code for f in report.findings] + [c["code"] for c in report.by_code]
    if codes:
        page.section("rules", "Rules")
        page.add(rule_docs(codes))
    stream.write(page.html())
