"""Live mode: `analyze -` and `analyze --follow` on logs written while they are read.

The end-to-end tests run the real command in a subprocess and write the log to it in timed
pieces, so pipes, threads, signals and timing are the ones users get.
"""

from __future__ import annotations

import io
import json
import math
import os
import pty
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cuzk_diag import live
from cuzk_diag.analysis import analyze, jsonable
from cuzk_diag.cli import cli
from cuzk_diag.config import Config
from cuzk_diag.exit_codes import ExitCode
from cuzk_diag.ingest.assemble import Assembler
from cuzk_diag.ingest.parse import parse_text
from cuzk_diag.live import (
    QUEUE_WAIT,
    SKETCH_FIELDS,
    JsonLinesSink,
    LiveAnalyzer,
    LiveOptions,
    QuantileSketch,
    RecordStore,
    _handle,
    _InputQueue,
    partition_text,
)
from cuzk_diag.model import daemon as sim
from cuzk_diag.records import PARTITION_COLUMNS, RunInfo
from cuzk_diag.sinks import ReportOnly
from cuzk_diag.sources import SourceStats, clean_chunk

#: How long to wait for an event that needs no further input. Generous on purpose: the test
#: asserts that the event comes without more input, not how fast (a shared machine's load
#: decides that); the latency is measured by bench/bench_live_latency.py.
EVENT_WAIT_S = 60.0
COMPARED = ("facts", "stages", "findings")


# -- logs ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def busy_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main code, 2 GPUs x 2 workers, 6 proofs of 10 partitions, 2 in flight."""
    cfg = sim.SimConfig(era="main", n_gpus=2, gw=2, proofs=6, concurrency=2, seed=7)
    path = tmp_path_factory.mktemp("live") / "busy.log"
    sim.write_log(cfg, str(path), truth=False)
    return path


@pytest.fixture(scope="module")
def failing_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Small proofs (4 partitions), one partition's GPU prove fails, no bench output."""
    cfg = sim.SimConfig(
        era="main",
        n_gpus=2,
        gw=2,
        proofs=3,
        concurrency=2,
        partitions_per_proof=4,
        failures=1,
        seed=11,
        bench_output=False,
    )
    path = tmp_path_factory.mktemp("live") / "failing.log"
    sim.write_log(cfg, str(path), truth=False)
    return path


def batch_emission(data: bytes) -> list[tuple[int, dict[str, Any]]]:
    """(line whose event completed it, record) in the order the assembler completes records."""
    events, _ = parse_text(data.decode("utf-8", "replace"))
    asm = Assembler()
    out = [(ev.line, r) for ev in events for r in asm.feed(ev)]
    n_lines = data.count(b"\n")
    return out + [(n_lines, r) for r in asm.finish()]


def ident(rec: dict[str, Any]) -> tuple[Any, ...]:
    return (rec["job_id"], rec["partition"], rec["worker"], rec["start_ms"])


def batch_report(path: Path) -> dict[str, Any]:
    r = CliRunner().invoke(cli, ["analyze", str(path), "--format", "json"])
    assert r.exit_code == ExitCode.OK, r.output
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


# -- a live subprocess ----------------------------------------------------------------------------


