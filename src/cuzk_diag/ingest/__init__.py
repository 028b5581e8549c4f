"""Ingest: log bytes -> typed events -> one record per GPU call.

The stages, each a subpackage:

* ``parse``: cleaned text chunks -> ``Event``s, one module per line family, with the bulk
  classifier (Arrow compute over whole chunks) choosing which lines become events at all, and
  the accounting of every physical line;
* ``assemble``: events -> partition records (GPU-region blocks, the clock, the multi-GPU beam,
  identity, CPU-side lines, record emission);
* ``stream``: the one loop that reads inputs and drives both, used by batch analysis, the
  exports and live mode alike (optionally with the parse in a second process).
"""

from cuzk_diag.ingest.assemble import Assembler
from cuzk_diag.ingest.parse import LineParser, apply_source_stats, iter_events, parse_text
from cuzk_diag.ingest.stream import Ingest, stream, stream_events

__all__ = [
    "Assembler",
    "Ingest",
    "LineParser",
    "apply_source_stats",
    "iter_events",
    "parse_text",
    "stream",
    "stream_events",
]
