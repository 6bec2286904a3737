"""Iterations as a resource: total fit time of each way to tune an iterative model, nested.

For each model (HistGradientBoosting, SGDClassifier, XGBoost) and each data set, one
space of non-iteration candidates is searched with 5-fold inner CV, together with the
number of iterations (boosting rounds, epochs), by every method below. Every method gets
the same candidates, the same maximum number of iterations, the same inner splitter and
the same outer folds:

- ``full-grid``: scikit-learn ``GridSearchCV`` over every candidate x every iteration
  value, each fitted from scratch (``n_jobs``): the reference.
- ``parcv-early-stop``: ``parcv.search(..., iterations=parcv.Iterations(param, up_to,
  every, patience))``: one path per (fold, candidate), stopped when the mean over folds
  stops improving.
- ``parcv-halving`` / ``parcv-hyperband``: ``parcv.search(..., halving=parcv.Halving(
  resource=param, ...))`` / ``parcv.Hyperband(resource=param, ...)`` (whose brackets draw
  their candidates from a ``parcv.RandomSpace`` of the same lists, as dask-ml's do).
- ``sklearn-halving``: ``HalvingRandomSearchCV(resource=param)`` over the whole space
  (``n_candidates`` = its size, ``factor=3``).
- ``dask-ml-hyperband``: ``dask_ml.model_selection.HyperbandSearchCV`` on a local cluster
  (2 single-threaded worker processes). It needs ``partial_fit`` (SGD only) and, by design,
  scores on one hold-out split of the outer-train rows instead of 5-fold CV.
- ``optuna-tpe-hyperband``: Optuna's own ``study.optimize`` with ``TPESampler(seed=0)``,
  ``HyperbandPruner(min_resource=first value, max_resource=max, reduction_factor=3)`` and
  the study name ``"parcv"``, as many trials as candidates (:func:`optuna_pruned_study`).
  Each trial grows its 5 fold models checkpoint by checkpoint, every first value (10
  rounds, 5 epochs) up to the maximum: HGB by warm start, XGBoost by continuing its
  booster, SGD fitted anew with that many epochs (epochs of ``partial_fit`` are another
  model). At each checkpoint it reports the mean inner score with the iteration count as
  the step and is pruned when told; a complete trial returns its last checkpoint's mean,
  and the winner is refitted with the maximum. Trials run one at a time (TPE is
  sequential; threads would share the GIL and inflate the measured fit times).
- ``parcv-tpe-hyperband`` / ``parcv-tpe-hyperband-b2``: ``parcv.search(..., strategy=
  parcv.Sampler("tpe", n_trials=<candidates>, seed=0, pruner=<the same HyperbandPruner>,
  resource=parcv.Iterations(param, up_to=max, every=first value), batch=1 / 2))`` over
  the same lists. At ``batch=1`` each outer fold's study (every trial's parameters, state,
  intermediate values and value) and winner must equal ``optuna-tpe-hyperband``'s.
- ``optuna``: Optuna's own ``study.optimize(objective, n_trials=N)``, ``TPESampler(seed=0)``
  fresh for each outer fold, no pruner. The objective suggests every list of the space and
  the iteration parameter (over the full grid's values) as categoricals, in that order, and
  returns ``cross_validate``'s mean test score on the inner folds; its fits are timed by
  ``cross_validate`` (``fit_time``). One trial at a time, in this process.
- ``parcv-tpe`` / ``parcv-tpe-b2``: ``parcv.search(..., strategy=parcv.Sampler("tpe",
  n_trials=N, seed=0, batch=1 / 2))`` over the same space (the iteration parameter as a list
  of the same values), the folds of a round's trials run on the backend's workers. At
  ``batch=1`` the trials (parameters and mean scores) and the winner must equal Optuna's,
  outer fold by outer fold; at ``batch=2`` two trials' folds run at once.

Nested CV gives each method's winner (its parameters and iteration count) an outer score:
on each of the outer folds (``StratifiedKFold``, seed 0) the method searches the
outer-train rows, its winner is refitted there from scratch and scored (accuracy) on the
outer-test rows. The outer score is the mean over outer folds.

Columns: ``fit s`` is the total fit time (the sum of every fit's or partial fit's own
time, over the inner searches of all outer folds; the winners' refits are not counted; a
parcv unit that took the record of an equal one the run had already fitted, as a point a
sampler proposed again does, is not counted again),
``wall s`` the wall time of those searches, ``x less`` = full grid's fit time / the
method's, ``outer`` the outer score, and ``tied`` the paired comparison with the full
grid's winner: with d the per-outer-fold differences of outer scores, the winners are
tied when every d is 0 or ``|mean(d)| <= std(d, ddof=1) / sqrt(n_outer)`` (within one
paired standard error).

Targets (computed, not asserted): (1) parcv's best method (the parcv method with the
highest median ``x less`` among those tied on every workload) has a median ``x less``
>= 5; (2) on every workload, its fit time is below every other tool's and its outer
score is equal (tied by the rule above) or better. These two compare the methods that treat
iterations as a resource (the rows above ``optuna``). The TPE rows spend a fixed budget of N
trials on the space rather than search all of it, and are judged against Optuna's own study:
(3) ``parcv-tpe``'s trials and winner equal ``optuna``'s in every outer fold of every
workload; (4) on every workload, ``parcv-tpe-b2``'s wall time is <= 0.6x ``optuna``'s
(sequential) and its outer score is tied with ``optuna``'s by the paired rule above.
Issue 51's TPE + Hyperband rows are judged against ``optuna-tpe-hyperband`` (the study
they must equal at batch 1, counted per outer fold): (5) ``parcv-tpe-hyperband``'s wall
time is <= 0.7x Optuna's and (6) ``parcv-tpe-hyperband-b2``'s <= 0.6x, on every workload,
each at an outer score tied with Optuna's.

    python scripts/bench/iterations.py                       # 3 models x 5 data sets (long)
    python scripts/bench/iterations.py --model hgb --data breast_cancer
    python scripts/bench/iterations.py --quick               # smoke run (< 1 min)
    python scripts/bench/iterations.py --json iterations.json
    python scripts/bench/iterations.py --model hgb --model xgb --no-full-grid \
        --method optuna --method parcv-tpe --method parcv-tpe-b2 --trials 30   # TPE rows only
    python scripts/bench/iterations.py --no-full-grid --method optuna-tpe-hyperband \
        --method parcv-tpe-hyperband --method parcv-tpe-hyperband-b2   # issue 51's rows
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import operator
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import _setup  # noqa: F401  (pins BLAS/OpenMP threads to 1 before numpy is imported)
import numpy as np
from sklearn.base import clone
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_wine,
    make_classification,
    make_hastie_10_2,
)
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import GridSearchCV, HalvingRandomSearchCV, StratifiedKFold
from sklearn.preprocessing import LabelEncoder, StandardScaler
from threadpoolctl import threadpool_limits

import parcv

METHODS = [
    "full-grid",
    "parcv-early-stop",
    "parcv-halving",
    "parcv-hyperband",
    "sklearn-halving",
    "dask-ml-hyperband",
    "optuna-tpe-hyperband",
    "parcv-tpe-hyperband",
    "parcv-tpe-hyperband-b2",
    "optuna",
    "parcv-tpe",
    "parcv-tpe-b2",
]


@dataclass(frozen=True)
class Study:
    """An Optuna study that parcv's sampler rows are compared with, outer fold by outer fold."""

    reference: str  # the row of Optuna's own study
    batches: dict[str, int]  # parcv's rows of the same study, and their batch
    bounds: dict[str, float]  # a row's target: wall <= bound x the reference's, outer tied


