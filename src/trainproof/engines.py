"""Cluster engines for ``doctor``: map a judgement (:func:`trainproof.api.judge_runs`, which
``doctor`` passes in) over the runs on Dask (the ``[dask]`` extra) or Ray (the ``[ray]`` extra).

The judgement is one pure function of a run's location and a :class:`~trainproof.api.JudgeConfig`,
so an engine only schedules, and knows nothing of how a run is judged (this module imports
no other of trainproof's): runs go out in batches (a task per run would cost the
scheduler more than a small log costs to judge), results come back in input order, and
``doctor`` renders them exactly as it renders a local run's. Workers read the runs
themselves: a URL (``s3://...``) is fetched by the worker that judges it, a local path must
be visible to every worker (a shared file system).

``address`` names a cluster the user already has (a Dask scheduler ``tcp://host:8786``, a
Ray address ``auto`` / ``ray://host:10001``); without one a local cluster is started for
the call (``workers`` processes, default one per core) and stopped after it.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from itertools import islice

__all__ = ["ENGINES", "EngineError", "judge_batch", "map_judge"]

ENGINES = ("local", "dask", "ray")

#: Most runs per task: small enough to spread a few hundred runs over a cluster, big enough
#: that the per-task cost of the scheduler (about a millisecond) stays below a run's.
_MAX_BATCH = 32


class EngineError(Exception):
    """The engine cannot run: its package is not installed, or its cluster cannot be reached."""


def judge_batch(locations: Sequence, config, judge: Callable) -> list:
    """``judge(location, config)`` of each location, in order (one engine task)."""
    return [judge(loc, config) for loc in locations]


def _batches(items: Sequence, slots: int) -> list[list]:
    size = max(1, min(_MAX_BATCH, len(items) // max(1, 4 * slots)))
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def map_judge(
    engine: str, locations: Sequence, config, *, judge: Callable, address: str | None = None, workers: int | None = None
) -> Iterator[tuple]:
    """``judge(location, config)`` for each location, on ``engine``, in input order.

    ``judge`` is a module-level function (the workers import it by name), in ``doctor``
    :func:`trainproof.api.judge_runs`.

    The engine is imported and connected (or started) before this returns, so a missing
    package or an unreachable cluster raises here; the results are a generator that stops
    the cluster it started once exhausted or closed.

    Raises:
        EngineError: unknown engine, package not installed, or cluster unreachable.
    """
    if engine == "dask":
        return _dask(judge, list(locations), config, address, workers)
    if engine == "ray":
        return _ray(judge, list(locations), config, address, workers)
    raise EngineError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")


class _Results:
    """Results in input order; :meth:`close` stops what was started, even before the first."""

    def __init__(self, gen: Iterator[tuple], cleanup) -> None:
        self._gen = gen
        self._cleanup = cleanup

    def __iter__(self) -> _Results:
        return self

    def __next__(self) -> tuple:
        try:
            return next(self._gen)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._gen.close()
        cleanup, self._cleanup = self._cleanup, None
        if cleanup is not None:
            cleanup()


def _missing(engine: str, package: str) -> EngineError:
    return EngineError(f"--engine {engine} needs {package}, the [{engine}] extra: pip install 'trainproof[{engine}]'")


def _reason(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _dask(judge: Callable, locations: list, config, address: str | None, workers: int | None) -> Iterator[tuple]:
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise _missing("dask", "dask[distributed]") from None
    cluster = None
    try:
        if address:
            client = Client(address)  # waits distributed.comm.timeouts.connect (30 s)
        else:
            # Loopback only: a cluster started for one call serves nobody else.
            cluster = LocalCluster(
                n_workers=workers or os.cpu_count() or 1,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
            )
            client = Client(cluster)
    except (OSError, TimeoutError, ValueError) as e:
        if cluster is not None:
            cluster.close()
        raise EngineError(f"cannot reach the Dask scheduler {address or '(local)'}: {_reason(e)}") from None

    def cleanup() -> None:
        client.close()
        if cluster is not None:
            cluster.close()

    return _Results(_dask_results(client, judge, locations, config), cleanup)


def _dask_results(client, judge: Callable, locations: list, config) -> Iterator[tuple]:
    if not locations:
        return
    slots = max(1, sum(client.nthreads().values()))
    # pure=False: every batch is its own task, even when two are equal.
    futures = client.map(judge_batch, _batches(locations, slots), judge=judge, config=config, pure=False)
    done = 0
    try:
        for f in futures:
            results = f.result()
            f.release()
            done += 1  # before yielding: a consumer may stop right after the last result
            yield from results
    finally:
        for f in futures[done:]:  # stopped early: drop what is still queued
            f.cancel()


def _ray(judge: Callable, locations: list, config, address: str | None, workers: int | None) -> Iterator[tuple]:
    try:
        import ray
    except ImportError:
        raise _missing("ray", "ray") from None
    started = False
    if not ray.is_initialized():
        import logging

        # log_to_driver=False: workers' output never reaches doctor's stdout.
        opts = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        try:
            if address:
                ray.init(address=address, **opts)
            else:
                # A cluster started only for this call reports no usage statistics.
                os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
                ray.init(num_cpus=workers or os.cpu_count() or 1, **opts)
        except (ConnectionError, OSError, RuntimeError, ValueError) as e:
            raise EngineError(f"cannot reach the Ray cluster {address or '(local)'}: {_reason(e)}") from None
        started = True
    return _Results(_ray_results(ray, judge, locations, config), ray.shutdown if started else None)


def _ray_results(ray, judge: Callable, locations: list, config) -> Iterator[tuple]:
    """Batches go out at most ``2 * slots`` at a time; a consumer that stops early leaves
    only those to finish. Nothing is ever ``ray.cancel``-ed: in Ray 2.x a cancel that
    races with the task's completion aborts the driver process (a failed internal check,
    "Tried to complete task that was not pending", ray-project/ray#54846), and it did so
    here for the last batch of a fully consumed run."""
    if not locations:
        return
    slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
    task = ray.remote(num_cpus=1)(judge_batch)
    cfg = ray.put(config)
    batches = iter(_batches(locations, slots))
    in_flight = deque(task.remote(b, cfg, judge) for b in islice(batches, 2 * slots))
    while in_flight:
        results = ray.get(in_flight.popleft())
        nxt = next(batches, None)
        if nxt is not None:
            in_flight.append(task.remote(nxt, cfg, judge))
        yield from results
