"""TPE with Hyperband pruning: Optuna's own study against parcv's Sampler(pruner=...), nested.

One workload: ``HistGradientBoostingClassifier`` on a synthetic classification problem,
its ``max_iter`` the iteration path (checkpoints every ``--every`` up to ``--up-to``), a
space of learning rate, leaves and L2 penalty. Each outer fold (``StratifiedKFold``, seed
0) runs one study on its training rows, 3-fold inner CV, and its winner is refitted there
and scored (accuracy) on the outer-test rows. Rows:

- ``optuna-tpe-hyperband``: Optuna's ``study.optimize`` with ``TPESampler(seed=0)`` and
  ``HyperbandPruner`` (study name ``"parcv"``, as parcv names its studies: Hyperband draws
  a trial's bracket from it); the objective grows each fold's model by warm start from one
  checkpoint to the next, reports the mean inner accuracy with the count as the step and
  raises ``TrialPruned`` when told; a complete trial returns its last checkpoint's mean.
  One trial at a time, in this process.
- ``parcv-tpe-hyperband`` / ``parcv-tpe-hyperband-b2``: ``parcv.nested_cv(...,
  strategy=parcv.Sampler("tpe", seed=0, pruner=HyperbandPruner(), resource=Iterations(
  ...), batch=1 / 2))`` on the local backend (``--n-jobs`` workers).

Columns: ``fit s`` the summed fit time of the inner searches (parcv: its records' fit
times; Optuna: each fold's growth, timed), ``wall s``, ``outer`` the mean outer accuracy,
``same`` (batch 1) the outer folds whose trials (parameters, states, intermediate values
and values) equal Optuna's. Issue 51's targets (computed, not asserted): batch 1 wall
<= 0.7x Optuna's and batch 2 <= 0.6x, at an outer score tied within one paired standard
error.

Optuna's study, the study record compared and the tie rule are ``iterations.py``'s
(:func:`iterations.optuna_pruned_study`), whose ``optuna-tpe-hyperband`` and
``parcv-tpe-hyperband`` rows run the same comparison on its models and data sets, with
the space as lists; this one has a continuous space.

    python scripts/bench/pruning.py              # ~10 min on 2 cores
    python scripts/bench/pruning.py --quick      # a smoke run with tiny sizes
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import _setup  # noqa: F401  (pins BLAS/OpenMP threads to 1 before numpy is imported)
import numpy as np
import optuna
from iterations import hyperband, optuna_pruned_study, study_trials, tied
from scipy.stats import loguniform, uniform
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

import parcv
from parcv.strategies.sampler import rebuild_pruned_study

METHODS = ["optuna-tpe-hyperband", "parcv-tpe-hyperband", "parcv-tpe-hyperband-b2"]
SPACE = {"learning_rate": loguniform(0.01, 0.5), "max_leaf_nodes": [7, 15, 31],
         "l2_regularization": uniform(0.0, 1.0)}  # fmt: skip


def suggest(trial: Any) -> dict[str, Any]:
    return {
        "learning_rate": trial.suggest_float("learning_rate", 0.01, 0.5, log=True),
        "max_leaf_nodes": trial.suggest_categorical("max_leaf_nodes", [7, 15, 31]),
        "l2_regularization": trial.suggest_float("l2_regularization", 0.0, 1.0),
    }


def run(X: Any, y: Any, path: parcv.Iterations, n_trials: int, n_jobs: int) -> dict[str, Any]:
    outer = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    model = HistGradientBoostingClassifier(random_state=0, early_stopping=False)
    rows: dict[str, dict[str, Any]] = {}
    studies, fit, outer_scores = [], 0.0, []
    began = time.perf_counter()
    for train, test in outer:
        folds = list(StratifiedKFold(3, shuffle=True, random_state=1).split(X[train], y[train]))
        study, spent = optuna_pruned_study(model, suggest, X[train], y[train], folds, path=path,
                                           grown_by="warm_start", n_trials=n_trials)  # fmt: skip
        studies.append(study)
        fit += spent
        best = {**study.best_params, "max_iter": path.up_to}
        refit = clone(model).set_params(**best).fit(X[train], y[train])
        outer_scores.append(float(refit.score(X[test], y[test])))
    rows["optuna-tpe-hyperband"] = {"fit": fit, "wall": time.perf_counter() - began,
                                    "outer": outer_scores}  # fmt: skip
    # The local pool's start, untimed: the first parcv row would pay for it.
    parcv.cross_validate(model, X, y, cv=2, backend="local", n_jobs=n_jobs)
    for method, batch in (("parcv-tpe-hyperband", 1), ("parcv-tpe-hyperband-b2", 2)):
        strategy = parcv.Sampler("tpe", n_trials=n_trials, seed=0, batch=batch,
                                 pruner=hyperband(path), resource=path)  # fmt: skip
        began = time.perf_counter()
        result = parcv.nested_cv(model, SPACE, X, y, outer=StratifiedKFold(3, shuffle=True,
                                 random_state=0), inner=StratifiedKFold(3, shuffle=True,
                                 random_state=1), scoring="accuracy", strategy=strategy,
                                 refit=False, backend="local", n_jobs=n_jobs)  # fmt: skip
        wall = time.perf_counter() - began
        fits = sum(float(np.sum(s.cv_results_["mean_fit_time"])) * 3 for s in result.inner)
        same = sum(study_trials(rebuild_pruned_study(s, space=SPACE)) == study_trials(study)
                   for s, study in zip(result.inner, studies, strict=True))  # fmt: skip
        rows[method] = {"fit": fits, "wall": wall,
                        "outer": [float(v) for v in result.outer_scores["score"]],
                        "same": same if batch == 1 else None}  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    n, up_to, every, n_trials = (300, 9, 3, 6) if args.quick else (4000, 243, 9, 40)
    X, y = make_classification(n_samples=n, n_features=20, n_informative=8, random_state=0)
    path = parcv.Iterations("max_iter", up_to=up_to, every=every)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        rows = run(X, y, path, n_trials, args.n_jobs)
    reference = rows["optuna-tpe-hyperband"]
    print(f"== {n} rows, max_iter up to {up_to} every {every}, {n_trials} trials per outer fold")
    print(f"{'method':<24} {'fit s':>8} {'wall s':>8} {'x wall':>7} {'outer':>7} {'tied':>5} same")
    for method in METHODS:
        r = rows[method]
        ratio = r["wall"] / reference["wall"]
        tie = "yes" if tied(r["outer"], reference["outer"]) else "no"
        same = "-" if r.get("same") is None else f"{r['same']}/3"
        print(f"{method:<24} {r['fit']:>8.2f} {r['wall']:>8.2f} {ratio:>7.2f} "
              f"{np.mean(r['outer']):>7.4f} {tie:>5} {same}")  # fmt: skip
    b1, b2 = (rows[m]["wall"] / reference["wall"] for m in METHODS[1:])
    print(f"targets: batch 1 wall <= 0.7x optuna's: {b1:.2f}x; batch 2 <= 0.6x: {b2:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0 if rows["parcv-tpe-hyperband"]["same"] == 3 else 1


if __name__ == "__main__":
    sys.exit(main())
