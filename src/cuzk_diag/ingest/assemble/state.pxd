# The compiled build's declaration of ``State`` (state.py): an extension type whose attributes
# are C struct fields. The parts of ``Assembler`` derive from it as Python classes; a method
# that annotates ``self: State`` (in a module compiled with ``annotation_typing``) reads them
# directly. Each attribute keeps the Python type ``Assembler.__init__`` gives it.

cdef class State:
    cdef public object acc
    cdef public object info
    cdef public object era
    cdef public list calls
    cdef public list blocks
    cdef public object closed_blocks
    cdef public object awaiting_t7
    cdef public object pending_t9
    cdef public set _kinds_seen
    cdef public list deferred
    cdef public object recent_blocks
    cdef public dict tl
    cdef public object seq
    cdef public object block_seq
    cdef public object segment
    cdef public object timeline_calls
    cdef public dict pickups
    cdef public object clock
    cdef public long clock_back
    cdef public object epoch_ms
    cdef public list pending
    cdef public list out
    cdef public list unattributed
    cdef public set gpus_seen
    cdef public object _anchor
    cdef public object beam