# Model-based search, judged against Optuna's own study (not by targets 1 and 2): TPE with a
# fixed budget of trials (targets 3 and 4), and TPE with Hyperband pruning (issue 51).
STUDIES = {
    "tpe": Study("optuna", {"parcv-tpe": 1, "parcv-tpe-b2": 2}, {"parcv-tpe-b2": 0.6}),
    "tpe_hyperband": Study(
        "optuna-tpe-hyperband",
        {"parcv-tpe-hyperband": 1, "parcv-tpe-hyperband-b2": 2},
        {"parcv-tpe-hyperband": 0.7, "parcv-tpe-hyperband-b2": 0.6},
    ),
}
TPE_METHODS = ["optuna", "parcv-tpe", "parcv-tpe-b2"]
TPE_BATCH = STUDIES["tpe"].batches
PRUNED_BATCH = STUDIES["tpe_hyperband"].batches
# Iterations as a resource: targets 1 and 2.
PARCV_METHODS = [m for m in METHODS if m.startswith("parcv-")
                 and m not in TPE_METHODS and m not in PRUNED_BATCH]  # fmt: skip
NOT_IN_PARCV = "not available in this parcv"
NEEDS_PARTIAL_FIT = "n/a (needs partial_fit)"


# ---------------------------------------------------------------- models and data


@dataclass(frozen=True)
class Model:
    """An iterative model: its space, its iteration parameter and how to grow a fit."""

    name: str
    estimator: Any
    space: dict[str, list[Any]]
    param: str  # the iteration parameter: rounds or epochs
    values: list[int]  # the full grid's iteration values
    every: int  # the checkpoint spacing of early stopping and of the pruned TPE rows
    partial_fit: bool = False
    grown_by: str = "separate"  # how the pruned TPE rows' Optuna objective grows it: GROWERS

    @property
    def n_candidates(self) -> int:
        return math.prod(len(v) for v in self.space.values())

    @property
    def path(self) -> parcv.Iterations:
        """The checkpoints of the pruned TPE rows: every ``every`` up to the last value."""
        return parcv.Iterations(self.param, up_to=self.values[-1], every=self.every)


def _hgb(quick: bool) -> Model:
    estimator = HistGradientBoostingClassifier(early_stopping=False, random_state=0)
    space: dict[str, list[Any]] = {
        "learning_rate": [0.01, 0.03, 0.1, 0.3, 1.0],
        "max_leaf_nodes": [3, 7, 15, 31, 63],
        "l2_regularization": [0.0, 1.0],
    }
    values = [10, 20, 50, 100, 200, 500]
    if quick:
        space, values = {"learning_rate": [0.1, 0.3], "max_leaf_nodes": [3, 7]}, [2, 4, 8]
    return Model("hgb", estimator, space, "max_iter", values, every=values[0],
                 grown_by="warm_start")  # fmt: skip


def _sgd(quick: bool) -> Model:
    # tol=None: fit() runs exactly max_iter epochs. max_iter partial_fit calls do not give
    # the same weights (SGD's L2 penalty rescales them within one fit: parcv/plan/shortcuts.py),
    # so parcv fits each max_iter separately, and so does the Optuna objective that parcv's
    # pruned TPE must equal; dask-ml grows by partial_fit.
    estimator = SGDClassifier(tol=None, random_state=0)
    space: dict[str, list[Any]] = {
        "alpha": [float(a) for a in np.logspace(-6, -1, 10)],
        "loss": ["hinge", "log_loss", "modified_huber"],
        "penalty": ["l2", "elasticnet"],
    }
    values = [5, 10, 20, 50, 100]
    if quick:
        space, values = {"alpha": [1e-4, 1e-2], "loss": ["hinge", "log_loss"]}, [2, 4, 8]
    return Model("sgd", estimator, space, "max_iter", values, every=values[0], partial_fit=True)


def _xgb(quick: bool) -> Model:
    from xgboost import XGBClassifier

    estimator = XGBClassifier(tree_method="hist", n_jobs=1, random_state=0, verbosity=0)
    space: dict[str, list[Any]] = {
        "learning_rate": [0.01, 0.03, 0.1, 0.3, 1.0],
        "max_depth": [2, 3, 4, 6, 8],
        "reg_lambda": [1.0, 10.0],
    }
    values = [10, 20, 50, 100, 200, 500]
    if quick:
        space, values = {"learning_rate": [0.1, 0.3], "max_depth": [2, 3]}, [2, 4, 8]
    return Model("xgb", estimator, space, "n_estimators", values, every=values[0],
                 grown_by="booster")  # fmt: skip


MODELS: dict[str, Callable[[bool], Model]] = {"hgb": _hgb, "sgd": _sgd, "xgb": _xgb}


