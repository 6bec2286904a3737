"""A property per row of the shortcut table: its shortcut scores as separate fits, where it says.

Each row of :data:`parcv.plan.shortcuts.SHORTCUTS` names exact classes and the
conditions under which its shortcut (a booster read at earlier rounds, staged
predictions, warm-start growth, ``partial_fit`` epochs, a halving rung continued)
gives the scores of separate fits from scratch. For every row, hypothesis draws its
classes, subclasses of them, and the settings that could break the shortcut (tree
counts, depths, learning rates, xgboost's ``num_parallel_tree`` and lightgbm's
``boosting_type="rf"`` (forests boosted round by round), row and column sampling,
early stopping, ``random_state`` kinds, ...), and checks:

- where the table takes the shortcut, parcv's scores equal scikit-learn's separate
  fits (``GridSearchCV`` over the count, ``HalvingGridSearchCV`` with every rung
  fitted from scratch) bit for bit;
- elsewhere, subclasses included, the path is fitted from scratch (``"separate"``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.datasets import make_classification, make_regression
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.model_selection import (
    GridSearchCV,
    HalvingGridSearchCV,
    KFold,
    StratifiedKFold,
    cross_val_score,
)

import parcv
from parcv.plan.iterations import choose_path, path_stopped
from parcv.plan.shortcuts import (
    SHORTCUTS,
    Rule,
    Shortcut,
    continues_exactly,
    exact_shortcut,
    listed_class,
)

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")

N_SAMPLES = 60
_X, _Y = make_regression(n_samples=N_SAMPLES, n_features=4, noise=10.0, random_state=0)
_XB, _YB = make_classification(n_samples=N_SAMPLES, n_features=4, n_informative=3,
                               n_redundant=0, random_state=0)  # fmt: skip
_XM, _YM = make_classification(n_samples=N_SAMPLES, n_features=4, n_informative=3,
                               n_redundant=0, n_classes=3, n_clusters_per_class=1,
                               random_state=0)  # fmt: skip
DATA = {"regression": (_X, _Y), "binary": (_XB, _YB), "multiclass": (_XM, _YM)}
FOLDS = {task: list((KFold if task == "regression" else StratifiedKFold)(
    2, shuffle=True, random_state=0).split(X, y)) for task, (X, y) in DATA.items()}  # fmt: skip

# Every class the table names, and a subclass of each (that changes nothing, yet is refused).
LISTED = {name.rpartition(".")[2]: listed_class(name) for rule in SHORTCUTS
          for name in rule.classes}  # fmt: skip
SUBCLASSES = {
    cls: type(f"Subclassed{name}", (cls,), {"__module__": __name__})
    for name, cls in LISTED.items()
    if cls is not None
}
globals().update({sub.__name__: sub for sub in SUBCLASSES.values()})  # picklable by name

SEEDS = st.sampled_from([0, 7, "RandomState", None])
PROPERTY = settings(max_examples=12, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])  # fmt: skip


def _seed(drawn: Any) -> Any:
    return np.random.RandomState(0) if drawn == "RandomState" else drawn


def _base(cls: type) -> type:
    """The listed class of ``cls`` (itself, or the one it subclasses)."""
    return next(c for c in cls.__mro__ if c in SUBCLASSES)


# --- the settings that could break each family's shortcut --------------------------------


def _xgboost(draw: Any, cls: type) -> dict[str, Any]:
    booster = draw(st.sampled_from(["gbtree", "gbtree", "dart", "gblinear"]))
    extra = {"rate_drop": draw(st.sampled_from([0.0, 0.3]))} if booster == "dart" else {}
    tree_method = draw(st.sampled_from(["hist", "exact", "approx"]))
    by_node = [1.0] if tree_method == "exact" else [1.0, 0.5]  # exact samples no columns by node
    return dict(
        booster=booster, n_jobs=1, verbosity=0, max_depth=draw(st.sampled_from([1, 3])),
        learning_rate=draw(st.sampled_from([0.3, 1.0])), tree_method=tree_method,
        num_parallel_tree=draw(st.sampled_from([None, 1, 3])),
        subsample=draw(st.sampled_from([1.0, 0.6])),
        colsample_bytree=draw(st.sampled_from([1.0, 0.6])),
        colsample_bynode=draw(st.sampled_from(by_node)),
        random_state=_seed(draw(SEEDS)), **extra,
    )  # fmt: skip


def _lightgbm(draw: Any, cls: type) -> dict[str, Any]:
    boosting = draw(st.sampled_from(["gbdt", "rf", "goss", "dart"]))
    # A random forest needs bagging; goss samples by gradient, not with bagging.
    subsample = {"rf": 0.7, "goss": 1.0}.get(boosting) or draw(st.sampled_from([1.0, 0.7]))
    extra = {"class_weight": draw(st.sampled_from([None, "balanced"]))} if is_classifier(
        cls()) else {}  # fmt: skip
    return dict(
        boosting_type=boosting, num_leaves=4, min_child_samples=3, n_jobs=1, verbose=-1,
        max_depth=draw(st.sampled_from([-1, 2])), learning_rate=draw(st.sampled_from([0.1, 0.5])),
        subsample=subsample, subsample_freq=draw(st.sampled_from([1, 2])) if subsample < 1 else 0,
        colsample_bytree=draw(st.sampled_from([1.0, 0.6])),
        feature_fraction_bynode=draw(st.sampled_from([1.0, 0.5])),
        extra_trees=draw(st.booleans()), random_state=_seed(draw(SEEDS)), **extra,
    )  # fmt: skip


def _gradient_boosting(draw: Any, cls: type) -> dict[str, Any]:
    return dict(
        max_depth=draw(st.sampled_from([1, 2, 3])),
        learning_rate=draw(st.sampled_from([0.1, 0.5])),
        subsample=draw(st.sampled_from([1.0, 0.7])),
        max_features=draw(st.sampled_from([None, 0.5])),
        n_iter_no_change=draw(st.sampled_from([None, 1, 2])), tol=0.01, validation_fraction=0.3,
        random_state=_seed(draw(SEEDS)),
    )  # fmt: skip


def _hist_gradient_boosting(draw: Any, cls: type) -> dict[str, Any]:
    extra = {"class_weight": draw(st.sampled_from([None, "balanced"]))} if is_classifier(
        cls()) else {}  # fmt: skip
    return dict(
        max_leaf_nodes=4, min_samples_leaf=3, max_depth=draw(st.sampled_from([None, 2])),
        learning_rate=draw(st.sampled_from([0.1, 0.5])),
        early_stopping=draw(st.sampled_from([False, True, "auto"])),
        n_iter_no_change=draw(st.sampled_from([1, 2])), tol=0.01, validation_fraction=0.3,
        max_features=draw(st.sampled_from([1.0, 0.5])), random_state=_seed(draw(SEEDS)), **extra,
    )  # fmt: skip


def _ada_boost(draw: Any, cls: type) -> dict[str, Any]:
    extra = {} if is_classifier(cls()) else {
        "loss": draw(st.sampled_from(["linear", "square"]))}  # fmt: skip
    return dict(learning_rate=draw(st.sampled_from([1.0, 0.5])),
                random_state=_seed(draw(SEEDS)), **extra)  # fmt: skip


def _forest(draw: Any, cls: type) -> dict[str, Any]:
    bootstrap = draw(st.booleans())
    extra: dict[str, Any] = {}
    if bootstrap:
        extra = {"max_samples": draw(st.sampled_from([None, 0.7])),
                 "oob_score": draw(st.booleans())}  # fmt: skip
    if is_classifier(cls()):
        weights = [None, "balanced", "balanced_subsample"] if bootstrap else [None, "balanced"]
        extra["class_weight"] = draw(st.sampled_from(weights))
    return dict(max_depth=draw(st.sampled_from([2, 3, None])), bootstrap=bootstrap, n_jobs=1,
                max_features=draw(st.sampled_from([1.0, 0.5, "sqrt"])),
                random_state=_seed(draw(SEEDS)), **extra)  # fmt: skip


def _bagging(draw: Any, cls: type) -> dict[str, Any]:
    bootstrap = draw(st.booleans())
    extra = {} if _base(cls) is LISTED["IsolationForest"] else {
        "bootstrap_features": draw(st.booleans()),
        "oob_score": bootstrap and draw(st.booleans())}  # fmt: skip
    return dict(max_samples=draw(st.sampled_from([1.0, 0.7])),
                max_features=draw(st.sampled_from([1.0, 0.5])), bootstrap=bootstrap,
                random_state=_seed(draw(SEEDS)), **extra)  # fmt: skip


def _sgd(draw: Any, cls: type) -> dict[str, Any]:
    exact = draw(st.booleans())  # half the draws keep to the conditions, to take it often
    params: dict[str, Any] = {
        "shuffle": False if exact else draw(st.booleans()),
        "tol": None if exact else draw(st.sampled_from([None, 1e-3])),
        "penalty": None if exact else draw(st.sampled_from([None, "l2", "l1"])),
        "alpha": draw(st.sampled_from([1e-4, 0.01])),
        "early_stopping": False if exact else draw(st.booleans()), "validation_fraction": 0.3,
        "n_iter_no_change": 2, "random_state": _seed(draw(SEEDS)),
    }  # fmt: skip
    if _base(cls) is not LISTED["Perceptron"]:
        rate = draw(st.sampled_from(["optimal", "invscaling", "constant", "adaptive"]))
        params.update(learning_rate=rate, eta0=0.01,
                      average=False if exact else draw(st.booleans()))  # fmt: skip
    if is_classifier(cls()):
        weights = [None, {0: 2.0, 1: 1.0}] + ([] if exact else ["balanced"])
        params["class_weight"] = draw(st.sampled_from(weights))
    return params


def _mlp(draw: Any, cls: type) -> dict[str, Any]:
    exact = draw(st.booleans())  # half the draws keep to the conditions, to take it often
    return dict(
        hidden_layer_sizes=(3,), solver=draw(st.sampled_from(["adam", "sgd"])),
        learning_rate=draw(st.sampled_from(["constant", "invscaling", "adaptive"])),
        learning_rate_init=0.01, shuffle=False if exact else draw(st.booleans()),
        batch_size=draw(st.sampled_from(["auto", 8])),
        n_iter_no_change=10 if exact else draw(st.sampled_from([2, 10])),
        tol=draw(st.sampled_from([1e-4, 0.5])),
        early_stopping=False if exact else draw(st.booleans()), validation_fraction=0.3,
        random_state=_seed(draw(st.sampled_from([0, "RandomState"]) if exact else SEEDS)),
    )  # fmt: skip


# Each listed class's settings, by the name of the class.
SETTINGS = {
    **dict.fromkeys(["XGBClassifier", "XGBRegressor", "XGBRFClassifier", "XGBRFRegressor"],
                    _xgboost),
    **dict.fromkeys(["LGBMClassifier", "LGBMRegressor"], _lightgbm),
    **dict.fromkeys(["GradientBoostingClassifier", "GradientBoostingRegressor"],
                    _gradient_boosting),
    **dict.fromkeys(["HistGradientBoostingClassifier", "HistGradientBoostingRegressor"],
                    _hist_gradient_boosting),
    **dict.fromkeys(["AdaBoostClassifier", "AdaBoostRegressor"], _ada_boost),
    **dict.fromkeys(["RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier",
                     "ExtraTreesRegressor"], _forest),
    **dict.fromkeys(["BaggingClassifier", "BaggingRegressor", "IsolationForest"], _bagging),
    **dict.fromkeys(["SGDClassifier", "SGDRegressor", "Perceptron"], _sgd),
    **dict.fromkeys(["MLPClassifier", "MLPRegressor"], _mlp),
}  # fmt: skip
BOOSTERS = {"XGBClassifier", "XGBRFClassifier", "LGBMClassifier"}  # drawn on 3 classes too


@dataclass
class Drawn:
    """A drawn estimator of one row's classes (or a subclass), its data and its path."""

    estimator: Any
    param: str
    task: str
    up_to: int
    every: int
    patience: int | None

    @property
    def scoring(self) -> str:
        if self.task == "regression":
            return "neg_mean_squared_error"
        # A probability or decision scorer: it sees a difference in the last bit.
        return "neg_log_loss" if hasattr(self.estimator, "predict_proba") else "roc_auc"


