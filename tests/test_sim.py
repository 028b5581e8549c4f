"""Tests of the daemon simulator: the reference's arithmetic and ordering rules hold in its output,
its ground truth matches its text, and its accounting is exact."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
try:
    import cuzk_diag  # noqa: F401
except ImportError:  # running from a checkout without an installed package
    sys.path.insert(0, str(ROOT / "src"))

from cuzk_diag.model import daemon as sim  # noqa: E402
from cuzk_diag.model.daemon import MESSY, SimConfig, SimResult, simulate, write_log  # noqa: E402

ALL_VERSIONS = [(era, cpp) for era, cpps in sim.ERA_CPP.items() for cpp in cpps]
SEEDS = (1, 2, 3)

ANSI = re.compile(r"\x1b\[[0-9;]*m")
JOURNAL = re.compile(r"^[A-Z][a-z]{2} \d{2} \d{2}:\d{2}:\d{2} \S+ cuzk\[\d+\]: ")
TS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"
TRACING = re.compile(rf"^{TS}\s+(TRACE|DEBUG|INFO|WARN|ERROR) ")
EMBEDDED = re.compile(rf"(CUZK_TIMING: |CUZK_NTT_H: |{TS})")
BENCH = re.compile(
    r"^(=== Batch (Benchmark|Summary) ===|proof type: |count: |concurrency: |  \[\d+/\d+\] "
    r"|total time: |completed: |failed: |wall time: |prove time: |throughput: )"
)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def physical_lines(res: SimResult) -> list[str]:
    assert res.data is not None
    raw = res.data.split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()
    return [r.removesuffix(b"\r").decode("utf-8", errors="replace") for r in raw]


def clean(line: str) -> str:
    return JOURNAL.sub("", ANSI.sub("", line))


def family(line: str) -> str:
    if not line:
        return "blank"
    if "\x00" in line:
        return "other"  # damaged by a NUL byte: no longer a line of its family
    if line.startswith("CUZK_TIMING: "):
        return "timing"
    if line.startswith("CUZK_NTT_H: "):
        return "ntt_h"
    if line.startswith("TIMELINE,"):
        return "timeline"
    if TRACING.match(line):
        return "tracing"
    if BENCH.match(line):
        return "bench"
    return "other"


def account(res: SimResult) -> tuple[Counter[str], int]:
    """Classify every line; a torn TIMELINE line counts as itself plus the line inside it."""
    counts: Counter[str] = Counter()
    torn = 0
    skip_next = False
    for line in physical_lines(res):
        if skip_next:
            skip_next = False
            continue
        c = clean(line)
        if c.startswith("TIMELINE,"):
            m = EMBEDDED.search(c, 9)
            if m:
                torn += 1
                counts["timeline"] += 1
                counts[family(c[m.start() :])] += 1
                skip_next = True
                continue
        counts[family(c)] += 1
    return counts, torn


def timeline(res: SimResult) -> list[list[str]]:
    return [ln.split(",", 4) for ln in physical_lines(res) if ln.startswith("TIMELINE,")]


def detail(d: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in d.split(",") if "=" in kv)


def kind_of(text: str) -> str:
    if text.startswith("CUZK_NTT_H"):
        return "T16"
    body = text.removeprefix("CUZK_TIMING: ")
    for prefix, k in (
        ("split_vectors_ms", "T1"),
        ("prep_msm_ms", "T2"),
        ("b_g2_msm_ms", "T3"),
        ("epilogue_ms", "T7"),
        ("async_dealloc_ms", "T8"),
        ("host_register", "T9"),
        ("prestage_vram", "T10"),
        ("prestage_setup", "T11"),
        ("set pool", "T14"),
        ("d_a_cache", "T15"),
        ("pre_lock_cpu_ms", "T17"),
        ("mutex_held_ms", "T19"),
    ):
        if body.startswith(prefix):
            return k
    for key, k in (
        ("ntt_msm_h_ms", "T4"),
        ("batch_add_ms", "T5"),
        ("tail_msm_ms", "T6"),
        ("barrier_wait_ms", "T18"),
    ):
        if f" {key}=" in body:
            return k
    raise AssertionError(f"unknown C++ line {text!r}")


def run(era: str, cpp: int, seed: int, **kw: Any) -> SimResult:
    gw = kw.pop("gw", 1 + seed % 3)
    base: dict[str, Any] = dict(
        era=era,
        cpp_version=cpp,
        n_gpus=1 + seed % 2,
        gw=gw,
        proofs=3,
        concurrency=2,
        partitions_per_proof=4,
        seed=seed,
    )
    base.update(kw)
    return simulate(SimConfig(**base))


# ---------------------------------------------------------------------------------------------
# the reference's relations, for every code version and several seeds
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("era", "cpp"), ALL_VERSIONS)
def test_arithmetic_relations(era: str, cpp: int, seed: int) -> None:
    res = run(era, cpp, seed)
    ok = [r for r in res.truth if r["status"] == "ok"]
    assert ok
    for r in ok:
        nt, ba, tm, gt = (r["ntt_msm_h_ms"], r["batch_add_ms"], r["tail_msm_ms"], r["gpu_total_ms"])
        if cpp == 11:
            gap = gt - (nt + r["barrier_wait_ms"] + ba + tm)
            assert 0 <= gap <= 6, r
            fn = r["total_start_fn_ms"]
            assert abs(fn - (r["pre_lock_cpu_ms"] + r["mutex_wait_ms"] + r["mutex_held_ms"])) <= 2
            assert r["mutex_held_ms"] >= gt
            assert r["pre_lock_cpu_ms"] >= r["setup_to_split_ms"] - 1
            assert r["gpu_ms"] >= fn
            assert r["prove_start_ms"] >= fn
        else:
            assert gt >= nt + ba + tm  # the rest is the unprinted barrier wait
        if cpp <= 7:
            assert r["gpu_ms"] >= r["pre_destructor_ms"], r
            assert r["pre_destructor_ms"] >= r["epilogue_ms"]
        if 3 <= cpp <= 7:
            assert r["pre_destructor_ms"] >= gt
        if cpp >= 8:
            assert "pre_destructor_ms" not in r
        if r["num_circuits"] == 1:
            assert r["gpu_threads"] == 1


EXPECTED_LINES = {1: 8, 2: 8, 3: 8, 4: 10, 5: 10, 6: 10, 7: 10, 8: 9, 9: 8, 10: 8, 11: 11}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("era", "cpp"), ALL_VERSIONS)
def test_lines_per_call_and_thread_order(era: str, cpp: int, seed: int) -> None:
    res = run(era, cpp, seed, prestage_fail_rate=0.3, host_register_fail_rate=0.1)
    lines = physical_lines(res)
    for r in res.truth:
        texts = [lines[n - 1] for n in r["_lines"]]
        assert all(t.startswith(("CUZK_TIMING: ", "CUZK_NTT_H: ")) for t in texts)
        assert set(r["_gpu_lines"]) <= set(r["_lines"])
        assert r["_lines"] == sorted(r["_lines"])
        if r["status"] != "ok" or r["num_circuits"] != 1:
            continue
        n = EXPECTED_LINES[cpp]
        if 4 <= cpp <= 8 and (r.get("prestage_setup") == "silent" or "host_register" in r):
            n -= 1
        if cpp >= 9 and "pool_threshold_gpu" in r:
            n += 2
        assert len(texts) == n, (r, texts)
        pos = {kind_of(t): i for i, t in enumerate(texts)}
        for a, b in [
            ("T1", "T9"),
            ("T1", "T10"),
            ("T9", "T4"),
            ("T10", "T11"),
            ("T11", "T4"),
            ("T10", "T4"),
            ("T1", "T17"),
            ("T17", "T14"),
            ("T14", "T15"),
            ("T15", "T16"),
            ("T16", "T4"),
            ("T4", "T18"),
            ("T18", "T5"),
            ("T4", "T5"),
            ("T5", "T6"),
            ("T6", "T19"),
            ("T2", "T3"),
            ("T2", "T5"),
            ("T2", "T18"),
            ("T3", "T7"),
            ("T6", "T7"),
            ("T7", "T8"),
            ("T3", "T8"),
        ]:
            if a in pos and b in pos:
                assert pos[a] < pos[b], (a, b, texts)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("era", "cpp"), ALL_VERSIONS)
def test_mutex_blocks_never_interleave(era: str, cpp: int, seed: int) -> None:
    res = run(era, cpp, seed, gw=3)
    lines = physical_lines(res)
    by_mutex: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in res.truth:
        by_mutex[-1 if cpp <= 2 else r["gpu"]].append(r)
    for rows in by_mutex.values():
        rows.sort(key=lambda r: r["record"])
        blocks = []
        for r in rows:
            if cpp <= 2:  # static mutex over the whole function: all but the dealloc line
                block = [n for n in r["_lines"] if "async_dealloc_ms" not in lines[n - 1]]
            else:
                block = r["_gpu_lines"]
            assert block
            blocks.append((min(block), max(block)))
        for (_, hi), (lo, _) in zip(blocks, blocks[1:], strict=False):
            assert hi < lo


def test_records_are_in_lock_order_and_use_partition_columns() -> None:
    pa = pytest.importorskip("pyarrow")
    del pa
    from cuzk_diag.records import PARTITION_COLUMNS

    names = {n for n, _ in PARTITION_COLUMNS}
    for era, cpp in ALL_VERSIONS:
        res = run(era, cpp, 5)
        assert [r["record"] for r in res.truth] == list(range(len(res.truth)))
        locks = [r["_t_lock_ms"] for r in res.truth]
        assert locks == sorted(locks)
        for r in res.truth:
            assert {k for k in r if not k.startswith("_")} <= names
            assert r["era"] == era


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tle", ["T1", "T2", "T3", "T4"])
def test_six_timeline_lines_per_partition(tle: str, seed: int) -> None:
    era, cpp = {
        "T1": ("phase12", 8),
        "T2": ("pool-cache", 10),
        "T3": ("pool-cache", 10),
        "T4": ("main", 11),
    }[tle]
    res = run(era, cpp, seed, timeline_era=tle, snap_every=2, failures=1)
    per: Counter[tuple[str, str]] = Counter()
    events: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(dict)
    for _, off, ev, job, det in timeline(res):
        d = detail(det)
        p = d.get("partition", d.get("snap_partition"))
        assert p is not None
        per[(job, p)] += 1
        events[(job, p)][ev] = [off, det]
        if "snap_partition" in d:
            assert tle == "T2" and ev in ("SYNTH_START", "SYNTH_END", "CHAN_SEND")
    queue_ev = "GPU_QUEUE" if tle == "T4" else "CHAN_SEND"
    ok_rows = [r for r in res.truth if r["status"] == "ok"]
    assert ok_rows
    for r in ok_rows:
        key = (r["job_id"], str(r["partition"]))
        assert per[key] == 6
        ev = events[key]
        assert set(ev) == {
            "SYNTH_START",
            "SYNTH_END",
            queue_ev,
            "GPU_PICKUP",
            "GPU_START",
            "GPU_END",
        }
        assert int(ev["SYNTH_START"][0]) == r["synth_start_ms"]
        assert int(ev["SYNTH_END"][0]) == r["synth_end_ms"]
        assert int(ev[queue_ev][0]) == r["queue_ms"]
        assert int(ev["GPU_PICKUP"][0]) == r["pickup_ms"]
        assert int(ev["GPU_START"][0]) == r["start_ms"]
        assert int(ev["GPU_END"][0]) == r["end_ms"]
        assert detail(ev["GPU_END"][1])["gpu_ms"] == str(r["gpu_ms"])
        assert detail(ev["GPU_END"][1])["worker"] == str(r["worker"])
        assert detail(ev["SYNTH_END"][1])["synth_ms"] == str(r["synth_ms"])
    offsets = [int(t[1]) for t in timeline(res)]
    assert offsets == sorted(offsets)  # sorted by simulated time


@pytest.mark.parametrize(("era", "cpp"), [("phase9-11", 7), ("phase12", 8), ("main", 11)])
def test_tracing_clock_matches_timeline(era: str, cpp: int) -> None:
    """The engine-start tracing line is the TIMELINE epoch; GPU_END and its tracing neighbour
    (GPU prove complete) agree to within a millisecond."""
    from datetime import datetime

    def wall(line: str) -> float:
        ts = datetime.strptime(clean(line)[:26], "%Y-%m-%dT%H:%M:%S.%f")
        return ts.timestamp() * 1000.0

    res = run(era, cpp, 2)
    lines = physical_lines(res)
    epoch = wall(next(ln for ln in lines if "starting cuzk engine" in ln))
    n = 0
    for i, ln in enumerate(lines):
        if ln.startswith("TIMELINE,") and ",GPU_END," in ln:
            prev = next(p for p in reversed(lines[:i]) if "GPU prove complete" in p)
            off = int(ln.split(",")[1])
            assert abs((wall(prev) - epoch) - off) <= 1.0
            n += 1
    assert n == len(res.truth)


def test_worker_to_gpu_mapping() -> None:
    res = simulate(
        SimConfig(
            era="main", n_gpus=2, gw=3, proofs=3, concurrency=3, partitions_per_proof=6, seed=4
        )
    )
    assert {r["worker"] for r in res.truth} <= set(range(6))
    for r in res.truth:
        assert r["gpu"] == r["worker"] // 3
    started = [ln for ln in physical_lines(res) if "pipeline GPU worker started" in ln]
    assert len(started) == 6
    assert "worker_id=4 gpu=1 sub_id=1" in started[4]


# ---------------------------------------------------------------------------------------------
# special runs: incident, failures, monolithic, streams, messy
# ---------------------------------------------------------------------------------------------


def _incident_check(truth: list[dict[str, Any]]) -> None:
    assert len(truth) == 10
    assert all(r["prestage_setup"] == "skip_vram" for r in truth)
    assert all(r["usable_mib"] < r["total_mib"] for r in truth)
    steady = truth[3:]  # after the first gw calls the mutex queue is full
    ratio = statistics.median(r["pre_destructor_ms"] / r["gpu_total_ms"] for r in steady)
    assert 2.5 <= ratio <= 3.5
    assert 10_000 <= statistics.median(r["pre_destructor_ms"] for r in steady) <= 13_000
    assert 3_300 <= statistics.median(r["gpu_total_ms"] for r in truth) <= 4_300


def test_incident_fixture() -> None:
    log = (ROOT / "fixtures" / "sim" / "incident.log").read_text()
    truth = json.loads((ROOT / "fixtures" / "sim" / "incident.truth.json").read_text())
    _incident_check(truth)
    assert log.count("prestage_setup=skip_vram") == 10
    pd = [int(x) for x in re.findall(r"pre_destructor_ms=(\d+)", log)]
    gt = [int(x) for x in re.findall(r"gpu_total_ms=(\d+)", log)]
    assert 2.5 <= statistics.median(pd) / statistics.median(gt) <= 3.5
    assert "gpu_workers_per_device=3" in log


@pytest.mark.parametrize("seed", SEEDS)
def test_incident_any_seed(seed: int) -> None:
    res = simulate(
        SimConfig(
            era="phase9-11",
            n_gpus=1,
            gw=3,
            proofs=1,
            concurrency=1,
            force_skip_vram=True,
            seed=seed,
        )
    )
    _incident_check(res.truth)


@pytest.mark.parametrize(
    ("era", "cpp"),
    [("phase9-11", 4), ("phase12", 8), ("main", 11), ("pool-cache", 10), ("phase4-8", 3)],
)
def test_failure_injection(era: str, cpp: int) -> None:
    res = run(era, cpp, 7, failures=1, proofs=3, gw=2)
    failed = [r for r in res.truth if r["status"] == "failed"]
    assert len(failed) == 1
    f = failed[0]
    text = res.text
    assert not any(
        t[2] == "GPU_END"
        and t[3] == f["job_id"]
        and detail(t[4]).get("partition") == str(f["partition"])
        for t in timeline(res)
    )
    err = [ln for ln in text.splitlines() if "partition GPU proving failed" in ln]
    assert len(err) == 1
    assert " ERROR " in err[0]
    assert f"job_id={f['job_id']} partition={f['partition']}" in err[0]
    assert "end_ms" not in f and "gpu_ms" not in f
    for key in (
        "tail_msm_ms",
        "gpu_total_ms",
        "mutex_held_ms",
        "pre_destructor_ms",
        "b_g2_msm_ms",
        "async_dealloc_ms",
    ):
        assert key not in f
    assert "FAILED \u2014" in text
    assert res.expected["proofs_ok"] == 2
    assert res.expected["bench"]["failed"] == 1


def test_self_check_failure() -> None:
    res = run("main", 11, 3, self_check_failures=1, proofs=2)
    assert "Phase 7: PoRep proof self-check FAILED \u2014 proof will NOT be returned" in res.text
    assert res.text.count("Phase 7: PoRep proof self-check PASSED") == 1
    assert res.expected["bench"] == {**res.expected["bench"], "completed": 1, "failed": 1}


def test_monolithic_batch_era() -> None:
    res = simulate(
        SimConfig(
            era="phase4-8", cpp_version=1, n_gpus=2, gw=1, proofs=2, concurrency=2, pw=2, seed=12
        )
    )
    assert res.config.timeline_era == "T0"
    for r in res.truth:
        assert r["num_circuits"] == 10 and r["partition"] is None and r["gpu_threads"] == 2
        assert len(r["_per_tid"]) == 2
        assert r["gpu_total_ms"] == max(t["gpu_total_ms"] for t in r["_per_tid"])
    tl = timeline(res)
    assert {t[2] for t in tl} == {
        "SYNTH_START",
        "SYNTH_END",
        "CHAN_SEND",
        "GPU_PICKUP",
        "GPU_START",
        "GPU_END",
    }
    assert all(t[4] == "" for t in tl if t[2] == "CHAN_SEND")
    assert all(t[4] == "kind=porep-c2" for t in tl if t[2] == "SYNTH_START")
    assert "b_g2_msm_ms=" in res.text and "num_circuits=10" in res.text
    assert "gpu_tid=1 " in res.text


@pytest.mark.parametrize("streams", ["stderr", "cpp"])
def test_streams(streams: str) -> None:
    full = run("main", 11, 2, proofs=2)
    res = run("main", 11, 2, proofs=2, streams=streams)
    prefixes = ("CUZK_TIMING: ", "CUZK_NTT_H: ") + (("TIMELINE,",) if streams == "stderr" else ())
    lines = physical_lines(res)
    assert all(ln.startswith(prefixes) for ln in lines)
    # the same run: the stream filter only removes lines
    keep = [ln for ln in physical_lines(full) if ln.startswith(prefixes)]
    assert lines == keep
    for r in res.truth:
        assert "prove_start_ms" not in r and "finish_ms" not in r
        assert ("end_ms" in r) == (streams == "stderr")
        assert "split_vectors_ms" in r


@pytest.mark.parametrize("seed", SEEDS)
def test_accounting_matches_text(seed: int) -> None:
    for kw in (
        {},
        dict(failures=1, wdpost_every=2, id_style="curio"),
        dict(streams="stderr"),
        {**MESSY, "journald": True, "torn_rate": 0.2},
    ):
        res = run("main", 11, seed, **kw)
        counts, torn = account(res)
        exp = res.expected
        assert exp["lines_total"] == len(physical_lines(res))
        assert sum(exp["by_family"].values()) == exp["lines_total"]
        assert {k: v for k, v in exp["by_family"].items() if v} == dict(counts)
        assert exp["torn"] == torn
        assert exp["bytes"] == len(res.data or b"")
        if kw.get("journald"):
            assert exp["journald_lines"] > 0
        if kw.get("ansi"):
            assert exp["ansi_lines"] == exp["by_family"]["tracing"]


def test_messy_features() -> None:
    res = simulate(
        SimConfig(
            era="main",
            proofs=2,
            concurrency=2,
            partitions_per_proof=4,
            seed=9,
            **{
                **MESSY,
                "journald": True,
                "torn_rate": 0.3,
                "malformed_rate": 1.0,
                "unknown_key_rate": 1.0,
                "garbage_rate": 0.0,
                "drop_rate": 0.0,
                "nul_rate": 0.0,
            },
        )
    )
    data = res.data or b""
    exp = res.expected
    assert b"\r\n" in data and not data.endswith(b"\n")
    assert exp["truncated_last_line"] and exp["torn"] > 0 and exp["junk"] > 0
    assert exp["invalid_utf8_lines"] > 0
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    assert exp["huge_lines"] == 1 and any(len(ln) >= 20000 for ln in data.split(b"\n"))
    assert b"\x1b[32m INFO\x1b[0m" in data
    assert re.search(rb"\n[A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d curio-gpu01 cuzk\[4242\]: ", data)
    # every call has one malformed field and an unknown key on its tail_msm line
    assert exp["malformed"] == len(res.truth) == exp["unknown_key_lines"]
    text = res.text
    assert "CUZK_TIMING: prep_msm_ms=\r\n" in text or "ntt_msm_h_ms=abc" in text
    for r in res.truth:
        assert r["_malformed"][0] in ("prep_msm_ms", "ntt_msm_h_ms")
        assert r[r["_malformed"][0]] is None
        assert len(json.loads(r["extra"])) == 1


def test_damage_features() -> None:
    # Malformed lines of no call, lost GPU-region lines, NUL-damaged lines: counted, and the
    # truth no longer holds the values the log lost.
    cfg = dict(era="main", n_gpus=2, gw=2, proofs=2, concurrency=2, partitions_per_proof=4)
    clean_run = simulate(SimConfig(**cfg, seed=5))
    res = simulate(SimConfig(**cfg, seed=5, garbage_rate=0.1, drop_rate=0.1, nul_rate=0.1))
    exp = res.expected
    lines = physical_lines(res)
    assert exp["garbage_lines"] > 0 and exp["dropped_lines"] > 0 and exp["nul_lines"] > 0
    garbage = [ln for ln in lines if ln.endswith(("prep_msm_ms=", "ntt_msm_h_ms=abc"))]
    assert len(garbage) == exp["garbage_lines"]
    assert sum("\x00" in ln for ln in lines) == exp["nul_lines"]
    assert exp["malformed"] == exp["garbage_lines"] + exp["nul_lines"]
    # The same run, damaged only in its output: every line is still there or lost.
    kept = [ln for ln in lines if ln not in garbage]
    assert len(kept) == len(physical_lines(clean_run)) - exp["dropped_lines"]
    lost = [t for r in res.truth for t in r.get("_lost", [])]
    assert len(lost) == exp["dropped_lines"] + exp["nul_lines"]
    for r, c in zip(res.truth, clean_run.truth, strict=True):
        gone = {k for k in c if k not in r}
        if not r.get("_lost"):
            assert not gone and r["status"] == c["status"]
        else:
            assert gone and gone <= set(c)
            if any("gpu_tid=" in t or "NTT_H" in t for t in r["_lost"]):
                assert r["status"] == "incomplete"


def test_torn_line_shape() -> None:
    res = simulate(SimConfig(era="main", proofs=1, partitions_per_proof=4, seed=3, torn_rate=1.0))
    lines = physical_lines(res)
    torn = [
        i for i, ln in enumerate(lines) if ln.startswith("TIMELINE,") and EMBEDDED.search(ln, 9)
    ]
    assert len(torn) == res.expected["torn"] > 0
    for i in torn:
        ln = lines[i]
        m = EMBEDDED.search(ln, 9)
        assert m is not None
        joined = ln[: m.start()] + lines[i + 1]
        assert re.fullmatch(r"TIMELINE,\d+,[A-Z_]+,[^,]+,.*", joined), joined


# ---------------------------------------------------------------------------------------------
# determinism, bench output, streaming, fixtures, CLI
# ---------------------------------------------------------------------------------------------


def test_determinism() -> None:
    a = run("main", 11, 4, **MESSY)
    b = run("main", 11, 4, **MESSY)
    c = run("main", 11, 5, **MESSY)
    assert a.data == b.data and a.truth == b.truth and a.expected == b.expected
    assert a.data != c.data
    # messy knobs never change the simulated run itself
    plain = run("main", 11, 4)
    assert [r["_t_lock_ms"] for r in plain.truth] == [r["_t_lock_ms"] for r in a.truth]
    for p, m in zip(plain.truth, a.truth, strict=True):
        assert m.get("gpu_total_ms", p["gpu_total_ms"]) == p["gpu_total_ms"]  # unless lost


def test_bench_output() -> None:
    res = run("main", 11, 6, proofs=4, concurrency=2)
    lines = physical_lines(res)
    i = lines.index("=== Batch Benchmark ===")
    assert lines[i + 1 : i + 4] == ["proof type:  porep", "count:       4", "concurrency: 2"]
    per = [ln for ln in lines if re.match(r"  \[\d/4\] ", ln)]
    assert len(per) == 4
    rx = re.compile(r"  \[(\d)/4\] COMPLETED \u2014 (\d+\.\d)s \(prove=(\d+) ms, queue=(\d+) ms\)")
    by_job: dict[str, int] = defaultdict(int)
    for r in res.truth:
        by_job[r["job_id"]] += r["gpu_ms"]
    bench = res.expected["bench"]["proofs"]
    for k, ln in enumerate(per):
        m = rx.fullmatch(ln)
        assert m and int(m.group(1)) == k + 1
        assert bench[k]["prove_ms"] == int(m.group(3))
        assert bench[k]["wall_s"] == float(m.group(2))
        # prove = the job's summed partition durations, truncated once (>= sum of truncations)
        assert 0 <= int(m.group(3)) - by_job[bench[k]["job_id"]] <= 10
    total = float(re.search(r"total time:    (\d+\.\d)s", res.text).group(1))  # type: ignore[union-attr]
    m = re.search(r"throughput:    (\d+\.\d{3}) proofs/min \((\d+\.\d)s/proof\)", res.text)
    assert m
    assert abs(float(m.group(2)) - total / 4) <= 0.06
    assert abs(float(m.group(1)) - 4 / total * 60) <= 0.002
    # total = first submit .. last completion, in TIMELINE time
    first_start = min(int(t[1]) for t in timeline(res))
    last_end = max(r["end_ms"] for r in res.truth)
    assert total * 1000 >= last_end - first_start


def test_write_log_target_bytes(tmp_path: Path) -> None:
    buf = io.BytesIO()
    cfg = SimConfig(
        era="main", n_gpus=2, gw=2, proofs=2, concurrency=4, seed=1, target_bytes=1_500_000
    )
    res = write_log(cfg, buf, truth=False)
    assert res.data is None and res.truth == []
    assert 1_500_000 <= len(buf.getvalue()) == res.expected["bytes"]
    assert res.expected["proofs_submitted"] > 2
    path = tmp_path / "x.log"
    res2 = write_log(SimConfig(era="phase12", proofs=1, partitions_per_proof=2), str(path))
    assert path.stat().st_size == res2.expected["bytes"] and res2.truth


def test_cli(tmp_path: Path) -> None:
    out = tmp_path / "big.log"
    truth = tmp_path / "t.json"
    rc = sim.main(
        [
            "--era",
            "main",
            "--gpus",
            "2",
            "--gw",
            "2",
            "--proofs",
            "2",
            "--concurrency",
            "2",
            "--seed",
            "1",
            "--partitions",
            "3",
            "-o",
            str(out),
            "--truth",
            str(truth),
        ]
    )
    assert rc == 0
    assert out.read_bytes().startswith(b"20")
    assert len(json.loads(truth.read_text())) == 6


def test_bad_config() -> None:
    with pytest.raises(ValueError):
        simulate(SimConfig(era="phase13"))
    with pytest.raises(ValueError):
        simulate(SimConfig(era="main", cpp_version=4))
    with pytest.raises(ValueError):
        simulate(SimConfig(era="main", durations={"nope": 1.0}))


def _load_generator() -> Any:
    path = ROOT / "tools" / "gen_fixtures.py"
    spec = importlib.util.spec_from_file_location("gen_fixtures", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fixtures_are_reproducible() -> None:
    gen = _load_generator()
    files = gen.build()
    stale = [
        str(p.relative_to(ROOT))
        for p, data in files.items()
        if not p.exists() or p.read_bytes() != data
    ]
    assert not stale, f"run python tools/gen_fixtures.py; stale: {stale}"
    example = ROOT / "fixtures" / "example.log"
    assert example.stat().st_size <= 300_000
    sizes = [p.stat().st_size for p in (ROOT / "fixtures" / "sim").iterdir()]
    assert max(sizes) < 100_000
