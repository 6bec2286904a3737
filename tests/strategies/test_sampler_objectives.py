"""parcv.Sampler with several objectives against Optuna's own multi-objective study.

The reference is what an Optuna user writes: a study with the same ``directions``
and sampler (seeded), and an objective returning the tuple of the objectives' fold
means, scikit-learn's ``cross_validate`` on the same folds (a fit that fails gives a
NaN, and the trial fails). The two objectives here are scores, the R^2 and the model's
size (its non-zero coefficients, minimized): a score is a function of the folds, so the
trials can be compared exactly. A time objective is not (see ``Sampler``'s notes): it is
tested by the front Optuna's study makes of the same times.
"""

from __future__ import annotations

import functools
import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.datasets import make_regression
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import Lasso
from sklearn.model_selection import KFold, cross_validate

import parcv
from parcv.strategies.pareto import ParetoFront, nondominated, outer_objectives, pareto_front
from parcv.strategies.sampler import Sampler
from parcv.strategies.strategy import FinishedPart, FinishedRound, SearchContext, round_seed

optuna = pytest.importorskip("optuna")
State = optuna.trial.TrialState

X, y = make_regression(n_samples=48, n_features=8, n_informative=5, noise=10.0, random_state=0)
FOLDS = list(KFold(3, shuffle=True, random_state=0).split(X))
LASSO = Lasso(random_state=0)
# selection="bogus" is refused by scikit-learn's parameter check: those trials fail.
SPACE = {"alpha": stats.loguniform(1e-2, 1e2), "selection": ["cyclic", "random", "bogus"]}
OBJECTIVES = {"r2": "maximize", "size": "minimize"}
N_TRIALS = 12


def n_nonzero(estimator, X, y):
    """The model's size: its non-zero coefficients (fewer is better)."""
    return float(np.count_nonzero(estimator.coef_))


SCORING = {"r2": "r2", "size": n_nonzero}
SAMPLERS = {
    "nsga2": lambda: optuna.samplers.NSGAIISampler(seed=0, population_size=4),
    "tpe": lambda: optuna.samplers.TPESampler(seed=0, n_startup_trials=4),
}


def folds_of(params):
    """cross_validate on the fixed folds: NaN scores where the fit failed."""
    try:
        return cross_validate(clone(LASSO).set_params(**params), X, y, cv=FOLDS,
                              scoring=SCORING, error_score=np.nan)  # fmt: skip
    except ValueError:  # every fold failed (here: scikit-learn's parameter check)
        nan = np.full(len(FOLDS), math.nan)
        return {"test_r2": nan, "test_size": nan}


def objective(trial):
    params = {
        "alpha": trial.suggest_float("alpha", 1e-2, 1e2, log=True),
        "selection": trial.suggest_categorical("selection", ["cyclic", "random", "bogus"]),
    }
    found = folds_of(params)
    return found["test_r2"].mean(), found["test_size"].mean()