@st.composite
def drawn_for(draw: Any, rule: Rule) -> Drawn:
    """An estimator of ``rule``'s classes or a subclass of one, with the settings that matter."""
    cls = draw(st.sampled_from([LISTED[name.rpartition(".")[2]] for name in rule.classes]))
    if draw(st.integers(0, 3)) == 0:  # a quarter of the draws: a subclass, never matched
        cls = SUBCLASSES[cls]
    name = _base(cls).__name__
    estimator = cls(**SETTINGS[name](draw, cls))
    if is_regressor(estimator):
        task = "regression"
    else:
        task = draw(st.sampled_from(["binary", "multiclass"])) if name in BOOSTERS else "binary"
    return Drawn(estimator, rule.params[0], task, up_to=draw(st.sampled_from([4, 6])),
                 every=draw(st.sampled_from([1, 2])),
                 patience=draw(st.sampled_from([None, 1])))  # fmt: skip


def _comparable(estimator: Any) -> bool:
    """Whether separate fits of ``estimator`` are equal to each other (reproducible)."""
    seed = estimator.random_state  # as given: xgboost's get_params draws from a RandomState
    # xgboost draws a new seed from a RandomState whenever its parameters are read (per clone).
    return seed is not None and not (isinstance(estimator, xgb.XGBModel) and not isinstance(
        seed, int))  # fmt: skip


