# The compiled build's view of cpu.py: the extension types of blocks.pxd, calls.pxd and state.pxd,
# and its own C function ``_first_started``.
cimport cython
from cuzk_diag.ingest.assemble.blocks cimport Block, _copy_fields
from cuzk_diag.ingest.assemble.calls cimport Call
from cuzk_diag.ingest.assemble.state cimport State

@cython.locals(first=Call, c=Call)
cdef Call _first_started(list cands)
