"""Batch-scheduler clusters: Dask workers as Slurm or PBS jobs via dask-jobqueue."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Hashable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from parcv.engine.backends.base import (
    Executor,
    check_fault_options,
    check_number,
    check_threads,
    pickled_for_workers,
)
from parcv.engine.backends.dask import DaskBackend
from parcv.errors import BackendError, did_you_mean
from parcv.plan.build import Plan
from parcv.plan.data import Dataset
from parcv.plan.records import Record, Unit

__all__ = ["JobQueueBackend", "make_cluster_backend"]

logger = logging.getLogger(__name__)

_CLASSES = {"slurm": "SLURMCluster", "pbs": "PBSCluster"}
# Adaptive scaling: check every second, keep a job through 30 s of less work (a job may
# wait long in the queue), and scale up once queued work exceeds ~1 s per worker.
_ADAPT = {"interval": "1s", "wait_count": 30, "target_duration": "1s"}
_DEATH_TIMEOUT = 60
_NO_WORKER = "Pass the seconds to wait for a worker job, or None to wait while jobs are queued."


def _import_jobqueue() -> Any:
    try:
        import dask_jobqueue
    except ImportError as err:
        raise ImportError(
            "Running workers as batch jobs (--cluster slurm|pbs) needs dask-jobqueue, "
            "which is not installed. Install parcv's 'hpc' extra: pip install 'parcv[hpc]'."
        ) from err
    return dask_jobqueue


def _check_count(name: str, value: Any, minimum: int, hint: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int >= {minimum}; got {value!r}. {hint}")
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value!r}. {hint}")


def _check_text(name: str, value: Any, example: str) -> None:
    if value is None:
        return
    message = f"{name} must be a non-empty string such as {example!r}; got {value!r}."
    if not isinstance(value, str):
        raise TypeError(message)
    if not value.strip():
        raise ValueError(message)


def _check_sizes(kind: Any, jobs: Any, minimum_jobs: Any) -> None:
    if kind not in _CLASSES:
        did = did_you_mean(kind, _CLASSES)
        raise ValueError(f"kind must be one of {list(_CLASSES)}; got {kind!r}. {did}".rstrip())
    _check_count("jobs", jobs, 1, "Pass the most batch jobs at once (--jobs N).")
    _check_count("minimum_jobs", minimum_jobs, 1, "At least one job holds parcv's data.")
    if minimum_jobs > jobs:
        raise ValueError(
            f"minimum_jobs must be <= jobs; got minimum_jobs={minimum_jobs!r}, jobs={jobs!r}. "
            "Lower minimum_jobs or raise jobs."
        )


class _ScaledExecutor:
    """The Dask executor, sized for the most workers the jobs can bring.

    The driver keeps ``2 * n_workers`` chunks in flight; sizing it for the
    full allocation shows the scheduler enough queued work to scale up.
    """

    def __init__(self, inner: Executor, n_workers: int) -> None:
        self._inner = inner
        self.n_workers = max(n_workers, inner.n_workers)
        self.chunk_seconds = inner.chunk_seconds
        self.chunk_rate = inner.chunk_rate
        self.depth = inner.depth

    def submit(self, units: tuple[Unit, ...], plan: int = 0) -> Hashable:
        return self._inner.submit(units, plan)

    def add_plan(self, plan: Plan) -> int:
        return self._inner.add_plan(plan)

    def expect_versions(self, versions: Mapping[str, str]) -> None:
        self._inner.expect_versions(versions)  # type: ignore[attr-defined]

    def submit_refit(
        self,
        outer: int | None,
        after: list[Hashable],
        known: tuple[Record, ...],
        plan: int = 0,
    ) -> Hashable:
        chain: Hashable = self._inner.submit_refit(outer, after, known, plan)  # type: ignore[attr-defined]
        return chain

    def wait(self) -> Iterator[tuple[Hashable, Sequence[Record]]]:
        return self._inner.wait()

    def cancel(self) -> None:
        self._inner.cancel()


@dataclass(frozen=True, slots=True, kw_only=True)
class JobQueueBackend:
    """Run units on Dask workers that a batch scheduler starts as jobs.

    Build one with :func:`make_cluster_backend`. Each run starts a
    dask-jobqueue cluster (its scheduler runs in this process), scales it
    adaptively between ``minimum_jobs`` and ``jobs`` jobs, and closes it at
    the end, cancelling every job, also when the run fails.

    Parameters
    ----------
    kind : {"slurm", "pbs"}
    jobs : int
        Most batch jobs at once.
    cluster_options : mapping
        Keyword arguments of the dask-jobqueue cluster class.
    minimum_jobs : int, default=1
    cores_per_job : int
        Worker threads each job brings (sizes the work kept in flight).
    threads : int or None, default=1
        Cap on BLAS/OpenMP threads inside each worker.
    security : distributed.Security, default=None
    no_worker_timeout : float or None, default=None
        Seconds without any worker before the run stops; None waits for
        queued jobs however long the queue is.
    timeout : float or None, default=None
        Seconds one unit may run (see :class:`DaskBackend`).
    max_crashes : int, default=2
        How often a unit may kill its process before it is recorded as failed
        (see :class:`DaskBackend`; the scheduler runs here, so it counts so).

    See Also
    --------
    make_cluster_backend : builds one from command-line style options.

    Examples
    --------
    >>> JobQueueBackend(kind="pbs", jobs=4, cores_per_job=8).jobs
    4
    """

    kind: str
    jobs: int
    cluster_options: Mapping[str, Any] = field(default_factory=dict)
    minimum_jobs: int = 1
    cores_per_job: int = 1
    threads: int | None = 1
    security: Any = None
    no_worker_timeout: float | None = None
    timeout: float | None = None
    max_crashes: int = 2

    def __post_init__(self) -> None:
        _check_sizes(self.kind, self.jobs, self.minimum_jobs)
        _check_count("cores_per_job", self.cores_per_job, 1, "Pass the cores of one job.")
        check_threads(self.threads)
        check_number("no_worker_timeout", self.no_worker_timeout, kind=float, hint=_NO_WORKER)
        check_fault_options(self.timeout, self.max_crashes)

    @contextmanager
    def open(self, plan: Plan, data: Dataset) -> Iterator[Executor]:
        """Start the cluster, run on it, cancel every job on exit."""
        from distributed import Client

        pickled_for_workers(plan)  # an estimator that cannot be sent is refused before any job

        client_class: Any = Client  # untyped upstream
        failures: list[str] = []
        with ExitStack() as stack:
            cluster = self._start(stack, failures)
            cluster.adapt(minimum_jobs=self.minimum_jobs, maximum_jobs=self.jobs, **_ADAPT)
            logger.info(
                "%s cluster at %s, %d to %d jobs; dashboard %s",
                self.kind,
                cluster.scheduler_address,
                self.minimum_jobs,
                self.jobs,
                getattr(cluster, "dashboard_link", "off"),
            )
            client = client_class(cluster, security=self.security, set_as_default=False)
            stack.callback(client.close)
            self._wait_for_a_worker(client, failures)
            backend = DaskBackend(
                client=client, threads=self.threads, no_worker_timeout=self.no_worker_timeout,
                timeout=self.timeout, max_crashes=self.max_crashes,
            )  # fmt: skip
            with backend.open(plan, data) as executor:
                yield _ScaledExecutor(executor, self.jobs * self.cores_per_job)

    def _wait_for_a_worker(self, client: Any, failures: list[str]) -> None:
        """Wait until the first worker job runs; fail fast if the scheduler refused it."""
        timeout = self.no_worker_timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        logger.info("waiting for the first worker job to start (it may wait in the queue)")
        while not failures:
            try:
                client.wait_for_workers(1, timeout=1.0)
                return
            except TimeoutError:
                if deadline is not None and time.monotonic() > deadline:
                    raise BackendError(
                        f"no {self.kind} worker job started within {timeout:g} s; they may "
                        "still be queued (check the queue), or raise no_worker_timeout."
                    ) from None
        raise BackendError(
            f"the batch system refused parcv's worker job: {failures[0].rstrip('.')}. Check "
            "the queue, account, walltime and memory options (or jobqueue.yaml)."
        )

    def _start(self, stack: ExitStack, failures: list[str]) -> Any:
        """Create the dask-jobqueue cluster; ``stack`` closes it."""
        import dask

        cls = getattr(_import_jobqueue(), _CLASSES[self.kind])
        options = dict(self.cluster_options, job_cls=_reporting(cls.job_cls, failures))
        # parcv broadcasts its data: keep the copies (as DaskBackend does for local clusters);
        # the scheduler runs here and counts the workers a chunk may kill as DaskBackend's.
        config = {
            "distributed.scheduler.active-memory-manager.start": False,
            "distributed.scheduler.allowed-failures": self.max_crashes - 1,
        }
        with dask.config.set(config):
            try:
                cluster = cls(**options)
            except (ValueError, TypeError, OSError) as err:
                raise BackendError(
                    f"cannot set up the {_CLASSES[self.kind]} ({type(err).__name__}: {err}). "
                    f"Check the options, or the jobqueue.{self.kind} section of dask's "
                    "configuration (jobqueue.yaml)."
                ) from err
        stack.callback(_close, cluster)
        logger.debug("job script of each worker job:\n%s", cluster.job_script())
        return cluster


def _reporting(job_class: Any, failures: list[str]) -> Any:
    """A job class that also notes why a job could not be submitted (e.g. sbatch's error)."""
    from distributed.core import Status

    class _ReportingJob(job_class):  # type: ignore[misc]
        async def start(self) -> None:
            try:
                await super().start()
            except Exception as err:
                text = " ".join(str(err).split())
                failures.append(f"{type(err).__name__}: {text}")
                # Marked failed, so that closing the cluster does not trip over this job.
                self.status = Status.failed
                raise

    return _ReportingJob


def _close(cluster: Any) -> None:
    """Close the cluster, cancelling every job it submitted."""
    try:
        cluster.close()
    except Exception as err:  # already closing: say so, nothing else can be done here
        logger.warning("closing the %s raised %r", type(cluster).__name__, err)


def _cluster_options(kind: str, given: Mapping[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Merge explicit options, extras and the loopback/dashboard defaults."""
    import dask

    config_name = extra.get("config_name") or kind
    options = {k: v for k, v in given.items() if v is not None}
    host = extra.pop("host", None)
    options.update(extra)
    scheduler = dict(
        options.pop("scheduler_options", None)
        or dask.config.get(f"jobqueue.{config_name}.scheduler-options", None)
        or {}
    )
    if host is not None:
        scheduler.setdefault("host", host)
        options["worker_extra_args"] = [*options.get("worker_extra_args", []), "--host", host]
    # The dashboard shows the user's code and data: loopback only unless configured.
    scheduler.setdefault("dashboard_address", "127.0.0.1:0")
    options["scheduler_options"] = scheduler
    if options.get("death_timeout") is None:
        configured = dask.config.get(f"jobqueue.{config_name}.death-timeout", None)
        options["death_timeout"] = configured or _DEATH_TIMEOUT
    if "log_directory" in options:
        options["log_directory"] = os.fspath(options["log_directory"])
    return options


def _resolve(name: str, value: Any, config_name: str) -> Any:
    import dask

    if value is not None:
        return value
    return dask.config.get(f"jobqueue.{config_name}.{name}", None)


def make_cluster_backend(
    kind: str,
    *,
    jobs: int,
    cores: int | None = None,
    memory: str | None = None,
    walltime: str | None = None,
    queue: str | None = None,
    account: str | None = None,
    security: Any = None,
    minimum_jobs: int = 1,
    threads: int | None = 1,
    no_worker_timeout: float | None = None,
    **extra: Any,
) -> JobQueueBackend:
    """Build a backend whose Dask workers are Slurm or PBS batch jobs.

    Each run submits worker jobs through dask-jobqueue, scales them with the
    work between ``minimum_jobs`` and ``jobs``, and cancels every job when
    the run ends or fails. Options left as None come from dask's own
    configuration (the ``jobqueue.slurm`` / ``jobqueue.pbs`` sections of
    ``~/.config/dask/jobqueue.yaml``, or ``DASK_JOBQUEUE__SLURM__*``
    environment variables); ``cluster/jobqueue.yaml`` is an example.

    Parameters
    ----------
    kind : {"slurm", "pbs"}
        The batch scheduler.
    jobs : int
        Most worker jobs at once (>= 1).
    cores : int, default=None
        Cores per job (one Dask worker thread each).
    memory : str, default=None
        Memory per job, e.g. ``"4GiB"``.
    walltime : str, default=None
        Time limit of each job, e.g. ``"01:00:00"``.
    queue : str, default=None
        Partition (Slurm) or queue (PBS).
    account : str, default=None
        Account charged for the jobs.
    security : distributed.Security, default=None
        TLS for the scheduler, workers and client (see
        :func:`parcv.cli.tls.make_security`).
    minimum_jobs : int, default=1
        Jobs kept while the run lasts (>= 1: a job holds parcv's data).
    threads : int or None, default=1
        Cap on BLAS/OpenMP threads inside each worker.
    no_worker_timeout : float or None, default=None
        Seconds without any worker before the run stops; None waits as long
        as the jobs stay queued.
    **extra
        More keyword arguments of ``dask_jobqueue.SLURMCluster`` /
        ``PBSCluster``, e.g. ``interface="ib0"`` (``"lo"`` keeps scheduler
        and workers on loopback), ``log_directory``, ``job_extra_directives``,
        ``death_timeout`` (default: configured, else 60 s); ``host="..."``
        binds the scheduler and workers to that address.

    Returns
    -------
    JobQueueBackend
        A parcv backend: pass it as ``backend=`` of any entry point.

    Raises
    ------
    ImportError
        dask-jobqueue is not installed (``pip install 'parcv[hpc]'``).
    ValueError, TypeError
        An unknown ``kind``, a bad count, or cores/memory neither given nor
        configured.

    See Also
    --------
    parcv.DaskBackend : connect to a scheduler that is already running.

    Notes
    -----
    The scheduler runs inside this process, so this machine (the login
    node) must be reachable from the compute nodes; choose the network with
    ``interface=``. Adaptive scaling releases a job only after about 30 s
    of less work, since a new job may wait long in the queue.

    Examples
    --------
    >>> make_cluster_backend("sge", jobs=2)
    Traceback (most recent call last):
    ...
    ValueError: kind must be one of ['slurm', 'pbs']; got 'sge'.
    """
    _check_sizes(kind, jobs, minimum_jobs)
    if cores is not None:
        _check_count("cores", cores, 1, "Pass the cores per job (--cores C), or None.")
    for name, value, example in (
        ("memory", memory, "4GiB"),
        ("walltime", walltime, "01:00:00"),
        ("queue", queue, "batch"),
        ("account", account, "my-project"),
    ):
        _check_text(name, value, example)
    _import_jobqueue()
    config_name = extra.get("config_name") or kind
    resolved_cores = _resolve("cores", cores, config_name)
    if resolved_cores is None or _resolve("memory", memory, config_name) is None:
        raise ValueError(
            f"cores and memory per job must be given or configured; got cores={cores!r}, "
            f"memory={memory!r} and no jobqueue.{config_name}.cores/memory in dask's "
            "configuration. Pass --cores/--memory, or set them in ~/.config/dask/jobqueue.yaml "
            "(see cluster/jobqueue.yaml)."
        )
    given = {"cores": cores, "memory": memory, "walltime": walltime, "queue": queue}
    given |= {"account": account, "security": security}
    return JobQueueBackend(
        kind=kind,
        jobs=jobs,
        cluster_options=MappingProxyType(_cluster_options(kind, given, dict(extra))),
        minimum_jobs=minimum_jobs,
        cores_per_job=int(resolved_cores),
        threads=threads,
        security=security,
        no_worker_timeout=no_worker_timeout,
    )
