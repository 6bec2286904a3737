"""Shared fixtures: data sets and the backend matrix every behavioural test runs on."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from threadpoolctl import threadpool_limits

from parcv import LocalBackend, SerialBackend


@pytest.fixture(
    params=["serial", "local-1", "local-2"],
)
def backend(request: pytest.FixtureRequest) -> object:
    """Every backend parcv ships (the dask one joins with the dask backend)."""
    if request.param == "serial":
        return SerialBackend()
    return LocalBackend(n_jobs=int(request.param.split("-")[1]))


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
