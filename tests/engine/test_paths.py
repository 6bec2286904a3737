"""Iteration paths: one fit per (fold, point) scored at checkpoints, and early stopping.

References: scikit-learn's GridSearchCV over the iteration parameter (separate
fits at each count, on the same folds), xgboost's own ``xgb.cv`` with
``early_stopping_rounds``, and a hand-written ``partial_fit`` loop.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import (
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import Ridge, SGDClassifier
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold

import parcv
from parcv.plan.iterations import path_method

X, Y = make_regression(n_samples=120, n_features=5, noise=10.0, random_state=0)
XC, YC = make_classification(n_samples=150, n_features=6, random_state=0)
CV = KFold(3, shuffle=True, random_state=0)

# Per fit of the counted classes below (serial backend: this process): stages it built.
BUILT: list[int] = []

# The stages a model holds, per counted class. The classes themselves are counted (their
# fit wrapped), not subclasses: the shortcut table names exact classes, and a subclass is
# fitted from scratch at every count.
COUNTED = {
    GradientBoostingRegressor: lambda model: len(getattr(model, "estimators_", [])),
    RandomForestRegressor: lambda model: len(getattr(model, "estimators_", [])),
    HistGradientBoostingClassifier: lambda model: getattr(model, "n_iter_", 0),
}


def _counting(fit, stages):
    @functools.wraps(fit)
    def counted(self, X, y, *args, **kwargs):
        before = stages(self) if getattr(self, "warm_start", False) else 0
        fitted = fit(self, X, y, *args, **kwargs)
        BUILT.append(stages(self) - before)
        return fitted

    return counted


@pytest.fixture(autouse=True)
def _count_stages(monkeypatch):
    for cls, stages in COUNTED.items():
        monkeypatch.setattr(cls, "fit", _counting(cls.fit, stages))


def _same_splits(ours, theirs, n_splits):
    by_params = {repr(sorted(p.items())): i for i, p in enumerate(theirs.cv_results_["params"])}
    order = [by_params[repr(sorted(p.items()))] for p in ours.cv_results_["params"]]
    assert len(order) == len(theirs.cv_results_["params"])
    for k in range(n_splits):
        np.testing.assert_array_equal(
            ours.cv_results_[f"split{k}_test_score"],
            np.asarray(theirs.cv_results_[f"split{k}_test_score"])[order],
        )
    assert ours.best_params_ == theirs.best_params_


CASES = [
    ("gb", GradientBoostingRegressor(random_state=0, subsample=0.8), {"max_depth": [2, 3]},
     "n_estimators", (X, Y)),
    ("forest", RandomForestRegressor(random_state=0, n_jobs=1), {"max_features": [0.5, 1.0]},
     "n_estimators", (X, Y)),
    ("hgb", HistGradientBoostingClassifier(random_state=0, early_stopping=False),
     {"learning_rate": [0.1, 0.3]}, "max_iter", (XC, YC)),
]  # fmt: skip


@pytest.mark.parametrize(("name", "estimator", "space", "param", "data"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_a_path_equals_gridsearchcv_over_the_iteration_parameter_with_one_fit_per_path(
    name, estimator, space, param, data
):
    X_, y_ = data
    iterations = parcv.Iterations(param, up_to=12, every=4)
    BUILT.clear()
    ours = parcv.search(estimator, space, X_, y_, cv=CV, iterations=iterations, refit=False,
                        backend="serial")  # fmt: skip
    built = sum(BUILT)
    # One fit per (fold, point) grows 12 stages: 3 folds x 2 points x 12.
    assert built == 3 * 2 * 12
    grid = {**space, param: [4, 8, 12]}
    theirs = GridSearchCV(estimator, grid, cv=CV, refit=False).fit(X_, y_)
    # The grid builds 4 + 8 + 12 stages per (fold, point).
    assert sum(BUILT) - built == 3 * 2 * 24
    _same_splits(ours, theirs, 3)
    assert not ours.cv_results_["path_stopped"].any()


def test_an_xgboost_path_equals_gridsearchcv_over_its_rounds(monkeypatch):
    xgb = pytest.importorskip("xgboost")
    rounds = _counting(xgb.XGBRegressor.fit, lambda model: model.get_booster().num_boosted_rounds())
    monkeypatch.setattr(xgb.XGBRegressor, "fit", rounds)
    model = xgb.XGBRegressor(n_jobs=1, tree_method="hist", random_state=0, subsample=0.8)
    space = {"max_depth": [2, 4]}
    BUILT.clear()
    ours = parcv.search(model, space, X, Y, cv=CV, refit=False, backend="serial",
                        iterations=parcv.Iterations("n_estimators", up_to=20, every=5))  # fmt: skip
    assert sum(BUILT) == 3 * 2 * 20  # one booster of 20 rounds per (fold, point)
    grid = {**space, "n_estimators": [5, 10, 15, 20]}
    theirs = GridSearchCV(model, grid, cv=CV, refit=False).fit(X, Y)
    assert sum(BUILT) == 3 * 2 * 20 + 3 * 2 * (5 + 10 + 15 + 20)
    _same_splits(ours, theirs, 3)


@pytest.mark.parametrize("patience", [3, 8])
def test_early_stopping_selects_the_rounds_of_xgb_cv(patience):
    xgb = pytest.importorskip("xgboost")
    # No row subsampling: xgb.cv grows its folds round by round from xgboost's one global
    # random generator, so with it a fold of xgb.cv is not a separate fit of that fold.
    params = {"max_depth": 3, "learning_rate": 0.3, "seed": 0, "tree_method": "hist",
              "nthread": 1}  # fmt: skip
    folds = list(KFold(4, shuffle=True, random_state=1).split(X))
    reference = xgb.cv(params, xgb.DMatrix(X, label=Y), num_boost_round=200, folds=folds,
                       metrics="rmse", early_stopping_rounds=patience)  # fmt: skip
    model = xgb.XGBRegressor(max_depth=3, learning_rate=0.3, random_state=0, tree_method="hist",
                             n_jobs=1)  # fmt: skip
    ours = parcv.search(
        model, None, X, Y, cv=folds, scoring="neg_root_mean_squared_error", backend="serial",
        iterations=parcv.Iterations("n_estimators", up_to=200, patience=patience),
    )  # fmt: skip
    assert len(reference) < 200  # it stopped
    assert ours.best_params_ == {"n_estimators": len(reference)}
    path = -ours.cv_results_["mean_test_score"][: len(reference)]
    np.testing.assert_allclose(path, reference["test-rmse-mean"], rtol=1e-5)
    # The rounds after the stop were never fitted: NaN, and marked.
    stopped = ours.cv_results_["path_stopped"]
    assert stopped.sum() == 200 - (len(reference) + patience)
    assert np.isnan(ours.cv_results_["mean_test_score"][stopped]).all()


# fit(max_iter=t) warns that it did not converge in t epochs, in the reference grid too.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    ("settings", "method"),
    [
        # Shuffled epochs, a tolerance and an L2 penalty: fit(max_iter=t) is not t epochs of
        # partial_fit, so every count is fitted from scratch.
        ({"alpha": 0.01}, "separate"),
        # No shuffling, no stop, no weight rescaling: the epochs are fit(max_iter=t).
        ({"shuffle": False, "tol": None, "penalty": None}, "partial_fit"),
    ],
)
def test_a_partial_fit_path_scores_fit_with_max_iter_as_gridsearchcv_does(settings, method):
    model = SGDClassifier(random_state=0, **settings)
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(XC, YC))
    iterations = parcv.Iterations("max_iter", up_to=6, every=2)
    assert path_method(model, iterations, {}) == method
    ours = parcv.search(model, None, XC, YC, cv=folds, refit=False, backend="serial",
                        scoring="roc_auc", iterations=iterations)  # fmt: skip
    theirs = GridSearchCV(model, {"max_iter": [2, 4, 6]}, cv=folds, refit=False,
                          scoring="roc_auc").fit(XC, YC)  # fmt: skip
    _same_splits(ours, theirs, 3)


def _decisions(result):
    return (
        result.best_params_,
        result.cv_results_["path_stopped"].tolist(),
        [result.cv_results_[f"split{k}_test_score"].tolist() for k in range(3)],
    )


@pytest.mark.slow
def test_paths_and_early_stops_are_equal_on_every_backend(backend):
    model = HistGradientBoostingClassifier(random_state=0, early_stopping=False)
    space = {"learning_rate": [0.05, 0.3, 1.0]}
    iterations = parcv.Iterations("max_iter", up_to=40, every=2, patience=3)
    serial = parcv.search(model, space, XC, YC, cv=CV, iterations=iterations, backend="serial")
    other = parcv.search(model, space, XC, YC, cv=CV, iterations=iterations, backend=backend)
    assert serial.cv_results_["path_stopped"].any()
    np.testing.assert_equal(_decisions(other), _decisions(serial))


def test_a_resumed_path_search_fits_nothing_and_a_longer_path_agrees_with_it(tmp_path):
    store = tmp_path / "paths.sqlite"
    model = GradientBoostingRegressor(random_state=0)

    def run(up_to, **options):
        BUILT.clear()
        result = parcv.search(model, {"max_depth": [2, 3]}, X, Y, cv=CV, backend="serial",
                              store=store, save_models=True,
                              iterations=parcv.Iterations("n_estimators", up_to, every=5),
                              **options)  # fmt: skip
        return result, sum(BUILT)

    first, _ = run(15)
    again, built = run(15, resume=True)
    assert built == 0  # every path and the final refit reused
    np.testing.assert_equal(_decisions(again), _decisions(first))
    longer, _ = run(20, resume=True)
    np.testing.assert_array_equal(
        longer.cv_results_["mean_test_score"][[0, 1, 2, 4, 5, 6]],
        first.cv_results_["mean_test_score"],
    )
    loaded = parcv.load(store)
    assert loaded.best_params_ == longer.best_params_


def test_nested_cv_selects_a_point_and_iteration_count_per_outer_fold():
    model = GradientBoostingRegressor(random_state=0)
    iterations = parcv.Iterations("n_estimators", up_to=30, every=10)
    result = parcv.nested_cv(model, {"max_depth": [1, 3]}, X, Y, outer=3, inner=3,
                             backend="serial", iterations=iterations)  # fmt: skip
    assert len(result.chosen) == 3
    assert all(0 <= c < 6 for c in result.chosen)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: parcv.Iterations("n_estimators", up_to=0), "up_to must be an int >= 1"),
        (lambda: parcv.Iterations("n_estimators", up_to=10, patience=0), "patience"),
        (lambda: parcv.Iterations("n_estimators", 5, every=6), "every"),
        (
            lambda: parcv.search(Ridge(), None, X, Y, iterations=parcv.Iterations("alpha", 5)),
            "no staged_predict",
        ),
        (
            lambda: parcv.search(
                GradientBoostingRegressor(),
                {"n_estimators": [5]},
                X,
                Y,
                iterations=parcv.Iterations("n_estimators", 5),
            ),
            "Drop 'n_estimators'",
        ),
        (
            lambda: parcv.search(
                GradientBoostingRegressor(),
                None,
                X,
                Y,
                racing=parcv.Racing(),
                iterations=parcv.Iterations("n_estimators", 5, patience=2),
            ),
            "racing",
        ),
    ],
)
def test_bad_iterations_are_refused_before_any_fit(call, message):
    BUILT.clear()
    with pytest.raises((ValueError, TypeError), match=message):
        call()
    assert BUILT == []


def test_the_drop_in_gridsearchcv_takes_iterations_as_scikit_learn_takes_the_grid():
    model = HistGradientBoostingClassifier(random_state=0, early_stopping=False)
    iterations = parcv.Iterations("max_iter", 9, every=3)
    ours = parcv.GridSearchCV(model, {"max_leaf_nodes": [4, 8]}, cv=3, backend="serial",
                              iterations=iterations).fit(XC, YC)  # fmt: skip
    theirs = GridSearchCV(model, {"max_leaf_nodes": [4, 8], "max_iter": [3, 6, 9]}, cv=3)
    _same_splits(ours, theirs.fit(XC, YC), 3)
    assert ours.best_estimator_.n_iter_ == ours.best_params_["max_iter"]
    np.testing.assert_array_equal(ours.predict(XC), theirs.predict(XC))


def test_the_report_plots_the_paths_and_says_what_early_stopping_left_unfitted():
    from parcv.report.plots import iteration_paths, render_plots
    from parcv.report.run_dir import RunInfo
    from parcv.report.text import render_report

    model = HistGradientBoostingClassifier(random_state=0, early_stopping=False)
    iterations = parcv.Iterations("max_iter", 40, every=2, patience=3)
    result = parcv.search(model, {"learning_rate": [0.03, 0.3, 1.0]}, XC, YC, cv=CV,
                          backend="serial", iterations=iterations)  # fmt: skip
    stopped = result.cv_results_["path_stopped"]
    assert stopped.any()
    png = render_plots(result)["iteration_paths.png"]
    assert png.startswith(b"\x89PNG")
    fig = iteration_paths(result)
    ax = fig.axes[0]
    # One line per point, each as long as its path ran; a cross per early stop; the star.
    n_stopped = sum(bool(stopped[list(p)].any()) for p in result.paths)
    assert f"{n_stopped} of 3 stopped early" in ax.get_title()
    crosses = [line for line in ax.lines if line.get_marker() == "x"]
    assert len(crosses) == n_stopped
    text = render_report(result, RunInfo("paths"))
    assert f"{int(stopped.sum())} of {stopped.size} (point, count) pairs were never fitted" in text


def test_racing_drops_points_of_a_path_search_fold_by_fold_as_a_grid_search_does():
    model = GradientBoostingRegressor(random_state=0)
    space = {"max_depth": [1, 3], "learning_rate": [0.001, 0.3]}
    racing = parcv.Racing(burn_in=2, alpha=0.2)
    cv = KFold(6, shuffle=True, random_state=0)
    BUILT.clear()
    ours = parcv.search(model, space, X, Y, cv=cv, racing=racing, refit=False, backend="serial",
                        iterations=parcv.Iterations("n_estimators", 10, every=5))  # fmt: skip
    grid = {**space, "n_estimators": [5, 10]}
    theirs = parcv.search(model, grid, X, Y, cv=cv, racing=racing, refit=False,
                          backend="serial")  # fmt: skip
    order = [theirs.cv_results_["params"].index(p) for p in ours.cv_results_["params"]]
    dropped = ours.cv_results_["race_eliminated_after"]
    assert (dropped >= 0).any()
    np.testing.assert_array_equal(dropped, theirs.cv_results_["race_eliminated_after"][order])
    np.testing.assert_array_equal(
        ours.cv_results_["mean_test_score"], theirs.cv_results_["mean_test_score"][order]
    )


def _faulty_forest():
    from sklearn.pipeline import Pipeline

    from tests.estimators import FaultyStep

    # The fault sits in a step before the forest: the path is grown by a warm start only
    # for the forest's own class, never a subclass of it.
    model = Pipeline([("step", FaultyStep()),
                      ("forest", RandomForestRegressor(random_state=0, n_jobs=1))])  # fmt: skip
    iterations = parcv.Iterations("forest__n_estimators", 6, every=3)
    assert path_method(model, iterations, {"step__fault": "raise"}) == "warm_start"
    return model


def test_a_failing_path_fails_at_every_checkpoint_and_the_others_are_kept():
    space = {"step__fault": [None, "raise"]}
    iterations = parcv.Iterations("forest__n_estimators", 6, every=3)
    with pytest.warns(parcv.FitFailedWarning):
        result = parcv.search(_faulty_forest(), space, X, Y, cv=CV, iterations=iterations,
                              error_score=-1.0, refit=False, backend="serial")  # fmt: skip
    scores = result.cv_results_["mean_test_score"]
    assert scores[2:].tolist() == [-1.0, -1.0]  # fault="raise", both counts
    assert result.cv_results_["n_failed_fits"].tolist() == [0, 0, 3, 3]
    forest = RandomForestRegressor(random_state=0, n_jobs=1)
    healthy = parcv.search(forest, None, X, Y, cv=CV, refit=False, backend="serial",
                           iterations=parcv.Iterations("n_estimators", 6, every=3))  # fmt: skip
    np.testing.assert_array_equal(scores[:2], healthy.cv_results_["mean_test_score"])
    with pytest.raises(ValueError, match="fault='raise' is not allowed"):
        parcv.search(_faulty_forest(), space, X, Y, cv=CV, iterations=iterations,
                     error_score="raise", backend="serial")  # fmt: skip


@pytest.mark.slow
def test_a_path_past_its_time_limit_costs_its_checkpoints_not_the_sweep(tmp_path):
    from parcv.engine.backends import LocalBackend

    iterations = parcv.Iterations("forest__n_estimators", 6, every=3)
    store = tmp_path / "paths.sqlite"
    with pytest.warns(parcv.FitFailedWarning):
        result = parcv.search(_faulty_forest(), {"step__fault": [None, "hang"]}, X, Y, cv=CV,
                              iterations=iterations, error_score=-1.0, refit=False,
                              backend=LocalBackend(n_jobs=2, timeout=3), store=store)  # fmt: skip
    assert result.cv_results_["mean_test_score"][2:].tolist() == [-1.0, -1.0]
    assert np.isfinite(result.cv_results_["mean_test_score"][:2]).all()
    failed = [r for r in result.records if r.status == "failed"]
    assert len(failed) == 2 * 3 and all("timed out" in r.error.message for r in failed)


def test_a_lightgbm_path_equals_gridsearchcv_over_its_rounds():
    lgb = pytest.importorskip("lightgbm")
    model = lgb.LGBMRegressor(n_jobs=1, random_state=0, verbose=-1, min_child_samples=5)
    space = {"num_leaves": [4, 8]}
    ours = parcv.search(model, space, X, Y, cv=CV, refit=False, backend="serial",
                        iterations=parcv.Iterations("n_estimators", up_to=12, every=4))  # fmt: skip
    grid = {**space, "n_estimators": [4, 8, 12]}
    _same_splits(ours, GridSearchCV(model, grid, cv=CV, refit=False).fit(X, Y), 3)


def _separate_fit_scores(model, param, counts, X_, y_, cv, scoring=None):
    theirs = GridSearchCV(model, {param: list(counts)}, cv=cv, refit=False, scoring=scoring)
    theirs.fit(X_, y_)
    return np.column_stack([theirs.cv_results_[f"split{k}_test_score"] for k in range(3)])


def _lgbm_random_state():
    lgb = pytest.importorskip("lightgbm")
    return lgb.LGBMRegressor(n_jobs=1, random_state=np.random.RandomState(0), verbose=-1,
                             min_child_samples=5, subsample=0.7, subsample_freq=1)  # fmt: skip


@pytest.mark.parametrize(
    "make",
    [
        lambda: GradientBoostingRegressor(random_state=np.random.RandomState(0), subsample=0.7,
                                          learning_rate=0.5),
        _lgbm_random_state,
    ],
    ids=["gb", "lightgbm"],
)  # fmt: skip
def test_early_stopping_fits_ahead_from_scratch_as_separate_fits_with_a_random_state(make):
    # Early stopping fits ahead to doubling counts: each fit starts from the RandomState's
    # first state, as a separate fit does (a refit of one object would draw on from it).
    model = make()
    iterations = parcv.Iterations("n_estimators", up_to=40, every=2, patience=4)
    ours = parcv.search(model, None, X, Y, cv=CV, iterations=iterations, refit=False,
                        backend="serial")  # fmt: skip
    scores = np.column_stack([ours.cv_results_[f"split{k}_test_score"] for k in range(3)])
    stopped = ours.cv_results_["path_stopped"]
    ran = np.flatnonzero(~stopped)
    assert len(ran) > 8  # past the first fit ahead (to 2 x patience x every = 16)
    theirs = _separate_fit_scores(model, "n_estimators", iterations.checkpoints, X, Y, CV)
    np.testing.assert_array_equal(scores[ran], theirs[ran])


def test_a_path_without_an_exact_shortcut_is_a_grid_of_fits_and_says_why_once(caplog):
    model = GradientBoostingRegressor(random_state=None)  # every fit draws its own feature order
    iterations = parcv.Iterations("n_estimators", up_to=12, every=4)
    BUILT.clear()
    with caplog.at_level("INFO", logger="parcv"):
        result = parcv.search(model, {"max_depth": [2, 3]}, X, Y, cv=CV, iterations=iterations,
                              refit=False, backend="serial")  # fmt: skip
    # Separate fits from scratch: 3 folds x 2 points x (4 + 8 + 12) stages, as a grid builds.
    assert sum(BUILT) == 3 * 2 * 24
    assert {r.unit.kind for r in result.records} == {"fit"}
    said = [r.getMessage() for r in caplog.records if "no exact shortcut" in r.getMessage()]
    assert len(said) == 1
    assert "2 of 2 point(s) are fitted from scratch" in said[0]
    assert "random_state=None" in said[0]
    assert result.cv_results_["param_n_estimators"].tolist() == [4, 8, 12, 4, 8, 12]
