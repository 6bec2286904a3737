"""Dask tasks and the executor: chunks as futures, data scattered once, refits chained."""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import math
import queue
import sys
import time
import uuid
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from typing import Any

from parcv.errors import BackendError
from parcv.plan.build import Plan
from parcv.plan.data import Dataset
from parcv.plan.kinds import KINDS, refit_kind
from parcv.plan.record_batch import RecordBatch
from parcv.plan.records import Record, Unit
from parcv.plan.units import PackedUnits, pack_units, unpack_units

__all__: list[str] = []

logger = logging.getLogger("parcv.engine.backends.dask")

# Times a chunk may be lost with its workers (or with the data they held) before the run
# stops: after the first death every unit runs in a forked process, so a chunk lost again
# and again kills its worker from outside the fork (or the workers keep being killed).
_MAX_LOSSES = 5
_RESUME = "finished results are kept, resume to continue"
_WAIT_HINT = "raise no_worker_timeout when workers come from a batch queue or restart slowly"


@dataclass(frozen=True, slots=True)
class _Payload:
    """The data of a run, as scattered to the workers (once, and again if lost)."""

    data: Dataset

    def __sizeof__(self) -> int:
        # Dask sizes objects with sys.getsizeof: report the arrays, not a few bytes.
        from dask.sizeof import sizeof

        d = self.data
        return int(sizeof([d.X, d.y, d.groups, d.fit_params]))


@dataclass(frozen=True, slots=True)
class _PlanCopy:
    """A plan as scattered to the workers, apart from the data it runs on."""

    plan: Plan

    def __sizeof__(self) -> int:
        plan = self.plan
        folds = [f for fs in (plan.outer_folds, *plan.inner_folds.values()) for f in fs]
        return sys.getsizeof(plan) + sum(f.train.nbytes + f.test.nbytes for f in folds)


class _Shipment:
    """A value every task needs (the data, a plan): kept by the driver, scattered to the
    workers, and scattered again when every worker holding a copy died."""

    __slots__ = ("future", "value")

    def __init__(self, value: _Payload | _PlanCopy) -> None:
        self.value, self.future = value, None

    def lost(self) -> bool:
        return self.future is None or self.future.status != "finished"


@dataclass(frozen=True, slots=True)
class _Guard:
    """How a chunk runs in forked children (see ``_guard``): per-unit time limit, tries."""

    timeout: float | None
    max_crashes: int


@dataclass(frozen=True, slots=True)
class _Versions:
    """The distributions a run's keys name, by version, as each chunk carries them.

    ``token`` is new for each run (and each time its set grows): a worker checks
    its own versions once per token, and compares by it alone.
    """

    token: str
    pairs: tuple[tuple[str, str], ...] = field(compare=False)


class _OtherVersions(BackendError):
    """Raised on a worker whose installed versions differ from those the run's keys name."""


def installed_version(name: str) -> str | None:
    """Return the version of distribution ``name`` installed where this runs, or None.

    A Dask worker's own, compared with the version its units' keys name
    (computed on the driver). Module-level, so that a test can replace it
    inside a worker process.

    Parameters
    ----------
    name : str
        A distribution's name, e.g. ``"scikit-learn"``.

    Returns
    -------
    str or None
        Its version (``importlib.metadata.version``), or None if it is not installed.

    Examples
    --------
    >>> import sklearn
    >>> installed_version("scikit-learn") == sklearn.__version__
    True
    >>> installed_version("no-such-distribution-xyz") is None
    True
    """
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# One entry per run (and per growth of its set) that a worker process has seen.
@functools.lru_cache(maxsize=8)
def _refusal(expected: _Versions) -> str | None:
    """Why this worker must not run the run's units (other versions), or None: once per token."""
    other = [(name, version, installed_version(name)) for name, version in expected.pairs]
    other = [(name, version, here) for name, version, here in other if here != version]
    if not other:
        return None
    from distributed import get_worker

    here = _listed([f"{n} {v}" if v is not None else f"no {n} installed" for n, _, v in other])
    keyed = _listed([v if len(other) == 1 else f"{n} {v}" for n, v, _ in other])
    return (
        f"the Dask worker {get_worker().address} has {here} where this run's keys were "
        f"computed with {keyed}: its records would be stored under keys that do not describe "
        "them. Install the same versions on the workers (or run the driver where the workers' "
        f"environment is) and run again ({_RESUME})."
    )


