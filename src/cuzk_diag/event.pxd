# The compiled build's C declaration of ``Event`` (event.py): the parse makes events, and the
# assembly (its .pxd files cimport the type) reads their members as C struct members and their
# fields by ``get``/``has``, C methods. The pure Python package ignores this file.

cimport cython

# The columns a group's events read their fields from.
@cython.final
cdef class Columns:
    cdef readonly tuple names
    cdef readonly list cols
    cdef readonly dict template
    cdef readonly list absent
    @cython.locals(f=dict, j=Py_ssize_t, c=object)
    cpdef dict row_fields(self, Py_ssize_t row)
    @cython.locals(names=tuple, absent=list, j=Py_ssize_t)
    cpdef Py_ssize_t at(self, str key)

# Final: a value the parse makes, never subclassed.
@cython.final
cdef class Event:
    cdef readonly object line
    cdef readonly object source
    cdef readonly object family
    cdef readonly str kind
    cdef public dict _fields
    cdef public Columns _cols
    cdef public Py_ssize_t _row
    cdef readonly bint malformed
    cpdef tuple _values(self)
    cpdef dict field_dict(self)
    @cython.locals(f=dict, cols=Columns, j=Py_ssize_t, c=object, value=object)
    cpdef object get(self, str key)
    @cython.locals(f=dict, cols=Columns)
    cpdef bint has(self, str key)
    @cython.locals(f=dict, cols=Columns, names=tuple, values=list, row=Py_ssize_t,
                   j=Py_ssize_t, k=str, c=object)
    cpdef copy_fields(self, dict into, frozenset drop, dict ren)
