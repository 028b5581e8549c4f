# The compiled build's view of timeline.py: the extension types of blocks.pxd, calls.pxd and state.pxd,
# and the C functions of runinfo.pxd, emit.pxd and identity.pxd.
from cuzk_diag.event cimport Event
cimport cython
from cuzk_diag.ingest.assemble.blocks cimport Block, presized
from cuzk_diag.ingest.assemble.calls cimport Call, _ts_ms
from cuzk_diag.ingest.assemble.state cimport State
from cuzk_diag.ingest.assemble.runinfo cimport note_run_info, timeline_key
from cuzk_diag.ingest.assemble.emit cimport emit, maybe_emit, open_call
from cuzk_diag.ingest.assemble.identity cimport confirm_by_prove_start, confirm_by_t7

cdef Py_ssize_t TL_SLOTS

# The TIMELINE and tracing lines' functions as C functions: __init__.pxd cimports them for
# ``feed_many``, which calls them for every such line.
@cython.locals(code=long)
cpdef timeline_line(State self, Event ev, str kind)
@cython.locals(code=long)
cpdef tracing_line(State self, Event ev, str kind)

# ``start_call``, ``end_call`` and ``find_call`` as C functions: the functions above call
# them directly.
cpdef start_call(State self, str job, object part, object worker, object start, Event ev)
cpdef end_call(State self, str job, object part, Event ev)
cpdef Call find_call(State self, str job, object part, object worker)
cpdef overtake(State self, object worker)

# The kind tables as C variables of their type (a lookup in them is a direct dict operation).
cdef dict _TL_KINDS
cdef long _SYNTH_START, _SYNTH_END, _QUEUE, _PICKUP, _START, _END
cdef dict _TRACING_KINDS
cdef long _ENGINE_START, _PROVE_START, _PROVE_TIME, _FINALIZER, _FAILED

# The kinds' bits in ``Call.kinds`` (calls.py's ``KIND_BIT``) this module tests, as C integers.
cdef dict KIND_BIT
cdef long _PREP_MSM, _B_G2_MSM