def _check_versions(expected: _Versions | None) -> None:
    """Raise, before any unit runs, on a worker whose versions differ from the keys' ones."""
    if expected is not None:
        refusal = _refusal(expected)
        if refusal is not None:
            raise _OtherVersions(refusal)


def _run_chunk(
    data: _Payload,
    plan: _PlanCopy,
    packed: PackedUnits,
    threads: int | None,
    guard: _Guard | None = None,
    *,
    versions: _Versions | None = None,
) -> Sequence[Record]:
    """Run one chunk of ``plan`` on a worker, BLAS/OpenMP threads capped; guarded if ``guard``
    (each unit in a process forked from the worker, bound by the worker's memory limit).

    Refused on a worker whose distributions are not the ``versions`` its keys name.
    """
    from parcv.engine.backends._threads import cap_threads
    from parcv.engine.work import run_units

    _check_versions(versions)
    units = unpack_units(packed)
    cap_threads(threads)
    if guard is None:
        return RecordBatch.pack(run_units(plan.plan, data.data, units))
    from distributed import get_worker

    from parcv.engine.backends._guard import run_guarded
    from parcv.engine.work import lost_unit_records

    worker = get_worker()
    return run_guarded(
        plan.plan, data.data, units, timeout=guard.timeout,
        max_crashes=guard.max_crashes, worker=f"Dask worker {worker.address}",
        on_lost=lost_unit_records, memory_limit=_memory_limit(worker),
    )  # fmt: skip


def _memory_limit(worker: Any) -> int | None:
    """The worker's ``memory_limit`` in bytes (None: none): its nanny's bound, which a
    process forked from it escapes unless the fork is capped too."""
    manager = getattr(worker, "memory_manager", None)
    limit = getattr(manager, "memory_limit", None)
    return int(limit) if limit else None


def _run_refit(
    data: _Payload,
    plan: _PlanCopy,
    outer: int | None,
    known: Sequence[Record],
    threads: int | None,
    guard: _Guard | None,
    *chunks: Sequence[Record],
    versions: _Versions | None = None,
) -> Sequence[Record]:
    """Select the candidate of ``outer`` from its fits, then refit it (a chained refit).

    ``known`` holds the fold's fit records the driver had when it sent this task;
    ``chunks`` are the results of the chunks holding the others. Returns no record
    when nothing can be selected: the driver selects itself and says why.
    """
    from parcv.results.aggregate import select_for

    records = {r.key: r for r in known}
    fits = (r for chunk in chunks for r in chunk if KINDS[r.unit.kind].selects)
    records.update((r.key, r) for r in fits if r.unit.outer == outer)
    try:
        chosen = select_for(plan.plan, records, outer)
    except Exception:
        return []
    unit = Unit(refit_kind(outer), outer, None, chosen)
    return _run_chunk(data, plan, pack_units((unit,)), threads, guard, versions=versions)


def _priority(units: tuple[Unit, ...]) -> int:
    """Refits first (each completes a result), then fits of earlier outer folds."""
    if any(not KINDS[u.kind].selects for u in units):
        return 1
    return max(0 if u.outer is None else -(u.outer + 1) for u in units)


def _failure(what: str, err: BaseException) -> BackendError:
    return BackendError(f"{what} ({type(err).__name__}: {err}); {_RESUME}.")


def _refused(future: Any) -> BackendError | None:
    """The refusal of a chunk by a worker with other versions than the keys', or None."""
    if future.status != "error":
        return None
    err = future.exception()
    # The worker's exception says it all; its traceback is only the check's.
    return BackendError(str(err)) if isinstance(err, _OtherVersions) else None


