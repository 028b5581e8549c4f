"""The command runs numpy with one BLAS thread, in its own process and in its children."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cuzk_diag.blas import VARIABLE, one_thread
from cuzk_diag.ingest import parallel

_THREADS = "import os, {}\nprint(len(os.listdir('/proc/self/task')))\n"


def _threads(modules: str, env: dict[str, str]) -> int:
    run = subprocess.run(
        [sys.executable, "-c", _THREADS.format(modules)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return int(run.stdout)


def test_the_command_starts_numpy_with_one_blas_thread() -> None:
    """Importing the command before numpy sets the variable first: its process has as many
    threads as one started with one BLAS thread, and fewer than one that asks for two."""
    if not os.path.isdir("/proc/self/task") or (os.cpu_count() or 1) < 2:
        return  # (no threads to count, or OpenBLAS starts none of its own)
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    command = _threads("cuzk_diag.cli, numpy", env)
    assert command == _threads("cuzk_diag.cli, numpy", {**env, VARIABLE: "1"})
    assert command < _threads("cuzk_diag.cli, numpy", {**env, VARIABLE: "2"})


def test_a_number_of_the_users_own_is_kept() -> None:
    env = {VARIABLE: "4"}
    one_thread(env)
    assert env == {VARIABLE: "4"}
    env = {}
    one_thread(env)
    assert env == {VARIABLE: "1"}


def test_a_child_of_jobs_gets_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, str] = {}

    class _Popen:
        def __init__(self, args: list[str], **kw: object) -> None:
            seen.update(kw["env"])  # type: ignore[arg-type]

    monkeypatch.delenv(VARIABLE, raising=False)
    monkeypatch.setattr(parallel.subprocess, "Popen", _Popen)
    parallel.start_child("cuzk_diag.ingest.parallel", [])
    assert seen[VARIABLE] == "1"
