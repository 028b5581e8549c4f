"""The terminal report (rich): run facts, findings, a waterfall of a typical partition, the stage
table and the line accounting. The only module that imports rich."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from cuzk_diag.records import Severity, ascii_int
from cuzk_diag.report import common
from cuzk_diag.sanitize import neutralise

if TYPE_CHECKING:
    from cuzk_diag.analysis import Analysis
    from cuzk_diag.records import Finding

SEVERITY_STYLE = {
    Severity.ERROR: "bold white on red",
    Severity.WARNING: "bold black on yellow",
    Severity.INFO: "bold white on blue",
}
LANE_STYLE = {"cpu": "cyan", "lock": "red", "gpu": "green"}
STAGE_FIELDS_SHOWN = 40
FILE_WIDTH = 100  # width when the stream is not a terminal


def console_width(is_tty: bool) -> int | None:
    """``COLUMNS`` when set; else the terminal's width, or ``FILE_WIDTH`` off a terminal."""
    cols = os.environ.get("COLUMNS", "").strip()
    width = ascii_int(cols) if len(cols) <= 6 else None
    if width:  # (not 0)
        return width
    return None if is_tty else FILE_WIDTH


class _NoTrailingSpace:
    """A text stream that drops the spaces rich pads lines with before each newline."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            *done, self._pending = self._pending.split("\n")
            self._stream.write("".join(line.rstrip(" ") + "\n" for line in done))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self._pending)
            self._pending = ""
        self._stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._stream.fileno()


def make_console(stream: IO[str], color: str = "auto") -> Console:
    """The console of every command (reports, check, compare, the live dashboard, progress).

    Colour: ``always`` colours (even with ``NO_COLOR`` set: the flag is the more specific
    request), ``never`` does not, ``auto`` colours a terminal unless ``NO_COLOR`` is set and not
    empty. Width: ``COLUMNS`` when set, else the terminal's, else ``FILE_WIDTH``. Off a terminal
    lines carry no trailing padding.
    """
    is_tty = bool(getattr(stream, "isatty", lambda: False)())
    colour = color == "always" or (color == "auto" and is_tty and not os.environ.get("NO_COLOR"))
    return Console(
        file=stream if is_tty else _NoTrailingSpace(stream),  # type: ignore[arg-type]
        force_terminal=True if color == "always" else None,
        no_color=not colour,
        color_system=("truecolor" if color == "always" else "auto") if colour else None,
        width=console_width(is_tty),
        highlight=False,
    )


def print_table(console: Console, table: Table) -> None:
    """A table; off a terminal one wider than the console keeps its natural width, so that a
    file or a CI log does not get its columns wrapped or cut."""
    if console.is_terminal:
        console.print(table)
        return
    natural = console.measure(table, options=console.options.update(max_width=1000)).maximum
    if natural <= console.width:
        console.print(table)
        return
    width = console.width
    console.width = natural
    try:
        console.print(table)
    finally:
        console.width = width


def render(analysis: Analysis, stream: IO[str], *, color: str = "auto") -> None:
    """Write the report to ``stream``."""
    console = make_console(stream, color)
    console.print(_facts_panel(analysis))
    console.print()
    _findings(console, analysis)
    wf = analysis.facts.waterfall
    if wf is not None and wf.segments:
        console.print()
        console.print(_waterfall(wf, console.width))
    if not analysis.stages.empty:
        console.print()
        console.print(_stages(analysis))
    console.print()
    console.print(_accounting(analysis))


def _grid(rows: list[tuple[str, str]]) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    for k, v in rows:
        grid.add_row(k, Text(v))
    return grid


def _facts_panel(a: Analysis) -> Panel:
    title = ", ".join(a.inputs) if a.inputs else "run"
    return Panel(
        _grid(common.facts_rows(a)),
        title=Text(neutralise(f"cuzk-diag: {title}")),
        title_align="left",
        box=box.ROUNDED,
    )


def _findings(console: Console, a: Analysis) -> None:
    head = Text("Findings: ", style="bold")
    head.append(common.counts_text(a.counts()))
    console.print(head)
    if not a.findings:
        console.print(Text("  No findings: nothing above the thresholds.", style="green"))
        return
    for f in a.findings:
        console.print()
        console.print(_finding(f))


def _finding(f: Finding) -> Group:
    line = Text()
    line.append(f" {str(f.severity).upper()} ", style=SEVERITY_STYLE[f.severity])
    line.append(f" {f.code} ", style="bold")
    line.append(f.name, style="bold cyan")
    line.append(f"  {f.title}")
    body = Table.grid(padding=(0, 1))
    body.add_column(width=2)
    body.add_column(style="dim", no_wrap=True)
    body.add_column()
    body.add_row("", "", Text(f.message))
    ev = Text()
    for i, (k, v) in enumerate(common.evidence_items(f.evidence)):
        if i:
            ev.append(" · ", style="dim")
        ev.append(f"{k} ", style="dim")
        ev.append(v, style="bold")
    body.add_row("", "evidence", ev)
    if f.lines:
        body.add_row("", "lines", Text(", ".join(map(str, f.lines))))
    if f.advice:
        body.add_row("", "advice", Text(f.advice, style="italic"))
    estimate = common.estimate_text(f.estimate)
    if estimate:
        body.add_row("", "estimate", Text(estimate))
    return Group(line, body)


def _waterfall(wf: Any, width: int) -> Panel:
    bar_width = max(20, min(width, 120) - 44)
    t = Table(box=None, show_header=True, header_style="bold", padding=(0, 1))
    t.add_column("phase", no_wrap=True)
    t.add_column("lane", style="dim", no_wrap=True)
    t.add_column("median", justify="right", no_wrap=True)
    t.add_column(f"0 → {common.secs(wf.total_ms)}", no_wrap=True, width=bar_width)
    for name, lane, dur, bar, measured in common.waterfall_rows(wf, bar_width):
        style = LANE_STYLE.get(lane, "")
        t.add_row(name, lane, dur, Text(bar, style=style if measured else f"dim {style}"))
    caption = Text(common.waterfall_caption(wf) + f" {common.ESTIMATE} = estimated.", style="dim")
    return Panel(
        Group(t, caption), title="Typical partition (medians)", title_align="left", box=box.ROUNDED
    )


def _stages(a: Analysis) -> Table:
    t = Table(title="Stages (ms)", title_justify="left", box=box.SIMPLE_HEAD, header_style="bold")
    for col, just in (
        ("field", "left"),
        ("n", "right"),
        ("median", "right"),
        ("p95", "right"),
        ("max", "right"),
    ):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for row in a.stages.head(STAGE_FIELDS_SHOWN).itertuples(index=False):
        t.add_row(
            str(row.field),
            f"{int(row.n):,}",
            common.num(row.median),
            common.num(row.p95),
            common.num(row.max),
        )
    return t


def _accounting(a: Analysis) -> Panel:
    return Panel(
        _grid(common.accounting_rows(a.accounting)),
        title="Accounting",
        title_align="left",
        box=box.ROUNDED,
    )


# -- progress (stderr) ------------------------------------------------------------------------


@contextmanager
def progress_bar(stream: IO[str], total: int | None, description: str = "reading") -> Iterator[Any]:
    """A transient rich progress bar on ``stream`` (stderr).

    Yields ``advance(n)``, the parser's progress callback: ``n`` more bytes were read.
    """
    console = make_console(stream)
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(description, total=total)

        def advance(n: int) -> None:
            progress.advance(task, n)

        yield advance
