"""The Dask backend on real loopback clusters: equality, connections, lost workers, data."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from functools import partial

import numpy as np
import psutil
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import Ridge
from sklearn.model_selection import ShuffleSplit
from sklearn.svm import SVC

import parcv
from parcv.engine.backends import check_backend
from parcv.engine.backends._dask_executor import _priority
from parcv.engine.backends.local import check_n_jobs
from parcv.engine.work import run_units
from parcv.plan.build import build_plan
from parcv.plan.data import check_dataset
from parcv.plan.records import Unit
from tests.conftest import start_loopback_cluster

GRID = {"C": [0.1, 1.0, 10.0], "gamma": ["scale", 0.05]}
X_REG = np.random.default_rng(0).normal(size=(90, 4))
Y_REG = X_REG @ np.array([1.0, -2.0, 0.5, 0.0]) + np.random.default_rng(1).normal(size=90)


class SleepyRidge(BaseEstimator, RegressorMixin):
    """Ridge whose fit also sleeps (so a run lasts long enough to disturb) and refuses alpha < 0."""

    def __init__(self, alpha=1.0, sleep=0.05):
        self.alpha, self.sleep = alpha, sleep

    def fit(self, X, y):
        if self.alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {self.alpha}")
        time.sleep(self.sleep)
        self.model_ = Ridge(alpha=self.alpha).fit(X, y)
        return self

    def predict(self, X):
        return self.model_.predict(X)


UNPICKLED = [0]


def _rebuild_counted(array):
    UNPICKLED[0] += 1
    return array.view(CountedArray)


class CountedArray(np.ndarray):
    """An array that counts, per process, how often it was unpickled (= received)."""

    def __reduce_ex__(self, protocol):
        return _rebuild_counted, (np.asarray(self),)


def _count_clients(dask_scheduler):
    return len(dask_scheduler.clients)


def _payload_sizes(dask_scheduler):
    return [ts.nbytes for key, ts in dask_scheduler.tasks.items() if "Payload" in str(key)]


def _transfers(dask_worker):
    """Bytes this worker sent to others, and how often it received the counted array."""
    return dask_worker.transfer_outgoing_bytes_total, UNPICKLED[0]


@contextmanager
def _client(cluster):
    from distributed import Client

    client = Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()


def _quiet_cluster(n_workers, **options):
    """A loopback cluster without the Active Memory Manager, as parcv starts its own."""
    cluster = start_loopback_cluster(n_workers, **options)
    with _client(cluster) as client:
        client.amm.stop()
    return cluster


def _scores(records):
    return {r.key: (r.test_scores, r.train_scores) for r in records}


class _Spy:
    """Backend and executor wrapper: records every unit yielded, then calls ``hook(count)``.

    Units, not keys: speculative refits of several candidates share a refit key.
    """

    def __init__(self, backend, hook=None):
        self.backend, self.hook, self.keys, self.chained = backend, hook, [], 0

    @contextmanager
    def open(self, plan, data):
        with self.backend.open(plan, data) as self.executor:
            yield self

    def __getattr__(self, name):  # the open executor's n_workers, chunk_seconds, submit, cancel
        return getattr(vars(self).get("executor"), name)

    def submit_refit(self, outer, after, known):
        self.chained += 1
        return self.executor.submit_refit(outer, after, known)

    def wait(self):
        for ticket, records in self.executor.wait():
            self.keys.extend(r.unit for r in records)
            if self.hook is not None:
                self.hook(len(self.keys))
            yield ticket, records


# --- equality: serial == local == dask -----------------------------------------------

RUNS = {
    "cross_validate": lambda X, y, b: parcv.cross_validate(
        SVC(), X, y, cv=4, return_train_score=True, backend=b
    ),
    "search": lambda X, y, b: parcv.search(SVC(), GRID, X, y, cv=3, backend=b),
    "nested_cv": lambda X, y, b: parcv.nested_cv(
        SVC(), GRID, X, y, outer=3, inner=3, return_train_score=True, backend=b
    ),
}


@pytest.mark.cluster
@pytest.mark.parametrize("entry", list(RUNS))
def test_serial_local_and_dask_agree_bit_for_bit(entry, clf_data, dask_cluster_1, dask_cluster_2):
    X, y = clf_data
    backends = {
        "serial": parcv.SerialBackend(),
        "local-1": parcv.LocalBackend(n_jobs=1),
        "local-2": parcv.LocalBackend(n_jobs=2),
        "dask-1": parcv.DaskBackend(cluster=dask_cluster_1),
        "dask-2": parcv.DaskBackend(cluster=dask_cluster_2),
    }
    results = {name: RUNS[entry](X, y, b) for name, b in backends.items()}
    base = _scores(results["serial"].records)
    for name, result in results.items():
        assert _scores(result.records) == base, name
    if entry == "nested_cv":  # enough units that both Dask workers take part
        assert len({r.worker for r in results["dask-2"].records}) == 2


@pytest.mark.cluster
def test_fast_cv_nested_on_dask_agrees_with_serial(dask_cluster_2):
    """Fast-CV units make one record per candidate; chained refits select from them too."""
    grid = {"alpha": [float(a) for a in np.logspace(-3, 3, 12)]}
    kwargs = {"outer": 4, "inner": 5, "fast_cv": True}
    ref = parcv.nested_cv(Ridge(), grid, X_REG, Y_REG, backend="serial", **kwargs)
    spy = _Spy(parcv.DaskBackend(cluster=dask_cluster_2))
    got = parcv.nested_cv(Ridge(), grid, X_REG, Y_REG, backend=spy, **kwargs)
    assert ref.fast_cv and got.fast_cv
    assert _scores(got.records) == _scores(ref.records)
    assert spy.chained >= 1


# --- connection options and their validation -------------------------------------------


@pytest.mark.cluster
def test_every_connection_option_gives_the_same_records(dask_cluster_2, tmp_path):
    expected = _scores(parcv.cross_validate(Ridge(), X_REG, Y_REG, cv=3, backend="serial").records)
    with _client(dask_cluster_2) as client:
        path = tmp_path / "scheduler.json"
        # As a scheduler writes it at start (Client.write_scheduler_file can fail to dump
        # per-worker metrics keyed by tuples once workers have exchanged data).
        path.write_text(json.dumps(client.scheduler_info(n_workers=0)))
        n_clients = client.run_on_scheduler(_count_clients)
        for backend in (
            parcv.DaskBackend(address=dask_cluster_2.scheduler_address),
            parcv.DaskBackend(scheduler_file=path),
            parcv.DaskBackend(client=client),
            parcv.DaskBackend(cluster=dask_cluster_2),
        ):
            result = parcv.cross_validate(Ridge(), X_REG, Y_REG, cv=3, backend=backend)
            assert _scores(result.records) == expected
        # The caller's client and cluster stay open; the clients parcv opened are closed.
        assert client.status == "running" and dask_cluster_2.status.name == "running"
        assert client.run_on_scheduler(_count_clients) == n_clients
        # Nothing of parcv's runs is left on the cluster.
        assert not client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.tasks))


@pytest.mark.cluster
def test_unreachable_scheduler_is_a_backend_error_naming_it(tmp_path):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{sock.getsockname()[1]}"
    missing = tmp_path / "never-written.json"
    loops = _io_loops()
    for backend, where in (
        (parcv.DaskBackend(address=address, connect_timeout=1), address),
        (parcv.DaskBackend(scheduler_file=missing, connect_timeout=1), str(missing)),
    ):
        # The wait is the connect_timeout given (1 s), said so in the message.
        said = rf"cannot reach Dask at .*{where}.* (after|within) 1 s\).*timeout"
        with pytest.raises(parcv.BackendError, match=said):
            parcv.cross_validate(Ridge(), X_REG, Y_REG, backend=backend)
    # Each failed connection used to leave its client's IO loop thread running, one more
    # per try in a notebook, and able to raise in whatever ran next.
    assert _io_loops() == loops


def _io_loops() -> int:
    return sum(thread.name == "IO loop" for thread in threading.enumerate())


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"address": "tcp://a:1", "scheduler_file": "s.json"}, ValueError, "at most one of"),
        ({"client": object()}, TypeError, "client must be a distributed.Client"),
        ({"cluster": "tcp://a:1"}, TypeError, "cluster must be a Dask cluster object"),
        ({"address": 8786}, TypeError, "address must be a str"),
        ({"address": "localhost:8786"}, ValueError, "address must start with one of"),
        ({"scheduler_file": 3}, TypeError, "scheduler_file must be a path"),
        ({"address": "tcp://a:1", "n_workers": 2}, ValueError, "n_workers sizes the local"),
        ({"n_workers": 0}, ValueError, "n_workers must be an int >= 1"),
        ({"threads": 1.5}, TypeError, "threads must be an int >= 1"),
        ({"no_worker_timeout": -1}, ValueError, "no_worker_timeout must be a number"),
        ({"connect_timeout": None}, TypeError, "connect_timeout must be a number"),
    ],
)
def test_bad_options_are_refused_before_anything_starts(kwargs, error, match):
    with pytest.raises(error, match=match):
        parcv.DaskBackend(**kwargs)


def test_security_with_an_open_client_is_refused():
    from distributed import Client

    client = Client.__new__(Client)  # never started: validation must not need a scheduler
    with pytest.raises(ValueError, match="security is for the client parcv opens"):
        parcv.DaskBackend(client=client, security=object())


def test_check_backend_dask_sizes_the_local_cluster():
    assert check_backend("dask", 2) == parcv.DaskBackend(n_workers=2)
    assert check_backend("dask").n_workers is None
    assert check_backend("dask", -1).n_workers == check_n_jobs(-1)


def test_refits_and_earlier_outer_folds_come_first():
    fits = [_priority((Unit("fit", o, 0, 0),)) for o in (None, 0, 1, 2)]
    assert fits == sorted(fits, reverse=True) and len(set(fits)) == 4
    assert _priority((Unit("refit", 3, None, 0),)) > max(fits)
    assert _priority((Unit("final", None, None, 0),)) > max(fits)


def test_a_task_failing_outside_any_fit_is_a_backend_error(dask_cluster_1):
    data = check_dataset(X_REG, Y_REG)
    plan = build_plan(Ridge(), {"alpha": [1.0]}, data, inner=3)
    backend = parcv.DaskBackend(cluster=dask_cluster_1)
    with backend.open(plan, data) as executor:
        executor.submit((Unit("fit", None, 0, 99),))  # no candidate 99: IndexError in the task
        with pytest.raises(parcv.BackendError, match=r"outside any fit \(IndexError"):
            list(executor.wait())


# --- processes and clusters parcv starts ---------------------------------------------


def _new_processes(before):
    """Live child processes started since ``before``, trackers of multiprocessing/loky aside."""
    new = []
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            if proc.pid not in before and proc.status() != psutil.STATUS_ZOMBIE:
                new += [] if "tracker" in " ".join(proc.cmdline()) else [proc.pid]
    return new


@pytest.mark.cluster
def test_own_local_cluster_is_closed_after_success_and_failure(clf_data):
    X, y = clf_data
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    threads_before = {t.ident for t in threading.enumerate()}
    ours = parcv.cross_validate(SVC(), X, y, cv=3, backend="dask", n_jobs=2)
    assert _new_processes(before) == []
    ref = parcv.cross_validate(SVC(), X, y, cv=3, backend="serial")
    assert _scores(ours.records) == _scores(ref.records)
    est, space = SleepyRidge(sleep=0.0), {"alpha": [-1.0, 1.0]}
    backend = parcv.DaskBackend(n_workers=1)
    # The estimator's own error crosses back from the worker, as scikit-learn raises it.
    with pytest.raises(ValueError, match="alpha must be >= 0") as info:
        parcv.search(est, space, X_REG, Y_REG, cv=3, error_score="raise", backend=backend)
    assert type(info.value) is ValueError
    assert _new_processes(before) == []
    # No event loop or client thread outlives the call (distributed's process-wide pools aside).
    left = [t for t in threading.enumerate() if t.ident not in threads_before and t.is_alive()]
    assert [t.name for t in left if not t.name.startswith(("Dask-Callback", "Dask-Offload"))] == []


def _profiler_runs(dask_worker):
    return "profile" in dask_worker.periodic_callbacks


@pytest.mark.cluster
def test_own_local_cluster_runs_without_the_statistical_profiler():
    data = check_dataset(X_REG, Y_REG)
    plan = build_plan(Ridge(), {"alpha": [1.0]}, data, inner=2)
    with parcv.DaskBackend(n_workers=1).open(plan, data) as executor:
        own = executor._client.run(_profiler_runs)
    cluster = start_loopback_cluster(1)  # dask's default configuration profiles
    try:
        with _client(cluster) as client:
            default = client.run(_profiler_runs)
    finally:
        cluster.close()
    assert list(own.values()) == [False] and list(default.values()) == [True]


# --- lost workers ---------------------------------------------------------------------


def _kill_one_worker(pids, state, count, after):
    """SIGKILL one worker process once ``after`` records arrived (from the driver's thread)."""
    if count >= after and not state:
        address, pid = sorted(pids.items())[0]
        os.kill(pid, signal.SIGKILL)
        state.update(address=address, pid=pid, at=count, time=time.monotonic())


@pytest.mark.cluster
@pytest.mark.parametrize("n_workers", [2, 1], ids=["one-of-two", "the-only-one"])
def test_sigkilled_worker_mid_run_changes_nothing(n_workers, caplog):
    """Killed mid-run: chunks recomputed elsewhere, data kept (2) or sent again (1)."""
    kwargs = {"outer": 4, "inner": 3, "X": X_REG, "y": Y_REG}
    space = {"alpha": [0.01, 0.1, 1.0, 10.0]}
    # The same numbers without the sleep, which only makes the Dask run last a few seconds.
    expected = parcv.nested_cv(SleepyRidge(sleep=0.0), space, backend="serial", **kwargs)
    cluster = _quiet_cluster(n_workers)
    try:
        with _client(cluster) as client:
            pids = client.run(os.getpid)
            state = {}
            kill = partial(_kill_one_worker, pids, state, after=16)
            spy = _Spy(parcv.DaskBackend(cluster=cluster), kill)
            result = parcv.nested_cv(SleepyRidge(sleep=0.06), space, backend=spy, **kwargs)
            client.wait_for_workers(n_workers, timeout=60)  # the nanny restarts the killed one
            after = client.run(os.getpid)
    finally:
        cluster.close()
    assert state and state["at"] < len(expected.records) / 2  # killed mid-run
    assert state["pid"] not in after.values() and len(after) == n_workers  # restarted
    assert _scores(result.records) == _scores(expected.records)
    # Each unit ran once; several refits of one outer fold are speculative guesses.
    assert len(spy.keys) == len(set(spy.keys))
    assert {u.key for u in spy.keys} == {r.key for r in expected.records}
    fits = [u for u in spy.keys if u.kind == "fit"]
    assert len(fits) == sum(r.unit.kind == "fit" for r in expected.records)
    assert result.chosen == expected.chosen
    assert spy.chained >= 1  # refits chained to their fits' futures, also with a worker lost
    # With two workers the broadcast copy survives; the only worker's copy is sent again.
    assert ("parcv's data was lost" in caplog.text) == (n_workers == 1)


@contextmanager
def _lone_worker(address):
    """One worker process without a nanny: once killed, nothing restarts it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    command = [sys.executable, "-m", "distributed.cli.dask_worker", address, "--no-nanny"]
    command += ["--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.cluster
def test_all_workers_gone_is_a_backend_error_within_the_timeout():
    cluster = start_loopback_cluster(0)
    try:
        with _client(cluster) as client, _lone_worker(cluster.scheduler_address):
            client.wait_for_workers(1, timeout=60)
            pids = client.run(os.getpid)
            state = {}
            kill = partial(_kill_one_worker, pids, state, after=1)
            backend = _Spy(parcv.DaskBackend(cluster=cluster, no_worker_timeout=2), kill)
            est, space = SleepyRidge(sleep=0.05), {"alpha": [0.1, 1.0]}
            with pytest.raises(parcv.BackendError, match=r"no Dask workers left .* for 2 s"):
                parcv.search(est, space, X_REG, Y_REG, cv=5, backend=backend)
            elapsed = time.monotonic() - state["time"]
    finally:
        cluster.close()
    assert 2 <= elapsed < 2 + 10  # the timeout, plus polling and a loaded machine's delays


# --- data movement --------------------------------------------------------------------


@pytest.mark.cluster
@pytest.mark.parametrize("amm", [False, True], ids=["broadcast", "active-memory-manager"])
def test_data_reaches_each_worker_once_not_once_per_task(amm):
    """Broadcast, or with dask's Active Memory Manager on: one copy, fetched by each worker."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3125)).view(CountedArray)  # 50 MB
    y = rng.normal(size=2000)
    data = check_dataset(X, y)
    space = {"quantile": list(np.linspace(0.05, 0.95, 20))}
    # Small train/test parts keep each of the 200 units cheap; the payload is still 50 MB.
    cv = ShuffleSplit(n_splits=10, train_size=0.02, test_size=0.02, random_state=0)
    plan = build_plan(DummyRegressor(strategy="quantile"), space, data, inner=cv)
    assert len(plan.units) == 200
    cluster = start_loopback_cluster(2) if amm else _quiet_cluster(2)
    try:
        with _client(cluster) as client:
            before = client.run(_transfers)
            with parcv.DaskBackend(cluster=cluster).open(plan, data) as executor:
                tickets = {executor.submit((unit,)): unit for unit in plan.units}  # 200 tasks
                got = {}
                while len(got) < len(tickets):
                    for ticket, records in executor.wait():
                        got[ticket] = records
                after = client.run(_transfers)
                (payload,) = client.run_on_scheduler(_payload_sizes)
    finally:
        cluster.close()
    assert payload >= X.nbytes  # dask accounts for the real size of the data
    # The scatter to a first worker, plus what workers sent each other (broadcast or fetch).
    delta = {w: np.subtract(after[w], before.get(w, (0, 0))) for w in after}
    moved = payload + sum(sent for sent, _ in delta.values())
    assert moved < 3 * payload, moved / payload
    assert [received for _, received in delta.values()] == [1, 1]  # once per worker
    for ticket, unit in tickets.items():
        (record,) = got[ticket]
        assert record.test_scores == run_units(plan, data, (unit,))[0].test_scores


def _placements(dask_scheduler):
    tasks = dask_scheduler.tasks.items()
    return [sorted(ts.worker_restrictions or ()) for key, ts in tasks if "parcv-fit" in str(key)]


@pytest.mark.cluster
def test_with_the_memory_manager_on_the_first_chunks_are_spread_over_the_workers():
    """One copy of the data: without placement dask would send every early chunk to its holder."""
    data = check_dataset(X_REG, Y_REG)
    plan = build_plan(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, data, inner=3)
    cluster = start_loopback_cluster(2)  # dask's defaults: the Active Memory Manager runs
    try:
        with _client(cluster) as client, parcv.DaskBackend(cluster=cluster).open(plan, data) as ex:
            workers = sorted(client.nthreads())
            tickets = [ex.submit((unit,)) for unit in plan.units[:6]]
            ex._flush()
            placed, deadline = [], time.monotonic() + 30
            while len(placed) < 6 and time.monotonic() < deadline:  # the graph arrives async
                placed = client.run_on_scheduler(_placements)
            got = {}
            while len(got) < len(tickets):
                got.update(ex.wait())
    finally:
        cluster.close()
    # Two chunks pinned (loosely) to each worker, the rest left to dask's scheduling.
    assert sorted(p for p in placed if p) == sorted([[w] for w in workers] * 2)
    assert sum(not p for p in placed) == 2
    for ticket, unit in zip(tickets, plan.units[:6], strict=True):
        assert got[ticket][0].test_scores == run_units(plan, data, (unit,))[0].test_scores
