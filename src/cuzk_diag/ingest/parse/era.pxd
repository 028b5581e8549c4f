# The compiled build's C declaration of ``EraDetector`` (era.py): an extension type whose
# ``observe_timeline`` the assembler (which cimports it) calls as a C method for every TIMELINE
# line. Its instances pickle and copy as the pure class's do (Cython's pickling of the struct).
cdef class EraDetector:
    cdef public dict markers

    cpdef observe_timeline(self, str kind, dict f, object ev)

cdef dict _TIMELINE_MARKERS
