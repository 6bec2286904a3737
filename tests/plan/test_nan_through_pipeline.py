"""NaN in X are followed through the pipeline to the step that refuses them, before any fit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.model_selection import cross_validate as sklearn_cross_validate
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    OneHotEncoder,
    PolynomialFeatures,
    StandardScaler,
)
from sklearn.svm import SVC

import parcv
from parcv.plan.missing import diagnose_missing
from tests.test_bad_input import DISPATCHED, NO

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 3))
Y = (X[:, 0] + X[:, 1] > 0).astype(int)
X_NAN = X.copy()
X_NAN[[4, 9], [2, 0]] = np.nan
FRAME = pd.DataFrame(X_NAN, columns=["a", "b", "c"]).assign(city=["Paris", "Lyon"] * 20)
HGB = HistGradientBoostingClassifier(max_iter=5)


def _finite(X):
    """A transformer without tags (no validation) that refuses NaN in its own words."""
    if np.isnan(X).any():
        raise ValueError("cannot read NaN")
    return X


class _LogOwn(TransformerMixin, BaseEstimator):
    """A user's transformer that passes NaN on, with scikit-learn's default tags (which
    say allow_nan=False without the class ever saying so)."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return np.log1p(np.abs(np.asarray(X, dtype=float)))


def _columns(numbers):
    return ColumnTransformer(
        [("num", numbers, ["a", "b", "c"]), ("text", OneHotEncoder(), ["city"])]
    )


