"""Chunks parsed by several processes (``ingest.pool``) give what one process gives: the same
line table, row for row, and the same accounting, whatever the chunk boundaries cut."""

from __future__ import annotations

import io
import pickle
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from _signals import ShortWrites, child_env, stopped_and_continued
from cuzk_diag.cli import cli
from cuzk_diag.errors import InputError
from cuzk_diag.ingest import parallel, pool
from cuzk_diag.ingest.parse import Carry, LineParser, ParsedChunk
from cuzk_diag.linetable import chunk_lines
from cuzk_diag.records import Accounting

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
#: A TIMELINE line torn by a timing line, and the rest of it on the next line.
TORN_HEAD = "TIMELINE,7,GPU_END,CUZK_TIMING: prep_msm_ms=9\n"
TORN_TAIL = "job,worker=0,partition=1,gpu_ms=5\n"


def _both(
    inputs: list[str], chunk_size: int, jobs: int = 2
) -> tuple[pa.Table, Accounting, pa.Table, Accounting, int]:
    """The line table and accounting of one process and of ``jobs``, and the chunks redone."""
    one, many = Accounting(), Accounting()
    a = [t for _, t, _ in pool.map_parts(inputs, one, chunk_lines, chunk_size=chunk_size)]
    redone = pool.PoolStats.redone
    b = [
        t for _, t, _ in pool.map_parts(inputs, many, chunk_lines, jobs=jobs, chunk_size=chunk_size)
    ]
    return pa.concat_tables(a), one, pa.concat_tables(b), many, pool.PoolStats.redone - redone


