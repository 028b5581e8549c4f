# The compiled build's C declaration of ``EraDetector`` (era.py): an extension type whose
# ``observe_timeline`` the assembler (which cimports it) calls as a C method for every TIMELINE
# line. Its instances pickle and copy as the pure class's do (Cython's pickling of the struct).
from cuzk_diag.event cimport Event
cdef class EraDetector:
    cdef public dict markers

    cpdef observe_timeline(self, str kind, Event ev)

cdef dict _TIMELINE_MARKERS
