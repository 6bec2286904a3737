"""The user's own Dask client: backend="dask" and backend=client run there, no second cluster."""

from __future__ import annotations

import logging

import distributed
import joblib
import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

import parcv
from parcv.engine.backends import _local_cluster

pytestmark = pytest.mark.cluster

X, Y = make_regression(n_samples=40, n_features=3, noise=1.0, random_state=0)
GRID = {"alpha": [0.1, 1.0, 10.0]}


def NoSecondCluster(*args, **kwargs):
    raise AssertionError("parcv started a LocalCluster although a client was given")


def _refuse_a_second_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    # Where parcv starts its cluster, looked up at each start. (Patching
    # distributed.LocalCluster caught nothing once parcv's module had imported it, and
    # broke that import, in a class statement, when this file ran first.)
    monkeypatch.setattr(_local_cluster, "start_local_cluster", NoSecondCluster)


def _parcv_tasks(dask_scheduler):
    """Tasks of parcv's units the scheduler has seen (its task prefixes count every task)."""
    return sum(
        sum(prefix.state_counts.values()) for prefix in dask_scheduler.task_prefixes.values()
    )


def _reference():
    return parcv.search(Ridge(), GRID, X, Y, cv=3, backend="serial")


@pytest.fixture
def client(dask_cluster_1, monkeypatch):
    _refuse_a_second_cluster(monkeypatch)
    with distributed.Client(dask_cluster_1) as c:  # the default client, as a user makes it
        yield c


def test_backend_dask_runs_on_the_current_default_client(client):
    before = client.run_on_scheduler(_parcv_tasks)
    got = parcv.search(Ridge(), GRID, X, Y, cv=3, backend="dask")
    assert client.run_on_scheduler(_parcv_tasks) > before  # the user's scheduler ran them
    ref = _reference()
    assert np.array_equal(got.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"])
    assert client.status == "running"  # parcv never closes the user's client


def test_a_client_object_is_a_backend(dask_cluster_1, monkeypatch):
    _refuse_a_second_cluster(monkeypatch)
    with distributed.Client(dask_cluster_1, set_as_default=False) as c:
        before = c.run_on_scheduler(_parcv_tasks)
        got = parcv.search(Ridge(), GRID, X, Y, cv=3, backend=c)
        assert c.run_on_scheduler(_parcv_tasks) > before
        assert c.status == "running"
    assert got.best_params_ == _reference().best_params_
    c = distributed.Client(dask_cluster_1, set_as_default=False)
    with c, pytest.raises(ValueError, match="n_jobs sizes a backend given by name"):
        parcv.search(Ridge(), GRID, X, Y, cv=3, backend=c, n_jobs=2)


def test_joblib_dask_context_runs_on_its_client_and_local_says_why_not(client):
    before = client.run_on_scheduler(_parcv_tasks)
    with joblib.parallel_backend("dask"):
        got = parcv.search(Ridge(), GRID, X, Y, cv=3, backend="dask")
        assert client.run_on_scheduler(_parcv_tasks) > before
        with pytest.warns(UserWarning, match="Pass backend='dask' to run on the Dask client"):
            parcv.search(Ridge(), GRID, X, Y, cv=3, backend="local", n_jobs=1)
    assert got.best_params_ == _reference().best_params_


def test_n_jobs_with_a_default_client_is_refused(client):
    with pytest.raises(ValueError, match="a Dask client is already the default"):
        parcv.search(Ridge(), GRID, X, Y, cv=3, backend="dask", n_jobs=2)


@pytest.mark.slow
def test_a_cluster_parcv_starts_logs_its_dashboard_link(caplog):
    assert parcv.engine.backends.dask.current_client() is None
    with caplog.at_level(logging.INFO, logger="parcv.engine.backends.dask"):
        parcv.search(Ridge(), GRID, X, Y, cv=3, backend="dask", n_jobs=1)
    mine = [r for r in caplog.records if r.name == "parcv.engine.backends.dask"]
    lines = [r.getMessage() for r in mine if "dashboard" in r.getMessage()]
    assert len(lines) == 1 and "http://127.0.0.1:" in lines[0], lines
