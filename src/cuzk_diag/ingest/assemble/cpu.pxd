# The compiled build's view of cpu.py: the extension types of blocks.pxd, calls.pxd and state.pxd,
# and the C function ``_first_started`` of identity.pxd.
from cuzk_diag.ingest.assemble.blocks cimport Block, _copy_fields
from cuzk_diag.ingest.assemble.calls cimport Call
from cuzk_diag.ingest.assemble.state cimport State
from cuzk_diag.ingest.assemble.identity cimport _first_started
from cuzk_diag.ingest.assemble.emit cimport maybe_emit

# ``put_cpu`` (``CpuSide._put_cpu``) as a C function: __init__.pxd cimports it.
cpdef put_cpu(State self, Call call, object ev, str kind)
