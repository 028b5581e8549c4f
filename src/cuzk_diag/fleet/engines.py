"""Where the per-unit tasks run: in this process, a local process pool, or a Dask cluster.

Every engine maps ``process_unit`` over the units and yields ``(unit, result)`` as results come
in; the driver writes them. The engines differ only in where the task runs, so a dataset built
with one equals the dataset built with another (tested).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from functools import partial

from cuzk_diag.config import Config
from cuzk_diag.errors import InputError
from cuzk_diag.fleet.dataset import Runner
from cuzk_diag.fleet.discover import Unit
from cuzk_diag.fleet.task import UnitResult, process_unit
from cuzk_diag.ingest.parallel import usable_cpus

ENGINES = ("local", "dask")


def default_jobs() -> int:
    return usable_cpus()


def local_runner(jobs: int, host_source: str, config: Config | None = None) -> Runner:
    """Run units in this process (``jobs == 1``) or in a pool of ``jobs`` processes.

    The pool keeps at most ``2 * jobs`` units in flight, so memory holds a bounded number of
    results whatever the fleet's size; the biggest units are started first.
    """
    task = partial(process_unit, host_source=host_source, config=config)

    def run(units: Sequence[Unit]) -> Iterator[tuple[Unit, UnitResult]]:
        ordered = sorted(units, key=lambda u: -u.size)
        if jobs <= 1 or len(ordered) <= 1:
            for unit in ordered:
                yield unit, task(unit)
            return
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            pending: dict[Future[UnitResult], Unit] = {}
            queue = list(reversed(ordered))
            while queue or pending:
                while queue and len(pending) < 2 * jobs:
                    unit = queue.pop()
                    pending[pool.submit(task, unit)] = unit
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    yield pending.pop(fut), fut.result()

    return run


def dask_runner(scheduler: str | None, host_source: str, config: Config | None = None) -> Runner:
    """Run units as tasks on a Dask distributed cluster (``scheduler`` address, or a client).

    The workers must see the input paths (a shared file system); results come back to this
    process, which writes the dataset.
    """
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise InputError("--engine dask needs Dask: pip install 'cuzk-diag[dask]'") from None
    task = partial(process_unit, host_source=host_source, config=config)

    def run(units: Sequence[Unit]) -> Iterator[tuple[Unit, UnitResult]]:
        if not units:
            return
        try:
            client = (
                Client(scheduler, set_as_default=False)  # type: ignore[no-untyped-call]
                if scheduler
                else Client(set_as_default=False)  # type: ignore[no-untyped-call]
            )
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        try:
            with client.as_current():
                futures = {client.submit(task, u, pure=False): u for u in units}
                for fut in as_completed(list(futures)):  # type: ignore[no-untyped-call]
                    yield futures[fut], fut.result()
        finally:
            client.close()  # type: ignore[no-untyped-call]

    return run
