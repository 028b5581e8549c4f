"""One BLAS thread for the processes of the command.

cuzk-diag does no linear algebra, but importing numpy starts OpenBLAS, which makes a thread
per CPU and keeps them spinning for a while: with two CPUs, ``python -c "import numpy"`` took
0.098 s of CPU against 0.049 s with one thread, and 0.057 s more during the second after the
import (against none), time taken from the cores the parse and the assembly run on. The
command and the processes it starts for ``--jobs`` ask for one thread, unless the user's
environment says otherwise. (A notebook that imports the library keeps its own setting.)
"""

from __future__ import annotations

from collections.abc import MutableMapping

#: The variable OpenBLAS reads when it starts (when numpy is first imported).
VARIABLE = "OPENBLAS_NUM_THREADS"


def one_thread(env: MutableMapping[str, str]) -> None:
    """Set ``env`` (``os.environ`` before numpy is imported, or a child's environment) to one
    BLAS thread, unless it names a number of its own."""
    env.setdefault(VARIABLE, "1")
