"""Comparing, and the intervals of, nested CVs whose searches run in rounds (a strategy).

``compare`` of two nested CVs is a paired test of their outer scores, corrected for
the overlap of the outer training sets by the outer folds' sizes, read from the
records of any strategy. ``interval="ncv"`` (Bates, Hastie & Tibshirani) reruns the
whole procedure -- here the strategy's search, then the refit of its winner -- on
every (train, test) pair of its random fold assignments: it must equal that loop
done by hand with Optuna's own study and scikit-learn. ``interval="bbc"`` needs
every candidate scored on every row, fixed before any score is read: a strategy
that says so gets it, the others a refusal before any fit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.base import clone
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_val_score

import parcv
from parcv.cli.spec import SpecError, parse_spec
from parcv.cli.sweep import build_job
from parcv.stats.intervals import ncv_interval, plan_nested_cv
from parcv.strategies.strategy import OneRound

optuna = pytest.importorskip("optuna")

# 31 rows: outer folds of 11, 10 and 10 test rows, so the mean fold sizes matter.
X, y = make_regression(n_samples=31, n_features=3, noise=20.0, random_state=0)
GRID = {"alpha": [0.1, 30.0, 3000.0]}
SPACE = {"alpha": optuna.distributions.FloatDistribution(0.01, 1000.0, log=True)}
MSE = "neg_mean_squared_error"
NCV = dict(interval="ncv", ncv_repetitions=1, ncv_random_state=3, confidence=0.9)
OPTIONS = dict(outer=3, inner=2, scoring=MSE)


def _sampler(seed: int | None = 0) -> parcv.Sampler:
    return parcv.Sampler("random", n_trials=3, seed=seed)


def _corrected_t_by_hand(a, b, n_train, n_test):
    """Nadeau and Bengio's corrected resampled t-test, written out (two-sided)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    k = d.size
    t = d.mean() / math.sqrt((1 / k + n_test / n_train) * d.var(ddof=1))
    return t, 2 * sps.t.sf(abs(t), k - 1)


def _outer_sizes():
    folds = list(KFold(3).split(X))
    return np.mean([len(tr) for tr, _ in folds]), np.mean([len(te) for _, te in folds])


STRATEGIES = {
    "sampler": lambda: dict(strategy=_sampler()),
    "halving": lambda: dict(strategy=parcv.Halving(factor=2, random_state=0)),
}


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_compare_of_two_nested_cvs_in_rounds_reads_the_outer_fold_sizes(name):
    # Before: "n_train must be a finite number > 0; got nan" (the refits' records were
    # rewritten as fits of all data, and compare found no outer refit to read).
    space = SPACE if name == "sampler" else GRID
    a = parcv.nested_cv(Ridge(), space, X, y, **OPTIONS, **STRATEGIES[name](), backend="serial")
    b = parcv.nested_cv(Ridge(), {"alpha": [1e4]}, X, y, **OPTIONS, backend="serial")
    n_train, n_test = _outer_sizes()
    assert (n_train, n_test) == (62 / 3, 31 / 3)
    for first, second in ((a, b), (b, a)):
        got = first.compare(second)
        t, p = _corrected_t_by_hand(first.outer_scores["score"], second.outer_scores["score"],
                                    n_train, n_test)  # fmt: skip
        assert got.statistic == pytest.approx(t, rel=1e-12)
        assert got.p_value == pytest.approx(p, rel=1e-12)


def test_compare_of_grid_nested_cvs_reads_their_own_outer_folds_only():
    # Before: a nested CV with interval="ncv" averaged the sizes of its interval's
    # selections (more refits, on other rows) into the outer folds' sizes.
    a = parcv.nested_cv(Ridge(), GRID, X, y, **OPTIONS, **NCV, backend="serial")
    b = parcv.nested_cv(Ridge(), {"alpha": [1e4]}, X, y, **OPTIONS, backend="serial")
    plain = parcv.nested_cv(Ridge(), GRID, X, y, **OPTIONS, backend="serial")
    t, p = _corrected_t_by_hand(a.outer_scores["score"], b.outer_scores["score"], *_outer_sizes())
    for result in (a, plain):
        got = result.compare(b)
        assert got.statistic == pytest.approx(t, rel=1e-12)
        assert got.p_value == pytest.approx(p, rel=1e-12)
    assert a.compare(b) == plain.compare(b)


