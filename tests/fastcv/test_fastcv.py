"""Fast CV in the task graph: equal to brute-force refits to 1e-10, compact, durable."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import numpy as np
import pytest
from sklearn import model_selection as ms
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Lasso, Ridge
from sklearn.metrics import make_scorer, mean_squared_error

import parcv
from parcv.bayes import BayesianLinearRegression
from parcv.plan.build import build_plan
from parcv.plan.data import check_dataset
from parcv.plan.partition import PartitionFolds
from tests.store.surgery import drop_units

RTOL = 1e-10
RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 4))
Y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 3.0 + RNG.normal(size=40)
ALPHAS = [1e-3, 0.1, 1.0, 10.0, 100.0]
# r2 of one sample is undefined (NaN with a warning); the k-fold test covers it.
SCORERS = [
    "neg_mean_squared_error",
    "neg_root_mean_squared_error",
    "neg_mean_absolute_error",
    "neg_max_error",
    "explained_variance",
    "neg_median_absolute_error",
]


def _assert_close(ours, ref):
    np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=1e-13)


def _check_same_cv_results(ours, ref, keys):
    for key in keys:
        _assert_close(ours.cv_results_[key], ref.cv_results_[key])
    assert ours.best_index_ == ref.best_index_
    assert ours.best_params_ == ref.best_params_


def test_loo_search_equals_grid_search_for_every_scorer():
    scoring = {name: name for name in SCORERS}
    grid = {"alpha": ALPHAS[1:4], "fit_intercept": [True, False]}
    options = {"cv": ms.LeaveOneOut(), "scoring": scoring, "refit": "neg_mean_squared_error"}
    ours = parcv.search(Ridge(), grid, X, Y, backend="serial", **options)
    ref = ms.GridSearchCV(Ridge(), grid, **options).fit(X, Y)
    assert ours.fast_cv and ours.to_dict()["fast_cv"] and "not bit for bit" in ours.to_text()
    assert len(ours.records) == 6 + 1  # one record per candidate, and the final refit
    keys = [f"{s}_test_{m}" for m in SCORERS for s in ("mean", "std", "split7")]
    _check_same_cv_results(ours, ref, keys)
    # The final refit is a real fit on all data, as GridSearchCV's.
    np.testing.assert_array_equal(ours.best_estimator_.coef_, ref.best_estimator_.coef_)


def test_kfold_needs_fast_cv_true_and_then_equals_grid_search():
    grid = {"alpha": ALPHAS}
    auto = parcv.search(Ridge(), grid, X, Y, cv=5, backend="serial")
    ref = ms.GridSearchCV(Ridge(), grid, cv=5).fit(X, Y)
    # fast_cv="auto" leaves k-fold to real refits: scikit-learn's numbers bit for bit.
    assert not auto.fast_cv
    np.testing.assert_array_equal(
        auto.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"]
    )
    cv = ms.KFold(4, shuffle=True, random_state=0)
    scoring = ["r2", "neg_mean_squared_error", "neg_max_error", "explained_variance"]
    fast = parcv.search(
        Ridge(), grid, X, Y, cv=cv, scoring=scoring, refit="r2", fast_cv=True, backend="serial"
    )
    ref = ms.GridSearchCV(Ridge(), grid, cv=cv, scoring=scoring, refit="r2").fit(X, Y)
    assert fast.fast_cv
    _check_same_cv_results(fast, ref, [f"split{i}_test_{m}" for i in range(4) for m in scoring])


@pytest.mark.parametrize(
    ("estimator", "grid"),
    [
        (KernelRidge(kernel="rbf", gamma=0.3), {"alpha": [0.01, 0.1, 1.0]}),
        (BayesianLinearRegression(degree=2, optimize=False), {"tau2": [0.1, 1.0, 10.0]}),
        (
            GaussianProcessRegressor(RBF(1.5) + WhiteKernel(0.5), optimizer=None),
            {"alpha": [1e-6, 1e-2]},
        ),
    ],
    ids=["kernel_ridge", "bayes", "gp"],
)
def test_other_linear_smoothers_equal_brute_force(estimator, grid):
    scoring = "neg_mean_squared_error"
    for cv, option in ((ms.LeaveOneOut(), "auto"), (ms.KFold(5), True)):
        ours = parcv.search(
            estimator,
            grid,
            X,
            Y,
            cv=cv,
            scoring=scoring,
            fast_cv=option,
            backend="serial",
            refit=False,
        )
        ref = ms.GridSearchCV(estimator, grid, cv=cv, scoring=scoring, refit=False).fit(X, Y)
        assert ours.fast_cv
        np.testing.assert_allclose(
            ours.cv_results_["split3_test_score"], ref.cv_results_["split3_test_score"], rtol=1e-8
        )
        np.testing.assert_allclose(
            ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], rtol=1e-8
        )


def test_cross_validate_and_nested_cv_take_the_fast_path():
    ours = parcv.cross_validate(
        Ridge(alpha=2.0),
        X,
        Y,
        cv=ms.LeaveOneOut(),
        scoring="neg_mean_absolute_error",
        backend="serial",
    )
    ref = ms.cross_validate(
        Ridge(alpha=2.0), X, Y, cv=ms.LeaveOneOut(), scoring="neg_mean_absolute_error"
    )
    assert ours.fast_cv and ours.notes
    _assert_close(ours.scores["test_score"], ref["test_score"])
    grid = {"alpha": ALPHAS[:3]}
    nested = parcv.nested_cv(
        Ridge(),
        grid,
        X,
        Y,
        outer=3,
        inner=ms.LeaveOneOut(),
        scoring="neg_mean_squared_error",
        backend="serial",
    )
    idiom = ms.cross_validate(
        ms.GridSearchCV(Ridge(), grid, cv=ms.LeaveOneOut(), scoring="neg_mean_squared_error"),
        X,
        Y,
        cv=3,
        scoring="neg_mean_squared_error",
        return_estimator=True,
    )
    assert nested.fast_cv
    assert nested.chosen == [ALPHAS.index(e.best_params_["alpha"]) for e in idiom["estimator"]]
    # Outer refits are real fits: the outer scores match scikit-learn bit for bit.
    np.testing.assert_array_equal(nested.outer_scores["score"], idiom["test_score"])


def test_loo_is_compact_one_task_per_outer_fold_and_batch():
    rng = np.random.default_rng(1)
    X_big = rng.normal(size=(1000, 20))
    y_big = X_big @ rng.normal(size=20) + rng.normal(size=1000)
    alphas = list(np.logspace(-3, 3, 20))
    data = check_dataset(X_big, y_big)
    plan = build_plan(
        Ridge(), {"alpha": alphas}, data, inner=ms.LeaveOneOut(), scoring="neg_mean_squared_error"
    )
    assert plan.fast_cv and plan.batches == (tuple(range(20)),)
    assert len(plan.units) == 1 and plan.n_units == 21
    folds = plan.inner_folds[None]
    assert isinstance(folds, PartitionFolds) and len(folds) == 1000  # no 1000 train arrays
    result = parcv.search(
        Ridge(),
        {"alpha": alphas},
        X_big,
        y_big,
        cv=ms.LeaveOneOut(),
        scoring="neg_mean_squared_error",
        backend="serial",
    )
    assert len(result.records) == 21  # 20 candidate records + the final refit, not 20,001
    assert result.records[0].folds.test["score"].shape == (1000,)
    assert len([k for k in result.cv_results_ if k.startswith("split")]) == 1000


def test_fast_cv_true_says_why_it_cannot_apply():
    cases = [
        (Lasso(), {"cv": ms.LeaveOneOut()}, "Lasso is not a linear smoother"),
        (Ridge(), {"cv": ms.ShuffleSplit(3, random_state=0)}, "do not partition"),
        (Ridge(), {"cv": ms.LeaveOneOut(), "return_train_score": True}, "return_train_score"),
        (Ridge(solver="sag"), {"cv": ms.LeaveOneOut()}, "iterative"),
        (Ridge(), {"cv": 3, "fit_params": {"sample_weight": np.ones(40)}}, "fit_params"),
    ]
    for est, kwargs, message in cases:
        kwargs["scoring"] = "neg_mean_squared_error"
        with pytest.raises(ValueError, match=f"fast_cv=True but fast CV does not apply.*{message}"):
            parcv.search(est, {"alpha": [1.0]}, X, Y, fast_cv=True, backend="serial", **kwargs)
        assert not parcv.search(est, {"alpha": [1.0]}, X, Y, backend="serial", **kwargs).fast_cv
    with pytest.raises(ValueError, match="fast_cv must be 'auto', True or False; got 'yes'"):
        parcv.search(Ridge(), {"alpha": [1.0]}, X, Y, fast_cv="yes", backend="serial")


def test_custom_scorers_use_the_stand_in_only_when_asked():
    def my_mse(estimator, X_, y_):
        return -mean_squared_error(y_, estimator.predict(X_))

    made = make_scorer(mean_squared_error, greater_is_better=False)
    assert parcv.search(
        Ridge(), {"alpha": ALPHAS}, X, Y, cv=ms.LeaveOneOut(), scoring=made, backend="serial"
    ).fast_cv
    assert not parcv.search(
        Ridge(), {"alpha": ALPHAS}, X, Y, cv=ms.LeaveOneOut(), scoring=my_mse, backend="serial"
    ).fast_cv
    ours = parcv.search(
        Ridge(),
        {"alpha": ALPHAS},
        X,
        Y,
        cv=ms.LeaveOneOut(),
        scoring=my_mse,
        fast_cv=True,
        backend="serial",
    )
    ref = ms.GridSearchCV(Ridge(), {"alpha": ALPHAS}, cv=ms.LeaveOneOut(), scoring=my_mse).fit(X, Y)
    assert ours.fast_cv
    _check_same_cv_results(ours, ref, ["mean_test_score", "split3_test_score"])


class ShrunkMean(RegressorMixin, BaseEstimator):
    """A user's linear smoother: predicts sum(y) / (n + shrink), via the protocol."""

    def __init__(self, shrink=1.0):
        self.shrink = shrink

    def fit(self, X, y):
        self.value_ = float(np.sum(y)) / (len(y) + self.shrink)
        return self

    def predict(self, X):
        return np.full(len(X), self.value_)

    def hat_matrix(self, X):
        return np.full((len(X), len(X)), 1.0 / (len(X) + self.shrink))


