from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from sklearn.model_selection import (
    GroupKFold,
    KFold,
    LeaveOneOut,
    LeavePOut,
    RepeatedKFold,
    RepeatedStratifiedKFold,
    ShuffleSplit,
    StratifiedKFold,
    TimeSeriesSplit,
)

from parcv.plan.splits import ThreeWayHoldOut, check_scheme, describe_folds, materialize_folds


@given(n=st.integers(2, 300), k=st.integers(2, 10))
def test_kfold_test_folds_partition_samples(n, k):
    assume(k <= n)
    y = np.zeros(n)
    folds = materialize_folds(check_scheme(k, y, classifier=False), np.zeros((n, 1)), y, None)
    tests = np.concatenate([f.test for f in folds])
    assert np.array_equal(np.sort(tests), np.arange(n))
    for f in folds:
        assert np.intersect1d(f.train, f.test).size == 0
        assert f.train.size + f.test.size == n


@given(n=st.integers(10, 400), seed=st.integers(0, 10_000))
def test_three_way_holdout_parts_are_disjoint_with_the_asked_sizes(n, seed):
    scheme = ThreeWayHoldOut(0.5, 0.25, 0.25, random_state=seed)
    ((trval, test),) = scheme.split(np.zeros((n, 1)))
    ((_, va),) = scheme.inner_splitter().split(trval)
    assert np.intersect1d(trval, test).size == 0
    assert trval.size + test.size == n
    assert abs(test.size - 0.25 * n) <= 1
    assert abs(trval[va].size - 0.25 * n) <= 2


def test_int_cv_matches_sklearn_kfold_for_regressors():
    y = np.arange(20.0)
    ours = materialize_folds(check_scheme(4, y, classifier=False), np.zeros((20, 1)), y, None)
    for fold, (tr, te) in zip(ours, KFold(4).split(y), strict=True):
        np.testing.assert_array_equal(fold.train, tr)
        np.testing.assert_array_equal(fold.test, te)


@pytest.mark.parametrize(
    ("splitter", "groups", "expected"),
    [
        (KFold(5), None, "5-fold CV"),
        (KFold(3, shuffle=True, random_state=0), None, "3-fold CV"),
        (StratifiedKFold(4), None, "4-fold CV"),
        (GroupKFold(3), np.arange(24) % 6, "3-fold CV"),
        (RepeatedKFold(n_splits=5, n_repeats=2, random_state=0), None,
         "5-fold CV repeated 2 times"),
        (RepeatedStratifiedKFold(n_splits=3, n_repeats=4, random_state=0), None,
         "3-fold CV repeated 4 times"),
        (LeaveOneOut(), None, "leave-one-out CV (24 folds)"),
        (ShuffleSplit(10, test_size=0.25, random_state=0), None, "10 train/validation splits"),
        (TimeSeriesSplit(4), None, "4 time-ordered splits (each trains on the rows before it)"),
        (LeavePOut(2), None, "leave-2-out CV (276 splits)"),
    ],
)  # fmt: skip
def test_describe_folds_names_the_splitter_the_folds_came_from(splitter, groups, expected):
    # The report said "selected by 10-fold CV" for RepeatedKFold(5, n_repeats=2).
    y = np.arange(24) % 2
    folds = materialize_folds(check_scheme(splitter, y, classifier=True), np.zeros((24, 1)), y,
                              groups)  # fmt: skip
    assert len(folds) == splitter.get_n_splits(np.zeros((24, 1)), y, groups)
    assert describe_folds(folds) == expected
