"""cuzk-diag: find where the time goes in a cuzk proving daemon log.

Library entry points (no CLI needed)::

    from cuzk_diag import analyze, load
    result = analyze(["daemon.log"])   # Analysis: partitions, facts, stages, findings
    df = load("daemon.log")            # the partition frame (one row per GPU call)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["__version__", "analyze", "load", "load_run"]

if TYPE_CHECKING:
    import pandas as pd


def load(inputs: str | list[str]) -> pd.DataFrame:
    """Parse and assemble a log (or several); return one row per GPU call."""
    from cuzk_diag.pipeline import load_run as _load_run

    return _load_run(inputs).partitions


def __getattr__(name: str) -> Any:
    # Heavy modules load on first use so that `import cuzk_diag` stays cheap.
    if name == "analyze":
        from cuzk_diag.analysis import analyze

        return analyze
    if name == "load_run":
        from cuzk_diag.pipeline import load_run

        return load_run
    raise AttributeError(name)
