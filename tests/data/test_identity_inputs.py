"""Inputs scikit-learn takes are identified and run, with scikit-learn's numbers (issue 39).

MultiIndex data frames (rows or columns), ufuncs of numpy and scipy as functions, X as a
list of rows of any kind the estimator takes (token lists of different lengths), and a
nested inner splitter holding a ``RandomState``, cloned per outer fold as scikit-learn's
``cross_validate(GridSearchCV(cv=inner), cv=outer)`` clones it. Each runs parcv and
scikit-learn on the same input and compares exactly (``backend``: serial, local, Dask).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.special
from sklearn import model_selection as ms
from sklearn.datasets import make_classification, make_regression
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import parcv
from parcv.plan.data import check_dataset, data_token

X, Y = make_regression(n_samples=48, n_features=4, noise=5.0, random_state=0)
GRID = {"alpha": [0.01, 1.0, 100.0]}


def _same(ours, theirs):
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def _frame(rows_multi: bool, columns_multi: bool) -> pd.DataFrame:
    index = (
        pd.MultiIndex.from_product([range(12), ["a", "b", "c", "d"]], names=["g", "k"])
        if rows_multi
        else pd.RangeIndex(48)
    )
    columns = (
        pd.MultiIndex.from_tuples([("x", 1), ("x", 2), ("z", 1), ("z", 2)])
        if columns_multi
        else ["x1", "x2", "z1", "z2"]
    )
    return pd.DataFrame(X, index=index, columns=columns)


def test_multiindex_frames_are_searched_as_scikit_learn_searches_them(backend):
    _check_multiindex(backend, rows=True, columns=True)


@pytest.mark.parametrize(("rows", "columns"), [(True, False), (False, True)])
def test_a_multiindex_on_either_axis_alone_is_searched_too(rows, columns):
    _check_multiindex("serial", rows=rows, columns=columns)


def _check_multiindex(backend, *, rows, columns):
    frame = _frame(rows, columns)
    ours = parcv.search(Ridge(), GRID, frame, Y, cv=4, backend=backend, progress=False)
    theirs = ms.GridSearchCV(Ridge(), GRID, cv=4).fit(frame, Y)
    _same(ours.cv_results_["mean_test_score"], theirs.cv_results_["mean_test_score"])
    # Identified exactly: another index order, or other values, is other data.
    swapped = frame.swaplevel() if rows else frame.T.swaplevel().T
    assert data_token(check_dataset(frame, Y)) != data_token(check_dataset(swapped, Y))
    assert data_token(check_dataset(frame, Y)) == data_token(check_dataset(frame.copy(), Y))


def test_a_scipy_ufunc_as_a_function_runs_as_in_scikit_learn(backend):
    _check_ufunc(backend, scipy.special.expit)


def test_a_numpy_ufunc_as_a_function_runs_as_in_scikit_learn():
    _check_ufunc("serial", np.tanh)


def _check_ufunc(backend, func):
    pipe = make_pipeline(FunctionTransformer(func), Ridge())
    space = {"ridge__alpha": [0.1, 10.0]}
    ours = parcv.search(pipe, space, X, Y, cv=3, backend=backend, progress=False)
    theirs = ms.GridSearchCV(pipe, space, cv=3).fit(X, Y)
    _same(ours.cv_results_["mean_test_score"], theirs.cv_results_["mean_test_score"])


def _tokens(document):
    """A callable analyzer: the document is already a list of tokens."""
    return document


def _documents():
    rng = np.random.RandomState(0)
    words = np.array(["red", "green", "blue", "sun", "rain", "wind"])
    docs = [list(rng.choice(words, size=rng.randint(1, 7))) for _ in range(60)]
    labels = np.array([int("sun" in d or "blue" in d) for d in docs])
    return docs, labels


def test_a_list_of_token_lists_of_different_lengths_runs_as_in_scikit_learn(backend):
    docs, labels = _documents()
    assert len({len(d) for d in docs}) > 1
    pipe = make_pipeline(CountVectorizer(analyzer=_tokens), LogisticRegression())
    space = {"logisticregression__C": [0.01, 1.0, 100.0]}
    ours = parcv.search(pipe, space, docs, labels, cv=3, backend=backend, progress=False)
    theirs = ms.GridSearchCV(pipe, space, cv=3).fit(docs, labels)
    _same(ours.cv_results_["mean_test_score"], theirs.cv_results_["mean_test_score"])


def test_lists_of_rows_are_identified_element_by_element():
    docs, labels = _documents()
    token = [data_token(check_dataset(d, labels)) for d in (docs, [list(d) for d in docs])]
    assert token[0] == token[1]
    edited = [list(d) for d in docs]
    edited[5] = [*edited[5], "red"]
    assert data_token(check_dataset(edited, labels)) != token[0]
    mixed = [list(d) for d in docs]
    mixed[0] = [1, *mixed[0][1:]]  # the number 1 is not the word "1"
    words = [list(d) for d in docs]
    words[0] = ["1", *words[0][1:]]
    assert data_token(check_dataset(mixed, labels)) != data_token(check_dataset(words, labels))


def test_ragged_rows_for_an_estimator_of_tables_are_still_refused_before_any_fit():
    with pytest.raises(ValueError, match=r"different lengths \(\[1, 2\]\), and Ridge takes a"):
        parcv.search(Ridge(), GRID, [[1.0, 2.0]] * 39 + [[1.0]], np.arange(40.0), cv=3,
                     backend="serial")  # fmt: skip


def _inner():
    return ms.KFold(3, shuffle=True, random_state=np.random.RandomState(0))


def test_nested_cv_clones_an_inner_splitter_with_a_random_state_per_outer_fold(backend):
    Xc, yc = make_classification(n_samples=90, n_features=6, n_informative=3, random_state=3)
    space = {"C": [0.001, 0.01, 0.1, 1.0, 10.0]}
    outer = ms.KFold(3, shuffle=True, random_state=1)
    ours = parcv.nested_cv(LogisticRegression(), space, Xc, yc, outer=outer, inner=_inner(),
                           backend=backend, progress=False)  # fmt: skip
    theirs = ms.cross_validate(ms.GridSearchCV(LogisticRegression(), space, cv=_inner()), Xc, yc,
                               cv=outer, return_estimator=True)  # fmt: skip
    _same(ours.outer_scores["score"], theirs["test_score"])
    assert ours.chosen_params == [e.best_params_ for e in theirs["estimator"]]
    for mine, search in zip(ours.inner_cv_results, theirs["estimator"], strict=True):
        for i in range(3):  # each inner split's scores: the inner folds are scikit-learn's
            key = f"split{i}_test_score"
            _same(mine[key], search.cv_results_[key])
    # The final search on all data: a fresh copy too, as GridSearchCV(cv=inner).fit(X, y).
    final = ms.GridSearchCV(LogisticRegression(), space, cv=_inner()).fit(Xc, yc)
    _same(ours.final.cv_results_["mean_test_score"], final.cv_results_["mean_test_score"])
