# The compiled build's view of emit.py: the extension types of blocks.pxd, calls.pxd and state.pxd.
from cuzk_diag.ingest.assemble.blocks cimport Block
from cuzk_diag.ingest.assemble.calls cimport Call, _span
from cuzk_diag.ingest.assemble.state cimport State
