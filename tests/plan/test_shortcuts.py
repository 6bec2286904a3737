"""The shortcut table: every shortcut parcv takes gives the scores of separate fits.

References: scikit-learn's GridSearchCV over the iteration parameter (a fit
from scratch at every count, on the same folds) for iteration paths, and
scikit-learn's HalvingGridSearchCV (every rung fitted from scratch) for the
continuation of a promoted candidate's fits across rungs; every comparison is
bit for bit. The property tests, one per row of the table over the settings
that could break it, are in ``test_shortcut_properties.py``.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import (
    AdaBoostClassifier,
    BaggingRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.linear_model import Perceptron, Ridge, SGDRegressor
from sklearn.model_selection import GridSearchCV, HalvingGridSearchCV, KFold, StratifiedKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

import parcv
from parcv.plan.build import build_plan
from parcv.plan.data import check_dataset
from parcv.plan.iterations import choose_path
from parcv.plan.keys import content_keys
from parcv.plan.records import Unit
from parcv.plan.shortcuts import (
    KINDS,
    SHORTCUTS,
    Fallback,
    Shortcut,
    decide,
    exact_shortcut,
    listed_class,
)

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")

XC, YC = make_classification(n_samples=48, n_features=4, n_informative=3, n_redundant=0,
                             random_state=0)  # fmt: skip
XR, YR = make_regression(n_samples=48, n_features=4, noise=10.0, random_state=0)
FOLDS = {
    "classification": list(StratifiedKFold(2, shuffle=True, random_state=0).split(XC, YC)),
    "regression": list(KFold(2, shuffle=True, random_state=0).split(XR)),
}
DATA = {"classification": (XC, YC), "regression": (XR, YR)}


@dataclass
class Config:
    """A drawn estimator and the parameter that counts its iterations."""

    estimator: Any
    param: str

    @property
    def task(self) -> str:
        return "classification" if is_classifier(self.estimator) else "regression"

    @property
    def scoring(self) -> str:
        if self.task == "regression":
            return "neg_mean_squared_error"
        # A probability or decision scorer: it sees a difference in the last bit.
        return "neg_log_loss" if hasattr(self.estimator, "predict_proba") else "roc_auc"


# The configurations of the issue: paths read at earlier rounds where no earlier model exists.
DART = Config(xgb.XGBClassifier(booster="dart", rate_drop=0.1, n_jobs=1, random_state=0,
                                verbosity=0), "n_estimators")  # fmt: skip
LGBM_DART = Config(lgb.LGBMClassifier(boosting_type="dart", n_jobs=1, random_state=0, verbose=-1,
                                      min_child_samples=3), "n_estimators")  # fmt: skip
GBLINEAR = Config(xgb.XGBRegressor(booster="gblinear", n_jobs=1, random_state=0, verbosity=0),
                  "n_estimators")  # fmt: skip


def _quiet(call: Any) -> Any:
    """Run a fit loop with its estimators' warnings (convergence, deprecations) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call()


def _path_and_grid(config: Config, iterations: parcv.Iterations) -> tuple[Any, Any]:
    X, y = DATA[config.task]
    folds = FOLDS[config.task]
    ours = _quiet(lambda: parcv.search(
        config.estimator, None, X, y, cv=folds, scoring=config.scoring, iterations=iterations,
        refit=False, backend="serial",
    ))  # fmt: skip
    grid = {config.param: list(iterations.checkpoints)}
    theirs = _quiet(lambda: GridSearchCV(config.estimator, grid, cv=folds, scoring=config.scoring,
                                         refit=False).fit(X, y))  # fmt: skip
    return ours, theirs


# Where a warm start across halving rungs is not exact: scikit-learn's rungs, from scratch.
GB_EARLY_STOP = (Config(GradientBoostingClassifier(random_state=0, n_iter_no_change=1, tol=0.01,
                                                   learning_rate=0.5), "n_estimators"),
                 {"max_depth": [1, 2, 3], "subsample": [0.5, 1.0]})  # fmt: skip
FOREST_RANDOM_STATE = (Config(RandomForestClassifier(random_state=np.random.RandomState(0)),
                              "n_estimators"), {"max_depth": [1, 2, 3, None]})  # fmt: skip
BAGGING_RANDOM_STATE = (Config(BaggingRegressor(random_state=np.random.RandomState(0)),
                               "n_estimators"),
                        {"max_features": [0.5, 0.75, 1.0], "max_samples": [0.5, 1.0]})  # fmt: skip


def _halvings(config: Config, space: dict[str, Any]) -> tuple[Any, Any]:
    X, y = DATA[config.task]
    options: dict[str, Any] = dict(resource=config.param, min_resources=2, max_resources=6,
                                   factor=3)  # fmt: skip
    theirs = _quiet(lambda: HalvingGridSearchCV(config.estimator, space, cv=KFold(2),
                                                refit=False, **options).fit(X, y))  # fmt: skip
    halving = parcv.Halving(**options)
    ours = _quiet(lambda: parcv.search(config.estimator, space, X, y, cv=KFold(2), refit=False,
                                       halving=halving, backend="serial"))  # fmt: skip
    return ours, theirs


