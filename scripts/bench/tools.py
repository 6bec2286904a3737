"""Workloads W1-W3 and the tools that run them, for scripts/bench/nested.py.

Every tool runs the same nested-CV work (outer folds x inner folds x
candidates, plus one refit of the selected candidate per outer fold, scored
on the outer test fold) and returns the outer test scores. parcv runs with
``refit=False``: scikit-learn's nested idiom does not do parcv's extra
all-data search (select and refit), so that search is left out of every tool.
"""

from __future__ import annotations

import math
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sklearn.base import is_classifier
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, check_cv, cross_validate
from sklearn.svm import SVC
from sleepy import SleepyEstimator

import parcv

__all__ = [
    "DaskCluster",
    "Job",
    "Tool",
    "Workload",
    "make_tools",
    "make_workload",
    "run_serial",
    "time_call",
    "warm_up",
]


@dataclass(frozen=True)
class Job:
    """One nested-CV job: what every tool is asked to compute."""

    estimator: Any
    grid: dict[str, list[Any]]
    X: np.ndarray
    y: np.ndarray
    outer: int
    inner: int
    n_jobs: int

    def splitters(self) -> tuple[Any, Any]:
        """Explicit outer and inner splitters, the same objects for every tool.

        An int ``cv`` would let each tool choose: scikit-learn 1.9's ``is_classifier``
        does not recognise dask-ml's GridSearchCV, so ``cross_validate(cv=5)`` around
        it would split the outer loop with KFold instead of StratifiedKFold.
        """
        classifier = is_classifier(self.estimator)
        return (
            check_cv(self.outer, self.y, classifier=classifier),
            check_cv(self.inner, self.y, classifier=classifier),
        )

    def warm_version(self, n_rows: int = 120) -> Job:
        """A small job with the same estimator, grid and workers: warms pools and imports."""
        return replace(self, X=self.X[:n_rows], y=self.y[:n_rows], outer=2, inner=2)


@dataclass(frozen=True)
class Workload:
    """A benchmark workload: its job and how its ideal time is obtained."""

    name: str
    title: str
    job: Job
    # W3's ideal is known in advance (total sleep / workers); W1/W2's is measured every round.
    nominal_ideal: float | None = None

    @property
    def n_units(self) -> int:
        """Fits of the nested graph: every (outer, inner, candidate) plus one refit per outer."""
        n_candidates = int(np.prod([len(v) for v in self.job.grid.values()]))
        return self.job.outer * (self.job.inner * n_candidates + 1)


def _w1(quick: bool, n_jobs: int) -> Workload:
    n_samples, outer, inner = (200, 3, 2) if quick else (4000, 5, 3)
    X, y = make_classification(n_samples=n_samples, n_features=30, n_informative=10, random_state=0)
    grid = {"C": [0.1, 1.0, 10.0, 100.0], "gamma": [0.003, 0.01, 0.03]}
    if quick:
        grid = {"C": [1.0, 10.0], "gamma": [0.003, 0.03]}
    job = Job(SVC(kernel="rbf"), grid, X, y, outer=outer, inner=inner, n_jobs=n_jobs)
    size = f"{outer} x {inner} x {len(grid['C']) * len(grid['gamma'])}"
    return Workload("W1", f"nested CV {size}, RBF SVC on {n_samples} x 30", job)


def _w2(quick: bool, n_jobs: int) -> Workload:
    n_samples, outer, inner, n_alphas = (200, 3, 2, 10) if quick else (2000, 5, 5, 50)
    X, y = make_regression(n_samples=n_samples, n_features=20, noise=10.0, random_state=0)
    grid = {"alpha": [float(a) for a in np.logspace(-3, 3, n_alphas)]}
    job = Job(Ridge(), grid, X, y, outer=outer, inner=inner, n_jobs=n_jobs)
    title = f"nested CV {outer} x {inner} x {n_alphas}, Ridge on {n_samples} x 20 (tiny fits)"
    return Workload("W2", title, job)


def _w3(quick: bool, n_workers: int) -> Workload:
    fit_sleep, outer, inner, n_c = (0.01, 3, 2, 6) if quick else (0.05, 5, 3, 12)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 5)), rng.normal(size=300)
    # Irregularly spaced offsets: no two candidates tie on any fold.
    grid = {"c": [float(c) for c in np.linspace(-0.55, 0.6, n_c)]}
    job = Job(SleepyEstimator(fit_sleep=fit_sleep), grid, X, y, outer, inner, n_workers)
    title = (
        f"nested CV {outer} x {inner} x {n_c} of {fit_sleep * 1000:.0f} ms sleeping fits "
        f"(per-process lock), {n_workers} single-threaded worker processes"
    )
    workload = Workload("W3", title, job)
    return replace(workload, nominal_ideal=workload.n_units * fit_sleep / n_workers)