@pytest.fixture
def children_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Children that have started before the first chunk is handed out, however long the
    machine takes to start them (chunks are otherwise parsed here until a child is up)."""
    start = pool._Child.__init__

    def started(self: pool._Child) -> None:
        start(self)
        deadline = time.monotonic() + 60
        while not self.started and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)

    monkeypatch.setattr(pool._Child, "__init__", started)


@pytest.mark.parametrize("jobs", [2, 3])
@pytest.mark.usefixtures("children_up")
def test_every_fixture_log_in_small_chunks_gives_the_same_table_and_accounting(jobs: int) -> None:
    logs = sorted(str(p) for p in FIXTURES.rglob("*.log"))
    assert len(logs) > 30
    sent, here = pool.PoolStats.sent, pool.PoolStats.here
    one, acc1, two, acc2, _ = _both(logs, 4096, jobs)
    # Chunks went to the children and were parsed here too.
    assert pool.PoolStats.sent - sent > 20 and pool.PoolStats.here - here > 0
    assert one.num_rows == acc1.lines_total > 5000
    assert one.equals(two)
    assert acc1.to_dict() == acc2.to_dict()


def test_a_line_torn_at_a_chunk_boundary_is_parsed_again_from_its_carry(tmp_path: Path) -> None:
    size = 4096
    filler = "x" * (size - len(TORN_HEAD) - 1) + "\n"
    text = filler + TORN_HEAD + TORN_TAIL + "CUZK_TIMING: async_dealloc_ms=3\n" * 300
    log = tmp_path / "torn.log"
    log.write_text(text)
    one, acc1, two, acc2, redone = _both([str(log)], size)
    assert redone >= 1  # the chunk after the head was sent without the torn line
    assert acc1.torn_repaired == 1 and acc1.torn_unrepaired == 0
    assert one.equals(two) and acc1.to_dict() == acc2.to_dict()
    ends = one.filter(pa.compute.equal(one["event"], "GPU_END"))
    assert ends["line"].to_pylist() == [2]


def test_a_torn_line_the_input_ends_with_is_counted_once(tmp_path: Path) -> None:
    log = tmp_path / "cut.log"
    log.write_text("CUZK_TIMING: async_dealloc_ms=3\n" * 200 + "TIMELINE,7,GPU_END,\n")
    one, acc1, two, acc2, _ = _both([str(log)], 1024)
    assert acc1.torn_unrepaired == 1 and acc1.malformed == 1
    assert one.equals(two) and acc1.to_dict() == acc2.to_dict()


_HEADER_PIECES = [
    "=== Batch Benchmark ===",
    "=== Proof Result ===",
    "=== Batch Summary ===",
    "=== Batch Benchmark",
    "x === Proof Result ===",
    " ",
    "\t",
    "\u00a0",
    "\u2003",
    "\x1f",
    "—",
    "\n",
    "\n",
    "text",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_HEADER_PIECES), max_size=12))
def test_bench_header_test_reads_only_the_lines_with_a_header_s_words(pieces: list[str]) -> None:
    """The same answer as the header's pattern over the whole chunk's text (Unicode blanks
    around the header included)."""
    from cuzk_diag.ingest.pool import _BENCH_HEADER_RE, bench_header_in

    text = "".join(pieces) + "\n"
    assert bench_header_in(text.encode()) is (_BENCH_HEADER_RE.search(text) is not None)


def test_a_bench_block_opened_in_an_earlier_chunk_stays_open(tmp_path: Path) -> None:
    bench = (FIXTURES / "lines" / "bench.log").read_text()
    log = tmp_path / "bench.log"
    log.write_text("random text\n" * 50 + bench)
    one, acc1, two, acc2, redone = _both([str(log)], 64)
    params = one.filter(pa.compute.equal(one["event"], "bench_param"))
    assert params.num_rows == 3  # proof type, count, concurrency: each in a chunk of its own
    assert redone == 0  # the header was seen before the chunks after it were sent
    assert one.equals(two) and acc1.to_dict() == acc2.to_dict()


def test_text_that_only_looks_like_a_bench_header_is_parsed_again(tmp_path: Path) -> None:
    # The header-like line is the second half of a torn TIMELINE line: the parse takes it as
    # such, so no bench block opens, though the chunk holds a header-like line.
    size = 1024
    head = "TIMELINE,7,GPU_END,CUZK_TIMING: prep_msm_ms=9\n"
    filler = "x" * (size - len(head) - 1) + "\n"
    text = filler + head + "=== Batch Benchmark ===\n" + "count: 4\n" * 400
    log = tmp_path / "fake.log"
    log.write_text(text)
    one, acc1, two, acc2, _ = _both([str(log)], size)
    assert one.equals(two) and acc1.to_dict() == acc2.to_dict()


def test_carry_resumes_a_parser_where_another_stopped() -> None:
    a = LineParser(full=True)
    a.feed("=== Batch Benchmark ===\n" + TORN_HEAD)
    carry = a.carry()
    assert carry == Carry(3, (2, TORN_HEAD.rstrip("\n")), True)
    b = LineParser(full=True)
    b.resume(carry)
    events = b.feed(TORN_TAIL + "count: 4\n")
    assert [(e.kind, e.line) for e in events] == [
        ("GPU_END", 2),
        ("prep_msm", 2),
        ("bench_param", 4),
    ]


def test_accounting_add_counts_as_one_accounting_would() -> None:
    first, later, whole = Accounting(), Accounting(), Accounting()
    for n in range(15):
        first.note_malformed(n)
        whole.note_malformed(n)
    for n in range(15, 30):
        later.note_malformed(n)
        whole.note_malformed(n)
    first.by_family["timing"] += 2
    later.by_family["timing"] += 3
    whole.by_family["timing"] += 5
    later.unknown_keys["k"] += 1
    whole.unknown_keys["k"] += 1
    first.add(later)
    assert first.to_dict() == whole.to_dict()
    assert first.malformed == 30 and first.malformed_examples == list(range(20))


def _local(part: ParsedChunk) -> int:
    return part.size


@pytest.mark.usefixtures("children_up")
def test_work_a_child_cannot_import_is_a_clear_error() -> None:
    # (This module is not importable by the children: they have the package, not the tests.)
    with pytest.raises(InputError, match="ModuleNotFoundError"):
        list(pool.map_parts([str(FIXTURES / "example.log")], Accounting(), _local, jobs=2))


def test_a_short_input_does_not_wait_for_the_child_to_start() -> None:
    # Its one chunk is parsed here at once (a child's start takes half a second and more);
    # the table is the same.
    sent, here = pool.PoolStats.sent, pool.PoolStats.here
    log = [str(FIXTURES / "example.log")]
    one, acc1, two, acc2, _ = _both(log, 1 << 20)
    assert one.equals(two) and acc1.to_dict() == acc2.to_dict()
    assert pool.PoolStats.here - here == 1 and pool.PoolStats.sent == sent


def test_work_that_cannot_be_sent_is_refused_before_any_child_starts() -> None:
    with pytest.raises(ValueError, match="module-level function"):
        list(pool.map_parts([str(FIXTURES / "example.log")], Accounting(), lambda p: 0, jobs=2))


def test_export_lines_with_two_processes_writes_the_same_file(tmp_path: Path) -> None:
    log = str(FIXTURES / "sim" / "phase12-2gpu-gw2.log")
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"lines{jobs}.parquet"
        res = CliRunner().invoke(cli, ["export", "--lines", log, "-o", str(out), "-j", jobs])
        assert res.exit_code == 0, res.output
        outs.append(pq.read_table(out))
    assert outs[0].num_rows > 500 and outs[0].equals(outs[1])
    assert outs[0].schema.metadata == outs[1].schema.metadata


def test_export_lines_from_stdin_with_two_processes(tmp_path: Path) -> None:
    # The chunks are read here and sent on: stdin needs no file the children could open.
    text = (FIXTURES / "sim" / "messy.log").read_bytes()
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"stdin{jobs}.parquet"
        res = CliRunner().invoke(
            cli, ["export", "--lines", "-", "-o", str(out), "-j", jobs], input=text
        )
        assert res.exit_code == 0, res.output
        outs.append(pq.read_table(out))
    assert outs[0].num_rows > 100 and outs[0].equals(outs[1])


def _message() -> tuple[object, ...]:
    """A message with every kind of buffer a child's reply or task holds: a sliced Arrow table
    (its buffers shared with the rows left out), a writable numpy array, a chunk's text sent out
    of band, and values pickled in band."""
    import numpy as np

    table = pa.table({"n": [1, None, 3, 4], "s": ["a", None, "é", "d"]}).slice(1, 2)
    text = pickle.PickleBuffer(b"line one\nline two\n")
    return ("ok", table, np.arange(5, dtype=np.int64), text, {"k": [1, 2]}, b"in band")


def test_a_message_comes_back_as_it_was_sent() -> None:
    """Out-of-band buffers come back as a pickle in band gives them: the table equal, the numpy
    array writable, the text as ``bytes``; a second message follows the first."""
    out = io.BytesIO()
    parallel.send(out, _message())
    parallel.send(out, ("done", None))
    inp = io.BytesIO(out.getvalue())
    kind, table, arr, text, plain, inband = parallel.recv(inp)  # type: ignore[misc]
    assert kind == "ok" and table.to_pylist() == [{"n": None, "s": None}, {"n": 3, "s": "é"}]
    arr[0] = 7  # (writable, as in band)
    assert arr.tolist() == [7, 1, 2, 3, 4]
    assert type(text) is bytes and text == b"line one\nline two\n"
    assert plain == {"k": [1, 2]} and inband == b"in band"
    assert parallel.recv(inp) == ("done", None)
    assert parallel.recv(inp) is None


def test_a_message_cut_anywhere_reads_as_the_end() -> None:
    """A child that dies mid-message: the reader sees the end (None), never a part of it."""
    out = io.BytesIO()
    parallel.send(out, _message())
    data = out.getvalue()
    for cut in range(0, len(data), max(1, len(data) // 97)):
        assert parallel.recv(io.BytesIO(data[:cut])) is None
    assert parallel.recv(io.BytesIO(data[:-1])) is None


def test_a_message_through_a_pipe_in_pieces() -> None:
    """Through a real pipe, written by another thread, buffers larger than the pipe holds."""
    import os
    import threading

    big = pa.table({"x": pa.array(range(300_000))})
    r, w = os.pipe()
    with os.fdopen(r, "rb") as inp, os.fdopen(w, "wb") as out:

        def write() -> None:
            parallel.send(out, ("ok", big))
            out.close()

        writer = threading.Thread(target=write)
        writer.start()
        msg = parallel.recv(inp)
        writer.join()
    assert msg is not None and msg[1].equals(big)


@pytest.mark.parametrize("most", [1, 7, 4096])
def test_a_message_written_in_short_pieces_comes_back_whole(most: int) -> None:
    """Every byte is written however few each ``write`` takes: the message reads back equal."""
    out = ShortWrites(most)
    parallel.send(out, _message())
    parallel.send(out, ("done", None))
    inp = io.BytesIO(out.getvalue())
    msg = parallel.recv(inp)
    assert msg is not None and msg[1].to_pylist() == [{"n": None, "s": None}, {"n": 3, "s": "é"}]
    assert msg[2].tolist() == [0, 1, 2, 3, 4] and msg[3] == b"line one\nline two\n"
    assert parallel.recv(inp) == ("done", None)


def test_a_message_with_bytes_lost_is_refused_not_read() -> None:
    """Bytes lost inside a buffer (what an unchecked short write did): the tail tells, and
    the message is refused (``GarbledMessage``, a message for the user), never unpickled with
    the next message's bytes as its buffer's."""
    out = io.BytesIO()
    parallel.send(out, ("ok", pa.table({"x": pa.array(range(1000))})))
    parallel.send(out, ("done", None))
    data = out.getvalue()
    cut = data[:200] + data[216:]
    with pytest.raises(parallel.GarbledMessage, match="came apart"):
        parallel.recv(io.BytesIO(cut))
    # (A head of garbled bytes: no read of its size is tried.)
    with pytest.raises(parallel.GarbledMessage, match="came apart"):
        parallel.recv(io.BytesIO(parallel._HEAD.pack(1 << 60, 1) + data[12:]))


def test_a_child_stopped_and_continued_sends_every_byte(tmp_path: Path) -> None:
    """A child writing messages larger than the pipe holds, stopped and continued again and
    again (SIGSTOP/SIGCONT, as Ctrl-Z and ``fg`` do): every message arrives whole. (Without
    writing the rest of a short write, bytes were lost at nearly every stop.)"""
    import subprocess
    import sys

    script = tmp_path / "writer.py"
    script.write_text(
        "import sys\n"
        "import pyarrow as pa\n"
        "from cuzk_diag.ingest import parallel\n"
        "out = sys.stdout.buffer\n"
        "for i in range(40):\n"
        "    parallel.send(out, (i, pa.array(range(i, i + 150_000))))\n"
        "out.flush()\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, env=child_env())
    got = []
    with stopped_and_continued(proc):
        assert proc.stdout is not None
        while (msg := parallel.recv(proc.stdout)) is not None:
            got.append(msg)
    assert [i for i, _ in got] == list(range(40))
    assert all(arr.equals(pa.array(range(i, i + 150_000))) for i, arr in got)
