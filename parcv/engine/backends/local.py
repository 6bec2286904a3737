"""The local backend: a joblib (loky) process pool on this machine."""

from __future__ import annotations

import os
import queue
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Hashable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parcv.engine.backends._guard import TIMED_OUT, death_message
from parcv.engine.backends.base import (
    check_fault_options,
    check_number,
    check_threads,
    pickled_for_workers,
    shipped_for_workers,
)
from parcv.errors import BackendError
from parcv.plan.build import Plan
from parcv.plan.data import Dataset
from parcv.plan.record_batch import RecordBatch
from parcv.plan.records import ErrorInfo, Record, Unit
from parcv.plan.units import PackedUnits, pack_units, unpack_units

__all__ = ["LocalBackend", "check_n_jobs", "prepare_workers", "remove_stale_payloads"]

# Per worker process: the last payload it loaded, so each worker reads the data once per run,
# and the plans added to that run (a strategy's rounds), each read once.
_LOADED: dict[str, tuple[Plan, Dataset]] = {}
_PLANS: dict[str, Plan] = {}


def _load_payload(path: str, threads: int | None) -> tuple[Plan, Dataset]:
    if path not in _LOADED:
        import cloudpickle
        import joblib

        from parcv.engine.backends._threads import cap_threads

        cap_threads(threads)
        _LOADED.clear()
        _PLANS.clear()
        stored = joblib.load(path, mmap_mode="r")
        stored["imports"].apply()  # the user's modules the plan names, where the driver's were
        _LOADED[path] = (cloudpickle.loads(stored["plan"]), stored["data"])
    return _LOADED[path]


def _load_plan(path: str) -> Plan:
    """A plan added to the run (written beside its payload), read once per worker."""
    if path not in _PLANS:
        import cloudpickle

        _PLANS[path] = cloudpickle.loads(Path(path).read_bytes())
    return _PLANS[path]


def _exit_with_parent() -> None:
    """Worker initializer: exit when the driver dies, even by SIGKILL (no orphans).

    The worker's parent is the server it was forked from; its sentinel of the driver
    (``multiprocessing.parent_process()``) reads end-of-file once the driver is gone.
    """
    import multiprocessing
    import time

    driver = multiprocessing.parent_process()
    assert driver is not None  # a worker of parcv's pool

    def watch() -> None:
        while driver.is_alive():
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="parcv-parent-watch", daemon=True).start()


def _run_chunk(
    path: str,
    packed: PackedUnits,
    threads: int | None,
    timeout: float | None = None,
    plan_path: str | None = None,
) -> Sequence[Record]:
    from parcv.engine.work import run_units

    units = unpack_units(packed)
    plan, data = _load_payload(path, threads)
    if plan_path is not None:
        plan = _load_plan(plan_path)
    if timeout is None:
        return RecordBatch.pack(run_units(plan, data, units))
    records: list[Record] = []
    for unit in units:
        # Only a process exit stops a fit stuck in C code: the driver then isolates the unit.
        watchdog = threading.Timer(timeout, os._exit, (TIMED_OUT,))
        watchdog.daemon = True
        watchdog.start()
        try:
            records += run_units(plan, data, (unit,))
        finally:
            watchdog.cancel()
    return RecordBatch.pack(records)


def _death_cause(err: BaseException, timeout: float | None, tries: int) -> ErrorInfo:
    """What killed a worker, from loky's message ("exit codes of the workers are {...}")."""
    found = re.search(r"exit codes of the workers are \{([^}]*)\}", str(err))
    codes = found.group(1) if found else "unknown exit code"
    if f"EXIT({TIMED_OUT})" in codes:
        how = str(TIMED_OUT)
    else:
        how = codes.split("(")[0] if codes.startswith("SIG") else codes
    cause = death_message(how, timeout, tries)
    return ErrorInfo(cause.type, cause.message, str(err))