# The defects of the issue, each against its reference (these failed before the table).


@pytest.mark.parametrize("config", [DART, LGBM_DART, GBLINEAR], ids=["xgb-dart", "lgbm-dart",
                                                                      "gblinear"])  # fmt: skip
def test_dart_and_gblinear_paths_are_the_separate_fits_of_gridsearchcv(config, caplog):
    iterations = parcv.Iterations("n_estimators", up_to=10, every=5)
    with caplog.at_level(logging.INFO, logger="parcv"):
        ours, theirs = _path_and_grid(config, iterations)
    for k in range(2):
        np.testing.assert_array_equal(ours.cv_results_[f"split{k}_test_score"],
                                      theirs.cv_results_[f"split{k}_test_score"])  # fmt: skip
    said = [r.getMessage() for r in caplog.records if "no exact shortcut" in r.getMessage()]
    assert len(said) == 1  # once, with the reason
    assert "1 of 1 point(s) are fitted from scratch at every checkpoint" in said[0]
    assert ("dart" in said[0]) or ("gblinear" in said[0])


@pytest.mark.parametrize("drawn", [GB_EARLY_STOP, FOREST_RANDOM_STATE, BAGGING_RANDOM_STATE],
                         ids=["gb-n_iter_no_change", "forest-RandomState",
                              "bagging-RandomState"])  # fmt: skip
def test_halving_rungs_equal_scikit_learns_where_a_warm_start_would_not(drawn, caplog):
    config, space = drawn
    with caplog.at_level(logging.INFO, logger="parcv"):
        ours, theirs = _halvings(config, space)
    assert ours.cv_results_["params"] == theirs.cv_results_["params"]
    np.testing.assert_array_equal(ours.cv_results_["mean_test_score"],
                                  theirs.cv_results_["mean_test_score"])  # fmt: skip
    assert ours.best_params_ == theirs.best_params_
    said = [r.getMessage() for r in caplog.records if "no exact shortcut" in r.getMessage()]
    assert len(said) == 1 and "every rung fits its candidates from scratch" in said[0]


class SubclassedXGBRegressor(xgb.XGBRegressor):
    """An XGBRegressor subclass: it could change what ``fit`` does, so the table never assumes."""


# xgboost's random forests keep all their trees in one boosting round: no earlier round to read.
XGBRF_REGRESSOR = Config(xgb.XGBRFRegressor(max_depth=3, n_jobs=1, random_state=0, verbosity=0),
                         "n_estimators")  # fmt: skip
XGBRF_CLASSIFIER = Config(xgb.XGBRFClassifier(max_depth=3, n_jobs=1, random_state=0,
                                              verbosity=0), "n_estimators")  # fmt: skip
SUBCLASSED_XGB = Config(SubclassedXGBRegressor(max_depth=2, n_jobs=1, random_state=0,
                                               verbosity=0), "n_estimators")  # fmt: skip


@pytest.mark.parametrize("config", [XGBRF_REGRESSOR, XGBRF_CLASSIFIER, SUBCLASSED_XGB],
                         ids=["XGBRFRegressor", "XGBRFClassifier", "subclass"])  # fmt: skip
def test_xgboost_forests_and_subclasses_are_the_separate_fits_of_gridsearchcv(config, caplog):
    iterations = parcv.Iterations("n_estimators", up_to=6, every=2)
    choice = choose_path(config.estimator, iterations, {}, n_samples=48)
    assert choice.method == "separate", choice
    with caplog.at_level(logging.INFO, logger="parcv"):
        ours, theirs = _path_and_grid(config, iterations)
    for k in range(2):
        got = ours.cv_results_[f"split{k}_test_score"]
        assert not np.isnan(got).any()
        np.testing.assert_array_equal(got, theirs.cv_results_[f"split{k}_test_score"])
    said = [r.getMessage() for r in caplog.records if "no exact shortcut" in r.getMessage()]
    assert len(said) == 1 and type(config.estimator).__name__ in said[0]


# The table and the plan.


def test_the_table_covers_every_kind_and_names_its_conditions():
    assert {rule.kind for rule in SHORTCUTS} == set(KINDS)
    for rule in SHORTCUTS:
        assert rule.params and all(c.text for c in rule.conditions), rule.family


