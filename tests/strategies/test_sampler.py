"""parcv.Sampler against Optuna's own study: the same trials, values and best trial.

A tiny driver loop stands in for the engine: it hands the proposer its finished
rounds, scoring each proposed candidate with scikit-learn's ``cross_val_score`` on
fixed folds, as the engine's units would.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from typing import Any, cast

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.datasets import make_regression
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import Lasso, Ridge
from sklearn.model_selection import KFold, cross_val_score
from sklearn.neighbors import KNeighborsRegressor

from parcv.strategies.sampler import Sampler, check_optuna_space
from parcv.strategies.strategy import (
    FinishedPart,
    FinishedRound,
    Part,
    Proposer,
    SearchContext,
    Strategy,
    round_seed,
)

optuna = pytest.importorskip("optuna")
Float = optuna.distributions.FloatDistribution
Int = optuna.distributions.IntDistribution
Categorical = optuna.distributions.CategoricalDistribution

X, y = make_regression(n_samples=36, n_features=4, noise=5.0, random_state=0)
FOLDS = list(KFold(3, shuffle=True, random_state=0).split(X))
KNN = KNeighborsRegressor()
# An int, a categorical and a float: randint(1, 16) is IntDistribution(1, 15).
SPACE = {"n_neighbors": stats.randint(1, 16), "weights": ["uniform", "distance"],
         "p": stats.uniform(1.0, 1.0)}  # fmt: skip


def knn_objective(trial):
    """What an Optuna user writes: the same space, by hand, and cross_val_score's mean."""
    params = {
        "n_neighbors": trial.suggest_int("n_neighbors", 1, 15),
        "weights": trial.suggest_categorical("weights", ["uniform", "distance"]),
        "p": trial.suggest_float("p", 1.0, 2.0),
    }
    return cross_val_score(clone(KNN).set_params(**params), X, y, cv=FOLDS).mean()


def finish(part, estimator, *, error_score=np.nan):
    """Score every candidate of a part on the fixed folds, as the engine's units do."""
    scores = np.array([
        cross_val_score(clone(estimator).set_params(**params), X, y, cv=FOLDS,
                        error_score=error_score)
        for params in part.candidates
    ])  # fmt: skip
    means = scores.mean(axis=1)  # NaN where a fold failed, as cv_results_' means
    dropped = np.zeros(len(part.ids), dtype=bool)
    return FinishedPart(part, part.candidates, part.ids, scores, means, dropped)


def drive(strategy, space, estimator, *, entropy=0, key=None, finish=finish):
    """Run a strategy's rounds to the end; return them and the chosen row's parameters."""
    context = SearchContext((), space, estimator, len(X), len(FOLDS), None, "score")
    proposer = strategy.start(context)
    history: list[FinishedRound] = []
    while (nxt := proposer.propose(history, round_seed(entropy, key, len(history)))) is not None:
        history.append(FinishedRound(nxt, tuple(finish(p, estimator) for p in nxt.parts)))
    choice = proposer.choose(history)
    return history, choice, history[choice.round].parts[choice.part].params[choice.row]


def trials_of(history):
    """(trial number, params, mean) of every row, in order."""
    return [(i, p, float(m)) for r in history for part in r.parts
            for i, p, m in zip(part.ids, part.params, part.means, strict=True)]  # fmt: skip


def reference(sampler, objective, n_trials):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(objective, n_trials=n_trials)
    return study


def assert_same_as_study(history, chosen, study):
    rows = trials_of(history)
    assert [r[0] for r in rows] == [t.number for t in study.trials]
    for (_, params, mean), trial in zip(rows, study.trials, strict=True):
        assert params == trial.params  # the same proposals, exactly
        if trial.state == optuna.trial.TrialState.COMPLETE:
            assert mean == trial.value  # bit for bit
        else:
            assert trial.state == optuna.trial.TrialState.FAIL and math.isnan(mean)
    assert chosen == study.best_trial.params


@pytest.mark.parametrize(
    ("kind", "make"),
    [
        ("tpe", lambda: optuna.samplers.TPESampler(seed=0, n_startup_trials=4)),
        ("random", lambda: optuna.samplers.RandomSampler(seed=0)),
    ],
)
def test_batch_one_equals_optuna_study_optimize(kind, make):
    n_trials = 14
    study = reference(make(), knn_objective, n_trials)
    options = {"n_startup_trials": 4} if kind == "tpe" else None
    # By name with a seed, and as an instance: both are Optuna's study.optimize.
    for strategy in (Sampler(kind, n_trials=n_trials, seed=0, options=options),
                     Sampler(make(), n_trials=n_trials)):  # fmt: skip
        history, _, chosen = drive(strategy, SPACE, KNN)
        assert len(history) == n_trials  # one trial per round
        assert_same_as_study(history, chosen, study)


