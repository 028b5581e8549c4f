"""Rules over a fleet dataset: hosts slower than their peers, hosts getting slower, config drift.

These rules see a ``FleetContext`` (``cuzk-diag fleet-report``), not one run; they are
documented, selectable and explainable like every other rule.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any, ClassVar

import pandas as pd

from cuzk_diag.fleet.context import PEER_KEYS, FleetContext, iso_weeks
from cuzk_diag.records import Finding, Severity
from cuzk_diag.rules.base import Option, Rule, pct, register
from cuzk_diag.stats import holm, mann_whitney_u


class FleetRule(Rule):
    """A rule over a fleet; ``check`` receives a ``FleetContext``."""

    scope: ClassVar[str] = "fleet"
    area: ClassVar[str] = "fleet"

    def check(self, ctx: FleetContext) -> Iterable[Finding]:  # type: ignore[override]
        raise NotImplementedError


def _values(parts: pd.DataFrame, metric: str) -> list[float]:
    if metric not in parts.columns:
        return []
    return [float(v) for v in pd.to_numeric(parts[metric], errors="coerce").dropna()]


def _shift_options(between: str) -> tuple[Option, ...]:
    """The options of a rule that finds a slower median: the field, the shift, the level."""
    return (
        Option("metric", "kernel_ms", f"per-partition field compared between {between}"),
        Option("min_shift", 0.05, "smallest relative increase of the median that counts"),
        Option("alpha", 0.05, "significance level after the Holm adjustment", maximum=1.0),
    )


def _slower(
    ctx: FleetContext, p_adjusted: float, slow: list[float], reference: list[float]
) -> tuple[float, float, float] | None:
    """(median, reference median, ratio) when ``slow`` is significantly and materially slower
    than ``reference`` under the rule's ``alpha`` and ``min_shift``; None otherwise."""
    med, ref = _median(slow), _median(reference)
    ratio = med / ref if ref else math.nan
    o = ctx.options
    if p_adjusted < float(o["alpha"]) and ratio >= 1 + float(o["min_shift"]):
        return med, ref, ratio
    return None


def _median(values: list[float]) -> float:
    return float(pd.Series(values).median()) if values else math.nan


def _describe_peer(key: tuple[Any, ...]) -> str:
    return ", ".join(f"{k}={v}" for k, v in zip(PEER_KEYS, key, strict=True))