class Live:
    """`cuzk-diag analyze ARGS` with stdin and stdout piped; stdout lines timestamped on arrival."""

    def __init__(self, *args: str, stdout: int | IO[bytes] = subprocess.PIPE) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cuzk_diag", "analyze", *args],
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.lines: list[tuple[float, str]] = []
        self.err: list[str] = []
        self._cv = threading.Condition()
        self._readers = [threading.Thread(target=self._pump_err, daemon=True)]
        if self.proc.stdout is not None:
            self._readers.append(threading.Thread(target=self._pump, daemon=True))
        for t in self._readers:
            t.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            with self._cv:
                self.lines.append((time.monotonic(), raw.decode()))
                self._cv.notify_all()

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            with self._cv:
                self.err.append(raw.decode())
                self._cv.notify_all()

    def wait_stderr(self, text: str, timeout: float = 15.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cv:
            while not any(text in line for line in self.err):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(min(left, 0.05))
            return True

    def write(self, data: bytes) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        return time.monotonic()

    def events(self) -> list[tuple[float, dict[str, Any]]]:
        with self._cv:
            return [(t, json.loads(s)) for t, s in self.lines if s.startswith("{")]

    def wait_for(self, pred: Any, timeout: float = 10.0) -> tuple[float, dict[str, Any]] | None:
        """The first event (arrival time, event) matching ``pred``, waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            for t, ev in self.events():
                if pred(ev):
                    return t, ev
            with self._cv:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cv.wait(min(left, 0.05))

    def finish(self, timeout: float = 30.0) -> tuple[int, str]:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        rc = self.proc.wait(timeout)
        for t in self._readers:
            t.join(5)
        with self._cv:
            return rc, "".join(self.err)


@pytest.fixture
def live_procs() -> Iterator[list[Live]]:
    procs: list[Live] = []
    yield procs
    for p in procs:
        if p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()


def chunks_of_lines(data: bytes, n: int) -> Iterator[bytes]:
    lines = data.splitlines(keepends=True)
    for i in range(0, len(lines), n):
        yield b"".join(lines[i : i + n])


# -- end to end: stdin --------------------------------------------------------------------------


def test_pipe_streams_partitions_in_completion_order(
    busy_log: Path, live_procs: list[Live]
) -> None:
    data = busy_log.read_bytes()
    live = Live("-")
    live_procs.append(live)
    for piece in chunks_of_lines(data, 60):
        live.write(piece)
        time.sleep(0.02)
    rc, err = live.finish()
    assert rc == ExitCode.OK, err
    events = [ev for _, ev in live.events()]
    assert {ev["type"] for ev in events} <= {"partition", "finding", "finding_cleared", "summary"}
    parts = [ev for ev in events if ev["type"] == "partition"]
    expected = [ident(r) for _, r in batch_emission(data)]
    assert [ident(p) for p in parts if not p["revised"]] == expected
    # Every record is announced before the end, not only in the final report.
    final = events[-1]
    assert final["type"] == "summary" and final["final"] is True
    assert final["partitions"] == len(expected)
    # The final summary holds the report `analyze` prints for the same file.
    ref = batch_report(busy_log)
    for key in COMPARED:
        assert final["report"][key] == ref[key], key
    # A finding event carries the fields of a finding in the JSON report.
    findings = [ev for ev in events if ev["type"] == "finding"]
    assert findings
    report_keys = set(ref["findings"][0])
    for ev in findings:
        assert report_keys <= set(ev), ev
        assert ev["status"] in ("new", "changed")


def test_records_and_findings_appear_without_further_input(
    failing_log: Path, live_procs: list[Live]
) -> None:
    """Stop writing right after a record's last line (or an error line): its event follows."""
    data = failing_log.read_bytes()
    lines = data.splitlines(keepends=True)
    emitted = batch_emission(data)
    error_line = next(i for i, ln in enumerate(lines, 1) if b"partition GPU proving failed" in ln)
    live = Live("-")
    live_procs.append(live)
    # Start-up (imports) happens before any timing is measured.
    live.write(b"".join(lines[:20]))
    assert live.wait_for(lambda ev: False, timeout=1.5) is None
    written = 20
    delays: list[float] = []
    checks = [(r["last_line"], ident(r)) for _, r in emitted[:4]]
    checks.append((error_line, ("finding", "CZ601")))
    checks.sort()
    for upto, what in checks:
        if upto > written:
            t0 = live.write(b"".join(lines[written:upto]))
            written = upto
        else:
            t0 = time.monotonic()
        if what[0] == "finding":
            hit = live.wait_for(
                lambda ev, w=what: ev["type"] == "finding" and ev["code"] == w[1], EVENT_WAIT_S
            )
        else:
            hit = live.wait_for(
                lambda ev, w=what: ev["type"] == "partition" and ident(ev) == w, EVENT_WAIT_S
            )
        assert hit is not None, f"no event for {what} after line {upto}"
        delays.append(max(0.0, hit[0] - t0))
    live.write(b"".join(lines[written:]))
    rc, err = live.finish()
    assert rc == ExitCode.OK, err
    print("delays (s):", [round(d, 3) for d in delays])


def test_final_json_report_equals_analyze(busy_log: Path, live_procs: list[Live]) -> None:
    live = Live("-", "--format", "json")
    live_procs.append(live)
    for piece in chunks_of_lines(busy_log.read_bytes(), 200):
        live.write(piece)
        time.sleep(0.01)
    rc, err = live.finish()
    assert rc == ExitCode.OK, err
    doc = json.loads("".join(s for _, s in live.lines))
    ref = batch_report(busy_log)
    for key in COMPARED:
        assert doc[key] == ref[key], key
    assert doc["accounting"]["lines_total"] == ref["accounting"]["lines_total"]


@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name
)
def test_a_signal_prints_the_final_report_then_exits_with_its_code(
    busy_log: Path, live_procs: list[Live], tmp_path: Path, sig: signal.Signals
) -> None:
    data = busy_log.read_bytes()
    lines = data.splitlines(keepends=True)
    half = len(lines) // 2
    live = Live("-")  # stdin stays open: only a signal ends the run
    live_procs.append(live)
    live.write(b"".join(lines[:half]))
    assert live.wait_for(lambda ev: ev["type"] == "partition", timeout=15) is not None
    time.sleep(0.3)
    live.proc.send_signal(sig)
    rc = live.proc.wait(15)
    assert rc == 128 + sig
    final = live.events()[-1][1]
    assert final["type"] == "summary" and final["final"] is True
    prefix = tmp_path / "prefix.log"
    prefix.write_bytes(b"".join(lines[:half]))
    ref = batch_report(prefix)
    for key in COMPARED:
        assert final["report"][key] == ref[key], key


