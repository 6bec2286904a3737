"""Dask tasks and the executor: chunks as futures, data scattered once, refits chained."""

from __future__ import annotations

import asyncio
import logging
import math
import queue
import time
import uuid
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any

from parcv.errors import BackendError
from parcv.plan.build import Plan
from parcv.plan.data import Dataset
from parcv.plan.kinds import KINDS, refit_kind
from parcv.plan.records import Record, Unit

__all__: list[str] = []

logger = logging.getLogger("parcv.engine.backends.dask")

_MAX_RESENDS = 3  # times a chunk whose data was lost with its workers is sent again
_RESUME = "finished results are kept, resume to continue"


@dataclass(frozen=True, slots=True)
class _Payload:
    """The plan and data of a run: one object, scattered once per run."""

    plan: Plan
    data: Dataset

    def __sizeof__(self) -> int:
        # Dask sizes objects with sys.getsizeof: report the arrays, not a few bytes.
        from dask.sizeof import sizeof

        d = self.data
        folds = [f for fs in (self.plan.outer_folds, *self.plan.inner_folds.values()) for f in fs]
        indices = sum(f.train.nbytes + f.test.nbytes for f in folds)
        return int(sizeof([d.X, d.y, d.groups, d.fit_params])) + indices


@dataclass(frozen=True, slots=True)
class _Guard:
    """How a chunk runs in forked children (see ``_guard``): per-unit time limit, tries."""

    timeout: float | None
    max_crashes: int


def _run_chunk(
    payload: _Payload,
    units: tuple[Unit, ...],
    threads: int | None,
    guard: _Guard | None = None,
    plan: Plan | None = None,
) -> list[Record]:
    """Run one chunk on a worker, BLAS/OpenMP threads capped; guarded if ``guard``.

    ``plan``: a plan added to the run (a strategy's round), else the payload's own.
    """
    from parcv.engine.backends._threads import cap_threads
    from parcv.engine.work import run_units

    cap_threads(threads)
    if plan is not None:
        payload = _Payload(plan, payload.data)
    if guard is None:
        return run_units(payload.plan, payload.data, units)
    from distributed import get_worker

    from parcv.engine.backends._guard import run_guarded
    from parcv.engine.work import lost_unit_records

    return run_guarded(
        payload.plan, payload.data, units, timeout=guard.timeout,
        max_crashes=guard.max_crashes, worker=f"Dask worker {get_worker().address}",
        on_lost=lost_unit_records,
    )  # fmt: skip


def _run_refit(
    payload: _Payload,
    outer: int | None,
    known: tuple[Record, ...],
    threads: int | None,
    guard: _Guard | None,
    *chunks: list[Record],
    plan: Plan | None = None,
) -> list[Record]:
    """Select the candidate of ``outer`` from its fits, then refit it (a chained refit).

    ``known`` holds the fold's fit records the driver had when it sent this task;
    ``chunks`` are the results of the chunks holding the others. Returns no record
    when nothing can be selected: the driver selects itself and says why.
    """
    from parcv.results.aggregate import select_for

    if plan is not None:
        payload = _Payload(plan, payload.data)
    records = {r.key: r for r in known}
    fits = (r for chunk in chunks for r in chunk if KINDS[r.unit.kind].selects)
    records.update((r.key, r) for r in fits if r.unit.outer == outer)
    try:
        chosen = select_for(payload.plan, records, outer)
    except Exception:
        return []
    return _run_chunk(payload, (Unit(refit_kind(outer), outer, None, chosen),), threads, guard)


def _priority(units: tuple[Unit, ...]) -> int:
    """Refits first (each completes a result), then fits of earlier outer folds."""
    if any(not KINDS[u.kind].selects for u in units):
        return 1
    return max(0 if u.outer is None else -(u.outer + 1) for u in units)


def _failure(what: str, err: BaseException) -> BackendError:
    return BackendError(f"{what} ({type(err).__name__}: {err}); {_RESUME}.")


