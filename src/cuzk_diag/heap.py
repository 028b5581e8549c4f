"""The C heap of a long analysis: how glibc maps large blocks, and when it hands free pages back.

numpy's arrays, pandas' columns and the Python objects an unpickled message holds live in the C
library's heap (Arrow's columns in its own pool). glibc keeps the pages of freed blocks unless
told otherwise, so the holes a step leaves stay in the process's memory for the next steps.
These functions do nothing where the C library is not glibc (no ``mallopt``/``malloc_trim``).
"""

from __future__ import annotations

import ctypes
from typing import Any

#: glibc's ``mallopt`` parameter: the size from which a block is mapped on its own.
_M_MMAP_THRESHOLD = -3


def _libc(name: str) -> Any:
    """The C library's function ``name``, or None."""
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError, TypeError):  # (TypeError: no C library by that name)
        return None


def map_large_blocks() -> None:
    """From here to the end of the process (the analysis of the loaded run, then its report),
    glibc maps each block of 256 KiB or more on its own and unmaps it once freed. By default it
    raises that size to the largest block freed so far (up to 32 MiB) and keeps the freed
    blocks in its heap, where the analysis's arrays of one value per call, made and freed one
    after another, left holes that the next ones did not fit (1 GB log: the analysis peaked at
    483 MiB and the report at 499; so, at 467 and 472). Not during the ingest, whose arrays of a
    chunk would then be mapped again for every chunk (about 10 % more time)."""
    mallopt = _libc("mallopt")
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, 256 << 10)


def hand_back() -> None:
    """Return the free pages inside the heap to the system (``malloc_trim(0)``), between the
    steps of an analysis: after the ingest, whose children's records come as Python objects,
    and after the frame, which frees the record tables. On the 1 GB log with ``--jobs 2`` the
    frame's step peaked at 566 MiB and the report's at 577, the heap's freed pages staying in
    the process from step to step."""
    trim = _libc("malloc_trim")
    if trim is not None:
        trim(0)
