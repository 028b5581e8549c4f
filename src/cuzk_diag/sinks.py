"""The life cycle every streaming output shares: ``start``, ``record``, ``finding``, ``finish``.

A ``Sink`` receives a run as it is read: each partition record when it completes, each finding
when it appears, and at the end what is known about the whole run (``StreamEnd``). The live JSON
Lines writer and dashboard, the partition export writers and the trace writer are sinks; the
registry in ``cuzk_diag.report`` names them (kind ``stream``). ``pipeline.stream_records`` drives
a sink over inputs read once from start to end; live mode drives one while the log grows.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from cuzk_diag.analysis import Analysis
    from cuzk_diag.records import Accounting, Finding, RunInfo


@dataclass(slots=True)
class StreamEnd:
    """What a sink learns when the stream ends."""

    info: RunInfo
    accounting: Accounting
    analysis: Analysis | None = None  # live mode: the final analysis
    snapshot: Any = None  # live mode: the last ``live.LiveSnapshot``


class Sink:
    """A streaming output; every method is a no-op here (``ReportOnly`` is the sink that shows
    only the end)."""

    #: Seconds between two ``update`` calls in live mode; None: no periodic updates.
    update_interval: float | None = None
    #: The reader of the output went away (a closed pipe): the run ends as at end of input.
    closed: bool = False
    #: Whether the sink may show something before the end (records, findings, updates). Live
    #: mode does the work of showing (the rules on a window of recent records, the stages'
    #: sketches, the records' shown form, early placements on idle input) only for a sink that
    #: does: not for ``ReportOnly``.
    shows_run: bool = True

    def start(self) -> None:
        """Called once before the first input is read."""

    #: Whether ``records`` takes tables: then records another process assembled come so.
    takes_tables: bool = False
    #: A log assembled in parts (``--jobs``): the fraction of it this process assembles, or
    #: None for as much as each other process. A sink whose own work per record outweighs the
    #: assembly's leaves more of the assembly to the others.
    own_share: float | None = None

    def record(self, record: dict[str, Any], *, revised: bool = False) -> None:
        """A partition record completed (``revised``: it replaces an earlier provisional one)."""

    def records(self, table: pa.Table) -> None:
        """Partition records completed together, as an Arrow table of ``PARTITION_SCHEMA``
        (``frame.records_to_table``); only for a sink that ``takes_tables``."""
        raise NotImplementedError(f"{type(self).__name__} does not take tables")

    def finding(self, finding: Finding, *, status: str = "new") -> None:
        """A finding appeared (``new``) or its severity changed (``changed``)."""

    def finding_cleared(self, finding: Finding) -> None:
        """A finding no longer holds (live mode, on its window)."""

    def segment(self) -> None:
        """TIMELINE offsets restart from here (the engine restarted, or the next input began)."""

    def notice(self, text: str) -> None:
        """Something about the input (waiting for the file, rotation, truncation): stderr."""
        print(f"cuzk-diag: {text}", file=sys.stderr, flush=True)

    def update(self, snapshot: Any) -> None:
        """Live mode: periodic state, every ``update_interval`` seconds."""

    def finish(self, end: StreamEnd) -> None:
        """End of input (or Ctrl-C in live mode)."""

    def flush(self) -> None:
        """Output so far should reach its reader now."""

    def close(self) -> None:
        """The run is over (also after an error)."""


class ReportOnly(Sink):
    """A sink that shows nothing while the run is read: only the final report counts, which the
    caller writes from the final analysis (``analyze -`` with a ``--format`` other than a
    terminal's console, or with ``--no-live``)."""

    shows_run = False
