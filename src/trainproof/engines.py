"""Engines for ``doctor``: map a judgement (:func:`trainproof.api.judge_location`, which
``doctor`` passes in) over the runs in a pool of local processes (``local``, the default),
or on Dask (the ``[dask]`` extra) or Ray (the ``[ray]`` extra).

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

The ``local`` engine judges in this process, or, for at least :data:`_MIN_PARALLEL` runs and
more than one worker, in a pool of ``workers`` processes (at most :func:`usable_cpus`). When
the command is stopped (Ctrl-C, or SIGTERM as the command line handles it) while the pool
runs, :meth:`_Pool.abort` ends its workers before the exception goes on.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from itertools import islice

__all__ = ["ENDED_POOLS", "ENGINES", "EngineError", "judge_batch", "map_judge", "usable_cpus"]

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
) -> _Results | _Pool:
    """``judge(location, config)`` for each location, on ``engine``, in input order.

    ``judge`` is a module-level function (the workers import it by name), in ``doctor``
    :func:`trainproof.api.judge_location`. ``workers``: processes (``None``: one per core); on
    this machine (``local``, or a cluster started for the call) at most :func:`usable_cpus`.

    The engine is imported and connected (or started) before this returns, so a missing
    package or an unreachable cluster raises here. The results are an iterator with
    ``close()``, which stops what was started once the results are consumed or not
    wanted, and ``abort()``, for a consumer that was stopped (Ctrl-C, SIGTERM, an error):
    the local pool's workers are ended at once.

    Raises:
        EngineError: unknown engine, package not installed, or cluster unreachable.
    """
    if engine == "local":
        jobs = usable_cpus() if workers is None else min(max(1, int(workers)), usable_cpus())
        if jobs > 1 and len(locations) >= _MIN_PARALLEL:
            return _Pool(judge, list(locations), config, jobs)
        return _Results((judge(loc, config) for loc in locations), None)
    if address is None and workers is not None:
        workers = min(max(1, int(workers)), usable_cpus())  # a local cluster on this machine
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

    def abort(self) -> None:
        """The consumer was stopped: as :meth:`close`."""
        self.close()


def _call_judge(judge: Callable, config, location):
    """``judge(location, config)``: the task a pool worker runs (a module-level function,
    so that it travels to the worker by name)."""
    return judge(location, config)


class _Pool:
    """Results of a pool of worker processes, in input order.

    The stop signals are held while the pool forks its workers (:func:`_signals_held`)
    and let through at the first result asked for, where a signal held meanwhile is
    handled: the workers are ended (:meth:`abort`) before the exception goes on."""

    def __init__(self, judge: Callable, locations: list, config, jobs: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from functools import partial

        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        global _POOL_PARENT
        _POOL_PARENT = os.getpid()
        self._pool = None
        self._release = _signals_held()
        try:
            self._pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_start)
            # map submits every chunk now, and the pool forks all its workers on the first.
            self._results = self._pool.map(
                partial(_call_judge, judge, config), locations, chunksize=max(1, min(16, len(locations) // (4 * jobs)))
            )
        except BaseException:
            self._release()
            if self._pool is not None:
                _end_workers(self._pool)
            raise
        self._held = True

    def __iter__(self) -> _Pool:
        return self

    def __next__(self) -> tuple:
        try:
            self._let_signals_through()
            return next(self._results)
        except StopIteration:
            raise
        except BaseException:
            self.abort()
            raise

    def _let_signals_through(self) -> None:
        """Release the stop signals held since the forks (once): one that arrived
        meanwhile is handled here."""
        if self._held:
            self._held = False
            self._release()

    def abort(self) -> None:
        """End the workers now (the consumer was stopped); their threads are not waited
        for, since a killed worker may have left half a message."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            _end_workers(pool)

    def close(self) -> None:
        """Shut the pool down (work not yet started is cancelled)."""
        try:
            self._let_signals_through()
        except BaseException:
            self.abort()
            raise
        finally:
            if self._pool is not None:
                pool, self._pool = self._pool, None
                pool.shutdown(cancel_futures=True)
            self._results.close()


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