def _same_interval(ours, theirs):
    for name in ("estimate", "lower", "upper", "se", "confidence", "n_fits"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.details == theirs.details


def test_ncv_of_a_nested_cv_in_one_round_equals_the_grid_nested_cv_s():
    # Before: "grid does not combine with interval".
    grid = parcv.nested_cv(Ridge(), GRID, X, y, **OPTIONS, **NCV, backend="serial")
    rounds = parcv.nested_cv(Ridge(), GRID, X, y, **OPTIONS, **NCV, strategy=OneRound(),
                             backend="serial")  # fmt: skip
    assert rounds.interval.method == "ncv"
    # 1 repetition x 3 x 4 / 2 = 6 selections of 3 candidates x 2 inner folds + 1 refit.
    assert rounds.interval.details["n_selections"] == 6
    assert rounds.interval.n_fits == 6 * (3 * 2 + 1)
    _same_interval(rounds.interval, grid.interval)
    _same_interval(rounds.naive_interval, grid.naive_interval)
    assert rounds.interval_loss == grid.interval_loss == "squared error"
    np.testing.assert_array_equal(rounds.outer_scores["score"], grid.outer_scores["score"])
    assert len(rounds.inner) == 3 and rounds.chosen_params == grid.chosen_params


def _optuna_search(X_train, y_train):
    """Optuna's own study on the train rows: the sampler, seed and objective of _sampler()."""
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(0))

    def objective(trial):
        model = Ridge(alpha=trial.suggest_float("alpha", 0.01, 1000.0, log=True))
        return cross_val_score(model, X_train, y_train, cv=KFold(2), scoring=MSE).mean()

    study.optimize(objective, n_trials=3)
    return study.best_params


# A selection's rounds wait on each other: on every backend, but kept to one of a kind.
@pytest.mark.parametrize("backend", ["serial", "local-2", "dask-2"], indirect=True)
def test_ncv_of_a_sampler_nested_cv_equals_the_searches_by_hand(backend):
    # Before: "sampler does not combine with interval". By hand, the ncv definition with
    # the search as the model: on each (train, test) pair, Optuna's study on the train
    # rows, the best trial refitted there, its squared errors on the test rows.
    result = parcv.nested_cv(Ridge(), SPACE, X, y, **OPTIONS, **NCV, strategy=_sampler(),
                             backend=backend)  # fmt: skip
    plan = plan_nested_cv(len(y), 3, 1, 3)
    losses = {}
    for unit in plan.units:
        train, test = plan.train_indices(unit), plan.test_indices(unit)
        best = _optuna_search(X[train], y[train])
        model = clone(Ridge()).set_params(**best).fit(X[train], y[train])
        losses[unit] = (y[test] - model.predict(X[test])) ** 2
    want = ncv_interval(plan.assemble(losses), 0.9)
    iv = result.interval
    for name in ("estimate", "lower", "upper", "se"):
        assert getattr(iv, name) == pytest.approx(getattr(want, name), rel=1e-10), name
    # 6 selections of 3 trials x 2 inner folds + 1 refit.
    assert iv.details["n_selections"] == 6 and iv.n_fits == 6 * 7
    assert result.naive_interval.estimate == pytest.approx(-result.estimate["score"].mean)
    assert "of the selection procedure" in result.to_text()


def test_ncv_of_a_sampler_nested_cv_is_the_same_run_after_run_and_on_load(tmp_path):
    # A sampler seeded by the run (seed=None): every selection draws its own trials.
    store = tmp_path / "run.sqlite"
    options = dict(**OPTIONS, **NCV, strategy=_sampler(None))
    first = parcv.nested_cv(Ridge(), SPACE, X, y, **options, backend="serial", store=store)
    again = parcv.nested_cv(Ridge(), SPACE, X, y, **options, backend="local", n_jobs=2)
    loaded = parcv.load(store)
    for other in (again, loaded):
        _same_interval(other.interval, first.interval)
        np.testing.assert_array_equal(other.outer_scores["score"], first.outer_scores["score"])
    assert loaded.interval_loss == "squared error"


