"""A sampler report's parameter importances: right, and not minutes of fANOVA (issue 48, 12).

The report of a sampler's search took 3.4x a grid's of the same size, 22 of 41 s in
fANOVA for a space of one parameter: its importance is 1.0 whatever fANOVA's forest says,
and each parameter's trial values were taken as categories, a one-hot column per value.
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.patches import Rectangle
from scipy import stats
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold

import parcv
from parcv.report.plots import figures, param_importances
from parcv.strategies.sampler import rebuild_study

optuna = pytest.importorskip("optuna")

X, Y = make_regression(n_samples=60, n_features=3, noise=10.0, random_state=1)


def _shares(fig):
    ax = fig.axes[0]
    names = [t.get_text() for t in ax.get_yticklabels()]
    return dict(zip(names, [b.get_width() for b in ax.patches if isinstance(b, Rectangle)],
                    strict=True))  # fmt: skip


def _refuse_fanova(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("fANOVA was fitted")

    monkeypatch.setattr(optuna.importance.FanovaImportanceEvaluator, "evaluate", refuse)


def test_one_parameter_explains_all_of_the_variance_without_fanova(monkeypatch):
    rng = np.random.default_rng(0)
    space = {"alpha": stats.loguniform(1e-3, 1e3), "fit_intercept": [True]}
    params = [{"alpha": float(a), "fit_intercept": True} for a in rng.uniform(0.1, 100, 12)]
    values = [-abs(np.log(p["alpha"])) for p in params]
    # Optuna's own answer: the one parameter that varies has all of the (normalized) share.
    expected = optuna.importance.get_param_importances(
        rebuild_study(params, values, space=space),
        evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0),
    )
    _refuse_fanova(monkeypatch)
    fig = param_importances(params, values, space=space)
    assert fig is not None
    assert _shares(fig) == expected == {"alpha": 1.0, "fit_intercept": 0.0}
    assert "one parameter varies" in fig.axes[0].get_title()


def test_equal_scores_have_no_importances_to_plot():
    # Optuna's fANOVA raises "Encountered zero total variance in all trees" here.
    params = [{"a": float(a), "b": float(b)} for a in range(3) for b in range(3)]
    space = {"a": stats.uniform(0, 3), "b": stats.uniform(0, 3)}
    assert param_importances(params, [0.5] * len(params), space=space) is None


@pytest.fixture(scope="module")
def tuned():
    # alpha decides the score; tol does not change it at all (Ridge's dense solver).
    space = {"alpha": stats.loguniform(1e-2, 1e4), "tol": stats.loguniform(1e-5, 1e-2)}
    return parcv.search(Ridge(), space, X, Y, cv=KFold(3), backend="serial",
                        strategy=parcv.Sampler("random", n_trials=16, seed=0))  # fmt: skip


def test_report_importances_rank_numbers_as_numbers(tuned):
    # Before: each of the 16 distinct alphas and tols was a category (a one-hot column):
    # fANOVA split alpha and tol about evenly (0.5 / 0.5), at seconds per parameter.
    fig = figures(tuned)["param_importance.png"]
    shares = _shares(fig)
    assert list(shares) == ["alpha", "tol"]
    assert shares["alpha"] > 0.9, shares
    # The reference: Optuna's evaluator on the trials, each parameter a range of numbers.
    params = tuned.cv_results_["params"]
    values = tuned.cv_results_["mean_test_score"]
    ranges = {n: optuna.distributions.FloatDistribution(min(p[n] for p in params),
                                                         max(p[n] for p in params))
              for n in ("alpha", "tol")}  # fmt: skip
    study = rebuild_study(params, values, space=ranges)
    expected = optuna.importance.get_param_importances(
        study, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0)
    )
    np.testing.assert_array_equal(list(shares.values()), list(expected.values()))


def test_a_report_of_one_parameter_fits_no_fanova(monkeypatch):
    _refuse_fanova(monkeypatch)
    result = parcv.search(
        Ridge(),
        {"alpha": stats.loguniform(1e-2, 1e4)},
        X,
        Y,
        cv=KFold(3),
        backend="serial",
        strategy=parcv.Sampler("tpe", n_trials=6, seed=0),
    )
    shares = _shares(figures(result)["param_importance.png"])
    assert shares == {"alpha": 1.0}
