"""Seeds and failures at the strategy seam: every draw from the run's seed, failed trials told.

- A sampler's trial that fails on every fold is told to the study as failed and
  the search goes on (Optuna's ``study.optimize(catch=...)``), even alone in its round.
- A part's row subsample is drawn from the round's seed (or the part's own
  ``subsample_seed``): a strategy of one's own is reproducible and resumable.
- The run's seed (``random_state=``, ``--seed``, the drop-in's ``random_state``)
  reaches every strategy without a seed of its own.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_val_score

import parcv
from parcv.strategies.strategy import Choice, Part, Round, RoundBound, Schedule, best_of
from tests.estimators import FIT_LOG, FailsOnAlpha, FitLogged, logged_fits

XR, YR = make_regression(n_samples=90, n_features=4, noise=20.0, random_state=0)
CV = KFold(3, shuffle=True, random_state=0)
ALPHAS = {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0, 1e3]}


# --- 1. a failed trial alone in its round is told as failed; the search goes on ----------


def _optunas_study(optuna, make, n_trials, low, high):
    """Optuna's own study: the objective raises for a failing point, optimize catches it."""

    def objective(trial):
        alpha = trial.suggest_float("alpha", low, high)
        return float(cross_val_score(make(alpha), XR, YR, cv=CV, error_score="raise").mean())

    optuna.logging.set_verbosity(optuna.logging.ERROR)  # its "Trial 2 failed" lines
    sampler = optuna.samplers.TPESampler(seed=0, n_startup_trials=3)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(objective, n_trials=n_trials, catch=(Exception,))
    return study


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda alpha: FailsOnAlpha(alpha=alpha), id="the-fit-raises"),
        pytest.param(lambda alpha: Ridge(alpha=alpha), id="scikit-learns-parameter-check"),
    ],
)
def test_a_failed_trial_alone_in_its_round_is_told_failed_as_in_optunas_study(make):
    optuna = pytest.importorskip("optuna")
    space = {"alpha": optuna.distributions.FloatDistribution(-3.0, 3.0)}
    sampler = parcv.Sampler("tpe", n_trials=8, seed=0, options={"n_startup_trials": 3})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        warnings.simplefilter("ignore", UserWarning)  # scikit-learn's "scores are non-finite"
        ours = parcv.search(make(1.0), space, XR, YR, cv=CV, backend="serial", strategy=sampler)
    study = _optunas_study(optuna, make, 8, -3.0, 3.0)
    states = [t.state.name for t in study.trials]
    assert "FAIL" in states and "COMPLETE" in states  # the test covers both
    assert [p["alpha"] for p in ours.cv_results_["params"]] == [
        t.params["alpha"] for t in study.trials
    ]
    values = [np.nan if t.value is None else t.value for t in study.trials]
    np.testing.assert_array_equal(ours.cv_results_["mean_test_score"], values)
    assert ours.best_params_ == study.best_params
    assert ours.best_score_ == study.best_value


def test_a_search_whose_every_trial_failed_is_an_error():
    optuna = pytest.importorskip("optuna")
    space = {"alpha": optuna.distributions.FloatDistribution(-2.0, -1.0)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(parcv.FitFailedError, match="every candidate of every round"):
            parcv.search(FailsOnAlpha(), space, XR, YR, cv=CV, backend="serial",
                         strategy=parcv.Sampler("tpe", n_trials=3, seed=0))  # fmt: skip


# --- 3. a strategy of one's own subsampling rows: reproducible, resumable --------------------


class _TwoRounds:
    """Written only against the documented contract: rows, then the best three on more rows."""

    name = "two-rounds"

    def __init__(self, subsample_seed=None):
        self.subsample_seed = subsample_seed

    def config(self):
        return {"name": self.name, "joins": "table", "subsample_seed": self.subsample_seed}

    def schedule(self, context):
        n, k = len(context.candidates), context.n_splits
        return Schedule((RoundBound(n, n * k, "all"), RoundBound(3, 3 * k, "best 3")), exact=True)

    def start(self, context):
        return _TwoRoundsProposer(context.candidates, self.subsample_seed)


class _TwoRoundsProposer:
    def __init__(self, candidates, subsample_seed):
        self.candidates, self.subsample_seed = candidates, subsample_seed

    def propose(self, history, seed):
        if len(history) == 2:
            return None
        if not history:
            ids = tuple(range(len(self.candidates)))
            n_rows = 40
        else:
            last = history[0].parts[0]
            ids = tuple(last.ids[i] for i in np.argsort(-last.means, kind="stable")[:3])
            n_rows = 60
        # Only with a seed of its own does it name one: the rows are the driver's to draw.
        seeded = {} if self.subsample_seed is None else {"subsample_seed": self.subsample_seed}
        part = Part(tuple(self.candidates[i] for i in ids), ids, n_rows=n_rows, **seeded)
        return Round((part,), {"ids": list(ids)})

    def choose(self, history):
        return Choice(1, 0, best_of(history[1].parts[0]))


def _numbers(result):
    """What a run computes, without its timings: every row's parameters and scores, the winner."""
    cv = result.cv_results_
    scores = {k: np.asarray(v).tolist() for k, v in cv.items() if "test_" in k or k == "round"}
    return cv["params"], scores, result.best_params_


def _own(strategy=None, **options):
    return parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3), backend="serial",
                        strategy=strategy or _TwoRounds(), **options)  # fmt: skip


