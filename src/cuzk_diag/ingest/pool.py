"""Work that is a function of one parsed chunk alone, on several processes, in input order.

``map_parts(inputs, acc, work, jobs=N)`` yields what ``work(chunk)`` returns for every chunk
``stream.parse_parts`` would parse, in the same order and with the same accounting; with
``jobs`` > 1 this process reads and cleans the inputs, and it and ``jobs`` - 1 child
interpreters (``python -m cuzk_diag.ingest.pool``) parse the chunks and run ``work`` on them
(the line table: ``linetable.chunk_lines``): a chunk goes to a started child (its imports
done: it says so first) while the child has fewer than ``AHEAD`` in hand, else it is parsed
here; so chunks do not wait for a child's start, a short input is parsed here alone, and a
child that never starts leaves every chunk to this process (the results are the same). A
thread per child writes its chunks to its stdin and another reads its results (pickled,
through its stdout) as soon as they come, so that neither side waits on the other's full
pipe.

A chunk's parse depends on the chunks before it only through ``parse.Carry``: its first line
number (counted here: the newlines of the chunks before it), a TIMELINE line torn at its start
and whether a cuzk-bench block is open. Each chunk is sent with the carry it most likely
starts from (no torn line; a bench block open once a bench header line was read, in a chunk
verified or sent) and each result is checked against the carry the chunk before it really
ended with; a chunk sent with another carry (rare: a torn line at a chunk boundary, text that
only looks like a bench header) is parsed again here. The accounting of each chunk is counted
apart and added in input order (``Accounting.add``). So the results are those of one process.
"""

from __future__ import annotations

import pickle
import queue
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from cuzk_diag.ingest.parallel import (
    as_sendable,
    child_setup,
    ended_early,
    recv,
    send,
    start_child,
    stop_child,
    without_pandas,
)
from cuzk_diag.ingest.parse import Carry, LineParser, ParsedChunk
from cuzk_diag.ingest.stream import PacedCollector, input_read, parse_parts, settle_heap
from cuzk_diag.records import Accounting
from cuzk_diag.sources import CHUNK_SIZE, Source, iter_input, newlines

R = TypeVar("R")

#: A line that opens a cuzk-bench block (``parse.bench._BENCH_HEADERS``, stripped). The blanks
#: around it are a line's own (``[^\S\n]``, taken whole): a run of blank lines costs one pass.
_BENCH_HEADER_RE = re.compile(
    r"^[^\S\n]*+=== (?:Batch Benchmark|Batch Summary|Proof Result) ===[^\S\n]*+$",
    re.MULTILINE,
)
#: What a line that ``_BENCH_HEADER_RE`` matches holds, in a chunk's bytes.
_BENCH_HEADER_CORE = re.compile(rb"=== (?:Batch Benchmark|Batch Summary|Proof Result) ===")


def bench_header_in(text: bytes) -> bool:
    """Does a line of ``text`` (whole lines of UTF-8) open a cuzk-bench block? Only the lines
    that hold a header's words are read as text (the pattern's blanks are Unicode ones), not
    the whole chunk."""
    for m in _BENCH_HEADER_CORE.finditer(text):
        lo = text.rfind(b"\n", 0, m.start()) + 1
        hi = text.find(b"\n", m.end())
        line = text[lo : hi if hi >= 0 else len(text)].decode()
        if _BENCH_HEADER_RE.search(line) is not None:
            return True
    return False


#: Chunks in flight per child (sent and not yet taken back): enough to keep each one busy.
AHEAD = 2

_COLLECTOR = PacedCollector()


def parse_chunk(
    source: int, text: bytes, start: Carry, full: bool, work: Callable[[ParsedChunk], R]
) -> tuple[R, Accounting, Carry]:
    """Parse one chunk of input ``source`` from ``start``: ``work``'s result, the chunk's own
    accounting and the carry it ends with. (Runs in a child, and here for a chunk parsed
    again.)"""
    settle_heap()
    acc = Accounting()
    parser = LineParser(source, acc, full=full)
    parser.resume(start)
    with _COLLECTOR:
        result = work(parser.feed_parts(text))
        _COLLECTOR.chunk(len(text))
    return result, acc, parser.carry()


