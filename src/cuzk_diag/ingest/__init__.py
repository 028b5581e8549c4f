"""Ingest: log bytes -> typed events -> one record per GPU call.

The stages, each a subpackage:

* ``parse``: cleaned text chunks -> ``Event``s, one module per line family, with the bulk
  classifier (Arrow compute over whole chunks) choosing which lines become events at all, and
  the accounting of every physical line;
* ``assemble``: events -> partition records (GPU-region blocks, the clock, the multi-GPU beam,
  identity, CPU-side lines, record emission);
* ``stream``: the one loop that reads inputs and drives both, used by batch analysis, the
  exports and live mode alike (optionally with the parse in a second process).

A regular install compiles these modules with Cython (``setup.py``); ``build()`` tells which
kind of build is running.
"""

import sys

from cuzk_diag.ingest.assemble import Assembler
from cuzk_diag.ingest.parse import LineParser, apply_source_stats, iter_events, parse_text
from cuzk_diag.ingest.stream import Ingest, stream, stream_events


def build() -> str:
    """``compiled`` when every module ``setup.py`` compiles (``event``, ``ingest/parse``,
    ``ingest/assemble``, ``ingest/stream``, ``frame``, and ``live`` and ``trace`` once imported)
    runs compiled, ``pure Python`` when none does, ``partly compiled`` otherwise."""
    from cuzk_diag import frame

    stages = (
        "cuzk_diag.event",
        "cuzk_diag.ingest.parse",
        "cuzk_diag.ingest.assemble",
        "cuzk_diag.ingest.stream",
        "cuzk_diag.live",
        "cuzk_diag.trace",
    )
    modules = [frame, *(m for n, m in list(sys.modules.items()) if n.startswith(stages))]
    kinds = {not str(getattr(m, "__file__", None) or ".py").endswith(".py") for m in modules}
    if kinds == {True}:
        return "compiled"
    return "pure Python" if kinds == {False} else "partly compiled"


__all__ = [
    "Assembler",
    "Ingest",
    "LineParser",
    "apply_source_stats",
    "build",
    "iter_events",
    "parse_text",
    "stream",
    "stream_events",
]
