"""parcv.Sampler with a pruner against Optuna's own study with that pruner.

The reference is what an Optuna user writes: an objective that, for each
checkpoint of the iteration path in turn, fits every fold at that count,
reports the mean over the folds with the count as the step, and raises
``optuna.TrialPruned`` when ``trial.should_prune()`` says so; ``study.optimize``
runs it with the same sampler (seeded), pruner and study name. At batch 1 the
trials, their states, intermediate values and values must be the same.

A tiny driver loop stands in for the engine here (as in ``test_sampler.py``);
``test_sampler_pruning_runs.py`` runs ``parcv.search`` and ``nested_cv`` itself.
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from contextlib import closing
from pathlib import Path

import numpy as np
import psutil
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.datasets import make_regression
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import KFold, cross_val_score

import parcv
from parcv.results.compare import best_vs_rest_columns
from parcv.strategies.rungs import TrialWindows, prune_windows
from parcv.strategies.sampler import Sampler, rebuild_pruned_study
from parcv.strategies.strategy import (
    FinishedPart,
    FinishedRound,
    SearchContext,
    round_seed,
)

optuna = pytest.importorskip("optuna")
State = optuna.trial.TrialState

X, y = make_regression(n_samples=48, n_features=4, noise=10.0, random_state=0)
FOLDS = list(KFold(3, shuffle=True, random_state=0).split(X))
HGB = HistGradientBoostingRegressor(min_samples_leaf=4, random_state=0)
PATH = parcv.Iterations("max_iter", up_to=8, every=1)
# max_leaf_nodes=1 is refused by scikit-learn's parameter check: those trials fail.
SPACE = {"learning_rate": stats.loguniform(0.01, 1.0), "max_leaf_nodes": [1, 3, 7, 15]}


def make_objective(X, y, folds, estimator=HGB, path=PATH, suggest=None):
    """What an Optuna user writes: each checkpoint's fold mean reported, pruned when told."""

    def objective(trial):
        params = (suggest or suggest_hgb)(trial)
        mean = math.nan
        for count in path.all_checkpoints:
            model = clone(estimator).set_params(**{path.param: count}, **params)
            mean = cross_val_score(model, X, y, cv=folds, error_score="raise").mean()
            trial.report(mean, count)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return mean

    return objective


def suggest_hgb(trial):
    return {
        "learning_rate": trial.suggest_float("learning_rate", 0.01, 1.0, log=True),
        "max_leaf_nodes": trial.suggest_categorical("max_leaf_nodes", [1, 3, 7, 15]),
    }


PRUNERS = {
    "hyperband": lambda: optuna.pruners.HyperbandPruner(min_resource=1, max_resource=8,
                                                        reduction_factor=2),
    "successive_halving": lambda: optuna.pruners.SuccessiveHalvingPruner(
        min_resource=1, reduction_factor=2),
    "median": lambda: optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=1),
}  # fmt: skip
N_TRIALS = 8


def tpe():
    return optuna.samplers.TPESampler(seed=0, n_startup_trials=4)


def optimize(pruner, objective, n_trials=N_TRIALS, *, study_name="parcv"):
    """Optuna's own study: the same sampler, pruner and study name, study.optimize."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # a failed trial logs a warning
    study = optuna.create_study(direction="maximize", sampler=tpe(), pruner=PRUNERS[pruner](),
                                study_name=study_name)  # fmt: skip
    study.optimize(objective, n_trials=n_trials, catch=(ValueError,))
    return study


@functools.cache
def reference(pruner):
    """The study on all of X (computed once per test process: every test reads it)."""
    return optimize(pruner, make_objective(X, y, FOLDS))


def fold_scores(model):
    """Each fold's test score; NaN where the fit raised (as error_score=np.nan records it)."""
    out = []
    for train, test in FOLDS:
        try:
            fitted = clone(model).fit(X[train], y[train])
        except ValueError:
            out.append(math.nan)
            continue
        out.append(fitted.score(X[test], y[test]))
    return out


