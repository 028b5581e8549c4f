# The compiled build's view of gpu.py: the extension types of blocks.pxd and calls.pxd.
from cuzk_diag.ingest.assemble.blocks cimport Block
from cuzk_diag.ingest.assemble.calls cimport Call
