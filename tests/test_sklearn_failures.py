"""Failures, errors and warnings as scikit-learn's, on every backend (issue 30).

Each test runs scikit-learn's function on the same input first and holds parcv to
its outcome: the same scores, the same exception type and message, the warning
scikit-learn matches on.
"""

from __future__ import annotations

import re
import threading
import warnings

import numpy as np
import pytest
from sklearn import model_selection as ms
from sklearn.exceptions import FitFailedWarning as SklearnFitFailedWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import make_scorer, mean_squared_error
from sklearn.model_selection import KFold
from sklearn.pipeline import Pipeline

import parcv
from parcv.store.readers import read_store
from tests.estimators import FailsOnAlpha, WarnsOnFit

rng = np.random.default_rng(0)
X = rng.normal(size=(60, 3))
Y = X @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=60)
# KFold(3) without shuffle: the last fold trains on rows 0-39, all of class 0.
Y_LAST_FOLD_ONE_CLASS = np.r_[np.zeros(40), np.ones(20)]


def failing_scorer(estimator, X, y):
    raise ValueError("This scorer is supposed to fail!!!")


class LockedError(Exception):
    """An exception that does not pickle: it holds a lock."""

    def __init__(self, message):
        super().__init__(message)
        self.lock = threading.Lock()


def fails_unpicklably(estimator, X, y):
    raise LockedError("scorer failed on purpose")


# R15: error_score="raise" raises the estimator's or the scorer's own exception


def test_error_score_raise_raises_the_fit_error_itself(backend):
    with pytest.raises(ValueError) as expected:
        ms.GridSearchCV(FailsOnAlpha(), {"alpha": [1.0, -1.0]}, cv=3, error_score="raise").fit(X, Y)
    with pytest.raises(ValueError) as got:
        parcv.GridSearchCV(
            FailsOnAlpha(), {"alpha": [1.0, -1.0]}, cv=3, error_score="raise", backend=backend
        ).fit(X, Y)
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)
    note = "".join(got.value.__notes__)
    assert "alpha=-1.0" in note and "error_score='raise'" in note


def test_error_score_raise_raises_the_scorer_error_itself(backend):
    with pytest.raises(ValueError, match="supposed to fail") as expected:
        ms.cross_validate(Ridge(), X, Y, cv=3, scoring=failing_scorer, error_score="raise")
    with pytest.raises(ValueError, match="supposed to fail") as got:
        parcv.cross_validate(
            Ridge(), X, Y, cv=3, scoring=failing_scorer, error_score="raise", backend=backend
        )
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)


def test_an_error_that_does_not_pickle_stops_the_run_with_its_text(backend):
    with pytest.raises(parcv.FitFailedError, match="LockedError: scorer failed on purpose"):
        parcv.cross_validate(
            Ridge(), X, Y, cv=3, scoring=fails_unpicklably, error_score="raise", backend=backend
        )


# R2: a scorer that raises sets that score alone to error_score


@pytest.mark.parametrize("error_score", [np.nan, 0.0])
def test_a_failing_scorer_costs_its_metric_only(backend, error_score):
    scoring = {"bad": failing_scorer, "mse": make_scorer(mean_squared_error)}
    options = dict(cv=3, scoring=scoring, error_score=error_score, return_train_score=True)
    with pytest.warns(UserWarning, match="Scoring failed"):
        expected = ms.cross_validate(Ridge(), X, Y, **options)
    with pytest.warns(UserWarning, match=f"Scoring failed.*set to {error_score}") as caught:
        got = parcv.cross_validate(Ridge(), X, Y, backend=backend, **options)
    for key in ("test_bad", "test_mse", "train_bad", "train_mse"):
        np.testing.assert_array_equal(got.scores[key], expected[key])
    assert not [w for w in caught if issubclass(w.category, SklearnFitFailedWarning)]
    assert all(r.ok for r in got.records)  # the fits succeeded


