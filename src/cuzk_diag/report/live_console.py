"""The live dashboard (rich) shown while ``analyze`` follows a log on a terminal.

Redrawn by the engine at most four times a second; it disappears when the run ends and the
final report is printed in its place.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from rich import box
from rich.console import Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from cuzk_diag.report import common
from cuzk_diag.report.console import SEVERITY_STYLE, make_console
from cuzk_diag.sanitize import neutralise
from cuzk_diag.sinks import Sink, StreamEnd

if TYPE_CHECKING:
    from cuzk_diag.live import LiveSnapshot

#: Stage rows shown (the largest window medians first); the final report has them all.
STAGE_ROWS = 14
FINDING_ROWS = 8


class Dashboard(Sink):
    """A rich ``Live`` display of ``LiveSnapshot``s."""

    update_interval = 0.25  # redraws per second: at most four

    def __init__(self, stream: IO[str], *, color: str = "auto") -> None:
        self.console = make_console(stream, color)
        self.live = Live(
            console=self.console,
            auto_refresh=False,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._running = False

    def start(self) -> None:
        self.live.start()
        self._running = True
        self.live.update(Text("cuzk-diag: waiting for input…", style="dim"), refresh=True)

    def update(self, snapshot: LiveSnapshot) -> None:
        if self._running:
            self.live.update(render_snapshot(snapshot), refresh=True)

    def notice(self, text: str) -> None:
        """Shown in the dashboard (``LiveSnapshot.notices``), not on stderr under it."""

    def finish(self, end: StreamEnd) -> None:
        self.close()

    def close(self) -> None:
        if self._running:
            self._running = False
            self.live.stop()


def render_snapshot(s: LiveSnapshot) -> Group:
    """The dashboard for one snapshot: headline panel, findings, stage table, notices."""
    parts: list[object] = [_headline(s), _findings(s)]
    if s.stages:
        parts.append(_stages(s))
    if s.notices:
        parts.append(Text("\n".join(s.notices), style="dim"))
    return Group(*parts)  # type: ignore[arg-type]


def _headline(s: LiveSnapshot) -> Panel:
    grid = Table.grid(padding=(0, 2))
    for _ in range(4):
        grid.add_column(no_wrap=True)
    failed = f" ({s.proofs_failed} failed)" if s.proofs_failed else ""
    grid.add_row(
        _kv("proofs done", f"{s.proofs_done:,}{failed}"),
        _kv("open", f"{s.proofs_open:,}"),
        _kv("partitions", f"{s.partitions:,}"),
        _kv("in flight", f"{s.partitions_in_flight:,}"),
    )
    spp = common.num(s.s_per_proof) if s.s_per_proof is not None else "n/a"
    grid.add_row(
        _kv("s/proof", spp),
        _kv("GPU util", common.pct(s.gpu_util)),
        _kv("kernel util", common.pct(s.kernel_util)),
        _kv("failed", f"{s.partitions_failed:,}"),
    )
    grid.add_row(
        _kv("lines", f"{s.lines:,}"),
        _kv("malformed", f"{s.malformed:,}"),
        _kv("unattributed", f"{s.unattributed:,}"),
        _kv("read", f"{s.bytes_read / 1e6:,.1f} MB"),
    )
    note = (
        f"window: last {s.window_partitions:,} partitions; s/proof over the last completed "
        f"proofs; era {s.era}"
    )
    if s.records_dropped:
        note += f"; final report keeps the last {s.records_kept:,} records"
    title = ", ".join("stdin" if i == "-" else i for i in s.inputs) or "input"
    mins, secs = divmod(int(s.elapsed_s), 60)
    hours, mins = divmod(mins, 60)
    return Panel(
        Group(grid, Text(note, style="dim")),
        title=Text(neutralise(f"cuzk-diag live: {title}  {hours:d}:{mins:02d}:{secs:02d}")),
        title_align="left",
        box=box.ROUNDED,
    )


def _kv(key: str, value: str) -> Text:
    t = Text()
    t.append(f"{key} ", style="dim")
    t.append(value, style="bold")
    return t


def _findings(s: LiveSnapshot) -> Table | Text:
    if not s.findings:
        return Text("  No findings on the window.", style="green")
    t = Table(
        box=box.SIMPLE_HEAD,
        header_style="bold",
        title="Findings (window)",
        title_justify="left",
        expand=True,
    )
    t.add_column("severity", no_wrap=True, min_width=9)
    t.add_column("code", no_wrap=True, min_width=5)
    t.add_column("rule", no_wrap=True, style="cyan", min_width=12)
    t.add_column("message", overflow="ellipsis", no_wrap=True, ratio=1)
    for f in s.findings[:FINDING_ROWS]:
        t.add_row(
            Text(f" {str(f.severity).upper()} ", style=SEVERITY_STYLE[f.severity]),
            f.code,
            f.name,
            Text(f.message),  # quotes the log: never read as rich markup
        )
    if len(s.findings) > FINDING_ROWS:
        t.add_row("", "", "", Text(f"… {len(s.findings) - FINDING_ROWS} more", style="dim"))
    return t


def _stages(s: LiveSnapshot) -> Table:
    t = Table(box=box.SIMPLE_HEAD, header_style="bold", title="Stages (ms)", title_justify="left")
    t.add_column("field")
    for col in ("n", "median", "p95", "run n", "run median≈", "run p95≈"):
        t.add_column(col, justify="right", no_wrap=True)
    rows = sorted(s.stages, key=lambda r: -(r.median or r.run_median or 0.0))[:STAGE_ROWS]
    for r in rows:
        t.add_row(
            r.field,
            f"{r.n:,}",
            common.num(r.median),
            common.num(r.p95),
            f"{r.run_n:,}",
            common.num(r.run_median),
            common.num(r.run_p95),
        )
    return t
