"""Stored test-fold predictions: cross_val_predict, McNemar / Cochran's Q, confusion matrix.

References: scikit-learn's cross_val_predict and confusion_matrix, parcv.stats' McNemar
on predictions computed by hand (fits of scikit-learn on the same folds), a brute-force
Cochran's Q, and statsmodels when it is installed.
"""

from __future__ import annotations

import pickle
import sqlite3
import warnings
from contextlib import closing

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_regression
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import confusion_matrix
from sklearn.model_selection import KFold, ShuffleSplit, StratifiedKFold
from sklearn.model_selection import cross_val_predict as sk_cross_val_predict
from sklearn.multiclass import OneVsRestClassifier
from sklearn.tree import DecisionTreeClassifier

import parcv
from parcv.errors import ParcvError
from parcv.plan.records import Predictions
from parcv.stats import cochran_q_test, mcnemar_test
from parcv.store.arrays import decode_array, encode_array
from tests.estimators import FailsOnAlpha

X3, Y3 = make_classification(
    n_samples=90, n_features=6, n_informative=4, n_classes=3, random_state=0
)
XR, YR = make_regression(n_samples=60, n_features=4, noise=5.0, random_state=0)
TREES = {"max_depth": [1, 2, 4]}


# --- cross_val_predict equals scikit-learn's ------------------------------------------

CASES = {
    "predict": (LogisticRegression(max_iter=500), X3, Y3, "predict"),
    "predict_proba": (LogisticRegression(max_iter=500), X3, Y3, "predict_proba"),
    "decision_function": (LogisticRegression(max_iter=500), X3, Y3, "decision_function"),
    "regression": (Ridge(alpha=0.5), XR, YR, "predict"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cross_val_predict_equals_sklearn(case, backend):
    estimator, X, y, method = CASES[case]
    cv = StratifiedKFold(4, shuffle=True, random_state=1) if y is Y3 else KFold(5)
    got = parcv.cross_val_predict(estimator, X, y, cv=cv, method=method, backend=backend)
    want = sk_cross_val_predict(estimator, X, y, cv=cv, method=method)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


@pytest.mark.parametrize("method", ["predict_proba", "predict_log_proba", "decision_function"])
def test_cross_val_predict_fills_classes_a_fold_lacks_as_sklearn(method):
    y = np.repeat(["a", "b", "c"], 30)
    cv = KFold(3)  # each training part lacks one class
    est = LogisticRegression(max_iter=500)
    if method == "decision_function":  # two classes: one column, which cannot be placed
        with pytest.warns(RuntimeWarning), pytest.raises(ValueError, match="Only 2 class"):
            sk_cross_val_predict(est, X3, y, cv=cv, method=method)
        with (
            pytest.warns(RuntimeWarning),
            pytest.raises(ValueError, match="Only 2 class/es in training fold, but 3"),
        ):
            parcv.cross_val_predict(est, X3, y, cv=cv, method=method, backend="serial")
        return
    with pytest.warns(RuntimeWarning, match="training fold"):
        want = sk_cross_val_predict(est, X3, y, cv=cv, method=method)
    with pytest.warns(RuntimeWarning, match=r"training fold \(2\) does not match .* \(3\)"):
        got = parcv.cross_val_predict(est, X3, y, cv=cv, method=method, backend="serial")
    assert np.array_equal(got, want)


MULTI_OUTPUT = {
    # predict_proba: a list of arrays, one per output, with its own classes_ (a list).
    "forest": RandomForestClassifier(n_estimators=5, random_state=0),
    # predict_proba: one array of a column per label.
    "one-vs-rest": OneVsRestClassifier(LogisticRegression(max_iter=500)),
}


@pytest.mark.parametrize(
    ("model", "method"),
    [(m, f) for m in sorted(MULTI_OUTPUT) for f in ("predict_proba", "predict_log_proba", "predict")
     if hasattr(MULTI_OUTPUT[m], f)],  # one-vs-rest has no predict_log_proba
)  # fmt: skip
def test_cross_val_predict_multi_output_equals_sklearn(model, method, backend):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 4))
    y = (rng.normal(size=(40, 3)) > 0).astype(int)
    y[0, 0] = 2  # a third class of one row, missing from one training part: filled
    if model == "one-vs-rest":
        y[0, 0] = 1  # a label indicator matrix: 0/1 only
    estimator = MULTI_OUTPUT[model]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(0); a class a fold lacks
        want = sk_cross_val_predict(estimator, X, y, cv=KFold(4), method=method)
        got = parcv.cross_val_predict(estimator, X, y, cv=KFold(4), method=method, backend=backend)
    assert type(got) is type(want)
    got, want = (got, want) if isinstance(got, list) else ([got], [want])
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and np.array_equal(g, w)


