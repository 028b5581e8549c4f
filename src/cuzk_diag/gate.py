"""CI gates for ``cuzk-diag check``: run metrics, gate specs (TOML and CLI) and their evaluation.

A run is reduced to :class:`RunMetrics`: a flat dict of named numbers (``s_per_proof``,
``gpu_total_ms.p50``, ``prestage_fallback.rate``, ``findings.error`` ...) plus the per-partition
samples behind every stage metric, the run's shape and its findings. A :class:`GateSpec` says
what must hold; :func:`evaluate` turns both into :class:`GateResult` rows.
"""

from __future__ import annotations

import difflib
import enum
import math
import operator
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from cuzk_diag.errors import ConfigError, InputError
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.facts import PRESTAGE_FALLBACKS, is_one_of, is_value, kernel_time
from cuzk_diag.records import OFFSET_COLUMNS, PARTITION_COLUMNS, Finding, Severity
from cuzk_diag.stats import mann_whitney_u, relative_change

FloatArray = npt.NDArray[np.float64]

# --------------------------------------------------------------------------------------------
# Metric names
# --------------------------------------------------------------------------------------------

#: Every per-call duration column of the partition schema, in schema order.
DURATION_FIELDS: tuple[str, ...] = tuple(
    name for name, _ in PARTITION_COLUMNS if name.endswith("_ms") and name not in OFFSET_COLUMNS
)
#: Derived per-call sample: the kernel view of a call (``facts.kernel_time``): its measured
#: kernel stages, without the barrier wait that ``gpu_total_ms`` includes.
KERNEL_FIELD = "kernel_ms"
#: Derived per-call sample: GPU_PICKUP - CHAN_SEND/GPU_QUEUE (as in the facts stage table).
QUEUE_WAIT_FIELD = "gpu_queue_wait_ms"
SAMPLE_FIELDS: tuple[str, ...] = (*DURATION_FIELDS, QUEUE_WAIT_FIELD, KERNEL_FIELD)

#: Statistics of a sample field, as metric suffixes (``gpu_total_ms.p50``).
SAMPLE_STATS: tuple[str, ...] = ("p50", "p95", "p99", "mean", "min", "max", "n")
#: Statistics a Mann-Whitney test speaks for (location); ``.n`` is a count, not a sample.
TESTED_STATS = frozenset({"p50", "p95", "p99", "mean", "min", "max"})
STAT_ALIASES = {"median": "p50"}

#: Run-level metrics that always have a name, even when a run cannot measure them.
RUN_METRICS: tuple[str, ...] = (
    "s_per_proof",
    "proofs_per_min",
    "proofs",
    "partitions",
    "util_merged",
    "util_held",
    "util_kernel",
    "calls.n",
    "calls.failed",
    "calls.incomplete",
    "prestage_fallback.count",
    "prestage_fallback.rate",
    "host_register_fallback.count",
    "host_register_fallback.rate",
    "findings.error",
    "findings.warning",
    "findings.info",
    "findings.total",
    "accounting.malformed",
    "accounting.unattributed",
    "accounting.invalid_values",
)

#: Metric names for facts.RunFacts fields (the names used in the docs' utilisation analyses).
FACT_ALIASES = {"util_merged": "gpu_util", "util_held": "held_util", "util_kernel": "kernel_util"}


def canonical_metric(name: str) -> str:
    """Normalise aliases: ``gpu_total_ms.median`` -> ``gpu_total_ms.p50``."""
    name = name.strip()
    base, dot, stat = name.rpartition(".")
    if dot and stat in STAT_ALIASES:
        return f"{base}.{STAT_ALIASES[stat]}"
    return name


def split_sample_metric(name: str) -> tuple[str, str] | None:
    """``gpu_total_ms.p95`` -> ``("gpu_total_ms", "p95")``; None for run-level metrics."""
    base, dot, stat = name.rpartition(".")
    if dot and base in SAMPLE_FIELDS and stat in SAMPLE_STATS:
        return base, stat
    return None


def known_metric_names() -> list[str]:
    """Every metric name that can appear, for help texts and suggestions."""
    names = list(RUN_METRICS)
    names += [f"{f}.{s}" for f in SAMPLE_FIELDS for s in SAMPLE_STATS]
    return names


# --------------------------------------------------------------------------------------------
# Run metrics
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunShape:
    """What must match for two runs to be comparable."""

    era: str | None = None
    n_gpus: int | None = None
    gw: int | None = None
    proof_kind: str | None = None
    bench_count: int | None = None  # cuzk-bench -c
    bench_concurrency: int | None = None  # cuzk-bench -j

    LABELS = {
        "era": "code era",
        "n_gpus": "GPUs",
        "gw": "GPU workers per GPU (gw)",
        "proof_kind": "proof kind",
        "bench_count": "cuzk-bench count (-c)",
        "bench_concurrency": "cuzk-bench concurrency (-j)",
    }

    def differences(self, other: RunShape) -> list[tuple[str, Any, Any]]:
        """Fields known in both shapes that differ: (field, self value, other value)."""
        out = []
        for key in self.LABELS:
            a, b = getattr(self, key), getattr(other, key)
            if a is not None and b is not None and a != b:
                out.append((key, a, b))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.LABELS}