def _data_sets(quick: bool) -> dict[str, Callable[[], tuple[np.ndarray, np.ndarray]]]:
    if quick:
        return {"classification": lambda: make_classification(120, 8, random_state=0)}
    return {
        "breast_cancer": lambda: load_breast_cancer(return_X_y=True),
        "wine": lambda: load_wine(return_X_y=True),
        "digits5": lambda: load_digits(n_class=5, return_X_y=True),
        "classification": lambda: make_classification(
            800, 20, n_informative=8, flip_y=0.05, random_state=0
        ),
        "hastie": lambda: make_hastie_10_2(800, random_state=0),
    }


def load_data(name: str, quick: bool) -> tuple[np.ndarray, np.ndarray]:
    """Features standardized on all rows (for SGD; trees do not care), labels 0..k-1."""
    X, y = _data_sets(quick)[name]()
    X = StandardScaler().fit_transform(X)
    return X, LabelEncoder().fit_transform(y)


# ---------------------------------------------------------------- one search per method


@dataclass
class Outcome:
    """What one method's inner search on one outer-train part gives."""

    params: dict[str, Any]  # the winner, its iteration count included
    fit_time: float  # summed own time of every fit or partial fit
    wall_time: float
    trials: dict[str, list[Any]] | None = None  # a sampler's: each trial's params and value


def _timed(run: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = run()
    return time.perf_counter() - started, out


def _sklearn_fit_time(cv_results: dict[str, Any], n_splits: int) -> float:
    return float(np.sum(cv_results["mean_fit_time"]) * n_splits)


def _full_grid(model: Model, X: np.ndarray, y: np.ndarray, ctx: Context) -> Outcome:
    grid = {**model.space, model.param: model.values}
    search = GridSearchCV(model.estimator, grid, cv=ctx.inner, n_jobs=ctx.n_jobs, refit=False)
    wall, _ = _timed(lambda: search.fit(X, y))
    fit = _sklearn_fit_time(search.cv_results_, ctx.inner.get_n_splits())
    return Outcome(dict(search.best_params_), fit, wall)


def _sklearn_halving(model: Model, X: np.ndarray, y: np.ndarray, ctx: Context) -> Outcome:
    search = HalvingRandomSearchCV(
        model.estimator,
        model.space,
        n_candidates=model.n_candidates,
        resource=model.param,
        min_resources=model.values[0],
        max_resources=model.values[-1],
        factor=3,
        cv=ctx.inner,
        n_jobs=ctx.n_jobs,
        refit=False,
        random_state=0,
    )
    wall, _ = _timed(lambda: search.fit(X, y))
    fit = _sklearn_fit_time(search.cv_results_, ctx.inner.get_n_splits())
    return Outcome(dict(search.best_params_), fit, wall)


def _parcv_fit_time(result: Any, n_splits: int) -> float:
    """Summed fit time of the search's fits, measured in the workers, each fit run once.

    A record a unit took from an earlier one of the run (a point a sampler proposed
    again) is that record, with its worker and times: it counts once.
    """
    records = getattr(result, "records", None)
    if records:
        run = {(r.worker, r.started, r.finished, r.fit_time): r.fit_time
               for r in records if r.unit.kind != "final"}  # fmt: skip
        return float(sum(run.values()))
    return _sklearn_fit_time(result.cv_results_, n_splits)


def _parcv(model: Model, X: np.ndarray, y: np.ndarray, ctx: Context, how: str) -> Outcome:
    kwargs: dict[str, Any]
    top, space = model.values[-1], model.space
    if how == "parcv-early-stop":
        iterations = parcv.Iterations(model.param, top, every=model.every, patience=ctx.patience)
        kwargs = {"iterations": iterations}
    elif how == "parcv-halving":
        kwargs = {"halving": parcv.Halving(
            resource=model.param, factor=3, min_resources=model.values[0],
            max_resources=top, random_state=0)}  # fmt: skip
    else:
        kwargs = {"halving": parcv.Hyperband(resource=model.param, max_resources=top, factor=3)}
        # Its brackets draw their own candidates from the same lists, as dask-ml's do.
        space = parcv.RandomSpace(model.space, n_iter=model.n_candidates, random_state=0)
    inner, backend = ctx.inner, ctx.backend
    wall, result = _timed(
        lambda: parcv.search(
            model.estimator, space, X, y, cv=inner, refit=False, backend=backend, **kwargs
        ),
    )
    if model.param not in result.best_params_:  # the winner is refitted with its iterations
        raise ValueError(f"best_params_ lacks {model.param!r}: {result.best_params_!r}")
    fit = _parcv_fit_time(result, ctx.inner.get_n_splits())
    return Outcome(dict(result.best_params_), fit, wall)


def _dask_ml(model: Model, X: np.ndarray, y: np.ndarray, ctx: Context) -> Outcome:
    import dask.array as da
    from dask_ml.model_selection import HyperbandSearchCV

    # One chunk: one partial_fit call is one epoch over the train rows.
    X_d, y_d = da.from_array(X, chunks=(len(X), X.shape[1])), da.from_array(y, chunks=len(y))
    search = HyperbandSearchCV(
        model.estimator, model.space, max_iter=model.values[-1], aggressiveness=3, random_state=0
    )
    with ctx.cluster.running():  # type: ignore[union-attr]
        wall, _ = _timed(lambda: search.fit(X_d, y_d, classes=np.unique(y)))
    fit = float(sum(h["partial_fit_time"] for h in search.history_))
    calls = int(search.cv_results_["partial_fit_calls"][search.best_index_])
    return Outcome({**search.best_params_, model.param: calls}, fit, wall)


# ---------------------------------------------------------------- Optuna


def _warm_start(fitted: Any, template: Any, param: str, X: Any, y: Any, *, start: int,
                stop: int) -> Any:  # fmt: skip
    """Grow a fit by warm start (HistGradientBoosting), as parcv's continuation does."""
    est = fitted or clone(template).set_params(warm_start=True)
    return est.set_params(**{param: stop}).fit(X, y)


def _booster(fitted: Any, template: Any, param: str, X: Any, y: Any, *, start: int,
             stop: int) -> Any:  # fmt: skip
    """Grow an XGBoost model by continuing its booster for ``stop - start`` more rounds."""
    est = clone(template).set_params(**{param: stop - start})
    return est.fit(X, y, xgb_model=None if fitted is None else fitted.get_booster())


def _separate(fitted: Any, template: Any, param: str, X: Any, y: Any, *, start: int,
              stop: int) -> Any:  # fmt: skip
    """Fit from scratch with ``stop`` iterations (SGD: epochs are not exact partial fits)."""
    return clone(template).set_params(**{param: stop}).fit(X, y)


# How an Optuna user grows a trial's fold models from one checkpoint to the next: each gives
# the model of a fit from scratch with that count, as parcv's path for the model scores it.
GROWERS: dict[str, Callable[..., Any]] = {
    "warm_start": _warm_start,
    "booster": _booster,
    "separate": _separate,
}


def hyperband(path: parcv.Iterations) -> Any:
    """The pruner of both TPE + Hyperband rows: its rungs from the path's first checkpoint."""
    import optuna

    return optuna.pruners.HyperbandPruner(min_resource=path.every, max_resource=path.up_to,
                                          reduction_factor=3)  # fmt: skip


def optuna_pruned_study(estimator: Any, suggest: Callable[[Any], dict[str, Any]], X: Any,
                        y: Any, folds: list[Any], *, path: parcv.Iterations, grown_by: str,
                        n_trials: int) -> tuple[Any, float]:  # fmt: skip
    """Optuna's own TPE + Hyperband study, as its users write the objective; its fit time.

    ``TPESampler(seed=0)``, :func:`hyperband` and the study name ``"parcv"`` (the pruner
    draws a trial's bracket from the study's name and the trial's number), as
    ``parcv.Sampler("tpe", seed=0, pruner=..., resource=path)`` names its studies. The
    objective sets ``suggest(trial)`` on the estimator and, for each checkpoint of ``path``
    in turn, grows every fold's model to that count (``GROWERS[grown_by]``), reports the mean
    test score over the folds with the count as the step, and raises ``TrialPruned`` when
    the pruner says so; a trial that reaches the last checkpoint returns its mean there.
    Trials run one at a time, in this process; the fit time is every growth's, timed.
    """
    import optuna

    grow, spent = GROWERS[grown_by], [0.0]

    def objective(trial: Any) -> float:
        template = clone(estimator).set_params(**suggest(trial))
        fitted: list[Any] = [None] * len(folds)
        mean, start = math.nan, 0
        for count in path.all_checkpoints:
            scores = []
            for k, (train, test) in enumerate(folds):
                began = time.perf_counter()
                fitted[k] = grow(fitted[k], template, path.param, X[train], y[train],
                                 start=start, stop=count)  # fmt: skip
                spent[0] += time.perf_counter() - began
                scores.append(fitted[k].score(X[test], y[test]))
            start, mean = count, float(np.mean(scores))
            trial.report(mean, count)
            if trial.should_prune():
                raise optuna.TrialPruned
        return mean

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", study_name="parcv", pruner=hyperband(path),
                                sampler=optuna.samplers.TPESampler(seed=0))  # fmt: skip
    study.optimize(objective, n_trials=n_trials)
    return study, spent[0]