def test_multi_output_predictions_are_stored_per_output(tmp_path):
    rng = np.random.RandomState(1)
    X, y = rng.normal(size=(30, 3)), (rng.normal(size=(30, 2)) > 0).astype(int)
    forest = RandomForestClassifier(n_estimators=3, random_state=0)
    result = parcv.cross_validate(forest, X, y, cv=KFold(3), return_predictions="predict_proba",
                                  store=tmp_path / "s.sqlite", backend="serial")  # fmt: skip
    loaded = parcv.load(tmp_path / "s.sqlite")
    for kept in (result, loaded):
        oof = kept.predictions.out_of_fold(method="predict_proba[1]")
        want = sk_cross_val_predict(forest, X, y, cv=KFold(3), method="predict_proba")[1]
        assert np.array_equal(oof.values[np.argsort(oof.rows)], want)
    with pytest.raises(ValueError, match=r"one array per output.*predict_proba\[0\]"):
        result.predictions.out_of_fold(method="predict_proba")


def test_cross_val_predict_string_labels_and_default_cv():
    y = np.where(Y3 == 0, "zero", np.where(Y3 == 1, "one", "two"))
    got = parcv.cross_val_predict(LogisticRegression(max_iter=500), X3, y, backend="serial")
    want = sk_cross_val_predict(LogisticRegression(max_iter=500), X3, y)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_cross_val_predict_refuses_what_sklearn_refuses(monkeypatch):
    def no_run(*args, **kwargs):
        raise AssertionError("nothing may run before the input is checked")

    monkeypatch.setattr(parcv.api, "execute_plan", no_run)
    with pytest.raises(ValueError, match="only works for partitions"):
        parcv.cross_val_predict(Ridge(), XR, YR, cv=ShuffleSplit(3, random_state=0))
    with pytest.raises(ValueError, match="does not have"):
        parcv.cross_val_predict(Ridge(), XR, YR, method="predict_proba")
    with pytest.raises(ValueError, match="method names among"):
        parcv.cross_val_predict(Ridge(), XR, YR, method="transform")
    with pytest.raises(TypeError, match="method must be a str"):
        parcv.cross_val_predict(Ridge(), XR, YR, method=["predict"])


# --- predictions stored with the records ----------------------------------------------


def _by_hand(estimator, params, X, y, cv):
    """Each fold's predictions of one candidate, fitted by scikit-learn alone."""
    out = []
    for train, test in cv.split(X, y):
        model = clone(estimator).set_params(**params).fit(X[train], y[train])
        out.append((test, model.predict(X[test])))
    return out


def test_search_keeps_each_fit_s_predictions(tmp_path):
    cv = KFold(5, shuffle=True, random_state=0)
    est = DecisionTreeClassifier(random_state=0)
    store = tmp_path / "run.sqlite"
    s = parcv.search(est, TREES, X3, Y3, cv=cv, backend="serial", store=store,
                     return_predictions=("predict", "predict_proba"))  # fmt: skip
    for c, params in enumerate(s.cv_results_["params"]):
        for i, (test, want) in enumerate(_by_hand(est, params, X3, Y3, cv)):
            kept = s.predictions.by_candidate[c][i]
            assert np.array_equal(kept.arrays["predict"], want)
            assert kept.arrays["predict_proba"].shape == (len(test), 3)
            assert np.array_equal(kept.arrays["classes_"], [0, 1, 2])
        oof = s.out_of_fold(c)
        assert np.array_equal(oof.y_true, Y3[oof.rows])
    loaded = parcv.load(store)
    for c in range(3):
        assert loaded.predictions.by_candidate[c] == s.predictions.by_candidate[c]
        assert np.array_equal(loaded.out_of_fold(c).values, s.out_of_fold(c).values)
    assert np.array_equal(loaded.predictions.y_true, Y3)


