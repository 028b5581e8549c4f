# The compiled build's view of __init__.py: the extension types of event.pxd, blocks.pxd, calls.pxd,
# state.pxd and era.pxd, the C functions of runinfo.pxd, cpu.pxd, gpu.pxd, timeline.pxd and prep.pxd.
from cuzk_diag.event cimport Event
from cuzk_diag.ingest.assemble.blocks cimport Block
from cuzk_diag.ingest.assemble.calls cimport Call, _ts_ms
from cuzk_diag.ingest.assemble.state cimport State
from cuzk_diag.ingest.assemble.runinfo cimport note_run_info
from cuzk_diag.ingest.assemble.timeline cimport timeline_line, tracing_line
from cuzk_diag.ingest.assemble.prep cimport solve_prep_lines
from cuzk_diag.ingest.assemble.cpu cimport cpu_line
from cuzk_diag.ingest.assemble.gpu cimport gpu_line
from cuzk_diag.ingest.parse.era cimport EraDetector
cdef frozenset _AFTER_PREP

# ``drain`` (``Assembler._drain``) as a C function: ``feed_many`` calls it directly.
cpdef drain(State self, object hi)
