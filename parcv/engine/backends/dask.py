"""The Dask backend: run units on a ``distributed`` cluster, data scattered once."""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from parcv.engine.backends._dask_executor import _DaskExecutor
from parcv.engine.backends.base import (
    WorkerImports,
    check_fault_options,
    check_number,
    check_threads,
    shipped_for_workers,
)
from parcv.engine.backends.local import check_n_jobs
from parcv.errors import BackendError
from parcv.plan.build import Plan
from parcv.plan.data import Dataset

__all__ = ["DaskBackend", "current_client"]

logger = logging.getLogger(__name__)

_SCHEMES = ("tcp://", "tls://", "ws://", "wss://")
_CONNECTIONS = ("address", "scheduler_file", "client", "cluster")


def check_scheduler_file(path: str | os.PathLike[str], name: str = "scheduler_file") -> str:
    """Return the address in a Dask scheduler file; raise ValueError saying what is wrong.

    ``name`` is the option that gave the file, for the message.

    Examples
    --------
    >>> check_scheduler_file(os.devnull)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: scheduler_file '/dev/null' is not a Dask scheduler file: it is empty. ...
    """
    file = os.fspath(path)
    fix = (
        "Pass the JSON file that `dask scheduler --scheduler-file FILE` writes "
        '(it holds the scheduler\'s "address").'
    )
    try:
        with open(file, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read {name} {file!r}: {err}. {fix}") from err
    try:
        info = json.loads(text)
        problem = "" if isinstance(info, dict) else f"it holds a JSON {type(info).__name__}"
    except json.JSONDecodeError as err:
        problem = "it is empty" if not text.strip() else f"it is not JSON ({err})"
    if not problem and not (isinstance(info.get("address"), str) and info["address"]):
        problem = f'it has no "address" string (got {info.get("address")!r})'
    if problem:
        raise ValueError(f"{name} {file!r} is not a Dask scheduler file: {problem}. {fix}")
    return str(info["address"])


def _wait_for_file(path: str, timeout: float) -> None:
    """Wait for a scheduler file to appear (dask's Client would wait forever) and check it."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise FileNotFoundError(f"{path!r} was not written within {timeout:g} s")
        time.sleep(0.05)
    # A scheduler writes the file after creating it: allow it a moment to finish.
    settled = time.monotonic() + min(timeout, 1.0)
    while True:
        try:
            check_scheduler_file(path)
            return
        except ValueError as err:
            if time.monotonic() > settled:
                raise BackendError(str(err)) from None
            time.sleep(0.05)


_HINTS = {
    "n_workers": "Pass the number of worker processes, or None for one per core.",
    "no_worker": "Pass the seconds to wait for a worker, or None to wait for ever.",
    "connect": "Pass the seconds to wait for the scheduler, e.g. 30.",
}


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


def current_client() -> Any:
    """The default ``distributed.Client`` of this process (the last one created), or None.

    ``with joblib.parallel_backend("dask"):`` runs on this client too.
    """
    if "distributed" not in sys.modules:  # no client can exist without the module
        return None
    from distributed import default_client

    try:
        return default_client()  # type: ignore[no-untyped-call]
    except ValueError:  # "No clients found"
        return None


def _link(cluster: Any) -> str:
    link = str(getattr(cluster, "dashboard_link", "") or "none")
    if importlib.util.find_spec("bokeh") is None:
        link += " (its pages need bokeh: pip install bokeh)"
    return link


def _close_half_started(err: BaseException, client_type: type[Any]) -> None:
    """Close a Client whose constructor raised (refused, timed out), here and now.

    Such a client still runs its IO loop, and the traceback keeps it alive. Left to its
    ``__del__``, it closes whenever the collector runs, which can be inside another
    client's start, holding distributed's loop-runner lock that the close needs: the
    process hangs. Closed here, no lock is held.
    """
    tb = err.__traceback__
    while tb is not None:
        half: Any = tb.tb_frame.f_locals.get("self")
        if isinstance(half, client_type):
            if half.status != "closed":
                with suppress(Exception):
                    half.close()
            # A client closed by its failed start returns from close() before it stops its
            # IO loop: one "IO loop" thread left running per failed connection otherwise.
            runner = getattr(half, "_loop_runner", None)
            if runner is not None:
                with suppress(Exception):
                    runner.stop()
        tb = tb.tb_next


def _import_on_workers(client: Any, imports: WorkerImports, stack: ExitStack) -> None:
    """Make the user's modules a plan names importable on every worker, now and joining later.

    A worker plugin puts their folders first on each worker's import path (a worker
    on another machine needs them at the same path: a shared file system, as on a
    Slurm or PBS cluster) and takes them off again when the run ends.
    """
    from distributed import WorkerPlugin

    class ParcvImports(WorkerPlugin):
        def __init__(self, wanted: WorkerImports) -> None:
            self.wanted = wanted
            self.added: tuple[str, ...] = ()

        def setup(self, worker: Any) -> None:
            self.wanted.check()
            self.added = self.wanted.apply()

        def teardown(self, worker: Any) -> None:
            for folder in self.added:
                with suppress(ValueError):
                    sys.path.remove(folder)

    name = f"parcv-imports-{uuid.uuid4().hex}"
    try:
        client.register_plugin(ParcvImports(imports), name=name)
    except FileNotFoundError as err:
        raise BackendError(f"a Dask worker cannot import this run's code: {err}") from None
    stack.callback(_unregister, client, name)


def _unregister(client: Any, name: str) -> None:
    """Take a run's import folders off the workers (a closed cluster has none left)."""
    try:
        client.unregister_worker_plugin(name)
    except Exception as err:  # workers gone, or the client closed first: nothing is left to undo
        logger.debug("worker plugin %s not unregistered: %r", name, err)