def _drained(live: Live, timeout: float = 30.0) -> bool:
    """Has the process read everything written to its stdin so far?"""
    import fcntl
    import struct
    import termios

    assert live.proc.stdin is not None
    fd = live.proc.stdin.fileno()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        unread = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
        if unread == 0:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_no_live_on_stdin_prints_the_report_of_what_was_read_on_a_signal(
    busy_log: Path, live_procs: list[Live], tmp_path: Path, sig: signal.Signals
) -> None:
    """`producer | cuzk-diag analyze --no-live -`, stopped by Ctrl-C or a SIGTERM."""
    lines = busy_log.read_bytes().splitlines(keepends=True)
    prefix = b"".join(lines[: len(lines) // 2])
    live = Live("-", "--no-live", "--format", "json")
    live_procs.append(live)
    live.write(prefix)
    assert _drained(live)
    time.sleep(0.5)
    live.proc.send_signal(sig)
    rc, err = live.finish()
    assert rc == 128 + sig, err
    assert f"stopped by {sig.name}" in err
    doc = json.loads("".join(s for _, s in live.lines))
    path = tmp_path / "prefix.log"
    path.write_bytes(prefix)
    ref = batch_report(path)
    for key in COMPARED:
        assert doc[key] == ref[key], key
    assert doc["accounting"]["lines_total"] == ref["accounting"]["lines_total"]


def test_follow_ends_on_sighup_with_the_final_report(
    busy_log: Path, live_procs: list[Live], tmp_path: Path
) -> None:
    path = tmp_path / "daemon.log"
    path.write_bytes(busy_log.read_bytes())
    total = len(batch_emission(busy_log.read_bytes()))
    live = Live("--follow", str(path))
    live_procs.append(live)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        n = len([1 for _, ev in live.events() if ev["type"] == "partition" and not ev["revised"]])
        if n >= total - 4:  # the last calls complete only at the end of input
            break
        time.sleep(0.05)
    time.sleep(0.5)
    live.proc.send_signal(signal.SIGHUP)
    rc, err = live.finish()
    assert rc == ExitCode.HANGUP == 128 + signal.SIGHUP, err
    final = live.events()[-1][1]
    assert final["type"] == "summary" and final["final"] is True
    ref = batch_report(busy_log)
    for key in COMPARED:
        assert final["report"][key] == ref[key], key


def test_broken_pipe_ends_quietly(busy_log: Path) -> None:
    code = (
        "import subprocess, sys\n"
        f"cmd = [sys.executable, '-m', 'cuzk_diag', 'analyze', '-']\n"
        "p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,\n"
        "                     stderr=subprocess.PIPE)\n"
        f"data = open({str(busy_log)!r}, 'rb').read()\n"
        "p.stdin.write(data[: len(data) // 2]); p.stdin.flush()\n"
        "p.stdout.readline(); p.stdout.close()\n"
        "try:\n"
        "    p.stdin.write(data[len(data) // 2 :]); p.stdin.close()\n"
        "except BrokenPipeError:\n"
        "    pass\n"
        "rc = p.wait(30)\n"
        "err = p.stderr.read().decode()\n"
        "print(rc); print(err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    rc, _, err = out.stdout.partition("\n")
    assert rc == "0", out.stdout + out.stderr
    assert "Traceback" not in err and "Error" not in err, err


def test_dashboard_on_a_terminal_then_the_report(busy_log: Path) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cuzk_diag", "analyze", "-"],
        stdin=subprocess.PIPE,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=dict(os.environ, COLUMNS="120", LINES="60", TERM="xterm"),
    )
    os.close(slave)
    out = bytearray()

    def pump() -> None:
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:
                return
            if not b:
                return
            out.extend(b)

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    assert proc.stdin is not None
    lines = busy_log.read_bytes().splitlines(keepends=True)
    for piece in chunks_of_lines(b"".join(lines), 400):
        proc.stdin.write(piece)
        proc.stdin.flush()
        time.sleep(0.4)
    proc.stdin.close()
    assert proc.wait(30) == ExitCode.OK
    t.join(5)
    os.close(master)
    text = out.decode("utf-8", "replace")
    assert "cuzk-diag live" in text  # the dashboard was drawn
    assert "proofs done" in text
    assert "Findings:" in text and "Accounting" in text  # then the final console report


# -- end to end: --follow -----------------------------------------------------------------------


def _halves(path: Path) -> tuple[bytes, bytes]:
    lines = path.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    return b"".join(lines[:half]), b"".join(lines[half:])


def test_follow_waits_for_the_file_and_survives_rotation(
    busy_log: Path, tmp_path: Path, live_procs: list[Live]
) -> None:
    first, second = _halves(busy_log)
    path = tmp_path / "daemon.log"
    live = Live("--follow", str(path))
    live_procs.append(live)
    assert live.wait_stderr("waiting for")  # the file does not exist yet
    path.write_bytes(first)
    assert live.wait_for(lambda ev: ev["type"] == "partition", timeout=15) is not None
    n_first = len([1 for _, ev in live.events() if ev["type"] == "partition"])
    path.rename(tmp_path / "daemon.log.1")  # logrotate: rename, then a new file
    with open(path, "wb") as fh:
        fh.write(second[: len(second) // 2])
        fh.flush()
        time.sleep(0.3)
        fh.write(second[len(second) // 2 :])
    total = len(batch_emission(busy_log.read_bytes()))
    got = live.wait_for(
        lambda ev: ev["type"] == "summary" and ev["partitions"] >= total, timeout=0.1
    )
    deadline = time.monotonic() + 15
    while got is None and time.monotonic() < deadline:
        n = len([1 for _, ev in live.events() if ev["type"] == "partition" and not ev["revised"]])
        if n >= total - 4:  # the last calls complete only at the end of input
            break
        time.sleep(0.05)
    n_all = len([1 for _, ev in live.events() if ev["type"] == "partition" and not ev["revised"]])
    assert n_all > n_first, "no partition events after the rotation"
    live.proc.send_signal(signal.SIGINT)
    rc, err = live.finish()
    assert rc == 128 + signal.SIGINT, err
    assert "waiting for" in err and "replaced" in err
    final = live.events()[-1][1]
    assert final["final"] is True
    ref = batch_report(busy_log)
    for key in COMPARED:
        assert final["report"][key] == ref[key], key


@pytest.mark.parametrize("kind", ["gzip", "zstd", "utf-16"])
def test_follow_refuses_a_file_that_is_no_plain_log(tmp_path: Path, kind: str) -> None:
    # Read as it is, such a file was lines of garbage (a gzip'd example: 66 "other" lines, 65
    # of them undecodable, and no word of why); now one error line, exit 2, at once.
    import gzip

    import zstandard

    text = (Path(__file__).parents[1] / "fixtures" / "example.log").read_bytes()
    data = {
        "gzip": lambda: gzip.compress(text),
        "zstd": lambda: zstandard.ZstdCompressor().compress(text),
        "utf-16": lambda: text.decode().encode("utf-16"),
    }[kind]()
    path = tmp_path / "daemon.log"
    path.write_bytes(data)
    proc = subprocess.run(
        [sys.executable, "-m", "cuzk_diag", "analyze", "--follow", str(path), "-q"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert proc.stderr.startswith(f"cuzk-diag: error: {path}: is "), proc.stderr
    assert "--follow reads a log in UTF-8" in proc.stderr and "Traceback" not in proc.stderr


def test_follow_drops_a_utf8_byte_order_mark_at_the_start_of_each_file(tmp_path: Path) -> None:
    from cuzk_diag.follow import FollowFile

    path = tmp_path / "daemon.log"
    path.write_bytes(b"\xef\xbb\xbfCUZK_TIMING: gpu_tid=0 split_vectors_ms=5\n")
    stop = threading.Event()
    ff = FollowFile(str(path), stop, poll=0.01)
    try:
        assert ff.read1() == b"CUZK_TIMING: gpu_tid=0 split_vectors_ms=5\n"
        path.write_bytes(b"\xef\xbb\xbf")  # truncated, and a new file's mark alone so far
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.append(ff.read1()))
        reader.start()
        time.sleep(0.2)
        with open(path, "ab") as fh:
            fh.write(b"TIMELINE,5,GPU_END,job,x\n")
        reader.join(timeout=5)
        assert got == [b"TIMELINE,5,GPU_END,job,x\n"] and ff.truncations == 1
    finally:
        stop.set()
        ff.close()


def test_follow_survives_truncation(busy_log: Path, tmp_path: Path, live_procs: list[Live]) -> None:
    first, second = _halves(busy_log)
    path = tmp_path / "daemon.log"
    path.write_bytes(first)
    live = Live("--follow", str(path))
    live_procs.append(live)
    assert live.wait_for(lambda ev: ev["type"] == "partition", timeout=15) is not None
    time.sleep(0.3)
    n_first = len([1 for _, ev in live.events() if ev["type"] == "partition"])
    with open(path, "wb"):  # truncate in place (copytruncate)
        pass
    time.sleep(0.4)
    with open(path, "ab") as fh:
        fh.write(second)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        n = len([1 for _, ev in live.events() if ev["type"] == "partition"])
        if n > n_first + 5:
            break
        time.sleep(0.05)
    live.proc.send_signal(signal.SIGINT)
    rc, err = live.finish()
    assert rc == 128 + signal.SIGINT, err
    assert "truncated" in err
    n_all = len([1 for _, ev in live.events() if ev["type"] == "partition"])
    assert n_all > n_first + 5


# -- the engine in-process ------------------------------------------------------------------------


def _engine_feed(data: bytes, engine: LiveAnalyzer, lines_per_chunk: int, speculate: bool) -> None:
    stats = SourceStats("<stdin>")
    engine.begin_source(0, stats)
    for piece in chunks_of_lines(data, lines_per_chunk):
        stats.bytes_read += len(piece)
        engine.feed(clean_chunk(piece, stats))
        if speculate:
            engine.speculate()  # as if the input paused after every chunk
        engine.tick(idle=False)
    engine.end_source()


@pytest.mark.parametrize(
    ("era", "messy"), [("main", False), ("phase9-11", False), ("phase12", False), ("main", True)]
)
def test_early_placement_never_changes_the_final_report(era: str, messy: bool) -> None:
    extra = sim.MESSY if messy else {}
    cfg = sim.SimConfig(era=era, n_gpus=2, gw=2, proofs=4, concurrency=2, seed=5, **extra)
    data = sim.simulate(cfg).data
    assert data is not None
    buf = io.StringIO()
    engine = LiveAnalyzer(Config(), JsonLinesSink(buf), LiveOptions(window=50), ["-"])
    _engine_feed(data, engine, 7, speculate=True)
    final = engine.finish().to_dict()
    assert engine.speculations > 0
    ref = analyze([_write(data)]).to_dict()
    for key in COMPARED:
        assert final[key] == ref[key], key
    events = [json.loads(x) for x in buf.getvalue().splitlines()]
    shown = {ident(e) for e in events if e["type"] == "partition"}
    assert shown == {ident(r) for _, r in batch_emission(data)}


def _write(data: bytes) -> str:
    import tempfile

    fh = tempfile.NamedTemporaryFile(suffix=".log", delete=False)
    fh.write(data)
    fh.close()
    return fh.name


def test_findings_are_diffed_into_events() -> None:
    cfg = sim.SimConfig(
        era="phase9-11", gw=3, proofs=2, concurrency=1, force_skip_vram=True, seed=3
    )
    data = sim.simulate(cfg).data
    assert data is not None
    buf = io.StringIO()
    # (Fed as if behind the input: the rules run after every piece only without the wait a
    # backlog gives them.)
    opts = LiveOptions(window=10, rule_interval=0.0, rule_interval_behind=0.0)
    engine = LiveAnalyzer(Config(), JsonLinesSink(buf), opts, ["-"])
    _engine_feed(data, engine, 50, speculate=False)
    engine.finish()
    events = [json.loads(x) for x in buf.getvalue().splitlines()]
    new = [e["code"] for e in events if e["type"] == "finding" and e["status"] == "new"]
    assert "CZ101" in new  # every partition fell back: the incident rule fires on the window
    # A code is announced again only after it was cleared.
    state: dict[str, bool] = {}
    for e in events:
        if e["type"] == "finding" and e["status"] == "new":
            assert not state.get(e["code"]), e["code"]
            state[e["code"]] = True
        elif e["type"] == "finding_cleared":
            assert state.get(e["code"]), e["code"]
            state[e["code"]] = False


def test_rules_wait_longer_while_input_waits_to_be_read() -> None:
    """Behind the input (``tick(idle=False)``: pieces wait in the queue) the rules run at most
    every ``rule_interval_behind`` seconds, caught up (``idle``) every ``rule_interval``; the
    final report does not depend on either."""
    cfg = sim.SimConfig(era="phase9-11", gw=3, proofs=3, concurrency=1, force_skip_vram=True)
    data = sim.simulate(cfg).data
    assert data is not None
    now = [0.0]
    opts = LiveOptions(window=10, rule_interval=0.5, rule_interval_behind=5.0)
    engine = LiveAnalyzer(Config(), JsonLinesSink(io.StringIO()), opts, ["-"], clock=lambda: now[0])
    stats = SourceStats("<stdin>")
    engine.begin_source(0, stats)
    pieces = list(chunks_of_lines(data, 60))
    assert len(pieces) >= 8
    runs: list[tuple[float, bool]] = []  # (clock, idle) of each tick that ran the rules
    seen = None
    for i, piece in enumerate(pieces):
        engine.feed(clean_chunk(piece, stats))
        now[0] = float(i)  # a piece a second; caught up at every fourth
        idle = i % 4 == 3
        engine.tick(idle=idle)
        if engine.window_analysis is not seen:
            seen = engine.window_analysis
            runs.append((now[0], idle))
    engine.end_source()
    assert runs, "the rules never ran"
    behind = [t for t, idle in runs if not idle]
    caught_up = [t for t, idle in runs if idle]
    # Behind, a run only once the longer wait has passed since the one before.
    for t in behind:
        before = [u for u, _ in runs if u < t]
        assert not before or t - before[-1] >= 5.0, (t, runs)
    # Caught up, the usual wait: every idle tick is a run (four seconds apart, under the
    # longer wait).
    assert len(caught_up) >= 3
    assert caught_up == [float(i) for i in range(3, len(pieces), 4)]
    final = engine.finish().to_dict()
    ref = analyze([_write(data)]).to_dict()
    for key in COMPARED:
        assert final[key] == ref[key], key


def test_window_and_store_stay_bounded() -> None:
    cfg = sim.SimConfig(era="main", n_gpus=1, gw=2, proofs=12, concurrency=2, seed=2)
    data = sim.simulate(cfg).data
    assert data is not None
    opts = LiveOptions(window=25, max_records=40)
    engine = LiveAnalyzer(Config(), JsonLinesSink(io.StringIO()), opts, ["-"])
    _engine_feed(data, engine, 100, speculate=False)
    assert len(engine.window) == 25
    analysis = engine.finish()
    assert engine.partitions == 120
    assert len(engine.store) <= 40 and engine.store.dropped >= 80
    assert analysis.facts.partitions == len(engine.store)
    snap = engine.snapshot()
    assert snap.records_dropped == engine.store.dropped
    assert snap.proofs_done == 12


def test_a_sink_that_shows_nothing_is_spared_the_showing() -> None:
    """``analyze -`` with ``--format json`` or ``--no-live`` (``ReportOnly``): the final
    report is the one a showing sink gets and ``analyze`` gives, with no rules, sketches,
    window or early placements made on the way."""
    cfg = sim.SimConfig(era="main", n_gpus=2, gw=2, proofs=6, concurrency=2, seed=4)
    data = sim.simulate(cfg).data
    assert data is not None
    opts = LiveOptions(window=20, rule_interval=0.0, idle_flush=0.0)
    quiet = LiveAnalyzer(Config(), ReportOnly(), opts, ["-"])
    shown = LiveAnalyzer(Config(), JsonLinesSink(io.StringIO()), opts, ["-"])
    for engine in (quiet, shown):
        stats = SourceStats("<stdin>")
        engine.begin_source(0, stats)
        for piece in chunks_of_lines(data, 40):
            engine.feed(clean_chunk(piece, stats))
            engine.tick(idle=True)
            engine.tick(idle=True)  # (a second tick on idle input: early placements are due)
        engine.end_source()
    finals = [e.finish().to_dict() for e in (quiet, shown)]
    ref = analyze([_write(data)]).to_dict()
    for key in COMPARED:
        assert finals[0][key] == finals[1][key] == ref[key], key
    assert shown.window and shown.sketches and shown.window_analysis is not None
    assert shown.speculations > 0
    assert not quiet.window and not quiet.sketches and quiet.window_analysis is None
    assert quiet.speculations == 0
    assert quiet.partitions == shown.partitions == ref["facts"]["partitions"]
    assert quiet.proofs_done == shown.proofs_done == 6
    assert LiveAnalyzer(Config()).shows is False  # (no sink given: the final report only)


def test_quantile_sketch_accuracy() -> None:
    import random

    rnd = random.Random(1)
    values = [rnd.lognormvariate(7, 1) for _ in range(20000)] + [0.0] * 50
    sk = QuantileSketch(0.01)
    for v in values:
        sk.add(v)
    values.sort()
    for q in (0.5, 0.9, 0.95, 0.99):
        exact = values[int(q * (len(values) - 1))]
        got = sk.quantile(q)
        assert got is not None and abs(got - exact) <= 0.011 * exact, (q, got, exact)
    assert sk.quantile(0) == 0.0 and sk.quantile(1) == values[-1]
    assert len(sk._pos) < 1000  # memory does not grow with the number of values


def test_quantile_sketch_batches_give_the_buckets_of_each_value() -> None:
    import math
    import random

    import numpy as np

    rnd = random.Random(2)
    # Whole milliseconds that repeat, negative and zero values, fractions, NaN (skipped).
    values = [float(rnd.randint(-50, 3000)) for _ in range(20000)]
    values += [rnd.uniform(-5, 5) for _ in range(6000)] + [0.0, -0.0, 1e-10, math.nan]
    rnd.shuffle(values)
    # The definition, value by value.
    gamma = (1 + 0.01) / (1 - 0.01)
    pos: dict[int, int] = {}
    neg: dict[int, int] = {}
    zero = 0
    for v in values:
        if v != v:
            continue
        if -1e-9 <= v <= 1e-9:
            zero += 1
            continue
        k = math.ceil(math.log(abs(v)) / math.log(gamma))
        side = pos if v > 0 else neg
        side[k] = side.get(k, 0) + 1
    whole = QuantileSketch(0.01)
    whole.add_many(np.array(values))
    batched = QuantileSketch(0.01)
    i = 0
    while i < len(values):  # batches of 1 to 700 values, as live mode's inputs come
        n = rnd.randint(1, 700)
        batched.add_many(np.array(values[i : i + n]))
        i += n
    single = QuantileSketch(0.01)
    for v in values[:3000]:
        single.add(v)
    finite = [v for v in values if v == v]
    for sk in (whole, batched):
        assert (sk._pos, sk._neg, sk._zero) == (pos, neg, zero)
        assert sk.count == len(finite) and sk.lo == min(finite) and sk.hi == max(finite)
        assert math.isclose(sk.total, math.fsum(finite), rel_tol=1e-9, abs_tol=1e-6)
    for q in (0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 1.0):
        assert whole.quantile(q) == batched.quantile(q)
    head = [v for v in values[:3000] if v == v]
    assert single.count == len(head) and single.quantile(1.0) == max(head)


@pytest.mark.parametrize("lines_per_chunk", [3, 400])
def test_stage_sketches_hold_every_records_values(lines_per_chunk: int) -> None:
    """The stage sketches, fed batch by batch as the input comes, hold each record's stage
    values (whole numbers and floats, not bools or text) and its queue wait: the buckets,
    counts and extremes of a sketch fed every record's values at once."""
    cfg = sim.SimConfig(era="main", n_gpus=2, gw=2, proofs=6, concurrency=2, seed=7, **sim.MESSY)
    data = sim.simulate(cfg).data
    assert data is not None
    engine = LiveAnalyzer(Config(), JsonLinesSink(io.StringIO()), LiveOptions(), ["-"])
    kept: list[dict[str, Any]] = []
    final = engine._final

    def spy(records: list[dict[str, Any]]) -> None:
        kept.extend(records)
        final(records)

    engine._final = spy  # type: ignore[method-assign]
    _engine_feed(data, engine, lines_per_chunk, speculate=False)
    engine.finish()
    assert len(kept) == engine.partitions > 20

    def number(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool)

    values = {name: [r.get(name) for r in kept] for name in SKETCH_FIELDS}
    values[QUEUE_WAIT] = [
        p - q if isinstance(q, int) and isinstance(p, int) else None
        for q, p in ((r.get("queue_ms"), r.get("pickup_ms")) for r in kept)
    ]
    made = {n for n, vals in values.items() if any(number(v) for v in vals)}
    assert set(engine.sketches) == made and len(made) > 20
    for name in made:
        want = QuantileSketch()
        want.add_many(np.array([float(v) for v in values[name] if number(v)]))
        got = engine.sketches[name]
        assert (got._pos, got._neg, got._zero) == (want._pos, want._neg, want._zero), name
        assert (got.count, got.lo, got.hi) == (want.count, want.lo, want.hi), name
        assert math.isclose(got.total, want.total, rel_tol=1e-12), name


def test_stage_sketches_take_records_in_batches_and_whole_when_read() -> None:
    """Records go into the sketches ``SKETCH_BATCH`` at a time (numpy's cost per call paid
    per batch, not per chunk), and reading the sketches puts in those still waiting."""
    from cuzk_diag import live

    engine = LiveAnalyzer(Config(), JsonLinesSink(io.StringIO()), LiveOptions(), ["-"])
    records = [{"gpu_ms": 10 + i, "queue_ms": 5, "pickup_ms": 7 + i} for i in range(30)]
    engine._sketch(records[:20])
    engine._sketch(records[20:])
    assert engine._sketches == {}  # (fewer than a batch: waiting)
    assert engine.sketches["gpu_ms"].count == 30 and engine.sketches[QUEUE_WAIT].count == 30
    assert engine._unsketched == []
    engine._sketch([{"gpu_ms": 1}] * live.SKETCH_BATCH)
    assert engine._sketches["gpu_ms"].count == 30 + live.SKETCH_BATCH  # (a batch: in at once)


class _Feeds:
    """What ``_handle`` asks of the engine: its options, the texts fed and the other items."""

    def __init__(self, opts: LiveOptions) -> None:
        self.opts = opts
        self.fed: list[bytes] = []
        self.ended = 0

    def feed(self, text: bytes) -> None:
        self.fed.append(text)

    def end_source(self) -> None:
        self.ended += 1


def test_pieces_waiting_are_parsed_as_one_text_then_the_next_item_is_handled() -> None:
    q: queue.Queue[tuple[object, ...]] = queue.Queue()
    for piece in (b"b\n", b"c\n"):
        q.put(("text", piece))
    q.put(("end",))
    q.put(("text", b"after the end\n"))
    engine = _Feeds(LiveOptions(feed_min=1, feed_wait=60.0))
    assert _handle(engine, q, ("text", b"a\n")) is False  # type: ignore[arg-type]
    assert engine.fed == [b"a\nb\nc\n"] and engine.ended == 1
    assert q.get_nowait() == ("text", b"after the end\n")  # (the next call's)
    assert _handle(engine, q, ("done",)) is True  # type: ignore[arg-type]


def test_a_short_text_waits_for_the_pieces_behind_it_up_to_feed_min() -> None:
    """A pipe hands over 64 KiB at a time: pieces that arrive within ``feed_wait`` of a text
    shorter than ``feed_min`` are parsed with it (a parse's cost per piece is then paid once),
    and none is waited for once ``feed_min`` is there."""
    q: queue.Queue[tuple[object, ...]] = queue.Queue()
    engine = _Feeds(LiveOptions(feed_min=6, feed_wait=60.0))

    def writer() -> None:
        for piece in (b"b\n", b"c\n", b"d\n"):
            time.sleep(0.02)
            q.put(("text", piece))

    thread = threading.Thread(target=writer)
    thread.start()
    t0 = time.monotonic()
    assert _handle(engine, q, ("text", b"a\n")) is False  # type: ignore[arg-type]
    waited = time.monotonic() - t0
    thread.join()
    assert engine.fed == [b"a\nb\nc\n"]  # (6 bytes: not waiting for d)
    assert q.get_nowait() == ("text", b"d\n")
    assert waited < 30  # (a bound far from feed_wait: it stopped waiting at feed_min)


def test_a_short_text_is_parsed_when_nothing_more_comes_within_feed_wait() -> None:
    q: queue.Queue[tuple[object, ...]] = queue.Queue()
    engine = _Feeds(LiveOptions(feed_min=1 << 20, feed_wait=0.01))
    assert _handle(engine, q, ("text", b"a\n")) is False  # type: ignore[arg-type]
    assert engine.fed == [b"a\n"]
    engine = _Feeds(LiveOptions(feed_min=1 << 20, feed_wait=0.0))  # (no waiting at all)
    q.put(("text", b"b\n"))
    assert _handle(engine, q, ("text", b"a\n")) is False  # type: ignore[arg-type]
    assert engine.fed == [b"a\nb\n"]  # (what is waiting already is joined all the same)


def test_the_input_queue_counts_the_bytes_of_text_waiting() -> None:
    """Live mode is behind its input when more than ``behind_bytes`` of it wait to be parsed;
    the queue counts them as items come and go (other items count nothing)."""
    q = _InputQueue(maxsize=8)
    assert q.waiting == 0
    q.put(("begin", SourceStats("<stdin>")))
    q.put(("text", b"a" * 1000))
    q.put(("text", b"b" * 24))
    q.put(("end",))
    assert q.waiting == 1024
    assert q.get_nowait()[0] == "begin" and q.waiting == 1024
    assert q.get_nowait() == ("text", b"a" * 1000) and q.waiting == 24
    q.get_nowait()
    q.get_nowait()
    assert q.waiting == 0 and q.empty()


def _failure_log() -> bytes:
    cfg = sim.SimConfig(era="main", n_gpus=2, gw=2, proofs=4, concurrency=2, seed=3, failures=1)
    data = sim.simulate(cfg).data
    assert data is not None and b"GPU proving failed" in data
    return data


def _run_rules_child(engine: LiveAnalyzer) -> None:
    """Wait (bounded) until the engine's rules child has taken its reply in."""
    deadline = time.monotonic() + EVENT_WAIT_S
    while engine._child_state in ("warming", "busy"):
        assert time.monotonic() < deadline, "the rules' child never replied"
        time.sleep(0.01)
        engine._collect()


def test_rules_in_a_child_give_the_findings_of_rules_run_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the rules in a second interpreter, each run's findings are those of a run in this
    process on the same window, and come out at a later tick; the final report is the same."""
    monkeypatch.setattr(live, "usable_cpus", lambda: 2)  # (a child on any machine)
    data = _failure_log()
    outs = {"here": io.StringIO(), "child": io.StringIO()}
    engines = {
        name: LiveAnalyzer(Config(), JsonLinesSink(out), LiveOptions(window=50), ["-"])
        for name, out in outs.items()
    }
    engines["child"].rules_in_child()
    assert engines["child"]._child_state == "warming"
    _run_rules_child(engines["child"])
    assert engines["child"]._child_state == "idle"
    finals = {}
    for name, engine in engines.items():
        stats = SourceStats("<stdin>")
        engine.begin_source(0, stats)
        for piece in chunks_of_lines(data, 400):
            engine.feed(clean_chunk(piece, stats))
            engine._dirty = True
            engine.evaluate()  # (the child's run: started here, its findings at a tick)
            if name == "child":
                assert engine._child_state == "busy"
                _run_rules_child(engine)
        engine.end_source()
        finals[name] = engine.finish().to_dict()
        assert engine._child is None  # (stopped at the end)
    assert finals["child"] == finals["here"]
    events = {
        name: [
            (e["type"], e.get("code"), e.get("status"))
            for e in map(json.loads, out.getvalue().splitlines())
            if e["type"].startswith("finding")
        ]
        for name, out in outs.items()
    }
    assert ("finding", "CZ601", "new") in events["here"]
    assert events["child"] == events["here"]


def test_a_failed_rules_child_leaves_the_rules_to_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(live, "usable_cpus", lambda: 2)
    out = io.StringIO()
    now = [0.0]
    engine = LiveAnalyzer(
        Config(), JsonLinesSink(out), LiveOptions(window=50), ["-"], clock=lambda: now[0]
    )
    engine.rules_in_child()
    _run_rules_child(engine)
    assert engine._child is not None
    engine._child.proc.kill()
    engine._child.proc.wait()
    stats = SourceStats("<stdin>")
    engine.begin_source(0, stats)
    engine.feed(clean_chunk(_failure_log(), stats))
    engine._dirty = True
    engine.evaluate()  # (sent to a child that is gone)
    _run_rules_child(engine)
    assert engine._child is None and engine._child_state == "off"
    assert any(
        "the rules' process ended early" in n and "main process from now on" in n
        for n in engine.notices
    )
    assert engine._dirty  # (the run it had in hand is due again, here)
    now[0] = 1.0
    engine.tick()
    assert engine.window_analysis is not None
    codes = [f.code for f in engine.window_analysis.findings]
    assert "CZ601" in codes
    engine.finish()


@contextmanager
def _stalled_run(monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveAnalyzer]:
    """An engine whose rules' process has a run in hand that never ends (the process stopped,
    ``CHILD_WAIT`` 0.2 s), the failure log read; the process resumed when the block ends, if
    the engine still holds it."""
    monkeypatch.setattr(live, "usable_cpus", lambda: 2)
    engine = LiveAnalyzer(Config(), JsonLinesSink(io.StringIO()), LiveOptions(window=50), ["-"])
    engine.CHILD_WAIT = 0.2
    engine.rules_in_child()
    _run_rules_child(engine)
    assert engine._child is not None
    engine._child.proc.send_signal(signal.SIGSTOP)  # (a run that never ends)
    try:
        stats = SourceStats("<stdin>")
        engine.begin_source(0, stats)
        engine.feed(clean_chunk(_failure_log(), stats))
        engine._dirty = True
        engine.evaluate()
        assert engine._child_state == "busy" and not engine._dirty
        yield engine
    finally:
        if engine._child is not None:
            engine._child.proc.send_signal(signal.SIGCONT)


def test_the_end_of_input_waits_a_bounded_time_for_the_rules_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run in a rules' process that does not answer is given up at the end of input (the
    final report is made in the main process, as always)."""
    with _stalled_run(monkeypatch) as engine:
        engine.end_source()
        final = engine.finish()
    assert engine._child is None
    assert any("did not answer within 0.2 s" in n for n in engine.notices)
    assert "CZ601" in [f.code for f in final.findings]
    assert engine.window_analysis is not None  # (the last window run, made here)


def test_a_run_given_up_at_the_end_of_input_is_made_again_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run a rules' process did not answer in time is due again in this process, as a
    failed one's is."""
    with _stalled_run(monkeypatch) as engine:
        engine._collect(wait=True)
    assert engine._child is None and engine._child_state == "off"
    assert engine._dirty  # (the run it had in hand is due again, here)
    engine.end_source()
    engine.finish()


def test_rules_stay_in_this_process_when_no_child_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "usable_cpus", lambda: 2)

    def no_child(*_: Any) -> None:
        raise OSError("no interpreter here")

    monkeypatch.setattr(live, "ChildCall", no_child)
    engine = LiveAnalyzer(Config(), JsonLinesSink(io.StringIO()), LiveOptions(window=50), ["-"])
    engine.rules_in_child()
    assert engine._child is None and engine._child_state == "off"
    assert any("did not start (no interpreter here)" in n for n in engine.notices)
    stats = SourceStats("<stdin>")
    engine.begin_source(0, stats)
    engine.feed(clean_chunk(_failure_log(), stats))
    engine._dirty = True
    engine.evaluate()
    assert engine.window_analysis is not None  # (run here, at once)
    engine.finish()


def test_with_the_rules_in_a_child_they_run_while_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind the input, rules run here wait ``rule_interval_behind``; a child's runs cost this
    process only the window's table, and go on at ``rule_interval``."""
    monkeypatch.setattr(live, "usable_cpus", lambda: 2)
    now = [0.0]
    opts = LiveOptions(window=50, rule_interval=0.5, rule_interval_behind=5.0)
    engine = LiveAnalyzer(Config(), JsonLinesSink(io.StringIO()), opts, ["-"], clock=lambda: now[0])
    engine.rules_in_child()
    _run_rules_child(engine)
    stats = SourceStats("<stdin>")
    engine.begin_source(0, stats)
    runs = 0
    for i, piece in enumerate(chunks_of_lines(_failure_log(), 300)):
        engine.feed(clean_chunk(piece, stats))
        now[0] = float(i)  # a piece a second, always behind
        engine.tick(idle=False)
        if engine._child_state == "busy":
            runs += 1
            _run_rules_child(engine)
    assert runs >= 3  # (here, behind, one run in five seconds at most)
    engine.finish()


@pytest.mark.parametrize(("argv", "child"), [([], True), (["--jobs", "1"], False)])
def test_live_mode_runs_the_rules_in_a_second_process_unless_jobs_is_1(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], child: bool
) -> None:
    seen: list[LiveOptions] = []
    real = live.run_live

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[3])
        return real(*args, **kwargs)

    monkeypatch.setattr(live, "run_live", spy)
    log = (Path(__file__).parents[1] / "fixtures" / "example.log").read_bytes()
    r = CliRunner().invoke(cli, ["analyze", "-", *argv], input=log)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert "partition" in r.output  # (the live stream, then the report)
    assert [o.rules_child for o in seen] == [child]


def test_record_store_keeps_order_and_cap() -> None:
    store = RecordStore(cap=5, batch=2)
    for i in [3, 1, None, 2, 5, 4, 7, 6]:
        store.add({"record": i, "job_id": str(i)})
    table = store.table(RunInfo(era="main"))
    assert table.num_rows <= 5 and store.dropped == 8 - table.num_rows
    recs = table.column("record").to_pylist()
    assert recs == sorted(r for r in recs if r is not None) + [None] * recs.count(None)
    assert set(table.column("era").to_pylist()) == {"main"}


# -- CLI ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["analyze", "--follow", "x.log", "{log}"], "either LOG arguments or --follow"),
        (["analyze"], "Missing argument"),
    ],
)
def test_live_usage_errors(busy_log: Path, args: list[str], message: str) -> None:
    argv = [a.replace("{log}", str(busy_log)) for a in args]
    r = CliRunner().invoke(cli, argv)
    assert r.exit_code == ExitCode.USAGE
    assert message in r.output


def test_no_live_on_stdin_is_the_batch_path(busy_log: Path) -> None:
    data = busy_log.read_bytes()
    r1 = CliRunner().invoke(cli, ["analyze", "-", "--no-live", "--format", "json"], input=data)
    r2 = CliRunner().invoke(cli, ["analyze", "-", "--format", "json"], input=data)
    assert r1.exit_code == r2.exit_code == ExitCode.OK
    assert json.loads(r1.stdout) == json.loads(r2.stdout)


def test_live_on_a_file_writes_json_lines(busy_log: Path) -> None:
    r = CliRunner().invoke(cli, ["analyze", "--live", str(busy_log)])
    assert r.exit_code == ExitCode.OK, r.output
    events = [json.loads(x) for x in r.stdout.splitlines()]
    assert events[-1]["type"] == "summary" and events[-1]["final"]
    assert events[-1]["report"]["inputs"] == [str(busy_log)]
    assert sum(e["type"] == "partition" for e in events) == 60
    # partition events carry the wall clock as the export does (ISO 8601 UTC)
    part = next(e for e in events if e["type"] == "partition")
    rows = [json.loads(x) for x in export_jsonl(busy_log).splitlines()]
    same = next(
        r for r in rows if (r["job_id"], r["partition"]) == (part["job_id"], part["partition"])
    )
    assert part["start_ts"] == same["start_ts"] and part["start_ts"].endswith("Z")
    assert part["end_ts"] == same["end_ts"]


def export_jsonl(log: Path) -> str:
    r = CliRunner().invoke(cli, ["export", str(log), "-o", "-", "--format", "jsonl", "-q"])
    assert r.exit_code == ExitCode.OK
    return r.stdout


def test_help_says_which_figures_are_windowed() -> None:
    r = CliRunner().invoke(cli, ["analyze", "--help"])
    flat = " ".join(r.output.split())
    assert "--follow" in flat and "--no-live" in flat
    assert "Windowed figures" in flat and "--max-records" in flat


# -- the partition events' text ------------------------------------------------------------------

_VALUES = st.one_of(
    st.none(),
    st.text(),  # quotes, backslashes, control characters, non-ASCII
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.floats(allow_infinity=False),  # (NaN: ``jsonable`` makes it null)
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(np.int64),
    st.floats(allow_nan=False, allow_infinity=False).map(np.float64),
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from([name for name, _ in PARTITION_COLUMNS]), _VALUES),
    st.booleans(),
)
def test_partition_text_is_the_encoded_event(record: dict[str, Any], revised: bool) -> None:
    """``partition_text`` writes what encoding the event's dict wrote: every column in order,
    a missing one as null, each value as ``jsonable`` makes it."""
    obj: dict[str, Any] = {"type": "partition", "time": "2026-01-02T03:04:05.678Z"}
    obj["revised"] = revised
    for name, _ in PARTITION_COLUMNS:
        v = record.get(name)
        obj[name] = v if v is None or type(v) in (str, int, bool) else jsonable(v)
    want = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert partition_text(record, obj["time"], revised=revised) == want


def test_event_times_are_the_clock_in_milliseconds() -> None:
    sink = JsonLinesSink(io.StringIO())
    before = time.time_ns() // 1_000_000
    stamp = sink._time()
    after = time.time_ns() // 1_000_000
    assert stamp.endswith("Z") and len(stamp) == len("2026-01-02T03:04:05.678Z")
    ms = int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000 + 0.5)
    assert before <= ms <= after
