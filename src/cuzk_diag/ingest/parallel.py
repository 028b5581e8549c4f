"""The parse of regular-file inputs in a second process, ahead of the assembly in this one.

Reading, cleaning and parsing (``stream.parse_parts``) run in a child interpreter
(``python -m cuzk_diag.ingest.parallel FILE...``); each chunk comes back pickled through its
stdout as a ``ParsedChunk``: the fixed-form lines as Arrow columns (cheap to send), the other
lines as events. Only the making of the fixed-form lines' events is left to this process. The
pipe's small buffer makes the child wait while this process is behind (memory stays that of a
chunk or two). The events, and so the records, are the ones a single-process run makes: the
child runs the same loop over the same chunks. Its accounting
comes back at the end of each input and replaces the parse-side counts here (the assembly adds
only its own ``unattributed`` counts).
"""

from __future__ import annotations

import dataclasses
import importlib.abc
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import IO, Any

from cuzk_diag.errors import CuzkDiagError, InputError
from cuzk_diag.ingest.parse import Carry, LineParser, ParsedChunk
from cuzk_diag.pipes import write_all
from cuzk_diag.records import Accounting
from cuzk_diag.sources import CHUNK_SIZE

#: What the assembly, and the records' tables after it, write into the accounting; everything
#: else is the parse's.
ASSEMBLY_FIELDS = frozenset(
    {"unattributed", "unattributed_examples", "invalid_values", "invalid_values_examples"}
)
#: A message's head: the size of its pickle and the number of its out-of-band buffers; then
#: per buffer, its size and whether it is read-only; at its end, its tail: the bytes of the
#: pickle and the buffers together, which ``recv`` checks.
_HEAD = struct.Struct("<QI")
_BUF = struct.Struct("<Q?")
_TAIL = struct.Struct("<Q")
#: Bounds of a message's head, beyond which it came apart (a chunk's message holds some
#: hundred buffers and a few MB; a part's records, tens of MB): no read of a size made of
#: garbled bytes.
MAX_BUFFERS = 1 << 20
MAX_BYTES = 1 << 32


class GarbledMessage(CuzkDiagError):
    """A message between processes came apart: its tail is not the one its head announced
    (bytes lost or added on the way)."""


def adopt_parse_counts(acc: Accounting, parsed: Accounting) -> None:
    """Take every parse-side count of ``parsed`` into ``acc`` (``ASSEMBLY_FIELDS`` stay)."""
    for f in dataclasses.fields(parsed):
        if f.name not in ASSEMBLY_FIELDS:
            setattr(acc, f.name, getattr(parsed, f.name))