def test_predictions_are_reused_by_content_key_and_made_when_missing(tmp_path):
    store = tmp_path / "run.sqlite"
    est = DecisionTreeClassifier(random_state=0)
    plain = parcv.search(est, TREES, X3, Y3, cv=3, backend="serial", store=store)
    assert plain.predictions is None
    first = parcv.search(est, TREES, X3, Y3, cv=3, backend="serial", store=store, resume=True,
                         return_predictions=True)  # fmt: skip
    # Records without predictions are not reused for a run that keeps them.
    assert {r.started for r in first.records}.isdisjoint({r.started for r in plain.records})
    again = parcv.search(est, {"max_depth": [1, 2, 4, 8]}, X3, Y3, cv=3, backend="serial",
                         store=store, resume=True, return_predictions=True)  # fmt: skip
    fits = [r for r in again.records if r.unit.kind == "fit"]
    old = {(r.unit.inner, r.unit.candidate): r for r in first.records if r.unit.kind == "fit"}
    for r in fits:
        if r.unit.candidate < 3:
            assert r.started == old[(r.unit.inner, r.unit.candidate)].started  # reused
            assert r.predictions == old[(r.unit.inner, r.unit.candidate)].predictions
        assert r.predictions is not None


def test_cross_validate_keeps_predictions(backend):
    cv = KFold(4, shuffle=True, random_state=2)
    r = parcv.cross_validate(Ridge(), XR, YR, cv=cv, backend=backend, return_predictions=True)
    oof = r.out_of_fold()
    want = sk_cross_val_predict(Ridge(), XR, YR, cv=cv)
    assert np.array_equal(oof.values, want[oof.rows])
    assert np.array_equal(np.sort(oof.rows), np.arange(len(YR)))


# --- tests on stored predictions ------------------------------------------------------


@pytest.fixture(scope="module")
def trees():
    cv = StratifiedKFold(5, shuffle=True, random_state=3)
    est = DecisionTreeClassifier(random_state=0)
    s = parcv.search(est, TREES, X3, Y3, cv=cv, backend="serial", return_predictions=True)
    pooled = []
    for params in s.cv_results_["params"]:
        folds = _by_hand(est, params, X3, Y3, cv)
        pooled.append(
            (np.concatenate([t for t, _ in folds]), np.concatenate([p for _, p in folds]))
        )
    return s, pooled


def test_mcnemar_from_stored_predictions_equals_by_hand(trees):
    s, pooled = trees
    for a, b in [(0, 1), (0, 2), (1, 2)]:
        rows, pa = pooled[a]
        pb = pooled[b][1]
        want = mcnemar_test(Y3[rows], pa, pb)
        got = s.compare(a, b, test="mcnemar")
        assert (got.statistic, got.p_value, got.details) == (
            want.statistic, want.p_value, want.details,
        )  # fmt: skip
        assert got.name_a == s.candidates[a].label
        exact = s.compare(a, b, test="mcnemar", exact=True)
        assert exact.p_value == mcnemar_test(Y3[rows], pa, pb, exact=True).p_value


def test_mcnemar_equals_statsmodels(trees):
    contingency = pytest.importorskip("statsmodels.stats.contingency_tables")
    s, pooled = trees
    rows, pa = pooled[0]
    pb = pooled[2][1]
    ca, cb = pa == Y3[rows], pb == Y3[rows]
    table = [[np.sum(ca & cb), np.sum(ca & ~cb)], [np.sum(~ca & cb), np.sum(~ca & ~cb)]]
    want = contingency.mcnemar(table, exact=False, correction=True)
    got = s.compare(0, 2, test="mcnemar", exact=False)
    assert got.p_value == pytest.approx(want.pvalue, rel=1e-12)


def _brute_cochran_q(y, predictions):
    correct = np.array([[p[i] == y[i] for p in predictions] for i in range(len(y))], float)
    k = correct.shape[1]
    col, row = correct.sum(axis=0), correct.sum(axis=1)
    g_bar = col.mean()
    numerator = k * (k - 1) * np.sum((col - g_bar) ** 2)
    return numerator / (k * row.sum() - np.sum(row**2))


def test_cochran_q_from_stored_predictions(trees):
    s, pooled = trees
    rows = pooled[0][0]
    got = s.cochran_q()
    want = _brute_cochran_q(Y3[rows], [p for _, p in pooled])
    assert got.statistic == pytest.approx(want, rel=1e-12) and got.df == 2
    assert list(got.accuracies) == [c.label for c in s.candidates]
    # With two classifiers Q is McNemar's chi-square without continuity correction.
    two = s.cochran_q([0, 2])
    n_a = np.sum((pooled[0][1] == Y3[rows]) & (pooled[2][1] != Y3[rows]))
    n_b = np.sum((pooled[0][1] != Y3[rows]) & (pooled[2][1] == Y3[rows]))
    assert two.statistic == pytest.approx((n_a - n_b) ** 2 / (n_a + n_b), rel=1e-12)