def test_a_failing_scorer_is_stored_per_metric_and_rescored_on_resume(tmp_path):
    scoring = {"bad": failing_scorer, "mse": make_scorer(mean_squared_error)}
    store = tmp_path / "run.sqlite"
    with pytest.warns(UserWarning, match="Scoring failed"):
        parcv.cross_validate(Ridge(), X, Y, cv=3, scoring=scoring, store=store, backend="serial")
    stored = list(read_store(store)[1].values())
    assert all(r.ok and set(r.score_errors) == {"test:bad"} for r in stored)
    assert stored[0].score_errors["test:bad"].message == "This scorer is supposed to fail!!!"
    # Resumed with another error_score: the failed metric takes it, nothing is refitted.
    with pytest.warns(UserWarning, match="Scoring failed"):
        expected = ms.cross_validate(Ridge(), X, Y, cv=3, scoring=scoring, error_score=-1.0)
    with pytest.warns(UserWarning, match="Scoring failed"):
        got = parcv.cross_validate(Ridge(), X, Y, cv=3, scoring=scoring, error_score=-1.0,
                                   store=store, resume=True, backend="serial")  # fmt: skip
    np.testing.assert_array_equal(got.scores["test_bad"], expected["test_bad"])
    np.testing.assert_array_equal(got.scores["test_mse"], expected["test_mse"])


def test_a_score_that_is_not_a_number_is_a_value_error(backend):
    def text_scorer(estimator, X, y):
        return "high"

    with pytest.raises(ValueError, match="scoring must return a number, got high"):
        ms.cross_validate(Ridge(), X, Y, cv=3, scoring=text_scorer)
    with pytest.raises(ValueError, match="scoring must return a number, got 'high'"):
        parcv.cross_validate(Ridge(), X, Y, cv=3, scoring=text_scorer, backend=backend)


# R16: every fit failing is scikit-learn's ValueError


def test_every_fit_failing_is_sklearns_value_error(backend):
    pattern = re.compile(
        "All the 3 fits failed.+your model is misconfigured.+ValueError: alpha must be >= 0",
        flags=re.DOTALL,
    )
    with pytest.raises(ValueError, match=pattern):
        ms.cross_validate(FailsOnAlpha(alpha=-1.0), X, Y, cv=3)
    with pytest.raises(ValueError, match=pattern) as info:
        parcv.cross_validate(FailsOnAlpha(alpha=-1.0), X, Y, cv=3, backend=backend)
    assert isinstance(info.value, parcv.FitFailedError)


def test_every_candidate_failing_differently_is_sklearns_value_error(backend):
    space = {"alpha": [-1.0, -2.0, -3.0]}
    pattern = re.compile(
        "All the 9 fits failed.+3 fits failed with the following error.+ValueError: alpha must",
        flags=re.DOTALL,
    )
    with pytest.raises(ValueError, match=pattern):
        ms.GridSearchCV(FailsOnAlpha(), space, cv=3).fit(X, Y)
    with pytest.raises(parcv.FitFailedError, match=pattern):
        parcv.GridSearchCV(FailsOnAlpha(), space, cv=3, backend=backend).fit(X, Y)


@pytest.mark.filterwarnings("ignore:fitted a scaler that warns:UserWarning")
def test_every_candidate_failing_alike_stops_early_with_sklearns_words(backend):
    # Every fit fails the same way: parcv stops after the first fold of each candidate.
    model = Pipeline([("scale", WarnsOnFit(fail=True)), ("ridge", Ridge())])
    space = {"ridge__alpha": [1.0, 2.0, 3.0]}
    pattern = re.compile(
        "All the 9 fits failed.+9 fits failed with the following error.+"
        "ValueError: this scaler was told to fail",
        flags=re.DOTALL,
    )
    with pytest.raises(ValueError, match=pattern):
        ms.GridSearchCV(model, space, cv=3).fit(X, Y)
    with pytest.raises(parcv.FitFailedError, match=pattern) as info:
        parcv.GridSearchCV(model, space, cv=3, backend=backend).fit(X, Y)
    assert "parcv stopped rather than run the other 6" in str(info.value)


# R17: partial failures warn in scikit-learn's words


def test_some_fits_failing_warn_as_sklearn_with_the_same_scores(backend):
    pattern = re.compile(
        "1 fits failed out of a total of 3.+The score on these train-test partitions for "
        "these parameters will be set to nan.+1 fits failed with the following error.+"
        "ValueError",
        flags=re.DOTALL,
    )
    with pytest.warns(SklearnFitFailedWarning, match=pattern):
        expected = ms.cross_validate(LogisticRegression(), X, Y_LAST_FOLD_ONE_CLASS, cv=KFold(3))
    with pytest.warns(parcv.FitFailedWarning, match=pattern):
        got = parcv.cross_validate(
            LogisticRegression(), X, Y_LAST_FOLD_ONE_CLASS, cv=KFold(3), backend=backend
        )
    np.testing.assert_array_equal(got.scores["test_score"], expected["test_score"])


