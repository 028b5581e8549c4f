# The compiled build's view of timeline.py: the extension types of blocks.pxd, calls.pxd and state.pxd,
# and the C functions of runinfo.pxd and emit.pxd.
from cuzk_diag.ingest.assemble.blocks cimport Block
from cuzk_diag.ingest.assemble.calls cimport Call, _ts_ms
from cuzk_diag.ingest.assemble.state cimport State
from cuzk_diag.ingest.assemble.runinfo cimport note_run_info, timeline_key
from cuzk_diag.ingest.assemble.emit cimport maybe_emit