def finish(part, estimator):
    """Score every (trial, checkpoint) of a window part, as the engine's path units do."""
    params, ids, scores = [], [], []
    for number, candidate in zip(part.ids, part.candidates, strict=True):
        for count in part.window:
            row = {**candidate, PATH.param: count}
            scores.append(fold_scores(clone(estimator).set_params(**row)))
            params.append(row)
            ids.append(number)
    scores = np.array(scores)
    means = scores.mean(axis=1)
    return FinishedPart(part, tuple(params), tuple(ids), scores, means,
                        np.zeros(len(ids), dtype=bool))  # fmt: skip


def drive(strategy, *, entropy=0, key=None):
    context = SearchContext((), SPACE, HGB, len(X), len(FOLDS), None, "score")
    proposer = strategy.start(context)
    history = []
    while (nxt := proposer.propose(history, round_seed(entropy, key, len(history)))) is not None:
        history.append(FinishedRound(nxt, tuple(finish(p, HGB) for p in nxt.parts)))
    return proposer, history, proposer.choose(history)


def assert_same_study(parcv_study, study):
    ours, theirs = parcv_study.trials, study.trials
    assert [t.number for t in ours] == [t.number for t in theirs]
    for a, b in zip(ours, theirs, strict=True):
        assert a.params == b.params
        assert a.state == b.state, (a.number, a.state, b.state)
        assert a.intermediate_values == b.intermediate_values  # bit for bit
        assert a.values == b.values or (a.value is None and b.value is None)


@pytest.mark.parametrize("pruner", sorted(PRUNERS))
def test_proposer_at_batch_one_equals_optuna_study_optimize(pruner):
    study = reference(pruner)
    assert {t.state for t in study.trials} == {State.COMPLETE, State.PRUNED, State.FAIL}
    strategy = Sampler(tpe(), n_trials=N_TRIALS, pruner=PRUNERS[pruner](), resource=PATH)
    proposer, history, choice = drive(strategy)
    assert_same_study(proposer._study, study)
    chosen = history[choice.round].parts[choice.part].params[choice.row]
    assert chosen == {**study.best_trial.params, "max_iter": PATH.up_to}


def test_windows_double_from_the_first_checkpoint():
    assert prune_windows(parcv.Iterations("n", up_to=8)) == [(1,), (2,), (3, 4), (5, 6, 7, 8)]


# ---------------------------------------------------------------- through the engine


def pruned(pruner, **options):
    return Sampler(tpe(), n_trials=N_TRIALS, pruner=PRUNERS[pruner](), resource=PATH, **options)


def search(strategy, **run):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)  # the trials with max_leaf_nodes=1
        return parcv.search(HGB, SPACE, X, y, cv=FOLDS, strategy=strategy, **run)


@functools.cache
def searched(pruner):
    """parcv.search on the serial backend (run once per test process: several tests read it)."""
    return search(pruned(pruner), backend="serial")


@pytest.mark.parametrize(
    ("pruner", "backend"),
    [("hyperband", "serial"), ("successive_halving", "serial"), ("median", "serial"),
     pytest.param("hyperband", "local", marks=pytest.mark.slow)],
)  # fmt: skip
def test_search_equals_optuna_study_optimize_with_the_pruner(pruner, backend):
    if backend == "serial":
        result = searched(pruner)
    else:
        result = search(pruned(pruner), backend=backend, n_jobs=2)
    study = reference(pruner)
    assert_same_study(rebuild_pruned_study(result, space=SPACE), study)
    assert result.best_params_ == {**study.best_trial.params, "max_iter": PATH.up_to}
    assert result.best_score_ == study.best_value
    # Every row of a trial says how it ended: pruned trials are counted from the table.
    cv = result.cv_results_
    pruned_trials = set(cv["trial"][cv["trial_state"] == "PRUNED"].tolist())
    assert pruned_trials == {t.number for t in study.trials if t.state == State.PRUNED}