def test_batch_one_equals_optuna_for_cmaes_and_qmc():
    space = {"alpha": stats.loguniform(1e-3, 1e3), "tol": stats.loguniform(1e-5, 1e-2)}

    def objective(trial):
        params = {"alpha": trial.suggest_float("alpha", 1e-3, 1e3, log=True),
                  "tol": trial.suggest_float("tol", 1e-5, 1e-2, log=True)}  # fmt: skip
        return cross_val_score(Ridge(**params), X, y, cv=FOLDS).mean()

    for kind in ("cmaes", "qmc"):
        cls = optuna.samplers.CmaEsSampler if kind == "cmaes" else optuna.samplers.QMCSampler
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # QMC's
            study = reference(cls(seed=1), objective, 8)
        history, _, chosen = drive(Sampler(kind, n_trials=8, seed=1), space, Ridge())
        assert_same_as_study(history, chosen, study)


def test_gp_equals_optuna_study_optimize():
    pytest.importorskip("torch")
    space = {"alpha": stats.loguniform(1e-3, 1e3)}

    def objective(trial):
        alpha = trial.suggest_float("alpha", 1e-3, 1e3, log=True)
        return cross_val_score(Ridge(alpha=alpha), X, y, cv=FOLDS).mean()

    study = reference(optuna.samplers.GPSampler(seed=0, n_startup_trials=3), objective, 6)
    strategy = Sampler("gp", n_trials=6, seed=0, options={"n_startup_trials": 3})
    history, _, chosen = drive(strategy, space, Ridge())
    assert_same_as_study(history, chosen, study)


def test_nan_mean_is_a_failed_trial_as_in_optimize():
    # Train folds hold 24 rows: 25 neighbours and more fail, and cross_val_score gives NaN.
    space = {"n_neighbors": stats.randint(20, 31)}

    def objective(trial):
        est = KNeighborsRegressor(n_neighbors=trial.suggest_int("n_neighbors", 20, 30))
        return cross_val_score(est, X, y, cv=FOLDS, error_score=np.nan).mean()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        warnings.simplefilter("ignore", UserWarning)  # sklearn: "scores are non-finite"
        study = reference(optuna.samplers.TPESampler(seed=0, n_startup_trials=3), objective, 10)
        history, _, chosen = drive(
            Sampler("tpe", n_trials=10, seed=0, options={"n_startup_trials": 3}), space, KNN
        )
    states = {t.state for t in study.trials}
    assert states == {optuna.trial.TrialState.FAIL, optuna.trial.TrialState.COMPLETE}
    assert_same_as_study(history, chosen, study)


@pytest.mark.parametrize("batch", [2, 4])
@pytest.mark.parametrize("kind", ["tpe", "cmaes"])
def test_batches_are_the_same_on_every_run(kind, batch):
    space = SPACE if kind == "tpe" else {"alpha": stats.loguniform(1e-3, 1e3),
                                         "tol": stats.loguniform(1e-5, 1e-2)}  # fmt: skip
    estimator = KNN if kind == "tpe" else Ridge()
    options = {"n_startup_trials": 3} if kind == "tpe" else None
    runs = [drive(Sampler(kind, n_trials=9, batch=batch, seed=0, options=options), space,
                  estimator) for _ in range(2)]  # fmt: skip
    (first, choice, chosen), (second, choice_2, chosen_2) = runs
    assert [len(r.parts[0].ids) for r in first] == [batch] * (9 // batch) + [9 % batch] * (
        9 % batch > 0
    )
    assert trials_of(first) == trials_of(second)
    assert [r.round.decision for r in first] == [r.round.decision for r in second]
    assert (choice, chosen) == (choice_2, chosen_2)
    # Decisions are JSON-ready data, and name what they read.
    json.dumps([r.round.decision for r in first])
    assert first[1].round.decision["told"][0]["trial"] == 0


def test_tpe_batches_count_the_running_trials_with_the_constant_liar():
    space = {"alpha": stats.loguniform(1e-3, 1e3)}
    liar = Sampler("tpe", n_trials=12, batch=4, seed=0, options={"n_startup_trials": 4})
    assert liar.new_sampler(round_seed(0, None, 0))._constant_liar
    blind = Sampler("tpe", n_trials=12, batch=4, seed=0,
                    options={"n_startup_trials": 4, "constant_liar": False})  # fmt: skip
    with_liar, _, _ = drive(liar, space, Ridge())
    without, _, _ = drive(blind, space, Ridge())
    # The random start is the same; a model-based batch sees its running trials.
    assert trials_of(with_liar)[:4] == trials_of(without)[:4]
    assert trials_of(with_liar)[5:8] != trials_of(without)[5:8]
    for r in with_liar:
        alphas = [p["alpha"] for p in r.round.parts[0].candidates]
        assert len(set(alphas)) == len(alphas)