@register
class HostOutlier(FleetRule):
    """Hosts whose GPU calls are slower than those of their peers.

    ## What it flags
    A host whose per-partition kernel time (`kernel_ms`: the measured GPU kernel stages,
    `ntt_msm_h_ms + batch_add_ms + tail_msm_ms`, as the kernel view of the run facts counts
    them; `metric` picks another field, e.g. `gpu_total_ms`) is significantly higher than that
    of the other hosts with the same code era, GPU count and workers per GPU (its peers), over
    each host's latest run: a one-sided Mann-Whitney U test of the host's calls against the
    pooled calls of its peers, with p-values Holm-adjusted across every host tested below
    `alpha`, and a median at least `min_shift` above the peers' median. A host needs
    `min_calls` calls and at least `min_peers` peers to be tested.

    ## Why it matters
    Hosts of one configuration should prove at one speed. A host whose GPU kernels take 20%
    longer than its siblings' (a slower or throttling GPU, a PCIe link running at a lower width,
    a different driver) costs 20% of its proving capacity, and nothing on the host itself says
    so: each run looks healthy on its own.

    ## Example log lines
    The host's kernel lines, call after call:

    ```
    CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=545
    CUZK_TIMING: gpu_tid=0 batch_add_ms=774
    ```

    against its peers' `ntt_msm_h_ms=454` and `batch_add_ms=645`.

    ## What to do
    Compare the host's GPU model, clocks and temperature (`nvidia-smi -q -d CLOCK,TEMPERATURE`),
    PCIe link width and driver with a peer's; look at the per-stage medians of both
    (`cuzk-diag compare PEER.log HOST.log`) to see which kernel stage is slower.

    ## Known false positives
    Peers that are not really alike (another GPU model under the same configuration): the test
    says the host differs, not that it is broken. Groups of fewer than `min_peers` hosts are not
    tested.
    """

    code = "CZ801"
    name = "host-outlier"
    severity = Severity.WARNING
    title = "Host slower than its peers"
    options = (
        *_shift_options("hosts"),
        Option("min_peers", 2, "fewest other hosts a host is compared with"),
        Option("min_calls", 10, "fewest calls a host needs to be tested"),
    )
    evidence: ClassVar[dict[str, str]] = {
        "host": "the host that is slower",
        "metric": "the field compared",
        "median_ms": "the host's median of the field",
        "peers_median_ms": "the peers' median",
        "ratio": "host median / peers' median",
        "p_value": "one-sided Mann-Whitney U p-value",
        "p_adjusted": "Holm-adjusted over every host tested",
        "rank_biserial": "effect size (-1..1, > 0 when the host is slower)",
        "calls": "the host's calls tested",
        "peer_calls": "the peers' calls",
        "peers": "peer hosts",
        "peer_group": "the shared era, GPU count and workers per GPU",
    }

    def check(self, ctx: FleetContext) -> Iterable[Finding]:  # type: ignore[override]
        o = ctx.options
        metric = str(o["metric"])
        latest = ctx.latest_runs()
        if latest.empty:
            return []
        parts = ctx.partitions
        by_run = {rid: g for rid, g in parts.groupby("run_id", sort=False)} if len(parts) else {}
        groups: dict[tuple[Any, ...], list[str]] = {}
        for _, row in latest.iterrows():
            groups.setdefault(ctx.peer_key(row), []).append(str(row["run_id"]))
        host_of = dict(zip(latest["run_id"], latest["host"], strict=True))
        tests: list[dict[str, Any]] = []
        for key, run_ids in groups.items():
            if len(run_ids) < int(o["min_peers"]) + 1:
                continue
            vals = {r: _values(by_run.get(r, pd.DataFrame()), metric) for r in run_ids}
            for rid in run_ids:
                mine = vals[rid]
                peers = [v for other in run_ids if other != rid for v in vals[other]]
                if len(mine) < int(o["min_calls"]) or not peers:
                    continue
                res = mann_whitney_u(mine, peers, alternative="greater")
                tests.append(
                    {
                        "key": key,
                        "host": host_of[rid],
                        "mine": mine,
                        "peers": peers,
                        "peer_hosts": sorted(host_of[r] for r in run_ids if r != rid),
                        "res": res,
                        "rid": rid,
                    }
                )
        adjusted = holm([t["res"].p_value for t in tests])
        out = []
        for t, p_adj in zip(tests, adjusted, strict=True):
            found = _slower(ctx, p_adj, t["mine"], t["peers"])
            if found is None:
                continue
            med, peer_med, ratio = found
            res = t["res"]
            out.append(
                self.finding(
                    Severity.WARNING,
                    f"Host {t['host']}: median {metric} {med:,.0f} ms is {ratio:.2f}× its "
                    f"{len(t['peer_hosts'])} peers' {peer_med:,.0f} ms "
                    f"({_describe_peer(t['key'])}; p={p_adj:.2g} after Holm over "
                    f"{len(tests)} hosts, {len(t['mine'])} vs {len(t['peers'])} calls).",
                    {
                        "affected": len(t["mine"]),
                        "total": len(t["mine"]),
                        "host": t["host"],
                        "metric": metric,
                        "median_ms": med,
                        "peers_median_ms": peer_med,
                        "ratio": ratio,
                        "p_value": res.p_value,
                        "p_adjusted": p_adj,
                        "rank_biserial": res.rank_biserial,
                        "calls": len(t["mine"]),
                        "peer_calls": len(t["peers"]),
                        "peers": t["peer_hosts"],
                        "peer_group": dict(zip(PEER_KEYS, t["key"], strict=True)),
                    },
                    advice="Compare the host's GPU (model, clocks, temperature, PCIe link "
                    "width, driver) with a peer's, and its stage medians with `cuzk-diag "
                    "compare`.",
                )
            )
        return out