class _DaskExecutor:
    """Chunks as futures of one client, sharing the scattered data and plan.

    The driver keeps the data and the plan: when every worker holding a copy died
    (killed, out of memory, or crashed by a fit), they are scattered again as soon
    as a worker is back, within ``no_worker_timeout`` (not counted while a nanny of
    the cluster, in this process, restarts one), and the chunks lost with them are
    sent again. After the first worker death every chunk runs in processes
    forked from its worker (``_guard``): a unit that kills its process then costs
    only that unit, never the worker and the data it holds.
    """

    # The scheduler's work is per task (and per worker's heartbeat), not per unit. On a lent
    # 16-core machine, 16 workers on 0.2 s chunks of 1 ms fits (about 80 a second) kept it
    # busy 13.9 % of the wall, 2.6 % of which it spends on 16 idle workers: about 1.4 ms a
    # task. On 2 cores, 2 workers, 1.1M units of 1 ms fits: 4.9 % of the wall with 0.2 s
    # chunks, 2.8 % with 0.5 s (scripts/bench/driver.py). So 0.5 s chunks, and at most 10
    # a second (about 1.4 % of the wall at 1.4 ms a task): 1.6 s chunks on 16 workers.
    chunk_seconds = 0.5
    chunk_rate = 10.0
    poll_seconds = 0.5
    # Chunks in flight per worker: a result's round trip through the scheduler and the
    # driver takes longer than a local pool's, so workers need a deeper queue to never idle
    # (W3 on 16 workers: efficiency 0.25 with 2, 0.35-0.42 with 8).
    depth = 8

    def __init__(
        self,
        client: Any,
        plan: Plan,
        data: Dataset,
        *,
        threads: int | None,
        timeout: float | None,
        unit_timeout: float | None = None,
        max_crashes: int = 2,
        worker_coming: Callable[[], bool] | None = None,
    ) -> None:
        self._client = client
        self._threads, self._timeout = threads, timeout
        # Whether a worker is on its way (a nanny restarting one): the wait for workers
        # is not counted meanwhile, however long a restart takes on a loaded machine.
        self._worker_coming = worker_coming or (lambda: False)
        # With a time limit every chunk runs guarded; else every chunk once a worker died.
        self._guard = _Guard(unit_timeout, max_crashes)
        self._guard_all = self._guard if unit_timeout is not None else None
        self._where = str(getattr(client.scheduler, "address", "the scheduler"))
        self._count = 0
        self._futures: dict[Any, tuple[int, tuple[Unit, ...]]] = {}  # future: ticket, units
        self._unguarded: set[Any] = set()  # futures of chunks sent before any worker died
        self._losses: dict[int, int] = {}  # ticket: times lost with its workers
        self._outbox: list[tuple[int, tuple[Unit, ...]]] = []  # submitted, not yet sent
        self._chains: list[tuple[int, int | None, list[Hashable], Sequence[Record]]] = []
        self._plan_of: dict[int, int] = {}  # a ticket's plan id, when not 0
        self._chained: set[int] = set()  # tickets of chained refits
        self._versions: _Versions | None = None  # what the keys name, checked on each worker
        # Filled from dask's callback thread with each future that stopped pending.
        self._done: queue.SimpleQueue[Any] = queue.SimpleQueue()
        try:  # broadcast, unless the Active Memory Manager would drop the copies
            self._broadcast = not client.amm.running()
        except Exception:  # an old or restricted scheduler: assume dask's default (on)
            self._broadcast = False
        # The data once per run; each plan apart from it (the runner's one plan: 0).
        self._data = _Shipment(_Payload(data))
        self._plans = {0: _Shipment(_PlanCopy(plan))}
        self._ship()
        per_worker = self._threads_per_worker()
        self.n_workers = max(1, sum(per_worker.values()))
        # With one copy of the payload, dask sends every chunk to the worker holding it
        # (the first chunks are too few to be queued) and the others only get work by
        # stealing. So the first chunks are placed, two per worker, and each worker
        # fetches its copy with its first chunk.
        self._places: list[str] = [] if self._broadcast else list(per_worker) * 2

    def _shipments(self) -> list[_Shipment]:
        return [self._data, *self._plans.values()]

    def _ship(self) -> None:
        """Scatter what no worker holds (yet, or any more) in one call, waiting for workers.

        Tries again until a worker takes it: one that just registered may be dying, or
        one being restarted may not be there yet. Gives up ``no_worker_timeout``
        seconds after the first try, or after the last try that saw a nanny restarting
        a worker, naming why.
        """
        missing = [s for s in self._shipments() if s.lost()]
        if not missing:
            return
        again = any(s.future is not None for s in missing)
        if again:
            logger.warning(
                "parcv's data was lost with the Dask workers holding it (they died); sending "
                "it again once a worker is back (waiting up to no_worker_timeout)"
            )
        start = time.monotonic()
        while True:
            spent = time.monotonic() - start
            left = math.inf if self._timeout is None else self._timeout - spent
            try:
                # hash=False: keys of this run only, so another run's cancel never frees them.
                futures = self._client.scatter(
                    [s.value for s in missing], broadcast=self._broadcast, hash=False,
                    timeout=max(left, self.poll_seconds),
                )  # fmt: skip
                break
            except Exception as err:
                self._threads_per_worker()  # raises if the scheduler itself is gone
                if self._worker_coming():
                    start = time.monotonic()  # a nanny is restarting one: wait for it
                left = math.inf if self._timeout is None else start + self._timeout
                left -= time.monotonic()
                if left <= 0:
                    raise BackendError(self._no_workers_message(err, lost=again)) from err
                logger.debug("scattering parcv's data failed, trying again: %r", err)
                time.sleep(min(self.poll_seconds, left))
        for shipment, future in zip(missing, futures, strict=True):
            shipment.future = future

    def _no_workers_message(self, err: BaseException | None = None, *, lost: bool) -> str:
        """Why the run stops without workers: gone (with the data, or not) or never there."""
        wait = "ever" if self._timeout is None else f"{self._timeout:g} s"
        if lost:
            why = (
                "the workers holding parcv's data died (killed, out of memory, or crashed "
                "by a fit) and none came back to take it again"
            )
        elif err is not None:
            why = "none joined, or each died as the data reached it"
        else:
            why = "they died or left and none came back"
        last = "" if err is None else f" (last error: {type(err).__name__}: {err})"
        return (
            f"no Dask workers left at {self._where} for {wait}: {why}{last}; {_RESUME} "
            f"(or {_WAIT_HINT})."
        )

    def _threads_per_worker(self) -> dict[str, int]:
        try:
            return dict(self._client.nthreads())
        except Exception as err:  # the scheduler is gone
            raise _failure(f"lost the Dask scheduler at {self._where}", err) from err

    def _count_threads(self) -> int:
        return int(sum(self._threads_per_worker().values()))

    def add_plan(self, plan: Plan) -> int:
        """Scatter another plan of the run (its data is the run's); return its id.

        Held like the data: scattered again if every worker holding it dies.
        """
        pid = len(self._plans)
        self._plans[pid] = _Shipment(_PlanCopy(plan.for_workers()))
        self._ship()
        return pid

    def expect_versions(self, versions: Mapping[str, str]) -> None:
        """Refuse any worker whose distributions differ from ``versions`` (name: version).

        The versions the run's keys were computed with, on the driver. Each chunk
        carries them; a worker compares them with its own once (per run, and again
        once the set grows) before its first unit, so a worker with other versions
        stores nothing: its first chunk stops the run (see :meth:`wait`).
        """
        known = dict(self._versions.pairs) if self._versions is not None else {}
        merged = known | dict(versions)
        if self._versions is None or merged != known:
            self._versions = _Versions(uuid.uuid4().hex, tuple(sorted(merged.items())))

    def submit(self, units: tuple[Unit, ...], plan: int = 0) -> Hashable:
        # Sent at the next wait(), together: one graph update per priority, not one per chunk.
        self._count += 1
        self._outbox.append((self._count, units))
        if plan:
            self._plan_of[self._count] = plan
        return self._count

    def submit_refit(
        self,
        outer: int | None,
        after: list[Hashable],
        known: Sequence[Record],
        plan: int = 0,
    ) -> Hashable:
        """Refit the candidate of ``outer`` as a task depending on the chunks ``after``.

        Those chunks hold the fold's last fits; ``known`` has its other fit records.
        The task selects with the plan's rule on the worker, as soon as they finish,
        without a round trip through the driver. Its ticket yields no record if the
        task could not select or was lost: the driver then refits by itself.
        """
        self._count += 1
        self._chains.append((self._count, outer, after, known))
        if plan:
            self._plan_of[self._count] = plan
        return self._count

    def _flush(self) -> None:
        self._ship()  # lost and not noticed yet: chunks sent now would only be cancelled
        groups: dict[int, list[tuple[int, tuple[Unit, ...]]]] = {}
        for ticket, units in self._outbox:
            groups.setdefault(_priority(units), []).append((ticket, units))
        self._outbox = []
        for priority, sent in groups.items():
            self._send(sent, priority)
        chains, self._chains = self._chains, []
        for ticket, outer, after, known in chains:
            self._send_refit(ticket, outer, after, known)

    def _send_refit(
        self, ticket: int, outer: int | None, after: list[Hashable], known: Sequence[Record]
    ) -> None:
        tickets = set(after)
        deps = [f for f, (t, _) in self._futures.items() if t in tickets]
        kind = refit_kind(outer)
        try:
            future = self._client.submit(
                _run_refit, self._data.future, self._plans[self._plan_of.get(ticket, 0)].future,
                outer, known, self._threads, self._guard_all, *deps,
                key=f"parcv-{kind}-{uuid.uuid4().hex}", priority=1, pure=False,
                versions=self._versions,
            )  # fmt: skip
        except Exception as err:
            raise _failure(f"the Dask scheduler at {self._where} takes no work", err) from err
        self._futures[future] = (ticket, ())
        self._chained.add(ticket)
        future.add_done_callback(self._done.put)

    def _send(self, sent: list[tuple[int, tuple[Unit, ...]]], priority: int) -> None:
        while self._places and sent:
            self._map(sent[:1], priority, workers=[self._places.pop(0)])
            sent = sent[1:]
        if sent:
            self._map(sent, priority)

    def _map(
        self, sent: list[tuple[int, tuple[Unit, ...]]], priority: int, workers: Any = None
    ) -> None:
        chunks = [pack_units(units) for _, units in sent]
        keys = [f"parcv-{units[0].kind}-{uuid.uuid4().hex}" for _, units in sent]
        n = len(chunks)
        try:
            futures = self._client.map(
                _run_chunk,
                [self._data.future] * n,
                [self._plans[self._plan_of.get(ticket, 0)].future for ticket, _ in sent],
                chunks,
                [self._threads] * n,
                [self._guard_all] * n,
                key=keys,
                priority=priority,
                pure=False,
                workers=workers,
                allow_other_workers=workers is not None,
                versions=self._versions,
            )
        except Exception as err:
            raise _failure(f"the Dask scheduler at {self._where} takes no work", err) from err
        for future, item in zip(futures, sent, strict=True):
            self._futures[future] = item
            if self._guard_all is None:
                self._unguarded.add(future)
            future.add_done_callback(self._done.put)

    def wait(self) -> Iterator[tuple[Hashable, Sequence[Record]]]:
        self._flush()
        finished: list[Any] = []
        error: BackendError | None = None
        while self._futures and not finished and error is None:
            for future in self._wait_any():
                if future not in self._futures:
                    continue  # sent again guarded by a _resend earlier in this loop
                if future.status == "finished":
                    finished.append(future)
                elif (refused := _refused(future)) is not None:
                    # No unit's fault: on that worker every unit would be stored under a key
                    # that does not describe it. The chunks that finished elsewhere passed
                    # their worker's check: they are handed over, then the run stops.
                    error = refused
                elif self._futures[future][0] in self._chained:
                    finished.append(future)  # no record: the driver refits by itself
                elif error is None:
                    try:
                        self._resend(future)
                    except BackendError as err:
                        error = err  # raised once the finished chunks are handed over
        try:
            results = self._client.gather(finished) if finished else []
        except Exception:  # a result was lost with its worker: fetch one by one
            results = [self._result(future) for future in finished]
        for future, records in zip(finished, results, strict=True):
            if records is not None:  # None: lost with its data, and sent again
                ticket = self._futures.pop(future)[0]
                self._unguarded.discard(future)
                self._chained.discard(ticket)
                self._plan_of.pop(ticket, None)
                yield ticket, records
        if error is not None:
            raise error

    def _result(self, future: Any) -> Sequence[Record] | None:
        try:
            return list(future.result())
        except Exception as err:
            if self._futures[future][0] in self._chained:
                return []  # a chained refit lost or failed: the driver refits by itself
            lost = future.status in ("cancelled", "lost")
            if not lost and not isinstance(err, (OSError, CancelledError)):
                raise _failure(f"cannot fetch results from {self._where}", err) from err
        self._resend(future)  # its result went with its worker: compute it again
        return None

    def _wait_any(self) -> list[Any]:
        """Block until a future is done; give up when no worker is left for too long."""
        zero_since: float | None = None
        while True:
            try:
                done = [self._done.get(timeout=self.poll_seconds)]
            except queue.Empty:
                n_threads = self._count_threads()
                if n_threads:
                    zero_since, self.n_workers = None, n_threads
                elif self._worker_coming():
                    zero_since = None  # a nanny is restarting one: wait for it
                elif zero_since is None:
                    zero_since = time.monotonic()
                elif self._timeout is not None and time.monotonic() - zero_since > self._timeout:
                    raise BackendError(self._no_workers_message(lost=False)) from None
                continue
            while not self._done.empty():
                done.append(self._done.get())
            # Futures cancelled or replaced by this executor still report: skip them.
            done = [f for f in done if f in self._futures]
            if done:
                return done

    def _resend(self, future: Any) -> None:
        """Send again a chunk lost with its workers (from now on every chunk guarded);
        fail on a task error outside any fit, or on a chunk lost too often."""
        ticket, units = self._futures.pop(future)
        self._unguarded.discard(future)
        what = f"{len(units)} unit(s) from {units[0].key!r}"
        if future.status == "error":
            err = future.exception()
            if type(err).__name__ != "KilledWorker":
                raise _failure(f"Dask could not run {what} outside any fit", err) from err
        losses = self._losses[ticket] = self._losses.get(ticket, 0) + 1
        if losses > _MAX_LOSSES:
            raise BackendError(
                f"Dask workers died {losses} times running {what}, the last times with each "
                "unit in a process forked from its worker (so something kills the workers "
                f"themselves: the system's out-of-memory killer, or another process); {_RESUME}."
            )
        self._guard_from_now(what)
        self._outbox.append((ticket, units))
        self._flush()

    def _guard_from_now(self, what: str) -> None:
        """Run every chunk guarded from now on; send again, guarded, those sent unguarded.

        A worker died: if a unit killed it, any other chunk may hold one that kills
        its worker too, and each such death can take parcv's data with it.
        """
        if self._guard_all is not None:
            return
        logger.warning(
            "Dask workers died running %s; from now on each unit runs in a process forked "
            "from its worker, so a unit that kills its process costs only itself", what,
        )  # fmt: skip
        self._guard_all = self._guard
        pending = [f for f in self._unguarded if f in self._futures and f.status == "pending"]
        self._unguarded.clear()
        self._outbox.extend(self._futures.pop(f) for f in pending)
        if pending:
            self._client.cancel(pending)

    def cancel(self) -> None:
        self._outbox = []
        futures, self._futures = list(self._futures), {}
        self._unguarded.clear()
        if futures:
            self._client.cancel(futures)

    def close(self) -> None:
        """Cancel what still runs and free the scattered data and plans."""
        try:
            self.cancel()
            self._client.cancel([s.future for s in self._shipments() if s.future is not None])
        except Exception as err:  # the scheduler may be gone already
            logger.debug("ignored while closing the Dask executor: %r", err)