def make_workload(name: str, *, quick: bool, n_jobs: int, w3_workers: int) -> Workload:
    """Build workload ``name`` (``W1``, ``W2`` or ``W3``)."""
    if name == "W3":
        return _w3(quick, w3_workers)
    return {"W1": _w1, "W2": _w2}[name](quick, n_jobs)


def _nested(job: Job, backend: Any) -> parcv.NestedResult:
    """Nested CV only (refit=False): the same fits as scikit-learn's nested idiom."""
    outer, inner = job.splitters()
    return parcv.nested_cv(
        job.estimator,
        job.grid,
        job.X,
        job.y,
        outer=outer,
        inner=inner,
        refit=False,
        backend=backend,
    )


def run_serial(job: Job) -> tuple[np.ndarray, float]:
    """Run the job on parcv's serial backend: outer scores and summed fit+score seconds."""
    result = _nested(job, "serial")
    compute = sum(r.fit_time + r.score_time for r in result.records)
    return result.outer_scores["score"], compute


# Run in a child process: a LocalCluster whose scheduler and nannies live there, not in
# the benchmark's process. It prints the scheduler address, then waits for stdin to close.
# No worker time-to-live: the whole cluster is paused (SIGSTOP) while other tools run, and
# on resuming the scheduler must not count the pause as workers gone silent.
_CLUSTER_SCRIPT = """
import logging, sys
import dask
from distributed import LocalCluster
dask.config.set({"distributed.scheduler.worker-ttl": None})
cluster = LocalCluster(n_workers=int(sys.argv[1]), threads_per_worker=1, processes=True,
                       dashboard_address=None, silence_logs=logging.ERROR)
print(cluster.scheduler_address, flush=True)
sys.stdin.read()
cluster.close()
"""


