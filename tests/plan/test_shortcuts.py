"""The shortcut table: every shortcut parcv takes gives the scores of separate fits.

References: scikit-learn's GridSearchCV over the iteration parameter (a fit
from scratch at every count, on the same folds) for iteration paths, and
scikit-learn's HalvingGridSearchCV (every rung fitted from scratch) for the
continuation of a promoted candidate's fits across rungs. The property tests
draw the settings that could break a shortcut (booster type, subsampling,
early stopping, ``random_state`` kind, class weights, shuffling, ...); every
comparison is bit for bit.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from sklearn.base import is_classifier
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import (
    AdaBoostClassifier,
    AdaBoostRegressor,
    BaggingClassifier,
    BaggingRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.linear_model import Perceptron, Ridge, SGDClassifier, SGDRegressor
from sklearn.model_selection import GridSearchCV, HalvingGridSearchCV, KFold, StratifiedKFold
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import parcv
from parcv.plan.build import build_plan
from parcv.plan.data import check_dataset
from parcv.plan.iterations import choose_path, path_stopped
from parcv.plan.keys import content_keys
from parcv.plan.records import Unit
from parcv.plan.shortcuts import (
    KINDS,
    SHORTCUTS,
    Fallback,
    Shortcut,
    continues_exactly,
    exact_shortcut,
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
SEEDS = st.sampled_from(["int", "RandomState", "None"])


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


def _comparable(estimator: Any) -> bool:
    """Whether separate fits of ``estimator`` are equal to each other (reproducible)."""
    seed = estimator.random_state  # as given: xgboost's get_params draws from a RandomState
    # xgboost draws a new seed from a RandomState whenever its parameters are read (per clone).
    return seed is not None and not (isinstance(estimator, xgb.XGBModel) and not isinstance(
        seed, int))  # fmt: skip


def _seed(kind: str) -> Any:
    return {"int": 0, "RandomState": np.random.RandomState(0), "None": None}[kind]


def _pick(draw: Any, classification: type, regression: type) -> Any:
    return draw(st.sampled_from([classification, regression]))


@st.composite
def gradient_boosting(draw):
    cls = _pick(draw, GradientBoostingClassifier, GradientBoostingRegressor)
    return Config(cls(
        max_depth=2, learning_rate=draw(st.sampled_from([0.1, 0.5])),
        subsample=draw(st.sampled_from([1.0, 0.7])),
        max_features=draw(st.sampled_from([None, 0.5])),
        n_iter_no_change=draw(st.sampled_from([None, 1, 2])), tol=0.01, validation_fraction=0.3,
        random_state=_seed(draw(SEEDS)),
    ), "n_estimators")  # fmt: skip


@st.composite
def hist_gradient_boosting(draw):
    cls = _pick(draw, HistGradientBoostingClassifier, HistGradientBoostingRegressor)
    extra = {"class_weight": draw(st.sampled_from([None, "balanced"]))} if cls is \
        HistGradientBoostingClassifier else {}  # fmt: skip
    return Config(cls(
        max_leaf_nodes=4, min_samples_leaf=3, learning_rate=draw(st.sampled_from([0.1, 0.5])),
        early_stopping=draw(st.sampled_from([False, True, "auto"])),
        n_iter_no_change=draw(st.sampled_from([1, 2])), tol=0.01, validation_fraction=0.3,
        max_features=draw(st.sampled_from([1.0, 0.5])), random_state=_seed(draw(SEEDS)), **extra,
    ), "max_iter")  # fmt: skip


@st.composite
def ada_boost(draw):
    cls = _pick(draw, AdaBoostClassifier, AdaBoostRegressor)
    extra = {"loss": draw(st.sampled_from(["linear", "square"]))} if cls is AdaBoostRegressor \
        else {}  # fmt: skip
    return Config(cls(learning_rate=draw(st.sampled_from([1.0, 0.5])),
                      random_state=_seed(draw(SEEDS)), **extra), "n_estimators")  # fmt: skip


@st.composite
def forest(draw):
    cls = draw(st.sampled_from([RandomForestClassifier, RandomForestRegressor,
                                ExtraTreesClassifier, ExtraTreesRegressor]))  # fmt: skip
    bootstrap = draw(st.booleans())
    extra: dict[str, Any] = {}
    if bootstrap:
        extra = {"max_samples": draw(st.sampled_from([None, 0.7])),
                 "oob_score": draw(st.booleans())}  # fmt: skip
    if cls in (RandomForestClassifier, ExtraTreesClassifier):
        weights = [None, "balanced", "balanced_subsample"] if bootstrap else [None, "balanced"]
        extra["class_weight"] = draw(st.sampled_from(weights))
    return Config(cls(max_depth=3, bootstrap=bootstrap, n_jobs=1,
                      max_features=draw(st.sampled_from([1.0, 0.5, "sqrt"])),
                      random_state=_seed(draw(SEEDS)), **extra), "n_estimators")  # fmt: skip


@st.composite
def bagging(draw):
    cls = _pick(draw, BaggingClassifier, BaggingRegressor)
    bootstrap = draw(st.booleans())
    return Config(cls(
        max_samples=draw(st.sampled_from([1.0, 0.7])),
        max_features=draw(st.sampled_from([1.0, 0.5])),
        bootstrap=bootstrap, bootstrap_features=draw(st.booleans()),
        oob_score=bootstrap and draw(st.booleans()), random_state=_seed(draw(SEEDS)),
    ), "n_estimators")  # fmt: skip


@st.composite
def xgboost_model(draw):
    cls = _pick(draw, xgb.XGBClassifier, xgb.XGBRegressor)
    booster = draw(st.sampled_from(["gbtree", "dart", "gblinear"]))
    extra = {"rate_drop": draw(st.sampled_from([0.0, 0.3]))} if booster == "dart" else {}
    return Config(cls(
        booster=booster, max_depth=2, learning_rate=0.3, n_jobs=1, tree_method="hist",
        subsample=draw(st.sampled_from([1.0, 0.7])),
        colsample_bytree=draw(st.sampled_from([1.0, 0.6])), random_state=_seed(draw(SEEDS)),
        verbosity=0, **extra,
    ), "n_estimators")  # fmt: skip


@st.composite
def lightgbm_model(draw):
    cls = _pick(draw, lgb.LGBMClassifier, lgb.LGBMRegressor)
    boosting = draw(st.sampled_from(["gbdt", "dart", "goss", "rf"]))
    subsample = {"goss": 1.0, "rf": 0.7}.get(boosting) or draw(st.sampled_from([1.0, 0.7]))
    extra = {"class_weight": draw(st.sampled_from([None, "balanced"]))} if cls is \
        lgb.LGBMClassifier else {}  # fmt: skip
    return Config(cls(
        boosting_type=boosting, num_leaves=4, min_child_samples=3, n_jobs=1, verbose=-1,
        subsample=subsample, subsample_freq=1 if subsample < 1 else 0,
        colsample_bytree=draw(st.sampled_from([1.0, 0.6])), random_state=_seed(draw(SEEDS)),
        **extra,
    ), "n_estimators")  # fmt: skip


@st.composite
def sgd(draw):
    cls = draw(st.sampled_from([SGDClassifier, SGDRegressor, Perceptron]))
    # Half the draws keep to the shortcut's conditions, so that it is taken often enough.
    exact = draw(st.booleans())
    params: dict[str, Any] = {
        "shuffle": False if exact else draw(st.booleans()),
        "tol": None if exact else draw(st.sampled_from([None, 1e-3])),
        "penalty": None if exact else draw(st.sampled_from([None, "l2", "l1"])),
        "alpha": draw(st.sampled_from([1e-4, 0.01])),
        "early_stopping": False if exact else draw(st.booleans()), "validation_fraction": 0.3,
        "n_iter_no_change": 2, "random_state": _seed(draw(SEEDS)),
    }  # fmt: skip
    if cls is not Perceptron:
        rate = draw(st.sampled_from(["optimal", "invscaling", "constant", "adaptive"]))
        params.update(learning_rate=rate, eta0=0.01,
                      average=False if exact else draw(st.booleans()))  # fmt: skip
    if cls is not SGDRegressor:
        weights = [None, {0: 2.0, 1: 1.0}] + ([] if exact else ["balanced"])
        params["class_weight"] = draw(st.sampled_from(weights))
    return Config(cls(**params), "max_iter")


@st.composite
def mlp(draw):
    cls = _pick(draw, MLPClassifier, MLPRegressor)
    exact = draw(st.booleans())  # half the draws keep to the shortcut's conditions
    return Config(cls(
        hidden_layer_sizes=(3,), solver=draw(st.sampled_from(["adam", "sgd"])),
        learning_rate=draw(st.sampled_from(["constant", "invscaling", "adaptive"])),
        learning_rate_init=0.01, shuffle=False if exact else draw(st.booleans()),
        batch_size=draw(st.sampled_from(["auto", 8])),
        n_iter_no_change=10 if exact else draw(st.sampled_from([2, 10])),
        tol=draw(st.sampled_from([1e-4, 0.5])),
        early_stopping=False if exact else draw(st.booleans()), validation_fraction=0.3,
        random_state=_seed(draw(st.sampled_from(["int", "RandomState"]) if exact else SEEDS)),
    ), "max_iter")  # fmt: skip


CONFIGS = st.one_of(gradient_boosting(), hist_gradient_boosting(), ada_boost(), forest(),
                    bagging(), xgboost_model(), lightgbm_model(), sgd(), mlp())  # fmt: skip
ITERATIONS = st.builds(parcv.Iterations, param=st.just("?"), up_to=st.just(4),
                       every=st.sampled_from([1, 2]),
                       patience=st.sampled_from([None, 1]))  # fmt: skip
PROPERTY = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])  # fmt: skip

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


@PROPERTY
@given(config=CONFIGS, drawn=ITERATIONS)
@example(config=DART, drawn=parcv.Iterations("?", 4, every=2))
@example(config=LGBM_DART, drawn=parcv.Iterations("?", 4, every=2))
@example(config=GBLINEAR, drawn=parcv.Iterations("?", 4, every=2))
def test_every_path_parcv_grows_scores_as_separate_fits_from_scratch(config, drawn):
    iterations = parcv.Iterations(config.param, drawn.up_to, every=drawn.every,
                                  patience=drawn.patience)  # fmt: skip
    n_samples = len(DATA[config.task][1])
    choice = choose_path(config.estimator, iterations, {}, n_samples=n_samples)
    event(f"{type(config.estimator).__name__}: {choice.method}")
    if choice.method != "separate":  # a shortcut: the table says it is exact here
        decision = exact_shortcut(choice.method, config.estimator, {}, config.param,
                                  up_to=iterations.up_to, n_samples=n_samples)  # fmt: skip
        assert isinstance(decision, Shortcut)
    elif not _comparable(config.estimator):
        return  # separate fits that draw fresh randomness: nothing to compare with
    ours, theirs = _path_and_grid(config, iterations)
    stopped = ours.cv_results_["path_stopped"]
    means = np.asarray(theirs.cv_results_["mean_test_score"])
    # The early stop is where the rule puts it on the separate fits' means.
    np.testing.assert_array_equal(stopped, path_stopped(iterations, ours.paths, means.tolist()))
    for k in range(2):
        got = ours.cv_results_[f"split{k}_test_score"]
        want = np.asarray(theirs.cv_results_[f"split{k}_test_score"])
        np.testing.assert_array_equal(got[~stopped], want[~stopped], err_msg=choice.method)
        assert np.isnan(got[stopped]).all()


# A warm start grows these; the halving rungs continue their fits where the table allows.
@st.composite
def warm_startable(draw):
    config = draw(st.one_of(forest(), bagging(), gradient_boosting(), hist_gradient_boosting()))
    space: dict[str, list[Any]] = {"max_depth": [1, 2, 3, None]}
    if "max_depth" not in config.estimator.get_params():  # bagging
        space = {"max_features": [0.5, 0.75, 1.0], "max_samples": [0.5, 1.0]}
    if isinstance(config.estimator, (HistGradientBoostingClassifier,
                                     HistGradientBoostingRegressor)):  # fmt: skip
        space = {"max_leaf_nodes": [2, 3, 4, 5]}
    return config, space


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


@settings(PROPERTY, max_examples=20)
@given(drawn=warm_startable())
@example(drawn=GB_EARLY_STOP)
@example(drawn=FOREST_RANDOM_STATE)
@example(drawn=BAGGING_RANDOM_STATE)
def test_halving_continues_fits_only_where_a_fit_from_scratch_scores_the_same(drawn):
    config, space = drawn
    grows = continues_exactly(config.estimator, [], config.param, n_samples=48)
    event(f"{type(config.estimator).__name__}: {'continued' if grows else 'from scratch'}")
    if grows is None and not _comparable(config.estimator):
        return  # rungs that draw fresh randomness, fitted from scratch: nothing to compare with
    ours, theirs = _halvings(config, space)
    assert ours.cv_results_["params"] == theirs.cv_results_["params"]
    for k in range(2):
        np.testing.assert_array_equal(ours.cv_results_[f"split{k}_test_score"],
                                      theirs.cv_results_[f"split{k}_test_score"])  # fmt: skip


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