def worker_main() -> int:
    """A child: say it is ready, then parse each chunk read from stdin and write its result to
    stdout, until EOF."""
    child_setup()
    without_pandas()
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    send(out, (READY, None))
    out.flush()
    while True:
        try:
            task = recv(inp)
            if task is None:
                return 0
            msg: tuple[str, Any] = ("ok", parse_chunk(*task))
        except Exception as exc:  # handed to the parent, which raises it
            msg = ("error", as_sendable(exc))
        send(out, msg)
        out.flush()


#: A child's first message: its imports are done and it takes chunks.
READY = "ready"


class PoolStats:
    """How many chunks went to the children, were parsed here, and were parsed again here
    (tests)."""

    sent = 0
    here = 0
    redone = 0


class _Child:
    """One child interpreter, the thread that writes its chunks and the thread that reads its
    results as soon as they come (a result is several MB, a pipe holds 64 KiB: unread, the
    child would wait for this process to take it before it could parse its next chunk)."""

    def __init__(self) -> None:
        self.proc = start_child("cuzk_diag.ingest.pool", [], stdin=True)
        self.failed: Exception | None = None
        self.started = False  # its READY message came: until then its chunks are parsed here
        self.inflight = 0  # chunks sent whose result is not yet taken
        self.tasks: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        # The child's messages as read (None: its output ended); at most ``inflight`` of them.
        self.results: queue.SimpleQueue[tuple[str, Any] | None] = queue.SimpleQueue()
        self.writer = threading.Thread(target=self._write, daemon=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.writer.start()
        self.reader.start()

    def _write(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            while (task := self.tasks.get()) is not None:
                send(stdin, task)
                stdin.flush()
        except OSError:
            pass  # the child ended (its reader reports it)
        except Exception as exc:  # a task that does not pickle: the reader raises it
            self.failed = exc
        finally:
            try:
                stdin.close()
            except OSError:
                pass

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while (msg := recv(stdout)) is not None:
                if msg[0] == READY:
                    self.started = True
                else:
                    self.results.put(msg)
        except Exception as exc:  # a result that does not unpickle: raised where it is taken
            self.results.put(("error", exc))
        finally:
            self.results.put(None)

    def send(self, task: tuple[Any, ...]) -> None:
        self.inflight += 1
        self.tasks.put(task)

    def ready(self) -> bool:
        """Is the result of the oldest chunk sent in? (Without waiting.)"""
        return not self.results.empty()

    def result(self) -> tuple[Any, Accounting, Carry]:
        self.inflight -= 1
        msg = self.results.get()
        if msg is None:
            self.results.put(None)  # (the end stays for whoever asks next)
            if self.failed is not None:
                raise self.failed
            raise ended_early(self.proc)
        kind, value = msg
        if kind == "error":
            raise value
        return value  # type: ignore[no-any-return]

    def close(self) -> None:
        self.tasks.put(None)
        self.writer.join(timeout=5)
        stop_child(self.proc)  # (its output ends: the reader thread sees the end and returns)
        self.reader.join(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@dataclass
class _Sent:
    child: _Child | None  # None: parsed here
    done: tuple[Any, Accounting, Carry] | None  # the result of a chunk parsed here
    source: int
    text: bytes
    start: Carry
    size: int  # bytes read for it
    bench: bool  # holds a bench header line


def map_parts(
    inputs: Iterable[str | Source],
    acc: Accounting,
    work: Callable[[ParsedChunk], R],
    *,
    full: bool = True,
    jobs: int = 1,
    chunk_size: int = CHUNK_SIZE,
) -> Iterator[tuple[int, R, int]]:
    """(input index, ``work(chunk)``, bytes read for it) for every chunk of the inputs, in
    order, as ``stream.parse_parts`` parses them (the last of each input holds the events of
    ``LineParser.close``); ``acc`` is filled as they come. ``work`` must be a module-level
    function when ``jobs`` > 1 (it is sent to the children by name)."""
    if jobs <= 1:
        for idx, part, size, _ended in parse_parts(inputs, acc, full=full, chunk_size=chunk_size):
            yield idx, work(part), size
        return
    try:
        pickle.dumps(work)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        raise ValueError(
            f"work must be a module-level function to run in {jobs} processes: {exc}"
        ) from None
    children = [_Child() for _ in range(jobs - 1)]
    try:
        yield from _pooled(children, inputs, acc, work, full, chunk_size)
    finally:
        for child in children:
            child.close()


def _pooled(
    children: list[_Child],
    inputs: Iterable[str | Source],
    acc: Accounting,
    work: Callable[[ParsedChunk], R],
    full: bool,
    chunk_size: int,
) -> Iterator[tuple[int, R, int]]:
    """Each chunk goes to the started child with the fewest chunks in flight, or, when none
    is started or every one has ``AHEAD``, is parsed here; results are taken in order as soon
    as they are in, and waited for when ``AHEAD`` per process are held."""
    limit = AHEAD * (len(children) + 1)
    for idx, name in enumerate(inputs):
        sent: deque[_Sent] = deque()
        ended = Carry()  # what the last chunk taken back really ended with
        next_line, stats, done = 1, None, 0
        for chunk_stats, text in iter_input(name, chunk_size):
            stats = chunk_stats
            if not text:
                continue
            # A bench block is open from its header line on (it never closes).
            bench = bench_header_in(text)
            start = Carry(next_line, None, ended.bench_open or any(s.bench for s in sent))
            read, done = stats.bytes_read - done, stats.bytes_read
            started = [c for c in children if c.started]
            child = min(started, key=lambda c: c.inflight) if started else None
            if child is not None and child.inflight < AHEAD:
                # (The text out of band: written to the pipe from where it lies; the
                # child reads it into the bytes it parses.)
                child.send((idx, pickle.PickleBuffer(text), start, full, work))
                PoolStats.sent += 1
                sent.append(_Sent(child, None, idx, text, start, read, bench))
            else:
                here = parse_chunk(idx, text, start, full, work)
                PoolStats.here += 1
                sent.append(_Sent(None, here, idx, text, start, read, bench))
            next_line += newlines(text)
            while sent and (len(sent) >= limit or sent[0].child is None or sent[0].child.ready()):
                item = sent.popleft()
                result, ended = _take(item, ended, acc, work, full)
                yield idx, result, item.size
        while sent:
            item = sent.popleft()
            result, ended = _take(item, ended, acc, work, full)
            yield idx, result, item.size
        # The end of the input: a torn line that never got its tail (``LineParser.close``).
        closer = LineParser(idx, acc, full=full)
        closer.resume(ended)
        last = ParsedChunk(idx, 0, [], head=closer.close())
        input_read(acc, stats)  # (iter_input yields at least once: stats is set)
        yield idx, work(last), 0


def _take(
    item: _Sent, ended: Carry, acc: Accounting, work: Callable[[ParsedChunk], R], full: bool
) -> tuple[R, Carry]:
    """The result of a chunk sent to a child, parsed again here when it was sent with another
    carry than the chunk before it ended with; its counts go into ``acc``."""
    if item.child is not None:
        result, counts, end = item.child.result()
    else:
        assert item.done is not None
        result, counts, end = item.done
    if item.start != ended:
        PoolStats.redone += 1
        result, counts, end = parse_chunk(item.source, item.text, ended, full, work)
    acc.add(counts)
    return result, end


if __name__ == "__main__":
    raise SystemExit(worker_main())