def study_trials(study: Any) -> dict[str, list[Any]]:
    """A study's trials as plain lists: parameters, states, intermediate values and values."""
    trials = study.trials
    return {
        "params": [{k: _plain(v) for k, v in t.params.items()} for t in trials],
        "states": [t.state.name for t in trials],
        "intermediate": [[[int(s), float(v)] for s, v in sorted(t.intermediate_values.items())]
                         for t in trials],
        "values": [t.value for t in trials],  # a pruned trial's: its last report
    }  # fmt: skip


def _optuna(model: Model, X: np.ndarray, y: np.ndarray, ctx: Context) -> Outcome:
    """Optuna's TPE + Hyperband, one trial per candidate: the study the pruned rows equal."""
    path = model.path

    def suggest(trial: Any) -> dict[str, Any]:
        return {k: trial.suggest_categorical(k, v) for k, v in model.space.items()}

    folds = list(ctx.inner.split(X, y))
    wall, (study, fit) = _timed(lambda: optuna_pruned_study(
        model.estimator, suggest, X, y, folds, path=path, grown_by=model.grown_by,
        n_trials=model.n_candidates))  # fmt: skip
    return Outcome({**study.best_params, path.param: path.up_to}, fit, wall, study_trials(study))


def _parcv_pruned(model: Model, X: np.ndarray, y: np.ndarray, ctx: Context,
                  batch: int) -> Outcome:  # fmt: skip
    """parcv's TPE with the same pruner and path, ``batch`` trials side by side."""
    from parcv.strategies.sampler import rebuild_pruned_study

    path = model.path
    strategy = parcv.Sampler("tpe", n_trials=model.n_candidates, seed=0, batch=batch,
                             pruner=hyperband(path), resource=path)  # fmt: skip
    inner, backend = ctx.inner, ctx.backend
    wall, result = _timed(lambda: parcv.search(
        model.estimator, model.space, X, y, cv=inner, refit=False, backend=backend,
        strategy=strategy))  # fmt: skip
    trials = study_trials(rebuild_pruned_study(result, space=model.space))
    fit = _parcv_fit_time(result, ctx.inner.get_n_splits())
    return Outcome(dict(result.best_params_), fit, wall, trials)


def _tpe_space(model: Model) -> dict[str, list[Any]]:
    """The space of the TPE rows: the lists, then the iteration parameter over its values."""
    return {**model.space, model.param: model.values}