def test_a_fresh_proposer_handed_the_history_replays_it():
    strategy = Sampler("tpe", n_trials=8, batch=3, seed=None, options={"n_startup_trials": 3})
    history, choice, _ = drive(strategy, SPACE, KNN, entropy=7)
    context = SearchContext((), SPACE, KNN, len(X), len(FOLDS), None, "score")
    fresh = strategy.start(context)
    assert fresh.propose(history, round_seed(7, None, len(history))) is None
    assert fresh.choose(history) == choice
    # Halfway: the next round is the one the first run proposed there.
    halfway = strategy.start(context)
    assert halfway.propose(history[:2], round_seed(7, None, 2)) == history[2].round
    # Asked again before that round finished: the same round, nothing asked twice.
    assert halfway.propose(history[:2], round_seed(7, None, 2)) == history[2].round
    # Another run seed draws other trials (seed=None: the run's seed seeds the sampler).
    other, _, _ = drive(strategy, SPACE, KNN, entropy=8)
    assert trials_of(other) != trials_of(history)
    # And history another sampler proposed is refused.
    with pytest.raises(ValueError, match="is not the round this sampler proposes"):
        strategy.start(context).propose(other, round_seed(7, None, len(other)))


def test_each_outer_fold_draws_its_own_trials_unless_the_seed_is_fixed():
    space = {"alpha": stats.loguniform(1e-3, 1e3)}
    drawn = Sampler("random", n_trials=3, seed=None)
    fixed = Sampler("random", n_trials=3, seed=0)
    by_key = {k: trials_of(drive(drawn, space, Ridge(), key=k)[0]) for k in (None, 0, 1)}
    assert by_key[None] != by_key[0] != by_key[1]
    # A fixed seed draws the same trials in every search, as RandomizedSearchCV's int seed.
    assert trials_of(drive(fixed, space, Ridge(), key=0)[0]) == trials_of(
        drive(fixed, space, Ridge(), key=1)[0]
    )


def test_a_dropped_trial_is_pruned_and_never_chosen():
    def raced(part, estimator):
        done = finish(part, estimator)
        scores = done.scores.copy()
        best = int(np.argmax(done.means))
        scores[best, 1:] = np.nan  # the race stopped the best after its first fold
        dropped = np.arange(len(part.ids)) == best
        return FinishedPart(part, done.params, done.ids, scores, done.means, dropped)

    strategy = Sampler("random", n_trials=6, batch=3, seed=0)
    history, choice, _ = drive(strategy, SPACE, KNN, finish=raced)
    first = history[0].parts[0]
    assert not first.dropped[choice.row] or choice.round != 0
    # The study holds it as pruned, with the fold it was scored on as its step.
    proposer = strategy.start(SearchContext((), SPACE, KNN, len(X), 3, None, "score"))
    proposer.propose(history, round_seed(0, None, len(history)))
    number = int(np.flatnonzero(first.dropped)[0])
    assert history[1].round.decision["told"][number]["state"] == "PRUNED"
    trial = cast(Any, proposer)._study.trials[number]
    assert trial.state == optuna.trial.TrialState.PRUNED
    assert trial.intermediate_values == {1: first.scores[first.dropped][0, 0]}


def test_the_sampler_is_a_strategy_and_schedules_its_rounds():
    strategy = Sampler("tpe", n_trials=10, batch=4, seed=0)
    assert isinstance(strategy, Strategy)
    context = SearchContext((), SPACE, KNN, 100, 3, None, "score")
    assert isinstance(strategy.start(context), Proposer)
    schedule = strategy.schedule(context)
    assert [(r.n_candidates, r.n_units) for r in schedule.rounds] == [(4, 12), (4, 12), (2, 6)]
    assert schedule.n_units == 30 and not schedule.exact
    assert "TPESampler" in schedule.rounds[0].text