# parcv's own pools, apart from joblib's global reusable executor: sharing that one with
# different arguments restarts it on every switch and breaks scikit-learn's n_jobs calls.
# The pools of the last two sizes used are kept, the one used last at the end: a session
# that alternates two sizes (n_jobs=1 for a check, every core for the sweep) starts no
# worker again, where one pool restarted on every switch (3.5 s of CPU for the workers'
# imports each time, measured alternating n_jobs 1 and 2: 42 s against 2.3 s for 12
# calls).
#
# A pool idle for its idle_timeout is shut down by a timer of its own, never while a run
# uses it; its workers have no timeout of their own. With loky's worker timeout, a call
# that came as a worker timed out (the worker exiting, loky joining it) made loky's manager
# thread warn "A worker stopped while some jobs were given to the executor" and start
# another: under a warnings filter of "error" that warning killed the manager thread and
# the run waited forever for its chunks (seen calling every ~idle_timeout; a test suite
# whose pool sat idle for 300 s under load met it as a hang).
_POOLS: dict[tuple[int, float], _Kept] = {}
_POOLS_LOCK = threading.Lock()
_KEPT_POOLS = 2


@dataclass(slots=True)
class _Kept:
    """A pool, the runs using it now, and the timer that shuts it down once idle."""

    pool: Any
    users: int = 0
    timer: threading.Timer | None = None


def _start_pool(n_workers: int) -> Any:
    from joblib.externals.loky import ProcessPoolExecutor

    from parcv.engine.backends._forkserver import worker_context

    try:
        return ProcessPoolExecutor(
            max_workers=n_workers,
            timeout=None,  # the pool's timer ends idle workers (above)
            context=worker_context(),
            initializer=_exit_with_parent,
        )
    except Exception as err:
        raise BackendError(f"cannot start a local pool of {n_workers} workers: {err}") from err


def prepare_workers() -> None:
    """Start importing what the pool's workers need, while the driver plans.

    The server the workers are forked from imports scikit-learn and parcv's
    worker code (seconds of CPU) on a core the driver leaves free; the pool,
    started later, forks them ready. Nothing is started if it is running.
    """
    from parcv.engine.backends._forkserver import start_server

    start_server()


def _take_pool(n_workers: int, idle_timeout: float) -> Any:
    """The process's parcv pool of this size, started if needed, marked as in use."""
    config = (n_workers, idle_timeout)
    with _POOLS_LOCK:
        kept = _POOLS.pop(config, None)
        if kept is None:
            idle = [c for c, k in _POOLS.items() if not k.users]  # oldest first
            for old in idle[: max(0, len(_POOLS) + 1 - _KEPT_POOLS)]:
                _shut(_POOLS.pop(old), kill=False)
            kept = _Kept(_start_pool(n_workers))
        if kept.timer is not None:
            kept.timer.cancel()
            kept.timer = None
        kept.users += 1
        _POOLS[config] = kept
        return kept.pool


def _give_back(n_workers: int, idle_timeout: float, pool: Any) -> None:
    """A run is done with ``pool``: once no run uses it, it lives ``idle_timeout`` more."""
    config = (n_workers, idle_timeout)
    with _POOLS_LOCK:
        kept = _POOLS.get(config)
        if kept is None or kept.pool is not pool:  # dropped meanwhile: a restart, an error
            return
        kept.users -= 1
        if not kept.users:
            kept.timer = threading.Timer(idle_timeout, _expire, (config, kept))
            kept.timer.daemon = True
            kept.timer.start()


def _expire(config: tuple[int, float], kept: _Kept) -> None:
    with _POOLS_LOCK:
        if _POOLS.get(config) is not kept or kept.users:  # taken again meanwhile
            return
        del _POOLS[config]
    kept.pool.shutdown(wait=False, kill_workers=False)


def _shut(kept: _Kept, *, kill: bool) -> None:
    if kept.timer is not None:
        kept.timer.cancel()
    kept.pool.shutdown(wait=False, kill_workers=kill)


