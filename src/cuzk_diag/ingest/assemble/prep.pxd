# The compiled build's C declaration of ``PrepSearch`` (prep.py): an extension type whose
# attributes are struct fields and whose search recurses as a C method. The cost of an
# assignment and the clock it has reached are C doubles (the floats the pure module computes,
# with the same operations).
cimport cython
from cuzk_diag.ingest.assemble.calls cimport Call

cdef class PrepSearch:
    cdef public list lines
    cdef public list los
    cdef public list his
    cdef public object candidates
    cdef public object margin
    cdef public object n
    cdef public list best
    cdef public dict temp
    cdef public list choice
    cdef public object budget
    cdef public list ends

    cpdef object predict(self, object ev, Call c)
    @cython.locals(extra=double, nxt=double, c=Call)
    cpdef dfs(self, object i, double cost, double last)
