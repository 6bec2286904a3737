"""The progress bar of every strategy: the best CV score so far, and a total it ends at.

Issue 48, item 12: a sampler run's bar showed no best CV score (a grid run's does) and
ended without a total ("13fit": the refit ran past the strategy's bound, and tqdm drops
a total it is past). Every row below is a strategy; each run's bar must end at the units
the store holds, "N/N", with the winner's CV score as the result reports it.
"""

from __future__ import annotations

import functools
import importlib.util
import re

import numpy as np
import pytest
from scipy.stats import loguniform, uniform
from sklearn.datasets import make_regression
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold

import parcv
from parcv.store.readers import read_counts
from parcv.strategies.sampler import SAMPLERS
from parcv.strategies.strategy import Choice, Part, Round, RoundBound, Schedule, best_of

X, Y = make_regression(n_samples=90, n_features=4, noise=25.0, random_state=0)
ALPHAS = {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]}
RATES = {"learning_rate": [0.05, 0.1, 0.3, 1.0]}


def _boost():
    return GradientBoostingRegressor(max_depth=2, random_state=0)


class _TwoRoundRows:
    """Of one's own, on rows: every candidate on a third of the rows, then the best half
    on all rows."""

    name = "two_round_rows"

    def config(self):
        return {"name": self.name}

    def schedule(self, context):
        n, k = len(context.candidates), max(1, len(context.candidates) // 2)
        return Schedule((RoundBound(n, n * context.n_splits, "screen"),
                         RoundBound(k, k * context.n_splits, "confirm")), exact=True)  # fmt: skip

    def start(self, context):
        candidates, n_rows = context.candidates, context.n_samples // 3

        class Proposer:
            def propose(self, history, seed):
                if not history:
                    ids = tuple(range(len(candidates)))
                    return Round((Part(candidates, ids, n_rows=n_rows),))
                if len(history) == 1:
                    done = history[0].parts[0]
                    order = np.argsort(-np.nan_to_num(done.means, nan=-np.inf), kind="stable")
                    ids = tuple(sorted(int(done.ids[i]) for i in order[: len(order) // 2]))
                    return Round((Part(tuple(candidates[i] for i in ids), ids),))
                return None

            def choose(self, history):
                return Choice(1, 0, best_of(history[1].parts[0]))

        return Proposer()


class _TwoWindows:
    """Of one's own, on iteration windows: every path over checkpoints 1-4, then the best
    half over 5-8; the best (path, checkpoint) of both wins."""

    name = "two_windows"
    iterations = parcv.Iterations("n_estimators", 8)

    def config(self):
        return {"name": self.name, "param": "n_estimators", "up_to": 8, "every": 1}

    def schedule(self, context):
        n, k = len(context.candidates), max(1, len(context.candidates) // 2)
        first = RoundBound(n, 4 * n * context.n_splits, "first")
        return Schedule((first, RoundBound(k, 4 * k * context.n_splits, "second")), exact=True)

    def start(self, context):
        points = tuple(dict(c) for c in context.candidates)

        class Proposer:
            def propose(self, history, seed):
                if not history:
                    ids = tuple(range(len(points)))
                    return Round((Part(points, ids, window=(1, 2, 3, 4), resource=4),))
                if len(history) == 1:
                    done = history[0].parts[0]
                    last = [i for i, p in enumerate(done.params) if p["n_estimators"] == 4]
                    means = np.nan_to_num([done.means[i] for i in last], nan=-np.inf)
                    keep = np.argsort(-means, kind="stable")[: len(last) // 2]
                    ids = tuple(sorted(int(done.ids[last[i]]) for i in keep))
                    return Round((Part(tuple(points[i] for i in ids), ids, window=(5, 6, 7, 8),
                                       resource=8),))  # fmt: skip
                return None

            def choose(self, history):
                rows = [(float(p.means[best_of(p)]), -r, j, best_of(p))
                        for r, f in enumerate(history) for j, p in enumerate(f.parts)]  # fmt: skip
                _, r, j, row = max(rows)
                return Choice(-r, j, row)

        return Proposer()


def _sampler(kind):
    space = {"alpha": loguniform(1e-2, 1e3)}
    return Ridge(), space, {"strategy": parcv.Sampler(kind, n_trials=4, batch=2, seed=0)}


def _random():
    space = parcv.RandomSpace({"alpha": loguniform(1e-2, 1e3)}, n_iter=4, random_state=0)
    return Ridge(), space, {}


def _halving_on_a_parameter():
    halving = parcv.Halving(resource="n_estimators", max_resources=8, factor=2, random_state=0)
    return _boost(), RATES, {"strategy": halving}


def _hyperband():
    space = parcv.RandomSpace({"learning_rate": uniform(0.05, 0.9)}, n_iter=1, random_state=0)
    return _boost(), space, {"strategy": parcv.Hyperband("n_estimators", 8, factor=2)}


def _early_stopping():
    return _boost(), RATES, {"iterations": parcv.Iterations("n_estimators", 8, patience=2)}


STRATEGIES = {
    "grid": lambda: (Ridge(), ALPHAS, {}),
    "random": _random,
    "halving on rows": lambda: (Ridge(), ALPHAS, {"strategy": parcv.Halving(factor=2)}),
    "halving on a parameter": _halving_on_a_parameter,
    "hyperband": _hyperband,
    "early stopping": _early_stopping,
    **{
        f"sampler {kind}": functools.partial(_sampler, kind)
        for kind in SAMPLERS  # every sampler kind a row: a new kind is covered
    },
    "own, on rows": lambda: (Ridge(), ALPHAS, {"strategy": _TwoRoundRows()}),
    "own, on iteration windows": lambda: (_boost(), RATES, {"strategy": _TwoWindows()}),
}


@pytest.fixture(autouse=True)
def _every_update_drawn(monkeypatch):
    """Draw the bar at every update: tqdm skips those within 0.1 s of the last, by the clock."""
    import tqdm.auto

    class EveryUpdate(tqdm.auto.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "mininterval": 0, "miniters": 1})

    monkeypatch.setattr(tqdm.auto, "tqdm", EveryUpdate)


def _renders(err: str) -> list[str]:
    """Each state the bar was drawn in, in order (tqdm redraws a line after a carriage return)."""
    return [line.strip() for line in re.split(r"[\r\n]", err) if line.strip()]


def _count_units(store) -> int:
    return read_counts(store)[1]


def _run(name, tmp_path, **options):
    if name == "sampler gp" and importlib.util.find_spec("torch") is None:
        pytest.skip("Optuna's GPSampler needs PyTorch")
    if name.startswith("sampler"):
        pytest.importorskip("optuna")
    estimator, space, kwargs = STRATEGIES[name]()
    store = tmp_path / "s.sqlite"
    result = parcv.search(estimator, space, X, Y, cv=KFold(3), backend="serial", progress=True,
                          store=store, **kwargs, **options)  # fmt: skip
    return result, store


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_the_bar_ends_at_the_units_run_with_the_winners_cv_score(name, tmp_path, capsys):
    result, store = _run(name, tmp_path)
    renders = _renders(capsys.readouterr().err)
    last = renders[-1]
    n = _count_units(store)  # every plan's units, the rounds' and the refit's
    assert f" {n}/{n} " in last, last
    assert f"best CV score={result.best_score_:.6g}" in last, last
    # The best is shown as the run goes, not only once it ends.
    assert any("best CV score=" in r for r in renders[:-1]), renders
    bound = re.search(r"of at most (\d+) units", last)
    if bound is not None:  # an adaptive strategy stopped short of its bound, and says so
        assert int(bound.group(1)) > n


def test_the_bar_of_a_nested_cv_in_rounds_shows_the_search_on_all_data(tmp_path, capsys):
    pytest.importorskip("optuna")
    result = parcv.nested_cv(Ridge(), {"alpha": loguniform(1e-2, 1e3)}, X, Y, outer=2,
                             inner=KFold(3), backend="serial", progress=True,
                             strategy=parcv.Sampler("random", n_trials=3, seed=0))  # fmt: skip
    last = _renders(capsys.readouterr().err)[-1]
    assert f"best CV score={result.final.best_score_:.6g}" in last, last
    done = re.search(r" (\d+)/(\d+) ", last)
    assert done is not None and done.group(1) == done.group(2), last


@pytest.mark.parametrize("name", ["halving on rows", "halving on a parameter", "own, on rows"])
def test_a_best_at_a_smaller_resource_gives_way_to_the_larger(name, tmp_path, capsys):
    # Scores on a third of the rows (or at 2 trees) are not the CV score of a candidate on
    # the full folds: the bar shows the best at the largest resource so far, and says which.
    result, _ = _run(name, tmp_path)
    shown = [(float(m.group(1)), m.group(2))
             for r in _renders(capsys.readouterr().err)
             if (m := re.search(r"best CV score=(\S+?)(?:,|\]| (at n_resources=\d+|on \d+ rows))",
                                r))]  # fmt: skip
    assert shown
    table = result.cv_results_
    means = np.asarray(table["mean_test_score"], dtype=float)
    if "n_resources" in table:  # halving: every shown best is a mean of its rung's rows
        resources = np.asarray(table["n_resources"])
        for score, where in shown:
            assert where and where.startswith("at n_resources=")
            rung = resources == int(where.split("=")[1])
            assert np.isclose(means[rung], score, rtol=1e-5, atol=0).any(), (score, where)
        order = [int(w.split("=")[1]) for _, w in shown]
        assert order == sorted(order)  # the resource never goes back
    else:  # own, on rows: first "on 30 rows", then on all rows (said without a level)
        wheres = [w for _, w in shown]
        assert wheres[0] == "on 30 rows" and wheres[-1] is None
    assert f"{result.best_score_:.6g}" == f"{shown[-1][0]:.6g}"


def test_a_raced_grid_ends_at_the_units_it_ran(tmp_path, capsys):
    # Before: "78/121" at the end; the race dropped the other units.
    store = tmp_path / "s.sqlite"
    alphas = {"alpha": list(np.geomspace(1e-2, 1e5, 12))}
    result = parcv.search(Ridge(), alphas, X, Y, cv=KFold(10), racing=parcv.Racing(burn_in=3),
                          backend="serial", progress=True, store=store)  # fmt: skip
    assert (np.asarray(result.cv_results_["race_eliminated_after"]) >= 0).any()
    last = _renders(capsys.readouterr().err)[-1]
    n = _count_units(store)
    assert f" {n}/{n} " in last and "of at most 121 units" in last, last
    assert f"best CV score={result.best_score_:.6g}" in last, last