def _drop_pool(n_workers: int, idle_timeout: float, *, kill: bool) -> None:
    with _POOLS_LOCK:
        kept = _POOLS.pop((n_workers, idle_timeout), None)
    if kept is not None:
        _shut(kept, kill=kill)


def _check_n_jobs_type(n_jobs: Any, name: str = "n_jobs") -> None:
    """Raise unless ``n_jobs`` is None or a non-zero int (checked without importing joblib)."""
    if n_jobs is None:
        return
    message = (
        f"{name} must be a positive int, -1 for every core (-2 all but one) or None; "
        f"got {n_jobs!r}. Pass the number of worker processes, or -1 to use every core."
    )
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int):
        raise TypeError(message)
    if n_jobs == 0:
        raise ValueError(message)


def check_n_jobs(n_jobs: Any) -> int:
    """Resolve ``n_jobs`` (None or -1: every core; -2: all but one) to a count.

    Examples
    --------
    >>> check_n_jobs(2)
    2
    >>> check_n_jobs(0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: n_jobs must be a positive int, -1 for every core (-2 all but one) or None; ...
    """
    from joblib import cpu_count

    _check_n_jobs_type(n_jobs)
    if n_jobs is None:
        return int(cpu_count())
    if n_jobs < 0:
        return max(1, int(cpu_count()) + 1 + int(n_jobs))
    return int(n_jobs)


@dataclass(frozen=True, slots=True)
class _Faults:
    """How the executor meets units that kill or hang their worker."""

    plans: list[Plan]  # by plan id: the one opened with, then those added
    restart: Any  # () -> a fresh pool
    timeout: float | None
    max_crashes: int


