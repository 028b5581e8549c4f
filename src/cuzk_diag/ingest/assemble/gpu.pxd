# The compiled build's view of gpu.py: the extension types of blocks.pxd, calls.pxd and state.pxd.
from cuzk_diag.ingest.assemble.blocks cimport Block, _apply_gpu
from cuzk_diag.ingest.assemble.calls cimport Call
from cuzk_diag.ingest.assemble.state cimport State
