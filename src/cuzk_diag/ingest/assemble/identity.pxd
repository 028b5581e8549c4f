# The compiled build's view of identity.py: the extension types of blocks.pxd, calls.pxd and
# state.pxd, and its own C function ``_first_started`` (cpu.pxd cimports it).
from cuzk_diag.event cimport Event
cimport cython
from cuzk_diag.ingest.assemble.blocks cimport Block
from cuzk_diag.ingest.assemble.calls cimport Call
from cuzk_diag.ingest.assemble.emit cimport maybe_emit, open_call
from cuzk_diag.ingest.assemble.lockfit cimport lock_miss
from cuzk_diag.ingest.assemble.state cimport State

@cython.locals(first=Call, c=Call)
cpdef Call _first_started(object cands)

# ``bind_block`` as a C function: gpu.pxd cimports it.
cpdef bind_block(State self, Block blk, Event ev, str kind, object lo, object hi)

# How far a time misses a clock bracket, as a C function (prep.pxd cimports it).
cpdef object _bracket_miss(object p, object lo, object hi)

# The same-thread confirmations as C functions: timeline.pxd cimports them.
cpdef confirm_by_prove_start(State self, Event ev)
cpdef confirm_by_t7(State self, Call call, object gpu_ms)

# The kinds' bits in ``Call.kinds`` (calls.py's ``KIND_BIT``) this module tests, as C integers.
cdef dict KIND_BIT
cdef long _SPLIT_VECTORS, _PREP_MSM, _B_G2_MSM, _EPILOGUE