def _optuna_study(model: Model, X: np.ndarray, y: np.ndarray, ctx: Context) -> Outcome:
    """Optuna's own sequential ``study.optimize``: the reference of the TPE rows."""
    import optuna
    from sklearn.model_selection import cross_validate

    space, spent = _tpe_space(model), [0.0]

    def objective(trial: Any) -> float:
        params = {k: trial.suggest_categorical(k, v) for k, v in space.items()}
        estimator = clone(model.estimator).set_params(**params)
        scores = cross_validate(estimator, X, y, cv=ctx.inner)
        spent[0] += float(np.sum(scores["fit_time"]))
        return float(scores["test_score"].mean())

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=0))
    wall, _ = _timed(lambda: study.optimize(objective, n_trials=ctx.n_trials))
    trials: dict[str, list[Any]] = {
        "params": [{k: _plain(v) for k, v in t.params.items()} for t in study.trials],
        "values": [t.value for t in study.trials],  # every trial completes: a float each
    }
    return Outcome(dict(study.best_params), spent[0], wall, trials)


def _parcv_tpe(model: Model, X: np.ndarray, y: np.ndarray, ctx: Context, batch: int) -> Outcome:
    """parcv's TPE: Optuna's sampler asked ``batch`` trials a round, their folds as units."""
    strategy = parcv.Sampler("tpe", n_trials=ctx.n_trials, seed=0, batch=batch)
    space, inner, backend = _tpe_space(model), ctx.inner, ctx.backend
    wall, result = _timed(
        lambda: parcv.search(
            model.estimator, space, X, y, cv=inner, refit=False, backend=backend, strategy=strategy
        )
    )
    cv = result.cv_results_
    trials: dict[str, list[Any]] = {
        "params": [{k: _plain(p[k]) for k in space} for p in cv["params"]],
        "values": [float(v) for v in cv["mean_test_score"]],
    }
    fit = _parcv_fit_time(result, ctx.inner.get_n_splits())
    return Outcome(dict(result.best_params_), fit, wall, trials)


# ---------------------------------------------------------------- nested CV and the table


@dataclass
class Context:
    """What every method shares: splitters, cores, the parcv backend and the dask cluster."""

    outer: Any
    inner: Any
    n_jobs: int
    backend: Any
    patience: int = 3  # parcv's early stopping, in checkpoints
    cluster: Any = None
    n_trials: int = 30  # the TPE rows' trials, per outer fold


@dataclass
class Row:
    """One method on one workload, over the outer folds."""

    method: str
    ran: bool = False
    note: str = ""
    fit_time: float = math.nan
    wall_time: float = math.nan
    ratio: float = math.nan  # full grid's fit time / this method's
    outer_scores: list[float] = field(default_factory=list)
    outer_score: float = math.nan
    tied: bool | None = None
    winners: list[dict[str, Any]] = field(default_factory=list)
    trials: list[dict[str, list[Any]]] = field(default_factory=list)  # per outer fold (TPE)


def why_not(method: str, model: Model, ctx: Context) -> str:
    """Why ``method`` cannot run ``model`` here ('' when it can)."""
    needs = {"parcv-early-stop": "Iterations", "parcv-halving": "Halving",
             "parcv-hyperband": "Hyperband"}  # fmt: skip
    if method in needs and not hasattr(parcv, needs[method]):
        return NOT_IN_PARCV
    if method == "dask-ml-hyperband":
        if not model.partial_fit:
            return NEEDS_PARTIAL_FIT
        if importlib.util.find_spec("dask_ml") is None:
            return "dask-ml not installed (pip install '.[bench]')"
        if ctx.cluster is None:
            return "no dask cluster (--no-dask)"
    if method in TPE_BATCH and not hasattr(parcv, "Sampler"):
        return NOT_IN_PARCV
    sampler_fields = getattr(getattr(parcv, "Sampler", None), "__dataclass_fields__", {})
    if method in PRUNED_BATCH and "pruner" not in sampler_fields:
        return NOT_IN_PARCV
    if method == "optuna-tpe-hyperband" and not hasattr(parcv, "Iterations"):
        return NOT_IN_PARCV  # its checkpoints are parcv's path's
    optuna_rows = {m for s in STUDIES.values() for m in (s.reference, *s.batches)}
    if method in optuna_rows and importlib.util.find_spec("optuna") is None:
        return "optuna not installed (pip install '.[bench]')"
    return ""


def _search(method: str, model: Model, X: np.ndarray, y: np.ndarray, ctx: Context) -> Outcome:
    if method in TPE_BATCH:
        return _parcv_tpe(model, X, y, ctx, TPE_BATCH[method])
    if method in PRUNED_BATCH:
        return _parcv_pruned(model, X, y, ctx, PRUNED_BATCH[method])
    if method.startswith("parcv-"):
        return _parcv(model, X, y, ctx, method)
    run = {"full-grid": _full_grid, "sklearn-halving": _sklearn_halving,
           "dask-ml-hyperband": _dask_ml, "optuna-tpe-hyperband": _optuna,
           "optuna": _optuna_study}[method]  # fmt: skip
    return run(model, X, y, ctx)


def run_method(method: str, model: Model, X: np.ndarray, y: np.ndarray, ctx: Context) -> Row:
    """Nested CV of one method: search each outer-train part, refit its winner, score it."""
    row = Row(method, note=why_not(method, model, ctx))
    if row.note:
        return row
    fit = wall = 0.0
    for train, test in ctx.outer.split(X, y):
        try:
            outcome = _search(method, model, X[train], y[train], ctx)
        except Exception as err:  # a tool failing is a result: say why, go on
            row.note = _known_failure(method, err) or f"failed: {type(err).__name__}: {err}"
            row.note = row.note[:300]
            return row
        fit, wall = fit + outcome.fit_time, wall + outcome.wall_time
        winner = clone(model.estimator).set_params(**outcome.params)
        row.outer_scores.append(float(winner.fit(X[train], y[train]).score(X[test], y[test])))
        row.winners.append({k: _plain(v) for k, v in outcome.params.items()})
        if outcome.trials is not None:
            row.trials.append(outcome.trials)
    row.ran, row.fit_time, row.wall_time = True, fit, wall
    row.outer_score = float(np.mean(row.outer_scores))
    return row


