"""Racing candidates over CV folds: the eliminations a replay of the full grid makes, on every
backend, with the dropped candidates' later folds never run."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold

import parcv
from parcv.stats.racing import run_race

ALPHAS = [0.01, 0.1, 1.0, 10.0, 1e2, 1e3, 1e4, 1e5]
GRID = {"alpha": ALPHAS}
CV = KFold(8, shuffle=True, random_state=0)


def _full_grid(X, y, cv=CV, grid=GRID):
    """scikit-learn's scores of every candidate on every fold: what a race replays."""
    search = GridSearchCV(Ridge(), grid, cv=cv, refit=False).fit(X, y)
    n_folds = cv.get_n_splits()
    return search, np.array([search.cv_results_[f"split{k}_test_score"] for k in range(n_folds)]).T


def _expected_race(scores, X, cv=CV, racing=None):
    racing = racing or parcv.Racing()
    n = len(X)
    n_test = n / cv.get_n_splits()
    return run_race(scores[:, :-1], racing, n_train=n - n_test, n_test=n_test)


def test_race_drops_what_a_replay_of_the_full_grid_drops(reg_data, backend):
    X, y = reg_data
    ours = parcv.search(Ridge(), GRID, X, y, cv=CV, racing=parcv.Racing(), backend=backend)
    theirs, scores = _full_grid(X, y)
    expected = _expected_race(scores, X)
    eliminated = ours.cv_results_["race_eliminated_after"]
    np.testing.assert_array_equal(eliminated, expected.eliminated_after)
    np.testing.assert_array_equal(ours.cv_results_["race_p_value"], expected.p_value)
    assert (eliminated >= 0).sum() >= 3  # the large alphas are clearly worse
    for k in range(CV.get_n_splits()):
        column = ours.cv_results_[f"split{k}_test_score"]
        ran = (eliminated < 0) | (eliminated >= k)
        np.testing.assert_array_equal(column[ran], theirs.cv_results_[f"split{k}_test_score"][ran])
        assert np.isnan(column[~ran]).all()
    survivors = np.flatnonzero(eliminated < 0)
    best = survivors[np.argmax(scores[survivors].mean(axis=1))]
    assert ours.best_params_ == {"alpha": ALPHAS[best]}
    fits = {r.key for r in ours.records if r.unit.kind == "fit"}
    n_ran = int(sum(k + 1 if k >= 0 else CV.get_n_splits() for k in eliminated))
    # Workers kept busy may start later folds of a candidate before it is dropped.
    assert n_ran <= len(fits) <= len(ALPHAS) * CV.get_n_splits()
    if isinstance(backend, parcv.SerialBackend):  # one unit at a time: nothing starts early
        assert len(fits) == n_ran < len(ALPHAS) * CV.get_n_splits()


def test_a_race_of_ties_drops_nothing(reg_data):
    X, y = reg_data
    grid = {"copy_X": [True, False], "alpha": [1.0]}  # the same model twice
    result = parcv.search(Ridge(), grid, X, y, cv=CV, racing=parcv.Racing(), backend="serial")
    assert (result.cv_results_["race_eliminated_after"] == -1).all()
    assert not np.isnan(result.cv_results_["mean_test_score"]).any()


def test_nested_cv_races_each_inner_cv(reg_data):
    X, y = reg_data
    outer, inner = KFold(3, shuffle=True, random_state=1), KFold(6, shuffle=True, random_state=2)
    ours = parcv.nested_cv(Ridge(), GRID, X, y, outer=outer, inner=inner, racing=parcv.Racing(),
                           backend=parcv.LocalBackend(n_jobs=2))  # fmt: skip
    for o, (train, test) in enumerate(outer.split(X)):
        _, scores = _full_grid(X[train], y[train], cv=inner)
        race = _expected_race(scores, X[train], cv=inner)
        survivors = np.flatnonzero(np.asarray(race.eliminated_after) < 0)
        best = int(survivors[np.argmax(scores[survivors].mean(axis=1))])
        assert ours.chosen[o] == best
        model = clone(Ridge()).set_params(alpha=ALPHAS[best]).fit(X[train], y[train])
        assert ours.outer_scores["score"][o] == model.score(X[test], y[test])


def test_a_raced_run_resumes_and_loads_without_computing(reg_data, tmp_path):
    X, y = reg_data
    store = tmp_path / "run.sqlite"
    first = parcv.search(Ridge(), GRID, X, y, cv=CV, racing=parcv.Racing(), backend="serial",
                         store=store)  # fmt: skip
    again = parcv.search(Ridge(), GRID, X, y, cv=CV, racing=parcv.Racing(), backend="serial",
                         store=store, resume=True)  # fmt: skip
    fits = [r.started for r in first.records if r.unit.kind == "fit"]
    assert [r.started for r in again.records if r.unit.kind == "fit"] == fits  # none rerun
    loaded = parcv.load(store)
    for name in ("race_eliminated_after", "mean_test_score", "split5_test_score"):
        np.testing.assert_array_equal(loaded.cv_results_[name], first.cv_results_[name])
    assert loaded.best_params_ == first.best_params_


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"racing": "anova"}, TypeError, "racing must be a parcv.Racing"),
        ({"racing": parcv.Racing(burn_in=3), "cv": 3}, ValueError, "needs more than 3 CV folds"),
        ({"racing": parcv.Racing(), "fast_cv": True}, ValueError, "racing and fast_cv=True"),
    ],
)
def test_bad_racing_is_refused_before_any_fit(reg_data, options, error, match):
    X, y = reg_data
    options = {"cv": CV, **options}
    with pytest.raises(error, match=match):
        parcv.search(Ridge(), GRID, X, y, backend="serial", **options)


def test_raced_nested_cv_is_the_same_on_every_backend(reg_data, backend):
    X, y = reg_data
    outer, inner = KFold(3, shuffle=True, random_state=1), KFold(5, shuffle=True, random_state=2)
    options = dict(outer=outer, inner=inner, racing=parcv.Racing(burn_in=2))
    ours = parcv.nested_cv(Ridge(), GRID, X, y, backend=backend, **options)
    reference = parcv.nested_cv(Ridge(), GRID, X, y, backend="serial", **options)
    np.testing.assert_array_equal(ours.outer_scores["score"], reference.outer_scores["score"])
    assert ours.chosen == reference.chosen
    for a, b in zip(ours.inner_cv_results, reference.inner_cv_results, strict=True):
        np.testing.assert_array_equal(a["race_eliminated_after"], b["race_eliminated_after"])
        np.testing.assert_array_equal(a["mean_test_score"], b["mean_test_score"])
    assert ours.final.best_params_ == reference.final.best_params_