class DaskCluster:
    """A LocalCluster of single-threaded worker processes, running only while asked to.

    The scheduler and the nannies run in a child process, as on a real cluster, not in
    the benchmark's process: there their event loop would share the GIL with every
    tool's driver (parcv's and joblib's pool threads), and with 16 workers it slows
    every tool, dask or not.

    It is started once, outside any timing, and then paused (SIGSTOP to its whole
    process group) except inside ``running()``, around the dask tools' runs. An idle
    cluster is not free: its heartbeats and the workers' profilers took 0.18 of this
    machine's 2 cores with 2 workers and 0.97 with 16, which the serial reference and
    the loky tools would lose if it kept running. Pausing rather than restarting keeps
    it warm: a cluster started afresh for every round ran the dask tools slower (W3's
    floor-dask: efficiency 0.51 against 0.65).
    """

    def __init__(self, n_workers: int) -> None:
        import subprocess
        import sys

        from distributed import Client

        self.n_workers = n_workers
        self.process = subprocess.Popen(
            [sys.executable, "-c", _CLUSTER_SCRIPT, str(n_workers)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group, to pause it whole
        )
        address = self.process.stdout.readline().strip()  # type: ignore[union-attr]
        if not address:
            self.process.kill()
            raise RuntimeError("the dask cluster process did not start")
        self.client = Client(address, set_as_default=True)
        self.client.wait_for_workers(n_workers, timeout=120)
        self._signal(signal.SIGSTOP)

    def _signal(self, signum: int) -> None:
        os.killpg(self.process.pid, signum)

    @contextmanager
    def running(self) -> Iterator[DaskCluster]:
        """The cluster, resumed for the block's duration."""
        self._signal(signal.SIGCONT)
        try:
            yield self
        finally:
            self._signal(signal.SIGSTOP)

    def close(self) -> None:
        """Close the client, then the cluster (its process exits when stdin closes)."""
        self._signal(signal.SIGCONT)
        self.client.close()
        self.process.stdin.close()  # type: ignore[union-attr]
        try:
            self.process.wait(timeout=60)
        except Exception:
            self.process.kill()


@dataclass
class Tool:
    """A named way to run a job; ``why_not`` says why it cannot run here."""

    name: str
    family: str  # "loky-parcv", "loky-joblib" or "dask": tools sharing a process pool
    run: Callable[[Job], np.ndarray | None]
    why_not: str = ""
    floor: bool = False  # a bound, not a tool: no scores, not compared


def _sleeps(job: Job) -> list[float]:
    """W3's sleeps, one per fit of the nested graph (fits and refits alike)."""
    n_candidates = int(np.prod([len(v) for v in job.grid.values()]))
    n_units = job.outer * (job.inner * n_candidates + 1)
    return [job.estimator.fit_sleep] * n_units


def _sleep_holding_lock(seconds: float) -> None:
    from sleepy import _LOCK

    with _LOCK:
        time.sleep(seconds)


def _floor_loky(job: Job) -> None:
    """The same sleeps as independent tasks on a joblib (loky) pool: no dependencies."""
    import joblib

    sleeps = _sleeps(job)
    joblib.Parallel(n_jobs=job.n_jobs)(joblib.delayed(_sleep_holding_lock)(s) for s in sleeps)


def _floor_dask(job: Job, client: Any) -> None:
    """The same sleeps as independent tasks submitted at once with ``client.map``."""
    sleeps = _sleeps(job)
    client.gather(client.map(_sleep_holding_lock, sleeps, pure=False))


# Compute seconds (summed fit + score time) of the last parcv run, measured in its workers.
LAST_COMPUTE: list[float] = [0.0]


def _parcv(job: Job, backend: Any) -> np.ndarray:
    result = _nested(job, backend)
    LAST_COMPUTE[0] = sum(r.fit_time + r.score_time for r in result.records)
    return np.asarray(result.outer_scores["score"])


def _sklearn(job: Job, inner_jobs: int | None, outer_jobs: int | None) -> np.ndarray:
    outer, inner = job.splitters()
    search = GridSearchCV(job.estimator, job.grid, cv=inner, n_jobs=inner_jobs)
    return cross_validate(search, job.X, job.y, cv=outer, n_jobs=outer_jobs)["test_score"]


def _joblib_dask(job: Job, client: Any) -> np.ndarray:
    import joblib

    # The inner idiom on the dask backend; n_jobs=1 keeps the outer loop in the driver.
    with joblib.parallel_backend("dask", client=client):
        return _sklearn(job, job.n_jobs, 1)


def _dask_ml(job: Job) -> np.ndarray:
    from dask_ml.model_selection import GridSearchCV as DaskGridSearchCV

    # No scheduler= (clone would deep-copy a Client): dask-ml uses the default client.
    # iid=False: rank candidates by the plain mean over inner folds, as scikit-learn
    # and parcv do (dask-ml's default weights folds by their size).
    outer, inner = job.splitters()
    search = DaskGridSearchCV(job.estimator, job.grid, cv=inner, iid=False)
    return cross_validate(search, job.X, job.y, cv=outer)["test_score"]


def make_tools(cluster: DaskCluster | None, *, floors: bool = False) -> list[Tool]:
    """Every tool compared, in table order; dask tools need ``cluster``.

    ``floors`` adds W3's two floors: the same number of sleeps run as independent
    tasks (no nested-CV dependencies, no data) on a loky pool and on the dask
    cluster, i.e. the best any tool built on that pool could do here.
    """
    tools = [
        Tool("parcv-local", "loky-parcv", lambda j: _parcv(j, parcv.LocalBackend(n_jobs=j.n_jobs))),
        Tool("parcv-dask", "dask", _unavailable),
        Tool("sklearn-inner", "loky-joblib", lambda j: _sklearn(j, j.n_jobs, None)),
        Tool("sklearn-outer", "loky-joblib", lambda j: _sklearn(j, None, j.n_jobs)),
        Tool("sklearn-both", "loky-joblib", lambda j: _sklearn(j, j.n_jobs, j.n_jobs)),
        Tool("joblib-dask", "dask", _unavailable),
        Tool("dask-ml", "dask", _dask_ml),
    ]
    if floors:
        tools += [
            Tool("floor-loky", "loky-joblib", _floor_loky, floor=True),
            Tool("floor-dask", "dask", _unavailable, floor=True),
        ]
    by_name = {t.name: t for t in tools}
    if cluster is None:
        for tool in tools:
            if tool.family == "dask":
                tool.why_not = "no dask cluster (--no-dask)"
        return tools
    by_name["parcv-dask"].run = lambda j: _parcv(j, parcv.DaskBackend(client=cluster.client))
    by_name["joblib-dask"].run = lambda j: _joblib_dask(j, cluster.client)
    if floors:
        by_name["floor-dask"].run = lambda j: _floor_dask(j, cluster.client)
    try:
        import dask_ml  # noqa: F401
    except ImportError as err:
        by_name["dask-ml"].why_not = f"dask-ml not installed ({err})"
    return tools


def _unavailable(job: Job) -> np.ndarray:
    raise RuntimeError("tool not available")


def time_call(tool: Tool, job: Job) -> tuple[float, np.ndarray | None]:
    """Wall seconds of one run of ``tool`` on ``job`` and its outer scores (None: a floor)."""
    started = time.perf_counter()
    scores = tool.run(job)
    wall = time.perf_counter() - started
    return wall, None if scores is None else np.asarray(scores, dtype=np.float64)


MAX_WARM_RUNS = 5


def warm_up(run: Callable[[Job], Any], job: Job) -> None:
    """Run ``run`` on the small job untimed until it stops getting faster: every worker is up.

    One run is not enough where a pool has just been (re)started: 16 fresh processes on 2
    cores are still starting and importing when a short warm job ends, and the timed run
    would pay for it.
    """
    previous = math.inf
    for _ in range(MAX_WARM_RUNS):
        started = time.perf_counter()
        run(job.warm_version())
        wall = time.perf_counter() - started
        if wall > 0.8 * previous:
            return
        previous = wall
