"""Renderings of ``cuzk-diag whatif``: console (rich), markdown and JSON.

Each takes the dict of ``model.whatif.WhatIfResult.to_dict()`` (layout in docs/whatif.md).
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from cuzk_diag.report.common import num, pct

#: (label, key, kind) of the table rows; kind: s = seconds, ms, pct, rate, text.
ROWS: tuple[tuple[str, str, str], ...] = (
    ("s/proof", "s_per_proof", "s"),
    ("proofs/min", "proofs_per_min", "rate"),
    ("call time, median", "call_ms_median", "ms"),
    ("call time, p95", "call_ms_p95", "ms"),
    ("lock wait, mean per call", "lock_wait_ms", "ms"),
    ("GPU util: TIMELINE intervals", "gpu_util_timeline", "pct"),
    ("GPU util: lock held", "gpu_util_lock", "pct"),
    ("GPU util: kernels", "gpu_util_kernel", "pct"),
    ("bottleneck", "bottleneck", "text"),
)
_STAGE = {"synthesis": "synthesis", "gpu": "GPU lock", "workers": "GPU workers"}


def _one(v: Any, kind: str, unit: bool = True) -> str:
    if v is None:
        return "n/a"
    if kind == "pct":
        return pct(v) if unit else f"{100 * v:.1f}"
    if kind == "s":
        return f"{v:.1f} s" if unit else f"{v:.1f}"
    if kind == "ms":
        return f"{num(round(v))} ms" if unit else num(round(v))
    if kind == "rate":
        return f"{v:.2f}"
    return _STAGE.get(str(v), str(v))


def cell(v: Any, kind: str) -> str:
    """A measured value, or a prediction as ``median (low–high)`` (the unit once)."""
    if isinstance(v, dict) and "median" in v:
        mid = _one(v["median"], kind)
        lo, hi = (_one(v[k], kind, unit=False) for k in ("low", "high"))
        return mid if lo == hi else f"{mid} ({lo}–{hi})"
    return _one(v, kind)


def header(d: dict[str, Any]) -> list[str]:
    """Model and self-check lines shown above the table."""
    m = d["model"]
    knobs = " ".join(f"{k}={v} ({m['knob_sources'].get(k, '?')})" for k, v in m["knobs"].items())
    seeds = d["seeds"]
    lines = [
        f"Model: {m['era']} code (groth16_cuda.cu V{m['cpp_version']}), "
        f"{m['calls_sampled']} measured calls resampled, seeds {seeds[0]}-{seeds[-1]}",
        f"Measured configuration: {knobs}",
    ]
    b = d["baseline"]
    err = b["error"]
    parts = []
    for key, label in (("s_per_proof", "s/proof"), ("call_ms_median", "median call time")):
        parts.append(f"{label} {pct(err.get(key))}")
    parts.append(f"lock wait {pct(err.get('lock_wait_ms'))} of the call time")
    verdict = "reliable" if b["reliable"] else "UNRELIABLE"
    lines.append(
        f"Self-check (model vs measured, same configuration): {', '.join(parts)}: {verdict}"
    )
    return lines


def table_rows(d: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Column titles and rows: measured, the model as measured, one column per scenario."""
    b = d["baseline"]
    titles = ["", "measured", "model, as measured"] + [s["label"] for s in d["scenarios"]]
    rows = []
    for label, key, kind in ROWS:
        row = [label, cell(b["measured"].get(key), kind), cell(b["predicted"].get(key), kind)]
        row += [cell(s["predicted"].get(key), kind) for s in d["scenarios"]]
        rows.append(row)
    change = ["s/proof vs model", "", ""]
    for s in d["scenarios"]:
        c = s.get("s_per_proof_change")
        change.append("n/a" if c is None else f"{c:+.1%}")
    if d["scenarios"]:
        rows.append(change)
    return titles, rows


def notes(d: dict[str, Any]) -> list[str]:
    """Per scenario: its summary against the model as measured, then its notes."""
    out = []
    for s in d["scenarios"]:
        out.append(s["summary"])
        out += [f"{s['label']}: {n}" for n in s["notes"]]
    return out


def render_console(d: dict[str, Any], stream: TextIO, color: str = "auto") -> None:
    from rich.table import Table
    from rich.text import Text

    from cuzk_diag.report.console import make_console

    console = make_console(stream, color)
    console.print(Text.assemble(("cuzk-diag whatif ", "bold"), (", ".join(d["inputs"]), "cyan")))
    for line in header(d):
        console.print(Text(line))
    titles, rows = table_rows(d)
    table = Table(show_edge=False, header_style="bold")
    for i, t in enumerate(titles):
        table.add_column(Text(t), justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*(Text(c) for c in row))
    console.print(table)
    for n in notes(d):
        console.print(Text(n))
    for w in d["warnings"]:
        console.print(Text(f"warning: {w}", style="yellow"))
    console.print(
        Text(
            "Predictions: median (lowest–highest) over the seeds. The model cannot see memory "
            "pressure, thermal throttling or code changes; see docs/whatif.md.",
            style="dim",
        )
    )


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def to_markdown(d: dict[str, Any]) -> str:
    out = [f"## cuzk-diag whatif: {_md(', '.join(d['inputs']))}", ""]
    out += [f"- {_md(line)}" for line in header(d)]
    out.append("")
    titles, rows = table_rows(d)
    out.append("| " + " | ".join(_md(t) for t in titles) + " |")
    out.append("|" + "---|" + "---:|" * (len(titles) - 1))
    out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    out.append("")
    out += [f"- {_md(n)}" for n in notes(d)]
    out += [f"- **warning:** {_md(w)}" for w in d["warnings"]]
    out.append("")
    out.append("Predictions: median (lowest–highest) over the seeds.")
    return "\n".join(out) + "\n"


def render(d: dict[str, Any], stream: TextIO, fmt: str = "console", color: str = "auto") -> None:
    """Write the result in ``fmt`` (console, json or markdown) to ``stream``."""
    if fmt == "json":
        stream.write(json.dumps(d, indent=2, allow_nan=False, default=str) + "\n")
    elif fmt == "markdown":
        stream.write(to_markdown(d))
    else:
        render_console(d, stream, color)
