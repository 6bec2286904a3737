"""The sampler's report plots, against Optuna's own study and evaluator."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from matplotlib.patches import Rectangle
from scipy import stats
from sklearn.datasets import make_regression
from sklearn.linear_model import Lasso, Ridge
from sklearn.model_selection import KFold, cross_val_score

from parcv.report.plots import param_importances, sampler_trials
from parcv.strategies.sampler import rebuild_study

optuna = pytest.importorskip("optuna")

X, y = make_regression(n_samples=40, n_features=3, noise=10.0, random_state=1)
FOLDS = list(KFold(3, shuffle=True, random_state=0).split(X))
SPACE = {"alpha": stats.loguniform(1e-3, 1e3), "tol": stats.loguniform(1e-5, 1e-2),
         "fit_intercept": [True, False]}  # fmt: skip


def objective(trial):
    params = {
        "alpha": trial.suggest_float("alpha", 1e-3, 1e3, log=True),
        "tol": trial.suggest_float("tol", 1e-5, 1e-2, log=True),
        "fit_intercept": trial.suggest_categorical("fit_intercept", [True, False]),
    }
    return cross_val_score(Ridge(**params), X, y, cv=FOLDS).mean()


@pytest.fixture(scope="module")
def study():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    s = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=0))
    s.optimize(objective, n_trials=16)
    return s


def test_importances_equal_optunas_evaluator_on_its_own_study(study):
    params = [t.params for t in study.trials]
    values = [t.value for t in study.trials]
    fig = param_importances(params, values, space=SPACE, seed=0)
    expected = optuna.importance.get_param_importances(
        study, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0)
    )
    assert fig is not None
    ax = fig.axes[0]
    names = [t.get_text() for t in ax.get_yticklabels()]
    widths = [bar.get_width() for bar in ax.patches if isinstance(bar, Rectangle)]
    assert names == list(expected)  # most important first
    np.testing.assert_allclose(widths, list(expected.values()), rtol=0, atol=0)
    assert "16 scored trials" in ax.get_title()


def test_rebuilt_study_has_the_trials_and_best_trial_of_the_original(study):
    params = [t.params for t in study.trials]
    values = [t.value for t in study.trials]
    values[3] = math.nan  # a failed trial
    rebuilt = rebuild_study([{**p, "n_estimators": 7} for p in params], values, space=SPACE)
    assert [t.params for t in rebuilt.trials] == params  # keys outside the space left out
    assert rebuilt.trials[3].state == optuna.trial.TrialState.FAIL
    if study.best_trial.number != 3:
        assert rebuilt.best_trial.params == study.best_trial.params


def test_importances_of_values_optuna_cannot_hold():
    space = {"model": [Ridge(), Lasso()], "x": [0.0, 1.0, 2.0]}
    params = [{"model": m, "x": x} for m in (Ridge(), Lasso()) for x in (0.0, 1.0, 2.0)]
    values = [(0.5 if isinstance(p["model"], Ridge) else 0.0) + 0.01 * p["x"] for p in params]
    fig = param_importances(params, values, space=space)
    assert fig is not None
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["model", "x"]


def test_no_importances_from_fewer_than_two_scored_trials():
    space = {"x": [0.0, 1.0]}
    assert param_importances([{"x": 0.0}, {"x": 1.0}], [0.5, math.nan], space=space) is None


def test_trials_plot_draws_the_best_so_far_and_the_winner():
    values = np.array([0.2, math.nan, 0.5, 0.4, 0.5, 0.7, math.nan, 0.6])
    fig = sampler_trials(values, metric="r2", sampler="TPESampler", batch=4)
    ax = fig.axes[0]
    best, points, star = ax.lines[:3]
    # The best so far, computed here independently of the plot.
    np.testing.assert_array_equal(best.get_ydata(), [0.2, 0.2, 0.5, 0.5, 0.5, 0.7, 0.7, 0.7])
    np.testing.assert_array_equal(points.get_xdata(), [0, 2, 3, 4, 5, 7])
    assert (np.asarray(star.get_xdata())[0], np.asarray(star.get_ydata())[0]) == (5, 0.7)
    assert "2 failed or dropped" in ax.get_title() and "TPESampler" in ax.get_title()
    assert len(ax.lines) == 4  # one line between the two rounds of 4


def test_ties_select_the_first_trial_as_the_study_does():
    fig = sampler_trials([0.3, 0.9, 0.9])
    star = fig.axes[0].lines[2]
    assert np.asarray(star.get_xdata())[0] == 1


def test_importances_without_optuna_say_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    with pytest.raises(ImportError, match=r"pip install 'parcv\[optuna\]'"):
        param_importances([{"x": 0.0}], [0.5], space={"x": [0.0, 1.0]})