def test_a_strategy_of_ones_own_subsamples_the_same_rows_in_two_runs():
    first, again = _own(), _own()
    assert _numbers(first) == _numbers(again)
    # It did subsample: 40 rows of 90 in all, so 26 train rows per fold in round 0.
    FIT_LOG.unlink(missing_ok=True)
    _own()
    assert {line.split()[-1] for line in logged_fits()} == {"26", "40", "90"}
    FIT_LOG.unlink(missing_ok=True)


def test_a_resume_of_a_finished_run_with_subsamples_fits_nothing(tmp_path):
    store = tmp_path / "own.sqlite"
    first = _own(store=store, save_models=True)
    FIT_LOG.unlink(missing_ok=True)
    again = _own(store=store, save_models=True, resume=True)
    assert logged_fits() == []
    assert _numbers(again) == _numbers(first)
    assert _numbers(parcv.load(store)) == _numbers(first)


def test_run_seeds_subsample_other_rows_and_a_parts_own_seed_fixes_them():
    one, two = _own(random_state=1), _own(random_state=2)
    assert _numbers(one) == _numbers(_own(random_state=1))
    assert not np.array_equal(one.cv_results_["mean_test_score"],
                              two.cv_results_["mean_test_score"])  # fmt: skip
    fixed = [_own(_TwoRounds(subsample_seed=5), random_state=s) for s in (1, 2)]
    np.testing.assert_array_equal(fixed[0].cv_results_["mean_test_score"],
                                  fixed[1].cv_results_["mean_test_score"])  # fmt: skip


def test_a_parts_subsample_seed_is_checked():
    with pytest.raises(TypeError, match="subsample_seed must be an int"):
        Part(({"alpha": 1.0},), (0,), n_rows=10, subsample_seed="0")
    with pytest.raises(ValueError, match="subsample_seed needs n_rows"):
        Part(({"alpha": 1.0},), (0,), subsample_seed=0)


# --- 6. the run's seed reaches every strategy without a seed of its own ----------------------


def _trials(result):
    return [p["alpha"] for p in result.cv_results_["params"]]


def test_the_api_random_state_seeds_a_sampler_without_its_own():
    pytest.importorskip("optuna")
    space = {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5]}

    def run(**options):
        return parcv.search(Ridge(), space, XR, YR, cv=KFold(3), backend="serial",
                            strategy=parcv.Sampler("random", n_trials=4), **options)  # fmt: skip

    assert _trials(run(random_state=1)) == _trials(run(random_state=1))
    assert _trials(run(random_state=1)) != _trials(run(random_state=2))
    assert _trials(run()) == _trials(run(random_state=0))  # None is 0
    nested = [
        parcv.nested_cv(Ridge(), space, XR, YR, outer=2, inner=3, backend="serial",
                        strategy=parcv.Sampler("random", n_trials=4), random_state=s)
        for s in (1, 2)
    ]  # fmt: skip
    assert [_trials(r) for r in nested[0].inner] != [_trials(r) for r in nested[1].inner]


def test_random_state_without_a_strategy_is_refused():
    with pytest.raises(ValueError, match="random_state seeds a strategy"):
        parcv.search(Ridge(), ALPHAS, XR, YR, cv=3, random_state=1, backend="serial")


def test_the_drop_ins_random_state_seeds_its_sampler_and_a_conflicting_n_iter_is_refused():
    pytest.importorskip("optuna")
    space = {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5]}

    def drop_in(**options):
        return parcv.RandomizedSearchCV(Ridge(), space, cv=KFold(3), backend="serial",
                                        strategy=parcv.Sampler("random", n_trials=4),
                                        **options).fit(XR, YR)  # fmt: skip

    one, two = drop_in(random_state=1), drop_in(random_state=2)
    assert _trials(one) != _trials(two)
    direct = parcv.search(Ridge(), space, XR, YR, cv=KFold(3), backend="serial",
                          strategy=parcv.Sampler("random", n_trials=4), random_state=1)  # fmt: skip
    assert _trials(one) == _trials(direct)
    assert _trials(drop_in(random_state=1, n_iter=4)) == _trials(one)  # n_iter = n_trials
    FIT_LOG.unlink(missing_ok=True)
    sampler = parcv.Sampler("random", n_trials=4)
    conflicting = parcv.RandomizedSearchCV(FitLogged(), space, n_iter=6, strategy=sampler)
    with pytest.raises(ValueError, match=r"n_iter=6 .* n_trials=4"):
        conflicting.fit(XR, YR)
    assert logged_fits() == []


def _sampler_spec(tmp_path):
    spec = tmp_path / "random.toml"
    spec.write_text(
        '[data]\nsource = "sklearn:diabetes"\nn_samples = 60\n'
        '[estimator]\nclass = "sklearn.linear_model.Ridge"\n'
        "[space]\nalpha = { loguniform = [1e-3, 1e3] }\n"
        '[search]\nsampler = { kind = "random", n_trials = 3 }\n'
        "[cv]\ncv = 3\n"
        "[report]\nplots = false\n"
    )
    return spec


def test_the_specs_seed_reaches_its_sampler(tmp_path, capsys):
    pytest.importorskip("optuna")
    from parcv.cli import main

    spec = _sampler_spec(tmp_path)

    def run(seed, name):
        out = tmp_path / name
        assert main(["run", str(spec), "--out", str(out), "--backend", "serial",
                     "--seed", str(seed)]) == 0  # fmt: skip
        capsys.readouterr()
        return _trials(parcv.load(out / "store.sqlite"))

    one = run(1, "one")
    assert run(1, "again") == one
    assert run(2, "two") != one
