# The compiled build's C declaration of ``Call`` (calls.py), as blocks.pxd declares ``Block``;
# ``_span`` is a C function over line numbers held as C integers (emit.pxd cimports it), and
# ``_ts_ms`` reads a timestamp's characters as C characters (__init__.pxd and timeline.pxd
# cimport it).
cimport cython

from cuzk_diag.ingest.assemble.blocks cimport presized

cdef Py_ssize_t CALL_SLOTS

cdef class Call:
    cdef public object job_id
    cdef public object partition
    cdef public object worker
    cdef public object gpu
    cdef public object start
    cdef public object seq
    cdef public dict fields
    cdef public long kinds
    cdef public object block
    cdef public object ended
    cdef public object closed_out
    cdef public object status
    cdef public list lines
    cdef public object attr_ids
    cdef public object attr_cpu
    cdef public object cpu_weak
    cdef public object tl
    cdef public dict extra
    cdef public object segment
    cdef public object source
    cdef public object emitted
    cdef public dict klines
    cdef public long overtaken

@cython.locals(lo=long, hi=long, n=long)
cpdef tuple _span(list lines)

# The clock helpers placements call for each candidate call, as C functions (cpu.pxd, gpu.pxd,
# lockfit.pxd and prep.pxd cimport them).
cpdef object _t0(Call c)
cpdef object _int0(object v)
cpdef object _call_done(Call c)

@cython.locals(us=long, i=long, d=long, n=long)
cpdef object _ts_ms(str ts)
cdef _note_minute(str minute)
cdef object _epoch_minute(str minute)

# The minute ``_ts_ms`` read last, as C variables (compared and read without a lookup by name).
cdef str _last_minute
cdef long _last_sec
cdef bint _last_ok
cdef long _EXACT_US
