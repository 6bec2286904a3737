"""Input scikit-learn accepts is accepted, and gives scikit-learn's numbers on every backend.

Issue 30: sparse fit parameters, ``y=None`` (unsupervised), stratified folds with a class
smaller than the folds, X of any number of dimensions, sparse y and objects that only
convert to an array. Each test runs parcv and scikit-learn on the same input and compares
the numbers exactly (``backend`` covers serial, the local pool and Dask).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import model_selection as ms
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs, make_multilabel_classification
from sklearn.decomposition import PCA
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC
from sklearn.utils._mocking import CheckingClassifier
from sklearn.utils.estimator_checks import _NotAnArray

import parcv
from parcv.plan.data import check_dataset, data_token
from tests.estimators import SparseWeightedRidge

X, LABELS = make_blobs(n_samples=36, centers=3, n_features=3, random_state=0)
Y = X[:, 0] + 0.1 * np.arange(36)
KMEANS = KMeans(n_clusters=3, n_init=1, random_state=0)


def _same(ours, theirs):
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


# --- R3: a sparse fit parameter is split with the rows -------------------------------------


@pytest.mark.parametrize("fmt", ["csr", "coo"])
def test_sparse_fit_parameter_is_split_with_the_rows(backend, fmt):
    weights = sp.random(36, 4, density=0.5, random_state=0, format=fmt) + sp.eye(36, 4)
    params = {"weights": weights}
    ours = parcv.cross_validate(SparseWeightedRidge(), X, Y, cv=3, fit_params=params,
                                backend=backend, progress=False)  # fmt: skip
    theirs = ms.cross_validate(SparseWeightedRidge(), X, Y, cv=3, params=params)
    _same(ours.scores["test_score"], theirs["test_score"])
    unweighted = ms.cross_validate(SparseWeightedRidge(), X, Y, cv=3)["test_score"]
    assert not np.array_equal(theirs["test_score"], unweighted)  # the weights matter


# --- R7: y=None -------------------------------------------------------------------------


def test_unsupervised_cross_validate_equals_sklearn(backend):
    ours = parcv.cross_validate(KMEANS, X, cv=3, return_train_score=True, backend=backend,
                                progress=False)  # fmt: skip
    theirs = ms.cross_validate(KMEANS, X, cv=3, return_train_score=True)
    _same(ours.scores["test_score"], theirs["test_score"])
    _same(ours.scores["train_score"], theirs["train_score"])
    _same(parcv.cross_val_score(KMEANS, X, cv=3, backend=backend, progress=False),
          ms.cross_val_score(KMEANS, X, cv=3))  # fmt: skip


def _inertia(estimator, X):
    """A scorer of an unsupervised estimator: scikit-learn calls it without y."""
    return -float(estimator.inertia_) / len(X) + float(X.sum())


def test_unsupervised_search_with_a_scorer_without_y_equals_sklearn(backend):
    grid = {"n_clusters": [2, 3, 4]}
    ours = parcv.GridSearchCV(KMEANS, grid, scoring=_inertia, cv=3, backend=backend).fit(X)
    theirs = ms.GridSearchCV(KMEANS, grid, scoring=_inertia, cv=3).fit(X)
    _same(ours.cv_results_["mean_test_score"], theirs.cv_results_["mean_test_score"])
    assert ours.best_params_ == theirs.best_params_
    _same(ours.predict(X), theirs.predict(X))


def test_cross_val_predict_without_y_equals_sklearn(backend):
    ours = parcv.cross_val_predict(KMEANS, X, cv=3, backend=backend, progress=False)
    _same(ours, ms.cross_val_predict(KMEANS, X, cv=3))


def test_unsupervised_learning_and_validation_curves_equal_sklearn(backend):
    sizes = [0.5, 1.0]
    ours = parcv.learning_curve(PCA(n_components=2), X, None, train_sizes=sizes, cv=3,
                                backend=backend, progress=False)  # fmt: skip
    theirs = ms.learning_curve(PCA(n_components=2), X, None, train_sizes=sizes, cv=3)
    _same(ours.train_sizes_abs, theirs[0])
    _same(ours.test_scores, theirs[2])
    ours = parcv.validation_curve(PCA(), X, None, param_name="n_components", param_range=[1, 2],
                                  cv=3, backend=backend, progress=False)  # fmt: skip
    theirs = ms.validation_curve(PCA(), X, None, param_name="n_components", param_range=[1, 2],
                                 cv=3)  # fmt: skip
    _same(ours.test_scores, theirs[1])


def test_an_unsupervised_run_resumes_from_its_store(tmp_path):
    store = tmp_path / "kmeans.sqlite"
    first = parcv.cross_validate(KMEANS, X, cv=3, store=store, backend="serial", progress=False)
    again = parcv.cross_validate(KMEANS, X, cv=3, store=store, resume=True, backend="serial",
                                 progress=False)  # fmt: skip
    _same(again.scores["test_score"], first.scores["test_score"])
    assert data_token(check_dataset(X, None)) != data_token(check_dataset(X, LABELS))


# --- R8: a class smaller than the stratified folds ----------------------------------------


def test_a_class_smaller_than_the_folds_warns_and_runs_as_sklearn(backend):
    y = LABELS.copy()
    y[:2] = 3  # class 3 has 2 members for 3 folds
    clf = LogisticRegression(max_iter=500)
    message = "The least populated class in y has only 2 members"
    with pytest.warns(UserWarning, match=message) as caught:
        ours = parcv.cross_validate(clf, X, y, cv=3, backend=backend, progress=False)
    assert {w.filename for w in caught if message in str(w.message)} == {__file__}
    with pytest.warns(UserWarning, match=message):
        theirs = ms.cross_validate(clf, X, y, cv=3)
    _same(ours.scores["test_score"], theirs["test_score"])


# --- R10: X of any dimension reaches the estimator -------------------------------------


@pytest.mark.parametrize("shape", [(36,), (36, 3, 1)], ids=["1-D", "3-D"])
def test_x_of_any_dimension_reaches_the_estimator(backend, shape):
    X_nd = X[:, : shape[1]].reshape(shape) if len(shape) > 1 else X[:, 0]
    clf = DummyClassifier(strategy="stratified", random_state=0)  # tags say 2-D; it takes any
    ours = parcv.cross_validate(clf, X_nd, LABELS, cv=3, backend=backend, progress=False)
    _same(ours.scores["test_score"], ms.cross_validate(clf, X_nd, LABELS, cv=3)["test_score"])


def test_lists_reach_the_estimator_as_lists(backend):
    def is_list(value):
        return isinstance(value, list)

    clf = CheckingClassifier(check_X=is_list, check_y=is_list)
    ours = parcv.cross_validate(clf, X.tolist(), LABELS.tolist(), cv=3, error_score="raise",
                                backend=backend, progress=False)  # fmt: skip
    theirs = ms.cross_validate(clf, X.tolist(), LABELS.tolist(), cv=3)
    _same(ours.scores["test_score"], theirs["test_score"])


# --- R11: sparse y -----------------------------------------------------------------------


def test_sparse_y_gives_sparse_predictions_as_sklearn(backend):
    X_ml, y_ml = make_multilabel_classification(n_samples=40, n_classes=3, n_labels=1,
                                                allow_unlabeled=False, random_state=1)  # fmt: skip
    clf = OneVsRestClassifier(SVC(kernel="linear"))
    y_sparse = sp.csr_matrix(y_ml)
    ours = parcv.cross_val_predict(clf, X_ml, y_sparse, cv=4, backend=backend, progress=False)
    theirs = ms.cross_val_predict(clf, X_ml, y_sparse, cv=4)
    assert sp.issparse(ours) and ours.format == theirs.format
    _same(ours.toarray(), theirs.toarray())
    _same(ours.toarray(), parcv.cross_val_predict(clf, X_ml, y_ml, cv=4, backend="serial"))


# --- R12: objects that only convert to an array ------------------------------------------


def test_array_likes_that_only_convert_to_an_array_are_indexed_as_arrays(backend):
    clf = LogisticRegression(max_iter=500)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # _NotAnArray raises if numpy's functions reach it
        ours = parcv.cross_validate(clf, _NotAnArray(X), _NotAnArray(LABELS), cv=3,
                                    backend=backend, progress=False)  # fmt: skip
    theirs = ms.cross_validate(clf, _NotAnArray(X), _NotAnArray(LABELS), cv=3)
    _same(ours.scores["test_score"], theirs["test_score"])


def test_an_array_like_is_tokened_as_the_array_it_stands_for():
    token = data_token(check_dataset(_NotAnArray(X), _NotAnArray(LABELS)))
    assert token == data_token(check_dataset(X, LABELS))
    other = X.copy()
    other[5, 1] += 1e-12
    assert token != data_token(check_dataset(_NotAnArray(other), _NotAnArray(LABELS)))


# --- test_score_memmap: a scorer returning a memmapped scalar ------------------------------


def test_a_memmapped_scalar_score_is_a_number(tmp_path, backend):
    path = tmp_path / "score.bin"
    path.write_bytes(np.float64(0.25).tobytes())
    score = np.memmap(path, shape=(), mode="r", dtype=np.float64)

    def memmapped(estimator, X, y):
        return score

    ours = parcv.cross_val_score(DummyClassifier(), X, LABELS, cv=3, scoring=memmapped,
                                 backend=backend, progress=False)  # fmt: skip
    _same(ours, ms.cross_val_score(DummyClassifier(), X, LABELS, cv=3, scoring=memmapped))
    _same(ours, [0.25] * 3)


def test_unsupervised_nested_cv_equals_sklearn(backend):
    grid = {"n_clusters": [2, 3]}
    ours = parcv.nested_cv(KMEANS, grid, X, None, outer=3, inner=3, backend=backend,
                           progress=False)  # fmt: skip
    theirs = ms.cross_val_score(ms.GridSearchCV(KMEANS, grid, cv=3), X, cv=3)
    _same(ours.outer_scores["score"], theirs)


def test_sparse_predictions_resume_from_the_store_as_sparse(tmp_path):
    X_ml, y_ml = make_multilabel_classification(n_samples=40, n_classes=3, n_labels=1,
                                                allow_unlabeled=False, random_state=1)  # fmt: skip
    clf, y_sparse = OneVsRestClassifier(SVC(kernel="linear")), sp.csr_matrix(y_ml)
    store = tmp_path / "multilabel.sqlite"
    first = parcv.cross_val_predict(clf, X_ml, y_sparse, cv=4, store=store, backend="serial",
                                    progress=False)  # fmt: skip
    again = parcv.cross_val_predict(clf, X_ml, y_sparse, cv=4, store=store, resume=True,
                                    backend="serial", progress=False)  # fmt: skip
    assert sp.issparse(again) and (again != first).nnz == 0
