# The compiled build's view of columnar.py: the loop that makes a group's events, with C-typed
# locals (each event made by its type's ``__new__``, its members set as C struct fields, and
# stored at its place). The pure Python package ignores this file.

from cuzk_diag.event cimport Columns, Event

cimport cython

@cython.locals(n=Py_ssize_t, i=Py_ssize_t, at=Py_ssize_t, one_kind=str, per_row_kinds=list,
               ev=Event)
cdef _made_events(
    list lines, object source, object family, object kinds, Columns cols, list into,
    const long long[::1] places
)