def _restarts_of(client: Any) -> Callable[[], bool] | None:
    """Whether a worker is on its way to the client's cluster (a nanny of it restarting one
    in this process), for the executor to wait for it; None when parcv cannot see."""
    cluster = getattr(client, "cluster", None)  # a Client made from a cluster object keeps it
    if cluster is None:
        return None
    from parcv.engine.backends._local_cluster import worker_on_its_way

    return functools.partial(worker_on_its_way, cluster)


@dataclass(frozen=True, slots=True, kw_only=True)
class DaskBackend:
    """Run units on a Dask ``distributed`` cluster.

    The plan and data are scattered once; each task carries their future
    and a few unit keys. Give at most one way to reach a scheduler; with
    none, parcv runs on the current default ``distributed.Client`` when one
    exists (the last ``Client(...)`` created in this process, which
    ``joblib.parallel_backend("dask")`` uses too), else it starts a loopback
    ``LocalCluster`` for the call, logs its dashboard link and closes it.

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
        Seconds without any worker (all lost, or none arrived yet), or
        without one that takes the data again after every copy was lost,
        before :class:`~parcv.BackendError`; ``None`` waits (for batch
        queues). Not counted while a nanny of the cluster, in this process
        (the one parcv starts, or a ``LocalCluster`` given), starts a worker.
    connect_timeout : float, default=30
        Seconds to reach the scheduler or start the local cluster.
    timeout : float or None, default=None
        Seconds one unit may run: a unit running longer is stopped and
        recorded as failed ("timed out after N s"). With a limit, each chunk
        runs in a process forked from its worker, which is killed at the limit.
    max_crashes : int, default=2
        How often a unit may kill its process before it is recorded as failed
        ("worker died: SIGSEGV"). On the cluster parcv starts, a chunk is
        retried on fresh workers as often (the scheduler's
        ``distributed.scheduler.allowed-failures`` is set to one less); on
        another cluster that setting of its scheduler (dask's default: 3)
        decides when Dask gives up on the chunk. Either way its units then run
        again one by one in forked processes, so the unit that kills them is
        found and recorded, and every other unit finishes; from then on every
        chunk runs in forked processes, so no other unit kills a worker.

    Raises
    ------
    ValueError, TypeError
        On construction: several connection options, or a bad value.

    See Also
    --------
    LocalBackend : a process pool on this machine.

    Notes
    -----
    A worker lost mid-run has its chunks recomputed elsewhere. The driver
    keeps the data and the plan: lost with every worker holding a copy
    (killed, or crashed by a fit), they are sent again as soon as a worker is
    back, restarted by its nanny or by a batch queue, within
    ``no_worker_timeout``. The cluster parcv starts keeps every nanny for the
    whole run, however long a restart takes (dask's ``LocalCluster`` closes
    one whose worker is not back within ``distributed.deploy.lost-worker-timeout``),
    and a process forked from a worker is held to the worker's ``memory_limit``.
    The data is broadcast unless
    the scheduler runs the Active Memory Manager (dask's default; it drops
    the copies and can stall a broadcast, dask/distributed#8796): then each
    worker fetches it on first use, or again after an idle copy was dropped.
    parcv turns the manager off on the clusters it starts. The folders of the
    user's own modules that the plan names (a spec's folder, a script's) are put
    first on every worker's import path for the run, by a worker plugin; a
    worker on another machine needs them at the same path (a shared file system).

    Examples
    --------
    >>> DaskBackend(address="tcp://127.0.0.1:8786").threads
    1
    >>> DaskBackend(threads=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: threads must be an int >= 1 or None; got 0. Pass 1 (one BLAS thread ...
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
    timeout: float | None = None
    max_crashes: int = 2

    def __post_init__(self) -> None:
        check_number("n_workers", self.n_workers, kind=int, hint=_HINTS["n_workers"])
        check_threads(self.threads)
        check_number(
            "no_worker_timeout", self.no_worker_timeout, kind=float, hint=_HINTS["no_worker"]
        )
        check_number(
            "connect_timeout",
            self.connect_timeout,
            kind=float,
            allow_none=False,
            hint=_HINTS["connect"],
        )
        check_fault_options(self.timeout, self.max_crashes)
        _check_options(self)

    @contextmanager
    def open(self, plan: Plan, data: Dataset) -> Iterator[_DaskExecutor]:
        """Reach the scheduler, scatter the data once; close what parcv started on exit."""
        # An estimator that cannot be sent is refused before a cluster starts.
        imports = shipped_for_workers(plan).imports
        with ExitStack() as stack:
            client = self.client if self.client is not None else self._open_client(stack)
            if imports.folders:  # before the plan is scattered: its unpickling imports them
                _import_on_workers(client, imports, stack)
            executor = _DaskExecutor(
                client,
                plan.for_workers(),
                data,
                threads=self.threads,
                timeout=self.no_worker_timeout,
                unit_timeout=self.timeout,
                max_crashes=self.max_crashes,
                worker_coming=_restarts_of(client),
            )
            stack.callback(executor.close)
            yield executor

    def _open_client(self, stack: ExitStack) -> Any:
        """Open a client to the scheduler given, use the current default client, or start
        a loopback LocalCluster."""
        from distributed import Client

        own = all(getattr(self, name) is None for name in _CONNECTIONS)
        current = current_client() if own else None
        if current is not None:
            if self.n_workers is not None:
                raise ValueError(
                    f"n_workers={self.n_workers!r} sizes a cluster parcv starts, but a Dask "
                    f"client is already the default (scheduler {current.scheduler.address}) "
                    "and parcv runs on it. Drop n_workers/n_jobs, or close that client."
                )
            logger.info("parcv runs on the current Dask client (%s)", current.scheduler.address)
            return current
        n_workers = check_n_jobs(self.n_workers)
        path = None if self.scheduler_file is None else os.fspath(self.scheduler_file)
        target: Any = self.cluster or self.address
        options: dict[str, Any] = {"timeout": self.connect_timeout, "set_as_default": False}
        if self.security is not None and not own:
            options["security"] = self.security
        try:
            if own:
                from parcv.engine.backends._local_cluster import start_local_cluster

                target = start_local_cluster(
                    n_workers, max_crashes=self.max_crashes, security=self.security
                )
                stack.callback(target.close)
                logger.info("Dask dashboard of the cluster parcv started: %s", _link(target))
            if path is not None:
                _wait_for_file(path, self.connect_timeout)
            client = Client(target, scheduler_file=path, **options)  # type: ignore[no-untyped-call]
            stack.callback(client.close)
            if own:
                client.amm.stop()  # keep every broadcast copy: no worker fetches the data twice
                client.wait_for_workers(n_workers, timeout=self.connect_timeout)
        except BackendError:  # a scheduler file that is not one: the message says why
            raise
        except Exception as err:
            _close_half_started(err, Client)
            raise self._unreachable(err, n_workers) from err
        return client

    def _unreachable(self, err: Exception, n_workers: int) -> BackendError:
        """The error of a scheduler or local cluster that could not be reached or started."""
        own = all(getattr(self, name) is None for name in _CONNECTIONS)
        if own:
            where, hint = f"a local Dask cluster of {n_workers} workers", ""
        else:
            at = self.address or getattr(self.cluster, "scheduler_address", "?")
            if self.scheduler_file is not None:
                at = os.fspath(self.scheduler_file)
            where = f"Dask at {at!r}"
            hint = (
                " Check that it runs and is reachable, or raise connect_timeout"
                " (parcv run --connect-timeout SECONDS)."
            )
        return BackendError(f"cannot reach {where} ({type(err).__name__}: {err}).{hint}")