@pytest.mark.parametrize(
    ("kind", "estimator", "expected"),
    [
        ("booster", xgb.XGBRegressor(), Shortcut),
        ("booster", xgb.XGBRegressor(booster="dart"), Fallback),
        ("booster", xgb.XGBRegressor(early_stopping_rounds=3), Fallback),
        ("booster", xgb.XGBRegressor(num_parallel_tree=4, subsample=0.5), Shortcut),
        ("booster", xgb.XGBRFRegressor(), Fallback),  # one boosting round of n_estimators trees
        ("booster", xgb.XGBRFClassifier(random_state=0), Fallback),
        ("booster", xgb.XGBRanker(), Fallback),  # not in the table
        ("booster", lgb.LGBMRegressor(boosting_type="rf", subsample=0.5, subsample_freq=1),
         Shortcut),
        ("booster", lgb.LGBMRanker(), Fallback),  # not in the table
        ("booster", lgb.LGBMRegressor(boosting="dart"), Fallback),  # an alias of boosting_type
        ("booster", lgb.LGBMRegressor(n_iter_no_change=3), Fallback),  # of early_stopping_round
        ("staged", GradientBoostingRegressor(random_state=0, n_iter_no_change=2), Shortcut),
        ("staged", GradientBoostingRegressor(), Fallback),  # random_state=None
        ("staged", HistGradientBoostingRegressor(), Shortcut),  # draws nothing on 48 rows
        ("staged", HistGradientBoostingRegressor(early_stopping=True), Fallback),
        ("staged", AdaBoostClassifier(random_state=0), Fallback),
        ("warm_start", RandomForestRegressor(random_state=np.random.RandomState(0)), Fallback),
        ("warm_start", BaggingRegressor(random_state=0, oob_score=True), Fallback),
        ("warm_start", GradientBoostingRegressor(random_state=np.random.RandomState(0)),
         Shortcut),  # its warm start keeps drawing from the one generator
        ("continuation", GradientBoostingRegressor(random_state=0, n_iter_no_change=2), Fallback),
        ("partial_fit", SGDRegressor(shuffle=False, tol=None, penalty=None), Shortcut),
        ("partial_fit", SGDRegressor(shuffle=False, tol=None), Fallback),  # L2 rescales
        ("partial_fit", Perceptron(shuffle=False, tol=None), Shortcut),  # no average to set
        ("partial_fit", Ridge(), Fallback),  # outside the table: no condition is known
    ],
)  # fmt: skip
def test_the_table_decides_each_configuration(kind, estimator, expected):
    param = "max_iter" if kind == "partial_fit" or "Hist" in type(estimator).__name__ \
        else "n_estimators"  # fmt: skip
    decision = exact_shortcut(kind, estimator, {}, param, up_to=4, n_samples=48)
    assert isinstance(decision, expected), decision
    if expected is Fallback:
        assert type(estimator).__name__ in decision.reason


@pytest.mark.parametrize("rule", SHORTCUTS, ids=lambda r: f"{r.kind}-{r.family}")
def test_the_table_names_exact_classes_and_refuses_their_subclasses(rule):
    for name in rule.classes:
        cls = listed_class(name)
        assert cls is not None and name.endswith(f".{cls.__name__}"), name
        subclass = type(f"Subclassed{cls.__name__}", (cls,), {})
        leaf = rule.params[0]
        piped = Pipeline([("scale", StandardScaler()), ("model", subclass())])
        for model, param in ((subclass(), leaf), (piped, f"model__{leaf}")):
            decision = decide(rule.kind, model, param, up_to=4, n_samples=48, seed=0)
            assert isinstance(decision, Fallback), decision
            assert f"it subclasses {cls.__name__}" in decision.reason


def test_a_warm_start_in_a_pipeline_needs_the_steps_before_to_draw_alike():
    seeded = make_pipeline(StandardScaler(), RandomForestRegressor(random_state=0))
    decision = exact_shortcut("warm_start", seeded, {}, "randomforestregressor__n_estimators")
    assert isinstance(decision, Shortcut)
    from sklearn.decomposition import PCA

    drawn = make_pipeline(PCA(random_state=None), RandomForestRegressor(random_state=0))
    decision = exact_shortcut("warm_start", drawn, {}, "randomforestregressor__n_estimators")
    assert isinstance(decision, Fallback) and "pca__random_state=None" in decision.reason


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        exact_shortcut("epochs", Ridge(), {}, "max_iter")


def test_separate_paths_are_ordinary_fit_units_keyed_as_the_grids_fits():
    data = check_dataset(XR, YR)
    model = RandomForestRegressor(random_state=np.random.RandomState(0))
    iterations = parcv.Iterations("n_estimators", 6, every=3)
    space = {"max_depth": [2, 3]}
    path = build_plan(model, space, data, inner=2, iterations=iterations)
    assert path.path_methods == ("separate", "separate")
    assert {u.kind for u in path.units} == {"fit"}
    grid = build_plan(model, {**space, "n_estimators": [3, 6]}, data, inner=2)
    ours, theirs = content_keys(path, data), content_keys(grid, data)
    by_params = {repr(sorted(c.params.items())): c.index for c in grid.candidates}
    for c in path.candidates:
        twin = by_params[repr(sorted(c.params.items()))]
        assert ours.key(Unit("fit", None, 0, c.index)) == theirs.key(Unit("fit", None, 0, twin))


def test_with_patience_a_separate_path_is_ordinary_fits_and_stops_by_rounds():
    data = check_dataset(XR, YR)
    model = RandomForestRegressor(random_state=None)
    iterations = parcv.Iterations("n_estimators", 6, every=3, patience=1)
    plan = build_plan(model, None, data, inner=2, iterations=iterations)
    assert plan.path_methods == ("separate",)
    # The stopping rule is the early-stopping strategy's (rounds of windows): the plan's
    # units are the fits of every (point, count), as without patience.
    assert {u.kind for u in plan.units} == {"fit"}
    assert len(plan.units) == 2 * len(iterations.checkpoints)