def test_config_is_json_ready_and_names_what_draws_the_trials():
    config = Sampler("tpe", n_trials=60, batch=8, seed=0, options={"n_startup_trials": 5}).config()
    json.dumps(config)
    assert config["sampler"] == "TPESampler" and config["seed"] == 0
    assert config["options"] == {"n_startup_trials": 5}
    assert (config["n_trials"], config["batch"]) == (60, 8)
    same = Sampler("tpe", n_trials=60, batch=8, seed=0, options={"n_startup_trials": 5})
    other = Sampler("tpe", n_trials=60, batch=8, seed=1, options={"n_startup_trials": 5})
    assert config == same.config()
    assert config["token"] != other.config()["token"]
    instance = Sampler(optuna.samplers.TPESampler(seed=0), n_trials=5).config()
    assert instance["sampler"] == "TPESampler" and instance["kind"] is None


def test_from_config_reads_a_spec_table():
    s = Sampler.from_config({"kind": "tpe", "seed": 0, "n_trials": 60, "batch": 8,
                             "n_startup_trials": 5})  # fmt: skip
    assert (s.sampler, s.seed, s.n_trials, s.batch) == ("tpe", 0, 60, 8)
    assert s.options == {"n_startup_trials": 5}
    with pytest.raises(ValueError, match=r"needs \['n_trials'\]"):
        Sampler.from_config({"kind": "tpe"})
    with pytest.raises(ValueError, match=r"n_startup_trial.*not arguments of optuna's TPESampler"):
        Sampler.from_config({"kind": "tpe", "n_trials": 5, "n_startup_trial": 3})


# ---------------------------------------------------------------- the space


def test_scipy_distributions_and_lists_convert_to_optuna():
    space = check_optuna_space({
        "a": stats.uniform(1.0, 2.0),
        "b": stats.loguniform(1e-3, 1e2),
        "c": stats.loguniform(1e-3, 1e-1, scale=10),
        "d": stats.randint(2, 10),
        "e": stats.randint(0, 3, loc=5),
        "f": [1, "x", None],
        "g": np.array([0.1, 1.0]),
        "h": Float(0.0, 1.0, step=0.25),
    })  # fmt: skip
    d: dict[str, Any] = dict(space.distributions)
    assert d["a"] == Float(1.0, 3.0)
    assert d["b"] == Float(1e-3, 1e2, log=True)
    assert d["c"].low == pytest.approx(1e-2) and d["c"].high == pytest.approx(1.0) and d["c"].log
    assert d["d"] == Int(2, 9)
    assert d["e"] == Int(5, 7)
    assert d["f"] == Categorical((1, "x", None))
    assert d["g"] == Categorical((0.1, 1.0)) and type(d["g"].choices[0]) is float
    assert d["h"] == Float(0.0, 1.0, step=0.25)
    assert list(d) == list("abcdefgh") and not space.choices


def test_values_optuna_cannot_hold_are_drawn_by_index():
    models = [Ridge(), Lasso()]
    space = check_optuna_space({"model": models, "hidden": [(10,), (20, 5)]})
    assert space.distributions["model"] == Categorical((0, 1))
    params = space.decode({"model": 1, "hidden": 0})
    assert params["model"] is models[1] and params["hidden"] == (10,)
    assert space.encode({"model": Lasso(), "hidden": (10,)}) == {"model": 1, "hidden": 0}


@pytest.mark.parametrize(
    ("space", "error", "match"),
    [
        ({"alpha": stats.norm(0, 1)}, ValueError, r"space\['alpha'\] is scipy.stats.norm"),
        ({"alpha": stats.expon()}, ValueError, "loguniform, randint, reciprocal, uniform"),
        ({"alpha": stats.uniform}, TypeError, r"without its parameters; freeze it"),
        ({"alpha": stats.loguniform(1, 10, loc=1)}, ValueError, "shifted, it is no longer"),
        ({"alpha": 0.5}, TypeError, r"Wrap a single value in a list: \{'alpha': \[0.5\]\}"),
        ({"alpha": []}, ValueError, r"space\['alpha'\] is an empty list"),
        ({"alpha": np.ones((2, 2))}, ValueError, "1-D list or array"),
        ({}, ValueError, "at least one parameter"),
        ([{"alpha": [1.0]}, {"tol": [1.0]}], TypeError, "one space, a dict; got a list of 2"),
        ("alpha", TypeError, "space must be a dict"),
    ],
)
def test_spaces_that_cannot_be_converted_say_how_to_fix_them(space, error, match):
    with pytest.raises(error, match=match):
        check_optuna_space(space)


def test_a_random_space_is_refused_with_its_distributions_as_the_fix():
    from parcv.plan.space import RandomSpace

    with pytest.raises(TypeError, match=r"space=random_space\.distributions"):
        check_optuna_space(RandomSpace({"alpha": [1.0, 2.0]}, n_iter=2))