def _known_failure(method: str, err: Exception) -> str:
    """A note for a failure of the tool's own, known and reported upstream ('' otherwise)."""
    if method == "dask-ml-hyperband" and "asynchronous Client" in str(err):
        import dask
        import dask_ml

        return (f"n/a: dask-ml {dask_ml.__version__}'s incremental searches fail with "
                f"dask {dask.__version__} (dask/dask-ml#1016, open)")  # fmt: skip
    return ""


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def tied(a: list[float], b: list[float]) -> bool:
    """Paired outer-fold scores within one paired standard error of each other.

    Where a single outer fold differs, |mean(d)| is that standard error exactly (both
    are the difference over n): the comparison is made up to rounding there, or which
    side of it the float arithmetic lands on would decide.
    """
    d = np.asarray(a) - np.asarray(b)
    if np.all(d == 0):
        return True
    mean, se = abs(float(d.mean())), float(d.std(ddof=1)) / math.sqrt(len(d))
    return mean <= se or math.isclose(mean, se, rel_tol=1e-9)


def run_workload(model: Model, data: str, X: np.ndarray, y: np.ndarray, ctx: Context,
                 methods: list[str]) -> dict[str, Any]:  # fmt: skip
    """Every method on one (model, data set); ratios and ties against the full grid."""
    rows = [run_method(m, model, X, y, ctx) for m in methods]
    full = next((r for r in rows if r.method == "full-grid"), None)  # --no-full-grid: none
    for row in rows:
        if full is not None and row.ran and full.ran:
            row.ratio = full.fit_time / row.fit_time if row.fit_time > 0 else math.inf
            row.tied = tied(row.outer_scores, full.outer_scores)
    shape = f"{len(X)} x {X.shape[1]}, {len(np.unique(y))} classes"
    return {"model": model.name, "data": data, "shape": shape,
            "candidates": model.n_candidates, "iterations": model.values,
            "rows": [asdict(r) for r in rows],
            **{name: compare_tpe(rows, ctx.n_jobs, name) for name in STUDIES}}  # fmt: skip


def compare_tpe(rows: list[Row], n_jobs: int, study: str = "tpe") -> dict[str, Any]:
    """parcv's rows of one of ``STUDIES`` against Optuna's own study, outer fold by outer fold.

    ``same_trials``: outer folds where every trial is equal, in order (its parameters and
    mean inner score; with a pruner also its state and intermediate values); ``same_winner``:
    where the winners are; the ratios are parcv's wall and fit times over Optuna's; ``tied``:
    the outer scores, by :func:`tied`; ``busy``: parcv's fit time over ``n_jobs`` x its wall
    time (how busy it kept the workers); ``target_met``: wall ratio <= ``bound`` and tied
    (None for a row without a wall target).
    """
    by_method = {r.method: r for r in rows}
    reference = by_method.get(STUDIES[study].reference)
    if reference is None or not reference.ran:
        return {}
    compared = {}
    for method, batch in STUDIES[study].batches.items():
        row = by_method.get(method)
        if row is None or not row.ran:
            continue
        wall_ratio = row.wall_time / reference.wall_time
        is_tied = tied(row.outer_scores, reference.outer_scores)
        bound = STUDIES[study].bounds.get(method)
        compared[method] = {
            "batch": batch,
            "n_outer": len(reference.trials),
            "same_trials": sum(map(operator.eq, row.trials, reference.trials)),
            "same_winner": sum(map(operator.eq, row.winners, reference.winners)),
            "wall_ratio": wall_ratio,
            "fit_ratio": row.fit_time / reference.fit_time,
            "tied": is_tied,
            "busy": row.fit_time / (n_jobs * row.wall_time),
            "bound": bound,
            "target_met": None if bound is None else bool(wall_ratio <= bound and is_tied),
        }
    return compared


def print_workload(result: dict[str, Any]) -> None:
    """One table: a row per method."""
    print(f"\n== {result['model']} on {result['data']} ({result['shape']}; "
          f"{result['candidates']} candidates x {result['param_values']})")  # fmt: skip
    print(f"{'method':<22} {'fit s':>9} {'wall s':>8} {'x less':>7} {'outer':>7} {'tied':>5}")
    for r in result["rows"]:
        if not r["ran"]:
            print(f"{r['method']:<22} {r['note']}")
            continue
        tie = "-" if r["tied"] is None else ("yes" if r["tied"] else "no")
        ratio = "-" if math.isnan(r["ratio"]) else f"{r['ratio']:.2f}"
        print(f"{r['method']:<22} {r['fit_time']:>9.2f} {r['wall_time']:>8.2f} "
              f"{ratio:>7} {r['outer_score']:>7.4f} {tie:>5}")  # fmt: skip
    for name, study in STUDIES.items():
        for method, c in result.get(name, {}).items():
            _print_comparison(study.reference, method, c)


def _print_comparison(reference: str, method: str, c: dict[str, Any]) -> None:
    n, tie = c["n_outer"], "yes" if c["tied"] else "no"
    target = "" if c.get("bound") is None else (
        f"; target wall <= {c['bound']}x at a tied outer score: "
        f"{'met' if c['target_met'] else 'missed'}")  # fmt: skip
    print(f"  vs {reference}: {method} (batch {c['batch']}) same trials in {c['same_trials']}/{n} "
          f"outer folds, same winner in {c['same_winner']}/{n}; wall {c['wall_ratio']:.2f}x, "
          f"fit {c['fit_ratio']:.2f}x {reference}'s; outer tied: {tie}; "
          f"busy {c.get('busy', math.nan):.2f}{target}")  # fmt: skip


def summarize(results: list[dict[str, Any]], methods: list[str]) -> dict[str, Any]:
    """Per method the median ratio over workloads; the two targets, computed."""
    per_method = {}
    for method in methods:
        rows = [r for w in results for r in w["rows"] if r["method"] == method and r["ran"]]
        ratios = [r["ratio"] for r in rows if not math.isnan(r["ratio"])]
        per_method[method] = {
            "workloads": len(rows),
            "median_ratio": float(np.median(ratios)) if ratios else math.nan,
            "tied": sum(bool(r["tied"]) for r in rows),
        }
    everywhere = [m for m in PARCV_METHODS if m in methods
                  and per_method[m]["workloads"] == len(results) > 0]  # fmt: skip
    tied_everywhere = [m for m in everywhere if per_method[m]["tied"] == len(results)]
    pool = tied_everywhere or everywhere
    best = max(pool, key=lambda m: per_method[m]["median_ratio"]) if pool else None
    target1 = bool(best in tied_everywhere and per_method[best]["median_ratio"] >= 5)
    sampler_rows = {*TPE_METHODS, *PRUNED_BATCH}  # judged against Optuna's studies instead
    others = [m for m in methods if m not in PARCV_METHODS and m not in sampler_rows]
    beaten = {m: _beats(results, best, m) for m in others} if best else {}
    target2 = bool(best) and all(n == len(results) for n in beaten.values())
    return {"methods": per_method, "best_parcv": best, "target_ratio": target1,
            "beats": beaten, "target_beats_all": target2,
            "tpe": summarize_tpe(results),
            "tpe_hyperband": summarize_tpe_hyperband(results)}  # fmt: skip