class _DaskExecutor:
    """Chunks as futures of one client, all sharing one scattered (plan, data) future."""

    chunk_seconds = 0.2
    poll_seconds = 0.5
    # Chunks in flight per worker: a result's round trip through the scheduler and the
    # driver takes longer than a local pool's, so workers need a deeper queue to never idle
    # (W3 on 16 workers: efficiency 0.25 with 2, 0.35-0.42 with 8).
    depth = 8

    def __init__(
        self,
        client: Any,
        payload: _Payload,
        *,
        threads: int | None,
        timeout: float | None,
        unit_timeout: float | None = None,
        max_crashes: int = 2,
    ) -> None:
        self._client, self._value = client, payload
        self._threads, self._timeout = threads, timeout
        # With a time limit every chunk runs guarded; else only a chunk that killed workers.
        self._guard_isolated = _Guard(unit_timeout, max_crashes)
        self._guard_all = self._guard_isolated if unit_timeout is not None else None
        self._isolated: set[int] = set()  # tickets of chunks sent again, guarded
        self._where = str(getattr(client.scheduler, "address", "the scheduler"))
        self._count = 0
        self._futures: dict[Any, tuple[int, tuple[Unit, ...]]] = {}  # future: ticket, units
        self._resends: dict[int, int] = {}
        self._outbox: list[tuple[int, tuple[Unit, ...]]] = []  # submitted, not yet sent
        self._chains: list[tuple[int, int | None, list[Hashable], tuple[Record, ...]]] = []
        # Plans added to the run, scattered each once (None: the payload's own, plan 0),
        # and each ticket's plan id.
        self._plans: list[Any] = [None]
        self._plan_of: dict[int, int] = {}
        self._chained: set[int] = set()  # tickets of chained refits
        # Filled from dask's callback thread with each future that stopped pending.
        self._done: queue.SimpleQueue[Any] = queue.SimpleQueue()
        try:  # broadcast, unless the Active Memory Manager would drop the copies
            self._broadcast = not client.amm.running()
        except Exception:  # an old or restricted scheduler: assume dask's default (on)
            self._broadcast = False
        self._payload = self._scatter()
        per_worker = self._threads_per_worker()
        self.n_workers = max(1, sum(per_worker.values()))
        # With one copy of the payload, dask sends every chunk to the worker holding it
        # (the first chunks are too few to be queued) and the others only get work by
        # stealing. So the first chunks are placed, two per worker, and each worker
        # fetches its copy with its first chunk.
        self._places: list[str] = [] if self._broadcast else list(per_worker) * 2

    def _scatter(self) -> Any:
        # hash=False: a key of this run only, so another run's cancel never frees it.
        timeout = math.inf if self._timeout is None else self._timeout
        value, broadcast = [self._value], self._broadcast
        try:
            [future] = self._client.scatter(value, broadcast=broadcast, hash=False, timeout=timeout)
        except (TimeoutError, asyncio.TimeoutError) as err:
            raise BackendError(self._no_workers_message()) from err
        except Exception as err:
            raise _failure(f"cannot send the data to the workers of {self._where}", err) from err
        return future

    def _no_workers_message(self) -> str:
        return (
            f"no Dask workers left at {self._where} for {self._timeout:g} s; {_RESUME} "
            "(or raise no_worker_timeout when workers come from a batch queue)."
        )

    def _threads_per_worker(self) -> dict[str, int]:
        try:
            return dict(self._client.nthreads())
        except Exception as err:  # the scheduler is gone
            raise _failure(f"lost the Dask scheduler at {self._where}", err) from err

    def _count_threads(self) -> int:
        return int(sum(self._threads_per_worker().values()))

    def add_plan(self, plan: Plan) -> int:
        """Scatter another plan of the run (its data is the payload's); return its id."""
        timeout = math.inf if self._timeout is None else self._timeout
        try:
            [future] = self._client.scatter([plan.for_workers()], broadcast=self._broadcast,
                                            hash=False, timeout=timeout)  # fmt: skip
        except (TimeoutError, asyncio.TimeoutError) as err:
            raise BackendError(self._no_workers_message()) from err
        except Exception as err:
            raise _failure(f"cannot send a plan to the workers of {self._where}", err) from err
        self._plans.append(future)
        return len(self._plans) - 1

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
        known: tuple[Record, ...],
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
        self, ticket: int, outer: int | None, after: list[Hashable], known: tuple[Record, ...]
    ) -> None:
        tickets = set(after)
        deps = [f for f, (t, _) in self._futures.items() if t in tickets]
        kind = refit_kind(outer)
        try:
            future = self._client.submit(
                _run_refit, self._payload, outer, known, self._threads, self._guard_all, *deps,
                plan=self._plans[self._plan_of.get(ticket, 0)],
                key=f"parcv-{kind}-{uuid.uuid4().hex}", priority=1, pure=False,
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
        chunks = [units for _, units in sent]
        keys = [f"parcv-{units[0].kind}-{uuid.uuid4().hex}" for units in chunks]
        guards = [
            self._guard_isolated if ticket in self._isolated else self._guard_all
            for ticket, _ in sent
        ]
        n = len(chunks)
        try:
            futures = self._client.map(
                _run_chunk,
                [self._payload] * n,
                chunks,
                [self._threads] * n,
                guards,
                [self._plans[self._plan_of.get(ticket, 0)] for ticket, _ in sent],
                key=keys,
                priority=priority,
                pure=False,
                workers=workers,
                allow_other_workers=workers is not None,
            )
        except Exception as err:
            raise _failure(f"the Dask scheduler at {self._where} takes no work", err) from err
        for future, item in zip(futures, sent, strict=True):
            self._futures[future] = item
            future.add_done_callback(self._done.put)

    def wait(self) -> Iterator[tuple[Hashable, list[Record]]]:
        self._flush()
        finished: list[Any] = []
        error: BackendError | None = None
        while self._futures and not finished and error is None:
            for future in self._wait_any():
                if future.status == "finished":
                    finished.append(future)
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
                self._chained.discard(ticket)
                self._plan_of.pop(ticket, None)
                yield ticket, records
        if error is not None:
            raise error

    def _result(self, future: Any) -> list[Record] | None:
        try:
            return list(future.result())
        except Exception as err:
            if self._futures[future][0] in self._chained:
                return []  # a chained refit lost or failed: the driver refits by itself
            if future.status not in ("cancelled", "lost"):
                raise _failure(f"cannot fetch results from {self._where}", err) from err
        self._resend(future)
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
                elif zero_since is None:
                    zero_since = time.monotonic()
                elif self._timeout is not None and time.monotonic() - zero_since > self._timeout:
                    raise BackendError(self._no_workers_message()) from None
                continue
            while not self._done.empty():
                done.append(self._done.get())
            # Futures cancelled or replaced by this executor still report: skip them.
            done = [f for f in done if f in self._futures]
            if done:
                return done

    def _resend(self, future: Any) -> None:
        """Send again a chunk lost with its workers (guarded, if it may be what kills them);
        fail on a task error outside any fit."""
        ticket, units = self._futures.pop(future)
        what = f"{len(units)} unit(s) from {units[0].key!r}"
        killed = future.status == "error"
        if killed and type(err := future.exception()).__name__ != "KilledWorker":
            raise _failure(f"Dask could not run {what} outside any fit", err) from err
        self._resends[ticket] = self._resends.get(ticket, 0) + 1
        if ticket not in self._isolated and (killed or self._resends[ticket] > 1):
            # Its workers died allowed-failures + 1 times (KilledWorker), or it was lost with
            # them (and the data) twice: it may hold a unit that kills them, or sat beside
            # one. Guarded, such a unit kills only the process forked for it.
            logger.warning(
                "Dask workers died running %s; running them again, each in a forked process, "
                "to find the unit that kills them", what,
            )  # fmt: skip
            self._isolated.add(ticket)
            self._resends[ticket] = 0
        elif self._resends[ticket] > _MAX_RESENDS:
            raise BackendError(f"Dask lost {what} {_MAX_RESENDS} times; {_RESUME}.")
        if self._payload.status != "finished":
            logger.warning("parcv's data was lost with its Dask workers; sending it again")
            self._payload = self._scatter()
        self._send([(ticket, units)], _priority(units))

    def cancel(self) -> None:
        self._outbox = []
        futures, self._futures = list(self._futures), {}
        if futures:
            self._client.cancel(futures)

    def close(self) -> None:
        """Cancel what still runs and free the scattered data."""
        try:
            self.cancel()
            self._client.cancel([self._payload, *(p for p in self._plans if p is not None)])
        except Exception as err:  # the scheduler may be gone already
            logger.debug("ignored while closing the Dask executor: %r", err)
