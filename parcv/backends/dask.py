"""The Dask backend: run units on a ``distributed`` cluster, data scattered once."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import queue
import time
import uuid
from collections.abc import Hashable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from parcv.backends.local import check_n_jobs
from parcv.data import Dataset
from parcv.errors import BackendError
from parcv.plan import Plan
from parcv.records import Record, Unit

__all__ = ["DaskBackend"]

logger = logging.getLogger(__name__)

_SCHEMES = ("tcp://", "tls://", "ws://", "wss://")
_CONNECTIONS = ("address", "scheduler_file", "client", "cluster")
_MAX_RESENDS = 3  # times a chunk whose data was lost with its workers is sent again
_RESUME = "finished results are kept, resume to continue"

# The clusters parcv starts: worker processes of one thread, on loopback, no dashboard.
_LOCAL = dict(threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None)


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


def _run_chunk(payload: _Payload, units: tuple[Unit, ...], threads: int | None) -> list[Record]:
    """Run one chunk on a worker, BLAS/OpenMP threads capped."""
    from parcv.backends._threads import cap_threads
    from parcv.work import run_units

    cap_threads(threads)
    return run_units(payload.plan, payload.data, units)


def _priority(units: tuple[Unit, ...]) -> int:
    """Refits first (each completes a result), then fits of earlier outer folds."""
    if any(u.kind != "fit" for u in units):
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
        self, client: Any, payload: _Payload, *, threads: int | None, timeout: float | None
    ) -> None:
        self._client, self._value = client, payload
        self._threads, self._timeout = threads, timeout
        self._where = str(getattr(client.scheduler, "address", "the scheduler"))
        self._count = 0
        self._futures: dict[Any, tuple[int, tuple[Unit, ...]]] = {}  # future: ticket, units
        self._resends: dict[int, int] = {}
        self._outbox: list[tuple[int, tuple[Unit, ...]]] = []  # submitted, not yet sent
        # Filled from dask's callback thread with each future that stopped pending.
        self._done: queue.SimpleQueue[Any] = queue.SimpleQueue()
        try:  # broadcast, unless the Active Memory Manager would drop the copies
            self._broadcast = not client.amm.running()
        except Exception:  # an old or restricted scheduler: assume dask's default (on)
            self._broadcast = False
        self._payload = self._scatter()
        self.n_workers = max(1, self._count_threads())
        # With one copy of the payload, dask sends every chunk to the worker holding it
        # (the first chunks are too few to be queued) and the others only get work by
        # stealing. So the first chunks are placed, two per worker, and each worker
        # fetches its copy with its first chunk.
        self._places: list[str] = [] if self._broadcast else self._workers() * 2

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

    def _workers(self) -> list[str]:
        try:
            return list(self._client.nthreads())
        except Exception as err:  # the scheduler is gone
            raise _failure(f"lost the Dask scheduler at {self._where}", err) from err

    def _count_threads(self) -> int:
        try:
            return int(sum(self._client.nthreads().values()))
        except Exception as err:  # the scheduler is gone
            raise _failure(f"lost the Dask scheduler at {self._where}", err) from err

    def submit(self, units: tuple[Unit, ...]) -> Hashable:
        # Sent at the next wait(), together: one graph update per priority, not one per chunk.
        self._count += 1
        self._outbox.append((self._count, units))
        return self._count

    def _flush(self) -> None:
        groups: dict[int, list[tuple[int, tuple[Unit, ...]]]] = {}
        for ticket, units in self._outbox:
            groups.setdefault(_priority(units), []).append((ticket, units))
        self._outbox = []
        for priority, sent in groups.items():
            self._send(sent, priority)

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
        n = len(chunks)
        try:
            futures = self._client.map(
                _run_chunk,
                [self._payload] * n,
                chunks,
                [self._threads] * n,
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
                yield self._futures.pop(future)[0], records
        if error is not None:
            raise error

    def _result(self, future: Any) -> list[Record] | None:
        try:
            return list(future.result())
        except Exception as err:
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
        """Send again a chunk whose data was lost with its workers; fail on a task error."""
        ticket, units = self._futures.pop(future)
        what = f"{len(units)} unit(s) from {units[0].key!r}"
        if future.status == "error":
            err = future.exception()
            raise _failure(f"Dask could not run {what} outside any fit", err) from err
        self._resends[ticket] = self._resends.get(ticket, 0) + 1
        if self._resends[ticket] > _MAX_RESENDS:
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
            self._client.cancel([self._payload])
        except Exception as err:  # the scheduler may be gone already
            logger.debug("ignored while closing the Dask executor: %r", err)


def _wait_for_file(path: str, timeout: float) -> None:
    """Wait for a scheduler file to appear (dask's Client would wait forever)."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise FileNotFoundError(f"{path!r} was not written within {timeout:g} s")
        time.sleep(0.05)


def _check_number(name: str, value: Any, *, kind: type, allow_none: bool = True) -> None:
    """Raise unless ``value`` is an int >= 1 (``kind=int``) or a number of seconds > 0."""
    if value is None and allow_none:
        return
    expected = "an int >= 1" if kind is int else "a number of seconds > 0"
    expected += " or None" * allow_none
    if isinstance(value, bool) or not isinstance(value, (int,) if kind is int else (int, float)):
        raise TypeError(f"{name} must be {expected}; got {value!r}.")
    if not value > 0:
        raise ValueError(f"{name} must be {expected}; got {value!r}.")


def _check_options(b: DaskBackend) -> None:
    """Refuse several connection options, wrong types or values, before anything starts."""
    given = [name for name in _CONNECTIONS if getattr(b, name) is not None]
    if len(given) > 1:
        raise ValueError(
            f"DaskBackend takes at most one of {list(_CONNECTIONS)}; got {given}. Pass one "
            "way to reach the scheduler, or none to start a local cluster."
        )
    if b.address is not None and not isinstance(b.address, str):
        raise TypeError(f"address must be a str like 'tcp://10.0.0.5:8786'; got {b.address!r}.")
    if b.address is not None and not b.address.startswith(_SCHEMES):
        raise ValueError(f"address must start with one of {list(_SCHEMES)}; got {b.address!r}.")
    if b.scheduler_file is not None and not isinstance(b.scheduler_file, (str, os.PathLike)):
        raise TypeError(f"scheduler_file must be a path; got {b.scheduler_file!r}.")
    if b.client is not None:
        from distributed import Client

        if not isinstance(b.client, Client):
            raise TypeError(f"client must be a distributed.Client; got {b.client!r}.")
    if b.cluster is not None and not hasattr(b.cluster, "scheduler_address"):
        raise TypeError(
            "cluster must be a Dask cluster object with a scheduler_address (LocalCluster, "
            f"dask_jobqueue.SLURMCluster, ...); got {b.cluster!r}. Pass a string as address=."
        )
    if b.n_workers is not None and given:
        raise ValueError(
            f"n_workers sizes the local cluster parcv starts; got n_workers={b.n_workers!r} "
            f"with {given[0]}=. Size that cluster itself instead."
        )
    if b.security is not None and b.client is not None:
        raise ValueError("security is for the client parcv opens; with client=, drop security=.")


@dataclass(frozen=True, slots=True, kw_only=True)
class DaskBackend:
    """Run units on a Dask ``distributed`` cluster.

    The plan and data are scattered once; each task carries their future
    and a few unit keys. Give at most one way to reach a scheduler; with
    none, parcv starts a loopback ``LocalCluster`` for the call and closes it.

    Parameters
    ----------
    address : str, default=None
        Scheduler address, e.g. ``"tcp://10.0.0.5:8786"`` or ``"tls://..."``.
    scheduler_file : str or path, default=None
        JSON file written by ``dask scheduler --scheduler-file`` (HPC jobs).
    client : distributed.Client, default=None
        An open client; parcv uses it and never closes it.
    cluster : cluster object, default=None
        E.g. ``LocalCluster``, ``SLURMCluster``: parcv closes only its client.
    n_workers : int, default=None
        Worker processes of the cluster parcv starts (``None``: every core).
    threads : int or None, default=1
        Cap on BLAS/OpenMP threads inside each worker (``None``: leave as is).
    security : distributed.Security, default=None
        TLS settings of the client parcv opens (or of the cluster it starts).
    no_worker_timeout : float or None, default=30
        Seconds without any worker (all lost, or none arrived yet) before
        :class:`~parcv.BackendError`; ``None`` waits (for batch queues).
    connect_timeout : float, default=30
        Seconds to reach the scheduler or start the local cluster.

    Raises
    ------
    ValueError, TypeError
        On construction: several connection options, or a bad value.

    See Also
    --------
    LocalBackend : a process pool on this machine.

    Notes
    -----
    A worker lost mid-run has its chunks recomputed elsewhere; data lost
    with every worker holding it is sent again. The data is broadcast unless
    the scheduler runs the Active Memory Manager (dask's default; it drops
    the copies and can stall a broadcast, dask/distributed#8796): then each
    worker fetches it on first use, or again after an idle copy was dropped.
    parcv turns the manager off on the clusters it starts.

    Examples
    --------
    >>> DaskBackend(address="tcp://127.0.0.1:8786").threads
    1
    >>> DaskBackend(threads=0)
    Traceback (most recent call last):
    ...
    ValueError: threads must be an int >= 1 or None; got 0.
    """

    address: str | None = None
    scheduler_file: str | os.PathLike[str] | None = None
    client: Any = None
    cluster: Any = None
    n_workers: int | None = None
    threads: int | None = 1
    security: Any = None
    no_worker_timeout: float | None = 30.0
    connect_timeout: float = 30.0

    def __post_init__(self) -> None:
        _check_number("n_workers", self.n_workers, kind=int)
        _check_number("threads", self.threads, kind=int)
        _check_number("no_worker_timeout", self.no_worker_timeout, kind=float)
        _check_number("connect_timeout", self.connect_timeout, kind=float, allow_none=False)
        _check_options(self)

    @contextmanager
    def open(self, plan: Plan, data: Dataset) -> Iterator[_DaskExecutor]:
        """Reach the scheduler, scatter the data once; close what parcv started on exit."""
        with ExitStack() as stack:
            client = self.client if self.client is not None else self._open_client(stack)
            executor = _DaskExecutor(
                client,
                _Payload(plan.for_workers(), data),
                threads=self.threads,
                timeout=self.no_worker_timeout,
            )
            stack.callback(executor.close)
            yield executor

    def _open_client(self, stack: ExitStack) -> Any:
        """Open a client to the scheduler given, or start a loopback LocalCluster for it."""
        from distributed import Client, LocalCluster

        own = all(getattr(self, name) is None for name in _CONNECTIONS)
        n_workers = check_n_jobs(self.n_workers)
        path = None if self.scheduler_file is None else os.fspath(self.scheduler_file)
        target: Any = self.cluster or self.address
        options: dict[str, Any] = {"timeout": self.connect_timeout, "set_as_default": False}
        if self.security is not None and not own:
            options["security"] = self.security
        try:
            if own:
                # The scheduler's HTTP server (health, metrics) on a free port, never 8787.
                http = {"dashboard_address": "127.0.0.1:0"}
                target = LocalCluster(  # type: ignore[no-untyped-call]
                    n_workers=n_workers, security=self.security, scheduler_kwargs=http, **_LOCAL
                )
                stack.callback(target.close)
            if path is not None:
                _wait_for_file(path, self.connect_timeout)
            client = Client(target, scheduler_file=path, **options)  # type: ignore[no-untyped-call]
            stack.callback(client.close)
            if own:
                client.amm.stop()  # keep every broadcast copy: no worker fetches the data twice
                client.wait_for_workers(n_workers, timeout=self.connect_timeout)
        except Exception as err:
            at = path or self.address or getattr(self.cluster, "scheduler_address", "?")
            where = f"a local Dask cluster of {n_workers} workers" if own else f"Dask at {at!r}"
            hint = "" if own else " Check that it runs and is reachable, or raise connect_timeout."
            raise BackendError(
                f"cannot reach {where} ({type(err).__name__}: {err}).{hint}"
            ) from err
        return client