def test_users_own_smoother_opts_in_through_the_protocol():
    grid = {"shrink": [0.0, 5.0]}
    ours = parcv.search(
        ShrunkMean(),
        grid,
        X,
        Y,
        cv=ms.LeaveOneOut(),
        scoring="neg_mean_squared_error",
        backend="serial",
    )
    ref = ms.GridSearchCV(
        ShrunkMean(), grid, cv=ms.LeaveOneOut(), scoring="neg_mean_squared_error"
    ).fit(X, Y)
    assert ours.fast_cv and ours.records[0].unit.inner is None
    _check_same_cv_results(ours, ref, ["mean_test_score", "split0_test_score"])


def test_undefined_held_out_predictions_fail_that_candidate_only():
    wide = np.random.default_rng(2).normal(size=(10, 30))
    target = np.random.default_rng(3).normal(size=10)
    # alpha=0 interpolates 10 points with 30 features: leave-one-out is undefined.
    with pytest.warns(parcv.FitFailedWarning, match="alpha=0.0 failed in every fold"):
        r = parcv.search(
            Ridge(fit_intercept=False),
            {"alpha": [0.0, 1.0]},
            wide,
            target,
            cv=ms.LeaveOneOut(),
            scoring="neg_mean_squared_error",
            backend="serial",
        )
    assert r.fast_cv and r.best_params_ == {"alpha": 1.0}
    assert r.failures.n_failed == 1 and "interpolated" in r.failures.text
    assert list(r.cv_results_["n_failed_fits"]) == [10, 0]
    with pytest.raises(parcv.FitFailedError, match="every inner fold \\(fast CV\\)"):
        parcv.search(
            Ridge(fit_intercept=False),
            {"alpha": [0.0, 1.0]},
            wide,
            target,
            cv=ms.LeaveOneOut(),
            error_score="raise",
            backend="serial",
        )


