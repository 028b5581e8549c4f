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

``--steps`` shows where the parse's and the assembly's instructions go instead: one run of
each build reading, parsing and assembling the log, its instructions counted per function
(callgrind's inclusive counts, ``callgrind_annotate``) and summed into the steps of ``STEPS``
(a step's count holds the steps indented under it). It names the compiled build's C functions:
run on a pure build, it finds none of them (its steps are the interpreter's).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import DEFAULT_OUT, BenchError, ensure_log

STAGES = ("import", "parse", "assemble")
#: ``--steps``: each step's depth under the one before, its name, and the compiled functions
#: whose inclusive instructions it counts (patterns of their C names, a function's wrapper and
#: body alike: the largest count of each pattern is taken, and the patterns' counts summed).
STEPS: list[tuple[int, str, tuple[str, ...]]] = [
    (0, "parse of each chunk's lines (`LineParser.feed_parts`)", (r"LineParser_\d+feed_parts",)),
    (
        1,
        "line classification (`classify.split_lines`, `classify`)",
        (r"_8classify_\d+split_lines", r"_8classify_\d+classify"),
    ),
    (1, "C++ lines as columns (`columnar._cpp`)", (r"_8columnar_\d+_cpp",)),
    (1, "TIMELINE lines as columns (`columnar._timeline`)", (r"_8columnar_\d+_timeline",)),
    (1, "tracing lines as columns (`shapes.tracing_groups`)", (r"_6shapes_\d+tracing_groups",)),
    (0, "events made from the columns (`ParsedChunk.events`)", (r"_11ParsedChunk_\d+events",)),
    (1, "their fields dicts and `Event`s (`columnar._made_events`)", (r"_8columnar__made_events",)),
    (0, "assembly (`Assembler.feed_many`)", (r"_9Assembler_\d+feed_many",)),
    (1, "C++ lines placed at each clock reading (`drain`)", (r"_8assemble_drain",)),
    (2, "GPU-region lines (`gpu.gpu_line`)", (r"_3gpu_gpu_line",)),
    (3, "of them placed in a beam (`gpu.extend_beam`)", (r"_3gpu_extend_beam",)),
    (2, "CPU-side lines (`cpu.cpu_line`)", (r"_3cpu_cpu_line",)),
    (2, "T2/T3 lines placed jointly (`prep.solve_prep_lines`)", (r"_4prep_solve_prep_lines",)),
    (1, "TIMELINE lines (`timeline.timeline_line`)", (r"_8timeline_timeline_line",)),
    (
        1,
        "their era markers (`EraDetector.observe_timeline`)",
        (r"EraDetector_\d*observe_timeline",),
    ),
    (
        1,
        "tracing lines (`timeline.tracing_line`, `calls._ts_ms`)",
        (r"_8timeline_tracing_line", r"_5calls__ts_ms"),
    ),
    (1, "records made, within the lines that complete them (`emit.emit`)", (r"_4emit_emit",)),
]
#: A line of ``callgrind_annotate --inclusive=yes``: the count and the function's C name.
_ANNOTATED = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+\*?\s*\S*?:(__pyx_\w+)")
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
    print(f"records {records} events {events}")


def count(
    tree: str | None, stage: str, log: Path, *, out_file: str = os.devnull
) -> tuple[int, str]:
    """Instructions of a child running ``stage`` with ``tree`` first on the path, and its output
    (callgrind's per-function counts written to ``out_file``)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    if tree is not None:
        env["PYTHONPATH"] = tree
    cmd = [
        "setarch",
        os.uname().machine,
        "-R",
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out_file}",
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


def step_counts(annotated: str) -> list[tuple[int, str, int]]:
    """Each step of ``STEPS`` with its instructions, from the text of ``callgrind_annotate
    --inclusive=yes`` (a function's C name may end in a compiler's suffix, ``.constprop.0``)."""
    counts: list[tuple[int, str]] = []
    for line in annotated.splitlines():
        m = _ANNOTATED.match(line)
        if m is not None:
            counts.append((int(m.group(1).replace(",", "")), m.group(2)))
    out = []
    for depth, name, patterns in STEPS:
        total = 0
        for pattern in patterns:
            rx = re.compile(pattern + "$")
            total += max((n for n, fn in counts if rx.search(fn)), default=0)
        out.append((depth, name, total))
    return out


def steps(tree: str | None, log: Path) -> tuple[list[tuple[int, str, int]], int]:
    """The steps' instructions (``step_counts``) of a child reading, parsing and assembling
    ``log`` with ``tree`` first on the path, and its events."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        _, stdout = count(tree, "assemble", log, out_file=out)
        proc = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise BenchError(f"callgrind_annotate failed:\n{proc.stderr[-2000:]}")
    return step_counts(proc.stdout), int(stdout.split()[3])


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
    ap.add_argument(
        "--steps",
        action="store_true",
        help="where the parse's and the assembly's instructions go, by step (compiled builds)",
    )
    ap.add_argument("--child", nargs=2, metavar=("STAGE", "LOG"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    tools = ("valgrind", "setarch", *(["callgrind_annotate"] if args.steps else []))
    for tool in tools:
        if shutil.which(tool) is None:
            print(f"error: {tool} is not installed", file=sys.stderr)
            return 2
    try:
        log = Path(args.log) if args.log else ensure_log(args.mb, args.out)
        trees = args.tree or [None]
        if args.steps:
            return print_steps(trees, log)
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


def print_steps(trees: list[str | None], log: Path) -> int:
    """``--steps``: a table of the steps, a column of millions of instructions per build."""
    print(f"# Instructions by step: {log.name} ({log.stat().st_size / 1e6:.1f} MB)\n")
    columns = []  # (build, each step's count, the unindented steps' sum, events)
    for tree in trees:
        rows, events = steps(tree, log)
        whole = sum(n for d, _, n in rows if d == 0)
        columns.append((tree or "installed", [n for _, _, n in rows], whole, events))
    head = "| Step | " + " | ".join(f"{name} (M) | share" for name, *_ in columns) + " |"
    print(head)
    print("|---|" + "---|---|" * len(columns))
    for i, (depth, name, _) in enumerate(STEPS):
        cells = [
            f"{counts[i] / 1e6:,.1f} | {100 * counts[i] / whole:.1f} %" if whole else "- | -"
            for _, counts, whole, _ in columns
        ]
        print(f"| {'&nbsp;' * 4 * depth}{name} | " + " | ".join(cells) + " |")
    events = ", ".join(f"{name}: {n:,} events" for name, _, _, n in columns)
    print(f"\n(share: of the three unindented steps' sum; {events})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
