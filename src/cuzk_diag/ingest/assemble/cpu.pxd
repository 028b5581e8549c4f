# The compiled build's view of cpu.py: the extension types of blocks.pxd, calls.pxd and state.pxd,
# and the C function ``_first_started`` of identity.pxd.
from cuzk_diag.event cimport Event
from cuzk_diag.ingest.assemble.blocks cimport Block, _copy_fields
from cuzk_diag.ingest.assemble.calls cimport Call, _call_done, _int0, _t0
from cuzk_diag.ingest.assemble.state cimport State
from cuzk_diag.ingest.assemble.identity cimport _first_started
from cuzk_diag.ingest.assemble.emit cimport maybe_emit, open_call

# ``put_cpu`` and ``cpu_line`` as C functions (``put_cpu`` is also the method
# ``CpuSide._put_cpu``):
# __init__.pxd and prep.pxd cimport them.
cpdef put_cpu(State self, Call call, Event ev, str kind)
cpdef cpu_line(State self, Event ev, str kind, object lo, object hi)
# The T2/T3 print-time model, as a C function (prep.pxd cimports it).
cpdef double prep_print_ms(Call c, str kind, double v, object prep)
cdef bint _has_end(Call c)

# The kinds' bits in ``Call.kinds`` (calls.py's ``KIND_BIT``) this module tests, as C integers.
cdef dict KIND_BIT
cdef long _SPLIT_VECTORS, _PREP_MSM, _B_G2_MSM, _ASYNC_DEALLOC, _EPILOGUE
