"""A strategy in rounds decides by one metric: several metrics and none named are refused.

scikit-learn's searches with several metrics and ``refit=False`` select nothing (no
``best_params_``); a strategy (a sampler, halving, Hyperband, early stopping) must know
which metric decides which units run, so parcv refuses the combination before any fit
(issue 48, item 11).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import loguniform
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge, SGDRegressor
from sklearn.model_selection import KFold

import parcv

X, Y = make_regression(n_samples=60, n_features=3, noise=5.0, random_state=0)
SCORING = {"r2": "r2", "mse": "neg_mean_squared_error"}
SGD = SGDRegressor(tol=None, random_state=0)


def _sampler():
    pytest.importorskip("optuna")
    return (
        Ridge(),
        {"alpha": loguniform(1e-3, 1e3)},
        {"strategy": parcv.Sampler("random", 3, seed=0)},
    )


def _halving():
    return (
        Ridge(),
        {"alpha": [0.1, 1.0, 10.0]},
        {"strategy": parcv.Halving(factor=2, random_state=0)},
    )


def _hyperband():
    space = parcv.RandomSpace({"alpha": loguniform(1e-4, 1e-1)}, n_iter=1, random_state=0)
    return SGD, space, {"strategy": parcv.Hyperband("max_iter", 9)}


def _early_stopping():
    return SGD, {"alpha": [1e-4, 1e-2]}, {"iterations": parcv.Iterations("max_iter", 8, patience=2)}


STRATEGIES = {
    "sampler": _sampler,
    "halving": _halving,
    "hyperband": _hyperband,
    "early_stopping": _early_stopping,
}


def _call(entry, strategy, tmp_path, **kwargs):
    estimator, space, chosen = STRATEGIES[strategy]()
    common = dict(scoring=SCORING, backend="serial", store=tmp_path / "s.sqlite", **chosen)
    if entry == "search":
        return parcv.search(estimator, space, X, Y, cv=KFold(3), **common, **kwargs)
    return parcv.nested_cv(estimator, space, X, Y, outer=2, inner=KFold(3), **common, **kwargs)


@pytest.mark.parametrize("entry", ["search", "nested_cv"])
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_several_metrics_without_the_deciding_one_are_refused_before_any_fit(
    tmp_path, entry, strategy
):
    # Before: the first metric silently decided, and best_params_ was reported.
    with pytest.raises(ValueError) as caught:
        _call(entry, strategy, tmp_path, refit=False)
    message = str(caught.value)
    assert "several metrics ['r2', 'mse']" in message and "refit=False" in message
    assert "Pass refit='r2'" in message and "best_params_" in message
    assert not (tmp_path / "s.sqlite").exists()  # refused before the store, before any fit


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_the_metric_refit_names_is_the_one_the_strategy_maximises(tmp_path, strategy):
    result = _call("search", strategy, tmp_path, refit="mse")
    assert result.refit_metric == "mse"
    assert result.cv_results_["mean_test_mse"][result.best_index_] == result.best_score_
    assert result.cv_results_["params"][result.best_index_] == result.best_params_


def test_a_sampler_maximises_the_named_metric_not_the_first(tmp_path):
    result = _call("search", "sampler", tmp_path, refit="mse")
    means = np.asarray(result.cv_results_["mean_test_mse"])
    assert result.best_params_ == result.cv_results_["params"][int(np.nanargmax(means))]


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_one_metric_with_refit_false_still_decides(tmp_path, strategy):
    estimator, space, chosen = STRATEGIES[strategy]()
    result = parcv.search(estimator, space, X, Y, cv=KFold(3), scoring={"mse": SCORING["mse"]},
                          refit=False, backend="serial", **chosen)  # fmt: skip
    assert "mean_test_mse" in result.cv_results_


def test_the_drop_in_with_several_metrics_and_refit_false_is_refused():
    pytest.importorskip("optuna")
    search = parcv.RandomizedSearchCV(
        Ridge(), {"alpha": loguniform(1e-3, 1e3)}, cv=KFold(3), scoring=SCORING, refit=False,
        backend="serial", strategy=parcv.Sampler("random", n_trials=3, seed=0),
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"several metrics \['r2', 'mse'\] and refit=False"):
        search.fit(X, Y)