def _quiet(call: Any) -> Any:
    """Run a fit loop with its estimators' warnings (convergence, deprecations) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call()


def _rule_id(rule: Rule) -> str:
    return f"{rule.kind}-{rule.family.replace(', ', '-')}"


PATH_RULES = [rule for rule in SHORTCUTS if rule.kind != "continuation"]
CONTINUATION_RULES = [rule for rule in SHORTCUTS if rule.kind == "continuation"]


def test_every_class_the_table_names_is_drawn_with_its_settings():
    assert all(cls is not None for cls in LISTED.values()), LISTED
    assert set(SETTINGS) == set(LISTED)
    assert {r.kind for r in PATH_RULES + CONTINUATION_RULES} == {r.kind for r in SHORTCUTS}


def _check_path(kind: str, drawn: Drawn) -> str:
    """Check a path of ``kind`` against the table and separate fits; return how it was grown."""
    estimator, param = drawn.estimator, drawn.param
    iterations = parcv.Iterations(param, drawn.up_to, every=drawn.every, patience=drawn.patience,
                                  method=kind)  # fmt: skip
    decision = exact_shortcut(kind, estimator, {}, param, up_to=drawn.up_to,
                              n_samples=N_SAMPLES)  # fmt: skip
    choice = choose_path(estimator, iterations, {}, n_samples=N_SAMPLES)
    if type(estimator) in SUBCLASSES.values():  # the table never assumes a subclass's fit
        assert not isinstance(decision, Shortcut) and "subclasses" in decision.reason
    assert choice.method == (kind if isinstance(decision, Shortcut) else "separate")
    if choice.method == "separate" and (drawn.patience is None or not _comparable(estimator)):
        # Ordinary fit units, keyed as a grid's (tests/plan/test_shortcuts.py); with patience
        # grown in step by the early-stopping rounds, checked here where fits are reproducible.
        return choice.method
    X, y = DATA[drawn.task]
    folds = FOLDS[drawn.task]
    ours = _quiet(lambda: parcv.search(estimator, None, X, y, cv=folds, scoring=drawn.scoring,
                                       iterations=iterations, refit=False,
                                       backend="serial"))  # fmt: skip
    theirs = _quiet(lambda: GridSearchCV(estimator, {param: list(iterations.checkpoints)},
                                         cv=folds, scoring=drawn.scoring,
                                         refit=False).fit(X, y))  # fmt: skip
    stopped = ours.cv_results_["path_stopped"]
    means = np.asarray(theirs.cv_results_["mean_test_score"])
    # The early stop is where the rule puts it on the separate fits' means.
    np.testing.assert_array_equal(stopped, path_stopped(iterations, ours.paths, means.tolist()))
    for k in range(2):
        got = ours.cv_results_[f"split{k}_test_score"]
        want = np.asarray(theirs.cv_results_[f"split{k}_test_score"])
        np.testing.assert_array_equal(got[~stopped], want[~stopped], err_msg=choice.method)
        assert np.isnan(got[stopped]).all()
    return choice.method


@pytest.mark.parametrize("rule", PATH_RULES, ids=_rule_id)
@PROPERTY
@given(data=st.data())
def test_a_path_takes_the_rows_shortcut_only_where_it_scores_as_separate_fits(rule, data):
    drawn = data.draw(drawn_for(rule))
    method = _check_path(rule.kind, drawn)
    event(f"{type(drawn.estimator).__name__}: {method}")


# Forests boosted round by round, on three classes and with row and column sampling: the
# draws above may miss them, so they are pinned here.
FORESTS_BOOSTED = {
    "xgb-num_parallel_tree": Drawn(xgb.XGBRegressor(
        num_parallel_tree=3, subsample=0.6, colsample_bynode=0.5, max_depth=3, n_jobs=1,
        random_state=1, verbosity=0), "n_estimators", "regression", 6, 2, None),
    "xgb-num_parallel_tree-multiclass": Drawn(xgb.XGBClassifier(
        num_parallel_tree=3, subsample=0.6, colsample_bytree=0.6, learning_rate=1.0, n_jobs=1,
        random_state=0, verbosity=0), "n_estimators", "multiclass", 6, 2, 1),
    "lgbm-rf": Drawn(lgb.LGBMRegressor(
        boosting_type="rf", subsample=0.7, subsample_freq=1, colsample_bytree=0.6,
        num_leaves=4, min_child_samples=3, n_jobs=1, random_state=3, verbose=-1),
        "n_estimators", "regression", 6, 2, None),
    "lgbm-rf-multiclass": Drawn(lgb.LGBMClassifier(
        boosting_type="rf", subsample=0.5, subsample_freq=2, feature_fraction_bynode=0.5,
        num_leaves=4, min_child_samples=3, n_jobs=1, random_state=0, verbose=-1),
        "n_estimators", "multiclass", 6, 1, None),
}  # fmt: skip


@pytest.mark.parametrize("drawn", list(FORESTS_BOOSTED.values()), ids=list(FORESTS_BOOSTED))
def test_forests_boosted_round_by_round_take_the_booster_shortcut_exactly(drawn):
    assert _check_path("booster", drawn) == "booster"


def _space(estimator: Any) -> dict[str, list[Any]]:
    """A small space for the halving rungs to choose from."""
    if "max_leaf_nodes" in estimator.get_params():  # HistGradientBoosting
        return {"max_leaf_nodes": [2, 3, 4, 5]}
    if "max_depth" in estimator.get_params():
        return {"max_depth": [1, 2, 3, None]}
    return {"max_features": [0.5, 0.75, 1.0], "max_samples": [0.5, 1.0]}  # bagging


@pytest.mark.parametrize("rule", CONTINUATION_RULES, ids=_rule_id)
@PROPERTY
@given(data=st.data())
def test_halving_continues_a_fit_only_where_it_scores_as_a_fit_from_scratch(rule, data):
    drawn = data.draw(drawn_for(rule))
    estimator, param = drawn.estimator, drawn.param
    grows = continues_exactly(estimator, [], param, n_samples=N_SAMPLES)
    event(f"{type(estimator).__name__}: {'continued' if grows else 'from scratch'}")
    decision = exact_shortcut(rule.kind, estimator, {}, param, n_samples=N_SAMPLES)
    assert (grows is not None) == isinstance(decision, Shortcut)
    if not rule.matches(estimator):
        assert grows is None and "subclasses" in decision.reason
    if grows is None:
        return  # every rung fitted from scratch, as scikit-learn's
    X, y = DATA[drawn.task]
    space = _space(estimator)
    options: dict[str, Any] = dict(resource=param, min_resources=2, max_resources=6, factor=3)
    theirs = _quiet(lambda: HalvingGridSearchCV(estimator, space, cv=KFold(2), refit=False,
                                                scoring=drawn.scoring,
                                                **options).fit(X, y))  # fmt: skip
    ours = _quiet(lambda: parcv.search(estimator, space, X, y, cv=KFold(2), refit=False,
                                       scoring=drawn.scoring, halving=parcv.Halving(**options),
                                       backend="serial"))  # fmt: skip
    assert ours.cv_results_["params"] == theirs.cv_results_["params"]
    for k in range(2):
        np.testing.assert_array_equal(ours.cv_results_[f"split{k}_test_score"],
                                      theirs.cv_results_[f"split{k}_test_score"])  # fmt: skip


@pytest.mark.parametrize("rule", CONTINUATION_RULES, ids=_rule_id)
@PROPERTY
@given(data=st.data())
def test_a_pruned_trials_windows_continued_score_as_fits_from_scratch(rule, data):
    # A pruned trial's windows (1), (2), (3, 4), (5, 6): each continues the last one's kept
    # fits by a warm start, to each checkpoint (a forest) or once to the window's end with
    # the others read from the stages (HistGradientBoosting, GradientBoosting).
    optuna = pytest.importorskip("optuna")
    drawn = data.draw(drawn_for(rule))
    estimator, param = drawn.estimator, drawn.param
    grows = continues_exactly(estimator, [], param, n_samples=N_SAMPLES)
    method = choose_path(estimator, parcv.Iterations(param, 6), {}, n_samples=N_SAMPLES).method
    event(f"{type(estimator).__name__}: {method}, {'continued' if grows else 'from scratch'}")
    if grows is None or not _comparable(estimator):
        # Fitted from scratch at every window (the path tests above), or separate fits
        # differ from each other: nothing a continued window could change.
        return
    X, y = DATA[drawn.task]
    space = {k: v[:2] for k, v in _space(estimator).items()}
    strategy = parcv.Sampler("random", n_trials=2, seed=0, pruner=optuna.pruners.NopPruner(),
                             resource=parcv.Iterations(param, up_to=6))  # fmt: skip
    ours = _quiet(lambda: parcv.search(estimator, space, X, y, cv=KFold(2), refit=False,
                                       scoring=drawn.scoring, strategy=strategy,
                                       backend="serial"))  # fmt: skip
    cv = ours.cv_results_
    assert sorted(int(p[param]) for p in cv["params"]) == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]
    for row, params in enumerate(cv["params"]):
        model = clone(estimator).set_params(**params)
        theirs = _quiet(lambda m=model: cross_val_score(m, X, y, cv=KFold(2),
                                                        scoring=drawn.scoring))  # fmt: skip
        for k in range(2):
            assert cv[f"split{k}_test_score"][row] == theirs[k], (params, k)