def remove_stale_payloads(base: Path) -> list[Path]:
    """Remove the payload folders of local runs whose driver died (e.g. by SIGKILL).

    A folder ``parcv-<pid>-*`` is a driver's copy of its plan and data; it
    is removed when it belongs to this user and process ``<pid>`` is gone.
    Returns the folders removed.
    """
    removed = []
    for folder in base.glob("parcv-*-*"):
        owner = folder.name.split("-")[1]
        try:
            if not owner.isdigit() or folder.stat().st_uid != os.getuid():
                continue
            os.kill(int(owner), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        except OSError:  # alive (another user's) or vanished meanwhile
            continue
    return removed


class _LocalExecutor:
    chunk_seconds = 0.05
    # Each chunk costs the driver about 0.3 ms on 2 cores (scripts/bench/driver_alone.py:
    # 47.4 us/unit with 45-unit chunks, 41.7 with 182), more beside 16 busy workers: at 100
    # chunks a second that stays under a tenth of its core. 16 workers: 0.16 s chunks.
    chunk_rate = 100.0
    depth = 2

    def __init__(
        self, pool: Any, path: str, n_workers: int, threads: int | None, faults: _Faults
    ) -> None:
        self._pool, self._path, self._threads = pool, path, threads
        self._faults = faults
        self.n_workers = n_workers
        self._futures: dict[Future[Sequence[Record]], int] = {}
        self._chunks: dict[int, tuple[int, tuple[Unit, ...]]] = {}  # ticket: plan id, units
        self._plan_paths: list[str | None] = [None]  # by plan id; None: the payload's own
        # Finished futures, in the order they finished: one blocking get per wait instead
        # of concurrent.futures.wait's waiter on every future in flight (up to 2 x workers).
        self._done: queue.SimpleQueue[Future[Sequence[Record]]] = queue.SimpleQueue()
        self._count = 0

    @property
    def pool(self) -> Any:
        """The pool it sends chunks to now (another after a restart)."""
        return self._pool

    def add_plan(self, plan: Plan) -> int:
        """Write another plan beside the payload; workers read it with its first chunk."""
        pid = len(self._plan_paths)
        path = Path(self._path).with_name(f"plan-{pid}.pkl")
        path.write_bytes(pickled_for_workers(plan))
        self._plan_paths.append(str(path))
        self._faults.plans.append(plan)
        return pid

    def _send(self, units: tuple[Unit, ...], plan: int) -> Future[Sequence[Record]]:
        return self._pool.submit(  # type: ignore[no-any-return]
            _run_chunk, self._path, pack_units(units), self._threads, self._faults.timeout,
            self._plan_paths[plan],
        )  # fmt: skip

    def submit(self, units: tuple[Unit, ...], plan: int = 0) -> Hashable:
        from concurrent.futures.process import BrokenProcessPool

        self._count += 1
        try:
            future = self._send(units, plan)
        except BrokenProcessPool as err:
            # A worker died after the last wait and before this chunk: loky refuses new work
            # until then. The chunk fails as the ones in flight do, and wait() recovers all.
            future = Future()
            future.set_exception(err)
        except Exception as err:
            raise BackendError(f"the local process pool cannot take work: {err}") from err
        self._futures[future] = self._count
        self._chunks[self._count] = (plan, units)
        future.add_done_callback(self._done.put)
        return self._count

    def _finished(self) -> list[Future[Sequence[Record]]]:
        """Block for one finished future; return it with every other one already done."""
        done = [self._done.get()]
        while not self._done.empty():
            done.append(self._done.get())
        return done

    def wait(self) -> Iterator[tuple[Hashable, Sequence[Record]]]:
        from concurrent.futures.process import BrokenProcessPool

        for future in self._finished():
            ticket = self._futures.pop(future)
            chunk = self._chunks.pop(ticket)
            try:
                records = future.result()
            except BrokenProcessPool:  # a worker died: loky fails every chunk in flight
                yield from self._recover({ticket: chunk})
                return
            except Exception as err:
                raise BackendError(
                    f"a local worker process failed outside any fit ({type(err).__name__}: "
                    f"{err}); finished results are kept, run again to complete."
                ) from err
            yield ticket, records

    def _recover(
        self, lost: dict[int, tuple[int, tuple[Unit, ...]]]
    ) -> Iterator[tuple[Hashable, Sequence[Record]]]:
        """Keep the chunks that finished, rerun every other unit alone on a fresh pool."""
        finished = {}
        for future, ticket in self._futures.items():
            chunk = self._chunks.pop(ticket)
            if future.done() and not future.cancelled() and future.exception() is None:
                finished[ticket] = future.result()
            else:
                lost[ticket] = chunk
        self._futures.clear()
        self._done = queue.SimpleQueue()  # the dead futures' callbacks fill the old one
        self._pool = self._faults.restart()
        yield from finished.items()
        for ticket, (plan, units) in lost.items():
            yield ticket, [r for unit in units for r in self._isolate(unit, plan)]

    def _isolate(self, unit: Unit, plan: int) -> Sequence[Record]:
        """Run one unit alone until it returns, or record what killed its worker."""
        from concurrent.futures.process import BrokenProcessPool

        from parcv.engine.work import lost_unit_records

        faults = self._faults
        for tries in range(1, faults.max_crashes + 1):
            future = self._send((unit,), plan)
            try:
                return list(future.result())
            except BrokenProcessPool as err:
                self._pool = faults.restart()
                cause = _death_cause(err, faults.timeout, tries)
                if cause.type == "TimedOut":  # it would only time out again
                    break
        return lost_unit_records(faults.plans[plan], unit, cause, "local pool")

    def cancel(self) -> None:
        for future in self._futures:
            future.cancel()
        self.abandon()

    def abandon(self) -> None:
        """Forget the chunks in flight without cancelling them: their pool is being killed.

        loky fails each pending future of a pool shut down with ``kill_workers=True``; one
        cancelled meanwhile makes its manager thread raise ``InvalidStateError``. A chunk
        its manager thread has not yet moved to the workers' queue makes it raise
        ``KeyError`` (it drops the future but keeps the chunk's id, then looks the id up),
        so this first waits until every chunk sent is queued or done. The manager moves a
        chunk as soon as it wakes while the queue has room, and the queue holds more
        chunks (2 per worker, and one) than this executor keeps in flight (``depth``).
        """
        _wait_until_queued(self._futures)
        self._futures.clear()
        self._chunks.clear()


def _wait_until_queued(futures: Iterable[Future[Any]], limit: float = 5.0) -> None:
    """Wait (at most ``limit`` seconds) until no future is pending in its pool's own queue.

    Past ``limit`` (a pool shared with another run, whose chunks fill the workers'
    queue) the kill goes ahead: loky's manager thread may then print a ``KeyError``,
    and the pool it belongs to is gone either way.
    """
    waiting = [f for f in futures if not (f.running() or f.done())]
    deadline = time.monotonic() + limit
    while waiting and time.monotonic() < deadline:
        time.sleep(0.001)
        waiting = [f for f in waiting if not (f.running() or f.done())]


@dataclass(frozen=True, slots=True)
class LocalBackend:
    """Run units on a pool of local worker processes (joblib's loky executor).

    The plan and the data are written once to a temporary file that every
    worker memory-maps; tasks carry only unit keys. The workers are forked
    from a process that imported scikit-learn and parcv's worker code once,
    started by the first call on a local pool.

    Parameters
    ----------
    n_jobs : int or None, default=None
        Worker processes; ``None`` or -1 uses every core, -2 all but one.
    threads : int or None, default=1
        Cap on BLAS/OpenMP threads inside each worker.
    idle_timeout : float, default=300
        Seconds an idle worker pool lives on for the next call before it is
        shut down and its processes exit, as joblib's (new workers import the
        estimator's own modules and read the data again).
        The pools of the last two sizes used are kept, so a session that
        alternates two values of ``n_jobs`` starts no worker again.

    Raises
    ------
    TypeError, ValueError
        On construction, for a value of the wrong type or out of range.

    Examples
    --------
    >>> LocalBackend(n_jobs=2).n_jobs
    2
    >>> LocalBackend(n_jobs=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: n_jobs must be a positive int, -1 for every core (-2 all but one) or None; ...
    """

    n_jobs: int | None = None
    threads: int | None = 1
    idle_timeout: float = 300.0
    timeout: float | None = None
    max_crashes: int = 2

    def __post_init__(self) -> None:
        _check_n_jobs_type(self.n_jobs)
        check_threads(self.threads)
        check_number(
            "idle_timeout",
            self.idle_timeout,
            kind=float,
            allow_none=False,
            hint="Pass the seconds an idle pool lives on for the next call, e.g. 300.",
        )
        check_fault_options(self.timeout, self.max_crashes)

    @contextmanager
    def open(self, plan: Plan, data: Dataset) -> Iterator[_LocalExecutor]:
        """Dump the payload, start (or reuse) the pool, clean up on exit."""
        import joblib

        n_workers = check_n_jobs(self.n_jobs)
        shm = Path("/dev/shm")
        base = shm if shm.is_dir() else Path(tempfile.gettempdir())
        remove_stale_payloads(base)
        folder = tempfile.mkdtemp(prefix=f"parcv-{os.getpid()}-", dir=base)
        try:
            path = str(Path(folder) / "payload.pkl")
            shipped = shipped_for_workers(plan)
            joblib.dump({"plan": shipped.pickled, "imports": shipped.imports, "data": data}, path)
            pool = _take_pool(n_workers, self.idle_timeout)

            def restart() -> Any:
                _drop_pool(n_workers, self.idle_timeout, kill=True)
                return _take_pool(n_workers, self.idle_timeout)

            faults = _Faults([plan], restart, self.timeout, self.max_crashes)
            executor = _LocalExecutor(pool, path, n_workers, self.threads, faults)
            try:
                yield executor
            except BaseException:
                # Interrupted or broken: stop running fits now; the next call starts afresh.
                executor.abandon()
                _drop_pool(n_workers, self.idle_timeout, kill=True)
                raise
            finally:
                executor.cancel()
                _give_back(n_workers, self.idle_timeout, executor.pool)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
