"""The output registry: every format, keyed by what it renders and by its name.

Four kinds of output:

* ``analysis`` (``analyze --format``): ``render(analysis, stream, *, color)``;
* ``check`` (``check --format``): ``render(check_result, stream, *, color)``;
* ``comparison`` (``compare --format``): ``render(comparison, stream, *, color)``;
* ``fleet`` (``fleet-report --format``): ``render(fleet_report, stream, *, color)``;
* ``stream``: a ``sinks.Sink`` class fed records and findings as they come (live JSON Lines,
  the live dashboard, the partition export writers, the trace).

Entries name ``module`` (function ``render``) or ``module:attribute``; modules are imported only
when used, so rich is loaded only for the console formats. Add a format by adding a line here.
"""

from __future__ import annotations

import enum
import importlib
from typing import IO, TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from cuzk_diag.analysis import Analysis


class Kind(enum.StrEnum):
    """What a format renders."""

    ANALYSIS = "analysis"
    CHECK = "check"
    COMPARISON = "comparison"
    FLEET = "fleet"
    STREAM = "stream"


class Reporter(Protocol):
    def __call__(self, analysis: Analysis, stream: IO[str], *, color: str = "auto") -> None: ...


#: analysis formats: name -> module holding ``render``.
REPORTERS: dict[str, str] = {
    "console": "cuzk_diag.report.console",
    "json": "cuzk_diag.report.json_report",
    "markdown": "cuzk_diag.report.markdown",
    "github": "cuzk_diag.report.github",
    "junit": "cuzk_diag.report.junit",
    "sarif": "cuzk_diag.report.sarif",
    "html": "cuzk_diag.report.html",
}

#: check-result formats.
CHECK_REPORTERS: dict[str, str] = {
    "console": "cuzk_diag.report.compare_console:render_check",
    "json": "cuzk_diag.report.json_report:render_result",
    "markdown": "cuzk_diag.report.github:render_summary",
    "github": "cuzk_diag.report.github:render_check",
    "junit": "cuzk_diag.report.junit:render_check",
}

#: comparison formats.
COMPARISON_REPORTERS: dict[str, str] = {
    "console": "cuzk_diag.report.compare_console:render_compare",
    "json": "cuzk_diag.report.json_report:render_result",
    "markdown": "cuzk_diag.report.markdown:render_comparison",
    "html": "cuzk_diag.report.html:render_comparison",
}

#: fleet report formats (``fleet-report --format``).
FLEET_REPORTERS: dict[str, str] = {
    "console": "cuzk_diag.report.fleet:render_console",
    "json": "cuzk_diag.report.fleet:render_json",
    "markdown": "cuzk_diag.report.fleet:render_markdown",
    "html": "cuzk_diag.report.fleet:render_html",
}

#: stream formats: name -> ``Sink`` class.
SINKS: dict[str, str] = {
    "jsonl": "cuzk_diag.live:JsonLinesSink",
    "dashboard": "cuzk_diag.report.live_console:Dashboard",
    "trace": "cuzk_diag.trace:TraceWriter",
    "partitions": "cuzk_diag.writers:PartitionSink",
}

REGISTRY: dict[Kind, dict[str, str]] = {
    Kind.ANALYSIS: REPORTERS,
    Kind.CHECK: CHECK_REPORTERS,
    Kind.COMPARISON: COMPARISON_REPORTERS,
    Kind.FLEET: FLEET_REPORTERS,
    Kind.STREAM: SINKS,
}


def names(kind: Kind | str = Kind.ANALYSIS) -> list[str]:
    """The format names of ``kind``, in registry order."""
    return list(REGISTRY[Kind(kind)])


def lookup(kind: Kind | str, name: str) -> Any:
    """The renderer (or, for ``stream``, the sink class) of format ``name`` of ``kind``."""
    kind = Kind(kind)
    table = REGISTRY[kind]
    try:
        target = table[name]
    except KeyError:
        what = "report" if kind is Kind.ANALYSIS else str(kind)
        raise KeyError(f"unknown {what} format {name!r} (choose from {', '.join(table)})") from None
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr or "render")


def get_reporter(name: str) -> Reporter:
    """The ``render`` function of analysis format ``name``; ``KeyError`` for an unknown name."""
    render_fn: Reporter = lookup(Kind.ANALYSIS, name)
    return render_fn


def render(
    name: str, obj: Any, stream: IO[str], *, color: str = "auto", kind: Kind | str = Kind.ANALYSIS
) -> None:
    """Render ``obj`` (an analysis, check result or comparison) as format ``name``."""
    lookup(kind, name)(obj, stream, color=color)
