"""The catalogue of bad inputs: each is refused before any unit is dispatched.

Every case is one kind of mistake a user makes (the fault probe of issue 19 found 75; this
list holds those we could reconstruct and more). Each call gets a backend that fails the
test if any work reaches it, and must raise ``ValueError`` or ``TypeError`` whose message
names what was wrong (``match``). The number of cases is the count quoted in notes.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GroupKFold, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import parcv
from parcv.engine.backends import LocalBackend


class NeverRuns:
    """A backend that fails the test if any work reaches it."""

    def open(self, plan, data):  # pragma: no cover - reaching it is the failure
        raise AssertionError("compute was dispatched despite bad input")


NO = NeverRuns()
RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 3))
Y = X[:, 0] + 0.1 * np.arange(40)
Y_CLS = (np.arange(40) % 2).astype(int)
SPACE = {"alpha": [0.1, 1.0]}
C_SPACE = {"C": [0.1, 1.0]}


def _with(array, row, value):
    out = np.array(array, dtype=float)
    out[row] = value
    return out


class Unpicklable(Ridge):
    """A Ridge holding a lock: it cannot be sent to a worker process."""

    def __init__(self, alpha=1.0, lock=None):
        super().__init__(alpha=alpha)
        self.lock = threading.Lock() if lock is None else lock


class NoFit:
    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self


def _bad_scorer(estimator, X, y):
    return "high"


def search(**kw):
    args = {"estimator": Ridge(), "space": SPACE, "X": X, "y": Y, "cv": 3, "backend": NO}
    args.update(kw)
    return parcv.search(args.pop("estimator"), args.pop("space"), args.pop("X"), args.pop("y"),
                        progress=False, **args)  # fmt: skip


def csearch(**kw):
    base = {"estimator": LogisticRegression(), "space": C_SPACE, "y": Y_CLS}
    return search(**{**base, **kw})


def nested(**kw):
    args = {"estimator": Ridge(), "space": SPACE, "X": X, "y": Y, "outer": 3, "inner": 3}
    args.update(kw)
    return parcv.nested_cv(args.pop("estimator"), args.pop("space"), args.pop("X"),
                           args.pop("y"), backend=NO, progress=False, **args)  # fmt: skip


def cv(**kw):
    args = {"estimator": Ridge(), "X": X, "y": Y, "cv": 3}
    args.update(kw)
    return parcv.cross_validate(args.pop("estimator"), args.pop("X"), args.pop("y"),
                                backend=NO, progress=False, **args)  # fmt: skip


CASES = {
    # --- the data ---------------------------------------------------------------------
    "X and y lengths differ": (lambda: search(y=Y[:39]), r"40 rows, y has 39"),
    "empty data": (lambda: search(X=np.empty((0, 3)), y=np.empty(0)), r"empty"),
    "NaN in y": (lambda: search(y=_with(Y, 4, np.nan)), r"index 4"),
    "inf in y": (lambda: search(y=_with(Y, 5, np.inf)), r"index 5"),
    "NaN in X, estimator without NaN support": (lambda: search(X=_with(X, (3, 1), np.nan)), r"NaN"),
    "inf in X": (lambda: search(X=_with(X, (2, 0), np.inf)), r"inf"),
    "-inf in X of a NaN-tolerant estimator": (
        lambda: search(
            estimator=HistGradientBoostingRegressor(),
            space={"max_iter": [5]},
            X=_with(X, (2, 0), -np.inf),
        ),
        r"inf",
    ),
    # Estimator tags do not say all an estimator accepts (DummyClassifier fits 1-D X): as in
    # scikit-learn's searches, the estimator's own fit decides (see tests/data/).
    "1-D or 3-D X is left to the estimator, not refused by its tags": (None, None),
    "X with no columns": (lambda: search(X=np.empty((40, 0))), r"feature|column"),
    "object X (strings)": (
        lambda: search(X=np.array([["a", "b", "c"]] * 40, dtype=object)),
        r"numeric|string",
    ),
    "complex X": (lambda: search(X=X.astype(complex)), r"complex"),
    "ragged X": (lambda: search(X=[[1.0, 2.0]] * 39 + [[1.0]]), r"different lengths"),
    "string y for a regressor": (
        lambda: search(y=np.array(["a", "b"] * 20)),
        r"numeric|regress|string",
    ),
    "single class for a classifier": (lambda: csearch(y=np.zeros(40, int)), r"one class|1 class"),
    "continuous y for a classifier": (lambda: csearch(y=Y), r"continuous"),
    "NaN label for a classifier": (lambda: csearch(y=_with(Y_CLS, 3, np.nan)), r"index 3"),
    "y missing for a supervised estimator": (lambda: search(y=None), r"y is None.*supervised"),
    "y missing for a classifier in a pipeline": (
        lambda: csearch(
            estimator=make_pipeline(StandardScaler(), LogisticRegression()),
            space={"logisticregression__C": [1.0]},
            y=None,
        ),
        r"y is None.*LogisticRegression|y is None.*Pipeline",
    ),
    "NaN in a sparse y": (
        lambda: search(y=sp.csr_matrix(_with(Y, 2, np.nan).reshape(-1, 1))),
        r"NaN",
    ),
    "2-D y for a single-output classifier": (
        lambda: csearch(y=np.c_[Y_CLS, Y_CLS]),
        r"y|2-D|multi",
    ),
    "groups of another length": (lambda: search(cv=GroupKFold(3), groups=np.arange(39)), r"groups"),
    "group splitter without groups": (lambda: search(cv=GroupKFold(3)), r"groups"),
    "fewer groups than folds": (
        lambda: search(cv=GroupKFold(3), groups=np.arange(40) % 2),
        r"groups",
    ),
    "sample_weight of another length": (
        lambda: search(fit_params={"sample_weight": np.ones(39)}),
        r"sample_weight",
    ),
    "fit_params not a dict": (lambda: search(fit_params=[("sample_weight", 1)]), r"fit_params"),
    "NaN in X given as a DataFrame": (
        lambda: search(X=__import__("pandas").DataFrame(_with(X, (1, 2), np.nan))),
        r"NaN",
    ),
    "NaN in sparse X": (lambda: search(X=sp.csr_matrix(_with(X, (0, 0), np.nan))), r"NaN"),
    # --- the folds ----------------------------------------------------------------------
    "cv=0": (lambda: search(cv=0), r"0"),
    "cv=1": (lambda: search(cv=1), r"1"),
    "more folds than rows": (lambda: search(cv=41), r"41"),
    "cv as a word": (lambda: search(cv="five"), r"five"),
    "cv as a float": (lambda: search(cv=5.0), r"5\.0"),
    "cv negative": (lambda: search(cv=-3), r"-3"),
    "splitter with more folds than rows": (lambda: search(cv=KFold(41)), r"41"),
    # scikit-learn's StratifiedKFold warns and splits; so does parcv (see tests/data/).
    "stratified folds with a rare class warn and run, as in scikit-learn": (None, None),
    "explicit folds out of range": (
        lambda: search(cv=[(np.arange(20), np.arange(20, 45))]),
        r"range|index|40",
    ),
    "explicit fold with an empty test set": (
        lambda: search(cv=[(np.arange(40), np.arange(0))]),
        r"0 test",
    ),
    "nested: bad outer cv": (lambda: nested(outer=1), r"outer"),
    "nested: bad inner cv": (lambda: nested(inner=0), r"inner"),
    "nested: inner folds larger than an outer train set": (lambda: nested(inner=30), r"30"),
    # --- the estimator ------------------------------------------------------------------
    "estimator class instead of instance": (lambda: search(estimator=Ridge), r"Ridge\(\)"),
    "estimator without fit": (lambda: search(estimator=NoFit(), space={}), r"fit"),
    "estimator None": (lambda: search(estimator=None), r"None"),
    "estimator that cannot be pickled": (
        lambda: search(estimator=Unpicklable(), backend="local"),
        r"Unpicklable.*pickled",
    ),
    "pipeline step name unknown": (
        lambda: search(
            estimator=make_pipeline(StandardScaler(), Ridge()), space={"rige__alpha": [1.0]}
        ),
        r"rige",
    ),
    # --- the space ----------------------------------------------------------------------
    "unknown parameter": (lambda: search(space={"alpah": [1.0]}), r"alpah"),
    "empty value list": (lambda: search(space={"alpha": []}), r"alpha"),
    "empty space list": (lambda: search(space=[]), r"space"),
    "a scalar instead of a value list": (lambda: search(space={"alpha": 1.0}), r"alpha"),
    "a string instead of a value list": (lambda: search(space={"solver": "auto"}), r"solver"),
    "a non-dict in a list of grids": (lambda: search(space=[SPACE, 3]), r"3"),
    "a value the estimator rejects (negative alpha)": (
        lambda: search(space={"alpha": [-1.0]}, error_score="raise"),
        r"alpha",
    ),
    "an option the estimator does not know": (
        lambda: search(space={"solver": ["fast"]}, error_score="raise"),
        r"fast",
    ),
    "a value of the wrong type": (
        lambda: search(space={"alpha": ["big"]}, error_score="raise"),
        r"big",
    ),
    "a set as a parameter value": (lambda: search(space={"alpha": [{1, 2}]}), r"set"),
    "n_iter zero": (lambda: search(n_iter=0), r"n_iter"),
    "n_iter a float": (lambda: search(n_iter=2.5), r"n_iter"),
    "distribution in a grid without n_iter": (
        lambda: search(space={"alpha": __import__("scipy.stats").stats.uniform(0, 1)}),
        r"n_iter",
    ),
    # --- scoring ------------------------------------------------------------------------
    "unknown scorer": (lambda: search(scoring="r3"), r"r3"),
    "classification scorer for a regressor": (lambda: search(scoring="accuracy"), r"accuracy"),
    "regression scorer for a classifier": (
        lambda: csearch(scoring="neg_mean_squared_error"),
        r"'neg_mean_squared_error' is a regression metric .*LogisticRegression is a classifier",
    ),
    "probability scorer for an estimator without predict_proba": (
        lambda: csearch(
            estimator=make_pipeline(StandardScaler(), __import__("sklearn.svm").svm.SVC()),
            space={"svc__C": [1.0]},
            scoring="neg_log_loss",
        ),
        r"predict_proba",
    ),
    "scorer not callable": (lambda: search(scoring=3), r"3"),
    "empty scoring dict": (lambda: search(scoring={}), r"scoring"),
    "duplicate scorers": (lambda: search(scoring=["r2", "r2"]), r"r2"),
    "several scorers and no refit metric": (
        lambda: search(scoring=["r2", "neg_max_error"]),
        r"refit",
    ),
    "refit metric not among the scorers": (
        lambda: search(scoring=["r2", "neg_max_error"], refit="mse"),
        r"mse",
    ),
    "refit neither bool nor a metric": (lambda: search(refit=3), r"refit"),
    "selection rule unknown": (lambda: search(selection="best-ish"), r"best-ish"),
    "error_score a word": (lambda: search(error_score="ignore"), r"ignore"),
    "return_train_score not a bool": (lambda: search(return_train_score="yes"), r"yes"),
    # --- how to run ---------------------------------------------------------------------
    "backend name unknown": (lambda: search(backend="locale"), r"locale"),
    "backend class instead of instance": (lambda: search(backend=LocalBackend), r"class"),
    "n_jobs zero": (lambda: search(backend="local", n_jobs=0), r"n_jobs"),
    "n_jobs a float": (lambda: search(backend="local", n_jobs=1.5), r"n_jobs"),
    "n_jobs with a backend object": (
        lambda: search(backend=LocalBackend(n_jobs=2), n_jobs=2),
        r"n_jobs",
    ),
    "timeout negative": (lambda: search(backend="local", timeout=-1), r"timeout"),
    "timeout a word": (lambda: search(backend="local", timeout="long"), r"timeout"),
    "timeout on the serial backend": (lambda: search(backend="serial", timeout=5), r"timeout"),
    "threads zero": (lambda: search(backend=LocalBackend(threads=0)), r"threads"),
    "max_crashes zero": (lambda: search(backend=LocalBackend(max_crashes=0)), r"max_crashes"),
    "journal unknown": (lambda: search(journal="wall"), r"wall"),
    "resume and overwrite together": (
        lambda: search(resume=True, overwrite=True, store="x.sqlite"),
        r"resume",
    ),
    "resume without a store": (lambda: search(resume=True), r"store"),
    "store path is a directory": (lambda: search(store="."), r"director"),
    "racing with burn_in below 2": (lambda: search(racing=parcv.Racing(burn_in=1)), r"burn_in"),
    "racing with alpha out of range": (lambda: search(racing=parcv.Racing(alpha=1.5)), r"alpha"),
    "racing with one candidate": (
        lambda: search(space={"alpha": [1.0]}, racing=parcv.Racing()),
        r"candidate",
    ),
    "COO sparse X is accepted (converted once), not refused": (None, None),
}


@pytest.mark.parametrize("name", [n for n, (call, _) in CASES.items() if call is not None])
def test_bad_input_is_refused_before_any_unit_is_dispatched(name, tmp_path, monkeypatch):
    call, match = CASES[name]
    monkeypatch.chdir(tmp_path)  # a store named by a case lands here
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    assert not isinstance(info.value, AssertionError)
    import re

    assert re.search(match, str(info.value)), f"{name}: {info.value}"


def test_coo_sparse_x_is_converted_once_and_scores_as_csr():
    a = parcv.search(Ridge(), SPACE, sp.coo_matrix(X), Y, cv=3, backend="serial", progress=False)
    b = parcv.search(Ridge(), SPACE, sp.csr_matrix(X), Y, cv=3, backend="serial", progress=False)
    assert a.cv_results_["mean_test_score"].tolist() == b.cv_results_["mean_test_score"].tolist()


def test_the_catalogue_counts_at_least_75_refused_kinds():
    assert sum(1 for call, _ in CASES.values() if call is not None) >= 75
