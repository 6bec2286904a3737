"""Tests for parcv.fastloo: fast held-out predictions equal brute-force refits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, LeaveOneOut
from sklearn.tree import DecisionTreeRegressor

from parcv.bayes import BayesianLinearRegression
from parcv.fastloo import (
    SupportsHatMatrix,
    compute_hat_matrix,
    fast_cv_predictions,
    supports_fast_cv,
)
from parcv.gp import GaussianProcessLOO

RTOL = 1e-8


class ShrunkMean(RegressorMixin, BaseEstimator):
    """Predicts sum(y) / (n + shrinkage): penalised least squares for a constant."""

    def __init__(self, shrinkage=1.0):
        self.shrinkage = shrinkage

    def fit(self, X, y):
        self.value_ = np.sum(y) / (len(y) + self.shrinkage)
        return self

    def predict(self, X):
        return np.full(len(X), self.value_)

    def hat_matrix(self, X):
        return np.full((len(X), len(X)), 1.0 / (len(X) + self.shrinkage))


def _kernel():
    return ConstantKernel(1.0) * RBF(1.0) + WhiteKernel(0.1)


ESTIMATORS = {
    "ridge": Ridge(alpha=2.0),
    "ridge-no-intercept": Ridge(alpha=0.5, fit_intercept=False),
    "kernel-ridge-rbf": KernelRidge(alpha=0.1, kernel="rbf", gamma=0.5),
    "kernel-ridge-poly": KernelRidge(alpha=1.0, kernel="polynomial", degree=2),
    "sklearn-gp": GaussianProcessRegressor(_kernel(), optimizer=None),
    "sklearn-gp-default-kernel": GaussianProcessRegressor(alpha=0.1, optimizer=None),
    "gp-loo": GaussianProcessLOO(_kernel(), optimizer=None, alpha=1e-3),
    "bayes-poly": BayesianLinearRegression(degree=3, sigma2=0.1, tau2=2.0, optimize=False),
    "bayes-identity": BayesianLinearRegression(sigma2=0.5, optimize=False),
    "protocol": ShrunkMean(shrinkage=3.0),
}


def _data(n_samples, n_features=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n_samples, n_features))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 - X[:, 2] + rng.normal(0.0, 0.3, n_samples)
    return X, y


def _brute_force(estimator, X, y, folds):
    predictions = np.empty_like(y, dtype=float)
    for train, test in folds:
        predictions[test] = clone(estimator).fit(X[train], y[train]).predict(X[test])
    return predictions


def _relative_error(fast, brute):
    return float(np.max(np.abs(fast - brute)) / np.max(np.abs(brute)))


# LOO at n=200 costs 200 refits per estimator; 150 keeps the file fast on two cores.
@pytest.mark.parametrize(
    ("scheme", "n_samples"), [("loo", 60), ("loo", 150), ("5-fold", 60), ("5-fold", 200)]
)
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_fast_cv_equals_brute_force(name, scheme, n_samples):
    estimator = ESTIMATORS[name]
    X, y = _data(n_samples, seed=n_samples)
    splitter = LeaveOneOut() if scheme == "loo" else KFold(5, shuffle=True, random_state=0)
    folds = list(splitter.split(X))
    assert supports_fast_cv(estimator)
    fast = fast_cv_predictions(estimator, X, y, folds)
    assert _relative_error(fast, _brute_force(estimator, X, y, folds)) < RTOL


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("scheme", ["loo", "7-fold"])
def test_ridge_wide_data_and_multiple_targets(fit_intercept, scheme):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(60, 90))  # more features than samples: the dual form
    Y = np.column_stack([X[:, :5].sum(axis=1), X[:, 5] - X[:, 6]]) + rng.normal(0, 0.1, (60, 2))
    splitter = LeaveOneOut() if scheme == "loo" else KFold(7, shuffle=True, random_state=1)
    folds = list(splitter.split(X))
    estimator = Ridge(alpha=3.0, fit_intercept=fit_intercept)
    fast = fast_cv_predictions(estimator, X, Y, folds)
    assert fast.shape == Y.shape
    assert _relative_error(fast, _brute_force(estimator, X, Y, folds)) < RTOL


def test_hat_matrix_reproduces_full_fit():
    X, y = _data(80, seed=3)
    for name, estimator in ESTIMATORS.items():
        H = compute_hat_matrix(estimator, X)
        fitted = clone(estimator).fit(X, y).predict(X)
        assert _relative_error(H @ y, fitted) < RTOL, name


@settings(max_examples=25, deadline=None)
@given(n_samples=st.integers(8, 40), n_folds=st.integers(2, 8), seed=st.integers(0, 2**16))
def test_any_partition_matches_brute_force(n_samples, n_folds, seed):
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n_samples) % min(n_folds, n_samples))
    folds = [(np.flatnonzero(labels != k), np.flatnonzero(labels == k)) for k in set(labels)]
    X, y = _data(n_samples, seed=seed)
    estimator = Ridge(alpha=0.7)
    fast = fast_cv_predictions(estimator, X, y, folds)
    assert _relative_error(fast, _brute_force(estimator, X, y, folds)) < RTOL


def test_protocol_is_runtime_checkable():
    assert isinstance(ShrunkMean(), SupportsHatMatrix)
    assert not isinstance(Ridge(), SupportsHatMatrix)


@pytest.mark.parametrize(
    ("estimator", "reason"),
    [
        (Ridge(positive=True), "positive=True"),
        (Ridge(alpha=np.array([1.0, 2.0])), "an array alpha"),
        (KernelRidge(kernel="precomputed"), "kernel='precomputed'"),
        (GaussianProcessRegressor(_kernel()), "set optimizer=None"),
        (GaussianProcessRegressor(optimizer=None, normalize_y=True), "normalize_y=True"),
        (GaussianProcessLOO(), "set optimizer=None"),
        (BayesianLinearRegression(), "optimize=True"),
    ],
)
def test_unsupported_configurations(estimator, reason):
    X, y = _data(20)
    assert not supports_fast_cv(estimator)
    with pytest.raises(ValueError, match=reason):
        fast_cv_predictions(estimator, X, y, list(LeaveOneOut().split(X)))


def test_error_unsupported_estimator_type():
    X, y = _data(20)
    with pytest.raises(TypeError, match="DecisionTreeRegressor is not a known linear smoother"):
        fast_cv_predictions(DecisionTreeRegressor(), X, y, list(LeaveOneOut().split(X)))


def test_fixed_kernel_without_optimizer_is_supported():
    kernel = ConstantKernel(2.0, "fixed") * RBF(0.5, "fixed") + WhiteKernel(0.1, "fixed")
    assert supports_fast_cv(GaussianProcessRegressor(kernel))
    assert supports_fast_cv(GaussianProcessLOO(kernel))


def test_error_folds_do_not_partition():
    X, y = _data(10)
    everything = np.arange(10)
    half = [(everything[5:], everything[:5])]
    with pytest.raises(ValueError, match=r"must partition range\(10\)"):
        fast_cv_predictions(Ridge(), X, y, half)
    with pytest.raises(ValueError, match="must partition"):
        fast_cv_predictions(Ridge(), X, y, half + half + [(everything[:5], everything[5:])])
    with pytest.raises(ValueError, match="must partition"):
        fast_cv_predictions(Ridge(), X, y, [])
    with pytest.raises(ValueError, match="complement of its test set"):
        fast_cv_predictions(Ridge(), X, y, [(everything[6:], everything[:5])])
    with pytest.raises(TypeError, match=r"folds\[0\] test indices must be a 1-D integer"):
        fast_cv_predictions(Ridge(), X, y, [(everything[5:], np.arange(5.0))])
    with pytest.raises(ValueError, match=r"must lie in range\(10\)"):
        fast_cv_predictions(Ridge(), X, y, [(everything, np.array([10]))])


def test_error_bad_shapes_and_interpolation():
    X, y = _data(10)
    folds = list(LeaveOneOut().split(X))
    with pytest.raises(ValueError, match=r"y must have shape \(10,\)"):
        fast_cv_predictions(Ridge(), X, y[:9], folds)
    with pytest.raises(ValueError, match="X must be 2-D"):
        compute_hat_matrix(Ridge(), y)
    interpolating = KernelRidge(alpha=1e-15, kernel="rbf", gamma=1e6)
    with pytest.raises(ValueError, match="interpolated"):
        fast_cv_predictions(interpolating, X, y, folds)
    with pytest.raises(ValueError, match="interpolated"):
        fast_cv_predictions(interpolating, X, y, list(KFold(2).split(X)))
    with pytest.raises(ValueError, match="must give a positive definite system"):
        compute_hat_matrix(Ridge(alpha=0.0, fit_intercept=False), np.ones((5, 2)))