REFUSED = {
    # Before: StandardScaler allows NaN, so the pipeline was let through and every fit failed.
    "a scaler, then a model without NaN": (
        make_pipeline(StandardScaler(), LogisticRegression()),
        X_NAN,
        "step 'logisticregression' (LogisticRegression) of the pipeline does not accept missing "
        "values. Impute them before it, e.g. make_pipeline(StandardScaler(), SimpleImputer(), "
        "LogisticRegression()); or drop those rows, or use an estimator that handles NaN (e.g. "
        "HistGradientBoostingClassifier).",
    ),
    "named steps": (
        Pipeline([("scale", StandardScaler()), ("model", LogisticRegression(C=0.5))]),
        X_NAN,
        "step 'model' (LogisticRegression) of the pipeline does not accept missing values. "
        "Impute them before it, e.g. Pipeline([('scale', StandardScaler()), ('impute', "
        "SimpleImputer()), ('model', LogisticRegression(...))]);",
    ),
    # Before: a ColumnTransformer said nothing, and every fit failed.
    "a DataFrame with a text column, a part without NaN": (
        make_pipeline(_columns(PolynomialFeatures()), LogisticRegression()),
        FRAME,
        "step 'num' (PolynomialFeatures) of step 'columntransformer' (ColumnTransformer) of the "
        "pipeline does not accept missing values. Impute them before it, e.g. make_pipeline("
        "SimpleImputer(), PolynomialFeatures()) in place of step 'num' (PolynomialFeatures) of",
    ),
    "a DataFrame, a scaling part, then a model without NaN": (
        make_pipeline(_columns(StandardScaler()), LogisticRegression()),
        FRAME,
        "step 'logisticregression' (LogisticRegression) of the pipeline does not accept",
    ),
    # Tags that say nothing (no validation): a tiny fit on rows with the NaN decides.
    "a step without tags that fails on NaN only": (
        make_pipeline(FunctionTransformer(_finite), HGB),
        X_NAN,
        "step 'functiontransformer' (FunctionTransformer) of the pipeline does not accept",
    ),
    # A default tag is not a claim: the tiny fit shows the user's step passes NaN on.
    "a user's step with default tags, then a model without NaN": (
        make_pipeline(_LogOwn(), LogisticRegression()),
        X_NAN,
        "step 'logisticregression' (LogisticRegression) of the pipeline does not accept",
    ),
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_the_step_that_refuses_nan_is_named_before_any_fit(kind):
    estimator, X_bad, words = REFUSED[kind]
    first = "(first in row 4, column 2; 2 in all)"
    with pytest.raises(ValueError) as info:
        parcv.search(estimator, [{}], X_bad, Y, cv=3, backend=NO)
    message = str(info.value)
    assert message.startswith(f"X holds NaN {first}, and {words}")


def test_the_call_the_refusal_offers_runs_as_scikit_learn_does():
    """No false refusal: the imputer where the message puts it, scored as scikit-learn does."""
    fixed = make_pipeline(StandardScaler(), SimpleImputer(), LogisticRegression())
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    got = parcv.cross_validate(fixed, X_NAN, Y, cv=cv, backend="serial")
    want = sklearn_cross_validate(fixed, X_NAN, Y, cv=cv)
    np.testing.assert_array_equal(got["test_score"], want["test_score"])


ACCEPTED = {
    "an imputer first": (make_pipeline(SimpleImputer(), LogisticRegression()), X_NAN),
    "HistGradientBoosting": (HGB, X_NAN),
    "a scaler, then HistGradientBoosting": (make_pipeline(StandardScaler(), HGB), X_NAN),
    "a scaler, then an imputer": (
        make_pipeline(StandardScaler(), SimpleImputer(), LogisticRegression()),
        X_NAN,
    ),
    "an imputing part for the columns with NaN": (
        make_pipeline(_columns(make_pipeline(SimpleImputer(), StandardScaler())), SVC()),
        FRAME,
    ),
    "a union of an imputer and its indicator": (
        make_pipeline(
            FeatureUnion(
                [("values", SimpleImputer()), ("flags", SimpleImputer(add_indicator=True))]
            ),
            LogisticRegression(),
        ),
        X_NAN,
    ),
    "a step without tags that passes NaN on, then HistGradientBoosting": (
        make_pipeline(FunctionTransformer(np.tanh), HGB),
        X_NAN,
    ),
    "an estimator that takes any input": (DummyClassifier(), X_NAN),
    # Before: refused, naming the user's step, whose default tags say allow_nan=False.
    "a user's step with default tags that passes NaN on, then HistGradientBoosting": (
        make_pipeline(_LogOwn(), HGB),
        X_NAN,
    ),
}


@pytest.mark.parametrize("kind", sorted(ACCEPTED))
def test_an_estimator_that_takes_nan_reaches_the_backend(kind):
    estimator, X_ok = ACCEPTED[kind]
    with pytest.raises(AssertionError, match=DISPATCHED):
        parcv.search(estimator, [{}], X_ok, Y, cv=3, backend=NO)


PIPE = Pipeline([("scale", StandardScaler()), ("model", LogisticRegression())])


def test_a_space_that_swaps_the_step_is_refused_only_when_every_candidate_refuses():
    """A candidate that takes the NaN leaves something to select: its fits run."""
    with pytest.raises(AssertionError, match=DISPATCHED):
        parcv.search(PIPE, {"model": [LogisticRegression(), HGB]}, X_NAN, Y, cv=3, backend=NO)
    every = r"\(candidate model=LogisticRegression\(\); every candidate refuses them\)"
    with pytest.raises(ValueError, match=r"\(LogisticRegression\) of the pipeline " + every):
        parcv.search(PIPE, {"model": [LogisticRegression(), SVC()]}, X_NAN, Y, cv=3, backend=NO)
    with pytest.raises(AssertionError, match=DISPATCHED):  # an imputer swapped in for the scaler
        parcv.search(PIPE, {"scale": [StandardScaler(), SimpleImputer()]}, X_NAN, Y, cv=3,
                     backend=NO)  # fmt: skip


def test_with_error_score_raise_one_refusing_candidate_is_named():
    with pytest.raises(ValueError, match=r"\(candidate model=LogisticRegression\(\)\)"):
        parcv.search(PIPE, {"model": [HGB, LogisticRegression()]}, X_NAN, Y, cv=3,
                     error_score="raise", backend=NO)  # fmt: skip


def test_each_candidate_is_walked_with_its_own_parameters():
    """A step's tags may depend on its parameters: the candidate's, not the estimator's."""
    space = [{"model__C": c} for c in (0.1, 1.0, 10.0)]
    verdict = diagnose_missing(PIPE, X_NAN, Y, space)
    assert verdict.refused and verdict.n_refusing == 3
    assert [step.estimator.C for _, step in verdict.outcomes] == [0.1, 1.0, 10.0]


def test_a_round_that_swaps_steps_is_left_to_its_fits():
    """One round of a search sees some candidates only: a later one may take the NaN."""
    verdict = diagnose_missing(PIPE, X_NAN, Y, [{"model": SVC()}], part=True)
    assert verdict is not None and not verdict.refused
    verdict = diagnose_missing(PIPE, X_NAN, Y, [{"model__C": 2.0}], part=True)
    assert verdict.refused


def test_no_nan_no_verdict_and_the_estimator_is_not_touched():
    assert diagnose_missing(PIPE, X, Y, []) is None
    assert diagnose_missing(PIPE, FRAME.fillna(0.0), Y, []) is None
    assert not hasattr(PIPE[-1], "coef_")  # the probe fits clones only
