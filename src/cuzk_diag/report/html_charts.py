"""Vega-Lite specifications of the HTML report's charts, built from ``plotdata`` frames.

Each builder returns ``(spec, notes)``: a Vega-Lite spec (plain JSON types, data inlined) and
sentences the page prints under the chart (what was aggregated or left out). Marks carry a
``name`` so that their SVG groups (``<g class="... NAME_marks">``) can be found and counted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from cuzk_diag import plotdata
from cuzk_diag.stats import box_summary

if TYPE_CHECKING:
    from cuzk_diag.analysis import Analysis
    from cuzk_diag.facts import IdleGap, Waterfall

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
#: Plot width in CSS pixels (the page scales SVG down when narrower, e.g. in print).
WIDTH = 860
#: At most this many GPU calls are drawn one bar each; above, each lane shows time bins.
MAX_CALL_BARS = 2000
#: About this many rectangles for the time bins of a long run.
SHARE_RECTS = 6000
#: At most this many synthesis bars (above: syntheses in flight) and proof bands.
MAX_SYNTH_BARS = 2000
MAX_PROOF_BARS = 600
#: At most this many idle gaps marked (the longest).
MAX_GAPS = 400
LANE_PX = 22
ESTIMATED = "datum.kind === 'estimated'"

OTHER = "CPU / other, outside the lock"
PHASE_COLORS = {
    "lock wait": "#d62728",
    "kernels": "#2ca02c",
    "CPU prep wait": "#ff7f0e",
    OTHER: "#d9d9d9",
}
LANE_COLORS = {"cpu": "#17becf", "lock": "#d62728", "gpu": "#2ca02c"}
STATUS_COLORS = {"completed": "#4c78a8", "failed": "#d62728", "incomplete": "#bab0ac"}
VIEW_COLORS = {"scheduler": "#4c78a8", "lock held": "#f58518", "kernels": "#2ca02c"}
RUN_COLORS = ("#4c78a8", "#f58518")

CONFIG: dict[str, Any] = {
    "font": "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif",
    "axis": {"labelFontSize": 11, "titleFontSize": 11, "titleFontWeight": "normal"},
    "legend": {"orient": "top", "labelFontSize": 11, "titleFontSize": 11},
    "header": {"labelFontSize": 11, "titleFontSize": 11},
    "view": {"stroke": None},
}


def _r(v: Any, nd: int = 3) -> Any:
    """A JSON-safe number: NaN/NA -> None, numpy unwrapped, floats rounded."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return None
        return round(v, nd)
    return v


def _records(
    frame: pd.DataFrame, cols: Mapping[str, str | tuple[str, int]]
) -> list[dict[str, Any]]:
    """Rows as dicts: output key -> source column (or (column, decimals))."""
    out = []
    spec = {k: (v, 3) if isinstance(v, str) else v for k, v in cols.items()}
    arrays = {k: frame[c].tolist() for k, (c, _) in spec.items()}
    for i in range(len(frame)):
        out.append({k: _r(arrays[k][i], spec[k][1]) for k in spec})
    return out


def _sec(col: pd.Series) -> pd.Series:
    return col / 1000.0