def test_bbc_of_a_sampler_nested_cv_is_refused_before_any_fit(tmp_path):
    store = tmp_path / "run.sqlite"
    for asked in (dict(interval="bbc"), dict(bbc=True)):
        with pytest.raises(ValueError, match=r"BBC-CV .* sampler") as err:
            parcv.nested_cv(Ridge(), SPACE, X, y, **OPTIONS, **asked, strategy=_sampler(),
                            backend="serial", store=store)  # fmt: skip
        message = str(err.value)
        assert "interval='ncv'" in message and "proposes" in message
        assert not store.exists()


def test_bbc_of_a_nested_cv_in_one_round_equals_the_grid_nested_cv_s():
    # One round scores every candidate on every row: BBC-CV applies as to a grid.
    options = dict(**OPTIONS, interval="bbc", confidence=0.8)
    grid = parcv.nested_cv(Ridge(), GRID, X, y, **options, backend="serial")
    rounds = parcv.nested_cv(Ridge(), GRID, X, y, **options, strategy=OneRound(),
                             backend="serial")  # fmt: skip
    assert rounds.interval.method == grid.interval.method
    _same_interval(rounds.interval, grid.interval)
    _same_interval(rounds.final.bbc, grid.final.bbc)


NESTED_SPEC = """\
[data]
source = "python:tests.strategies.test_rounds_intervals.spec_data"

[estimator]
class = "sklearn.linear_model.Ridge"

[space]
alpha = { loguniform = [0.01, 1000.0] }

[search]
sampler = { kind = "random", n_trials = 3, seed = 0 }

[cv]
mode = "nested"
outer = 3
inner = 2

[scoring]
metrics = "neg_mean_squared_error"
"""


def spec_data():
    """The tests' rows, for a spec's python: data source."""
    return X, y


def test_a_nested_spec_asks_for_the_interval_of_its_selection():
    # Before: scoring.interval was "only in a cross_validate spec".
    text = NESTED_SPEC + 'interval = "ncv"\nconfidence = 0.9\nncv_repetitions = 1\n'
    job = build_job(parse_spec(text))
    result = job.run(parcv.RunOptions(backend="serial"))
    by_python = parcv.nested_cv(Ridge(), SPACE, X, y, outer=3, inner=2, scoring=[MSE],
                                refit=MSE, interval="ncv", ncv_repetitions=1,
                                strategy=_sampler(), backend="serial")  # fmt: skip
    assert result.interval.method == "ncv"
    for name in ("estimate", "lower", "upper"):
        assert getattr(result.interval, name) == getattr(by_python.interval, name)
    # inspect's schedules count the interval's selections: 3 + 6 searches and all data.
    rounds = job.rounds()
    assert rounds is not None and len(rounds.schedules) == 3 + 6 + 1


def test_a_nested_spec_is_refused_bbc_with_a_sampler_in_spec_words():
    with pytest.raises(SpecError, match=r"scoring\.interval = 'bbc'") as err:
        build_job(parse_spec(NESTED_SPEC + 'interval = "bbc"\n'))
    message = str(err.value)
    assert 'interval = "ncv"' in message and "search.sampler" in message
    assert "interval='" not in message  # spec words, not Python's


def test_a_search_spec_s_interval_hint_names_the_nested_spec():
    # Before: the hint offered a fixed model's interval ("Cross-validate the chosen model").
    text = NESTED_SPEC.replace('mode = "nested"\nouter = 3\n', 'mode = "search"\n')
    with pytest.raises(SpecError, match=r"scoring\.interval") as err:
        build_job(parse_spec(text + 'interval = "ncv"\n'))
    assert 'mode = "nested"' in str(err.value)
