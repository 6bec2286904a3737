"""Shared fixtures: data sets and the backend matrix every behavioural test runs on."""

from __future__ import annotations

import os
import signal
import sys

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from threadpoolctl import threadpool_limits

from parcv import DaskBackend, LocalBackend, SerialBackend


def start_loopback_cluster(n_workers: int, **options: object) -> object:
    """A real Dask cluster: worker processes with one thread each, on loopback only."""
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        # No dashboard; the scheduler's HTTP server on a free port, never 8787.
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        **options,
    )


# What a Dask worker of the tests' clusters imports before its first task: distributed's
# own list (distributed.utils.get_mp_context) and parcv's worker code with scikit-learn.
_DASK_WORKER_PRELOAD = [
    "distributed", "numpy", "pandas", "cloudpickle", "msgpack", "toolz", "tornado",
    "sklearn.base", "parcv.engine.work", "parcv.engine.backends._dask_executor",
]  # fmt: skip


@pytest.fixture(autouse=True, scope="session")
def _dask_workers_forked_from_a_server():
    """The Dask clusters a test starts in its process fork their workers from one server.

    Spawned (Dask's default), each worker is a fresh interpreter that imports distributed,
    scikit-learn and parcv's worker code: 4.8 to 6.7 s of CPU each on a 2-core machine,
    for every worker a test starts, kills or restarts. Forked from a server that imported
    them once (as Dask's own test suite does), a worker is ready at once; what the tests
    check of workers (their deaths, restarts, memory limits, the data they receive) is
    that of any worker process. ``tests/engine/test_dask.py`` alone took 139 s of CPU
    spawned, 55 s forked. Clusters started by a process of their own (``parcv run``,
    ``dask worker``) spawn theirs, as a user's do.
    """
    try:
        import dask
        from distributed.utils import get_mp_context
    except ImportError:  # no Dask: its tests skip
        yield
        return
    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        # distributed names its server's modules at its first call, and never again.
        get_mp_context().set_forkserver_preload(_DASK_WORKER_PRELOAD)
        yield


@pytest.fixture(autouse=True, scope="session")
def _own_model_key(tmp_path_factory):
    """The session's model key in a folder of its own, never the user's (parcv.store.trust).

    Set before any test runs; every process a test starts (a CLI run) inherits it.
    """
    previous = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("config"))
    yield
    if previous is None:
        os.environ.pop("XDG_CONFIG_HOME", None)
    else:
        os.environ["XDG_CONFIG_HOME"] = previous


@pytest.fixture
def sigint_reaches_children():
    """Processes started in the test get SIGINT's default action, as in a terminal.

    A shell without job control starts background jobs (``pytest &`` in a script) with
    SIGINT ignored, and every child inherits that: a Ctrl-C sent by the test would do
    nothing. A handler set here is reset to the default action in each child on exec.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


# The session's clusters idle through most of the run, beside the tests on the other
# cores. Some of dask's defaults that change no result cost most of that: the workers'
# statistical profiler (every 10 ms) and every server's event-loop tick (every 20 ms). An
# idle 2-worker cluster took 0.117 and 0.142 of a core with them (two runs) and 0.038
# without (measured over 30 s, workers and scheduler); each test process holds two clusters.
# Then every server's system monitor (CPU, memory, disk and network counters read from
# /proc every 500 ms, for the dashboard, which these clusters do not serve) and the nannies'
# check of their workers' memory (every 100 ms; every 1 s here, for no test fills a worker of
# these clusters): 0.063 and 0.061 of a core with them, 0.021 and 0.020 without (over 60 s).
# In a profile of the whole suite (py-spy), the two were 245 of 5,709 busy seconds sampled.
_IDLE_CHEAP = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "1h",
    "distributed.admin.system-monitor.disk": False,
    "distributed.worker.memory.monitor-interval": "1s",
}


def _session_cluster(n_workers: int) -> object:
    import dask
    import distributed  # noqa: F401 (its config defaults, which the set below updates)

    with dask.config.set(_IDLE_CHEAP):  # the nannies hand it to their workers, restarts too
        return start_loopback_cluster(n_workers)


@pytest.fixture(scope="session")
def dask_cluster_1():
    """One Dask worker process for the whole test run (dask's config but for _IDLE_CHEAP)."""
    cluster = _session_cluster(1)
    yield cluster
    cluster.close()


@pytest.fixture(scope="session")
def dask_cluster_2():
    """Two Dask worker processes for the whole test run (dask's config but for _IDLE_CHEAP)."""
    cluster = _session_cluster(2)
    yield cluster
    cluster.close()


@pytest.fixture(
    params=["serial", "local-1", "local-2", "dask-1", "dask-2"],
)
def backend(request: pytest.FixtureRequest) -> object:
    """Every backend parcv ships; the Dask ones on session-wide loopback clusters."""
    kind, _, n = request.param.partition("-")
    if kind == "serial":
        return SerialBackend()
    if kind == "local":
        return LocalBackend(n_jobs=int(n))
    return DaskBackend(cluster=request.getfixturevalue(f"dask_cluster_{n}"))


@pytest.fixture(autouse=True)
def _import_path_as_found():
    """The CLI, run in process, puts each spec's folder first on ``sys.path`` (as its own
    process would); each test starts and ends with the path it found, so one test's
    folders never decide what a later test imports."""
    saved = list(sys.path)
    yield
    sys.path[:] = saved


@pytest.fixture(autouse=True)
def _single_blas_thread():
    """References run with one BLAS thread, as parcv's workers do, for == comparisons."""
    with threadpool_limits(limits=1):
        yield


@pytest.fixture
def clf_data() -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(n_samples=150, n_features=8, n_informative=4, random_state=0)
    return X, y


@pytest.fixture
def reg_data() -> tuple[np.ndarray, np.ndarray]:
    X, y = make_regression(n_samples=120, n_features=6, noise=10.0, random_state=0)
    return X, y
