# The compiled build's view of columnar.py: the loop that fills the fields dicts of wide rows
# with C-typed locals (a list read and a dict store per value, no generic calls). The pure
# Python package ignores this file.

cimport cython

@cython.locals(i=Py_ssize_t, d=dict)
cdef _fill(list out, str key, list col)
