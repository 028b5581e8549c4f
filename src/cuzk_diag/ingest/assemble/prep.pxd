# The compiled build's C declaration of ``PrepSearch`` (prep.py): an extension type whose
# attributes are struct fields and whose search recurses as a C method. The cost of an
# assignment and the clock it has reached are C doubles (the floats the pure module computes,
# with the same operations).
from cuzk_diag.event cimport Event
cimport cython
from cuzk_diag.ingest.assemble.calls cimport Call, _int0
from cuzk_diag.ingest.assemble.state cimport State
from cuzk_diag.ingest.assemble.cpu cimport cpu_line, prep_print_ms, put_cpu
from cuzk_diag.ingest.assemble.identity cimport _bracket_miss

cdef class PrepSearch:
    cdef public list lines
    cdef public list los
    cdef public list his
    cdef public State state
    cdef public object margin
    cdef public object n
    cdef public list best
    cdef public dict temp
    cdef public list choice
    cdef public object budget
    cdef public list ends

    cpdef object predict(self, str kind, object value, Call c)
    @cython.locals(extra=double, nxt=double, c=Call, ev=Event)
    cpdef dfs(self, object i, double cost, double last)
    @cython.locals(best=list, choice=list, key=tuple)
    cdef _leaf(self, double cost)
    cdef bint _enter(self, double cost) except -1
    @cython.locals(c=Call, cost=double, choice=list, ev=Event)
    cpdef settle_one(self, list cs)

cdef dict _NO_TEMP
# How far a predicted print time misses its bracket, as a C function (the search calls it).
cdef object _miss(object p, object lo, object hi, object last)

# The joint placement and the candidates of a line as C functions: ``drain`` (__init__.pxd) and
# the search call them directly.
@cython.locals(search=PrepSearch, best=list, n=Py_ssize_t)
cpdef solve_prep_lines(State self, list indexed, list anchors, object lo, object hi)
@cython.locals(c=Call, out=list, t=dict, bit=long)
cpdef list prep_candidates(State self, Event ev, dict temp)

# The kinds' bits in ``Call.kinds`` (calls.py's ``KIND_BIT``) this module tests, as C integers.
cdef dict KIND_BIT
cdef long _SPLIT_VECTORS, _PREP_MSM, _EPILOGUE