@register
class HostTrend(FleetRule):
    """Hosts whose GPU calls got slower between their first and their last week.

    ## What it flags
    A host whose per-partition kernel time (`kernel_ms`, as in host-outlier) in its last ISO
    week of data is significantly
    higher than in its first week (one-sided Mann-Whitney U, Holm-adjusted across the hosts
    tested, below `alpha`) and whose median rose by at least `min_shift`; `metric` picks the
    field and each week needs `min_calls` calls. Only calls with a wall-clock date
    count, and only hosts whose runs kept the same era, GPU count and workers per GPU.

    ## Why it matters
    A host that degrades slowly (a fan failing, a GPU throttling, a driver update) passes every
    per-run check; the change shows only when weeks are compared.

    ## Example log lines
    The same host in its first and in its last week:

    ```
    2026-11-02T14:10:31.201Z ... CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=454
    2026-11-09T15:02:11.873Z ... CUZK_TIMING: gpu_tid=0 ntt_msm_h_ms=545
    ```

    ## What to do
    Look at what changed on the host between the two weeks (driver, firmware, cooling, other
    load on the GPU) and compare a run of each week with `cuzk-diag compare`.

    ## Known false positives
    A change of workload between the weeks (another proof kind) can shift the distribution;
    the rule compares like with like only as far as the configuration shows it.
    """

    code = "CZ802"
    name = "host-trend"
    severity = Severity.WARNING
    title = "Host got slower over time"
    options = (
        *_shift_options("weeks"),
        Option("min_calls", 10, "fewest calls each week needs"),
    )
    evidence: ClassVar[dict[str, str]] = {
        "host": "the host",
        "metric": "the field compared",
        "first_week": "ISO week of the earliest data",
        "last_week": "ISO week of the latest data",
        "first_median_ms": "median in the first week",
        "last_median_ms": "median in the last week",
        "ratio": "last / first median",
        "p_value": "one-sided Mann-Whitney U p-value",
        "p_adjusted": "Holm-adjusted over every host tested",
        "calls_first": "calls in the first week",
        "calls_last": "calls in the last week",
    }

    def check(self, ctx: FleetContext) -> Iterable[Finding]:  # type: ignore[override]
        o = ctx.options
        metric = str(o["metric"])
        parts = ctx.partitions
        if parts.empty or metric not in parts.columns or ctx.runs.empty:
            return []
        stable = {
            host
            for host, g in ctx.runs.groupby("host")
            if len({tuple(r) for r in g[list(PEER_KEYS)].astype(str).itertuples(index=False)}) == 1
        }
        weeks = iso_weeks(parts["date"])
        tests = []
        for host, g in parts.assign(week=weeks).dropna(subset=["week"]).groupby("host"):
            if host not in stable:
                continue
            ws = sorted(set(g["week"]))
            if len(ws) < 2:
                continue
            first = _values(g[g["week"] == ws[0]], metric)
            last = _values(g[g["week"] == ws[-1]], metric)
            if min(len(first), len(last)) < int(o["min_calls"]):
                continue
            tests.append((host, ws[0], ws[-1], first, last, mann_whitney_u(last, first, "greater")))
        adjusted = holm([t[5].p_value for t in tests])
        out = []
        for (host, w0, w1, first, last, res), p_adj in zip(tests, adjusted, strict=True):
            found = _slower(ctx, p_adj, last, first)
            if found is None:
                continue
            m1, m0, ratio = found
            out.append(
                self.finding(
                    Severity.WARNING,
                    f"Host {host}: median {metric} rose from {m0:,.0f} ms in {w0} to "
                    f"{m1:,.0f} ms in {w1} ({ratio:.2f}×, p={p_adj:.2g} after Holm over "
                    f"{len(tests)} hosts).",
                    {
                        "affected": len(last),
                        "total": len(first) + len(last),
                        "host": host,
                        "metric": metric,
                        "first_week": w0,
                        "last_week": w1,
                        "first_median_ms": m0,
                        "last_median_ms": m1,
                        "ratio": ratio,
                        "p_value": res.p_value,
                        "p_adjusted": p_adj,
                        "calls_first": len(first),
                        "calls_last": len(last),
                    },
                    advice="Find what changed on the host between the two weeks (driver, "
                    "firmware, cooling, other GPU load); compare a run of each week with "
                    "`cuzk-diag compare`.",
                )
            )
        return out


