# The compiled build's view of lockfit.py: the extension types of blocks.pxd, calls.pxd and
# state.pxd; its two functions as C functions that gpu.pxd and identity.pxd cimport.
from cuzk_diag.ingest.assemble.blocks cimport Block
from cuzk_diag.ingest.assemble.calls cimport Call, _int0
from cuzk_diag.ingest.assemble.state cimport State

cpdef tuple gpu_free_at(State self, object gpu, double before, Block exclude)
cpdef double lock_miss(State self, Block blk, Call c) except? -1