@functools.cache
def reference(kind):
    """Optuna's own study: the same directions and sampler, study.optimize."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # a failed trial logs a warning
    study = optuna.create_study(directions=list(OBJECTIVES.values()), sampler=SAMPLERS[kind]())
    study.optimize(objective, n_trials=N_TRIALS)
    return study


@functools.cache
def searched(kind):
    """parcv.search on the serial backend (run once per test process: several tests read it)."""
    strategy = Sampler(SAMPLERS[kind](), n_trials=N_TRIALS, objectives=OBJECTIVES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)  # the trials with selection="bogus"
        return parcv.search(LASSO, SPACE, X, y, cv=FOLDS, scoring=SCORING, refit="r2",
                            strategy=strategy, backend="serial")  # fmt: skip


@pytest.mark.parametrize("kind", sorted(SAMPLERS))
def test_batch_one_equals_optunas_multi_objective_study(kind):
    study, result = reference(kind), searched(kind)
    cv = result.cv_results_
    assert [dict(p) for p in cv["params"]] == [t.params for t in study.trials]
    states = [t.state for t in study.trials]
    assert State.FAIL in states and State.COMPLETE in states  # failing trials among them
    for row, trial in enumerate(study.trials):
        values = (cv["mean_test_r2"][row], cv["mean_test_size"][row])
        if trial.state == State.COMPLETE:
            assert values == tuple(trial.values)  # bit for bit
        else:
            assert math.isnan(values[0])
    front = pareto_front(result)
    assert list(front.trials) == [t.number for t in study.best_trials]
    np.testing.assert_array_equal(front.means, [t.values for t in study.best_trials])
    # The default rule: the front's best R^2 (the first on ties), as the search ships it.
    best = max(study.best_trials, key=lambda t: t.values[0])
    assert result.best_params_ == best.params and front.trials[front.selected] == best.number
    stds = np.column_stack([cv["std_test_r2"], cv["std_test_size"]])[list(front.rows)]
    np.testing.assert_allclose(front.ses, stds / math.sqrt(len(FOLDS) - 1), rtol=0, atol=0)


def test_a_time_objective_makes_the_front_optunas_study_makes_of_the_same_times():
    # The random sampler's trials do not depend on the values told: Optuna's are the same.
    objectives = {"score": "maximize", "fit_time": "minimize"}
    strategy = Sampler("random", n_trials=6, seed=0, objectives=objectives)
    result = parcv.search(LASSO, {"alpha": SPACE["alpha"]}, X, y, cv=FOLDS, scoring="r2",
                          strategy=strategy, backend="serial")  # fmt: skip
    cv = result.cv_results_
    study = optuna.create_study(directions=list(objectives.values()),
                                sampler=optuna.samplers.RandomSampler(seed=0))  # fmt: skip
    space = {"alpha": optuna.distributions.FloatDistribution(1e-2, 1e2, log=True)}
    for row in range(6):
        trial = study.ask(space)
        assert trial.params == cv["params"][row]
        study.tell(trial, [cv["mean_test_score"][row], cv["mean_fit_time"][row]])
    front = pareto_front(result)
    assert list(front.trials) == [t.number for t in study.best_trials]
    assert front.objectives == ("score", "fit_time") and (front.mean("fit_time") > 0).all()
    assert result.strategy["objectives"] == objectives
    shown = json.loads(json.dumps(front.to_dict()))
    assert [t["trial"] for t in shown["trials"]] == list(front.trials)
    assert shown["trials"][0]["mean"]["score"] == front.mean("score")[0]


def test_the_front_is_drawn_with_its_error_bars_and_the_shipped_trial_starred():
    import matplotlib.pyplot as plt

    from parcv.report.plots import ParetoFrontDisplay, figures

    result = searched("nsga2")
    front = pareto_front(result)
    display = ParetoFrontDisplay.from_result(result)
    ax = display.ax_
    line, _, (xbars, ybars) = ax.containers[0]  # the front's error bars
    np.testing.assert_array_equal(line.get_xdata(), front.mean("size"))
    np.testing.assert_array_equal(line.get_ydata(), front.mean("r2"))
    spans = np.array([[s[1][0] - s[0][0], s[1][1] - s[0][1]]
                      for s in (*xbars.get_segments(), *ybars.get_segments())])  # fmt: skip
    n = len(front)
    np.testing.assert_allclose(spans[:n, 0], 2 * front.se("size"), rtol=1e-12)
    np.testing.assert_allclose(spans[n:, 1], 2 * front.se("r2"), rtol=1e-12)
    star = next(x for x in ax.lines if x.get_label().startswith("selected"))
    assert star.get_label() == f"selected: trial {front.trials[front.selected]}"
    assert (star.get_xdata()[0], star.get_ydata()[0]) == tuple(front.means[front.selected][::-1])
    plt.close(display.figure_)
    assert "pareto_front.png" in figures(result)


def test_the_trials_plot_stars_the_trial_select_picked_not_the_best_r2():
    from parcv.report.plots import SamplerTrialsDisplay, figures

    strategy = Sampler(SAMPLERS["nsga2"](), n_trials=N_TRIALS, objectives=OBJECTIVES,
                       select=smallest)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        result = parcv.search(LASSO, SPACE, X, y, cv=FOLDS, scoring=SCORING, refit="r2",
                              strategy=strategy, backend="serial")  # fmt: skip
    # Optuna's front of the same trials; select ships its smallest model.
    chosen = min(reference("nsga2").best_trials, key=lambda t: t.values[1]).number
    r2 = result.cv_results_["mean_test_r2"]
    assert result.best_index_ == chosen != int(np.nanargmax(r2))  # the star tells them apart
    for ax in (figures(result)["sampler_trials.png"].axes[0],
               SamplerTrialsDisplay.from_result(result).ax_):  # fmt: skip
        star = next(x for x in ax.lines if x.get_label().startswith("selected"))
        assert (star.get_xdata()[0], star.get_ydata()[0]) == (chosen, r2[chosen])
        assert star.get_label() == (f"selected: trial {chosen}, picked by select=smallest "
                                    "from the Pareto front")  # fmt: skip


# ---------------------------------------------------------------- the proposer and the rule


def finish(part):
    """The part's rows as the engine gives them: every metric's and the times' means and stds."""
    found = [folds_of(p) for p in part.candidates]
    means = {n: np.array([f[f"test_{n}"].mean() for f in found]) for n in SCORING}
    stds = {n: np.array([f[f"test_{n}"].std() for f in found]) for n in SCORING}
    scores = np.array([f["test_r2"] for f in found])
    return FinishedPart(part, part.candidates, part.ids, scores, means["r2"],
                        np.zeros(len(found), dtype=bool), means, stds)  # fmt: skip


def drive(strategy, *, metric="r2"):
    context = SearchContext((), SPACE, LASSO, len(X), len(FOLDS), None, metric,
                            metrics=tuple(SCORING))  # fmt: skip
    proposer = strategy.start(context)
    history = []
    while (nxt := proposer.propose(history, round_seed(0, None, len(history)))) is not None:
        history.append(FinishedRound(nxt, tuple(finish(p) for p in nxt.parts)))
    return history, proposer.choose(history)


def smallest(front: ParetoFront) -> int:
    """Ship the smallest model of the front."""
    return int(np.argmin(front.mean("size")))


