# The compiled build's C declaration of ``Block`` (blocks.py): an extension type whose
# attributes are struct fields, read directly by code that knows a value is a Block (an
# annotation ``blk: Block`` in the modules compiled with ``annotation_typing``). The pure
# Python package ignores this file. Each attribute keeps the Python type blocks.py gives it.

cdef class Block:
    cdef public dict fields
    cdef public object stage
    cdef public object closed
    cdef public object call
    cdef public list lines
    cdef public set tids
    cdef public object has_t17
    cdef public object has_t10
    cdef public object seq
    cdef public object confirmed
    cdef public dict extra
    cdef public set seen
    cdef public set tid_seen
    cdef public object multi_circuit
    cdef public object lock_lo
    cdef public object lock_hi
    cdef public dict per_tid
    cdef public list gaps
    cdef public object doubt

# Module constants read only here, as C variables of their type (a ``.get`` on them is then a
# dict lookup, not a method found by name).
cdef dict _FIXED_OFFSET, _OWN_OFFSET, _RENAME, _TID_PRED
