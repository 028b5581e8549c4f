"""What the command sets up before anything imports numpy (``cli`` imports this first).

One BLAS thread (``cuzk_diag.blas``): the command does no linear algebra. Arrow's buffers
from the C heap (``heap.system_arrow_pool``), where numpy's are, so each reuses what the other
freed.
"""

from __future__ import annotations

import os

from cuzk_diag.blas import one_thread
from cuzk_diag.heap import system_arrow_pool

one_thread(os.environ)
system_arrow_pool(os.environ)
