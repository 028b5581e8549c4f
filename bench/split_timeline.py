#!/usr/bin/env python3
"""When each step of ``analyze`` happens when one log file is assembled in parts (``--jobs``).

    python bench/split_timeline.py                      # 250 MB log, two processes, two runs
    python bench/split_timeline.py --mb 50 --runs 3 --jobs 3
    python bench/split_timeline.py --lead 2             # the first part two warm-ups longer
    python bench/split_timeline.py --rotated 4          # the log as 4 rotated files
    python bench/split_timeline.py --command export     # export (partitions, Parquet) instead

Runs ``cuzk-diag analyze LOG --format json -o /dev/null -q --jobs N`` (with ``--command
export``: ``cuzk-diag export LOG -o <a file in bench/out/work> -q --jobs N``) in this process, as
the installed command runs it (the package installed, or ``PYTHONPATH``), with the steps of
``cuzk_diag.ingest.split`` wrapped to note the time (seconds from the start of the script) of: the
imports, the start of this process's part, each child's start state (its warm-up done), each
child's reply, the end of this process's part, each part taken in, and the end of the command.
``--lead N`` cuts the file with this process's part N warm-ups longer than an even share
(``split.cuts`` uses 3), to compare balances side by side. ``--rotated N`` gives the log as N
rotated files (``common.rotated``), each part named with its file.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from common import DEFAULT_OUT, ensure_log, rotated

T0 = time.perf_counter()


def _note(marks: list[tuple[float, str]], what: str) -> None:
    marks.append((time.perf_counter() - T0, what))


def _instrument(marks: list[tuple[float, str]], lead: int | None) -> None:
    from cuzk_diag.ingest import parallel, split
    from cuzk_diag.ingest.part import Handover, line_start

    read, part, heard = split._Split.read, split._Split.part, split._Split.heard
    adopt, reply = split._adopt, parallel.ChildCall._read

    def timed_read(self: Any, i: int, lo: int, hi: int | None) -> Any:
        _note(marks, f"{Path(self.name).name} part {i} read here: start")
        stopped = yield from read(self, i, lo, hi)
        _note(marks, f"{Path(self.name).name} part {i} read here: end")
        return stopped

    def timed_part(self: Any, i: int) -> Any:
        got = part(self, i)
        taken = "taken" if got is not None else "not taken"
        _note(marks, f"{Path(self.name).name} part {i}: {taken}")
        return got

    def timed_adopt(*args: Any, **kwargs: Any) -> Any:
        yield from adopt(*args, **kwargs)
        _note(marks, "a child's part taken in")

    def timed_heard(self: Any, i: int, news: Any) -> None:
        if isinstance(news, Handover):
            _note(marks, f"part {i}: its child's start state told")
        heard(self, i, news)

    def timed_reply(self: Any) -> None:
        reply(self)
        _note(marks, "a child's reply in")

    split._Split.read, split._Split.part, split._adopt = timed_read, timed_part, timed_adopt
    split._Split.heard = timed_heard
    parallel.ChildCall._read = timed_reply
    if lead is not None:

        def cuts(name: str, size: int, parts: int, warm: int, *_: Any) -> list[int]:
            first = min(size, size // parts + lead * warm)
            step = (size - first) / max(1, parts - 1)
            out = [line_start(name, first + int(i * step)) for i in range(parts - 1)]
            return sorted({c for c in out if 0 < c < size})

        split.cuts = cuts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=250, help="size of the simulated log (default 250)")
    ap.add_argument("--log", type=Path, help="a log of your own instead")
    ap.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    ap.add_argument("--runs", type=int, default=2, help="runs, each in a new process (default 2)")
    ap.add_argument("--lead", type=int, help="this process's part this many warm-ups longer")
    ap.add_argument("--rotated", type=int, help="the log as this many rotated files")
    ap.add_argument(
        "--command", choices=["analyze", "export"], default="analyze", help="(default analyze)"
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return _run(args)
    import subprocess

    log = args.log or ensure_log(args.mb, DEFAULT_OUT)
    for n in range(args.runs):
        cmd = [sys.executable, __file__, "--child", "--log", str(log), "--jobs", str(args.jobs)]
        if args.lead is not None:
            cmd += ["--lead", str(args.lead)]
        if args.rotated:
            cmd += ["--rotated", str(args.rotated)]
        cmd += ["--command", args.command]
        print(f"run {n + 1}:", flush=True)
        if subprocess.run(cmd).returncode:
            return 1
    return 0


def _run(args: argparse.Namespace) -> int:
    marks: list[tuple[float, str]] = []
    from cuzk_diag.cli import OWN_PROCESS, cli

    _note(marks, "imports done")
    _instrument(marks, args.lead)
    logs = [str(p) for p in rotated(args.log, args.rotated)] if args.rotated else [str(args.log)]
    if args.command == "export":
        work = DEFAULT_OUT / "work"
        work.mkdir(parents=True, exist_ok=True)
        argv = ["export", *logs, "-o", str(work / "split-timeline.parquet"), "-q"]
    else:
        argv = ["analyze", *logs, "--format", "json", "-o", "/dev/null", "-q"]
    try:
        # (As ``cuzk-diag`` runs it: a process of its own, ``cli.command``.)
        cli.main([*argv, "--jobs", str(args.jobs)], standalone_mode=False, obj={OWN_PROCESS: True})
    finally:
        _note(marks, "the command done")
        for t, what in marks:
            print(f"  {t:7.2f}  {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