def test_no_checkpoint_is_scored_past_a_rung_where_the_trial_was_pruned():
    # Rungs 1 and 3 of 8 (reduction factor 3), where doubling windows, (3, 4), would score
    # step 4 of a trial pruned at 3. The windows end at the rungs, where successive halving
    # decides: every row scored is reported, but those after a failed fold (the trial fails
    # there, mid-window). The study is still Optuna's.
    def sh():
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(direction="maximize", sampler=tpe(), pruner=sh(),
                                study_name="parcv")  # fmt: skip
    study.optimize(make_objective(X, y, FOLDS), n_trials=N_TRIALS, catch=(ValueError,))
    assert 3 in {t.last_step for t in study.trials if t.state == State.PRUNED}
    result = search(Sampler(tpe(), n_trials=N_TRIALS, pruner=sh(), resource=PATH),
                    backend="serial")  # fmt: skip
    assert_same_study(rebuild_pruned_study(result, space=SPACE), study)
    cv = result.cv_results_
    unreported = ~np.asarray(cv["reported"], dtype=bool)
    assert set(np.asarray(cv["trial_state"])[unreported]) <= {"FAIL"}


def test_nested_cv_runs_one_study_per_outer_fold_each_equal_to_optuna():
    outer, inner = KFold(2, shuffle=True, random_state=1), KFold(3, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        result = parcv.nested_cv(HGB, SPACE, X, y, outer=outer, inner=inner, refit=False,
                                 strategy=pruned("median"), backend="serial")  # fmt: skip
    for o, (train, _) in enumerate(outer.split(X)):
        folds = list(inner.split(X[train]))
        study = optimize("median", make_objective(X[train], y[train], folds))
        assert_same_study(rebuild_pruned_study(result.inner[o], space=SPACE), study)
        assert result.chosen_params[o] == {**study.best_trial.params, "max_iter": PATH.up_to}


def test_a_resumed_run_equals_the_uninterrupted_one(tmp_path):
    from tests.strategy_matrix import _StopAfter

    store = tmp_path / "s.sqlite"
    with _StopAfter(20).armed(), pytest.raises(KeyboardInterrupt):
        search(pruned("hyperband"), backend="serial", store=store)
    assert parcv.load(store, partial=True).n_done > 0  # a part of the run is stored
    resumed = search(pruned("hyperband"), backend="serial", store=store, resume=True)
    assert_same_study(rebuild_pruned_study(resumed, space=SPACE), reference("hyperband"))
    # Read back from the store, the trials' states are those the run told.
    loaded = parcv.load(store)
    assert_same_study(rebuild_pruned_study(loaded, space=SPACE), reference("hyperband"))
    for column in ("trial", "trial_state", "reported", "mean_test_score"):
        np.testing.assert_array_equal(loaded.cv_results_[column], resumed.cv_results_[column])


@pytest.mark.parametrize("batch", [2, 3])
def test_batches_propose_the_same_on_every_run(batch):
    runs = [drive(pruned("hyperband", batch=batch)) for _ in range(2)]
    (first, history, choice), (second, again, choice_2) = runs
    assert [r.round for r in history] == [r.round for r in again]
    assert choice == choice_2
    # Up to `batch` trials run side by side, every trial of the study ends in one state.
    assert max(sum(len(p.ids) for p in r.round.parts) for r in history) == batch
    assert len(first._study.trials) == N_TRIALS
    assert {t.state for t in first._study.trials} <= {State.COMPLETE, State.PRUNED, State.FAIL}
    assert [t.intermediate_values for t in first._study.trials] == [
        t.intermediate_values for t in second._study.trials
    ]


@pytest.mark.slow
def test_a_batch_runs_the_same_trials_on_every_backend():
    serial, local = (search(pruned("median", batch=3), backend=b, **o)
                     for b, o in (("serial", {}), ("local", {"n_jobs": 2})))  # fmt: skip
    for column in ("round", "trial", "trial_state", "reported", "mean_test_score"):
        np.testing.assert_array_equal(serial.cv_results_[column], local.cv_results_[column])
    assert serial.cv_results_["params"] == local.cv_results_["params"]
    assert serial.best_params_ == local.best_params_


def test_a_fresh_proposer_handed_the_history_replays_it():
    strategy = pruned("successive_halving", batch=2)
    _, history, choice = drive(strategy)
    context = SearchContext((), SPACE, HGB, len(X), len(FOLDS), None, "score")
    fresh = strategy.start(context)
    assert fresh.propose(history, round_seed(0, None, len(history))) is None
    assert fresh.choose(history) == choice
    halfway = strategy.start(context)
    assert halfway.propose(history[:3], round_seed(0, None, 3)) == history[3].round
    # Another sampler's history (the same trial numbers, other parameters) is refused.
    other = Sampler(optuna.samplers.TPESampler(seed=1, n_startup_trials=4), n_trials=N_TRIALS,
                    batch=2, pruner=PRUNERS["successive_halving"](), resource=PATH)  # fmt: skip
    with pytest.raises(ValueError, match="is not the round this sampler proposes"):
        other.start(context).propose(history, round_seed(0, None, len(history)))


# ---------------------------------------------------------------- bad input, before any fit


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"pruner": "median", "resource": PATH}, TypeError,
         r"pruner must be an Optuna pruner instance; got 'median'.*MedianPruner\(\)"),
        ({"pruner": object(), "resource": PATH}, TypeError, "pruner must be an Optuna pruner"),
        ({"pruner": optuna.pruners.MedianPruner()}, ValueError,
         r"pruner=MedianPruner\(\) stops a trial.*got resource=None.*resource=parcv.Iterations"),
        ({"resource": PATH}, ValueError, r"without pruner=.*NopPruner\(\)"),
        ({"pruner": optuna.pruners.MedianPruner(), "resource": "n_samples"}, ValueError,
         r"resource='n_samples'.*over rows are not supported.*parcv.Halving"),
        ({"pruner": optuna.pruners.MedianPruner(), "resource": 100}, TypeError,
         "resource must be a parcv.Iterations; got 100"),
        ({"pruner": optuna.pruners.MedianPruner(),
          "resource": parcv.Iterations("max_iter", 8, patience=2)}, ValueError,
         "early stopping and pruner=MedianPruner"),
        ({"pruner": optuna.pruners.MedianPruner(), "resource": PATH, "study_name": ""},
         TypeError, "study_name must be a non-empty str"),
    ],
)  # fmt: skip
def test_bad_pruning_arguments_are_refused_when_the_sampler_is_made(kwargs, error, match):
    with pytest.raises(error, match=match):
        Sampler("tpe", n_trials=4, seed=0, **kwargs)