def test_cochran_q_equals_statsmodels(trees):
    sm = pytest.importorskip("statsmodels.stats.contingency_tables")
    s, pooled = trees
    rows = pooled[0][0]
    got = s.cochran_q()
    matrix = np.column_stack([p == Y3[rows] for _, p in pooled]).astype(int)
    assert got.p_value == pytest.approx(sm.cochrans_q(matrix).pvalue, rel=1e-12)


def test_cochran_q_test_refuses_bad_input():
    with pytest.raises(ValueError, match="at least two"):
        cochran_q_test([0, 1], [[0, 1]])
    with pytest.raises(ValueError, match="equal lengths"):
        cochran_q_test([0, 1], [[0, 1], [0]])
    assert cochran_q_test([0, 1], [[0, 1], [0, 1]]).p_value == 1.0


def test_tests_on_predictions_say_how_to_get_them():
    s = parcv.search(DecisionTreeClassifier(random_state=0), TREES, X3, Y3, cv=3,
                     backend="serial")  # fmt: skip
    for call in (lambda: s.compare(0, 1, test="mcnemar"), s.cochran_q, lambda: s.out_of_fold(0)):
        with pytest.raises(ParcvError, match="return_predictions=True"):
            call()
    with pytest.raises(ValueError, match="at least two candidates"):
        parcv.search(DecisionTreeClassifier(), TREES, X3, Y3, cv=3, backend="serial",
                     return_predictions=True).cochran_q([0])  # fmt: skip


def test_a_failed_fit_keeps_no_predictions_and_says_so():
    # As scikit-learn, failed fits warn whether or not the search refits.
    with pytest.warns(parcv.FitFailedWarning, match="3 fits failed out of a total of 6"):
        s = parcv.search(FailsOnAlpha(), {"alpha": [1.0, -1.0]}, XR, YR, cv=3,
                         backend="serial", refit=False, return_predictions=True)  # fmt: skip
    assert all(p is None for p in s.predictions.by_candidate[1])
    assert s.out_of_fold(0).values.shape == (len(YR),)
    with pytest.raises(ValueError, match=r"no predictions on folds \[0, 1, 2\]"):
        s.out_of_fold("alpha=-1.0")


def test_return_predictions_is_checked_before_anything_runs():
    with pytest.raises(ValueError, match="method names among"):
        parcv.search(Ridge(), {"alpha": [1.0]}, XR, YR, return_predictions="proba")
    with pytest.raises(ValueError, match="does not have"):
        parcv.search(Ridge(), {"alpha": [1.0]}, XR, YR, return_predictions="predict_proba")
    with pytest.raises(ValueError, match="fast_cv=True and return_predictions"):
        parcv.search(Ridge(), {"alpha": [1.0]}, XR, YR, fast_cv=True, return_predictions=True)


# --- nested CV: pooled confusion matrix and residuals ---------------------------------


def test_nested_confusion_matrix_equals_sklearn_by_hand(backend):
    outer, inner = KFold(3, shuffle=True, random_state=0), KFold(3)
    est = DecisionTreeClassifier(random_state=0)
    n = parcv.nested_cv(est, TREES, X3, Y3, outer=outer, inner=inner, backend=backend,
                        return_predictions=True)  # fmt: skip
    truth, predicted = [], []
    for o, (train, test) in enumerate(outer.split(X3)):
        model = clone(est).set_params(**n.chosen_params[o]).fit(X3[train], Y3[train])
        truth.append(Y3[test])
        predicted.append(model.predict(X3[test]))
    labels, matrix = n.confusion_matrix()
    want = confusion_matrix(np.concatenate(truth), np.concatenate(predicted))
    assert np.array_equal(labels, [0, 1, 2]) and np.array_equal(matrix, want)


