"""Reporters, chosen by name. Each is a module with ``render(analysis, stream, *, color)``.

Modules are imported only when used, so rich is loaded only for the console report.
"""

from __future__ import annotations

import importlib
from typing import IO, TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cuzk_diag.analysis import Analysis


class Reporter(Protocol):
    def __call__(self, analysis: Analysis, stream: IO[str], *, color: str = "auto") -> None: ...


#: name -> module holding ``render``. Add a reporter by adding a line here.
REPORTERS: dict[str, str] = {
    "console": "cuzk_diag.report.console",
    "json": "cuzk_diag.report.json_report",
    "markdown": "cuzk_diag.report.markdown",
    "html": "cuzk_diag.report.html",
}


def names() -> list[str]:
    return list(REPORTERS)


def get_reporter(name: str) -> Reporter:
    """The ``render`` function of reporter ``name``; ``KeyError`` for an unknown name."""
    try:
        module = REPORTERS[name]
    except KeyError:
        raise KeyError(
            f"unknown report format {name!r} (choose from {', '.join(REPORTERS)})"
        ) from None
    render: Reporter = importlib.import_module(module).render
    return render


def render(name: str, analysis: Analysis, stream: IO[str], *, color: str = "auto") -> None:
    get_reporter(name)(analysis, stream, color=color)