def test_racing_and_a_path_parameter_in_the_space_are_refused_before_any_fit(tmp_path):
    with pytest.raises(ValueError, match=r"space names 'max_iter'.*Remove it from the space"):
        parcv.search(HGB, {**SPACE, "max_iter": [4, 8]}, X, y, cv=FOLDS,
                     strategy=pruned("median"), backend="serial",
                     store=tmp_path / "a.sqlite")  # fmt: skip
    with pytest.raises(ValueError, match=r"Iterations\('n_estimators', ...\) names a parameter"):
        parcv.search(HGB, SPACE, X, y, cv=FOLDS, backend="serial",
                     strategy=Sampler(tpe(), n_trials=2, pruner=PRUNERS["median"](),
                                      resource=parcv.Iterations("n_estimators", 8)),
                     store=tmp_path / "c.sqlite")  # fmt: skip
    with pytest.raises(ValueError, match="racing"):
        parcv.search(HGB, SPACE, X, y, cv=FOLDS, strategy=pruned("median"), backend="serial",
                     racing=parcv.Racing(), store=tmp_path / "b.sqlite")  # fmt: skip
    assert not any(parcv.load(p, partial=True).n_done for p in tmp_path.glob("*.sqlite")
                   if p.stat().st_size)  # fmt: skip