def test_unknown_parameter_names_are_refused_when_a_search_starts():
    context = SearchContext((), {"alpah": [1.0]}, Ridge(), 10, 3, None, "score")
    with pytest.raises(ValueError, match=r"space names \['alpah'\], which Ridge does not have"):
        Sampler("tpe", n_trials=3, seed=0).start(context)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"sampler": "tpe", "n_trials": 0}, ValueError, "n_trials must be an int >= 1; got 0"),
        ({"sampler": "tpe", "n_trials": True}, TypeError, "n_trials must be an int >= 1"),
        ({"sampler": "tpe", "n_trials": 5, "batch": 0}, ValueError, "batch must be an int >= 1"),
        ({"sampler": "tpe", "n_trials": 5, "seed": -1}, ValueError, r"seed must be an int in"),
        ({"sampler": "tpe", "n_trials": 5, "seed": 0.5}, TypeError, r"seed must be an int in"),
        ({"sampler": "bayes", "n_trials": 5}, ValueError,
         r"one of \['cmaes', 'gp', 'nsga2', 'qmc'"),
        ({"sampler": 3, "n_trials": 5}, TypeError, "or an optuna sampler instance; got 3"),
        ({"sampler": "tpe", "n_trials": 5, "options": {"seed": 1}}, ValueError,
         r"options \['seed'\] are not arguments"),
    ],
)  # fmt: skip
def test_bad_arguments_are_refused_before_any_trial(kwargs, error, match):
    with pytest.raises(error, match=match):
        Sampler(**kwargs)


def test_an_instance_takes_no_seed_and_must_be_seeded():
    with pytest.raises(ValueError, match=r"Give them to its constructor instead: TPESampler"):
        Sampler(optuna.samplers.TPESampler(seed=0), n_trials=5, seed=0)
    unseeded = Sampler(optuna.samplers.TPESampler(), n_trials=5)
    context = SearchContext((), SPACE, KNN, len(X), len(FOLDS), None, "score")
    with pytest.raises(ValueError, match=r"unseeded random state.*TPESampler\(seed=0\)"):
        unseeded.start(context)


def test_samplers_that_stop_their_study_are_refused_with_the_grid_search_as_the_fix():
    # Optuna's GridSampler calls study.stop() once its grid is done: outside
    # study.optimize that raises, so ask and tell cannot run it to its end.
    grid = optuna.samplers.GridSampler({"alpha": [1.0, 2.0]}, seed=0)
    with pytest.raises(
        TypeError, match=r"GridSampler stops its study.*parcv.search\(estimator, grid"
    ):
        Sampler(grid, n_trials=2)


def test_the_instance_is_copied_so_later_use_changes_nothing():
    given = optuna.samplers.RandomSampler(seed=0)
    strategy = Sampler(given, n_trials=4)
    before, _, _ = drive(strategy, SPACE, KNN)
    reference(given, knn_objective, 3)  # the user's own instance moves on
    after, _, _ = drive(strategy, SPACE, KNN)
    assert trials_of(before) == trials_of(after)


@pytest.mark.parametrize(
    ("kind", "match"),
    [("gp", "GPSampler needs torch.*pip install torch"),
     ("cmaes", r"CmaEsSampler needs cmaes.*pip install 'parcv\[optuna\]'")],
)  # fmt: skip
def test_a_sampler_without_its_package_says_what_to_install(monkeypatch, kind, match):
    # Optuna imports them only at the first model-based trial: a run would fail midway.
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    with pytest.raises(ImportError, match=match):
        Sampler(kind, n_trials=5, seed=0)


def test_without_optuna_a_message_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    with pytest.raises(ImportError, match=r"pip install 'parcv\[optuna\]'"):
        Sampler("tpe", n_trials=5, seed=0)
    with pytest.raises(ImportError, match=r"pip install 'parcv\[optuna\]'"):
        check_optuna_space({"alpha": [1.0]})


def test_importing_the_module_needs_no_optuna(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)
    monkeypatch.delitem(sys.modules, "parcv.strategies.sampler")
    import parcv.strategies.sampler  # noqa: F401


def test_parts_need_one_id_per_candidate():
    # The seam's own guard: a proposal's ids are its trial numbers.
    with pytest.raises(ValueError, match="one id per candidate"):
        Part(({"a": 1},), (0, 1))


def test_importing_the_search_wing_leaves_the_search_function_in_place():
    # parcv/strategies/ (the wing) and parcv.search (the function) share a name: loading the
    # wing's package for the first time after `import parcv` would rebind parcv.search to it.
    code = (
        "import parcv, parcv.report.plots\n"
        "from parcv.strategies.sampler import Sampler\n"
        "assert callable(parcv.search), parcv.search\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
