"""Damaged copies of a large log, read with one process and with several: the same output.

``--jobs N`` cuts a regular file of ``MIN_BYTES`` or more (``ingest/split.py``) into parts that
children assemble, each finding the assembly's state at its start from a warm-up, and must give
what one process gives. The tests hold every fixture log cut at every place to that; this
script does it on logs large enough to be cut the way the command cuts them, damaged the ways a
real log is: windows of lines out of order, lines lost or repeated, garbage and NUL bytes,
carriage returns, lines of hundreds of KB, blocks of lines swapped, lines torn in two. For each
seed it writes a damaged copy of the base log, runs the installed command on it with ``--jobs
1`` and with ``--jobs N``, and checks:

- neither run fails inside (exit code 3, or a traceback on stderr), and both end alike;
- ``analyze``: the JSON reports are the same bytes, and the accounting counts every physical
  line of the copy; ``export``: the Parquet tables and their metadata are equal.

Usage (from the repository root)::

    python tools/fuzz_jobs.py                         # 20 seeds, a simulated 40 MB main-era log
    python tools/fuzz_jobs.py --seeds 100-139 --mutations 5-30
    python tools/fuzz_jobs.py --command export --seeds 1-8
    python tools/fuzz_jobs.py --era pool-cache --messy
    python tools/fuzz_jobs.py --log daemon.log --jobs 3

A damaged copy whose runs disagree is kept (``--keep``, default a new temporary directory) with
both outputs; the exit code is 1 when any seed failed. Each seed takes two commands' time
(about 3 s on the simulated 40 MB log, two CPUs, the compiled build).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from cuzk_diag.ingest.split import MIN_BYTES  # noqa: E402

Lines = list[bytes]


def _shuffle(lines: Lines, rng: random.Random, i: int) -> None:
    window = lines[i : i + rng.randint(2, 300)]
    rng.shuffle(window)
    lines[i : i + len(window)] = window


def _drop(lines: Lines, rng: random.Random, i: int) -> None:
    del lines[i : i + rng.randint(1, 200)]


def _repeat(lines: Lines, rng: random.Random, i: int) -> None:
    at = rng.randrange(len(lines))
    lines[at:at] = lines[i : i + rng.randint(1, 500)]


def _garbage(lines: Lines, rng: random.Random, i: int) -> None:
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 400)))
    lines.insert(i, junk.replace(b"\n", b"?"))


def _truncate(lines: Lines, rng: random.Random, i: int) -> None:
    lines[i] = lines[i][: rng.randrange(max(1, len(lines[i])))]


def _nul(lines: Lines, rng: random.Random, i: int) -> None:
    line = bytearray(lines[i])
    if line:
        line[rng.randrange(len(line))] = 0
    lines[i] = bytes(line)


def _carriage_returns(lines: Lines, rng: random.Random, i: int) -> None:
    for j in range(i, min(len(lines), i + rng.randint(1, 100))):
        lines[j] += b"\r"


def _long(lines: Lines, rng: random.Random, i: int) -> None:
    lines.insert(i, b"CUZK_TIMING: " + b"a=1 " * rng.randint(1000, 300_000))


def _swap_blocks(lines: Lines, rng: random.Random, i: int) -> None:
    n = rng.randint(10, max(10, min(1000, len(lines) // 4)))
    j = rng.randrange(max(1, len(lines) - n))
    if abs(i - j) >= n and max(i, j) + n <= len(lines):
        lines[i : i + n], lines[j : j + n] = lines[j : j + n], lines[i : i + n]


def _tear(lines: Lines, rng: random.Random, i: int) -> None:
    if i + 1 < len(lines):
        lines[i] = lines[i][: len(lines[i]) // 2]
        lines[i + 1] = lines[i + 1][len(lines[i + 1]) // 2 :]


#: Each damage by name: a function of the lines, the seed's generator and a line index.
MUTATIONS: dict[str, Callable[[Lines, random.Random, int], None]] = {
    "shuffle": _shuffle,
    "drop": _drop,
    "repeat": _repeat,
    "garbage": _garbage,
    "truncate": _truncate,
    "nul": _nul,
    "cr": _carriage_returns,
    "long": _long,
    "swap": _swap_blocks,
    "tear": _tear,
}


def mutate(text: bytes, seed: int, count: tuple[int, int]) -> tuple[bytes, list[str]]:
    """A damaged copy of ``text`` (``count``: the fewest and most damages), and the damages'
    names, in order; the same for the same seed."""
    rng = random.Random(seed)
    lines = text.split(b"\n")
    done = []
    for _ in range(rng.randint(*count)):
        name = rng.choice(sorted(MUTATIONS))
        MUTATIONS[name](lines, rng, rng.randrange(max(1, len(lines) - 1)))
        done.append(name)
    return b"\n".join(lines), done


def physical_lines(text: bytes) -> int:
    """The lines of ``text`` as the accounting counts them: each newline ends one, and text
    after the last newline is one more."""
    return text.count(b"\n") + (1 if text and not text.endswith(b"\n") else 0)


@dataclass
class Outcome:
    """One run of the command: its exit code, stderr, and what it wrote."""

    code: int
    stderr: str
    output: bytes


def run(command: str, log: Path, jobs: int, out: Path) -> Outcome:
    """``cuzk-diag COMMAND LOG --jobs JOBS`` with this Python, its output written to ``out``."""
    if command == "analyze":
        args = ["analyze", str(log), "--format", "json", "-o", str(out), "-q"]
    else:
        args = ["export", str(log), "-o", str(out), "-q"]
    proc = subprocess.run(
        [sys.executable, "-m", "cuzk_diag", *args, "--jobs", str(jobs)],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    data = out.read_bytes() if out.exists() else b""
    return Outcome(proc.returncode, proc.stderr.decode("utf-8", "replace"), data)


def problems(command: str, one: Outcome, many: Outcome, lines: int) -> list[str]:
    """What is wrong with the runs of one damaged copy of ``lines`` physical lines (``one``
    with one process, ``many`` with several); empty when nothing is."""
    out = []
    for name, o in (("--jobs 1", one), ("--jobs N", many)):
        if o.code == 3 or "Traceback" in o.stderr:
            out.append(f"{name} failed inside (exit {o.code}): {o.stderr.strip()[-300:]}")
    if one.code != many.code:
        out.append(f"exit codes differ: {one.code} with one process, {many.code} with several")
    if command == "analyze":
        if one.output != many.output:
            out.append("the JSON reports differ")
        try:
            counted = json.loads(one.output)["accounting"]["lines_total"]
        except (ValueError, KeyError, TypeError):
            counted = None
        if one.code in (0, 1) and counted != lines:
            out.append(f"{lines} physical lines, {counted} counted")
    elif one.output and many.output:
        out.extend(_parquet_differences(one.output, many.output))
    elif one.output != many.output:
        out.append("only one of the runs wrote its export")
    return out


def _parquet_differences(a: bytes, b: bytes) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    ta, tb = (pq.read_table(pa.BufferReader(x)) for x in (a, b))
    out = []
    if not ta.equals(tb):
        out.append("the exported tables differ")
    if ta.schema.metadata != tb.schema.metadata:
        out.append("the exports' metadata differ")
    return out


def base_log(args: argparse.Namespace, work: Path) -> Path:
    """The log to damage: ``--log``, else a simulated one of ``--mb`` MB."""
    if args.log:
        return Path(args.log)
    path = work / f"base-{args.era}-{args.mb}mb{'-messy' if args.messy else ''}.log"
    cmd = [sys.executable, "-m", "cuzk_diag.model.daemon", "--era", args.era, "--gpus", "2"]
    cmd += ["--gw", "2", "--proofs", "20", "--concurrency", "4", "--seed", "1"]
    cmd += ["--target-mb", str(args.mb), "-o", str(path), *(["--messy"] if args.messy else [])]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return path


def span(text: str) -> tuple[int, int]:
    """``A-B`` (or ``A``) as the pair of its ends."""
    lo, _, hi = text.partition("-")
    try:
        pair = int(lo), int(hi or lo)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number or a range A-B: {text!r}") from None
    if pair[0] > pair[1] or pair[0] < 0:
        raise argparse.ArgumentTypeError(f"not a range A-B with 0 <= A <= B: {text!r}")
    return pair


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", help="the log to damage (default: a simulated one)")
    ap.add_argument("--mb", type=int, default=40, help="size of the simulated log (default 40)")
    ap.add_argument("--era", default="main", help="era of the simulated log (default main)")
    ap.add_argument("--messy", action="store_true", help="simulate a messy log (--messy)")
    ap.add_argument("--seeds", type=span, default=(1, 20), help="seeds A-B (default 1-20)")
    ap.add_argument("--mutations", type=span, default=(1, 6), help="damages a copy (default 1-6)")
    ap.add_argument("--command", choices=("analyze", "export"), default="analyze")
    ap.add_argument("--jobs", type=int, default=2, help="processes of the second run (default 2)")
    ap.add_argument("--keep", help="directory for the copies that fail (default: a new one)")
    args = ap.parse_args(argv)
    if args.jobs < 2:
        ap.error("--jobs must be 2 or more: the first run is --jobs 1")
    work = Path(tempfile.mkdtemp(prefix="cuzk-fuzz-"))
    keep = Path(args.keep) if args.keep else work / "failed"
    failed = 0
    try:
        base = base_log(args, work)
        text = base.read_bytes()
        if len(text) < MIN_BYTES:
            print(
                f"note: {base} has {len(text):,} bytes, fewer than the {MIN_BYTES:,} a file "
                "needs to be cut: both runs read it in one process",
                file=sys.stderr,
            )
        suffix = ".json" if args.command == "analyze" else ".parquet"
        for seed in range(args.seeds[0], args.seeds[1] + 1):
            damaged, done = mutate(text, seed, args.mutations)
            log = work / f"seed-{seed}.log"
            log.write_bytes(damaged)
            one = run(args.command, log, 1, work / f"seed-{seed}.jobs1{suffix}")
            many = run(args.command, log, args.jobs, work / f"seed-{seed}.jobs{args.jobs}{suffix}")
            found = problems(args.command, one, many, physical_lines(damaged))
            verdict = "ok" if not found else "FAILED: " + "; ".join(found)
            print(f"seed {seed}: {len(done)} damages ({', '.join(done)}): {verdict}", flush=True)
            if found:
                failed += 1
                keep.mkdir(parents=True, exist_ok=True)
                for f in work.glob(f"seed-{seed}.*"):
                    shutil.copy(f, keep / f.name)
            for f in work.glob(f"seed-{seed}.*"):
                f.unlink()
        seeds = args.seeds[1] - args.seeds[0] + 1
        print(
            f"{seeds - failed} of {seeds} seeds gave the same output with --jobs 1 and "
            f"--jobs {args.jobs}" + (f"; the others are in {keep}" if failed else "")
        )
    finally:
        for f in work.glob("*.log"):
            f.unlink()
        if not failed:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
