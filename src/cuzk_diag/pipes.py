"""Writes that a signal cannot cut short.

A write to a pipe or terminal larger than it holds waits for its reader; when a signal
interrupts that wait after some bytes went through (the process stopped and continued: Ctrl-Z
and ``fg``, ``kill -STOP``/``-CONT``, a debugger or sampling profiler attaching), the system call
returns how many did. Python's buffered writers pass that short count on, and a caller that
does not look at it (``TextIOWrapper`` does not, nor does code that writes a whole message)
loses the rest: bytes missing from the middle of a report, or a message between processes that
comes apart. Here every write goes on until all of its bytes are written.
"""

from __future__ import annotations

import errno
import io
import sys
import time
from collections.abc import Callable
from typing import Any


def write_all(write: Callable[[memoryview], int | None], data: Any) -> int:
    """Every byte of ``data`` (a bytes-like object) through ``write`` (a stream's ``write``,
    which may take fewer, or none when the stream does not block and is full); returns their
    number. (One call when it takes them all, as it nearly always does.)"""
    n = write(data)
    size = data.nbytes if isinstance(data, memoryview) else len(data)
    if n == size:
        return size
    view = memoryview(data).cast("B")[n or 0 :]
    while view:
        n = write(view)
        if n is None:
            time.sleep(0.001)  # (a non-blocking stream, full: its reader makes room)
            continue
        view = view[n:]
    return size


class WholeWrites(io.FileIO):
    """A file descriptor whose ``write`` writes all it is given (``write_all``)."""

    def write(self, b: Any) -> int:
        return write_all(super().write, b)


def whole_stdio() -> None:
    """Make ``sys.stdout`` and ``sys.stderr`` write all they are given: each the same text
    stream on the same descriptor (its encoding, errors and line buffering), over a
    ``WholeWrites``. For a process of its own (the installed command); a stream without a
    descriptor (a test's capture) stays as it is."""
    if sys.stdout is None:  # (the process started with its stdout closed: ``>&-``)
        sys.stdout = ClosedOutput()
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            fd = stream.fileno()
            settings = {
                "encoding": stream.encoding,
                "errors": stream.errors,
                "line_buffering": stream.line_buffering,
                "write_through": getattr(stream, "write_through", False),
            }
            stream.flush()
        except (AttributeError, OSError, ValueError):
            continue
        raw = WholeWrites(fd, "wb", closefd=False)
        setattr(sys, name, io.TextIOWrapper(io.BufferedWriter(raw), **settings))


class ClosedOutput(io.TextIOBase):
    """The stdout of a process started without one: a write fails as a write to a closed
    descriptor does (``OSError``, which the command reports), where ``None`` failed with an
    ``AttributeError`` in whatever wrote first."""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        raise OSError(errno.EBADF, "stdout is closed")
