"""Mann-Whitney U, effect sizes and bootstrap intervals against reference values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cuzk_diag import stats

# Reference p-values below were computed once with an independent implementation
# (scipy.stats.mannwhitneyu, method="exact" / "asymptotic"); they are fixed numbers here.
FAST = [1812, 1790, 1845, 1901, 1777, 1830, 1868, 1795]
SLOW = [1950, 1989, 1902, 2011, 1930, 1975, 1944]

TIED_A = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7]
TIED_B = [2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5, 9, 0, 4, 5, 2, 3, 5, 3, 6, 0, 2, 8, 7, 4, 7, 1, 3, 5]


@pytest.mark.parametrize(
    ("alternative", "expected"),
    [("two-sided", 0.0003108003108003108), ("greater", 1.0), ("less", 0.0001554001554001554)],
)
def test_exact_without_ties_matches_reference(alternative: stats.Alternative, expected: float):
    r = stats.mann_whitney_u(FAST, SLOW, alternative)
    assert r.method == "exact"
    assert r.u == 0.0
    assert r.p_value == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("alternative", "expected"),
    [
        ("two-sided", 0.5613672311197402),
        ("greater", 0.2806836155598701),
        ("less", 0.7243136799879075),
    ],
)
def test_normal_with_ties_matches_reference(alternative: stats.Alternative, expected: float):
    r = stats.mann_whitney_u(TIED_A, TIED_B, alternative, method="normal")
    assert r.u == 489.5
    assert r.ties
    assert r.p_value == pytest.approx(expected, rel=1e-10)


def test_auto_picks_normal_for_large_tied_samples():
    r = stats.mann_whitney_u(TIED_A, TIED_B)
    assert r.method == "normal"
    assert r.z is not None


def test_exact_with_ties_by_enumeration():
    # 3 v 3, all of y above all of x, with a tie inside x: the most extreme of 20 arrangements
    r = stats.mann_whitney_u([1.0, 1.0, 2.0], [3.0, 4.0, 5.0], "less")
    assert r.method == "exact"
    assert r.ties
    assert r.p_value == pytest.approx(1 / 20)


def test_three_against_three_can_never_reach_five_percent_one_sided_strictly():
    r = stats.mann_whitney_u([2000, 2010, 2020], [1800, 1810, 1820], "greater")
    assert r.p_value == pytest.approx(0.05)
    assert not r.p_value < 0.05


def test_u_distribution_is_symmetric_and_sums_to_binomial():
    for m, n in [(1, 1), (3, 3), (4, 7), (10, 12)]:
        dist = stats._u_distribution(m, n)
        assert len(dist) == m * n + 1
        assert sum(dist) == math.comb(m + n, m)
        assert dist == dist[::-1]


def test_effect_sizes():
    r = stats.mann_whitney_u(SLOW, FAST)
    assert r.cles == 1.0
    assert r.rank_biserial == 1.0
    diffs = np.subtract.outer(np.array(SLOW, float), np.array(FAST, float))
    assert r.hodges_lehmann == pytest.approx(float(np.median(diffs)))
    mirrored = stats.mann_whitney_u(FAST, SLOW)
    assert mirrored.rank_biserial == -1.0
    assert mirrored.hodges_lehmann == pytest.approx(-r.hodges_lehmann)


def test_identical_samples_are_not_significant():
    r = stats.mann_whitney_u([5, 5, 5, 5], [5, 5, 5, 5, 5])
    assert r.p_value == 1.0
    assert r.rank_biserial == 0.0


def test_nan_dropped_and_empty_rejected():
    r = stats.mann_whitney_u([1.0, math.nan, 2.0], [3.0, 4.0])
    assert (r.n_x, r.n_y) == (2, 2)
    with pytest.raises(ValueError):
        stats.mann_whitney_u([math.nan], [1.0])


def test_arrangement_bound_is_the_binomial_coefficient_compared():
    # Every sample size up to 40 x 40, at limits around the coefficient itself.
    for m in range(41):
        for n in range(41):
            total = math.comb(m + n, m)
            for limit in (total - 1, total, total + 1, stats.EXACT_MAX_ARRANGEMENTS):
                assert stats._arrangements_at_most(m, n, limit) == (total <= limit), (m, n)
    # A long log's samples: answered from the first partial products, the same as comb's.
    assert not stats._arrangements_at_most(87_000, 86_000, stats.EXACT_MAX_ARRANGEMENTS)
    assert stats._arrangements_at_most(1, 19_999, stats.EXACT_MAX_ARRANGEMENTS)
    assert not stats._arrangements_at_most(1, 20_000, stats.EXACT_MAX_ARRANGEMENTS)


def test_large_tied_samples_take_the_normal_approximation():
    rng = np.random.default_rng(3)
    x = rng.integers(900, 1100, 50_000).astype(float)  # whole milliseconds: many ties
    y = rng.integers(950, 1150, 40_000).astype(float)
    r = stats.mann_whitney_u(x, y, "less")
    assert r.method == "normal" and r.ties
    assert r.p_value < 1e-12 and -0.5 < r.rank_biserial < -0.35 and r.hodges_lehmann == -50.0
    with pytest.raises(ValueError, match="too large"):
        stats.mann_whitney_u(x, y, method="exact")


def test_rankdata_midranks():
    ranks = stats.rankdata(np.array([10.0, 20.0, 20.0, 5.0, 20.0]))
    assert ranks.tolist() == [2.0, 4.0, 4.0, 1.0, 4.0]


@pytest.mark.parametrize("enumerate_at", [stats.HL_ENUMERATE, 50])
def test_hodges_lehmann_large_samples_give_the_median_of_the_pairs_exactly(
    monkeypatch: pytest.MonkeyPatch, enumerate_at: int
) -> None:
    # Above HL_MAX_PAIRS the differences are not all made; the result is still exactly theirs.
    monkeypatch.setattr(stats, "HL_ENUMERATE", enumerate_at)
    rng = np.random.default_rng(7)
    x = rng.normal(1900, 100, 1200)
    y = rng.normal(1800, 100, 1000)
    assert x.size * y.size > stats.HL_MAX_PAIRS
    assert stats.hodges_lehmann(x, y) == float(np.median(np.subtract.outer(x, y)))
    odd = x[:1001]
    assert stats.hodges_lehmann(odd, y) == float(np.median(np.subtract.outer(odd, y)))


def test_hodges_lehmann_of_whole_milliseconds_with_many_ties_is_exact() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(1700, 1760, 1500).astype(float)  # timings in whole ms: ties everywhere
    y = rng.integers(1690, 1750, 1300).astype(float)
    assert stats.hodges_lehmann(x, y) == float(np.median(np.subtract.outer(x, y)))
    # The same run against itself shifts by nothing, not by a rounding error.
    big = rng.integers(40_000, 50_000, 20_000).astype(float)
    same = stats.hodges_lehmann(big, big.copy())
    assert same == 0.0 and type(same) is float
    assert stats.hodges_lehmann(big + 0.5, big) == 0.5


def test_holm():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    adjusted = stats.holm([0.5, math.nan])
    assert adjusted[0] == 0.5 and math.isnan(adjusted[1])


def test_relative_change():
    assert stats.relative_change(100.0, 110.0) == pytest.approx(0.10)
    assert stats.relative_change(0.0, 1.0) is None
    assert stats.relative_change(None, 1.0) is None


def test_bootstrap_ci_contains_true_shift_and_is_reproducible():
    rng = np.random.default_rng(3)
    base = rng.normal(1800, 50, 80)
    cand = rng.normal(1980, 50, 80)
    lo, hi = stats.bootstrap_ci(base, cand, n_resamples=2000)
    assert lo < 0.10 < hi
    assert (lo, hi) == stats.bootstrap_ci(base, cand, n_resamples=2000)
    lo1, hi1 = stats.bootstrap_ci(base)
    assert lo1 < 1800 < hi1
