# The compiled build's C declaration of ``Event`` (event.py): the parse makes events, and the
# assembly (its .pxd files cimport the type) reads their fields as C struct members. The pure
# Python package ignores this file.

cimport cython

# Final: a value the parse makes, never subclassed.
@cython.final
cdef class Event:
    cdef readonly object line
    cdef readonly object source
    cdef readonly object family
    cdef readonly str kind
    cdef readonly dict fields
    cdef readonly bint malformed
    cpdef tuple _values(self)