def test_select_ships_the_front_trial_it_names_and_batches_repeat():
    strategy = Sampler("nsga2", n_trials=8, batch=4, seed=0, objectives=OBJECTIVES,
                       select=smallest)  # fmt: skip
    history, choice = drive(strategy)
    again, choice_2 = drive(strategy)
    assert [r.round.decision for r in history] == [r.round.decision for r in again]
    assert choice == choice_2 and choice.decision == choice_2.decision
    rows = [(n, part.metric_means["r2"][i], part.metric_means["size"][i])
            for r in history for part in r.parts for i, n in enumerate(part.ids)]  # fmt: skip
    on_front = nondominated([[r2, size] for _, r2, size in rows], ["maximize", "minimize"])
    front = [rows[i] for i in np.flatnonzero(on_front)]
    assert choice.decision["front"] == [n for n, _, _ in front]
    assert choice.decision["selected"] == min(front, key=lambda r: r[2])[0]
    chosen = history[choice.round].parts[choice.part]
    assert chosen.ids[choice.row] == choice.decision["selected"]
    config = strategy.config()
    assert config["select"] == "smallest" and config["select_token"]
    assert config["objectives"] == OBJECTIVES and not strategy.races


def test_a_select_that_names_no_front_trial_is_refused():
    strategy = Sampler("random", n_trials=3, seed=0, objectives=OBJECTIVES, select=lambda f: 99)
    with pytest.raises(ValueError, match=r"select must return the place in the front.*99"):
        drive(strategy)


def test_nested_cv_reports_the_outer_score_of_each_objective():
    objectives = {"r2": "maximize", "fit_time": "minimize"}
    strategy = Sampler("random", n_trials=3, seed=0, objectives=objectives)
    outer = list(KFold(3, shuffle=True, random_state=1).split(X))
    result = parcv.nested_cv(LASSO, {"alpha": SPACE["alpha"]}, X, y, outer=outer, inner=3,
                             scoring=SCORING, refit="r2", strategy=strategy,
                             backend="serial")  # fmt: skip
    found = outer_objectives(result)
    assert list(found) == ["r2", "fit_time"]
    np.testing.assert_array_equal(found["r2"], result.outer_scores["r2"])
    assert (found["fit_time"] > 0).all() and found["fit_time"].shape == (3,)
    for o, (train, test) in enumerate(outer):  # each fold's choice, refitted and scored
        chosen = result.inner[o].best_params_
        fitted = clone(LASSO).set_params(**chosen).fit(X[train], y[train])
        assert found["r2"][o] == fitted.score(X[test], y[test])
        front = pareto_front(result.inner[o])
        assert front.selected is not None and chosen == front.params[front.selected]
    assert len(pareto_front(result)) >= 1  # the search on all data


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"objectives": {"r2": "maximize"}}, ValueError, "two or more objectives"),
        ({"objectives": {"r2": "max", "size": "minimize"}}, ValueError,
         r"objectives\['r2'\] must be 'maximize' or 'minimize'; got 'max'"),
        ({"objectives": ["r2", "size"]}, TypeError, "objectives must be a dict"),
        ({"select": smallest}, ValueError, "select= picks a trial of the Pareto front"),
        ({"objectives": OBJECTIVES, "pruner": "median",
          "resource": parcv.Iterations("max_iter", up_to=4)}, ValueError,
         "Optuna prunes no multi-objective study"),
    ],
)  # fmt: skip
def test_bad_objectives_are_refused_before_any_trial(kwargs, error, match):
    if kwargs.get("pruner") == "median":
        kwargs = {**kwargs, "pruner": optuna.pruners.MedianPruner()}
    with pytest.raises(error, match=match):
        Sampler("tpe", n_trials=4, seed=0, **kwargs)


@pytest.mark.parametrize(
    ("sampler", "objectives", "metric", "match"),
    [
        ("tpe", {"r2": "maximize", "mse": "maximize"}, "r2",
         r"objectives names \['mse'\], which the search does not score"),
        ("tpe", {"size": "minimize", "fit_time": "minimize"}, "r2",
         "the refit metric 'r2' is not among objectives"),
        ("cmaes", OBJECTIVES, "r2", "sampler=CmaEsSampler cannot search several objectives"),
    ],
)  # fmt: skip
def test_objectives_the_search_cannot_run_are_refused_when_it_starts(
    sampler, objectives, metric, match
):
    context = SearchContext((), {"alpha": SPACE["alpha"]}, LASSO, len(X), 3, None, metric,
                            metrics=tuple(SCORING))  # fmt: skip
    with pytest.raises(ValueError, match=match):
        Sampler(sampler, n_trials=4, seed=0, objectives=objectives).start(context)


def test_racing_is_refused_with_several_objectives():
    strategy = Sampler("random", n_trials=3, seed=0, objectives=OBJECTIVES)
    with pytest.raises(ValueError, match="sampler does not combine with racing"):
        parcv.search(LASSO, SPACE, X, y, cv=FOLDS, scoring=SCORING, refit="r2",
                     strategy=strategy, racing=parcv.Racing(), backend="serial")  # fmt: skip