def summarize_study_row(results: list[dict[str, Any]], study: str, method: str) -> dict[str, Any]:
    """One parcv row of ``STUDIES[study]`` over the workloads: equality, wall ratios, ties.

    ``equal``: workloads where its trials and winner are Optuna's in every outer fold;
    ``met``: where its wall is <= the study's bound for it x Optuna's and the outer scores
    are tied; ``*_everywhere``: on every workload (one the row did not run on counts against).
    """
    compared = [w[study][method] for w in results if method in w.get(study, {})]
    bound = STUDIES[study].bounds.get(method, math.inf)
    walls = [c["wall_ratio"] for c in compared]
    fits = [c["fit_ratio"] for c in compared]
    equal = sum(c["same_trials"] == c["same_winner"] == c["n_outer"] for c in compared)
    met = sum(c["wall_ratio"] <= bound and c["tied"] for c in compared)
    everywhere = len(compared) == len(results) > 0
    return {
        "runs": len(compared),
        "equal": equal,
        "median_wall_ratio": float(np.median(walls)) if walls else math.nan,
        "max_wall_ratio": max(walls) if walls else math.nan,
        "median_fit_ratio": float(np.median(fits)) if fits else math.nan,
        "tied": sum(bool(c["tied"]) for c in compared),
        "met": met,
        "equal_everywhere": everywhere and equal == len(results),
        "met_everywhere": everywhere and met == len(results),
    }


