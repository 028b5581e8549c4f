# The compiled build's view of frame.py: ``_fill``'s loop over the records' items with C-typed
# positions and values, and the matrices it writes as typed memoryviews. The pure Python
# package ignores this file.
cimport cython

cdef Py_ssize_t _POSITIONS

@cython.locals(i=Py_ssize_t, c=Py_ssize_t, j=Py_ssize_t, x=cython.longlong, p=Py_ssize_t,
               keys=list, at=list)
cpdef bint _fill(list rows, dict slots, long long[:, ::1] ints, unsigned char[:, ::1] seen,
                 list objs, unsigned char[::1] has, list fits)