def test_a_search_with_every_trial_pruned_says_what_to_loosen():
    # A threshold no trial reaches at the first checkpoint: every trial is pruned there.
    strategy = Sampler(tpe(), n_trials=3, pruner=optuna.pruners.ThresholdPruner(lower=2.0),
                       resource=PATH)  # fmt: skip
    with pytest.raises(ValueError, match=r"every trial was pruned or failed \(2 pruned, 1 failed"):
        drive(strategy)


# ---------------------------------------------------------------- the shortcuts


@pytest.mark.parametrize("pruner", ["hyperband", "median"])
def test_a_pruned_trial_grows_each_fold_once_to_its_last_window(monkeypatch, pruner):
    # HistGradientBoosting: the first window is fitted from scratch (its other checkpoints
    # read from the stages), and each next window continues the last one's fits by one warm
    # start to the window's end (exact, says the shortcut table), adding only its new
    # iterations, its checkpoints read from the stages too. A trial pruned at step t grew no
    # further than its window's end (the median pruner stops a trial at step 3, inside the
    # doubling window (3, 4); Hyperband's windows end at its rungs, where it decides).
    study = reference(pruner)  # before fit is counted: the reference fits too
    fitted = []
    real = HistGradientBoostingRegressor.fit

    def fit(self, *args, **kwargs):
        fitted.append((self.max_iter, self.warm_start))  # warm: a continued fit
        return real(self, *args, **kwargs)

    monkeypatch.setattr(HistGradientBoostingRegressor, "fit", fit)
    search(pruned(pruner), backend="serial", refit=False)
    expected = []
    for trial in study.trials:  # its windows end at its rungs (Hyperband), or double (median)
        windows = TrialWindows(PRUNERS[pruner](), "parcv", PATH).of(trial.number)
        last = max(trial.intermediate_values, default=PATH.all_checkpoints[0])
        reached = next(w for w, window in enumerate(windows) if last in window)
        expected += [(windows[0][-1], False)] * len(FOLDS)  # from scratch
        expected += [(window[-1], True) for window in windows[1 : reached + 1] for _ in FOLDS]
    assert sorted(fitted) == sorted(expected)


def suggest_xgb(trial):
    return {
        "learning_rate": trial.suggest_float("learning_rate", 0.05, 1.0, log=True),
        # max_depth=-1 is refused by xgboost: those trials fail.
        "max_depth": trial.suggest_categorical("max_depth", [-1, 1, 2, 3]),
    }


