"""Progress of a fleet build on stderr: file groups done and bytes read, as units complete."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import IO, TYPE_CHECKING

from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from cuzk_diag.report.console import make_console

if TYPE_CHECKING:
    from cuzk_diag.fleet.discover import Unit
    from cuzk_diag.fleet.task import UnitResult


class FleetProgress:
    """Two bars (file groups, bytes); does nothing when disabled (a pipe, or --quiet)."""

    def __init__(self, stream: IO[str], *, enabled: bool) -> None:
        self.enabled = enabled
        self.progress: Progress | None = None
        self.stream = stream
        self.units: TaskID | None = None
        self.bytes: TaskID | None = None

    def __enter__(self) -> FleetProgress:
        if self.enabled:
            self.progress = Progress(
                TextColumn("{task.description:<6}"),
                BarColumn(),
                MofNCompleteColumn(),
                DownloadColumn(),
                TimeRemainingColumn(),
                console=make_console(self.stream),
                transient=True,
            )
            self.progress.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.progress is not None:
            self.progress.__exit__(exc_type, exc, tb)

    def start(self, units: Sequence[Unit]) -> None:
        if self.progress is None:
            return
        self.units = self.progress.add_task("files", total=len(units))
        self.bytes = self.progress.add_task("bytes", total=sum(u.size for u in units))

    def unit_done(self, unit: Unit, result: UnitResult | None) -> None:
        if self.progress is None or self.units is None or self.bytes is None:
            return
        self.progress.advance(self.units, 1)
        self.progress.advance(self.bytes, unit.size)
