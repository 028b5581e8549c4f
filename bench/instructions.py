#!/usr/bin/env python3
"""Machine instructions the ingest spends per event: a measure that the machine's load leaves alone.

    python bench/instructions.py                          # the installed package, 10 MB log
    python bench/instructions.py --tree /tmp/old --tree /tmp/new   # two builds, side by side

Wall times on these shared machines move by 10-15 % from run to run, more than most single
changes to the hot path gain. Counting the instructions the process executes does not: each
build runs under valgrind's callgrind (with address-space randomisation off, ``setarch -R``, and
a fixed hash seed) three times: importing the modules only, reading and parsing the log, and
reading, parsing and assembling it, chunk by chunk as the pipeline reads it (each chunk's events
freed once dealt with, the garbage collector paced per chunk). The differences are the parse's
and the assembly's instructions; repeated runs of one build agree to 0.3-4 %. Instructions
are not time (a cache miss costs more than an addition), so confirm a gain found here with
``run.py``; but a change that removes work shows here whatever the machine is doing.

Each run takes about a minute per 10 MB (callgrind runs the program some 50 times slower).
``--tree DIR`` runs the package found in ``DIR`` (a ``pip install --target`` of a wheel, as
``run.py`` measures), several times for several builds; without it, the installed package.
``--lines`` adds a fourth run: reading, parsing every line and making the line tables, what
``export --lines`` does before writing them (its instructions less the import's).
``--command`` adds two more: the whole ``cuzk-diag analyze LOG --jobs 1 --format json`` as the
command runs it (the records' tables, the paced collections, the frame, the analysis and the
report too), less a run that imports the command only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from common import DEFAULT_OUT, BenchError, ensure_log

STAGES = ("import", "parse", "assemble")
LINES = "lines"  # (``--lines``)
COMMAND = ("import-cli", "command")  # (``--command``)


def child(stage: str, log: str) -> None:
    """Run one stage (and the stages before it) in this process: what callgrind counts."""
    import gc

    if stage in COMMAND:
        from cuzk_diag.cli import main as cli_main

        if stage == "command":
            args = ["analyze", log, "--jobs", "1", "--format", "json", "-o", os.devnull, "-q"]
            print(f"exit {cli_main(args)}")
        return

    import pandas  # noqa: F401  (as the CLI does; pyarrow imports it on first use otherwise)

    from cuzk_diag.ingest.assemble import Assembler
    from cuzk_diag.ingest.stream import stream_events
    from cuzk_diag.records import Accounting, RunInfo

    if stage == "import":
        return
    if stage == LINES:
        from cuzk_diag.linetable import iter_line_tables

        rows = sum(t.num_rows for t in iter_line_tables([log], Accounting(), jobs=1))
        print(f"lines {rows}")
        return
    # Both stages as the pipeline runs them (``stream.PacedCollector``): the collector off but
    # for a collection of the young objects once each chunk is dealt with and its events freed.
    # (Holding every event of the log with the collector on, as this once did, counted its
    # collections over them too, which moved the parse's figure by about 1 % from run to run.)
    gc.collect()
    gc.freeze()
    gc.disable()
    asm = Assembler(Accounting(), RunInfo()) if stage == "assemble" else None
    events = records = 0
    for chunk in stream_events([log], Accounting(), full=False):
        events += len(chunk)
        if asm is not None:
            records += len(asm.feed_many(chunk))
        del chunk
        gc.collect(1)
    if asm is None:
        print(f"events {events}")
        return
    records += len(asm.finish())
    print(f"records {records}")


def count(tree: str | None, stage: str, log: Path) -> tuple[int, str]:
    """Instructions of a child running ``stage`` with ``tree`` first on the path, and its output."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    if tree is not None:
        env["PYTHONPATH"] = tree
    cmd = [
        "setarch",
        os.uname().machine,
        "-R",
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--child",
        stage,
        str(log),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    m = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    if proc.returncode != 0 or m is None:
        raise BenchError(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return int(m.group(1).replace(",", "")), proc.stdout


def measure(
    tree: str | None, log: Path, lines: bool = False, command: bool = False
) -> dict[str, int]:
    stages = (*STAGES, *([LINES] if lines else []), *(COMMAND if command else ()))
    ir = {stage: count(tree, stage, log) for stage in stages}
    out = {
        "parse": ir["parse"][0] - ir["import"][0],
        "assemble": ir["assemble"][0] - ir["parse"][0],
    }
    out["events"] = int(ir["parse"][1].split()[1])
    out["records"] = int(ir["assemble"][1].split()[1])
    if lines:
        out["lines"] = ir[LINES][0] - ir["import"][0]
        out["rows"] = int(ir[LINES][1].split()[1])
    if command:
        out["command"] = ir["command"][0] - ir["import-cli"][0]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=10, help="simulated log size (default 10)")
    ap.add_argument("--log", help="a log of your own instead of the simulated one")
    ap.add_argument("--tree", action="append", help="a directory holding the package to run")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where logs are cached")
    ap.add_argument("--lines", action="store_true", help="also count the line tables of every line")
    ap.add_argument(
        "--command", action="store_true", help="also count the whole analyze command (--jobs 1)"
    )
    ap.add_argument("--child", nargs=2, metavar=("STAGE", "LOG"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    for tool in ("valgrind", "setarch"):
        if shutil.which(tool) is None:
            print(f"error: {tool} is not installed", file=sys.stderr)
            return 2
    try:
        log = Path(args.log) if args.log else ensure_log(args.mb, args.out)
        trees = args.tree or [None]
        print(f"# Instructions per event: {log.name} ({log.stat().st_size / 1e6:.1f} MB)\n")
        head = "| Build | Events | Records | Parse (M) | per event | Assembly (M) | per event |"
        rule = "|---|---|---|---|---|---|---|"
        if args.lines:
            head += " Lines | Line tables (M) | per line |"
            rule += "---|---|---|"
        if args.command:
            head += " analyze (M) | per event |"
            rule += "---|---|"
        print(head)
        print(rule)
        for tree in trees:
            r = measure(tree, log, args.lines, args.command)
            n = r["events"]
            row = (
                f"| {tree or 'installed'} | {n:,} | {r['records']:,} | {r['parse'] / 1e6:,.0f} | "
                f"{r['parse'] / n:,.0f} | {r['assemble'] / 1e6:,.0f} | {r['assemble'] / n:,.0f} |"
            )
            if args.lines:
                k = r["rows"]
                row += f" {k:,} | {r['lines'] / 1e6:,.0f} | {r['lines'] / k:,.0f} |"
            if args.command:
                row += f" {r['command'] / 1e6:,.0f} | {r['command'] / n:,.0f} |"
            print(row, flush=True)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