def test_report_shows_outer_predictions(tmp_path):
    from parcv.report.plots import render_plots
    from parcv.report.text import RunInfo, render_report

    n = parcv.nested_cv(DecisionTreeClassifier(random_state=0), TREES, X3, Y3, outer=3,
                        inner=3, backend="serial", return_predictions=True)  # fmt: skip
    text = render_report(n, RunInfo("t"))
    _, matrix = n.confusion_matrix()
    row = "| 0 | " + " | ".join(str(v) for v in matrix[0]) + " |"
    assert "## Pooled confusion matrix" in text and row in text
    assert "outer_predictions.png" in render_plots(n)
    r = parcv.nested_cv(Ridge(), {"alpha": [0.1, 1.0]}, XR, YR, outer=3, inner=3,
                        backend="serial", return_predictions=True)  # fmt: skip
    oof = r.out_of_fold()
    rmse = float(np.sqrt(np.mean((oof.y_true - oof.values) ** 2)))
    assert "## Pooled residuals" in render_report(r, RunInfo("t"))
    assert f"root mean square {parcv.report.text.num(rmse)}" in render_report(r, RunInfo("t"))
    plain = parcv.nested_cv(Ridge(), {"alpha": [0.1, 1.0]}, XR, YR, outer=3, inner=3,
                            backend="serial")  # fmt: skip
    assert "Pooled" not in render_report(plain, RunInfo("t"))
    with pytest.raises(ParcvError, match="return_predictions=True"):
        plain.confusion_matrix()


# --- the store: plain arrays, no pickles, additive tables -----------------------------


@pytest.mark.parametrize(
    "array",
    [
        np.array([3, 1, 3, 7], dtype=np.int64),
        np.arange(70000, dtype=np.int64),  # too many distinct values for codes
        np.array([True, False, True]),
        np.array([[0.25, 0.75], [np.nan, -np.inf]], dtype=np.float32),
        np.array(["cat", "dog", "cat"]),
        np.array(["x", "yy", "x"], dtype=object),
        np.array([1.5, -2.0]),
        np.empty((0, 3)),
    ],
)
def test_arrays_come_back_bit_for_bit(array):
    back = decode_array(*encode_array(array))
    assert back.dtype == array.dtype and back.shape == array.shape
    assert Predictions({"p": back}) == Predictions({"p": array})
    assert back.tobytes() == array.tobytes() or array.dtype == object


def test_reading_predictions_never_unpickles(tmp_path, monkeypatch):
    store = tmp_path / "run.sqlite"
    parcv.search(DecisionTreeClassifier(random_state=0), TREES, X3, Y3, cv=3, backend="serial",
                 store=store, return_predictions=("predict", "predict_proba"))  # fmt: skip

    def refuse(*args, **kwargs):
        raise AssertionError("a store read unpickled something")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    loaded = parcv.load(store)
    assert loaded.compare(0, 1, test="mcnemar").n == len(Y3)


def test_a_store_without_the_new_tables_still_loads(tmp_path):
    store = tmp_path / "run.sqlite"
    s = parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, XR, YR, cv=3, backend="serial", store=store)
    with closing(sqlite3.connect(store)) as conn:
        conn.execute("DROP TABLE predictions")
        conn.execute("DROP TABLE target")
        conn.execute("DELETE FROM meta WHERE name = 'seal'")  # as the parcv before them left it
        conn.commit()
    assert parcv.load(store).best_params_ == s.best_params_
    again = parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, XR, YR, cv=3, backend="serial",
                         store=store, resume=True, return_predictions=True)  # fmt: skip
    assert parcv.load(store).predictions.by_candidate[0] == again.predictions.by_candidate[0]


def test_spec_scoring_predictions():
    from parcv.cli.build import build_scoring
    from parcv.cli.spec import SpecError

    assert build_scoring({"predictions": True}, "search") == {"return_predictions": True}
    assert build_scoring({"predictions": ["predict", "predict_proba"]}, "nested_cv")[
        "return_predictions"
    ] == ("predict", "predict_proba")
    with pytest.raises(SpecError, match=r"scoring\.predictions"):
        build_scoring({"predictions": "yes"}, "search")


@pytest.mark.slow
def test_store_of_100_candidates_10_folds_10000_rows_is_compact(tmp_path):
    """Predictions of 100 candidates x 10 folds x 10,000 rows: the store < 2x their float32 size."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10_000, 2))
    y = rng.integers(0, 3, size=10_000)
    space = {"strategy": ["constant"], "constant": [0, 1, 2], "random_state": list(range(34))}
    store = tmp_path / "run.sqlite"
    s = parcv.search(DummyClassifier(), space, X, y, cv=10, backend="serial", store=store,
                     refit=False, return_predictions=True)  # fmt: skip
    assert len(s.candidates) == 102
    float32_size = len(s.candidates) * 10_000 * 4
    assert store.stat().st_size < 2 * float32_size
    loaded = parcv.load(store)
    assert loaded.predictions.by_candidate[101] == s.predictions.by_candidate[101]
