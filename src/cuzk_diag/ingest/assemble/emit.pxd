# The compiled build's view of emit.py: the extension types of blocks.pxd, calls.pxd and state.pxd.
from cuzk_diag.ingest.assemble.blocks cimport Block, presized
from cuzk_diag.ingest.assemble.calls cimport Call, _span
from cuzk_diag.ingest.assemble.state cimport State

# Module constants read only here, as C variables of their type (a lookup in them is then a
# direct set or dict operation).
cdef frozenset _RECORD_COLUMNS
cdef dict _NO_FIELDS

cdef Py_ssize_t RECORD_SLOTS
cdef _into_record(dict src, dict rec, dict extra)
cdef bint _owner_settled(State self, Call call)

# ``maybe_emit`` and ``emit`` (``emit`` also ``Emission._emit``) as C functions: cpu.pxd, gpu.pxd,
# identity.pxd, timeline.pxd and the module itself call them directly.
cpdef maybe_emit(State self, Call call)
cpdef open_call(State self, Call call)
cpdef long gpus_named(State self) except -1
cpdef emit(State self, Call call)

# The kinds' bits in ``Call.kinds`` (calls.py's ``KIND_BIT``) this module tests, as C integers.
cdef dict KIND_BIT
cdef long _ASYNC_DEALLOC, _CPU_EVERY
