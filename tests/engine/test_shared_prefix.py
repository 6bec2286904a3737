"""Pipeline prefixes fitted once per fold: the same scores as unshared fits, fewer fits."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import parcv
from parcv.plan.build import build_plan
from parcv.plan.data import check_dataset
from tests.estimators import LoggedPCA, WarnsOnFit
from tests.reference import nested_reference

GRID = {"pca__n_components": [2, 3], "clf__C": [0.1, 1.0, 10.0]}
METRICS = ["accuracy", "neg_log_loss"]


def _pipeline(log=None, scaler=None):
    return Pipeline(
        [
            ("scale", scaler if scaler is not None else StandardScaler()),
            ("pca", LoggedPCA(log=log)),
            ("clf", LogisticRegression(max_iter=200)),
        ]
    )


def _fits(log, n_rows):
    lines = log.read_text().split() if log.exists() else []
    return sum(1 for rows in lines[1::2] if int(rows) == n_rows)


def test_search_with_shared_prefixes_equals_gridsearchcv(clf_data, backend, tmp_path):
    X, y = clf_data
    log = tmp_path / "fits.log"
    cv = KFold(3, shuffle=True, random_state=0)
    ours = parcv.search(_pipeline(str(log)), GRID, X, y, cv=cv, scoring=METRICS,
                        refit="accuracy", return_train_score=True, backend=backend)  # fmt: skip
    # Each (fold, n_components) fits its PCA once: 3 folds x 2 prefixes, not 3 x 6.
    assert _fits(log, 100) == 3 * 2
    theirs = GridSearchCV(_pipeline(), GRID, cv=cv, scoring=METRICS, refit="accuracy",
                          return_train_score=True).fit(X, y)  # fmt: skip
    for name in ("test", "train"):
        for metric in METRICS:
            for k in range(3):
                column = f"split{k}_{name}_{metric}"
                np.testing.assert_array_equal(ours.cv_results_[column], theirs.cv_results_[column])
    assert ours.best_params_ == theirs.best_params_
    reused = [r.reused_steps for r in ours.records if r.unit.kind == "fit"]
    # Per fold and prefix one unit fits the PCA (and the scaler, unless a unit of another
    # prefix in its chunk did), the other two take both steps already fitted.
    assert sum(r < 2 for r in reused) == 3 * 2
    assert reused.count(2) == 3 * 2 * 2


def test_nested_cv_with_shared_prefixes_equals_the_reference(clf_data, tmp_path):
    X, y = clf_data
    log = tmp_path / "fits.log"
    result = parcv.nested_cv(_pipeline(str(log)), GRID, X, y, outer=3, inner=2,
                             backend=parcv.LocalBackend(n_jobs=2))  # fmt: skip
    ref = nested_reference(_pipeline(), GRID, X, y, outer=3, inner=2, scoring="accuracy",
                           classifier=True)  # fmt: skip
    np.testing.assert_array_equal(result.outer_scores["score"], ref["outer_scores"])
    assert list(result.chosen) == ref["chosen"]
    # Inner fits on 50 rows (outer train 100, inner halves): 3 outer x 2 inner x 2 prefixes.
    assert _fits(log, 50) == 3 * 2 * 2


def test_units_that_share_a_prefix_are_next_to_each_other(clf_data):
    X, y = clf_data
    plan = build_plan(_pipeline(), GRID, check_dataset(X, y), inner=3)
    # ParameterGrid varies n_components fastest; the plan groups each prefix's candidates.
    fold0 = [u.candidate for u in plan.units if u.inner == 0]
    groups = [plan.prefixes[c][-1] for c in fold0]
    assert groups == sorted(groups)
    assert sorted(fold0) == list(range(6))


@pytest.mark.parametrize(
    ("estimator", "space", "fit_params"),
    [
        (LogisticRegression(), {"C": [1.0, 2.0]}, None),
        (_pipeline(), {"clf__C": [1.0, 2.0]}, {"clf__sample_weight": np.ones(150)}),
        (Pipeline([("pca", PCA()), ("clf", LogisticRegression())], memory="x"), GRID, None),
    ],
)
def test_nothing_is_shared_where_it_does_not_apply(clf_data, estimator, space, fit_params):
    X, y = clf_data
    plan = build_plan(estimator, space, check_dataset(X, y, fit_params=fit_params), inner=3)
    assert plan.prefixes == ()
    assert all(plan.share_group(u) is None for u in plan.units)


def test_a_grid_over_the_last_step_shares_the_whole_prefix(clf_data):
    X, y = clf_data
    plan = build_plan(_pipeline(), {"clf__C": [0.1, 1.0, 10.0]}, check_dataset(X, y), inner=3)
    assert plan.prefixes == ((0, 0), (0, 0), (0, 0))


def test_warnings_and_failures_of_a_shared_step_reach_every_unit(clf_data):
    X, y = clf_data
    grid = {"scale__fail": [False, True], "clf__C": [0.1, 1.0]}
    pipe = _pipeline(scaler=WarnsOnFit())
    # The step's own warning reaches the caller too, as GridSearchCV lets it through.
    with (
        pytest.warns(parcv.FitFailedWarning, match="failed in every fold"),
        pytest.warns(UserWarning, match="fitted a scaler that warns"),
    ):
        result = parcv.search(pipe, grid, X, y, cv=3, backend="serial")
    fits = [r for r in result.records if r.unit.kind == "fit"]
    assert all(r.warnings.count("UserWarning") == 1 for r in fits)
    failed = [r for r in fits if not r.ok]
    assert sorted({r.unit.candidate for r in failed}) == [1, 3]  # scale__fail varies fastest
    assert {r.error.message for r in failed} == {"this scaler was told to fail"}
    with warnings.catch_warnings():  # the reference: GridSearchCV on the same folds
        warnings.simplefilter("ignore")
        theirs = GridSearchCV(pipe, grid, cv=3, error_score=np.nan).fit(X, y)
    np.testing.assert_array_equal(
        result.cv_results_["mean_test_score"], theirs.cv_results_["mean_test_score"]
    )


def _scaled_by(k):
    def scaled(X):
        return X * k

    return scaled


def test_functions_share_a_prefix_only_when_they_are_the_same_code_and_values(clf_data):
    # Ids name the parameters each candidate sets on the steps: two closures of one code
    # that captured other values, or two lambdas of other code, are other steps, and fit
    # apart, as scikit-learn fits them.
    from sklearn.preprocessing import FunctionTransformer

    X, y = clf_data
    pipe = Pipeline([("f", FunctionTransformer()), ("clf", LogisticRegression(max_iter=200))])
    same, other = _scaled_by(2.0), _scaled_by(3.0)
    grid = {"f__func": [same, same, other, lambda X: X * 2.0, lambda X: X * 3.0],
            "clf__C": [0.1, 1.0]}  # fmt: skip
    plan = build_plan(pipe, grid, check_dataset(X, y), inner=3)
    ids = [plan.prefixes[c.index][0] for c in plan.candidates]
    by_func = [c.params["f__func"] for c in plan.candidates]
    assert all((ids[a] == ids[b]) == (by_func[a] is by_func[b])
               for a in range(len(ids)) for b in range(len(ids)))  # fmt: skip
    cv = KFold(3, shuffle=True, random_state=0)
    ours = parcv.search(pipe, grid, X, y, cv=cv, backend="serial")
    theirs = GridSearchCV(pipe, grid, cv=cv).fit(X, y)
    np.testing.assert_array_equal(ours.cv_results_["mean_test_score"],
                                  theirs.cv_results_["mean_test_score"])  # fmt: skip
