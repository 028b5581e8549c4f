#!/usr/bin/env python3
"""Throughput and peak memory of cuzk-diag against grep and lnav, measured side by side.

    python bench/run.py --mb 250            # full run (several minutes), plus a 1 GB row
    python bench/run.py --quick             # smoke run: 20 MB, one repetition
    python bench/run.py --mb 250 --large-mb 0   # without the 1 GB row

Every command runs under ``/usr/bin/time`` (wall seconds, peak RSS); the repetitions are
interleaved (round 1 runs every tool, then round 2, ...) so that the load of a shared machine
spreads over all tools alike, and the median of each tool is reported. Ratios between tools
measured in the same run are the meaningful figures; absolute seconds vary with the machine.

``--baseline DIR`` measures another build of the package (a directory holding ``cuzk_diag``, e.g.
``pip install --target DIR`` of its wheel) in the same rounds: each cuzk-diag row of the main run
is measured next to the same command on that build (the baseline's first in every other round),
so that two versions are compared side by side rather than in two runs minutes apart.

Writes ``bench/out/results.md`` and ``bench/out/results.json`` (``results-quick.*`` with --quick).
See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from common import (
    DEFAULT_OUT,
    MB,
    REPO,
    ROTATED_FILES,
    TIME_BIN,
    BenchError,
    Measure,
    build_kind,
    compiled_copy,
    cuzk_diag_cmd,
    ensure_log,
    env_importing,
    fingerprint,
    machine_info,
    rotated,
    shell_join,
    snapshot_env,
    timed,
    warm_cache,
)

#: Targets: wall time as a multiple of lnav indexing the same file in the same run, peak RSS of
#: `analyze` below a bound and flat with the input size (measured on the one-process row, whose
#: peak RSS is all its memory; GNU time reports the larger process of two, not their sum).
TARGET_LNAV_RATIO = {"analyze": 3.0, "export": 3.0, "export --lines": 2.0}
TARGET_RSS_MIB = 400.0
#: "Flat": peak RSS on the full input at most this many times the peak on a fifth of it.
FLAT_FACTOR = 1.25

#: The cuzk-diag rows run as a user runs them (``--jobs auto``: on a machine with two usable CPUs a
#: log of 32 MiB or more is parsed in a second process ahead of the assembly, or for the line
#: table by two processes in turn); the "-j1" rows run in one process, for the ratio between
#: them and for memory.
TOOLS = [
    "grep",
    "lnav",
    "export --lines",
    "export --lines -j1",
    "export",
    "export -j1",
    "analyze",
    "analyze -j1",
]
#: The other outputs, measured when named in ``--tools``: the text exports and the trace.
OTHER_TOOLS = [
    "export --lines jsonl",
    "export jsonl",
    "export csv",
    "trace",
    "analyze rotated",
    "analyze rotated -j1",
]
SCALING_TOOLS = ["grep", "lnav", "export --lines -j1", "export -j1", "analyze -j1"]
LARGE_TOOLS = ["lnav", "analyze", "analyze -j1"]
RSS_TOOL = "analyze -j1"
#: Name suffix of a row measured on the ``--baseline`` build.
BASELINE = " [baseline]"


def build_cmd(tool: str, log: Path, work: Path, tag: str) -> list[str] | None:
    """The command line of ``tool`` on ``log``; None if the tool is not installed."""
    cd = cuzk_diag_cmd()
    if tool == "grep":
        return ["grep", "-c", "CUZK_TIMING", str(log)]
    if tool == "lnav":
        lnav = shutil.which("lnav")
        if not lnav:
            return None
        # Headless (-n): lnav indexes every file before it runs the -c commands; the query then
        # prints the number of lines indexed, which is checked against the file's line count.
        # (Without a command, `lnav -n FILE` would also print the whole log to stdout, which
        # measures its formatter rather than its indexer.)
        return [lnav, "-n", "-c", ";SELECT lines FROM lnav_file", str(log)]
    jobs = ["--jobs", "1"] if tool.endswith("-j1") else []
    if tool in ("export --lines", "export --lines -j1", "export --lines jsonl"):
        suffix = "jsonl" if tool.endswith("jsonl") else "parquet"
        out = str(work / f"lines-{tag}.{suffix}")
        return [*cd, "export", "--lines", str(log), "-o", out, *jobs]
    if tool in ("export", "export -j1", "export jsonl", "export csv"):
        suffix = tool.split()[-1] if tool.endswith(("jsonl", "csv")) else "parquet"
        return [*cd, "export", str(log), "-o", str(work / f"partitions-{tag}.{suffix}"), *jobs]
    if tool == "trace":
        return [*cd, "trace", str(log), "-o", str(work / f"trace-{tag}.json")]
    if tool in ("analyze", "analyze -j1"):
        return [*cd, "analyze", str(log), "--format", "json", "-o", "/dev/null", *jobs]
    parts = rotated_parts(tool)
    if parts is not None:
        # (the same bytes as ``log``, as the rotated files of one daemon log: ``common.rotated``)
        files = [str(p) for p in rotated(log, parts)]
        return [*cd, "analyze", *files, "--format", "json", "-o", "/dev/null", *jobs]
    raise ValueError(tool)


def rotated_parts(tool: str) -> int | None:
    """The files an ``analyze rotated`` row cuts the log into: ``analyze rotated [N] [-j1]``,
    ``ROTATED_FILES`` without N (2 to 1000); None for another tool or another form."""
    words = tool.split()
    if words[:2] != ["analyze", "rotated"]:
        return None
    rest = words[2:]
    if rest[-1:] == ["-j1"]:
        rest = rest[:-1]
    if not rest:
        return ROTATED_FILES
    if len(rest) == 1 and rest[0].isdigit() and 2 <= int(rest[0]) <= 1000:
        return int(rest[0])
    return None


def lnav_indexed_lines(stdout: str) -> int | None:
    nums = [tok for tok in stdout.split() if tok.isdigit()]
    return int(nums[-1]) if nums else None


def measure(
    tools: list[str],
    log: Path,
    reps: int,
    work: Path,
    tag: str,
    env: dict[str, str] | None,
    baseline: dict[str, str] | None = None,
) -> dict[str, Measure]:
    """Run every tool ``reps`` times on ``log``, interleaved round by round; with ``baseline``
    (the environment of another build), each cuzk-diag tool is measured in every round next to
    its row on that build (named with ``BASELINE``), which goes first in every other round."""
    size = log.stat().st_size
    n_lines = warm_cache(log)
    results: dict[str, Measure] = {}
    envs: dict[str, dict[str, str] | None] = {}
    for tool in tools:
        cmd = build_cmd(tool, log, work, tag)
        m = Measure(tool, cmd or [], size)
        if cmd is None:
            m.note = "lnav not found on PATH: row skipped"
            print(f"  {tool}: {m.note}", file=sys.stderr)
        results[tool], envs[tool] = m, env
        if baseline is not None and tool not in ("grep", "lnav"):
            results[tool + BASELINE] = Measure(tool + BASELINE, list(m.cmd), size)
            envs[tool + BASELINE] = baseline
    for rep in range(1, reps + 1):
        # (With a baseline, each build goes first in every other round: a row's place in the
        # round, e.g. right after a command that wrote a large file, counts too.)
        for tool in _baseline_first(list(results)) if rep % 2 == 0 else list(results):
            m = results[tool]
            if not m.cmd or (m.samples and not m.ok):
                continue  # not installed, or already failed once: do not repeat a failure
            s = timed(m.cmd, work, envs[tool])
            m.samples.append(s)
            status = "" if s.rc == 0 or (tool == "grep" and s.rc == 1) else f"  FAILED exit {s.rc}"
            print(
                f"  [{tag} {rep}/{reps}] {tool:<28} {s.wall_s:7.3f} s  "
                f"{s.rss_kib / 1024:7.1f} MiB{status}",
                file=sys.stderr,
            )
            if tool == "grep" and s.rc == 1:
                s.rc = 0  # grep -c exits 1 when it counts zero lines: not a failure of the run
                m.note = "no CUZK_TIMING line in the input"
            if s.rc != 0:
                last = s.stderr.strip().splitlines()[-1:] or [""]
                m.note = f"failed (exit {s.rc}): {last[0]}".replace("|", "\\|")
                print(s.stderr[-2000:], file=sys.stderr)
            if tool == "lnav" and s.rc == 0:
                got = lnav_indexed_lines(s.stdout)
                if got != n_lines:
                    m.note = f"lnav reported {got} lines indexed, the file has {n_lines}"
                else:
                    m.note = f"indexed all {n_lines} lines"
    return results


def rounds(reps: int, baseline: bool) -> int:
    """The rounds to run for ``--reps``: with a baseline an even number (an odd one gets one
    more), so that each build goes first in as many rounds (``measure``). The first command
    of a pair runs a few per cent slower on these machines: with five rounds this build went
    first in three, and its rows read 1-4 % slower against the baseline than in runs where each
    went first as often."""
    return reps + 1 if baseline and reps % 2 else reps


def _baseline_first(names: list[str]) -> list[str]:
    """``names`` with each row followed by its ``BASELINE`` row swapped with it."""
    out = list(names)
    for i in range(len(out) - 1):
        if out[i + 1] == out[i] + BASELINE:
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


def fmt(x: float | None, nd: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{nd}f}"


def ratio(a: Measure, b: Measure | None) -> str:
    if b is None or not (a.ok and b.ok) or b.wall <= 0:
        return "n/a"
    r = a.wall / b.wall
    return f"{r:.1f}×" if r < 100 else f"{r:.0f}×"


def results_table(res: dict[str, Measure], reps: int) -> str:
    grep, lnav = res.get("grep"), res.get("lnav")
    head = (
        f"| Tool | Input MB | Wall s (median of {reps}) | MB/s | CPU s | MB per CPU-s "
        "| Peak RSS MiB | Wall ÷ grep | Wall ÷ lnav | Note |"
    )
    rows = [head, "|" + "---|" * 10]
    for tool, m in res.items():
        if m.ok:
            rows.append(
                f"| {tool} | {m.input_bytes / MB:.1f} | {m.wall:.3f} | {m.mb_per_s:.1f} "
                f"| {m.cpu:.2f} | {per_cpu(m)} | {m.rss_mib:.1f} | {ratio(m, grep)} "
                f"| {ratio(m, lnav)} | {m.note} |"
            )
        else:
            rows.append(
                f"| {tool} | {m.input_bytes / MB:.1f} | – | – | – | – | – | – | – | "
                f"{m.note or 'no sample'} |"
            )
    return "\n".join(rows)


def per_cpu(m: Measure) -> str:
    """Throughput per CPU-second (user + system): steadier than wall time on a loaded machine."""
    return f"{m.input_bytes / MB / m.cpu:.1f}" if m.cpu >= 0.02 else "n/a"


def marginal(small: Measure, large: Measure) -> str:
    """Throughput on the extra input alone (start-up and imports cancel out)."""
    dt = large.wall - small.wall
    if dt <= 0:
        return "n/a"
    return f"{(large.input_bytes - small.input_bytes) / MB / dt:.1f}"


def scaling_table(small: dict[str, Measure], large: dict[str, Measure]) -> str:
    rows = [
        "| Tool | Small MB | Large MB | Wall s small | Wall s large | Wall ratio "
        "| Marginal MB/s | Peak RSS MiB small | Peak RSS MiB large | RSS ratio |",
        "|" + "---|" * 10,
    ]
    for tool, s in small.items():
        lg = large.get(tool)
        if lg is None or not (s.ok and lg.ok):
            rows.append(
                f"| {tool} | {s.input_bytes / MB:.1f} | – | – | – | – | – | – | – | "
                f"{s.note or (lg.note if lg else '') or 'n/a'} |"
            )
            continue
        rows.append(
            f"| {tool} | {s.input_bytes / MB:.1f} | {lg.input_bytes / MB:.1f} | {s.wall:.3f} "
            f"| {lg.wall:.3f} | {lg.wall / s.wall:.2f} | {marginal(s, lg)} "
            f"| {s.rss_mib:.1f} | {lg.rss_mib:.1f} "
            f"| {lg.rss_mib / s.rss_mib:.2f} |"
        )
    return "\n".join(rows)


def baseline_table(res: dict[str, Measure]) -> str:
    """Each cuzk-diag row against its row on the ``--baseline`` build, measured in the same
    rounds: the medians of the wall time and of the CPU time (user + system, less moved by the
    machine's other load than the wall time), their ratios, and in how many rounds this build
    took less of each."""
    rows = [
        "| Tool | This build s | Baseline s | This ÷ baseline | Faster in rounds "
        "| CPU s this | CPU s baseline | CPU this ÷ baseline | Less CPU in rounds "
        "| Peak RSS MiB this | Peak RSS MiB baseline |",
        "|" + "---|" * 11,
    ]
    for tool, m in res.items():
        b = res.get(tool + BASELINE)
        if b is None:
            continue
        if not (m.ok and b.ok):
            rows.append(f"| {tool} |" + " – |" * 10)
            continue
        pairs = list(zip(m.samples, b.samples, strict=False))
        faster = sum(1 for x, y in pairs if x.wall_s < y.wall_s)
        leaner = sum(1 for x, y in pairs if x.user_s + x.sys_s < y.user_s + y.sys_s)
        rows.append(
            f"| {tool} | {m.wall:.3f} | {b.wall:.3f} | {m.wall / b.wall:.3f} "
            f"| {faster} of {len(pairs)} | {m.cpu:.2f} | {b.cpu:.2f} | {m.cpu / b.cpu:.3f} "
            f"| {leaner} of {len(pairs)} | {m.rss_mib:.1f} | {b.rss_mib:.1f} |"
        )
    return "\n".join(rows)


def targets(
    res: dict[str, Measure], small: dict[str, Measure] | None, large: dict[str, Measure] | None
) -> list[str]:
    """One line per target: met / NOT met, with the figures."""
    out: list[str] = []
    lnav = res.get("lnav")

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    for tool, limit in TARGET_LNAV_RATIO.items():
        m = res.get(tool)
        if m is None or not m.ok or lnav is None or not lnav.ok:
            out.append(f"- `{tool}` / lnav: not measured")
            continue
        r = m.wall / lnav.wall
        out.append(
            f"- `{tool}` wall time ≤ {limit:g}× lnav indexing: {verdict(r <= limit)} "
            f"({m.wall:.2f} s vs {lnav.wall:.2f} s, {r:.1f}×; {m.mb_per_s:.1f} MB/s)"
        )
    m = res.get(RSS_TOOL)
    if m is not None and m.ok:
        out.append(
            f"- `{RSS_TOOL}` peak RSS < {TARGET_RSS_MIB:.0f} MiB: "
            f"{verdict(m.rss_mib < TARGET_RSS_MIB)} ({m.rss_mib:.1f} MiB)"
        )
        for other in (small, large):
            o = other.get(RSS_TOOL) if other else None
            if o is None or not o.ok:
                continue
            lo, hi = sorted((o, m), key=lambda x: x.input_bytes)
            grow = hi.rss_mib / lo.rss_mib
            out.append(
                f"- `{RSS_TOOL}` peak RSS flat (≤ {FLAT_FACTOR}× from {lo.input_bytes / MB:.0f} to "
                f"{hi.input_bytes / MB:.0f} MB): {verdict(grow <= FLAT_FACTOR)} "
                f"({lo.rss_mib:.1f} → {hi.rss_mib:.1f} MiB, {grow:.2f}×)"
            )
    return out


def baseline_environment(path: Path, work: Path) -> dict[str, str]:
    """An environment that runs the build in ``path`` (a directory holding ``cuzk_diag``), from
    a copy in ``work`` with its bytecode written, as this build's snapshot is
    (``common.compiled_copy``)."""
    if not (path / "cuzk_diag" / "__init__.py").is_file():
        raise BenchError(f"--baseline {path}: no cuzk_diag package in it")
    compiled_copy(path / "cuzk_diag", work / "baseline")
    return env_importing(work / "baseline", "--baseline")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, help="size of the log in MB (default 250, 20 with --quick)")
    ap.add_argument(
        "--reps",
        type=int,
        default=None,
        help="repetitions per tool (default 3; with --baseline an even number, one more if odd)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="directory for cached logs and results (default bench/out)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the exported files")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 20 MB, 1 repetition (unless --mb/--reps are given)",
    )
    ap.add_argument(
        "--no-scaling",
        action="store_true",
        help="skip the memory-scaling check on a fifth of the input",
    )
    ap.add_argument(
        "--tools",
        default=",".join(TOOLS),
        help=f"comma-separated subset of: {', '.join(TOOLS + OTHER_TOOLS)}, and `analyze "
        f"rotated N` (N files instead of {ROTATED_FILES}; with -j1 too) (default: all but "
        f"{', '.join(OTHER_TOOLS)})",
    )
    ap.add_argument("--regen", action="store_true", help="regenerate the cached logs")
    ap.add_argument(
        "--era",
        default="main",
        help="the simulated logs' code era, one of the simulator's (cuzk_diag.model.daemon.ERAS; "
        "default main: the targets' log)",
    )
    ap.add_argument(
        "--large-mb",
        type=int,
        default=None,
        help="size of the large log measured once (default 1000; 0 skips it; not with --quick)",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="DIR",
        help="another build of the package (a directory holding cuzk_diag, e.g. a pip install "
        "--target of its wheel) measured in the same rounds of the main run, for a comparison "
        "side by side",
    )
    ap.add_argument(
        "--no-snapshot",
        action="store_true",
        help="run the installed package in place instead of a copy taken at the start "
        "(edits made during the run would then be measured too)",
    )
    args = ap.parse_args(argv)

    if args.quick:
        args.mb = args.mb or 20
        args.reps = args.reps or 1
    args.mb = args.mb or 250
    reps = args.reps or 3
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = [t for t in tools if t not in TOOLS + OTHER_TOOLS and rotated_parts(t) is None]
    if unknown or args.mb < 1 or reps < 1:
        ap.error(
            f"unknown tool(s): {', '.join(unknown)}" if unknown else "--mb and --reps must be ≥ 1"
        )
    if not Path(TIME_BIN).exists():
        print(f"error: {TIME_BIN} not found (GNU time; apt-get install time)", file=sys.stderr)
        return 2

    out: Path = args.out.resolve()
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    suffix = "-quick" if args.quick else ""
    t0 = time.monotonic()
    info = machine_info()  # at the start: the commit and code that are measured
    env: dict[str, str] | None = None
    baseline_env: dict[str, str] | None = None
    base: dict[str, str] = {}  # the --baseline build: its path, fingerprint and kind
    try:
        if not args.no_snapshot:
            env, snap_fp = snapshot_env(work)
            print(
                f"measuring a snapshot of the installed package (fingerprint {snap_fp})",
                file=sys.stderr,
            )
            info["src_fingerprint"] = snap_fp
        info["build"] = build_kind(env)
        if args.baseline is not None:
            root = args.baseline.resolve()
            baseline_env = baseline_environment(root, work)
            base = {
                "path": str(root),
                "fingerprint": fingerprint(root / "cuzk_diag"),
                "build": build_kind(baseline_env),
            }
            info["baseline"] = base
        log = ensure_log(args.mb, out, args.regen, env, args.era)
        even = rounds(reps, baseline_env is not None)
        if even != reps:
            reps = even
            print(
                f"--baseline: {reps} rounds, so that each build goes first in as many",
                file=sys.stderr,
            )
        print(f"main run: {len(tools)} tools × {reps} on {log.name}", file=sys.stderr)
        res = measure(tools, log, reps, work, f"{args.mb}mb", env, baseline_env)
        small: dict[str, Measure] | None = None
        small_mb = max(1, args.mb // 5)
        if not args.no_scaling:
            sc_tools = [t for t in SCALING_TOOLS if t in tools]
            small_log = ensure_log(small_mb, out, args.regen, env, args.era)
            print(
                f"scaling run: {len(sc_tools)} tools × {reps} on {small_log.name}", file=sys.stderr
            )
            small = measure(sc_tools, small_log, reps, work, f"{small_mb}mb", env)
        large: dict[str, Measure] | None = None
        large_mb = args.large_mb if args.large_mb is not None else (0 if args.quick else 1000)
        if large_mb > 0:
            lg_tools = [t for t in LARGE_TOOLS if t in tools]
            large_log = ensure_log(large_mb, out, args.regen, env, args.era)
            print(f"large run: {len(lg_tools)} tools × 1 on {large_log.name}", file=sys.stderr)
            large = measure(lg_tools, large_log, 1, work, f"{large_mb}mb", env)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if not args.keep:
            for pattern in ("*.parquet", "*.jsonl", "*.csv", "trace-*.json"):
                for p in work.glob(pattern):
                    p.unlink()
        shutil.rmtree(work / "snapshot", ignore_errors=True)

    end = machine_info()
    info["loadavg_end"] = end["loadavg"]
    info["snapshot"] = not args.no_snapshot
    code_note = (
        "a copy of the package taken at the start"
        if not args.no_snapshot
        else "the installed package in place"
    )
    if args.no_snapshot and end.get("src_fingerprint") != info.get("src_fingerprint"):
        info["warning"] = (
            f"the package changed during the run ({info.get('src_fingerprint')} -> "
            f"{end.get('src_fingerprint')}): the rows mix code versions"
        )
        print(f"warning: {info['warning']}", file=sys.stderr)
    lines = [
        f"# cuzk-diag benchmark ({args.mb} MB, {reps} repetition{'s' if reps > 1 else ''})",
        "",
        f"Machine: {info['nproc']} cores, {info['cpu_model']} at {info['cpu_mhz']} MHz, "
        f"{info['ram_gib']} GiB RAM; "
        f"load average {' '.join(info['loadavg'])} at the start, "  # type: ignore[arg-type]
        f"{' '.join(end['loadavg'])} at the end; Python {info['python']}; "  # type: ignore[arg-type]
        f"{info.get('lnav', 'no lnav')}.",
        "",
        f"Code: cuzk-diag {info['cuzk_diag']} at commit {info['commit']}"
        f"{' with local changes in src/' if info['src_modified'] else ''}, package fingerprint "
        f"{info.get('src_fingerprint')} ({code_note}), {info.get('build')} build.",
        *(["", f"**Warning: {info['warning']}.**"] if "warning" in info else []),
        *(
            [
                "",
                f"Baseline (the rows marked{BASELINE}, measured in the same rounds): "
                f"`{base['path']}`, package fingerprint {base['fingerprint']}, "
                f"{base['build']} build.",
            ]
            if base
            else []
        ),
        "",
        f"Input: `{log.relative_to(REPO) if log.is_relative_to(REPO) else log}` "
        f"({log.stat().st_size / MB:.1f} MB).",
        "",
        results_table(res, reps),
        "",
        "Commands:",
        "",
        *[f"- {t}: `{shell_join(m.cmd)}`" for t, m in res.items() if m.cmd],
    ]
    if base:
        lines += [
            "",
            "## This build against the baseline (the same rounds)",
            "",
            baseline_table(res),
        ]
    if small is not None:
        lines += [
            "",
            f"## Memory scaling ({small_mb} MB vs {args.mb} MB)",
            "",
            scaling_table(small, res),
        ]
    if large is not None:
        lines += [
            "",
            f"## Large log ({large_mb} MB, one repetition)",
            "",
            results_table(large, 1),
            "",
            scaling_table({k: v for k, v in res.items() if k in large}, large),
        ]
    lines += ["", "## Targets", "", *targets(res, small, large), ""]
    md = "\n".join(lines)
    print(md)
    (out / f"results{suffix}.md").write_text(md)
    payload = {
        "mb": args.mb,
        "reps": reps,
        "machine": info,
        "input": {"path": str(log), "bytes": log.stat().st_size},
        "results": [m.to_dict() for m in res.values()],
        "scaling": [m.to_dict() for m in small.values()] if small else None,
        "large": [m.to_dict() for m in large.values()] if large else None,
        "targets": {
            "wall_over_lnav": TARGET_LNAV_RATIO,
            "analyze_peak_rss_mib": TARGET_RSS_MIB,
            "flat_factor": FLAT_FACTOR,
        },
        "elapsed_s": round(time.monotonic() - t0, 1),
    }
    (out / f"results{suffix}.json").write_text(json.dumps(payload, indent=2) + "\n")
    print(
        f"wrote {out / f'results{suffix}.md'} and results{suffix}.json "
        f"in {time.monotonic() - t0:.0f} s",
        file=sys.stderr,
    )
    failed = [m.name for m in res.values() if m.cmd and not m.ok]
    if small:
        failed += [f"{m.name} (scaling)" for m in small.values() if m.cmd and not m.ok]
    if large:
        failed += [f"{m.name} (large)" for m in large.values() if m.cmd and not m.ok]
    if failed:
        print(f"error: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
