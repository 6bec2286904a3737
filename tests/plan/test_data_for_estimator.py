"""X and y an estimator cannot fit are refused before any fit, by its scikit-learn tags."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import cross_validate as sklearn_cross_validate
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.svm import SVC
from sklearn.utils._mocking import CheckingClassifier

import parcv
from tests.test_bad_input import DISPATCHED, NO

RNG = np.random.default_rng(0)
X = RNG.normal(size=(30, 3))
Y = X[:, 0] + 0.1 * np.arange(30)
Y_CLS = np.arange(30) % 2


def _with(value):
    bad = X.copy()
    bad[4, 2] = value
    return bad


REFUSED = {
    "NaN in X": (Ridge(), _with(np.nan), Y, r"X holds NaN \(first in row 4, column 2"),
    "inf in X": (Ridge(), _with(np.inf), Y, r"X holds inf \(first in row 4\)"),
    "-inf in X": (Ridge(), _with(-np.inf), Y, r"X holds inf"),
    "NaN in sparse X": (Ridge(), sp.csr_matrix(_with(np.nan)), Y, r"X holds NaN"),
    "y None for a supervised estimator": (Ridge(), X, None, r"y is None, but Ridge is supervised"),
    "complex X": (Ridge(), X + 1j, Y, r"X has complex dtype complex128"),
    "text X": (Ridge(), np.array([["a", "b", "c"]] * 30, dtype=object), Y, r"non-numeric"),
    "single class": (LogisticRegression(), X, np.zeros(30, int), r"single class 0"),
    "continuous y": (LogisticRegression(), X, Y, r"y is continuous .* is a classifier"),
    "NaN before a scaler": (make_pipeline(Ridge()), _with(np.nan), Y, r"X holds NaN"),
    # Numbers read as text, one of them not a number: that one is named, not the first.
    "a word among numbers in y": (
        Ridge(),
        X,
        np.array([*(f"{v:.4f}" for v in Y[:7]), "NA", *(f"{v:.4f}" for v in Y[8:])]),
        r"y\[7\] = 'NA' is not a number, and Ridge is a regressor",
    ),
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_bad_data_for_the_estimator_is_refused_before_any_fit(kind):
    estimator, X_bad, y, message = REFUSED[kind]
    with pytest.raises(ValueError, match=message):
        parcv.cross_validate(estimator, X_bad, y, cv=3, backend=NO)


ACCEPTED = {
    "NaN for an estimator that takes NaN": (HistGradientBoostingRegressor(), _with(np.nan), Y),
    "NaN before an imputer": (make_pipeline(SimpleImputer(), Ridge()), _with(np.nan), Y),
    "1-D text before a vectorizer": (
        make_pipeline(CountVectorizer(), LogisticRegression()),
        np.array(["a b", "b c", "c a"] * 10),
        Y_CLS,
    ),
    "numbers as strings": (Ridge(), X.astype(str).astype(object), Y),
    # Tags say what an estimator is tested on, not all it takes: its own fit decides.
    "1-D X for an estimator whose tags say 2-D": (DummyClassifier(), X[:, 0], Y_CLS),
    "3-D X for an estimator whose tags say 2-D": (DummyClassifier(), X[:, :, None], Y_CLS),
    "any X for a test double whose tags say nothing": (CheckingClassifier(), X[:, :, None], Y_CLS),
    "y None for a clusterer": (KMeans(n_clusters=2, n_init=1), X, None),
    "sparse y (a multilabel indicator)": (
        OneVsRestClassifier(LogisticRegression()),
        X,
        sp.csr_matrix(np.c_[Y_CLS, 1 - Y_CLS]),
    ),
}


@pytest.mark.parametrize("kind", sorted(ACCEPTED))
def test_data_the_estimator_takes_reaches_the_backend(kind):
    estimator, X_ok, y = ACCEPTED[kind]
    with pytest.raises(AssertionError, match=DISPATCHED):
        parcv.cross_validate(estimator, X_ok, y, cv=3, backend=NO)


def test_coo_x_is_converted_once_and_scores_as_csr():
    coo = parcv.cross_validate(Ridge(), sp.coo_matrix(X), Y, cv=3, backend="serial")
    csr = parcv.cross_validate(Ridge(), sp.csr_matrix(X), Y, cv=3, backend="serial")
    assert coo.scores["test_score"].tolist() == csr.scores["test_score"].tolist()


K = X @ X.T  # a linear kernel between the 30 samples


@pytest.mark.parametrize(
    ("X_bad", "message"),
    [
        (K[:, :20], r"X should be a square kernel matrix.*got shape \(30, 20\)"),
        (K.tolist(), r"SVC takes a precomputed kernel.*got a list"),
    ],
)
def test_a_precomputed_kernel_must_be_a_square_array_as_in_scikit_learn(X_bad, message):
    with pytest.raises(ValueError):  # scikit-learn refuses it with a ValueError too
        sklearn_cross_validate(SVC(kernel="precomputed"), X_bad, Y_CLS, cv=3, error_score="raise")
    with pytest.raises(ValueError, match=message):
        parcv.cross_validate(SVC(kernel="precomputed"), X_bad, Y_CLS, cv=3, backend=NO)
    with pytest.raises(ValueError, match=message):  # before any fit, on a process pool too
        parcv.search(SVC(kernel="precomputed"), {"C": [1.0]}, X_bad, Y_CLS, cv=3,
                     backend="local", n_jobs=2)  # fmt: skip


def test_a_square_kernel_reaches_the_backend():
    with pytest.raises(AssertionError, match=DISPATCHED):
        parcv.cross_validate(SVC(kernel="precomputed"), K, Y_CLS, cv=3, backend=NO)
