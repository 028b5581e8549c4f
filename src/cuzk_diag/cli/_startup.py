"""What the command sets up before anything imports numpy (``cli`` imports this first).

One BLAS thread (``cuzk_diag.blas``): the command does no linear algebra.
"""

from __future__ import annotations

import os

from cuzk_diag.blas import one_thread

one_thread(os.environ)
