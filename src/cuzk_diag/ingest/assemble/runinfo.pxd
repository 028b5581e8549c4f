# The compiled build's C declarations of runinfo.py: the functions the assembly calls for every
# TIMELINE or tracing line are C functions (timeline.pxd and __init__.pxd cimport them), and the
# tables they read C variables of their type.
from cuzk_diag.event cimport Event
cpdef tuple timeline_key(Event ev)
cpdef note_run_info(object info, Event ev)

cdef dict _INT_SETTINGS
cdef frozenset _KINDS