#: Regular-file inputs of at least this many bytes in all are parsed in a second process when
#: ``jobs`` is left to ``auto_jobs``: below it the child's start (about 0.5 s of imports) is not
#: paid back (10 MB took 2.3 s in one process and 2.7 s in two; 50 MB 7.5 s and 6.7 s).
AUTO_MIN_BYTES = 32 << 20


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def auto_jobs(inputs: Sequence[Any], *, spare: int = 0) -> int:
    """Processes for the inputs when none are asked for: one per ``AUTO_MIN_BYTES`` of
    regular files (2 from ``AUTO_MIN_BYTES`` on), at most one per usable CPU less ``spare``
    (CPUs a thread of the command's own keeps busy: the Parquet writer of ``export
    --lines``); else 1. (One large file is assembled in that many parts, ``split``; several
    files are parsed in one second process; ``export --lines`` parses its chunks in turn in
    them, and ``compare`` gives half of them to each run.)"""
    cpus = usable_cpus() - spare
    if cpus < 2 or not can_parallel(inputs):
        return 1
    total = 0
    for src in inputs:
        try:
            total += os.path.getsize(src if isinstance(src, str) else src.name)
        except OSError:
            return 1
    if total < AUTO_MIN_BYTES:
        return 1
    return max(2, min(cpus, total // AUTO_MIN_BYTES))


def can_parallel(inputs: Sequence[Any]) -> bool:
    """Whether a child process can read the inputs itself: regular files given by path."""
    from cuzk_diag.sources import Source

    return all(
        (isinstance(s, Source) and s.regular) or (isinstance(s, str) and os.path.isfile(s))
        for s in inputs
    )


def send(out: IO[bytes], msg: tuple[Any, ...]) -> None:
    """Write ``msg`` for ``recv``: its pickle (protocol 5) with the buffers of its Arrow arrays,
    numpy arrays and ``pickle.PickleBuffer``s out of band, each written from where it lies (a
    pickle in band copies them into itself, and its reader copies them out again: two copies
    of every column of a line table, on top of the pipe's two)."""
    bufs: list[pickle.PickleBuffer] = []
    data = pickle.dumps(msg, protocol=5, buffer_callback=bufs.append)
    raws = [b.raw() for b in bufs]
    # (Each piece written whole: ``pipes.write_all``.)
    write = out.write
    sizes = b"".join([_BUF.pack(r.nbytes, r.readonly) for r in raws])
    write_all(write, _HEAD.pack(len(data), len(raws)) + sizes)
    write_all(write, data)
    for r in raws:
        write_all(write, r)
    write_all(write, _TAIL.pack(len(data) + sum(r.nbytes for r in raws)))


def recv(inp: IO[bytes]) -> tuple[Any, ...] | None:
    """A message ``send`` wrote; None when the stream ends before all of it; ``GarbledMessage``
    when its tail is not the one its head announced. Each out-of-band
    buffer is read into an object of its own, once: ``bytes`` for a read-only one (an Arrow
    buffer, a ``PickleBuffer`` of bytes: the object the receiver gets), a ``bytearray`` for a
    writable one (a numpy array's), as a pickle in band would give them."""
    head = inp.read(_HEAD.size)
    if len(head) < _HEAD.size:
        return None
    size, count = _HEAD.unpack(head)
    if count > MAX_BUFFERS or size > MAX_BYTES:
        raise GarbledMessage(f"a message between processes came apart (its head: {head.hex()})")
    sizes = inp.read(_BUF.size * count)
    data = inp.read(size)
    if len(sizes) < _BUF.size * count or len(data) < size:
        return None
    buffers: list[bytes | bytearray] = []
    total = size
    for nbytes, readonly in _BUF.iter_unpack(sizes):
        total += nbytes
        if nbytes > MAX_BYTES:
            raise GarbledMessage("a message between processes came apart (a buffer's size)")
        buf = inp.read(nbytes) if readonly else _read_into(inp, bytearray(nbytes))
        if buf is None or len(buf) < nbytes:
            return None
        buffers.append(buf)
    tail = inp.read(_TAIL.size)
    if len(tail) < _TAIL.size:
        return None
    if _TAIL.unpack(tail)[0] != total:
        raise GarbledMessage(
            f"a message between processes came apart ({total:,} bytes, its tail says "
            f"{_TAIL.unpack(tail)[0]:,})"
        )
    return pickle.loads(data, buffers=buffers)  # type: ignore[no-any-return]


def _read_into(inp: IO[bytes], buf: bytearray) -> bytearray | None:
    """``buf`` filled from ``inp``; None when the stream ends first."""
    view, got = memoryview(buf), 0
    while got < len(buf):
        n = inp.readinto(view[got:])  # type: ignore[attr-defined]
        if not n:
            return None
        got += n
    return buf


def start_child(
    module: str, args: Sequence[str], *, stdin: bool = False
) -> subprocess.Popen[bytes]:
    """``python -m module args...`` with its stdout (and with ``stdin``, its stdin) a pipe to
    this process; the child imports this very package, wherever it was imported from."""
    import cuzk_diag
    from cuzk_diag.blas import one_thread
    from cuzk_diag.heap import system_arrow_pool

    env = dict(os.environ)
    one_thread(env)
    system_arrow_pool(env)
    root = os.path.dirname(os.path.dirname(os.path.abspath(cuzk_diag.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        env=env,
    )


def stop_child(proc: subprocess.Popen[bytes]) -> None:
    """Kill a child that still runs (its parent is done with it) and reap it."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def ended_early(proc: subprocess.Popen[bytes], what: str = "the parse process") -> InputError:
    """The error for a child process (``what``) whose output stopped before its last message."""
    return InputError(f"{what} ended early (exit code {proc.wait()})")


def child_setup() -> None:
    """What every child interpreter does first: leave Ctrl-C to its parent, which stops it (a
    terminal's interrupt reaches the whole process group, and a child's traceback would only
    add noise to the parent's message)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _WithoutPandas(importlib.abc.MetaPathFinder):
    """Refuses to find pandas (``without_pandas``)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"{name}: not imported by this process", name=name)


def without_pandas() -> None:
    """Go on without pandas, in a child whose work needs none (the parse, a part's records
    and their tables). pyarrow imports pandas, when it is installed, the first time it makes
    an array of a Python list (to test whether the list is a pandas object), as a part's
    tables are made (``frame.records_to_table``): a third of a second of the child's time.
    With pandas refused, pyarrow takes it as absent. (Nothing when pandas is imported already.)"""
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _WithoutPandas())


def child_main(args: list[str]) -> int:
    """The child: parse the files ``args`` names, or with ``--window`` the window of a file
    that stdin describes (``parse_window_in_child``), and write the messages to stdout."""
    child_setup()
    without_pandas()
    from cuzk_diag.ingest.stream import PacedCollector, parse_parts, parse_window

    out = sys.stdout.buffer
    acc = Accounting()
    try:
        if args[:1] == ["--window"]:
            window = recv(sys.stdin.buffer)
            if window is None:
                return 1
            name, start, stop, carry, source = window
            parser = LineParser(source, acc, full=False)
            parser.resume(carry)
            parts: Any = parse_window(name, start, stop, parser, CHUNK_SIZE)
        else:
            parts = parse_parts(args, acc, full=False)
        with PacedCollector() as collector:
            while True:
                try:
                    idx, part, size, ended = next(parts)
                except StopIteration as stop:
                    end = stop.value  # (a window's cleaning counts and carry)
                    break
                kind = "end" if ended else "events"
                send(out, (kind, idx, part, size, acc if ended else None))
                del part
                collector.chunk()
        send(out, ("done", -1, None, 0, (acc, end)))
    except Exception as exc:  # handed to the parent, which raises it
        send(out, ("error", -1, None, 0, as_sendable(exc)))
    out.flush()
    return 0


def _parsed(
    proc: subprocess.Popen[bytes],
) -> Generator[tuple[int, ParsedChunk, int, Accounting | None], None, Any]:
    """The chunks a parse child sends, as ``parse_in_child`` yields them; returns what its last
    message carries: its accounting and, for a window, the window's end (``parse_window``)."""
    assert proc.stdout is not None
    try:
        while True:
            msg = recv(proc.stdout)
            if msg is None:
                raise ended_early(proc)
            kind, idx, part, size, extra = msg
            if kind == "error":
                raise extra
            if kind == "done":
                return extra
            yield idx, part, size, extra
    finally:
        proc.stdout.close()
        stop_child(proc)


def parse_in_child(
    names: Sequence[str],
) -> Iterator[tuple[int, ParsedChunk, int, Accounting | None]]:
    """(input index, parsed chunk, bytes read, the accounting at the end of an input or
    None) for every chunk, as ``stream.parse_parts`` yields them, parsed in a child process."""
    yield from _parsed(start_child("cuzk_diag.ingest.parallel", ["--", *names]))


def parse_window_in_child(
    name: str, start: int, stop: int | None, carry: Carry, source: int = 0
) -> Generator[tuple[int, ParsedChunk, int, Accounting | None], None, Any]:
    """``stream.parse_window`` in a child process (the lines of input ``source`` of the run):
    its chunks as ``parse_in_child`` yields them; returns (the window's parse accounting, (its
    cleaning counts, the carry at its end))."""
    proc = start_child("cuzk_diag.ingest.parallel", ["--window"], stdin=True)
    assert proc.stdin is not None
    try:
        send(proc.stdin, (name, start, stop, carry, source))
        proc.stdin.close()
    except OSError:
        pass  # the child ended at once: its output says so
    return (yield from _parsed(proc))


class ChildCall:
    """A child interpreter for calls: started at once (its imports run meanwhile), then given
    ``func(*args, **kwargs)`` by ``call`` (``call_in_child``). A child whose result was taken
    with ``keep`` waits for another call (the parts of rotated files, one after another: an
    interpreter's imports are paid once); ``close`` stops it."""

    started = 0  # interpreters started by this process (tests)

    def __init__(self, what: str = "the parse process") -> None:
        self.proc = start_child("cuzk_diag.ingest.parallel", ["--call"], stdin=True)
        self.what = what  # (what its errors call it)
        ChildCall.started += 1
        self.progress: Callable[[Any], None] | None = None
        self.reply: tuple[str, Any] | None = None
        self.reader: threading.Thread | None = None
        self.taken = False  # (the reply was handed over by ``result``)
        self.broken: Exception | None = None  # (why its messages could not be read)
        self.pandas = True  # (False once a call refused it: for good, in that interpreter)

    def call(
        self,
        func: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        progress: Callable[[Any], None] | None = None,
        *,
        needs_pandas: bool = True,
    ) -> ChildCall:
        """Give the child its call (its first, or the next once the last one's result was
        taken with ``keep``); without ``needs_pandas``, the child makes it ``without_pandas``."""
        assert self.reader is None or self.taken, "one call at a time"
        assert self.pandas or not needs_pandas, "pandas was refused in this child"
        assert self.proc.stdin is not None and not self.proc.stdin.closed
        self.progress, self.reply, self.taken, self.broken = progress, None, False, None
        self.pandas = self.pandas and needs_pandas
        try:
            send(self.proc.stdin, (func, args, kwargs, progress is not None, needs_pandas))
            self.proc.stdin.flush()
        except OSError:
            pass  # the child ended at once: result() says so
        # Its messages are read as they come, so that its progress shows while this process
        # does its own work.
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        return self

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while (msg := recv(stdout)) is not None:
                if msg[0] == "progress":
                    if self.progress is not None:
                        try:
                            self.progress(msg[1])
                        except Exception:  # a progress bar must not lose the result
                            self.progress = None
                    continue
                self.reply = msg
                return
        except (OSError, ValueError):
            return  # closed (close() while reading): result() says so
        except Exception as exc:  # (a message that came apart or does not unpickle)
            self.broken = exc

    def running(self) -> bool:
        """Whether the call's messages may still come (its reply is not in)."""
        return self.reader is not None and self.reader.is_alive()

    def result(self, *, keep: bool = False) -> Any:
        """The call's value; its error raised here (``as_sendable``). The child is stopped,
        but with ``keep`` after a value: it then waits for another ``call``."""
        assert self.reader is not None, "result before call"
        assert not self.taken, "one result per call"
        self.reader.join()
        # Handed over, not kept: a caller's progress callback often refers back to what holds
        # this call (a cycle), which would keep the value alive until a full collection.
        reply, self.reply, self.taken, self.progress = self.reply, None, True, None
        if not keep or reply is None or reply[0] == "error":
            self.close()
        if reply is None:
            if self.broken is not None:
                raise InputError(f"{self.what} failed: {self.broken}") from self.broken
            raise ended_early(self.proc, self.what)
        kind, value = reply
        if kind == "error":
            raise value
        return value

    def close(self) -> None:
        """Stop the child (if it still runs, called or not) and reap it."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass  # (its pipe is broken: the child is gone)
        stop_child(self.proc)
        if self.reader is not None:
            self.reader.join(timeout=5)
            if not self.reader.is_alive():
                self.progress = None  # (no message comes any more; see ``result``)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def waiting_child() -> ChildCall:
    """A child interpreter started now, for a call given later (``call_in_child(child=)``):
    its start, about half a second of imports, runs beside this process's work."""
    return ChildCall()


def call_in_child(
    func: Any,
    *args: Any,
    progress: Callable[[Any], None] | None = None,
    child: ChildCall | None = None,
    needs_pandas: bool = True,
    **kwargs: Any,
) -> ChildCall:
    """Start ``func(*args, **kwargs)`` (a module-level function; arguments and value that
    pickle) in a child interpreter (``child``, one ``waiting_child`` started, or a new one);
    ``result()`` waits for it. What the call prints goes to stderr. With ``progress``, the
    call is given a ``progress`` keyword of its own: what it passes (byte counts, or a note the
    caller knows, that pickles) reaches ``progress`` here, from a thread of this process, while
    the call runs. Without ``needs_pandas`` the child runs the call ``without_pandas``."""
    return (child if child is not None else ChildCall()).call(
        func, args, kwargs, progress, needs_pandas=needs_pandas
    )


def as_sendable(exc: Exception) -> Exception:
    """The error a child process sends its parent, which raises it: a ``CuzkDiagError`` as it
    is when it pickles (the CLI turns it into the same message), anything else as an
    ``InputError`` naming it."""
    if isinstance(exc, CuzkDiagError):
        try:
            pickle.loads(pickle.dumps(exc))
            return exc
        except Exception:
            return InputError(str(exc))
    return InputError(f"{type(exc).__name__}: {exc}")


def call_main() -> int:
    """The child of ``call_in_child``: calls read from stdin one after another, each one's
    result written to stdout, until stdin ends."""
    child_setup()
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # (a print in a call must not break the message)
    calls = 0
    while True:
        try:
            msg = recv(sys.stdin.buffer)
        except Exception as exc:  # (a call that does not unpickle: said, and no other read)
            send(out, ("error", as_sendable(exc)))
            out.flush()
            return 1
        if msg is None:
            return 0 if calls else 1  # (stopped before a call: nothing to say)
        calls += 1
        reply: tuple[str, Any]
        try:
            func, args, kwargs, wants_progress, needs_pandas = msg
            if not needs_pandas:
                without_pandas()
            if wants_progress:

                def progress(n: int) -> None:
                    send(out, ("progress", n))
                    out.flush()

                kwargs["progress"] = progress
            reply = ("ok", func(*args, **kwargs))
        except Exception as exc:
            reply = ("error", as_sendable(exc))
        send(out, reply)
        out.flush()
        del msg, reply  # (the call's arguments and value are not held while waiting)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--call"]:
        raise SystemExit(call_main())
    raise SystemExit(child_main(args[1:] if args[:1] == ["--"] else args))