def test_a_candidate_failing_warns_as_sklearn_from_the_search(backend):
    space = {"alpha": [1.0, -1.0, 2.0]}
    pattern = re.compile(
        "3 fits failed out of a total of 9.+set to 0.0.+3 fits failed with the following "
        "error.+ValueError: alpha must be >= 0",
        flags=re.DOTALL,
    )
    with pytest.warns(SklearnFitFailedWarning, match=pattern):
        expected = ms.GridSearchCV(FailsOnAlpha(), space, cv=3, error_score=0.0).fit(X, Y)
    with pytest.warns(SklearnFitFailedWarning, match=pattern):
        got = parcv.GridSearchCV(FailsOnAlpha(), space, cv=3, error_score=0.0, backend=backend).fit(
            X, Y
        )
    for key in ("mean_test_score", "split2_test_score", "rank_test_score"):
        np.testing.assert_array_equal(got.cv_results_[key], expected.cv_results_[key])
    assert got.best_index_ == expected.best_index_


# R14: every mean score NaN selects the first candidate, as scikit-learn


def _nan_scorer(estimator, X, y):
    return float("nan")


def test_every_mean_nan_selects_the_first_candidate_as_sklearn(backend):
    space = {"alpha": [1.0, 2.0, 3.0]}
    with pytest.warns(UserWarning, match="non-finite"):
        expected = ms.GridSearchCV(Ridge(), space, cv=3, scoring=_nan_scorer).fit(X, Y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = parcv.GridSearchCV(Ridge(), space, cv=3, scoring=_nan_scorer, backend=backend).fit(
            X, Y
        )
    texts = [str(w.message) for w in caught]
    assert any(t.startswith("One or more of the test scores are non-finite") for t in texts)
    assert got.best_index_ == expected.best_index_ == 0
    np.testing.assert_array_equal(
        got.cv_results_["rank_test_score"], expected.cv_results_["rank_test_score"]
    )
    np.testing.assert_array_equal(got.best_estimator_.coef_, expected.best_estimator_.coef_)


# R9: a callable scoring that returns a dict of metrics


def confusion_scorer(estimator, X, y):
    predicted = estimator.predict(X)
    return {"tp": np.sum((predicted == 1) & (y == 1)), "fp": np.sum((predicted == 1) & (y == 0))}


def test_a_callable_returning_a_dict_names_the_metrics_in_cross_validate(backend):
    y = (Y > 0).astype(int)
    expected = ms.cross_validate(LogisticRegression(), X, y, cv=3, scoring=confusion_scorer)
    got = parcv.cross_validate(
        LogisticRegression(), X, y, cv=3, scoring=confusion_scorer, backend=backend
    )
    for key in ("test_tp", "test_fp"):
        np.testing.assert_array_equal(got.scores[key], expected[key])


# With error_score=nan, both warn that a candidate's mean is NaN.
@pytest.mark.filterwarnings("ignore:One or more of the test scores are non-finite")
@pytest.mark.parametrize("error_score", [np.nan, 0.5])
def test_a_callable_returning_a_dict_selects_by_refit_with_failed_fits(backend, error_score):
    y = (Y > 0).astype(int)
    space = {"C": [1.0, -1.0, 0.01]}  # C=-1 fails in every fold
    options = dict(cv=3, scoring=confusion_scorer, refit="tp", error_score=error_score)
    with pytest.warns(SklearnFitFailedWarning, match="3 fits failed out of a total of 9"):
        expected = ms.GridSearchCV(LogisticRegression(), space, **options).fit(X, y)
    with pytest.warns(SklearnFitFailedWarning, match="3 fits failed out of a total of 9"):
        got = parcv.GridSearchCV(LogisticRegression(), space, backend=backend, **options).fit(X, y)
    for key in ("mean_test_tp", "mean_test_fp", "rank_test_tp", "split1_test_fp"):
        np.testing.assert_array_equal(got.cv_results_[key], expected.cv_results_[key])
    assert got.best_index_ == expected.best_index_ and got.multimetric_
    assert got.score(X, y) == expected.score(X, y)


def test_a_callable_returning_a_dict_without_the_refit_key_is_sklearns_error(backend):
    y = (Y > 0).astype(int)
    search = parcv.GridSearchCV(
        LogisticRegression(), {"C": [0.1, 1.0]}, cv=3, scoring=confusion_scorer,
        refit="tn", backend=backend,
    )  # fmt: skip
    with pytest.raises(ValueError, match="refit must be set to a scorer key"):
        search.fit(X, y)