@register
class ConfigDrift(FleetRule):
    """Hosts whose daemon settings differ from those of most hosts running the same code.

    ## What it flags
    Among the hosts whose latest run has the same code era and GPU count (at least
    `min_hosts` of them), a host whose `gpu_workers_per_device` (gw) or `gpu_threads` differs
    from the setting that a clear majority (more than `majority` of those hosts) uses.

    ## Why it matters
    A fleet is tuned once; a host left with another worker count or thread setting proves at
    another speed and latency, and its results are not comparable with its siblings'. It is
    usually a configuration file that a rollout missed.

    ## Example log lines
    The start-up line of one host, where the others print `gpu_workers_per_device=2`:

    ```
    INFO cuzk_core::engine: initializing GPU workers num_gpus=1 gpu_workers_per_device=1 ...
    ```

    ## What to do
    Align the host's daemon configuration with the fleet's (or record why it differs).

    ## Known false positives
    A deliberate experiment on one host. Ignore the rule for it with `ignore = ["CZ803"]` in the
    fleet's configuration, or accept the finding as the record of the experiment.
    """

    code = "CZ803"
    name = "config-drift"
    severity = Severity.WARNING
    title = "Host configured differently from its fleet"
    options = (
        Option("majority", 0.5, "share of hosts that makes a setting the fleet's", maximum=1.0),
        Option("min_hosts", 3, "fewest hosts of one era and GPU count to judge"),
    )
    evidence: ClassVar[dict[str, str]] = {
        "host": "the host that differs",
        "setting": "the daemon setting",
        "value": "the host's value",
        "fleet_value": "the value most hosts use",
        "fleet_share": "share of the hosts that use it",
        "hosts": "hosts of the same era and GPU count",
    }

    SETTINGS: ClassVar[tuple[str, ...]] = ("gw", "gpu_threads")

    def check(self, ctx: FleetContext) -> Iterable[Finding]:  # type: ignore[override]
        o = ctx.options
        latest = ctx.latest_runs()
        out = []
        for (era, gpus), g in latest.groupby(["era", "n_gpus"], dropna=False):
            if len(g) < int(o["min_hosts"]):
                continue
            for setting in self.SETTINGS:
                known = g[setting].dropna()
                if known.empty:
                    continue
                value, count = Counter(int(v) for v in known).most_common(1)[0]
                share = count / len(known)
                if share <= float(o["majority"]):
                    continue
                for _, row in g[g[setting].notna() & (g[setting] != value)].iterrows():
                    out.append(
                        self.finding(
                            Severity.WARNING,
                            f"Host {row['host']} runs {setting}={int(row[setting])} where "
                            f"{count} of {len(known)} {era} hosts with {gpus} GPU(s) run "
                            f"{setting}={value} ({pct(share)}).",
                            {
                                "affected": 1,
                                "total": len(g),
                                "host": row["host"],
                                "setting": setting,
                                "value": int(row[setting]),
                                "fleet_value": value,
                                "fleet_share": share,
                                "hosts": len(g),
                            },
                            advice=f"Set {setting}={value} on {row['host']} as on the rest of "
                            "the fleet, or record why it differs.",
                        )
                    )
        return out