def test_store_keeps_fold_scores_as_json_and_load_and_resume_agree(tmp_path):
    store = tmp_path / "run.sqlite"
    grid = {"alpha": ALPHAS}
    run = parcv.nested_cv(
        Ridge(),
        grid,
        X,
        Y,
        outer=3,
        inner=ms.LeaveOneOut(),
        backend="serial",
        scoring="neg_mean_squared_error",
        store=store,
    )
    assert parcv.load(store).to_json() == run.to_json()
    with closing(sqlite3.connect(store)) as conn:
        rows = conn.execute(
            "SELECT ckey, fold_scores, typeof(fold_scores) FROM records "
            "WHERE fold_scores IS NOT NULL"
        ).fetchall()
        n_train_blobs = conn.execute("SELECT COUNT(*) FROM folds").fetchone()[0]
        n_partitions = conn.execute("SELECT COUNT(*) FROM partitions").fetchone()[0]
    assert len(rows) == 4 * len(ALPHAS) and {r[2] for r in rows} == {"text"}
    assert len(json.loads(rows[0][1])["score"]) in (26, 27, 40)
    assert n_train_blobs == 3 and n_partitions == 4  # outer folds only; LOO kept compact
    drop_units(store, lambda u: (u.kind, u.outer) in (("fit", 1), ("refit", 1)))
    again = parcv.nested_cv(
        Ridge(),
        grid,
        X,
        Y,
        outer=3,
        inner=ms.LeaveOneOut(),
        backend="serial",
        scoring="neg_mean_squared_error",
        store=store,
        resume=True,
    )
    np.testing.assert_array_equal(again.outer_scores["score"], run.outer_scores["score"])
    assert again.chosen == run.chosen
    for a, b in zip(again.inner_cv_results, run.inner_cv_results, strict=True):
        np.testing.assert_array_equal(a["mean_test_score"], b["mean_test_score"])
    # Fast-CV and refitting fits never share records: their content keys differ.
    slow = dict(outer=3, inner=ms.LeaveOneOut(), fast_cv=False, backend="serial",
                scoring="neg_mean_squared_error")  # fmt: skip
    refitted = parcv.nested_cv(Ridge(), grid, X, Y, store=store, resume=True, **slow)
    assert all(r.folds is None for r in refitted.records)
    fresh = parcv.nested_cv(Ridge(), grid, X, Y, **slow)
    for a, b in zip(refitted.inner_cv_results, fresh.inner_cv_results, strict=True):
        np.testing.assert_array_equal(a["mean_test_score"], b["mean_test_score"])


def test_backends_agree_bit_for_bit_on_the_fast_path(backend):
    grid = {"alpha": ALPHAS, "fit_intercept": [True, False]}
    args = (Ridge(), grid, X, Y)
    kwargs = {"outer": 2, "inner": ms.LeaveOneOut(), "scoring": "neg_mean_squared_error"}
    base = parcv.nested_cv(*args, backend="serial", **kwargs)
    other = parcv.nested_cv(*args, backend=backend, **kwargs)
    assert base.fast_cv and other.fast_cv
    assert [r.key for r in other.records] == [r.key for r in base.records]
    for a, b in zip(base.records, other.records, strict=True):
        assert a.folds == b.folds and a.test_scores == b.test_scores
