from __future__ import annotations

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st
from sklearn.model_selection import KFold

from parcv.plan.splits import ThreeWayHoldOut, check_scheme, materialize_folds


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