def test_xgboost_booster_paths_equal_optuna_study_optimize():
    xgboost = pytest.importorskip("xgboost")
    model = xgboost.XGBRegressor(n_jobs=1, random_state=0)
    path = parcv.Iterations("n_estimators", up_to=8)
    space = {"learning_rate": stats.loguniform(0.05, 1.0), "max_depth": [-1, 1, 2, 3]}
    study = optimize("hyperband", make_objective(X, y, FOLDS, model, path, suggest_xgb))
    assert {t.state for t in study.trials} == {State.COMPLETE, State.PRUNED, State.FAIL}
    strategy = Sampler(tpe(), n_trials=N_TRIALS, pruner=PRUNERS["hyperband"](), resource=path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        result = parcv.search(model, space, X, y, cv=FOLDS, strategy=strategy, backend="serial")
    assert_same_study(rebuild_pruned_study(result, space=space), study)


# ---------------------------------------------------------------- the consumers


def test_the_report_counts_pruned_trials_and_plots_their_intermediate_values():
    from parcv.report.plots import figures
    from parcv.report.text import RunInfo, render_report

    result, study = searched("hyperband"), reference("hyperband")
    counts = {s: sum(t.state == s for t in study.trials) for s in State}
    text = render_report(result, RunInfo("pruned"))
    row = (f"| all data | {N_TRIALS} | {counts[State.COMPLETE]} | {counts[State.PRUNED]} | "
           f"{counts[State.FAIL]} |")  # fmt: skip
    assert "## Pruned trials" in text and row in text
    drawn = figures(result)
    title = drawn["intermediate_values.png"].axes[0].get_title()
    assert title == f"Intermediate values: {N_TRIALS} trials, {counts[State.PRUNED]} pruned"
    # A point per complete trial (its value), not one per (trial, checkpoint) row.
    points = drawn["sampler_trials.png"].axes[0].lines[1].get_xdata()  # [0]: the best so far
    assert list(points) == [t.number for t in study.trials if t.state == State.COMPLETE]


def test_comparisons_read_the_complete_trials_each_at_its_value():
    from parcv.report.plots import PairedDifferencesDisplay

    result, study = searched("hyperband"), reference("hyperband")
    rows = [dict(p) for p in result.cv_results_["params"]]

    def row(trial):  # a trial's value is its mean at the last checkpoint
        return rows.index({**trial.params, PATH.param: PATH.up_to})

    best = study.best_trial
    others = [t for t in study.trials if t.state == State.COMPLETE and t.number != best.number]
    table = result.best_vs_rest()
    assert table.best == result.candidates[row(best)].label
    assert [r.name_b for r in table] == [result.candidates[row(t)].label for t in others]
    for r, trial in zip(table, others, strict=True):
        assert math.isclose(r.mean_difference, best.value - trial.value, rel_tol=1e-12)
    n = {s: sum(t.state == s for t in study.trials) for s in State}
    assert f"{n[State.COMPLETE]} compared" in table.left_out
    assert f"{n[State.PRUNED]} pruned and {n[State.FAIL]} failed trials left out" in table.left_out
    pairs = result.compare_all()
    assert len(pairs) == math.comb(len(others) + 1, 2) and pairs.left_out == table.left_out
    assert table.left_out in result.to_text()
    at_once = best_vs_rest_columns(result)  # results.json's columns, made without the table
    assert (at_once["best"], at_once["left_out"]) == (table.best, table.left_out)
    assert at_once["columns"] == table.columns(list(at_once["columns"]))
    runner_up = max(others, key=lambda t: t.value)
    assert PairedDifferencesDisplay(result).pair == (row(best), row(runner_up))


# The hyperband reference as a spec: the same data (a table of X and y), folds and sampler.
SPEC = """
[data]
source = "data.csv"
target = "y"
[estimator]
class = "sklearn.ensemble.HistGradientBoostingRegressor"
params = { min_samples_leaf = 4, random_state = 0 }
[space]
learning_rate = { loguniform = [0.01, 1.0] }
max_leaf_nodes = [1, 3, 7, 15]
[search]
sampler = { kind = "tpe", seed = 0, n_trials = 8, n_startup_trials = 4, pruner = { kind = \
"hyperband", min_resource = 1, max_resource = 8, reduction_factor = 2 }, resource = { param = \
"max_iter", up_to = 8 } }
[cv]
cv = { kind = "kfold", n_splits = 3, shuffle = true, random_state = 0 }
[report]
plots = false
"""


def test_inspect_and_the_summaries_count_the_trials_as_optunas_study(tmp_path):
    from parcv.cli import main

    np.savetxt(tmp_path / "data.csv", np.column_stack([X, y]), delimiter=",", comments="",
               header="x0,x1,x2,x3,y", fmt="%.17g")  # fmt: skip
    spec, out = tmp_path / "spec.toml", tmp_path / "run"
    spec.write_text(SPEC)
    said, shown = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said), \
            warnings.catch_warnings():  # fmt: skip
        warnings.simplefilter("ignore", FitFailedWarning)  # the trials with max_leaf_nodes=1
        assert main(["run", str(spec), "--out", str(out), "--backend", "serial"]) == 0
    with contextlib.redirect_stdout(shown):
        assert main(["inspect", str(spec), "--out", str(out)]) == 0
    study = reference("hyperband")
    n = {s: sum(t.state == s for t in study.trials) for s in State}
    counts = (f"{N_TRIALS} trials: {n[State.COMPLETE]} complete, {n[State.PRUNED]} pruned, "
              f"{n[State.FAIL]} failed")  # fmt: skip
    assert f"\n             all data: {counts}\n" in shown.getvalue()
    line = f"trials of the search on all data: {counts}"
    assert line in said.getvalue()  # the run's closing summary
    loaded = parcv.load(out / "store.sqlite")
    assert line in repr(loaded) and line in loaded.to_text()


