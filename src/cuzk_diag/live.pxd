# The compiled build's view of live.py: the text of a partition event and the stage values of
# records as C functions with C-typed locals (a dict's ``get``, a list's ``append`` and a
# tuple's item are C calls, not calls of methods found by name). The pure Python package
# ignores this file.
cimport cython

@cython.locals(keys=tuple, names=tuple, small=tuple, out=list, i=Py_ssize_t)
cpdef str partition_text(dict record, str time, bint revised)

@cython.locals(names=tuple, columns=list, waits=list, r=dict, col=list, i=Py_ssize_t)
cpdef tuple stage_values(list records)
