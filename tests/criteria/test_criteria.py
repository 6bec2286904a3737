"""Tests for parcv.criteria."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.linear_model import LassoLarsIC, LinearRegression, LogisticRegression
from sklearn.metrics import log_loss
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeRegressor

from parcv.criteria import (
    CriteriaResult,
    compute_aic,
    compute_bic,
    compute_criteria,
    compute_mallows_cp,
    compute_vc_bound,
    count_params,
)


def _regression_data(n_samples: int = 80, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, 4))
    y = X @ np.array([1.5, 0.0, -2.0, 0.5]) + 0.3 + rng.normal(0.0, 0.7, n_samples)
    return X, y


def _classification_data(seed: int = 1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] - X[:, 1] + rng.normal(0.0, 1.0, 120) > 0).astype(int)
    return X, y


def _ols_closed_form(X, y):
    """Return statsmodels-style OLS (llf, aic, bic, rss) with a constant."""
    design = np.column_stack([np.ones(len(y)), X])
    beta = np.linalg.solve(design.T @ design, design.T @ y)
    rss = float(np.sum((y - design @ beta) ** 2))
    n, k = design.shape
    llf = -0.5 * n * (math.log(2.0 * math.pi * rss / n) + 1.0)
    return llf, -2.0 * llf + 2.0 * k, -2.0 * llf + math.log(n) * k, rss


def test_ols_aic_bic_match_closed_form_statsmodels_convention():
    X, y = _regression_data()
    llf, aic, bic, rss = _ols_closed_form(X, y)
    result = compute_criteria(LinearRegression().fit(X, y), X, y)
    assert result.n_params == 5
    assert result.task == "regression"
    assert result.log_likelihood == pytest.approx(llf, rel=1e-12)
    assert result.aic == pytest.approx(aic, rel=1e-12)
    assert result.bic == pytest.approx(bic, rel=1e-12)
    assert result.training_error == pytest.approx(rss / len(y), rel=1e-12)


def test_mallows_cp_matches_formula():
    X, y = _regression_data(n_samples=50)
    _, _, _, rss = _ols_closed_form(X, y)
    result = compute_criteria(LinearRegression().fit(X, y), X, y, criteria="cp")
    n, m = 50, 5
    assert result.cp == pytest.approx((n + m) / (n - m) * rss / n, rel=1e-12)
    assert result.aic is None and result.bic is None and result.vc is None


@pytest.mark.parametrize("criterion", ["aic", "bic"])
def test_matches_lasso_lars_ic_with_its_noise_variance(criterion):
    X, y = _regression_data(n_samples=100, seed=3)
    model = LassoLarsIC(criterion=criterion).fit(X, y)
    df = int(np.count_nonzero(np.abs(model.coef_) > np.finfo(float).eps))
    result = compute_criteria(
        model,
        X,
        y,
        criteria=(criterion,),
        n_params=df,  # LassoLarsIC does not count the intercept
        noise_variance=model.noise_variance_,
    )
    expected = model.criterion_[np.argmin(model.criterion_)]
    assert getattr(result, criterion) == pytest.approx(expected, rel=1e-10)
    assert count_params(model) == df + 1


@pytest.mark.parametrize("include_bias", [True, False])
def test_pipeline_counts_polynomial_output_features(include_bias):
    rng = np.random.default_rng(4)
    X = rng.uniform(-1.0, 1.0, size=(40, 1))
    y = X[:, 0] ** 3 + rng.normal(0.0, 0.1, 40)
    poly = PolynomialFeatures(3, include_bias=include_bias)
    model = make_pipeline(poly, LinearRegression()).fit(X, y)
    assert count_params(model) == 4
    design = np.vander(X[:, 0], 4)
    beta = np.linalg.lstsq(design, y, rcond=None)[0]
    rss = float(np.sum((y - design @ beta) ** 2))
    llf = -20.0 * (math.log(2.0 * math.pi * rss / 40) + 1.0)
    result = compute_criteria(model, X, y, criteria="aic")
    assert result.aic == pytest.approx(-2.0 * llf + 8.0, rel=1e-10)


def test_bic_selects_true_polynomial_degree():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1.0, 1.0, size=(150, 1))
    y = 1.0 - 2.0 * X[:, 0] + 3.0 * X[:, 0] ** 3 + rng.normal(0.0, 0.2, 150)
    bics = []
    for degree in range(1, 8):
        model = make_pipeline(PolynomialFeatures(degree), LinearRegression())
        bics.append(compute_criteria(model.fit(X, y), X, y, criteria="bic").bic)
    assert int(np.argmin(np.asarray(bics, dtype=float))) + 1 == 3


def test_classifier_log_likelihood_and_vc_bound():
    X, y = _classification_data()
    model = LogisticRegression().fit(X, y)
    result = compute_criteria(model, X, y, criteria=("aic", "bic", "vc"), eta=0.1)
    log_l = -log_loss(y, model.predict_proba(X), normalize=False)
    n, m = 120, 4
    error = float(np.mean(model.predict(X) != y))
    epsilon = math.sqrt((m * (math.log(2 * n / m) + 1) - math.log(0.1 / 4)) / n)
    assert result.task == "classification" and result.n_params == m
    assert result.log_likelihood == pytest.approx(log_l, rel=1e-12)
    assert result.aic == pytest.approx(-2 * log_l + 2 * m, rel=1e-12)
    assert result.bic == pytest.approx(-2 * log_l + m * math.log(n), rel=1e-12)
    assert result.vc == pytest.approx(error + epsilon, rel=1e-12)


def test_string_labels_and_explicit_n_params():
    X, y = _classification_data()
    labels = np.array(["no", "yes"])[y]
    model = LogisticRegression().fit(X, labels)
    result = compute_criteria(model, X, labels, criteria="aic", n_params=7)
    log_l = -log_loss(labels, model.predict_proba(X), normalize=False)
    assert result.aic == pytest.approx(-2 * log_l + 14, rel=1e-12)


def test_result_is_frozen_and_serialisable():
    X, y = _regression_data()
    result = compute_criteria(LinearRegression().fit(X, y), X, y)
    assert isinstance(result, CriteriaResult)
    assert result.to_dict()["n_params"] == 5
    assert CriteriaResult(**result.to_dict()) == result  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.aic = 0.0  # type: ignore[misc]


def test_vc_bound_formula_values():
    epsilon = math.sqrt((3 * (math.log(2000 / 3) + 1) - math.log(0.05 / 4)) / 1000)
    assert compute_vc_bound(0.1, 3, 1000) == pytest.approx(0.1 + epsilon, rel=1e-14)
    assert compute_aic(-10.0, 3) == 26.0
    assert compute_bic(-10.0, 3, 100) == pytest.approx(20.0 + 3 * math.log(100))
    assert compute_mallows_cp(2.0, 2, 8) == pytest.approx(2.0 * 10 / 6)


@given(
    error=st.floats(0.0, 1.0),
    dimension=st.integers(1, 50),
    n_samples=st.integers(60, 10_000),
)
def test_vc_bound_exceeds_error_and_shrinks_with_data(error, dimension, n_samples):
    bound = compute_vc_bound(error, dimension, n_samples)
    assert bound > error
    assert compute_vc_bound(error, dimension, 2 * n_samples) < bound


def test_error_unknown_criterion():
    X, y = _regression_data()
    model = LinearRegression().fit(X, y)
    with pytest.raises(ValueError, match="criteria must be a non-empty subset"):
        compute_criteria(model, X, y, criteria=("aic", "hqic"))


def test_error_criterion_wrong_task():
    X, y = _regression_data()
    with pytest.raises(ValueError, match="criteria must be free of 'vc' for task='regression'"):
        compute_criteria(LinearRegression().fit(X, y), X, y, criteria="vc")
    Xc, yc = _classification_data()
    model = LogisticRegression().fit(Xc, yc)
    with pytest.raises(ValueError, match="free of 'cp'"):
        compute_criteria(model, Xc, yc, criteria="cp")
    with pytest.raises(ValueError, match="task must be one of"):
        compute_criteria(model, Xc, yc, task="survival")


def test_error_cannot_infer_n_params():
    X, y = _regression_data()
    model = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"Pass the count explicitly.*n_params="):
        compute_criteria(model, X, y)
    result = compute_criteria(model, X, y, n_params=7, criteria="aic")
    assert result.n_params == 7


def test_error_bad_n_params_and_counts():
    X, y = _regression_data()
    model = LinearRegression().fit(X, y)
    with pytest.raises(TypeError, match="n_params must be an int; got True"):
        compute_criteria(model, X, y, n_params=True)
    with pytest.raises(ValueError, match="n_params must be an int >= 0; got -1"):
        compute_criteria(model, X, y, n_params=-1)
    with pytest.raises(ValueError, match="n_params must be below n_samples=80"):
        compute_criteria(model, X, y, criteria="cp", n_params=80)
    with pytest.raises(ValueError, match="eta must be a probability"):
        compute_vc_bound(0.1, 3, 100, eta=1.5)
    with pytest.raises(ValueError, match="training_error must be a rate"):
        compute_vc_bound(1.5, 3, 100)


def test_error_classifier_without_predict_proba_and_unseen_labels():
    X, y = _classification_data()
    with pytest.raises(TypeError, match="must be a classifier with predict_proba"):
        compute_criteria(SVC().fit(X, y), X, y, criteria="aic", n_params=3)
    model = LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match=r"labels seen in fit \[0, 1\]; got \[2\]"):
        compute_criteria(model, X, np.where(y == 1, 2, 0), criteria="aic")


def test_error_two_dimensional_y_and_bad_noise_variance():
    X, y = _regression_data()
    model = LinearRegression().fit(X, y)
    with pytest.raises(ValueError, match="y must be 1-D"):
        compute_criteria(model, X, y[:, None])
    with pytest.raises(ValueError, match="noise_variance must be a float > 0"):
        compute_criteria(model, X, y, noise_variance=0.0)