@dataclass(frozen=True)
class RunMetrics:
    """A run reduced to what gates and comparisons need."""

    label: str
    values: dict[str, float | None]  # metric name -> value (None: named but not measured here)
    samples: dict[str, FloatArray]  # sample field -> per-call values (no NaN, never empty)
    shape: RunShape
    findings: tuple[Finding, ...] = ()

    @property
    def n_calls(self) -> int:
        v = self.values.get("calls.n")
        return int(v) if v is not None else 0

    def has(self, metric: str) -> bool:
        """The metric has a name in this run (it may still be unmeasured)."""
        metric = canonical_metric(metric)
        return metric in self.values or split_sample_metric(metric) is not None

    def get(self, metric: str) -> float | None:
        """The metric's value, None when not measured; ConfigError when the name is unknown."""
        metric = canonical_metric(metric)
        if metric in self.values:
            return self.values[metric]
        if split_sample_metric(metric) is not None:
            return None  # a stage this run has no values for
        raise ConfigError(unknown_metric_message(metric, self.values))


def unknown_metric_message(name: str, extra: Iterable[str] = ()) -> str:
    pool = sorted(set(known_metric_names()) | set(extra))
    close = difflib.get_close_matches(name, pool, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return (
        f"unknown metric {name!r}{hint} (metrics: run-level names like s_per_proof, "
        "util_kernel, prestage_fallback.rate, findings.error, or <stage>.p50/.p95/.mean/"
        "... for a timing column such as gpu_total_ms)"
    )


def _num(v: Any) -> float | None:
    """A plain float from a fact value, None for missing/non-numeric."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int | float | np.integer | np.floating):
        f = float(v)
        return None if math.isnan(f) else f
    return None


def _int_or_none(v: Any) -> int | None:
    f = _num(v)
    return int(f) if f is not None else None


def _sample(partitions: pd.DataFrame, column: str) -> FloatArray:
    if column not in partitions.columns:
        return np.empty(0, dtype=np.float64)
    s = pd.to_numeric(partitions[column], errors="coerce").dropna()
    return np.asarray(s.to_numpy(dtype=np.float64), dtype=np.float64)


def kernel_sample(partitions: pd.DataFrame) -> FloatArray:
    """Kernel time per call: ntt_msm_h (or the CUZK_NTT_H kernel parts) + batch_add + tail_msm."""
    if len(partitions) == 0:
        return np.empty(0, dtype=np.float64)
    out = kernel_time(partitions)[0].dropna()
    return np.asarray(out.to_numpy(dtype=np.float64), dtype=np.float64)


def queue_wait_sample(partitions: pd.DataFrame) -> FloatArray:
    """GPU_PICKUP - CHAN_SEND/GPU_QUEUE per call: the wait for a free GPU worker."""
    if "pickup_ms" not in partitions.columns or "queue_ms" not in partitions.columns:
        return np.empty(0, dtype=np.float64)
    pick = pd.to_numeric(partitions["pickup_ms"], errors="coerce").astype("float64")
    queue = pd.to_numeric(partitions["queue_ms"], errors="coerce").astype("float64")
    return np.asarray((pick - queue).dropna().to_numpy(dtype=np.float64), dtype=np.float64)


def _stats_of(sample: FloatArray) -> dict[str, float]:
    return {
        "p50": float(np.percentile(sample, 50)),
        "p95": float(np.percentile(sample, 95)),
        "p99": float(np.percentile(sample, 99)),
        "mean": float(np.mean(sample)),
        "min": float(np.min(sample)),
        "max": float(np.max(sample)),
        "n": float(sample.size),
    }


def _shape_from(facts: Mapping[str, Any], info: Any, partitions: pd.DataFrame) -> RunShape:
    def fact(*keys: str) -> Any:
        for k in keys:
            if facts.get(k) is not None:
                return facts[k]
        return None

    bench: Mapping[str, Any] = getattr(info, "bench", None) or {}
    era = fact("era")
    if era is None and info is not None:
        era = getattr(info, "era", None)
    if era is None and "era" in partitions.columns:
        era = _mode(partitions["era"])
    if era in ("unknown", "", "none"):
        era = None
    proof_kind = fact("proof_kind")
    if proof_kind is None and "proof_kind" in partitions.columns:
        proof_kind = _mode(partitions["proof_kind"])
    if proof_kind is None and bench.get("proof_type"):
        proof_kind = str(bench["proof_type"])
    n_gpus = fact("n_gpus")
    if n_gpus is None and facts.get("gpus"):
        n_gpus = len(facts["gpus"])
    if n_gpus is None:
        n_gpus = getattr(info, "n_gpus", None)
    gw = fact("gw") if fact("gw") is not None else getattr(info, "gw", None)
    count = fact("bench_count", "count", "c")
    if count is None:
        count = bench.get("count")
    conc = fact("bench_concurrency", "concurrency", "j")
    if conc is None:
        conc = bench.get("concurrency")
    return RunShape(
        era=str(era) if era is not None else None,
        n_gpus=_int_or_none(n_gpus),
        gw=_int_or_none(gw),
        proof_kind=str(proof_kind) if proof_kind is not None else None,
        bench_count=_int_or_none(count),
        bench_concurrency=_int_or_none(conc),
    )


def _mode(series: pd.Series) -> Any:
    s = series.dropna()
    if s.empty:
        return None
    return s.astype(str).value_counts().index[0]


def metrics_from_frame(
    partitions: pd.DataFrame,
    *,
    facts: Mapping[str, Any] | None = None,
    findings: Sequence[Finding] = (),
    accounting: Any = None,
    info: Any = None,
    label: str = "",
) -> RunMetrics:
    """Reduce a partition frame (PARTITION_SCHEMA columns) and its run facts to RunMetrics.

    ``facts`` is ``RunFacts.to_dict()``: every numeric fact becomes a metric under its own name
    (``s_per_proof``, ``util_kernel`` ...). ``info`` is a ``records.RunInfo`` (for cuzk-bench
    -c/-j), ``accounting`` a ``records.Accounting``; both optional.
    """
    facts = dict(facts or {})
    values: dict[str, float | None] = {name: None for name in RUN_METRICS}
    for key, v in facts.items():
        if not isinstance(key, str):
            continue
        if isinstance(v, Mapping):  # one level of nesting: idle_gaps.total_ms, ...
            for sub, sv in v.items():
                if isinstance(sub, str) and not isinstance(sv, Mapping | list | tuple | str):
                    values[f"{key}.{sub}"] = _num(sv)
        elif not isinstance(v, list | tuple | str):
            values[key] = _num(v)
    for alias, fact in FACT_ALIASES.items():
        if values.get(alias) is None and values.get(fact) is not None:
            values[alias] = values[fact]
    sp = values.get("s_per_proof")
    if values.get("proofs_per_min") is None and sp:
        values["proofs_per_min"] = 60.0 / sp

    samples: dict[str, FloatArray] = {}
    for column in DURATION_FIELDS:
        s = _sample(partitions, column)
        if s.size:
            samples[column] = s
    k = kernel_sample(partitions)
    if k.size:
        samples[KERNEL_FIELD] = k
    q = queue_wait_sample(partitions)
    if q.size:
        samples[QUEUE_WAIT_FIELD] = q
    for column, s in samples.items():
        for stat, v in _stats_of(s).items():
            values[f"{column}.{stat}"] = v

    n = len(partitions)
    values["calls.n"] = float(n)
    values["calls.failed"] = float(is_value(partitions, "status", "failed").sum())
    values["calls.incomplete"] = float(is_value(partitions, "status", "incomplete").sum())
    if values.get("partitions") is None:
        values["partitions"] = float(n)

    hr_fallback = is_value(partitions, "host_register", "fallback")
    ps_fallback = is_one_of(partitions, "prestage_setup", PRESTAGE_FALLBACKS)
    # A failed host registration also means no pre-staging for that call (reference T9).
    fell_back = int((ps_fallback | hr_fallback).sum())
    values["prestage_fallback.count"] = float(fell_back)
    values["prestage_fallback.rate"] = fell_back / n if n else None
    hr = int(hr_fallback.sum())
    values["host_register_fallback.count"] = float(hr)
    values["host_register_fallback.rate"] = hr / n if n else None

    by_sev = Counter(f.severity for f in findings)
    values["findings.error"] = float(by_sev[Severity.ERROR])
    values["findings.warning"] = float(by_sev[Severity.WARNING])
    values["findings.info"] = float(by_sev[Severity.INFO])
    values["findings.total"] = float(len(findings))

    if accounting is not None:
        values["accounting.malformed"] = _num(getattr(accounting, "malformed", None))
        values["accounting.unattributed"] = _num(getattr(accounting, "unattributed", None))
        values["accounting.invalid_values"] = _num(getattr(accounting, "invalid_values", None))

    return RunMetrics(
        label=label,
        values=values,
        samples=samples,
        shape=_shape_from(facts, info, partitions),
        findings=tuple(findings),
    )


def metrics_from_analysis(analysis: Any, label: str = "") -> RunMetrics:
    """RunMetrics of an ``analysis.Analysis``."""
    facts_obj = getattr(analysis, "facts", None)
    if facts_obj is None:
        facts: dict[str, Any] = {}
    elif hasattr(facts_obj, "to_dict"):
        facts = dict(facts_obj.to_dict())
    else:
        facts = dict(facts_obj)
    info = getattr(analysis, "info", None)
    if info is None:
        run = getattr(analysis, "run", None)
        info = getattr(run, "info", None)
    return metrics_from_frame(
        analysis.partitions,
        facts=facts,
        findings=list(getattr(analysis, "findings", ()) or ()),
        accounting=getattr(analysis, "accounting", None),
        info=info,
        label=label,
    )


class NoDataError(InputError):
    """A run has no GPU calls, so no gate can speak for it."""


class ShapeMismatchError(InputError):
    """Two runs differ in configuration and would compare apples with oranges."""

    def __init__(self, differences: Sequence[tuple[str, Any, Any]], base: str, cand: str):
        self.differences = list(differences)
        parts = [
            f"{RunShape.LABELS.get(k, k)}: {a} (baseline) vs {b} (candidate)"
            for k, a, b in self.differences
        ]
        super().__init__(
            f"runs differ in configuration, refusing to compare {base} with {cand}: "
            + "; ".join(parts)
            + " (use --allow-different-config to compare anyway)"
        )


def require_calls(metrics: RunMetrics) -> None:
    """Raise NoDataError when a run has no GPU calls (a log without timing lines)."""
    if metrics.n_calls == 0:
        name = metrics.label or "the input"
        raise NoDataError(
            f"{name}: no GPU calls found (no CUZK_TIMING / TIMELINE GPU lines); nothing to check"
        )


def check_shapes(
    base: RunMetrics, cand: RunMetrics, *, allow_different_config: bool = False
) -> list[tuple[str, Any, Any]]:
    """The shape differences; raises ShapeMismatchError unless allowed."""
    diffs = base.shape.differences(cand.shape)
    if diffs and not allow_different_config:
        raise ShapeMismatchError(diffs, base.label or "baseline", cand.label or "candidate")
    return diffs


# --------------------------------------------------------------------------------------------
# Gate specs
# --------------------------------------------------------------------------------------------


class Origin(enum.StrEnum):
    """Where a gate was declared: built in, the TOML config, or the command line."""

    DEFAULT = "default"
    CONFIG = "config"
    CLI = "cli"


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _not_close(a: float, b: float) -> bool:
    return not _close(a, b)


_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
    "==": _close,
    "!=": _not_close,
}
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_METRIC = r"[A-Za-z_][A-Za-z0-9_.]*"
# Matched with fullmatch() on stripped text. Possessive blanks: every pattern of the package runs
# in time linear in its input (tests/test_patterns.py).
_BOUND_RE = re.compile(rf"({_METRIC})\s*+(<=|>=|==|!=|=|<|>)\s*+({_NUMBER})\s*+(%?)")
_CONDITION_RE = re.compile(rf"(<=|>=|==|!=|=|<|>)\s*+({_NUMBER})\s*+(%?)")
_REGRESSION_RE = re.compile(rf"({_METRIC})\s*+:\s*+(.+)")
_LIMIT_RE = re.compile(r"([-+]?)\s*+((?:\d+(?:\.\d*)?|\.\d+))\s*+(%?)")
_OFF = frozenset({"off", "none", "false", "disabled"})


@dataclass(frozen=True, slots=True)
class Bound:
    """``metric op value``: must hold for the candidate run."""

    metric: str
    op: str
    value: float
    origin: Origin = Origin.CONFIG

    @property
    def name(self) -> str:
        return f"{self.metric} {self.op} {_fmt(self.value)}"

    def holds(self, x: float) -> bool:
        return bool(_OPS[self.op](x, self.value))


@dataclass(frozen=True, slots=True)
class Regression:
    """How far the candidate may move from the baseline on one metric.

    ``limit`` is signed: +0.05 with ``relative`` = at most 5% higher; -0.03 = at most 3% lower
    (for metrics where higher is better, such as util_kernel). ``enabled=False`` switches a
    built-in default off.
    """

    metric: str
    limit: float
    relative: bool = True
    origin: Origin = Origin.CONFIG
    enabled: bool = True

    @property
    def limit_text(self) -> str:
        if not self.enabled:
            return "off"
        sign = "+" if self.limit >= 0 else "-"
        mag = abs(self.limit) * (100 if self.relative else 1)
        return f"{sign}{_fmt(mag)}{'%' if self.relative else ''}"

    @property
    def name(self) -> str:
        return f"regression {self.metric} {self.limit_text}"

    @property
    def worse_is_higher(self) -> bool:
        return self.limit >= 0


def _fmt(x: float) -> str:
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}"


def parse_bound(text: str, origin: Origin = Origin.CLI) -> Bound:
    """``"s_per_proof <= 40"``, ``"prestage_fallback.rate == 0"``, ``"util_kernel >= 45%"``."""
    m = _BOUND_RE.fullmatch(text.strip())
    if not m:
        raise ConfigError(
            f"cannot parse gate {text!r} (expected 'METRIC OP NUMBER', e.g. 's_per_proof <= 40'; "
            "OP is one of <= < >= > == !=)"
        )
    metric, op, num, pct = m.groups()
    return _bound(metric, op, num, pct, origin)


def parse_condition(metric: str, text: str, origin: Origin = Origin.CONFIG) -> Bound:
    """The TOML form: key ``metric``, value ``"<= 40"``."""
    m = _CONDITION_RE.fullmatch(text.strip())
    if not m:
        raise ConfigError(
            f"cannot parse bound {text!r} for {metric!r} (expected 'OP NUMBER', e.g. '<= 40')"
        )
    op, num, pct = m.groups()
    return _bound(metric, op, num, pct, origin)


def _bound(metric: str, op: str, num: str, pct: str, origin: Origin) -> Bound:
    _validate_metric_name(metric)
    value = _finite(num, f"bound {num!r} for {metric!r}") / (100.0 if pct else 1.0)
    return Bound(canonical_metric(metric), "==" if op == "=" else op, value, origin)


def _finite(num: str, what: str) -> float:
    """``num`` as a float; a ConfigError for a number beyond a float's range (``1e999``)."""
    value = float(num)
    if not math.isfinite(value):
        raise ConfigError(f"{what} is beyond the range of numbers (at most about 1.8e308)")
    return value


def parse_regression(text: str, origin: Origin = Origin.CLI) -> Regression:
    """``"gpu_total_ms.p50: +5%"``, ``"util_kernel: -3%"``, ``"s_per_proof: off"``."""
    m = _REGRESSION_RE.fullmatch(text.strip())
    if not m:
        raise ConfigError(
            f"cannot parse regression {text!r} (expected 'METRIC: LIMIT', "
            "e.g. 'gpu_total_ms.p50: +5%')"
        )
    return parse_regression_limit(m.group(1), m.group(2), origin)


def parse_regression_limit(metric: str, limit: Any, origin: Origin = Origin.CONFIG) -> Regression:
    """The TOML form: key ``metric``, value ``"+5%"`` / ``"-3%"`` / ``"+50"`` / ``"off"``."""
    _validate_metric_name(metric)
    metric = canonical_metric(metric)
    if limit is False or (isinstance(limit, str) and limit.strip().lower() in _OFF):
        return Regression(metric, 0.0, True, origin, enabled=False)
    if not isinstance(limit, str):
        raise ConfigError(
            f'regression limit for {metric!r} must be a string such as "+5%", got {limit!r}'
        )
    m = _LIMIT_RE.fullmatch(limit.strip())
    if not m:
        raise ConfigError(
            f"cannot parse regression limit {limit!r} for {metric!r} "
            "(expected '+5%', '-3%', '+50' or 'off')"
        )
    sign, num, pct = m.groups()
    mag = _finite(num, f"regression limit {limit!r} for {metric!r}") / (100.0 if pct else 1.0)
    return Regression(metric, -mag if sign == "-" else mag, bool(pct), origin)


def _validate_metric_name(metric: str) -> None:
    """Reject names that can never exist (typos) at parse time; run facts are checked later."""
    metric = canonical_metric(metric)
    base, dot, stat = metric.rpartition(".")
    if dot and base in SAMPLE_FIELDS and stat not in SAMPLE_STATS:
        raise ConfigError(
            f"unknown statistic {stat!r} in {metric!r} (expected one of "
            f"{', '.join(SAMPLE_STATS)}, or median)"
        )
    if dot and base not in SAMPLE_FIELDS and metric not in RUN_METRICS:
        close = difflib.get_close_matches(base, SAMPLE_FIELDS, n=1, cutoff=0.75)
        if close and stat in (*SAMPLE_STATS, *STAT_ALIASES):
            raise ConfigError(unknown_metric_message(metric))


@dataclass(frozen=True)
class GateSpec:
    """Everything ``check`` enforces."""

    fail_on: Severity | None = Severity.ERROR  # None: findings never fail
    alpha: float = 0.05
    bounds: tuple[Bound, ...] = ()
    regressions: tuple[Regression, ...] = ()
    default_regressions: bool = True
    default_regression_limit: float = 0.05

    def override(
        self,
        *,
        fail_on: Severity | None | str = "keep",
        alpha: float | None = None,
        bounds: Sequence[Bound] = (),
        regressions: Sequence[Regression] = (),
        default_regressions: bool | None = None,
    ) -> GateSpec:
        """Command-line values on top: a CLI bound or regression on a metric replaces the
        configured ones on that metric."""
        cli_bound_metrics = {b.metric for b in bounds}
        cli_reg_metrics = {r.metric for r in regressions}
        return replace(
            self,
            fail_on=self.fail_on if fail_on == "keep" else fail_on,  # type: ignore[arg-type]
            alpha=self.alpha if alpha is None else _check_alpha(alpha),
            bounds=tuple(b for b in self.bounds if b.metric not in cli_bound_metrics)
            + tuple(bounds),
            regressions=tuple(r for r in self.regressions if r.metric not in cli_reg_metrics)
            + tuple(regressions),
            default_regressions=(
                self.default_regressions if default_regressions is None else default_regressions
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "fail_on": str(self.fail_on) if self.fail_on is not None else "never",
            "alpha": self.alpha,
            "bounds": [b.name for b in self.bounds],
            "regressions": [r.name for r in self.regressions],
            "default_regressions": self.default_regressions,
        }


def _check_alpha(alpha: Any) -> float:
    a = _num(alpha)
    if a is None or not 0.0 < a < 1.0:
        raise ConfigError(f"alpha must be a number between 0 and 1, got {alpha!r}")
    return a


def parse_fail_on(text: str) -> Severity | None:
    """``info|warning|error`` -> Severity; ``never``/``none`` -> None."""
    t = str(text).strip().lower()
    if t in ("never", "none", "off"):
        return None
    try:
        return Severity.parse(t)
    except ValueError as exc:
        raise ConfigError(f"fail_on: {exc} or never") from None


GATE_KEYS = frozenset({"fail_on", "alpha", "bounds", "regressions", "default_regressions"})


def spec_from_config(table: Mapping[str, Any] | None, where: str = "<config>") -> GateSpec:
    """A GateSpec from the ``[tool.cuzk-diag.gates]`` table (see docs/ci.md).

    Keys may be spelled with ``_`` or ``-`` (``fail_on`` / ``fail-on``). Errors name ``where``.
    """
    if not table:
        return GateSpec()
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where}: [tool.cuzk-diag.gates] must be a table")
    table = {str(k).replace("-", "_"): v for k, v in table.items()}
    unknown = set(table) - GATE_KEYS
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) in [tool.cuzk-diag.gates]: {', '.join(sorted(unknown))} "
            f"(expected {', '.join(sorted(GATE_KEYS))})"
        )
    try:
        return _spec_from_table(table)
    except ConfigError as exc:
        raise ConfigError(f"{where}: [tool.cuzk-diag.gates]: {exc}") from None


