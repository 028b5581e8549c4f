# The compiled build's view of gpu.py: the extension types of blocks.pxd, calls.pxd and state.pxd.
cimport cython
from cuzk_diag.ingest.assemble.blocks cimport Block, _apply_line
from cuzk_diag.ingest.assemble.calls cimport Call
from cuzk_diag.ingest.assemble.state cimport State

# The kind tables gpu.py imports, as C variables of their type (read without a lookup by name).
cdef frozenset CLOSING, NAMES_GPU, STARTS_BLOCK

# A GPU-region line into its block, as a C function (``_gpu_line`` calls it directly).
cdef _put_line(
    State self,
    Block blk,
    object ev,
    dict f,
    str kind,
    object tid,
    bint found,
    double early,
    double late,
)
# Whether a line opens a new block, as a C function (``_gpu_line`` calls it directly).
@cython.locals(st=long)
cdef bint _opens_block(str kind, Block blk, object ev) except -1