def test_a_spec_table_names_the_pruner_and_the_path():
    strategy = Sampler.from_config({
        "kind": "tpe", "seed": 0, "n_trials": 8, "n_startup_trials": 4,
        "pruner": {"kind": "hyperband", "min_resource": 1, "max_resource": 8,
                   "reduction_factor": 2},
        "resource": {"param": "max_iter", "up_to": 8},
    })  # fmt: skip
    by_hand = Sampler("tpe", n_trials=8, seed=0, options={"n_startup_trials": 4},
                      pruner=PRUNERS["hyperband"](), resource=PATH)  # fmt: skip
    assert strategy.config() == by_hand.config()  # tokens of the sampler and the pruner
    assert strategy.config()["pruner"] == "HyperbandPruner"
    # Another pruner setting is another strategy: a resume does not replay the old rounds.
    other = Sampler("tpe", n_trials=8, seed=0, options={"n_startup_trials": 4},
                    pruner=optuna.pruners.HyperbandPruner(min_resource=1, max_resource=16,
                                                          reduction_factor=2),
                    resource=PATH)  # fmt: skip
    assert other.config()["pruner_token"] != by_hand.config()["pruner_token"]
    with pytest.raises(ValueError, match=r"pruner.kind must be one of \['hyperband'"):
        Sampler.from_config({"kind": "tpe", "n_trials": 4, "pruner": {"kind": "asha"},
                             "resource": {"param": "max_iter", "up_to": 8}})  # fmt: skip
    with pytest.raises(ValueError, match=r"pruner options \['warmup'\] are not arguments"):
        Sampler.from_config({"kind": "tpe", "n_trials": 4,
                             "pruner": {"kind": "median", "warmup": 3},
                             "resource": {"param": "max_iter", "up_to": 8}})  # fmt: skip


def slow_r2(estimator, X_test, y_test):
    """The default score (R²), a little slow: a run is still going when it is killed."""
    time.sleep(0.02)
    return estimator.score(X_test, y_test)


RUN = """
import sys, warnings
from tests.strategies.test_sampler_pruning import *
warnings.simplefilter("ignore")
parcv.search(HGB, SPACE, X, y, cv=FOLDS, strategy=pruned("hyperband"), scoring=slow_r2,
             backend="local", n_jobs=2, store=sys.argv[1], resume=True)
"""


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_to_optunas_study(tmp_path):
    store = tmp_path / "s.sqlite"
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-c", RUN, str(store)], cwd=root, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 120
    while parcv_units(store) < 30:  # a few trials' windows are stored
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended first"
        time.sleep(0.05)
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    psutil.wait_procs(children, timeout=30)
    assert parcv.load(store, partial=True).n_done > 0
    resumed = subprocess.run([sys.executable, "-c", RUN, str(store)], cwd=root, env=env,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert_same_study(rebuild_pruned_study(parcv.load(store), space=SPACE), reference("hyperband"))


def parcv_units(store):
    """The records a run has committed so far (0 before its store exists)."""
    if not store.exists():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM records").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