def summarize_tpe(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Targets 3 and 4: parcv's TPE equal to Optuna's at batch 1, faster and tied at batch 2."""
    equal, batched = (summarize_study_row(results, "tpe", m) for m in TPE_BATCH)
    return {
        "equal_runs": equal["runs"],
        "equal": equal["equal"],
        "target_equal": equal["equal_everywhere"],
        "batched_runs": batched["runs"],
        "median_wall_ratio": batched["median_wall_ratio"],
        "max_wall_ratio": batched["max_wall_ratio"],
        "fast_and_tied": batched["met"],
        "tied": batched["tied"],
        "target_fast": batched["met_everywhere"],
    }


def summarize_tpe_hyperband(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Issue 51's targets: parcv's TPE + Hyperband rows against Optuna's study, per row."""
    return {m: summarize_study_row(results, "tpe_hyperband", m) for m in PRUNED_BATCH}


def _beats(results: list[dict[str, Any]], best: str, other: str) -> int:
    """Workloads where ``best`` fits in less time than ``other`` at an equal or better score.

    A workload where ``other`` did not run counts as beaten.
    """
    count = 0
    for w in results:
        rows = {r["method"]: r for r in w["rows"]}
        a, b = rows[best], rows[other]
        if not b["ran"]:
            count += 1
            continue
        better = a["outer_score"] >= b["outer_score"] or tied(a["outer_scores"], b["outer_scores"])
        count += a["fit_time"] < b["fit_time"] and better
    return count


def print_summary(summary: dict[str, Any], n_workloads: int) -> None:
    """Median ratios per method, then the targets."""
    print(f"\n== summary over {n_workloads} workloads")
    print(f"{'method':<22} {'runs':>4} {'median x less':>13} {'tied':>4}")
    for method, s in summary["methods"].items():
        if s["workloads"] == 0:
            print(f"{method:<22} {0:>4} {'-':>13} {'-':>4}")
            continue
        ratio = "-" if math.isnan(s["median_ratio"]) else f"{s['median_ratio']:.2f}"
        print(f"{method:<22} {s['workloads']:>4} {ratio:>13} {s['tied']:>4}")
    if any(m in summary["methods"] for m in PARCV_METHODS):  # iterations as a resource
        _print_resource_targets(summary, n_workloads)
    tpe = summary.get("tpe", {})
    if tpe.get("equal_runs") or tpe.get("batched_runs"):
        _print_tpe_targets(tpe, n_workloads)
    pruned = summary.get("tpe_hyperband", {})
    if any(s["runs"] for s in pruned.values()):
        _print_tpe_hyperband_targets(pruned, n_workloads)


def _print_resource_targets(summary: dict[str, Any], n_workloads: int) -> None:
    best = summary["best_parcv"]
    if best is None:
        print("\ntargets: no parcv method ran on every workload: not met")
        return
    ratio = summary["methods"][best]["median_ratio"]
    print(f"\nparcv's best method: {best}")
    print(f"target 1 (median x less >= 5, tied on every workload): {ratio:.2f}x, "
          f"met: {summary['target_ratio']}")  # fmt: skip
    beats = ", ".join(f"{m} {n}/{n_workloads}" for m, n in summary["beats"].items())
    print(f"target 2 (less fit time than every other tool at an equal or better outer score, "
          f"on every workload): {beats}; met: {summary['target_beats_all']}")  # fmt: skip


def _print_tpe_targets(tpe: dict[str, Any], n_workloads: int) -> None:
    print(f"\ntarget 3 (parcv-tpe at batch 1: Optuna's trials and winner in every outer fold): "
          f"{tpe['equal']}/{n_workloads} workloads; met: {tpe['target_equal']}")  # fmt: skip
    print(f"target 4 (parcv-tpe-b2 on 2 workers: wall <= 0.6x optuna's sequential, outer tied): "
          f"{tpe['fast_and_tied']}/{n_workloads} workloads (wall ratio median "
          f"{tpe['median_wall_ratio']:.2f}, max {tpe['max_wall_ratio']:.2f}; tied "
          f"{tpe['tied']}/{tpe['batched_runs']}); met: {tpe['target_fast']}")  # fmt: skip


def _print_tpe_hyperband_targets(rows: dict[str, Any], n_workloads: int) -> None:
    study = STUDIES["tpe_hyperband"]
    print()
    for number, (method, s) in enumerate(rows.items(), start=5):
        batch = study.batches[method]
        # Only batch 1 must be Optuna's study: a batch of 2 proposes other trials.
        equal = (f"; Optuna's trials and winner in every outer fold: {s['equal']}/{s['runs']}"
                 if batch == 1 else "")  # fmt: skip
        print(f"target {number} ({method}, batch {batch}: wall <= {study.bounds[method]}x "
              f"{study.reference}'s, outer tied): {s['met']}/{n_workloads} workloads (wall "
              f"ratio median {s['median_wall_ratio']:.2f}, max {s['max_wall_ratio']:.2f}; fit "
              f"ratio median {s['median_fit_ratio']:.2f}; tied {s['tied']}/{s['runs']}{equal}); "
              f"met: {s['met_everywhere']}")  # fmt: skip


# ---------------------------------------------------------------- main


def _warm_pools(ctx: Context) -> None:
    """Start joblib's and parcv's worker pools untimed: the first search would pay for it."""
    from sklearn.dummy import DummyClassifier

    X, y = np.zeros((40, 1)), np.arange(40) % 2
    grid = {"strategy": ["prior", "most_frequent"]}
    GridSearchCV(DummyClassifier(), grid, cv=2, n_jobs=ctx.n_jobs).fit(X, y)
    parcv.search(DummyClassifier(), grid, X, y, cv=2, refit=False, backend=ctx.backend)


def _warm_model(model: Model, ctx: Context) -> None:
    """Import the model's library in the workers untimed, as this process already has."""
    X, y = make_classification(60, 5, random_state=0)
    grid = {model.param: [model.values[0]]}
    GridSearchCV(model.estimator, grid, cv=4, n_jobs=ctx.n_jobs).fit(X, y)
    parcv.search(model.estimator, grid, X, y, cv=4, refit=False, backend=ctx.backend)


def _start_cluster(n_jobs: int) -> Any:
    """A paused LocalCluster of n_jobs single-threaded worker processes (tools.DaskCluster)."""
    from tools import DaskCluster

    return DaskCluster(n_jobs)


def summarize_files(paths: list[str]) -> int:
    """Print the workloads of several ``--json`` files, then the summary over all of them.

    Each run measures its own workloads side by side; the summary only takes the median of
    their ratios, as one run over all of them does.
    """
    results = []
    for path in paths:
        with open(path) as f:
            results += json.load(f)["results"]
    ran = {r["method"] for w in results for r in w["rows"]}
    methods = [m for m in METHODS if m in ran]
    for result in results:
        print_workload(result)
    print_summary(summarize(results, methods), len(results))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke run")
    parser.add_argument("--model", action="append", choices=list(MODELS), help="repeatable")
    parser.add_argument("--data", action="append", help="data set name, repeatable")
    parser.add_argument("--method", action="append", choices=METHODS[1:],
                        help="repeatable; the full grid always runs")  # fmt: skip
    parser.add_argument("--n-jobs", type=int, default=2, help="cores for every tool")
    parser.add_argument("--outer", type=int, default=3, help="outer folds")
    parser.add_argument("--patience", type=int, default=3,
                        help="parcv-early-stop's patience, in checkpoints")  # fmt: skip
    parser.add_argument("--no-dask", action="store_true", help="skip dask-ml")
    parser.add_argument("--trials", type=int, help="the TPE rows' trials per outer fold "
                        "(default 30; 12 with --quick; the TPE + Hyperband rows run one per "
                        "candidate)")  # fmt: skip
    parser.add_argument("--no-full-grid", action="store_true",
                        help="skip the reference (then no 'x less' or 'tied' columns)")  # fmt: skip
    parser.add_argument("--json", help="write every measurement to this file")
    parser.add_argument("--summarize", nargs="+", metavar="JSON",
                        help="print the tables and the summary over the workloads of these "
                        "--json files (runs nothing)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.summarize:
        return summarize_files(args.summarize)
    started = time.perf_counter()
    warnings.simplefilter("ignore")  # convergence warnings of few epochs: the same for all
    methods = [*([] if args.no_full_grid else ["full-grid"]), *(args.method or METHODS[1:])]
    data_names = args.data or list(_data_sets(args.quick))
    inner = 3 if args.quick else 5
    ctx = Context(
        outer=StratifiedKFold(2 if args.quick else args.outer, shuffle=True, random_state=0),
        inner=StratifiedKFold(inner, shuffle=True, random_state=1),
        n_jobs=args.n_jobs,
        backend=parcv.LocalBackend(n_jobs=args.n_jobs),
        patience=args.patience,
        n_trials=args.trials or (12 if args.quick else 30),
    )
    models = [MODELS[m](args.quick) for m in (args.model or list(MODELS))]
    dask_ml = importlib.util.find_spec("dask_ml") is not None
    if (
        "dask-ml-hyperband" in methods
        and dask_ml
        and not args.no_dask
        and any(m.partial_fit for m in models)
    ):
        ctx.cluster = _start_cluster(args.n_jobs)
    _warm_pools(ctx)
    results = []
    try:
        with threadpool_limits(1):
            for model in models:
                _warm_model(model, ctx)
                for data in data_names:
                    X, y = load_data(data, args.quick)
                    result = run_workload(model, data, X, y, ctx, methods)
                    result["param_values"] = f"{model.param} {model.values}"
                    print_workload(result)
                    results.append(result)
    finally:
        if ctx.cluster is not None:
            ctx.cluster.close()
    summary = summarize(results, methods)
    print_summary(summary, len(results))
    wall = time.perf_counter() - started
    print(f"\nbenchmark wall time: {wall:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"argv": sys.argv[1:] if argv is None else argv, "wall_time": wall,
                       "results": results, "summary": summary}, f, indent=1)  # fmt: skip
    failed = [r for w in results for r in w["rows"] if r["note"].startswith("failed")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
