# The compiled build's C declaration of ``Block`` (blocks.py): an extension type whose
# attributes are struct fields, read directly by code that knows a value is a Block (an
# annotation ``blk: Block`` in the modules compiled with ``annotation_typing``), and whose
# methods, like the module's functions, are C functions that such code calls directly (the
# modules that call them cimport them in their own .pxd). The pure Python package ignores this
# file. Each attribute keeps the Python type blocks.py gives it (the stage, a small int, as a C
# long, the flags as C booleans and the lock interval, always floats, as C doubles: read and
# compared without an object); an argument typed ``object`` here may be any int (a value read
# from the log), which no C integer type would hold.
from cuzk_diag.event cimport Event

cimport cython

cdef class Block:
    cdef public dict fields
    cdef public long stage
    cdef public bint closed
    cdef public object call
    cdef public list lines
    cdef public set tids
    cdef public bint has_t17
    cdef public bint has_t10
    cdef public object seq
    cdef public bint confirmed
    cdef public dict extra
    cdef public long seen
    cdef public set tid_seen
    cdef public bint multi_circuit
    cdef public double lock_lo
    cdef public double lock_hi
    cdef public dict per_tid
    cdef public list gaps
    cdef public bint doubt

    cpdef bint accepts(self, str kind, object tid, bint ntt_era, bint lenient=*)
    @cython.locals(seen=long, after=long)
    cdef bint _takes(self, str kind, long st, object tid, bint ntt_era, bint lenient) except -1
    @cython.locals(found=bint, early=double, late=double)
    @cython.locals(fixed=tuple, own=tuple, key=str, latency=double, at=double)
    cdef (bint, double, double) _offset(self, long st, Event ev)
    # (cost, new_lo, new_hi) as a C struct: no tuple is made for the callers that unpack it.
    @cython.locals(found=bint, early=double, late=double)
    cpdef (double, double, double) lock_cost(self, long st, Event ev, object lo, object hi)
    @cython.locals(
        old_lo=double, old_hi=double, new_lo=double, new_hi=double, t=double, miss=double,
        bound=double
    )
    cdef (double, double, double) _cost_at(
        self, bint found, double early, double late, object lo, object hi
    )
    @cython.locals(held=tuple, copy=tuple)
    cpdef tuple snapshot(self)
    cpdef restore(self, tuple snap)
    cdef own_to_place(self, long stage, object tid)
    @cython.locals(per_tid=dict)
    cdef _own(self, bint per_thread)
    cpdef view(self, tuple snap)
    cpdef tuple take(self)
    @cython.locals(seen=long, need=long, missing=list)
    cpdef list missing_stages(self, bint ntt_era)
    cpdef bint closes_with(self, str kind, object tid)
    cpdef double relation_cost(self, str kind, long st)

# CPython's dict with room for n keys, private but exported by every version this package
# runs on (3.11 to 3.14; Cython's own dict displays use it); a later version gets an empty
# dict, which grows as it fills.
cdef extern from *:
    """
    #if PY_VERSION_HEX < 0x030F0000
    #define cuzk_dict_presized(n) _PyDict_NewPresized(n)
    #else
    #define cuzk_dict_presized(n) PyDict_New()
    #endif
    """
    dict cuzk_dict_presized(Py_ssize_t n)

cdef bint COMPILED
cdef Py_ssize_t BLOCK_SLOTS
cpdef dict presized(Py_ssize_t n)

# Module constants read only here, as C variables of their type (a ``.get`` on them is then a
# dict lookup, not a method found by name).
cdef dict _FIXED_OFFSET, _OWN_OFFSET, _RENAME, _TID_PRED, _AFTER
cdef tuple _NEED, _NEED_NTT, _NEED_MAIN, _FIXED_AT, _OWN_AT, _AFTER_BIT_AT, _RENAME_AT
cdef long _NEED_MASK, _NEED_NTT_MASK, _NEED_MAIN_MASK
cdef frozenset _TID_KINDS, _TID_FIELDS, _DROP, _RELATED, _THREAD_LINES
cdef long _STAGE_MUTEX_WAIT, _STAGE_PRESTAGE_VRAM, _STAGE_POOL_THRESHOLD, _STAGE_D_A_CACHE
cdef long _STAGE_NTT_H, _STAGE_NTT_MSM_H, _STAGE_BARRIER_WAIT, _STAGE_BATCH_ADD
cdef long _STAGE_TAIL_MSM, _STAGE_MUTEX_HELD
cdef long _BIT_D_A_CACHE, _BIT_NTT_H, _BIT_NTT_MSM_H, _BIT_BARRIER_WAIT, _BIT_MUTEX_HELD
cdef double _TOL_MS_F

cdef object _iv(dict d, str k)
cdef object _ive(Event ev, str k)
# Whether a stage's line can end a block, or names its GPU (gpu.pxd cimports them).
cpdef bint closes(long st)
cpdef bint names_gpu(long st)
cdef object _ivf(dict d, str k)

cpdef _copy_fields(dict into, Event ev, str kind)

cpdef _apply_gpu(Block blk, Event ev, str kind, object tid)
@cython.locals(per=dict)
cpdef _apply_line(Block blk, Event ev, str kind, long stage, object tid)
