"""Two different candidates never share a record: in one run, and across resume=True.

The two collisions of issue 29, on every backend, against scikit-learn's GridSearchCV on
the same folds: Ridge alphas that are numpy arrays of 1,200 entries differing in one
(numpy's repr elides the middle), and closures of one factory (same qualified name,
different captured value).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import parcv

sys.path.insert(0, str(Path(__file__).parent.parent / "plan"))
from token_values import power

CV = KFold(3, shuffle=True, random_state=0)


def _arrays_case():
    X, Y = make_regression(n_samples=60, n_features=5, n_targets=1200, noise=5.0, random_state=0)
    a = np.ones(1200)
    b = a.copy()
    b[600] = 1e6
    return Ridge(), [a, b], "alpha", X, Y, "neg_mean_squared_error"


def _closures_case():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=80)
    pipe = make_pipeline(FunctionTransformer(), LinearRegression())
    return pipe, [power(1.0), power(3.0)], "functiontransformer__func", X, y, "r2"


CASES = {"long arrays": _arrays_case, "closures of one factory": _closures_case}


def _sklearn_means(case):
    estimator, values, name, X, y, scoring = case()
    grid = GridSearchCV(estimator, {name: values}, cv=CV, scoring=scoring).fit(X, y)
    return grid.cv_results_["mean_test_score"]


@pytest.mark.parametrize("case", list(CASES))
def test_different_candidates_get_their_own_scores_in_one_run(case, backend):
    estimator, values, name, X, y, scoring = CASES[case]()
    expected = _sklearn_means(CASES[case])
    assert expected[0] != expected[1]
    run = parcv.search(estimator, {name: values}, X, y, cv=CV, scoring=scoring, backend=backend)
    np.testing.assert_allclose(run.cv_results_["mean_test_score"], expected, rtol=1e-12)


@pytest.mark.parametrize("case", list(CASES))
def test_resume_never_reuses_another_candidates_record(case, backend, tmp_path, caplog):
    estimator, values, name, X, y, scoring = CASES[case]()
    expected = _sklearn_means(CASES[case])
    store = tmp_path / "run.sqlite"
    parcv.search(estimator, {name: values[:1]}, X, y, cv=CV, scoring=scoring, backend=backend,
                 store=store)  # fmt: skip
    other = parcv.search(estimator, {name: values[1:]}, X, y, cv=CV, scoring=scoring,
                         backend=backend, store=store, resume=True)  # fmt: skip
    np.testing.assert_allclose(other.cv_results_["mean_test_score"], expected[1:], rtol=1e-12)
    with caplog.at_level(logging.INFO, logger="parcv"):
        both = parcv.search(estimator, {name: values}, X, y, cv=CV, scoring=scoring,
                            backend=backend, store=store, resume=True)  # fmt: skip
    np.testing.assert_allclose(both.cv_results_["mean_test_score"], expected, rtol=1e-12)
    # Every fit of both candidates was stored by the two runs before; only the final refit
    # of the chosen one is computed again (a run reuses a final only with its saved model).
    assert "reusing 6 of 7 units; 0 to compute, and the final model to refit" in caplog.text
