"""A store read as a table of columns gives the result its records give, one object each.

``parcv.load`` reads a store's records as a :class:`RecordTable` (numbers as numpy
columns, a Record built only when looked up); the reference is the same assembly on a
plain dict of every Record the table builds, the path a run's own records take.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline

import parcv
from parcv.engine.session import load_run
from parcv.plan.record_table import RecordList, RecordTable
from parcv.results.assemble import make_cv_result, make_nested_result, make_search_result
from tests.estimators import FailsOnAlpha, WarnsOnFit

X, Y = make_regression(n_samples=60, n_features=5, noise=5.0, random_state=0)


def _assert_same_table(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for key in a:
        if isinstance(a[key], np.ndarray) and a[key].dtype.kind == "f":
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)  # NaN == NaN here
        else:
            assert np.array_equal(
                np.asarray(a[key], dtype=object), np.asarray(b[key], dtype=object)
            ), key


def _assert_same_search(got: parcv.SearchResult, want: parcv.SearchResult) -> None:
    _assert_same_table(got.cv_results_, want.cv_results_)
    assert got.best_index_ == want.best_index_
    assert repr(got.summaries) == repr(want.summaries)  # NaN means of the failing candidate
    assert got.failures == want.failures
    assert got.warning_counts == want.warning_counts
    assert list(got.records) == list(want.records)
    assert got.to_json() == want.to_json()


def _run(tmp_path, how: str):
    store = tmp_path / f"{how}.sqlite"
    grid = {"alpha": [-1.0, 0.1, 10.0]}  # alpha=-1 fails in every fold
    if how == "search":
        with pytest.warns(parcv.FitFailedWarning):
            parcv.search(FailsOnAlpha(), grid, X, Y, cv=4, store=store, error_score=np.nan,
                         return_train_score=True, scoring=["r2", "neg_mean_squared_error"],
                         refit="r2", progress=False)  # fmt: skip
    elif how == "warnings":
        estimator = make_pipeline(WarnsOnFit(), Ridge())  # warnings are kept in the records
        with pytest.warns(UserWarning, match="fitted a scaler that warns"):  # and shown
            parcv.search(estimator, {"ridge__alpha": [0.1, 1.0]}, X, Y, cv=3, store=store,
                         progress=False)  # fmt: skip
    elif how == "racing":
        alphas = {"alpha": [0.01, 0.1, 1.0, 10.0, 1e2, 1e3, 1e4, 1e5]}
        parcv.search(Ridge(), alphas, X, Y, cv=KFold(8, shuffle=True, random_state=0),
                     racing=parcv.Racing(), store=store, progress=False)  # fmt: skip
    elif how == "nested":
        parcv.nested_cv(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, X, Y, outer=3, inner=3,
                        store=store, progress=False)  # fmt: skip
    else:
        parcv.cross_validate(Ridge(), X, Y, cv=5, store=store, progress=False)
    return store


@pytest.mark.parametrize("how", ["search", "warnings", "racing", "nested", "cross_validate"])
def test_a_table_gives_the_result_of_its_records_one_object_each(tmp_path, how):
    store = _run(tmp_path, how)
    kind, plan, table = load_run(store)
    assert isinstance(table, RecordTable)
    records = dict(table.items())  # every record built, in the table's order
    assert not isinstance(records, RecordTable)
    if kind == "search":
        got, want = make_search_result(plan, table), make_search_result(plan, records)
        assert isinstance(got.records, RecordList) and isinstance(want.records, list)
        _assert_same_search(got, want)
        assert bool(got.warning_counts) == (how == "warnings")
        assert got.failures.n_failed == (4 if how == "search" else 0)
    elif kind == "nested":
        got, want = make_nested_result(plan, table), make_nested_result(plan, records)
        for left, right in zip(got.inner_cv_results, want.inner_cv_results, strict=True):
            _assert_same_table(left, right)
        _assert_same_search(got.final, want.final)
        assert list(got.records) == list(want.records) and got.to_json() == want.to_json()
    else:
        got, want = make_cv_result(plan, table), make_cv_result(plan, records)
        assert list(got.records) == list(want.records) and got.to_json() == want.to_json()


def test_columns_and_matrices_equal_the_records(tmp_path):
    store = _run(tmp_path, "search")
    _, plan, table = load_run(store)
    n_folds = len(plan.inner_folds[None])
    for name in ("fit_time", "score_time", "test:r2", "train:neg_mean_squared_error"):
        matrix = table.fit_matrix(None, (len(plan.candidates), n_folds), name)
        which, _, metric = name.partition(":")
        for c in range(len(plan.candidates)):
            for i in range(n_folds):
                record = table[("fit", None, i, c)]
                want = (getattr(record, which) if not metric
                        else getattr(record, f"{which}_scores")[metric])  # fmt: skip
                np.testing.assert_array_equal(matrix[c, i], want)
    failed = [r.key for r in table.records(~table.column("ok").astype(bool))]
    assert failed == [k for k, r in dict(table.items()).items() if not r.ok]
    assert failed and {k[3] for k in failed} == {0}  # alpha=-1, every fold


def test_a_loaded_result_pickles_as_plain_records(tmp_path):
    store = _run(tmp_path, "search")
    loaded = parcv.load(store)
    again = pickle.loads(pickle.dumps(loaded))
    assert type(again.records) is list
    assert [repr(r) for r in again.records] == [repr(r) for r in loaded.records]  # NaN scores
    _assert_same_table(again.cv_results_, loaded.cv_results_)


def test_the_final_record_is_replaced_in_place_and_nothing_else_is_added(tmp_path):
    store = _run(tmp_path, "cross_validate")
    _, _, table = load_run(store)
    key = next(iter(table))
    table[key] = table[key]
    with pytest.raises(KeyError):
        table[("fit", 99, 0, 0)] = table[key]
    with pytest.raises(ValueError, match="cannot replace"):
        table[key] = table[next(k for k in table if k != key)]
