"""Resuming with another refit metric, selection or error_score keeps the fits.

Only the records that depend on the choice (refits, the final model, failed fits'
scores) are computed again; the result equals a fresh run with the new choice.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

import parcv
from parcv.store.readers import read_store

X, Y = make_regression(n_samples=60, n_features=4, noise=10.0, random_state=0)
SPACE = {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0]}
ONE_SE = parcv.Selection("one_se", complexity="alpha")


def _started(store):
    """Each stored record's start time: it changes only when the unit ran again."""
    return {key: r.started for key, r in read_store(store)[1].items()}


def _same_result(got, want):
    np.testing.assert_array_equal(got.cv_results_["mean_test_score"],
                                  want.cv_results_["mean_test_score"])  # fmt: skip
    assert got.best_params_ == want.best_params_
    np.testing.assert_array_equal(got.best_estimator_.coef_, want.best_estimator_.coef_)


def test_another_selection_resumed_redoes_only_the_final_refit(tmp_path):
    store = tmp_path / "run.sqlite"
    common = dict(cv=5, backend="serial", store=store, save_models=True)
    first = parcv.search(Ridge(), SPACE, X, Y, **common)
    before = _started(store)
    got = parcv.search(Ridge(), SPACE, X, Y, selection=ONE_SE, resume=True, **common)
    after = _started(store)
    fresh = parcv.search(Ridge(), SPACE, X, Y, cv=5, backend="serial", selection=ONE_SE)
    _same_result(got, fresh)
    assert got.best_params_ != first.best_params_  # the rule changed what is chosen
    assert set(after) == set(before)
    rerun = {key for key in after if after[key] != before[key]}
    assert rerun == {("final",)}
    loaded = parcv.load(store, load_models=True)  # the stored plan and model follow
    assert loaded.best_params_ == fresh.best_params_
    np.testing.assert_array_equal(loaded.best_estimator_.coef_, fresh.best_estimator_.coef_)


def test_without_resume_the_store_is_untouched_and_the_message_says_what_changed(tmp_path):
    store = tmp_path / "run.sqlite"
    parcv.search(Ridge(), SPACE, X, Y, cv=5, backend="serial", store=store)
    before = read_store(store)
    with pytest.raises(parcv.PlanMismatchError) as info:
        parcv.search(Ridge(), SPACE, X, Y, cv=5, backend="serial", store=store, selection=ONE_SE)
    message = str(info.value)
    assert "chooses differently: selection (stored {'rule': 'best'" in message
    assert "keeps the fits and redoes only the refits" in message and "resume=True" in message
    assert read_store(store) == before


def test_another_refit_metric_in_nested_cv_redoes_the_outer_refits(tmp_path):
    store = tmp_path / "run.sqlite"
    scoring = ["r2", "neg_mean_absolute_error"]
    common = dict(outer=3, inner=3, scoring=scoring, backend="serial")
    parcv.nested_cv(Ridge(), SPACE, X, Y, refit="r2", store=store, **common)
    before = _started(store)
    got = parcv.nested_cv(Ridge(), SPACE, X, Y, refit="neg_mean_absolute_error", store=store,
                          resume=True, **common)  # fmt: skip
    after = _started(store)
    fresh = parcv.nested_cv(Ridge(), SPACE, X, Y, refit="neg_mean_absolute_error", **common)
    for metric in scoring:
        np.testing.assert_array_equal(got.outer_scores[metric], fresh.outer_scores[metric])
    assert got.chosen == fresh.chosen
    rerun = {key[0] for key in after if after[key] != before[key]}
    assert rerun == {"refit", "final"}
    assert all(after[k] == before[k] for k in before if k[0] == "fit")


def test_another_error_score_resumed_rescores_the_failed_fits_without_rerunning(tmp_path):
    store = tmp_path / "run.sqlite"
    # lbfgs needs positive=True: that candidate fails in every fold.
    space = [{"alpha": [0.1, 1.0]}, {"solver": ["lbfgs"]}]
    common = dict(cv=3, backend="serial", store=store)
    with pytest.warns(parcv.FitFailedWarning):
        parcv.search(Ridge(), space, X, Y, **common)
    before = read_store(store)[1]
    with pytest.warns(parcv.FitFailedWarning):
        got = parcv.search(Ridge(), space, X, Y, error_score=-1.0, resume=True, **common)
    after = read_store(store)[1]
    with pytest.warns(parcv.FitFailedWarning):
        fresh = parcv.search(Ridge(), space, X, Y, cv=3, backend="serial", error_score=-1.0)
    np.testing.assert_array_equal(got.cv_results_["mean_test_score"],
                                  fresh.cv_results_["mean_test_score"])  # fmt: skip
    assert got.cv_results_["mean_test_score"][2] == -1.0
    failed = {k for k, r in before.items() if not r.ok}
    assert len(failed) == 3
    for key, record in after.items():
        if key in failed:
            # The failure is kept (not retried): only its score follows the new error_score.
            assert record.test_scores == {"score": -1.0} and record.started == before[key].started
        elif key[0] == "fit":
            assert record == before[key]


def test_a_saved_final_model_of_the_old_choice_is_removed(tmp_path):
    store = tmp_path / "run.sqlite"
    parcv.search(Ridge(), SPACE, X, Y, cv=5, backend="serial", store=store, save_models=True)
    assert parcv.load(store, load_models=True).best_estimator_ is not None
    parcv.search(Ridge(), SPACE, X, Y, cv=5, backend="serial", store=store, selection=ONE_SE,
                 resume=True)  # fmt: skip
    with pytest.raises(ValueError, match="keeps no fitted final model"):
        parcv.load(store, load_models=True)


def test_the_same_choice_resumed_runs_nothing(tmp_path):
    store = tmp_path / "run.sqlite"
    common = dict(cv=5, backend="serial", store=store, selection=ONE_SE, save_models=True)
    parcv.search(Ridge(), SPACE, X, Y, **common)
    before = _started(store)
    parcv.search(Ridge(), SPACE, X, Y, resume=True, **common)
    assert _started(store) == before
