"""JSON: the report (``Analysis.to_dict()``, layout in docs/report-schema.md), check results
and comparisons."""

from __future__ import annotations

import json
from typing import IO, TYPE_CHECKING, Any

from cuzk_diag.sanitize import write_neutralised_json

if TYPE_CHECKING:
    from cuzk_diag.analysis import Analysis


def render(analysis: Analysis, stream: IO[str], *, color: str = "auto") -> None:
    """Write the report as one JSON document (``color`` is ignored)."""
    # run info and accounting quote the log (failure messages, job ids, unknown keys)
    write_neutralised_json(analysis.to_dict(compact=True), stream, allow_nan=False)
    stream.write("\n")


def render_result(result: Any, stream: IO[str], *, color: str = "auto") -> None:
    """A check result or a comparison as one JSON document (its ``to_dict()``)."""
    stream.write(json.dumps(result.to_dict(), indent=2, allow_nan=False, default=str) + "\n")
