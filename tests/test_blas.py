"""The command runs numpy with one BLAS thread and takes Arrow's buffers from the C heap, in
its own process and in its children (``cuzk_diag.blas``, ``heap.system_arrow_pool``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cuzk_diag.blas import VARIABLE, one_thread
from cuzk_diag.heap import ARROW_POOL, system_arrow_pool
from cuzk_diag.ingest import parallel

_THREADS = "import os, {}\nprint(len(os.listdir('/proc/self/task')))\n"
_POOL = "import {}\nimport pyarrow as pa\nprint(pa.default_memory_pool().backend_name)\n"


def _printed(script: str, modules: str, env: dict[str, str]) -> str:
    """What a Python child running ``script`` (its modules ``modules``) prints, with ``env``."""
    run = subprocess.run(
        [sys.executable, "-c", script.format(modules)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return run.stdout.strip()


def _threads(modules: str, env: dict[str, str]) -> int:
    return int(_printed(_THREADS, modules, env))


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


def test_a_child_of_jobs_gets_one_blas_thread_and_the_c_heaps_arrow_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, str] = {}

    class _Popen:
        def __init__(self, args: list[str], **kw: object) -> None:
            seen.update(kw["env"])  # type: ignore[arg-type]

    monkeypatch.delenv(VARIABLE, raising=False)
    monkeypatch.delenv(ARROW_POOL, raising=False)
    monkeypatch.setattr(parallel.subprocess, "Popen", _Popen)
    parallel.start_child("cuzk_diag.ingest.parallel", [])
    assert seen[VARIABLE] == "1" and seen[ARROW_POOL] == "system"


def test_the_command_takes_arrows_buffers_from_the_c_heap() -> None:
    """Importing the command before pyarrow sets Arrow's pool to the C library's allocator,
    unless the environment names one; a notebook that imports the library keeps Arrow's."""
    env = {k: v for k, v in os.environ.items() if k != ARROW_POOL}
    assert _printed(_POOL, "cuzk_diag.cli", env) == "system"
    # (the library alone: Arrow's default)
    assert _printed(_POOL, "cuzk_diag.analysis", env) == _printed(_POOL, "os", env)
    assert _printed(_POOL, "cuzk_diag.cli", {**env, ARROW_POOL: "mimalloc"}) == "mimalloc"


def test_a_pool_of_the_users_own_is_kept() -> None:
    env = {ARROW_POOL: "jemalloc"}
    system_arrow_pool(env)
    assert env == {ARROW_POOL: "jemalloc"}
    env = {}
    system_arrow_pool(env)
    assert env == {ARROW_POOL: "system"}
