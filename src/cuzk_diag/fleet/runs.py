"""Split a group of rotated files into runs of the daemon, at its start lines.

A daemon log that lives for a week holds every restart of the daemon in that week; each start
begins a new run (a new TIMELINE clock, possibly another configuration). The boundaries are
found by one pass over the bytes (``bytes.find`` and ``bytes.count``, no per-line Python): a run
begins at a ``cuzk-daemon starting`` line, or at a ``starting cuzk engine`` line that no daemon
start line announced. What comes before the first start of the oldest file is the tail of a run
that began before the logs kept; it is a run of its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from cuzk_diag.sources import input_errors, newlines, open_input

DAEMON_START = b"cuzk-daemon starting"
ENGINE_START = b"starting cuzk engine"
_CHUNK = 8 << 20


@dataclass(frozen=True, slots=True)
class Piece:
    """Lines ``first..last`` (1-based, inclusive; ``last`` None = to the end) of one file."""

    path: str
    first: int
    last: int | None


def start_lines(path: str) -> list[int]:
    """Line numbers (1-based) where a run of the daemon starts in ``path``."""
    out: list[int] = []
    stream, _ = open_input(path)
    with input_errors(path), closing(stream):
        line = 1
        carry = b""
        daemon_pending = False  # a daemon start line whose engine start is still to come
        while True:
            chunk = _read(stream)
            if not chunk:
                break
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            block, carry = data[:cut], data[cut:]
            for pos, marker in _markers(block):
                at = line + block.count(b"\n", 0, pos)
                if marker == DAEMON_START:
                    out.append(at)
                    daemon_pending = True
                elif daemon_pending:
                    daemon_pending = False
                else:
                    out.append(at)
            line += newlines(block)
        if carry and any(m == DAEMON_START or not daemon_pending for _, m in _markers(carry)):
            out.append(line)
    return out


def _read(stream: BinaryIO) -> bytes:
    """The next chunk; a damaged or truncated archive ends the data where it breaks (the
    reader proper reports the damage when the run is read)."""
    try:
        return stream.read(_CHUNK)
    except (EOFError, OSError, ValueError):
        return b""
    except Exception as exc:  # zstandard.ZstdError, without importing zstandard here
        if type(exc).__name__ == "ZstdError":
            return b""
        raise


def _markers(block: bytes) -> list[tuple[int, bytes]]:
    found = []
    for marker in (DAEMON_START, ENGINE_START):
        pos = block.find(marker)
        while pos >= 0:
            found.append((pos, marker))
            pos = block.find(marker, pos + len(marker))
    return sorted(found)


def split_runs(paths: Sequence[str]) -> list[list[Piece]]:
    """The runs in ``paths`` (oldest file first), each as the pieces of files it spans."""
    runs: list[list[Piece]] = [[]]
    for path in paths:
        starts = start_lines(path)
        begin = 1
        for at in starts:
            if at > begin:
                runs[-1].append(Piece(path, begin, at - 1))
            if runs[-1]:
                runs.append([])
            begin = at
        runs[-1].append(Piece(path, begin, None))
    return [r for r in runs if r]


@contextmanager
def materialised(pieces: Sequence[Piece], tmp: str) -> Iterator[tuple[list[str], list[int]]]:
    """Files holding exactly the pieces' lines, and each one's line offset in its original.

    A piece that is a whole file is used as it is; others are copied (decompressed) into
    ``tmp``. The offsets turn line numbers of the copies back into those of the originals.
    """
    names: list[str] = []
    offsets: list[int] = []
    for i, piece in enumerate(pieces):
        if piece.first == 1 and piece.last is None:
            names.append(piece.path)
            offsets.append(0)
            continue
        dest = os.path.join(tmp, f"{i}-{os.path.basename(piece.path)}.part")
        _copy_lines(piece, dest)
        names.append(dest)
        offsets.append(piece.first - 1)
    yield names, offsets


def _copy_lines(piece: Piece, dest: str) -> None:
    stream, _ = open_input(piece.path)
    with input_errors(piece.path), closing(stream), open(dest, "wb") as out:
        line = 1
        carry = b""
        while True:
            chunk = _read(stream)
            if not chunk and not carry:
                break
            data = carry + chunk
            if chunk:
                cut = data.rfind(b"\n") + 1
                block, carry = data[:cut], data[cut:]
            else:
                block, carry = data, b""
            n = newlines(block) + (0 if block.endswith(b"\n") or not block else 1)
            lo, hi = line, line + n - 1  # lines held in block
            line += n
            if piece.last is not None and lo > piece.last:
                break
            if hi < piece.first:
                continue
            start = _nth_line_start(block, piece.first - lo) if piece.first > lo else 0
            if piece.last is not None and piece.last < hi:
                end = _nth_line_start(block, piece.last - lo + 1)
            else:
                end = len(block)
            out.write(block[start:end])
            if not chunk:
                break


def _nth_line_start(block: bytes, n: int) -> int:
    """Offset of the start of the n-th line (0-based) in block."""
    if n <= 0:
        return 0
    ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
    return int(ends[n - 1]) + 1
