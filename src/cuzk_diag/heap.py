"""The C heap of an ingest and of a long analysis: where glibc takes blocks from, how much free
space it keeps, and when it hands free pages back.

numpy's arrays, pandas' columns and the Python objects an unpickled message holds live in the C
library's heap (Arrow's columns in its own pool). An ingest frees and makes again blocks of a
chunk's size (``for_ingest`` keeps their pages); an analysis's steps leave holes that glibc keeps
unless told otherwise (``hand_back``). These functions do nothing where
the C library is not glibc (no ``mallopt``/``malloc_trim``).
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from collections.abc import MutableMapping
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: glibc's ``mallopt`` parameters: the size from which a block is mapped on its own, the free
#: space kept at the heap's top when it grows or shrinks (glibc's default: 128 KiB), and the
#: number of heaps (arenas) the threads may use.
_M_MMAP_THRESHOLD = -3
_M_TOP_PAD = -2
_M_ARENA_MAX = -8
_DEFAULT_TOP_PAD = 128 << 10
#: During an ingest (``for_ingest``): blocks below this size come from the heap, and this much
#: free space stays at its top.
CHUNK_BLOCKS = 32 << 20
CHUNK_PAD = 16 << 20


#: The variable pyarrow reads when it is first imported: the allocator of its buffers.
ARROW_POOL = "ARROW_DEFAULT_MEMORY_POOL"


def system_arrow_pool(env: MutableMapping[str, str]) -> None:
    """Set ``env`` (``os.environ`` before pyarrow is imported, or a child's environment) so
    that Arrow's buffers come from the C heap (``system``), unless it names a pool of its own.

    Arrow's own allocator (mimalloc) keeps the pages of the buffers it freed for its own
    reuse, and the C heap, where numpy's and Python's blocks live, cannot reuse them (nor it
    the heap's): an ingest frees a chunk's Arrow columns as the next chunk's numpy arrays are
    made, the frame frees the record tables' columns as it makes its numpy ones. On the 1 GB
    log with ``--jobs 2`` the ingest's step peaked at 346 MiB instead of 384-398, the frame's
    at 388 instead of 430 (``bench/memory_steps.py``); on the 250 MB log ``export`` took 13 %
    less time, ``analyze`` and ``export --lines`` as much (``bench/run.py``, four rounds)."""
    env.setdefault(ARROW_POOL, "system")


def _libc(name: str) -> Any:
    """The C library's function ``name``, or None."""
    try:
        return getattr(_c_library(), name)
    except (OSError, AttributeError, TypeError):  # (TypeError: no C library by that name)
        return None


@cache
def _c_library() -> ctypes.CDLL:
    """The process's C library (loaded once: the frame's step asks for it a dozen times)."""
    return ctypes.CDLL(None)


def for_ingest() -> None:
    """For an ingest: glibc takes every block below 32 MiB from its heap (``CHUNK_BLOCKS``),
    keeps 16 MiB of free space at the heap's top (``CHUNK_PAD``) until the ingest's lines
    are read (``after_ingest``), and has one heap for all threads.

    Each 4 MiB chunk makes arrays and texts of its size (the newline mask, the text without
    newlines, the scans' buffers) and frees them before the next chunk. By default glibc gives
    the heap's top back to the system as soon as that much of it is free, so every chunk's
    pages were faulted in, and zeroed, anew: on the 250 MB log 91,000 minor page faults in a
    one-process ingest, 31,000 with the pad (the whole command's system time 0.55 s against
    0.48, five rounds; the 1 GB log's export, 1.05-1.17 s against 0.79-0.84). A block the size
    of a chunk would otherwise also be mapped on its own until glibc raised its threshold past
    the first one freed.

    One heap (``M_ARENA_MAX``): the threads that take a child's messages (``--jobs``) or write a
    file would otherwise allocate in heaps of their own, whose top ``malloc_trim`` does not give
    back and which keep the pad too (1 GB log, ``--jobs 2``: the frame's step held 17 MiB more
    with the pad; with one heap as much as without it, and the ingest's step 40-45 MiB less).
    The threads allocate while they hold the interpreter's lock, so they seldom wait on the
    heap's."""
    mallopt = _libc("mallopt")
    if mallopt is not None:
        mallopt(_M_ARENA_MAX, 1)
        mallopt(_M_MMAP_THRESHOLD, CHUNK_BLOCKS)
        mallopt(_M_TOP_PAD, CHUNK_PAD)


def after_ingest() -> None:
    """The ingest is over (its lines are read: ``pipeline.iter_record_batches``): the free
    space at the heap's top goes back to glibc's default, for every command that analyses a
    run (``for_ingest`` kept 16 MiB there for the chunks' sake). The ingest's mapping
    threshold stays: the
    analysis's arrays of one value per call come from the heap too, where it reuses the pages
    of those it freed. (Each mapped on its own from 256 KiB, as before, they cost the 250 MB
    log's analysis 0.1 s of page faults, 0.30-0.33 s against 0.19-0.22, and spared the 1 GB
    log's peak 0-3 MiB, in the spread of its rounds.)"""
    mallopt = _libc("mallopt")
    if mallopt is not None:
        mallopt(_M_TOP_PAD, _DEFAULT_TOP_PAD)


def hand_back() -> None:
    """Return the free pages inside the heap to the system (``malloc_trim(0)``), between the
    steps of an analysis: after the ingest, whose children's records come as Python objects,
    and after the frame, which frees the record tables. On the 1 GB log with ``--jobs 2`` the
    frame's step peaked at 566 MiB and the report's at 577, the heap's freed pages staying in
    the process from step to step. (It returns the free space ``for_ingest`` keeps at the
    heap's top too: ``malloc_trim`` keeps only what its argument asks for.)

    Arrow's allocator keeps the pages of the buffers it freed too (its own pool, which the C
    heap's blocks cannot reuse, nor it theirs): they go back as well, once pyarrow is loaded
    (``MemoryPool.release_unused``). Both take well under a millisecond, so the analysis hands
    back between its steps (``analysis.analyze_run``, ``facts.compute_facts``,
    ``rules.run_rules``): on the 1 GB log each step's temporaries (an Arrow hash of the job
    ids, a float per call for each GPU) were otherwise kept beside the next one's."""
    trim = _libc("malloc_trim")
    if trim is not None:
        trim(0)
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()


def zeroed(n: int) -> np.ndarray:
    """``n`` booleans, all False, in an anonymous mapping of their own: its pages take no
    memory until they are written (reading them reads the kernel's one zero page). For the
    masks of the frame's columns without a missing value (``frame.frame_of_columns``), which a
    column needs but seldom writes: on the 1 GB log, 39 columns' masks, 13 MiB. A writable
    array like any other; the mapping goes when the array does."""
    import numpy as np

    if n <= 0 or not hasattr(mmap, "MAP_PRIVATE"):  # (Windows has no such mapping)
        return np.zeros(max(n, 0), dtype=bool)
    # (Private: a shared anonymous mapping is the kernel's shared memory, whose pages become
    # resident when read.)
    return np.frombuffer(mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE), dtype=bool)
