# The compiled build's view of gpu.py: the extension types of blocks.pxd, calls.pxd and state.pxd,
# and the C functions ``bind_block`` of identity.pxd and ``maybe_emit`` of emit.pxd.
from cuzk_diag.event cimport Event
cimport cython
from cuzk_diag.ingest.assemble.blocks cimport Block, _apply_line, closes, names_gpu
from cuzk_diag.ingest.assemble.calls cimport Call, _int0
from cuzk_diag.ingest.assemble.emit cimport emit, gpus_named, maybe_emit
from cuzk_diag.ingest.assemble.identity cimport bind_block
from cuzk_diag.ingest.assemble.lockfit cimport gpu_free_at, lock_miss
from cuzk_diag.ingest.assemble.state cimport State
from cuzk_diag.ingest.parse.era cimport EraDetector

# The kind table gpu.py imports and its stages, as C variables of their type (read without a
# lookup by name).
cdef frozenset STARTS_BLOCK
cdef long _STAGE_MUTEX_WAIT, _STAGE_PRESTAGE_VRAM, _STAGE_NTT_H
cdef long _BIT_D_A_CACHE, _BIT_NTT_H, _BIT_NTT_MSM_H

# Placing a GPU-region line, as a C function that ``drain`` calls directly.
cpdef gpu_line(State self, Event ev, str kind, object lo, object hi)
# A GPU-region line into its block, as a C function (``gpu_line`` calls it directly).
cdef _put_line(
    State self,
    Block blk,
    Event ev,
    str kind,
    long st,
    object tid,
    bint found,
    double early,
    double late,
)
# Whether a line opens a new block, as a C function (``gpu_line`` calls it directly).
@cython.locals(seen=long)
cdef bint _opens_block(long st, Block blk, Event ev) except -1

# Opening and closing a block as C functions that the module calls directly (``close_block``
# is also the method ``GpuRegion._close_block``, which ``Assembler.flush`` calls).
cpdef Block open_block(State self, Event ev, str kind, object lo, object hi)
cpdef close_block(State self, Block blk)
# Placing a line in every hypothesis of the beam, as a C function
# that ``gpu_line`` calls directly.
@cython.locals(c=double, lc=double, order=long)
cpdef bint extend_beam(
    State self, Event ev, str kind, long st, object tid, object lo, object hi, bint ntt_era
) except -1

# The kinds' bits in ``Call.kinds`` (calls.py's ``KIND_BIT``) this module tests, as C integers.
cdef dict KIND_BIT
cdef long _HOST_REGISTER