def _base(spec: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": SCHEMA, "config": CONFIG, **spec}


def _zoom(name: str) -> list[dict[str, Any]]:
    return [{"name": name, "select": {"type": "interval", "encodings": ["x"]}, "bind": "scales"}]


def _tip(
    field: str, title: str, fmt: str | None = None, typ: str = "quantitative"
) -> dict[str, Any]:
    t: dict[str, Any] = {"field": field, "title": title, "type": typ}
    if fmt:
        t["format"] = fmt
    return t


@dataclass(frozen=True, slots=True)
class Prepared:
    """What several charts of one analysis need, computed once."""

    calls: plotdata.Calls  # every GPU call with a clock
    status: dict[str, str]  # job -> completed | failed | incomplete


def prepare(a: Analysis) -> Prepared:
    return Prepared(
        plotdata.call_spans(a.partitions, a.info, a.facts, a.lock),
        plotdata.job_status(a.partitions, a.info),
    )


# -- timeline -------------------------------------------------------------------------------


X_TIME = "engine clock (s, TIMELINE offset)"


def _x_time(field: str, axis: bool = True) -> dict[str, Any]:
    return {
        "field": field,
        "type": "quantitative",
        "title": X_TIME,
        "scale": {"zero": False},
        "axis": {"tickCount": 12, "labelOverlap": True, "labelFlush": False} if axis else None,
    }


def timeline(a: Analysis, prep: Prepared) -> tuple[dict[str, Any] | None, list[str]]:
    """Proof bands, synthesis lanes and one lane per GPU worker with every call as a bar; for a
    run of more than ``MAX_CALL_BARS`` calls each lane shows its phases' share of time bins."""
    calls = prep.calls
    if calls.frame.empty:
        return None, ["No GPU call has TIMELINE GPU_START and GPU_END lines: no timeline."]
    notes: list[str] = []
    charts = [c for c in (_proof_bands(a, prep, notes), _synthesis(a, notes)) if c is not None]
    if len(calls.frame) <= MAX_CALL_BARS:
        charts.append(_call_bars(calls, notes))
    else:
        charts.append(_call_shares(calls, notes))
    if calls.skipped:
        notes.append(f"{calls.skipped:,} call(s) without both GPU_START and GPU_END are not drawn.")
    overlap = plotdata.overlapping(calls)
    if overlap:
        notes.append(
            f"{overlap:,} call(s) start before the previous call of their worker ended (its "
            "GPU_END follows the finalizer, which runs while the worker takes its next call); "
            "there the bars overlap."
        )
    method = a.facts.lock_wait_method
    wait_kind = {
        "measured": "measured (mutex_wait_ms)",
        "pre_destructor": "estimated from the pre_destructor_ms gap",
        "timeline": "an upper bound from TIMELINE gpu_ms",
    }.get(method, "unknown")
    notes.append(
        f"Lock wait is {wait_kind}; CPU prep wait is the GPU thread's wait for the CPU's "
        "prep_msm inside the lock (barrier_wait_ms, or its estimate); kernels are gpu_total_ms "
        "less that wait; the grey rest of a call is CPU work outside the lock (set-up, "
        "epilogue, Rust)."
    )
    spec = _base(
        {
            "vconcat": charts,
            "spacing": 6,
            "resolve": {"scale": {"x": "shared", "color": "independent"}},
        }
    )
    return spec, notes


def _phase_scale(rest: str = OTHER) -> dict[str, Any]:
    phases = {**{k: v for k, v in PHASE_COLORS.items() if k != OTHER}, rest: PHASE_COLORS[OTHER]}
    return {"domain": list(phases), "range": list(phases.values())}


def _call_bars(calls: plotdata.Calls, notes: list[str]) -> dict[str, Any]:
    """One bar per call on its worker's lane, the phases drawn over it."""
    f = calls.frame
    notes.insert(0, f"One bar per GPU call: {len(f):,} calls.")
    g = f.assign(
        dur_ms=f["end_ms"] - f["start_ms"],
        s=_sec(f["start_ms"]),
        e=_sec(f["end_ms"]),
        ws=_sec(f["wait_start_ms"]),
        we=_sec(f["wait_start_ms"] + f["wait_ms"]),
        ks=_sec(f["kernel_start_ms"]),
        ke=_sec(f["kernel_start_ms"] + f["kernel_ms"]),
        ps=_sec(f["prep_start_ms"]),
        pe=_sec(f["prep_start_ms"] + f["prep_ms"]),
    )
    cols: dict[str, Any] = {
        k: (k, 0)
        for k in ("lane", "status", "dur_ms", "wait_ms", "kernel_ms", "prep_ms", "held_ms")
    }
    cols.update(
        job=("job_id", 0),
        partition=("partition", 0),
        first_line=("first_line", 0),
        last_line=("last_line", 0),
    )
    cols.update({k: k for k in ("s", "e", "ws", "we", "ks", "ke", "ps", "pe")})
    lanes = list(dict.fromkeys(f["lane"]))
    y = {
        "field": "lane",
        "type": "nominal",
        "sort": lanes,
        "title": None,
        "scale": {"paddingInner": 0.2},
        "axis": {"labelLimit": 160},
    }
    scale = _phase_scale()
    tip = [
        _tip("lane", "lane", typ="nominal"),
        _tip("job", "job", typ="nominal"),
        _tip("partition", "partition", "d"),
        _tip("status", "status", typ="nominal"),
        _tip("s", "GPU_START (s)", ",.3f"),
        _tip("dur_ms", "call (ms)", ",.0f"),
        _tip("wait_ms", "lock wait (ms)", ",.0f"),
        _tip("kernel_ms", "kernels (ms)", ",.0f"),
        _tip("prep_ms", "CPU prep wait (ms)", ",.0f"),
        _tip("held_ms", "lock held (ms)", ",.0f"),
        _tip("first_line", "first line", "d"),
        _tip("last_line", "last line", "d"),
    ]
    layers: list[dict[str, Any]] = [
        {
            "name": "timeline_calls",
            "params": _zoom("timeline_zoom"),
            "mark": {"type": "bar", "stroke": "#555", "strokeWidth": 0.5},
            "encoding": {
                "x": _x_time("s"),
                "x2": {"field": "e"},
                "y": y,
                "color": {"datum": OTHER, "scale": scale, "title": None},
                "tooltip": tip,
            },
        }
    ]
    for name, phase, start, end, ms in (
        ("timeline_wait", "lock wait", "ws", "we", "wait_ms"),
        ("timeline_kernels", "kernels", "ks", "ke", "kernel_ms"),
        ("timeline_prep", "CPU prep wait", "ps", "pe", "prep_ms"),
    ):
        if (f[ms] > 0).any():
            layers.append(
                {
                    "name": name,
                    "transform": [{"filter": f"datum.{ms} > 0"}],
                    "mark": {"type": "bar", "tooltip": False},
                    "encoding": {
                        "x": _x_time(start),
                        "x2": {"field": end},
                        "y": y,
                        "color": {"datum": phase, "scale": scale, "title": None},
                    },
                }
            )
    return {
        "width": WIDTH,
        "height": max(LANE_PX * len(lanes), 40),
        "data": {"values": _records(g, cols)},
        "layer": layers,
    }


def _call_shares(calls: plotdata.Calls, notes: list[str]) -> dict[str, Any]:
    """A long run: per worker lane and time bin, a column of the phases' shares of the bin."""
    f = calls.frame
    lanes = list(dict.fromkeys(f["lane"]))
    bins = max(60, min(240, SHARE_RECTS // (4 * len(lanes))))
    edges = plotdata.bin_edges(float(f["start_ms"].min()), float(f["end_ms"].max()), bins)
    shares = plotdata.lane_phases(calls, edges)
    order = [p for p, _, _ in plotdata.PHASES] + [plotdata.OTHER_PHASE]
    shares = shares.assign(
        rank=shares["phase"].map(order.index),
        row=shares["lane"].map({lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}),
        share=shares["share"].clip(upper=1.0),
    ).sort_values(["lane", "t0_ms", "rank"], kind="stable")
    top = shares.groupby(["lane", "t0_ms"], sort=False)["share"].cumsum().clip(upper=1.0)
    height = 0.85
    shares = shares.assign(
        y2=shares["row"] + top * height,
        y=shares["row"] + (top - shares["share"]) * height,
        s=_sec(shares["t0_ms"]),
        e=_sec(shares["t1_ms"]),
        phase=shares["phase"].replace({plotdata.OTHER_PHASE: OTHER}),
    )
    width_s = float(edges[1] - edges[0]) / 1000.0
    notes.insert(
        0,
        f"Aggregated: {len(f):,} calls are too many to draw one by one. Each worker lane is cut "
        f"into {len(edges) - 1} bins of {width_s:,.1f} s; a column shows the share of the bin "
        "the worker spent in each phase of its calls (full height = busy all the bin; empty = "
        "idle). Hover a column for its numbers; the exact calls are in the export "
        "(cuzk-diag export).",
    )
    rows = _records(
        shares,
        {
            "lane": ("lane", 0),
            "phase": ("phase", 0),
            "s": "s",
            "e": "e",
            "y": "y",
            "y2": "y2",
            "share": "share",
            "calls": ("calls", 0),
        },
    )
    labels = json.dumps(list(reversed(lanes)))
    return {
        "width": WIDTH,
        "height": max(LANE_PX * 1.6 * len(lanes), 60),
        "data": {"values": rows},
        "layer": [
            {
                "name": "timeline_shares",
                "params": _zoom("timeline_zoom"),
                "mark": {"type": "rect"},
                "encoding": {
                    "x": _x_time("s"),
                    "x2": {"field": "e"},
                    "y": {
                        "field": "y",
                        "type": "quantitative",
                        "title": None,
                        "scale": {"domain": [0, len(lanes)], "nice": False},
                        "axis": {
                            "values": [i + height / 2 for i in range(len(lanes))],
                            "labelExpr": f"{labels}[floor(datum.value)]",
                            "grid": False,
                            "ticks": False,
                            "domain": False,
                            "labelLimit": 160,
                        },
                    },
                    "y2": {"field": "y2"},
                    "color": {
                        "field": "phase",
                        "type": "nominal",
                        "title": None,
                        "scale": _phase_scale(),
                    },
                    "tooltip": [
                        _tip("lane", "lane", typ="nominal"),
                        _tip("phase", "phase", typ="nominal"),
                        _tip("s", "from (s)", ",.1f"),
                        _tip("e", "to (s)", ",.1f"),
                        _tip("share", "share of the bin", ".1%"),
                        _tip("calls", "calls started in the bin", ",d"),
                    ],
                },
            }
        ],
    }


def _proof_bands(a: Analysis, prep: Prepared, notes: list[str]) -> dict[str, Any] | None:
    proofs = plotdata.proof_spans(a.partitions, a.info, prep.status)
    if proofs.empty:
        return None
    pf, k = plotdata.aggregate_rows(proofs, MAX_PROOF_BARS)
    if k > 1:
        notes.append(f"Proof bands aggregated: each band stands for up to {k} consecutive proofs.")
    pf = pf.assign(s=_sec(pf["start_ms"]), e=_sec(pf["end_ms"]))
    pf = pf.assign(dur_s=pf["e"] - pf["s"])
    rows = int(pf["row"].max()) + 1
    return {
        "width": WIDTH,
        "height": max(8, min(14 * rows, 160)),
        "data": {
            "values": _records(
                pf,
                {
                    "row": ("row", 0),
                    "job": ("job_id", 0),
                    "status": ("status", 0),
                    "items": ("items", 0),
                    "s": "s",
                    "e": "e",
                    "dur_s": "dur_s",
                },
            )
        },
        "layer": [
            {
                "name": "timeline_proofs",
                "mark": {"type": "bar", "opacity": 0.85},
                "encoding": {
                    "x": _x_time("s", axis=False),
                    "x2": {"field": "e"},
                    "y": {
                        "field": "row",
                        "type": "ordinal",
                        "axis": {"labels": False, "ticks": False, "title": "proofs"},
                    },
                    "color": {
                        "field": "status",
                        "type": "nominal",
                        "title": "proof",
                        "scale": {
                            "domain": list(STATUS_COLORS),
                            "range": list(STATUS_COLORS.values()),
                        },
                    },
                    "tooltip": [
                        _tip("job", "job" if k == 1 else "first job", typ="nominal"),
                        _tip("status", "status", typ="nominal"),
                        _tip("s", "first event (s)", ",.3f"),
                        _tip("e", "last GPU_END (s)", ",.3f"),
                        _tip("dur_s", "span (s)", ",.1f"),
                        *([_tip("items", "proofs")] if k > 1 else []),
                    ],
                },
            }
        ],
    }


def _synthesis(a: Analysis, notes: list[str]) -> dict[str, Any] | None:
    """Synthesis lanes (one row per concurrent synthesis), or for a long run the number of
    syntheses in flight over time."""
    synth = plotdata.synth_spans(a.partitions)
    if synth.empty:
        return None
    if len(synth) > MAX_SYNTH_BARS:
        t0, t1 = float(synth["start_ms"].min()), float(synth["end_ms"].max())
        edges = plotdata.bin_edges(t0, t1, 240)
        active = plotdata.mean_active(
            synth["start_ms"].to_numpy(), synth["end_ms"].to_numpy(), edges
        )
        notes.append(
            f"Synthesis: {len(synth):,} partitions are too many for one bar each; the area is "
            "the mean number of partitions in synthesis per bin."
        )
        frame = pd.DataFrame({"s": edges[:-1] / 1000.0, "e": edges[1:] / 1000.0, "n": active})
        return {
            "width": WIDTH,
            "height": 60,
            "data": {"values": _records(frame, {"s": "s", "e": "e", "n": ("n", 2)})},
            "layer": [
                {
                    "name": "timeline_synth_in_flight",
                    "mark": {"type": "rect", "color": "#9467bd", "opacity": 0.8},
                    "encoding": {
                        "x": _x_time("s", axis=False),
                        "x2": {"field": "e"},
                        "y": {
                            "field": "n",
                            "type": "quantitative",
                            "title": "synthesis",
                            "axis": {"tickCount": 3},
                        },
                        "tooltip": [
                            _tip("s", "from (s)", ",.1f"),
                            _tip("n", "partitions in synthesis", ",.1f"),
                        ],
                    },
                }
            ],
        }
    synth = synth.assign(
        s=_sec(synth["start_ms"]),
        e=_sec(synth["end_ms"]),
        dur_ms=synth["end_ms"] - synth["start_ms"],
    )
    rows = int(synth["row"].max()) + 1
    return {
        "width": WIDTH,
        "height": max(8, min(6 * rows, 160)),
        "data": {
            "values": _records(
                synth,
                {
                    "row": ("row", 0),
                    "job": ("job_id", 0),
                    "partition": ("partition", 0),
                    "s": "s",
                    "e": "e",
                    "dur_ms": ("dur_ms", 0),
                },
            )
        },
        "layer": [
            {
                "name": "timeline_synth",
                "mark": {"type": "bar", "color": "#9467bd", "opacity": 0.8},
                "encoding": {
                    "x": _x_time("s", axis=False),
                    "x2": {"field": "e"},
                    "y": {
                        "field": "row",
                        "type": "ordinal",
                        "scale": {"paddingInner": 0.3},
                        "axis": {"labels": False, "ticks": False, "title": "synthesis"},
                    },
                    "tooltip": [
                        _tip("job", "job", typ="nominal"),
                        _tip("partition", "partition", "d"),
                        _tip("s", "SYNTH_START (s)", ",.3f"),
                        _tip("dur_ms", "synthesis (ms)", ",.0f"),
                    ],
                },
            }
        ],
    }


# -- waterfall ------------------------------------------------------------------------------


def waterfall(wf: Waterfall) -> dict[str, Any]:
    """The typical partition: one bar per phase at its median, estimated phases hatched."""
    segs = sorted(wf.segments, key=lambda s: (s.start_ms, s.lane != "cpu"))
    rows = [
        {
            "i": i,
            "name": s.name,
            "lane": s.lane,
            "start": _r(s.start_ms, 1),
            "end": _r(s.end_ms, 1),
            "dur": _r(s.duration_ms, 1),
            "kind": "measured" if s.measured else "estimated",
            "source": s.source,
        }
        for i, s in enumerate(segs)
    ]
    order = [s.name for s in segs]
    refs = [
        {"what": f"median {k}", "ms": _r(v, 1)} for k, v in wf.reference.items() if v is not None
    ]
    y = {"field": "name", "type": "nominal", "sort": order, "title": None}
    layers: list[dict[str, Any]] = [
        {
            "name": "waterfall_phases",
            "mark": {"type": "bar", "stroke": "#333", "strokeWidth": 0.5},
            "encoding": {
                "x": {
                    "field": "start",
                    "type": "quantitative",
                    "title": "ms from the call's entry",
                    "axis": {"tickCount": 10, "labelOverlap": True, "labelFlush": False},
                },
                "x2": {"field": "end"},
                "y": y,
                "color": {
                    "field": "lane",
                    "type": "nominal",
                    "title": "lane",
                    "scale": {"domain": list(LANE_COLORS), "range": list(LANE_COLORS.values())},
                },
                "opacity": {"condition": {"test": ESTIMATED, "value": 0.35}, "value": 1.0},
                "strokeDash": {"condition": {"test": ESTIMATED, "value": [4, 2]}, "value": [1, 0]},
                "tooltip": [
                    _tip("name", "phase", typ="nominal"),
                    _tip("dur", "median (ms)", ",.0f"),
                    _tip("start", "from (ms)", ",.0f"),
                    _tip("kind", "", typ="nominal"),
                    _tip("source", "from", typ="nominal"),
                ],
            },
        },
        {
            "mark": {"type": "text", "align": "left", "dx": 4, "fontSize": 10},
            "encoding": {
                "x": {"field": "end", "type": "quantitative"},
                "y": y,
                "text": {"field": "dur", "type": "quantitative", "format": ",.0f"},
            },
        },
    ]
    if refs:
        layers.append(
            {
                "data": {"values": refs},
                "mark": {"type": "rule", "strokeDash": [2, 2], "color": "#555"},
                "encoding": {
                    "x": {"field": "ms", "type": "quantitative"},
                    "tooltip": [
                        _tip("what", "measured", typ="nominal"),
                        _tip("ms", "ms", ",.0f"),
                    ],
                },
            }
        )
    return _base(
        {
            "width": WIDTH - 160,
            "height": LANE_PX * len(rows),
            "data": {"values": rows},
            "layer": layers,
        }
    )


# -- distributions --------------------------------------------------------------------------


def _box_rows(field: str, label: str, group: str, values: Iterable[float]) -> list[dict[str, Any]]:
    """Box-plot figures of one sample (``box_summary``) as one ``box`` row plus one ``outlier``
    row per value beyond the whiskers."""
    b = box_summary(np.asarray(list(values), dtype=float))
    if not b:
        return []
    row = {"field": label, "stage": field, "group": group, "kind": "box"}
    row.update({k: _r(v, 2) for k, v in b.items() if k != "outliers"})
    out = [row]
    out += [
        {"field": label, "stage": field, "group": group, "kind": "outlier", "value": _r(v, 2)}
        for v in b["outliers"]
    ]
    return out


def distributions(
    rows: list[dict[str, Any]], labels: Sequence[str], groups: Sequence[str], colors: Sequence[str]
) -> dict[str, Any]:
    """Box plots from ``_box_rows`` rows: one panel per stage (``labels`` in order, each with
    its own x scale), a box per group."""
    y: dict[str, Any] = {
        "field": "group",
        "type": "nominal",
        "title": None,
        "sort": list(groups),
        "scale": {"paddingInner": 0.25, "paddingOuter": 0.1},
    }
    if len(groups) == 1:
        y["axis"] = None
    color = {
        "field": "group",
        "type": "nominal",
        "title": None,
        "scale": {"domain": list(groups), "range": list(colors)},
        "legend": None if len(groups) == 1 else {"orient": "top"},
    }
    box_tip = [
        _tip("stage", "field", typ="nominal"),
        _tip("group", "", typ="nominal"),
        _tip("n", "n", ",d"),
        _tip("min", "min", ",.4~r"),
        _tip("q1", "q1", ",.4~r"),
        _tip("median", "median", ",.4~r"),
        _tip("q3", "q3", ",.4~r"),
        _tip("p95", "p95", ",.4~r"),
        _tip("max", "max", ",.4~r"),
        _tip("outliers_total", "beyond the whiskers", ",d"),
    ]
    x_axis = {"title": None, "tickCount": 8, "labelOverlap": True}
    panels: list[dict[str, Any]] = []
    for label in labels:
        boxes = [r for r in rows if r["field"] == label and r["kind"] == "box"]
        if not boxes:
            continue
        outliers = [r for r in rows if r["field"] == label and r["kind"] == "outlier"]
        x = {"type": "quantitative", "scale": {"zero": False}, "axis": x_axis, "stack": None}
        box = [{"filter": "datum.kind === 'box'"}]
        layers: list[dict[str, Any]] = [
            {
                "transform": box,
                "mark": {"type": "rule"},
                "encoding": {
                    "x": {**x, "field": "lower"},
                    "x2": {"field": "upper"},
                    "y": y,
                    "color": color,
                },
            },
            {
                "name": f"distribution_boxes_{len(panels)}",
                "transform": box,
                "mark": {"type": "bar", "opacity": 0.6},
                "encoding": {
                    "x": {**x, "field": "q1"},
                    "x2": {"field": "q3"},
                    "y": y,
                    "color": color,
                    "tooltip": box_tip,
                },
            },
            {
                "transform": box,
                "mark": {"type": "tick", "color": "#111", "thickness": 2},
                "encoding": {"x": {**x, "field": "median"}, "y": y, "tooltip": box_tip},
            },
        ]
        if outliers:
            layers.append(
                {
                    "transform": [{"filter": "datum.kind === 'outlier'"}],
                    "mark": {"type": "point", "size": 16, "filled": False},
                    "encoding": {
                        "x": {**x, "field": "value"},
                        "y": y,
                        "color": color,
                        "tooltip": [
                            _tip("stage", "field", typ="nominal"),
                            _tip("group", "", typ="nominal"),
                            _tip("value", "value", ",.4~r"),
                        ],
                    },
                }
            )
        panels.append(
            {
                "title": {
                    "text": label,
                    "anchor": "start",
                    "fontSize": 12,
                    "fontWeight": "normal",
                    "font": "ui-monospace, Menlo, Consolas, monospace",
                    "offset": 2,
                },
                "width": WIDTH - 140,
                "height": 16 * len(groups) + 4,
                "data": {"values": boxes + outliers},
                "layer": layers,
            }
        )
    return _base(
        {
            "vconcat": panels,
            "spacing": 6,
            "resolve": {"scale": {"x": "independent", "y": "shared", "color": "shared"}},
        }
    )


def stage_distributions(a: Analysis) -> tuple[dict[str, Any] | None, list[str]]:
    """Box per stage field (the stage table's fields), per GPU where the run has several."""
    from cuzk_diag.facts import gpu_of_rows, stage_series

    if a.stages.empty:
        return None, ["No timing field has values: no distributions."]
    df = a.partitions
    gpu = gpu_of_rows(df, a.info, a.facts.gw)
    gpus = sorted(set(gpu.tolist()))
    per_gpu = len(gpus) > 1
    groups = [f"GPU {g}" for g in gpus] if per_gpu else ["all calls"]
    rows: list[dict[str, Any]] = []
    series = list(stage_series(df))
    fields = [name for name, _ in series]
    masks = [gpu.to_numpy() == g for g in gpus] if per_gpu else [None]
    for field, values in series:
        vals = values.to_numpy()
        for mask, label in zip(masks, groups, strict=True):
            rows += _box_rows(field, field, label, vals if mask is None else vals[mask])
    palette = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d"]
    colors = [palette[i % len(palette)] for i in range(len(groups))]
    notes = [
        "Values in ms. Boxes span the quartiles; the black tick is the median; whiskers reach "
        "the furthest value within 1.5 × IQR; circles are values beyond (the 40 furthest per "
        "box). Each field has its own scale."
    ]
    return distributions(rows, fields, groups, colors), notes


# -- utilisation and s/proof over time ------------------------------------------------------


def over_time(a: Analysis, prep: Prepared) -> tuple[dict[str, Any] | None, list[str]]:
    """Per GPU: utilisation in three views per time bin, idle gaps marked; then s/proof."""
    util = plotdata.utilisation_series(prep.calls)
    thr = plotdata.throughput_series(a.partitions, a.info, status=prep.status)
    notes: list[str] = []
    charts: list[dict[str, Any]] = []
    x = _x_time("s")
    gaps: list[IdleGap] = a.facts.idle_gaps.largest(MAX_GAPS)
    if len(a.facts.idle_gaps) > MAX_GAPS:
        notes.append(f"Idle gaps: the {MAX_GAPS} longest of {len(a.facts.idle_gaps):,} are marked.")
    views = [v for v, _ in plotdata.UTIL_VIEWS]
    if not util.empty:
        width = float((util["t1_ms"] - util["t0_ms"]).iloc[0])
        notes.append(
            "Utilisation per time bin of about "
            f"{width / 1000:,.2f} s: "
            + "; ".join(f"{v}: {what}" for v, what in plotdata.UTIL_VIEWS)
            + ". The views nest (kernels within lock held within scheduler) and are drawn over "
            "each other. Red bands are idle gaps (no call between a GPU_END and the next "
            "GPU_START)."
        )
        first = True
        for gpu, sub in util.groupby("gpu", sort=True):
            sub = sub.assign(
                s=_sec(sub["t0_ms"]), e=_sec(sub["t1_ms"]), order=sub["view"].map(views.index)
            )
            gap_rows = [
                {
                    "s": _r(g.start_ms / 1000.0),
                    "e": _r(g.end_ms / 1000.0),
                    "ms": _r(g.duration_ms, 0),
                    "between": "between proofs" if g.between_proofs else "within a proof",
                }
                for g in gaps
                if g.gpu == gpu
            ]
            layers: list[dict[str, Any]] = []
            if gap_rows:
                layers.append(
                    {
                        "name": f"idle_gaps_gpu{gpu}",
                        "data": {"values": gap_rows},
                        "mark": {"type": "rect", "color": "#d62728", "opacity": 0.25},
                        "encoding": {
                            "x": x,
                            "x2": {"field": "e"},
                            "tooltip": [
                                _tip("ms", "idle gap (ms)", ",.0f"),
                                _tip("s", "from (s)", ",.3f"),
                                _tip("between", "", typ="nominal"),
                            ],
                        },
                    }
                )
            line: dict[str, Any] = {
                "name": f"utilisation_gpu{gpu}",
                "data": {
                    "values": _records(
                        sub, {"s": "s", "view": ("view", 0), "util": "util", "order": ("order", 0)}
                    )
                },
                "mark": {"type": "area", "interpolate": "step-after", "line": True},
                "encoding": {
                    "x": x,
                    "y": {
                        "field": "util",
                        "type": "quantitative",
                        "title": f"GPU {gpu} busy",
                        "axis": {"format": ".0%", "tickCount": 4},
                        "scale": {"domain": [0, 1]},
                        "stack": None,
                    },
                    "color": {
                        "field": "view",
                        "type": "nominal",
                        "title": "utilisation view",
                        "scale": {"domain": views, "range": [VIEW_COLORS[v] for v in views]},
                        **({} if first else {"legend": None}),
                    },
                    "order": {"field": "order", "type": "quantitative"},
                    "tooltip": [
                        _tip("view", "view", typ="nominal"),
                        _tip("s", "bin from (s)", ",.1f"),
                        _tip("util", "busy", ".1%"),
                    ],
                },
            }
            if first:
                line["params"] = _zoom("time_zoom")
                first = False
            layers.append(line)
            charts.append({"width": WIDTH, "height": 110, "layer": layers})
    if not thr.empty:
        thr = thr.assign(s=_sec(thr["t_ms"]))
        w = int(thr["window"].max())
        series = [thr.assign(series="cumulative", v=thr["cumulative_s"])]
        if len(thr) >= 3:
            series.insert(0, thr.assign(series=f"rolling (last {w})", v=thr["rolling_s"]))
        long = pd.concat(series)
        layers = [
            {
                "name": "throughput",
                "data": {
                    "values": _records(
                        long,
                        {
                            "s": "s",
                            "v": ("v", 2),
                            "series": ("series", 0),
                            "n": ("n", 0),
                            "job": ("job_id", 0),
                        },
                    )
                },
                "mark": {"type": "line", "point": True, "strokeWidth": 1.5},
                "encoding": {
                    "x": x,
                    "y": {"field": "v", "type": "quantitative", "title": "s/proof"},
                    "color": {
                        "field": "series",
                        "type": "nominal",
                        "title": "s/proof",
                        "scale": {
                            "range": ["#e45756", "#9d755d"] if len(series) > 1 else ["#9d755d"]
                        },
                    },
                    "tooltip": [
                        _tip("series", "", typ="nominal"),
                        _tip("v", "s/proof", ",.1f"),
                        _tip("n", "completed proofs", "d"),
                        _tip("job", "completed job", typ="nominal"),
                        _tip("s", "at (s)", ",.1f"),
                    ],
                },
            }
        ]
        if a.facts.s_per_proof is not None:
            layers.append(
                {
                    "data": {
                        "values": [
                            {
                                "v": _r(a.facts.s_per_proof, 2),
                                "what": f"run s/proof ({a.facts.s_per_proof_source})",
                                "label": f"run: {a.facts.s_per_proof:,.1f} s/proof "
                                f"({a.facts.s_per_proof_source})",
                            }
                        ]
                    },
                    "layer": [
                        {
                            "mark": {"type": "rule", "strokeDash": [4, 3], "color": "#555"},
                            "encoding": {
                                "y": {"field": "v", "type": "quantitative"},
                                "tooltip": [
                                    _tip("what", "", typ="nominal"),
                                    _tip("v", "s/proof", ",.1f"),
                                ],
                            },
                        },
                        {
                            "mark": {
                                "type": "text",
                                "align": "left",
                                "baseline": "bottom",
                                "dx": 4,
                                "dy": -2,
                                "x": 0,
                                "fontSize": 10,
                                "color": "#555",
                            },
                            "encoding": {
                                "y": {"field": "v", "type": "quantitative"},
                                "text": {"field": "label", "type": "nominal"},
                            },
                        },
                    ],
                }
            )
        if not charts:
            layers[0]["params"] = _zoom("time_zoom")
        charts.append({"width": WIDTH, "height": 130, "layer": layers})
        rolling = f"rolling over the last {w} completions, and " if len(series) > 1 else ""
        notes.append(
            f"s/proof at each proof completion (a completed proof's last GPU_END): {rolling}"
            "cumulative since the first SYNTH_START; the dashed line is the run's s/proof from "
            "the header."
        )
        if len(thr) < 3:
            notes.append(f"Only {len(thr)} completed proof(s): too few for a trend over time.")
    else:
        notes.append("No completed proof with TIMELINE lines: no s/proof over time.")
    if not charts:
        return None, notes
    spec = _base(
        {
            "vconcat": charts,
            "spacing": 8,
            "resolve": {"scale": {"x": "shared", "color": "independent", "y": "independent"}},
        }
    )
    return spec, notes


# -- comparison -----------------------------------------------------------------------------


def compare_distributions(
    fields: Sequence[tuple[str, str]],
    samples: Sequence[Mapping[str, Any]],
    labels: Sequence[str],
) -> dict[str, Any]:
    """Both runs' boxes per stage: ``fields`` = (field, panel label), ``samples`` per run."""
    rows: list[dict[str, Any]] = []
    for field, label in fields:
        for run, label_run in zip(samples, labels, strict=True):
            s = run.get(field)
            if s is not None:
                rows += _box_rows(field, label, label_run, s)
    return distributions(rows, [lab for _, lab in fields], labels, RUN_COLORS)