def _spec_from_table(table: Mapping[str, Any]) -> GateSpec:
    spec = GateSpec()
    if "fail_on" in table:
        fo = table["fail_on"]
        spec = replace(spec, fail_on=None if fo is False else parse_fail_on(str(fo)))
    if "alpha" in table:
        spec = replace(spec, alpha=_check_alpha(table["alpha"]))
    if "default_regressions" in table:
        if not isinstance(table["default_regressions"], bool):
            raise ConfigError("gates.default_regressions must be true or false")
        spec = replace(spec, default_regressions=table["default_regressions"])
    bounds: list[Bound] = []
    raw_bounds = table.get("bounds", {})
    if not isinstance(raw_bounds, Mapping):
        raise ConfigError('[tool.cuzk-diag.gates.bounds] must be a table: "metric" = "<= 40"')
    for metric, cond in raw_bounds.items():
        conds = cond if isinstance(cond, list) else [cond]
        for c in conds:
            if not isinstance(c, str):
                raise ConfigError(
                    f'bound for {metric!r} must be a string such as "<= 40", got {c!r}'
                )
            bounds.append(parse_condition(metric, c, Origin.CONFIG))
    regressions: list[Regression] = []
    raw_regs = table.get("regressions", {})
    if not isinstance(raw_regs, Mapping):
        raise ConfigError('[tool.cuzk-diag.gates.regressions] must be a table: "metric" = "+5%"')
    for metric, limit in raw_regs.items():
        regressions.append(parse_regression_limit(metric, limit, Origin.CONFIG))
    return replace(spec, bounds=tuple(bounds), regressions=tuple(regressions))


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