#: Below this many runs a process pool costs more than it saves.
_MIN_PARALLEL = 8


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one, else
    ``os.cpu_count()``; at least 1): the most worker processes ``doctor`` starts, since
    more workers than cores only add memory and switching."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


#: The signals held while the worker processes are forked (see :func:`_signals_held`).
_STOP_SIGNALS = ("SIGINT", "SIGTERM")
#: The process that forks the pool's workers, read by each worker at its start
#: (:func:`_die_with_parent`).
_POOL_PARENT: int | None = None
#: Linux's prctl option that sends the caller a signal when its parent ends.
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In a worker on Linux: be killed when the process that forked it ends, however it
    ends. A stop signal handled in the parent between a worker's fork and its pool
    recording it (the signal delivered to another of the parent's threads, whose flag
    the main thread reads at once) can leave a worker the parent does not know to end; it
    would outlive the command, holding its output pipes open. Elsewhere, nothing."""
    import sys

    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    except (OSError, AttributeError):
        return
    if _POOL_PARENT is not None and os.getppid() != _POOL_PARENT:
        os._exit(1)  # the parent ended before the request took effect


def _worker_start() -> None:
    """In each worker: die on SIGTERM (the parent ends its workers so) and leave Ctrl-C
    to the parent, which stops them all. The worker was forked while the parent held the
    stop signals, so it takes them again here."""
    import signal

    _die_with_parent()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {getattr(signal, n) for n in _STOP_SIGNALS})


def _signals_held():
    """Hold SIGINT and SIGTERM in this thread (where the platform can) and return a function
    that lets them through again. The worker pool forks its processes as the work is
    submitted; a stop signal handled in the middle of a fork raises its KeyboardInterrupt
    inside the interpreter's at-fork hooks, which print it as an ignored exception with a
    traceback and go on. Held, it arrives once the forks are done, where ``doctor`` ends
    the workers."""
    import signal

    if not hasattr(signal, "pthread_sigmask"):
        return lambda: None
    held = {getattr(signal, n) for n in _STOP_SIGNALS}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)

    def release() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)

    return release


def _quiet_broken_pool() -> None:
    """Keep the pool's manager thread from printing a traceback as the command stops:
    before Python 3.12 it sets an exception on every pending future of a pool whose
    workers died, and one this command has just cancelled raises InvalidStateError there
    (a race in ``concurrent.futures.process``, handled in 3.12). Nothing is lost: the
    command is stopping and its futures are cancelled."""
    import threading
    from concurrent.futures import InvalidStateError

    before = threading.excepthook
    if getattr(before, "_trainproof", False):
        return

    def hook(args) -> None:
        if args.exc_type is not None and issubclass(args.exc_type, InvalidStateError):
            return
        before(args)

    hook._trainproof = True  # type: ignore[attr-defined]
    threading.excepthook = hook


#: The work queues of the process pools ended by an interrupt in this process
#: (:func:`_end_workers`), kept referenced until the process exits. Non-empty means the
#: pool's own threads may never end: the command line exits without joining them
#: (:func:`trainproof.cli.app.main`).
ENDED_POOLS: list = []


def _end_workers(pool) -> None:
    """Stop a process pool's workers now (the command was interrupted): terminate them,
    then reap them, so none outlives the command holding its output.

    The pool's queue of work is kept referenced and not joined at exit: dropped, its pipe
    would be closed under the thread still writing to it (an ``OSError`` traceback
    printed as the command stops), and joined, that thread may wait forever on a pipe no
    worker reads any more."""
    _quiet_broken_pool()
    call_queue = getattr(pool, "_call_queue", None)
    if call_queue is not None:
        call_queue.cancel_join_thread()
    ENDED_POOLS.append(call_queue)
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        p.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.kill()
            p.join(10)
