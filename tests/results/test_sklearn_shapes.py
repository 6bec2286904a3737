"""Results read as scikit-learn's: cross_validate's dict, the curves' tuples.

Each is compared with scikit-learn's own function on the same inputs and folds,
on every backend: same keys in the same order, same numbers, same fitted
coefficients.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn import model_selection as ms
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import KFold

import parcv
from parcv.store.readers import read_counts


def test_cross_validate_result_is_scikit_learns_dict(clf_data, backend):
    X, y = clf_data
    cv = KFold(3, shuffle=True, random_state=0)
    options = dict(cv=cv, scoring=["accuracy", "roc_auc"], return_train_score=True,
                   return_estimator=True, return_indices=True)  # fmt: skip
    expected = ms.cross_validate(LogisticRegression(), X, y, **options)
    got = parcv.cross_validate(LogisticRegression(), X, y, backend=backend, **options)
    assert isinstance(got, dict) and list(got) == list(expected) and len(got) == len(expected)
    for key in ("test_accuracy", "train_accuracy", "test_roc_auc", "train_roc_auc"):
        np.testing.assert_array_equal(got[key], expected[key])
        assert got[key] is got.scores[key]  # the dict and the attributes are one result
    for fitted, reference in zip(got["estimator"], expected["estimator"], strict=True):
        np.testing.assert_array_equal(fitted.coef_, reference.coef_)
        np.testing.assert_array_equal(fitted.intercept_, reference.intercept_)
    for part in ("train", "test"):
        assert len(got["indices"][part]) == 3
        for a, b in zip(got["indices"][part], expected["indices"][part], strict=True):
            np.testing.assert_array_equal(a, b)
    assert got.estimators is got["estimator"] and got.summaries["accuracy"].n == 3


def test_cross_validate_dict_has_only_the_keys_asked_for(reg_data):
    X, y = reg_data
    got = parcv.cross_validate(Ridge(), X, y, cv=4, backend="serial")
    expected = ms.cross_validate(Ridge(), X, y, cv=4)
    assert list(got) == list(expected) == ["fit_time", "score_time", "test_score"]
    assert "estimator" not in got and "indices" not in got and got.estimators is None
    assert set(dict(got)) == set(expected)


def test_cross_validate_result_pickles_with_its_dict_and_attributes(reg_data):
    X, y = reg_data
    got = parcv.cross_validate(Ridge(), X, y, cv=4, return_estimator=True, return_indices=True,
                               backend="serial")  # fmt: skip
    back = pickle.loads(pickle.dumps(got))
    assert list(back) == list(got) and back.summaries == got.summaries
    np.testing.assert_array_equal(back["test_score"], got["test_score"])
    np.testing.assert_array_equal(back.estimators[2].coef_, got.estimators[2].coef_)
    np.testing.assert_array_equal(back["indices"]["test"][1], got["indices"]["test"][1])


def test_records_with_estimators_are_not_mixed_with_records_without(reg_data, tmp_path):
    X, y = reg_data
    store = tmp_path / "cv.sqlite"
    options = dict(cv=4, backend="serial", store=store)
    parcv.cross_validate(Ridge(), X, y, **options)
    kept = parcv.cross_validate(Ridge(), X, y, return_estimator=True, resume=True, **options)
    # The store keeps no fitted estimator: the run that returns them fits every fold anew.
    assert all(e is not None for e in kept.estimators) and read_counts(store)[0] == 8
    again = parcv.cross_validate(Ridge(), X, y, return_estimator=True, resume=True, **options)
    assert [e.coef_.tolist() for e in again.estimators] == [
        e.coef_.tolist() for e in kept.estimators
    ]
    plain = parcv.cross_validate(Ridge(), X, y, resume=True, **options)
    assert plain.estimators is None and read_counts(store)[0] == 8  # reused, not refitted
    np.testing.assert_array_equal(plain["test_score"], kept["test_score"])


def test_return_estimator_and_indices_are_checked(reg_data):
    X, y = reg_data
    with pytest.raises(TypeError, match="return_estimator must be True or False; got 'yes'"):
        parcv.cross_validate(Ridge(), X, y, return_estimator="yes", backend="serial")
    with pytest.raises(TypeError, match="return_indices must be True or False; got 1"):
        parcv.cross_validate(Ridge(), X, y, return_indices=1, backend="serial")
    with pytest.raises(ValueError, match="fast_cv=True and return_estimator=True"):
        parcv.cross_validate(Ridge(), X, y, fast_cv=True, return_estimator=True, backend="serial")


def _same(expected, got):
    assert len(got) == len(expected)
    for i, value in enumerate(expected):
        np.testing.assert_array_equal(got[i], value)
    for a, b in zip(expected[1:], got[1:], strict=True):  # slices are tuples, as scikit-learn's
        np.testing.assert_array_equal(a, b)


def test_curves_index_and_convert_as_scikit_learns_tuples(clf_data, backend):
    X, y = clf_data
    model, cv = LogisticRegression(), KFold(3, shuffle=True, random_state=0)
    expected = ms.learning_curve(model, X, y, cv=cv, train_sizes=[0.5, 1.0], return_times=True)
    got = parcv.learning_curve(model, X, y, cv=cv, train_sizes=[0.5, 1.0], return_times=True,
                               backend=backend)  # fmt: skip
    _same(expected[:3], got[:3])
    assert len(got) == 5 and got[-1] is got.score_times and got[3].shape == expected[3].shape
    options = dict(param_name="C", param_range=[0.1, 1.0, 10.0], cv=cv)
    expected = ms.validation_curve(model, X, y, **options)
    got = parcv.validation_curve(model, X, y, backend=backend, **options)
    _same(expected, got)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
    assert np.asarray(got).shape == (2, 3, 3)
    expected = ms.permutation_test_score(model, X, y, cv=cv, n_permutations=5, random_state=0)
    got = parcv.permutation_test_score(model, X, y, cv=cv, n_permutations=5, random_state=0,
                                       backend=backend)  # fmt: skip
    _same(expected, got)
    assert got[0] == expected[0] and got[2] == expected[2] and got[-1] is got[2]