class GateStatus(enum.StrEnum):
    """Outcome of one gate."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"  # not applicable (e.g. a regression gate without a baseline)
    ERROR = "error"  # could not be evaluated: a declared metric this run does not measure


class GateKind(enum.StrEnum):
    """What a gate looks at."""

    SEVERITY = "severity"
    BOUND = "bound"
    REGRESSION = "regression"


@dataclass(frozen=True)
class GateResult:
    """One evaluated gate."""

    name: str
    status: GateStatus
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    kind: GateKind = GateKind.BOUND

    @property
    def passed(self) -> bool:
        return self.status in (GateStatus.PASS, GateStatus.SKIP)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": str(self.kind),
            "status": str(self.status),
            "passed": self.passed,
            "message": self.message,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class CheckResult:
    """All gates of one ``check`` run."""

    candidate: str
    baseline: str | None
    results: tuple[GateResult, ...]
    spec: GateSpec
    metrics: dict[str, float | None]
    shape_differences: tuple[tuple[str, Any, Any], ...] = ()
    notes: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()  # the candidate's, most severe first

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failed(self) -> list[GateResult]:
        return [r for r in self.results if r.status is GateStatus.FAIL]

    @property
    def errored(self) -> list[GateResult]:
        return [r for r in self.results if r.status is GateStatus.ERROR]

    @property
    def exit_code(self) -> ExitCode:
        """2 when a declared gate could not be evaluated, 1 when one failed, else 0."""
        if self.errored:
            return ExitCode.USAGE
        if self.failed:
            return ExitCode.FINDINGS
        return ExitCode.OK

    def counts(self) -> dict[str, int]:
        c = Counter(str(r.status) for r in self.results)
        return {s.value: c.get(s.value, 0) for s in GateStatus}

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "baseline": self.baseline,
            "passed": self.passed,
            "exit_code": int(self.exit_code),
            "counts": self.counts(),
            "gates": [r.to_dict() for r in self.results],
            "spec": self.spec.to_dict(),
            "shape_differences": [
                {"field": k, "baseline": a, "candidate": b} for k, a, b in self.shape_differences
            ],
            "notes": list(self.notes),
            "findings": [f.to_dict() for f in self.findings],
            "metrics": {k: v for k, v in sorted(self.metrics.items()) if v is not None},
        }


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def severity_gate(fail_on: Severity, findings: Sequence[Finding]) -> GateResult:
    """No finding at or above ``fail_on``."""
    name = f"no findings at or above {fail_on}"
    hits = [f for f in findings if f.severity >= fail_on]
    by_sev = Counter(str(f.severity) for f in findings)
    if not hits:
        return GateResult(
            name,
            GateStatus.PASS,
            f"no {fail_on}-level findings"
            + (f" ({len(findings)} below {fail_on})" if findings else ""),
            {"fail_on": str(fail_on), "by_severity": dict(by_sev)},
            GateKind.SEVERITY,
        )
    shown = ", ".join(f"{f.code} {f.title}" for f in hits[:5])
    more = f" and {len(hits) - 5} more" if len(hits) > 5 else ""
    return GateResult(
        name,
        GateStatus.FAIL,
        f"{len(hits)} finding(s) at or above {fail_on}: {shown}{more}",
        {
            "fail_on": str(fail_on),
            "by_severity": dict(by_sev),
            "findings": [
                {
                    "code": f.code,
                    "name": f.name,
                    "severity": str(f.severity),
                    "title": f.title,
                    "message": f.message,
                    "lines": list(f.lines[:10]),
                }
                for f in hits
            ],
        },
        GateKind.SEVERITY,
    )


def bound_gate(bound: Bound, run: RunMetrics) -> GateResult:
    """A bound on one metric of the candidate."""
    value = run.get(bound.metric)
    evidence: dict[str, Any] = {
        "metric": bound.metric,
        "op": bound.op,
        "limit": bound.value,
        "value": value,
        "origin": str(bound.origin),
    }
    if value is None:
        return GateResult(
            bound.name,
            GateStatus.ERROR,
            f"{bound.metric} is not measured in this run, so the bound cannot be checked",
            evidence,
            GateKind.BOUND,
        )
    split = split_sample_metric(bound.metric)
    if split is not None:
        evidence["n"] = int(run.samples[split[0]].size) if split[0] in run.samples else 0
    ok = bound.holds(value)
    verdict = "holds" if ok else "violated"
    return GateResult(
        bound.name,
        GateStatus.PASS if ok else GateStatus.FAIL,
        f"{bound.metric} = {_fmt_value(value)}: {bound.name} {verdict}",
        evidence,
        GateKind.BOUND,
    )


def _fmt_value(v: float) -> str:
    if v == int(v) and abs(v) < 1e12:
        return str(int(v))
    return f"{v:.4g}"


def regression_gate(
    reg: Regression, base: RunMetrics, cand: RunMetrics, alpha: float
) -> GateResult:
    """The candidate must not be worse than the baseline by more than the limit, where 'worse'
    counts only when it is also statistically significant (Mann-Whitney U, one-sided) for
    metrics backed by per-partition samples."""
    b, c = base.get(reg.metric), cand.get(reg.metric)
    evidence: dict[str, Any] = {
        "metric": reg.metric,
        "limit": reg.limit_text,
        "baseline": b,
        "candidate": c,
        "alpha": alpha,
        "origin": str(reg.origin),
    }
    if b is None or c is None:
        missing = " and ".join(w for w, v in (("baseline", b), ("candidate", c)) if v is None)
        status = GateStatus.SKIP if reg.origin is Origin.DEFAULT else GateStatus.ERROR
        return GateResult(
            reg.name,
            status,
            f"{reg.metric} is not measured in the {missing}; regression not checked",
            evidence,
            GateKind.REGRESSION,
        )
    if reg.relative:
        change = relative_change(b, c)
        if change is None:
            return GateResult(
                reg.name,
                GateStatus.SKIP if reg.origin is Origin.DEFAULT else GateStatus.ERROR,
                f"{reg.metric} is 0 in the baseline; a relative change is undefined",
                evidence,
                GateKind.REGRESSION,
            )
        change_text = f"{change * 100:+.1f}%"
    else:
        change = c - b
        change_text = f"{change:+.4g}"
    evidence["change"] = change
    exceeded = change > reg.limit if reg.worse_is_higher else change < reg.limit
    evidence["exceeds_limit"] = exceeded

    split = split_sample_metric(reg.metric)
    tested = (
        split is not None
        and split[1] in TESTED_STATS
        and split[0] in base.samples
        and split[0] in cand.samples
    )
    head = (
        f"{reg.metric}: {_fmt_value(b)} -> {_fmt_value(c)} ({change_text}, limit {reg.limit_text})"
    )
    if not tested:
        evidence["test"] = "none"
        why = (
            "no per-partition samples, judged by the limit alone"
            if split is None or split[1] not in TESTED_STATS
            else "no samples in one run, judged by the limit alone"
        )
        evidence["note"] = why
        status = GateStatus.FAIL if exceeded else GateStatus.PASS
        return GateResult(reg.name, status, f"{head}; {why}", evidence, GateKind.REGRESSION)

    assert split is not None
    x, y = cand.samples[split[0]], base.samples[split[0]]
    mw = mann_whitney_u(x, y, "greater" if reg.worse_is_higher else "less")
    significant = mw.p_value < alpha
    evidence.update(
        {
            "test": "mann-whitney-u",
            "alternative": mw.alternative,
            "method": mw.method,
            "p_value": mw.p_value,
            "significant": significant,
            "n_baseline": mw.n_y,
            "n_candidate": mw.n_x,
            "u": mw.u,
            "rank_biserial": mw.rank_biserial,
            "cles": mw.cles,
            "hodges_lehmann": mw.hodges_lehmann,
        }
    )
    evidence = {k: _jsonable(v) for k, v in evidence.items()}
    stat_text = (
        f"p={mw.p_value:.3g} (n={mw.n_y} vs {mw.n_x}), "
        f"effect r={mw.rank_biserial:+.2f}, shift {mw.hodges_lehmann:+.4g}"
    )
    if exceeded and significant:
        return GateResult(
            reg.name,
            GateStatus.FAIL,
            f"{head}; significant: {stat_text}",
            evidence,
            GateKind.REGRESSION,
        )
    if exceeded:
        return GateResult(
            reg.name,
            GateStatus.PASS,
            f"{head}; beyond the limit but not significant at alpha={alpha:g}: {stat_text}",
            evidence,
            GateKind.REGRESSION,
        )
    return GateResult(
        reg.name,
        GateStatus.PASS,
        f"{head}; within the limit: {stat_text}",
        evidence,
        GateKind.REGRESSION,
    )


def effective_regressions(
    spec: GateSpec, base: RunMetrics | None, cand: RunMetrics
) -> list[Regression]:
    """Declared regressions plus the built-in defaults not overridden or switched off:
    s_per_proof +5%, and the median GPU kernel time +5% (gpu_total_ms, or the kernel-time sum
    where gpu_total_ms is absent)."""
    declared = {r.metric: r for r in spec.regressions}
    out = [r for r in spec.regressions if r.enabled]
    if not spec.default_regressions:
        return out
    lim = spec.default_regression_limit
    defaults = [Regression("s_per_proof", lim, True, Origin.DEFAULT)]
    kernel_metric = "gpu_total_ms.p50"
    if base is not None and not ("gpu_total_ms" in base.samples and "gpu_total_ms" in cand.samples):
        kernel_metric = f"{KERNEL_FIELD}.p50"
    # An explicit entry for either spelling of the kernel metric replaces the default.
    if not ({"gpu_total_ms.p50", f"{KERNEL_FIELD}.p50"} & set(declared)):
        defaults.append(Regression(kernel_metric, lim, True, Origin.DEFAULT))
    out += [d for d in defaults if d.metric not in declared]
    return out


def evaluate(
    spec: GateSpec,
    candidate: RunMetrics,
    baseline: RunMetrics | None = None,
    *,
    shape_differences: Sequence[tuple[str, Any, Any]] = (),
) -> CheckResult:
    """Evaluate every gate of ``spec``. Unknown metric names raise ConfigError."""
    results: list[GateResult] = []
    notes: list[str] = []
    if spec.fail_on is not None:
        results.append(severity_gate(spec.fail_on, candidate.findings))
    for bound in spec.bounds:
        results.append(bound_gate(bound, candidate))
    regs = effective_regressions(spec, baseline, candidate)
    if baseline is None:
        for reg in regs:
            if reg.origin is not Origin.DEFAULT:
                results.append(
                    GateResult(
                        reg.name,
                        GateStatus.SKIP,
                        "no baseline given (--baseline); regression not checked",
                        {"metric": reg.metric, "limit": reg.limit_text},
                        GateKind.REGRESSION,
                    )
                )
    else:
        for reg in regs:
            results.append(regression_gate(reg, baseline, candidate, spec.alpha))
        if any(r.kind is GateKind.REGRESSION and r.evidence.get("test") == "none" for r in results):
            notes.append(
                "metrics without per-partition samples (such as s_per_proof) are judged by "
                "their limit alone, without a significance test"
            )
    if shape_differences:
        notes.append(
            "runs differ in configuration (compared anyway): "
            + "; ".join(f"{RunShape.LABELS.get(k, k)} {a} vs {b}" for k, a, b in shape_differences)
        )
    return CheckResult(
        candidate=candidate.label,
        baseline=baseline.label if baseline is not None else None,
        results=tuple(results),
        spec=spec,
        metrics=dict(candidate.values),
        shape_differences=tuple(shape_differences),
        notes=tuple(notes),
        findings=tuple(sorted(candidate.findings, key=lambda f: -int(f.severity))),
    )


def check(
    spec: GateSpec,
    candidate: RunMetrics,
    baseline: RunMetrics | None = None,
    *,
    allow_different_config: bool = False,
) -> CheckResult:
    """The whole ``check``: refuse empty runs and differently shaped baselines, then evaluate."""
    require_calls(candidate)
    diffs: list[tuple[str, Any, Any]] = []
    if baseline is not None:
        require_calls(baseline)
        diffs = check_shapes(baseline, candidate, allow_different_config=allow_different_config)
    return evaluate(spec, candidate, baseline, shape_differences=diffs)
