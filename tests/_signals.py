"""A child process stopped and continued while it writes (Ctrl-Z and ``fg``, as a signal sees
them), and a stream whose writes come out short as they then do, for the tests of writes a
signal cannot cut short (``pipes``)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import cuzk_diag


class ShortWrites(io.BytesIO):
    """A stream whose ``write`` takes at most ``most`` bytes a call and says so, as a buffered
    pipe does when a signal interrupts its system call midway; with ``idle_every``, every
    such call takes none (None: a full non-blocking stream)."""

    def __init__(self, most: int, idle_every: int = 0) -> None:
        super().__init__()
        self.most, self.idle_every, self.calls = most, idle_every, 0

    def write(self, data: Any) -> int | None:  # type: ignore[override]
        self.calls += 1
        if self.idle_every and self.calls % self.idle_every == 0:
            return None
        return super().write(memoryview(data).cast("B")[: self.most])


def child_env() -> dict[str, str]:
    """The environment for a child that imports this very package."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(cuzk_diag.__file__)))
    return dict(os.environ, PYTHONPATH=os.pathsep.join([root, *sys.path]))


@contextmanager
def stopped_and_continued(
    proc: subprocess.Popen[bytes], *, group: bool = False, limit: float = 120
) -> Iterator[None]:
    """While the block runs, ``proc`` (with ``group``, its process group) is stopped and
    continued every few ms, each stop 1 ms; killed after ``limit`` seconds (a hung child: its
    output then ends), and at the end when it still runs (a read that failed leaves it waiting
    to write); reaped."""
    kill = os.killpg if group else os.kill
    done = threading.Event()

    def stop_and_go() -> None:
        while not done.wait(0.003):
            try:
                kill(proc.pid, signal.SIGSTOP)
                time.sleep(0.001)
                kill(proc.pid, signal.SIGCONT)
            except ProcessLookupError:
                return

    signaller = threading.Thread(target=stop_and_go)
    signaller.start()
    deadline = threading.Timer(limit, proc.kill)
    deadline.start()
    try:
        yield
    finally:
        deadline.cancel()
        done.set()
        signaller.join()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
