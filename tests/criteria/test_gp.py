"""Tests for parcv.gp."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.stats import norm
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.utils.estimator_checks import check_estimator

from parcv.gp import GaussianProcessLOO, LOOPrediction, compute_gp_objective


def _data(n_samples: int = 40, n_features: int = 1, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 5.0, size=(n_samples, n_features))
    y = np.sin(X).sum(axis=1) + rng.normal(0.0, 0.2, n_samples)
    return X, y


def _kernel(n_features: int = 1):
    length = np.ones(n_features) if n_features > 1 else 1.0
    return ConstantKernel(1.0) * RBF(length) + WhiteKernel(0.1)


def _max_relative_error(actual, expected):
    return float(np.max(np.abs(actual - expected)) / np.max(np.abs(expected)))


@pytest.mark.parametrize("n_features", [1, 2])
@pytest.mark.parametrize("objective", ["evidence", "loo"])
def test_objective_gradients_match_finite_differences(n_features, objective):
    X, y = _data(n_features=n_features, seed=n_features)
    gp = GaussianProcessLOO(_kernel(n_features), optimizer=None).fit(X, y)
    method = gp.log_marginal_likelihood if objective == "evidence" else gp.loo_log_predictive
    rng = np.random.default_rng(7)
    for _ in range(3):
        theta = gp.kernel_.theta + rng.normal(0.0, 0.5, gp.kernel_.n_dims)
        numeric = approx_fprime(theta, lambda t: method(t).value, 1e-6)
        analytic = method(theta).gradient
        assert _max_relative_error(analytic, numeric) < 1e-5


@pytest.mark.parametrize("n_features", [1, 2])
def test_log_marginal_likelihood_matches_sklearn(n_features):
    X, y = _data(n_features=n_features, seed=3)
    kernel = _kernel(n_features)
    reference = GaussianProcessRegressor(kernel, optimizer=None).fit(X, y)
    gp = GaussianProcessLOO(kernel, optimizer=None).fit(X, y)
    rng = np.random.default_rng(1)
    for _ in range(4):
        theta = kernel.theta + rng.normal(0.0, 0.7, kernel.n_dims)
        value, gradient = reference.log_marginal_likelihood(theta, eval_gradient=True)
        ours = gp.log_marginal_likelihood(theta)
        np.testing.assert_allclose(ours.value, value, rtol=1e-10)
        np.testing.assert_allclose(ours.gradient, gradient, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("alpha", [1e-10, 0.05])
def test_closed_form_loo_equals_brute_force_refits(alpha):
    X, y = _data(n_samples=50, seed=4)
    gp = GaussianProcessLOO(_kernel(), alpha=alpha, random_state=0).fit(X, y)
    loo = gp.loo_
    assert isinstance(loo, LOOPrediction)
    means, variances = np.empty(50), np.empty(50)
    for i in range(50):
        keep = np.arange(50) != i
        refit = GaussianProcessLOO(gp.kernel_, alpha=alpha, optimizer=None)
        mean, std = refit.fit(X[keep], y[keep]).predict(X[i : i + 1], return_std=True)
        means[i], variances[i] = mean[0], std[0] ** 2 + alpha
    assert _max_relative_error(loo.mean, means) < 1e-8
    assert _max_relative_error(loo.variance, variances) < 1e-8
    log_predictive = norm.logpdf(y, means, np.sqrt(variances))
    np.testing.assert_allclose(loo.log_predictive, log_predictive, rtol=1e-8)
    np.testing.assert_allclose(gp.loo_log_predictive_value_, log_predictive.sum(), rtol=1e-8)


def test_pure_functions_agree_with_estimator():
    X, y = _data(seed=5)
    gp = GaussianProcessLOO(_kernel(), optimizer=None, alpha=0.0).fit(X, y)
    K, K_gradient = gp.kernel_(X, eval_gradient=True)
    lml = compute_gp_objective(K, y, K_gradient)
    loo = compute_gp_objective(K, y, K_gradient, objective="loo")
    assert lml.value == pytest.approx(gp.log_marginal_likelihood_value_, rel=1e-12)
    np.testing.assert_allclose(lml.gradient, gp.log_marginal_likelihood().gradient, rtol=1e-12)
    assert loo.value == pytest.approx(gp.loo_log_predictive_value_, rel=1e-12)
    np.testing.assert_allclose(loo.gradient, gp.loo_log_predictive().gradient, rtol=1e-12)
    assert compute_gp_objective(K, y).gradient.shape == (0,)


def test_evidence_fit_matches_sklearn_optimizer():
    X, y = _data(n_samples=60, seed=6)
    reference = GaussianProcessRegressor(_kernel(), random_state=0).fit(X, y)
    gp = GaussianProcessLOO(_kernel()).fit(X, y)
    np.testing.assert_allclose(gp.kernel_.theta, reference.kernel_.theta, rtol=1e-5)
    np.testing.assert_allclose(
        gp.log_marginal_likelihood_value_, reference.log_marginal_likelihood_value_, rtol=1e-8
    )
    mean, std = gp.predict(X[:5], return_std=True)
    ref_mean, ref_std = reference.predict(X[:5], return_std=True)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-5)
    np.testing.assert_allclose(std, ref_std, rtol=1e-5)


def test_loo_objective_optimum_and_restarts():
    X, y = _data(n_samples=50, seed=8)
    single = GaussianProcessLOO(_kernel(), objective="loo").fit(X, y)
    restarted = GaussianProcessLOO(_kernel(), objective="loo", n_restarts=3, random_state=0)
    restarted.fit(X, y)
    again = clone(restarted).fit(X, y)
    np.testing.assert_array_equal(again.kernel_.theta, restarted.kernel_.theta)
    assert restarted.loo_log_predictive_value_ >= single.loo_log_predictive_value_ - 1e-9
    gradient = restarted.loo_log_predictive().gradient
    bounds = restarted.kernel_.bounds
    interior = (restarted.kernel_.theta > bounds[:, 0] + 1e-3) & (
        restarted.kernel_.theta < bounds[:, 1] - 1e-3
    )
    assert np.max(np.abs(gradient[interior])) < 1e-3


def test_fixed_kernel_is_kept():
    X, y = _data(seed=9)
    kernel = _kernel()
    gp = GaussianProcessLOO(kernel, optimizer=None).fit(X, y)
    np.testing.assert_array_equal(gp.kernel_.theta, kernel.theta)
    assert gp.kernel_ is not kernel


def test_default_kernel_fits():
    X, y = _data(seed=10)
    gp = GaussianProcessLOO().fit(X, y)
    assert gp.kernel_.n_dims == 3
    assert gp.score(X, y) > 0.8


def test_error_invalid_parameters():
    X, y = _data()
    with pytest.raises(ValueError, match="objective must be 'evidence' or 'loo'; got 'cv'"):
        GaussianProcessLOO(objective="cv").fit(X, y)
    with pytest.raises(ValueError, match="n_restarts must be an int >= 0; got -1"):
        GaussianProcessLOO(n_restarts=-1).fit(X, y)
    with pytest.raises(ValueError, match="optimizer must be 'fmin_l_bfgs_b' or None"):
        GaussianProcessLOO(optimizer="adam").fit(X, y)
    with pytest.raises(ValueError, match="alpha must be a float >= 0"):
        GaussianProcessLOO(alpha=-1.0).fit(X, y)


def test_error_singular_and_misshapen_covariance():
    with pytest.raises(ValueError, match="K must be symmetric positive definite"):
        compute_gp_objective(np.ones((3, 3)), np.ones(3), objective="loo")
    with pytest.raises(ValueError, match=r"K must have shape.*got \(3, 3\), \(2,\)"):
        compute_gp_objective(np.eye(3), np.ones(2))
    with pytest.raises(ValueError, match="K must have shape"):
        compute_gp_objective(np.eye(2), np.ones(2), np.ones((2, 2)), objective="loo")
    with pytest.raises(ValueError, match="objective must be 'evidence' or 'loo'; got 'cv'"):
        compute_gp_objective(np.eye(2), np.ones(2), objective="cv")
    X = np.zeros((3, 1))
    kernel = RBF(1.0, length_scale_bounds="fixed")
    with pytest.raises(ValueError, match="Add noise to the diagonal"):
        GaussianProcessLOO(kernel, alpha=0.0).fit(X, np.ones(3))


# check_estimator skips its array-API check (SCIPY_ARRAY_API unset) with a SkipTestWarning.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
def test_passes_sklearn_estimator_checks():
    check_estimator(GaussianProcessLOO())
