"""Rank statistics for comparing two runs: Mann-Whitney U, effect sizes, bootstrap intervals.

Per-partition timings of two logs are treated as two independent samples. Timings are skewed and
carry outliers (first call on a GPU, mutex waits), so the tests here are rank-based: they ask
whether one run's values tend to be larger than the other's, not whether the means differ.
numpy only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

Alternative = Literal["two-sided", "greater", "less"]
Method = Literal["auto", "exact", "normal"]
FloatArray = npt.NDArray[np.float64]

#: Largest ``n_x * n_y`` for which the exact distribution without ties is computed.
EXACT_MAX_CELLS = 2500
#: Largest number of label arrangements enumerated for the exact test with ties.
EXACT_MAX_ARRANGEMENTS = 20_000
#: Above this many pairs the Hodges-Lehmann shift is found by bisection instead of all pairs.
HL_MAX_PAIRS = 1_000_000


@dataclass(frozen=True, slots=True)
class MannWhitneyResult:
    """Outcome of a Mann-Whitney U test of sample x against sample y."""

    u: float  # U of x: pairs with x > y, plus half the ties
    p_value: float
    n_x: int
    n_y: int
    alternative: Alternative
    method: Literal["exact", "normal"]
    ties: bool
    z: float | None  # normal approximation only
    cles: float  # common-language effect size, P(X > Y) + P(X = Y) / 2
    rank_biserial: float  # 2 * cles - 1, in [-1, 1]; positive when x tends to be larger
    hodges_lehmann: float  # median of all differences x_i - y_j (shift of x over y)

    def to_dict(self) -> dict[str, object]:
        return {
            "u": self.u,
            "p_value": self.p_value,
            "n_x": self.n_x,
            "n_y": self.n_y,
            "alternative": self.alternative,
            "method": self.method,
            "ties": self.ties,
            "z": self.z,
            "cles": self.cles,
            "rank_biserial": self.rank_biserial,
            "hodges_lehmann": self.hodges_lehmann,
        }


def _clean(values: Sequence[float] | npt.ArrayLike) -> FloatArray:
    """A 1-D float array without NaN."""
    arr = np.asarray(values, dtype=np.float64).ravel()
    return arr[~np.isnan(arr)]


def rankdata(values: FloatArray) -> FloatArray:
    """Ranks 1..n with ties given the average of the ranks they span (midranks)."""
    n = values.size
    order = np.argsort(values, kind="mergesort")
    sorted_vals = values[order]
    # start index of each run of equal values
    boundaries = np.flatnonzero(np.r_[True, sorted_vals[1:] != sorted_vals[:-1], True])
    ranks_sorted = np.empty(n, dtype=np.float64)
    for lo, hi in itertools.pairwise(boundaries):
        ranks_sorted[lo:hi] = (lo + 1 + hi) / 2.0
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = ranks_sorted
    return ranks


def _tie_sizes(values: FloatArray) -> npt.NDArray[np.int64]:
    _, counts = np.unique(values, return_counts=True)
    return counts.astype(np.int64)


def _normal_sf(z: float) -> float:
    """P(Z >= z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def _u_distribution(m: int, n: int) -> list[int]:
    """Number of arrangements giving U = 0..m*n, for samples of m and n without ties.

    These are the coefficients of the Gaussian binomial coefficient [m+n choose m]_q, built as
    prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i) with exact integer arithmetic.
    """
    size = m * n + 1
    c = [0] * size
    c[0] = 1
    for i in range(1, m + 1):
        # multiply by (1 - q^(n+i)), high to low so each term is used once
        step = n + i
        for k in range(size - 1, step - 1, -1):
            c[k] -= c[k - step]
        # divide by (1 - q^i): a running sum with stride i
        for k in range(i, size):
            c[k] += c[k - i]
    return c


def _arrangements_at_most(m: int, n: int, limit: int) -> bool:
    """``math.comb(m + n, m) <= limit``, without the coefficient itself: for two samples of a
    long log's calls that is a number of tens of thousands of digits, a third of a second to
    compute for each test. The product of ``(max(m, n) + i) / i`` over ``i`` up to ``min(m,
    n)`` is the coefficient, and each partial product (a coefficient too) grows: the first one
    above ``limit`` answers."""
    if limit < 1:
        return False  # (the coefficient is at least 1)
    big, small = max(m, n), min(m, n)
    c = 1
    for i in range(1, small + 1):
        c = c * (big + i) // i
        if c > limit:
            return False
    return True


def _exact_no_ties(u: float, m: int, n: int, alternative: Alternative) -> float:
    counts = _u_distribution(m, n)
    total = math.comb(m + n, m)
    k = int(round(u))
    upper = sum(counts[k:]) / total  # P(U >= u)
    lower = sum(counts[: k + 1]) / total  # P(U <= u)
    if alternative == "greater":
        return upper
    if alternative == "less":
        return lower
    return min(1.0, 2.0 * min(upper, lower))


def _exact_by_enumeration(ranks: FloatArray, m: int, u: float, alternative: Alternative) -> float:
    """Permutation distribution of U over every choice of m positions (handles ties)."""
    n = ranks.size - m
    offset = m * (m + 1) / 2.0
    us = np.fromiter(
        (sum(ranks[list(idx)]) - offset for idx in itertools.combinations(range(ranks.size), m)),
        dtype=np.float64,
    )
    eps = 1e-9 * max(1.0, m * n)
    upper = float(np.mean(us >= u - eps))
    lower = float(np.mean(us <= u + eps))
    if alternative == "greater":
        return upper
    if alternative == "less":
        return lower
    return min(1.0, 2.0 * min(upper, lower))


def _normal(
    u: float, m: int, n: int, ties: npt.NDArray[np.int64], alternative: Alternative
) -> tuple[float, float]:
    """p-value and z by the normal approximation with tie and continuity corrections."""
    mu = m * n / 2.0
    big_n = m + n
    tie_term = float(np.sum(ties.astype(np.float64) ** 3 - ties)) / (big_n * (big_n - 1))
    var = m * n / 12.0 * ((big_n + 1) - tie_term)
    if var <= 0:  # every value equal: no evidence either way
        return 1.0, 0.0
    sd = math.sqrt(var)
    if alternative == "greater":
        z = (u - mu - 0.5) / sd
        return _normal_sf(z), z
    if alternative == "less":
        z = (u - mu + 0.5) / sd
        return 1.0 - _normal_sf(z), z
    z = (abs(u - mu) - 0.5) / sd
    z = max(z, 0.0)
    return min(1.0, 2.0 * _normal_sf(z)), math.copysign(z, u - mu)


def hodges_lehmann(x: Sequence[float] | npt.ArrayLike, y: Sequence[float] | npt.ArrayLike) -> float:
    """Median of all pairwise differences x_i - y_j: the shift of x over y, in x's units."""
    xa, ya = _clean(x), _clean(y)
    if xa.size == 0 or ya.size == 0:
        return math.nan
    if xa.size * ya.size <= HL_MAX_PAIRS:
        return float(np.median(np.subtract.outer(xa, ya)))
    # Large samples: the middle order statistic(s) of the differences without making them all.
    xs, ys = np.sort(xa), np.sort(ya)
    total = xa.size * ya.size
    if total % 2:
        return _kth_difference(xs, ys, total // 2 + 1)
    return (_kth_difference(xs, ys, total // 2) + _kth_difference(xs, ys, total // 2 + 1)) / 2.0


#: Differences the search narrows the candidates to before it takes them one by one.
HL_ENUMERATE = 1_000_000
_EXACT_INT = 2.0**52  # integers a double holds exactly, with room for a difference


def _kth_difference(xs: FloatArray, ys: FloatArray, k: int) -> float:
    """The ``k``-th smallest (1-based) of all x_i - y_j, for sorted ``xs`` and ``ys``.

    Bisection on the value, counting the pairs at or below it through ``ys`` (O(m log n) a
    step): over the integers when every value is a whole number (log2 of the range in steps,
    the usual case of millisecond timings), else until at most ``HL_ENUMERATE`` differences
    are left between the bounds, which are then made and the one sought selected. Either way
    the result is one of the differences itself, not a value near it."""
    n = ys.size

    def count_le(t: float) -> int:  # pairs with x_i - y_j <= t, i.e. y_j >= x_i - t
        return int(np.sum(n - np.searchsorted(ys, xs - t, side="left")))

    lo, hi = float(xs[0] - ys[-1]), float(xs[-1] - ys[0])  # the smallest and largest
    whole = (
        max(abs(lo), abs(hi)) < _EXACT_INT
        and bool(np.all(np.floor(xs) == xs))
        and bool(np.all(np.floor(ys) == ys))
    )
    if whole:
        lo -= 1.0  # below every difference: count 0 < k <= count at hi
        while hi - lo > 1.0:
            cut = float(math.floor((lo + hi) / 2.0))
            if count_le(cut) >= k:
                hi = cut
            else:
                lo = cut
        return hi
    c_lo, c_hi = count_le(lo), xs.size * n
    if c_lo >= k:
        return lo
    while c_hi - c_lo > HL_ENUMERATE:
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            return hi  # no double between the bounds: the differences left are all ``hi``
        c = count_le(mid)
        if c >= k:
            hi, c_hi = mid, c
        else:
            lo, c_lo = mid, c
    # The differences in (lo, hi]: for each x_i, the y_j from x_i - hi up to x_i - lo.
    start = np.searchsorted(ys, xs - hi, side="left")
    stop = np.searchsorted(ys, xs - lo, side="left")
    sizes = stop - start
    rows = np.repeat(np.arange(xs.size), sizes)
    offsets = np.arange(rows.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    diffs = xs[rows] - ys[start[rows] + offsets]
    return float(np.partition(diffs, k - c_lo - 1)[k - c_lo - 1])


def mann_whitney_u(
    x: Sequence[float] | npt.ArrayLike,
    y: Sequence[float] | npt.ArrayLike,
    alternative: Alternative = "two-sided",
    method: Method = "auto",
) -> MannWhitneyResult:
    """Mann-Whitney U test of x against y.

    ``alternative="greater"`` tests whether x tends to be larger than y (for timings: x slower).
    ``method="auto"`` uses the exact distribution for small samples (with ties, by enumerating
    every arrangement when that is cheap) and otherwise the normal approximation with tie and
    continuity corrections. NaN values are dropped. Raises ValueError on an empty sample.
    """
    xa, ya = _clean(x), _clean(y)
    m, n = xa.size, ya.size
    if m == 0 or n == 0:
        raise ValueError("Mann-Whitney U needs at least one value in each sample")
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"unknown alternative {alternative!r}")
    pooled = np.concatenate([xa, ya])
    ranks = rankdata(pooled)
    u = float(np.sum(ranks[:m]) - m * (m + 1) / 2.0)
    tie_sizes = _tie_sizes(pooled)
    has_ties = bool(np.any(tie_sizes > 1))

    chosen: Literal["exact", "normal"]
    if method == "exact":
        chosen = "exact"
    elif method == "normal":
        chosen = "normal"
    elif not has_ties and m * n <= EXACT_MAX_CELLS:
        chosen = "exact"
    elif has_ties and _arrangements_at_most(m, n, EXACT_MAX_ARRANGEMENTS):
        chosen = "exact"
    else:
        chosen = "normal"

    z: float | None = None
    if chosen == "exact":
        if has_ties:
            if not _arrangements_at_most(m, n, EXACT_MAX_ARRANGEMENTS * 50):
                raise ValueError("samples too large for the exact test with ties")
            p = _exact_by_enumeration(ranks, m, u, alternative)
        else:
            p = _exact_no_ties(u, m, n, alternative)
    else:
        p, z = _normal(u, m, n, tie_sizes, alternative)

    cles = u / (m * n)
    return MannWhitneyResult(
        u=u,
        p_value=float(min(1.0, max(0.0, p))),
        n_x=m,
        n_y=n,
        alternative=alternative,
        method=chosen,
        ties=has_ties,
        z=z,
        cles=cles,
        rank_biserial=2.0 * cles - 1.0,
        hodges_lehmann=hodges_lehmann(xa, ya),
    )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (same order as given; NaN stays NaN)."""
    indexed = [(p, i) for i, p in enumerate(p_values) if not math.isnan(p)]
    indexed.sort()
    k = len(indexed)
    out = [math.nan] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (k - rank) * p))
        out[i] = running
    return out


def relative_change(base: float | None, candidate: float | None) -> float | None:
    """(candidate - base) / |base|, or None when undefined (missing values or a zero base)."""
    if base is None or candidate is None:
        return None
    if math.isnan(base) or math.isnan(candidate) or base == 0:
        return None
    return (candidate - base) / abs(base)


def bootstrap_ci(
    x: Sequence[float] | npt.ArrayLike,
    y: Sequence[float] | npt.ArrayLike | None = None,
    *,
    statistic: Callable[[FloatArray, int], FloatArray] | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval.

    With only ``x``: an interval for ``statistic(x)`` (default the median). With ``y`` too: an
    interval for the relative change ``statistic(y) / statistic(x) - 1`` (x = base,
    y = candidate). ``statistic(arr, axis)`` must reduce along ``axis`` (e.g. ``np.median``).
    Resampling is vectorised; the seed makes the interval reproducible.
    """
    stat = statistic if statistic is not None else _median_axis
    xa = _clean(x)
    if xa.size == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    sx = stat(xa[rng.integers(0, xa.size, size=(n_resamples, xa.size))], 1)
    if y is None:
        values = sx
    else:
        ya = _clean(y)
        if ya.size == 0:
            return (math.nan, math.nan)
        sy = stat(ya[rng.integers(0, ya.size, size=(n_resamples, ya.size))], 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            values = sy / sx - 1.0
        values = values[np.isfinite(values)]
        if values.size == 0:
            return (math.nan, math.nan)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(values, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def _median_axis(arr: FloatArray, axis: int) -> FloatArray:
    return np.asarray(np.median(arr, axis=axis), dtype=np.float64)


def box_summary(values: Sequence[float] | npt.ArrayLike, max_outliers: int = 40) -> dict[str, Any]:
    """Tukey box-plot figures of a sample: quartiles, whiskers at the furthest values within
    1.5 IQR of the box, p95, n, and the values beyond the whiskers (the ``max_outliers`` furthest
    from the median; ``outliers_total`` counts them all). Empty dict for an empty sample."""
    x = np.sort(_clean(values))
    if x.size == 0:
        return {}
    q1, med, q3, p95 = (float(v) for v in np.percentile(x, [25, 50, 75, 95]))
    iqr = q3 - q1
    inside = x[(x >= q1 - 1.5 * iqr) & (x <= q3 + 1.5 * iqr)]
    lo, hi = float(inside.min()), float(inside.max())
    out = x[(x < lo) | (x > hi)]
    if out.size > max_outliers:
        out = out[np.argsort(-np.abs(out - med), kind="stable")[:max_outliers]]
    return {
        "n": int(x.size),
        "min": float(x[0]),
        "q1": q1,
        "median": med,
        "q3": q3,
        "p95": p95,
        "max": float(x[-1]),
        "lower": lo,
        "upper": hi,
        "outliers": [float(v) for v in np.sort(out)],
        "outliers_total": int(((x < lo) | (x > hi)).sum()),
    }
