"""The strategy seam: rounds decided on finished rounds, stored, reloaded, resumed, concurrent."""

from __future__ import annotations

import json
import math
from contextlib import contextmanager

import numpy as np
import pytest
from scipy.stats import loguniform
from sklearn.datasets import make_regression
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, RepeatedKFold, cross_val_score

import parcv
import parcv.engine.work as work
from parcv import Halving, Hyperband, Iterations
from parcv.engine.work import run_units
from parcv.strategies.strategy import Choice, Part, Round, RoundBound, Schedule, best_of
from tests.estimators import FitLogged

XR, YR = make_regression(n_samples=120, n_features=5, noise=20.0, random_state=0)
ALPHAS = {"alpha": [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5]}


class FitLoggedIterations(FitLogged):
    """FitLogged with an iteration count to halve on (it does not change the fit)."""

    def __init__(self, alpha=1.0, fit_intercept=True, max_iter=1):
        super().__init__(alpha=alpha, fit_intercept=fit_intercept)
        self.max_iter = max_iter


def _same(a, b):
    assert a.to_json() == b.to_json()


# --- load rebuilds what the run returned ------------------------------------------------


def test_load_of_a_hyperband_store_returns_the_runs_result(tmp_path):
    # Before: load gave the last bracket's last rung, another winner (0.9267 for 0.93).
    space = parcv.RandomSpace({"alpha": loguniform(1e-3, 1e5)}, random_state=0)
    ran = parcv.search(FitLoggedIterations(), space, XR, YR, cv=KFold(3), backend="serial",
                       halving=Hyperband("max_iter", 9), store=tmp_path / "s.sqlite")  # fmt: skip
    loaded = parcv.load(tmp_path / "s.sqlite")
    assert isinstance(loaded, parcv.HyperbandResult)
    assert loaded.best_params_ == ran.best_params_ and loaded.best_score_ == ran.best_score_
    assert [b.n_candidates_ for b in loaded.brackets] == [b.n_candidates_ for b in ran.brackets]
    _same(loaded, ran)


def test_load_of_a_halving_store_has_every_rung(tmp_path):
    # Before: only the last rung's cv_results_.
    ran = parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3), backend="serial",
                       halving=Halving(random_state=0), store=tmp_path / "s.sqlite",
                       save_models=True)  # fmt: skip
    loaded = parcv.load(tmp_path / "s.sqlite")
    assert isinstance(loaded, parcv.HalvingResult)
    assert (
        loaded.cv_results_["iter"].tolist()
        == ran.cv_results_["iter"].tolist()
        == ([0] * 9 + [1] * 3 + [2])
    )
    _same(loaded, ran)
    assert loaded.best_estimator_.alpha == ran.best_params_["alpha"]


def test_load_of_nested_halving_has_its_outer_scores(tmp_path):
    # Before: a result with no outer_scores.
    ran = parcv.nested_cv(FitLogged(), ALPHAS, XR, YR, outer=3, inner=KFold(3),
                          halving=Halving(random_state=0), backend="serial",
                          store=tmp_path / "s.sqlite")  # fmt: skip
    loaded = parcv.load(tmp_path / "s.sqlite")
    assert isinstance(loaded, parcv.NestedResult)
    np.testing.assert_array_equal(loaded.outer_scores["score"], ran.outer_scores["score"])
    assert loaded.chosen_params == ran.chosen_params
    _same(loaded, ran)


def test_an_unfinished_run_in_rounds_says_how_to_finish(tmp_path):
    store = tmp_path / "s.sqlite"
    parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3), backend="serial",
                 halving=Halving(random_state=0), store=store)  # fmt: skip
    import sqlite3

    with sqlite3.connect(store) as conn:
        # As a run stopped before its searches chose leaves it: without choices, unsealed.
        conn.execute("DELETE FROM meta WHERE name IN ('choices', 'seal')")
    with pytest.raises(parcv.UnfinishedRunError, match="resume=True"):
        parcv.load(store)


# --- early stopping: no NaN is ever reused where a fresh run scores -----------------------


GB = GradientBoostingRegressor(learning_rate=0.5, random_state=0)
GB_SPACE = {"max_depth": [1, 3]}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (dict(every=1), dict(every=2)),
        (
            dict(scoring=["r2", "neg_mean_absolute_error"], refit="r2"),
            dict(scoring=["r2", "neg_mean_absolute_error"], refit="neg_mean_absolute_error"),
        ),
        (
            dict(cv=RepeatedKFold(n_splits=3, n_repeats=2, random_state=0)),
            dict(cv=RepeatedKFold(n_splits=3, n_repeats=1, random_state=0)),
        ),
    ],
    ids=["every", "refit-metric", "fewer-repeats"],
)
def test_a_resume_with_other_inputs_equals_a_fresh_run(tmp_path, first, second):
    # Before: the checkpoints after a stop were stored as NaN records keyed by the stopping
    # rule only; a resume whose paths ran further read those NaNs where a fresh run scores.
    def run(store, options, resume):
        o = {"cv": KFold(3), "every": 1, **options}
        every = o.pop("every")
        return parcv.search(GB, GB_SPACE, XR, YR, backend="serial", store=store, resume=resume,
                            iterations=Iterations("n_estimators", up_to=30, every=every,
                                                  patience=2), **o)  # fmt: skip

    run(tmp_path / "a.sqlite", first, resume=False)
    resumed = run(tmp_path / "a.sqlite", second, resume=True)
    fresh = run(tmp_path / "b.sqlite", second, resume=False)
    for key, want in fresh.cv_results_.items():
        if "time" in key:
            continue
        got = resumed.cv_results_[key]
        if key == "params":
            assert got == want
        else:
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=key)
    assert resumed.best_params_ == fresh.best_params_


def test_early_stopping_equals_separate_fits_up_to_each_stop():
    it = Iterations("n_estimators", up_to=40, every=2, patience=2)
    ours = parcv.search(GB, GB_SPACE, XR, YR, cv=KFold(3), iterations=it, backend="serial")
    grid = {"max_depth": [1, 3], "n_estimators": list(it.checkpoints)}
    full = parcv.search(GB, grid, XR, YR, cv=KFold(3), backend="serial")
    means = ours.cv_results_["mean_test_score"]
    stopped = ours.cv_results_["path_stopped"]
    assert stopped.any() and not stopped.all()
    np.testing.assert_array_equal(np.isnan(means), stopped)
    np.testing.assert_array_equal(means[~stopped], full.cv_results_["mean_test_score"][~stopped])
    # The stop of each point is xgb.cv's rule on its means (no improvement for 2 checkpoints).
    for point in range(2):
        rows = np.arange(point * len(it.checkpoints), (point + 1) * len(it.checkpoints))
        path = full.cv_results_["mean_test_score"][rows]
        stop = parcv.plan.iterations.stop_index(path.tolist(), 2)
        expected = np.zeros(len(rows), dtype=bool)
        if stop is not None:
            expected[stop + 1 :] = True
        np.testing.assert_array_equal(stopped[rows], expected)


# --- one driver: every backend decides the same; rounds start as soon as they can ------


@pytest.mark.parametrize(
    "strategy",
    [
        Halving(random_state=0),
        Hyperband("max_iter", 9),
        Iterations("n_estimators", up_to=20, every=2, patience=2),
    ],
    ids=["halving", "hyperband", "early-stopping"],
)
def test_every_backend_runs_the_same_rounds(backend, strategy):
    if isinstance(strategy, Iterations):
        estimator, space, kwargs = GB, GB_SPACE, {"iterations": strategy}
    else:
        estimator, kwargs = FitLoggedIterations(), {"halving": strategy}
        space = (
            ALPHAS
            if isinstance(strategy, Halving)
            else parcv.RandomSpace({"alpha": loguniform(1e-3, 1e5)}, random_state=0)
        )
    serial = parcv.nested_cv(estimator, space, XR, YR, outer=2, inner=KFold(3),
                             backend="serial", **kwargs)  # fmt: skip
    other = parcv.nested_cv(estimator, space, XR, YR, outer=2, inner=KFold(3),
                            backend=backend, **kwargs)  # fmt: skip
    np.testing.assert_array_equal(other.outer_scores["score"], serial.outer_scores["score"])
    assert other.chosen_params == serial.chosen_params
    for ours, theirs in zip(other.inner, serial.inner, strict=True):
        assert ours.cv_results_["params"] == theirs.cv_results_["params"]
        np.testing.assert_array_equal(
            ours.cv_results_["mean_test_score"], theirs.cv_results_["mean_test_score"]
        )


class _OrderedExecutor:
    """One worker that finishes outer fold 0's chunks first; logs plan additions and results."""

    n_workers = 1
    chunk_seconds = 0.0
    chunk_rate = math.inf
    depth = 2

    def __init__(self, plan, data):
        self.plans, self.data, self.queue, self.count, self.events = [plan], data, {}, 0, []

    def add_plan(self, plan):
        self.plans.append(plan)
        self.events.append(("add", len(self.plans) - 1))
        return len(self.plans) - 1

    def submit(self, units, plan=0):
        self.count += 1
        self.queue[self.count] = (plan, units)
        return self.count

    def wait(self):
        # The chunk of the earliest plan first: a barrier between rounds would make the plans
        # of the second outer fold's first round finish before the first fold's second round.
        ticket = min(self.queue, key=lambda t: (self.queue[t][0], t))
        plan, units = self.queue.pop(ticket)
        self.events.append(("done", plan))
        yield ticket, run_units(self.plans[plan], self.data, units)

    def cancel(self):
        self.queue.clear()


def test_a_round_starts_as_soon_as_the_records_it_reads_are_in():
    made = []

    class Backend:
        @contextmanager
        def open(self, plan, data):
            made.append(_OrderedExecutor(plan, data))
            yield made[-1]

    serial = parcv.nested_cv(FitLogged(), ALPHAS, XR, YR, outer=2, inner=KFold(3),
                             halving=Halving(random_state=0), backend="serial")  # fmt: skip
    ordered = parcv.nested_cv(FitLogged(), ALPHAS, XR, YR, outer=2, inner=KFold(3),
                              halving=Halving(random_state=0), backend=Backend())  # fmt: skip
    np.testing.assert_array_equal(ordered.outer_scores["score"], serial.outer_scores["score"])
    events = made[0].events
    # Plans 1, 2 and 3 are the first rungs of outer folds 0, 1 and all data; the first plan
    # added after them is outer fold 0's second rung: added before any of plan 2's units ran.
    added = [pid for what, pid in events if what == "add"]
    assert added[:3] == [1, 2, 3]
    second_rung = added[3]
    assert events.index(("add", second_rung)) < events.index(("done", 2))


class _TwoWorkers(_OrderedExecutor):
    """Two workers, chunks done in the order sent: the driver speculates on idle ones."""

    n_workers = 2

    def wait(self):
        ticket = min(self.queue)
        plan, units = self.queue.pop(ticket)
        yield ticket, run_units(self.plans[plan], self.data, units)


def test_the_driver_forgets_each_finished_plan_of_a_run_in_rounds(monkeypatch):
    # A run in rounds adds a plan per part of every round; the driver looks over its plans
    # at every step, so it keeps only those not yet finished (a guess that comes back for
    # a finished one is dropped).
    import parcv.engine.rounds as rounds_module

    sizes = []

    class Counted(rounds_module.Driver):
        def step(self):
            sizes.append(len(self.entries))
            return super().step()

    monkeypatch.setattr(rounds_module, "Driver", Counted)

    class Backend:
        @contextmanager
        def open(self, plan, data):
            yield _TwoWorkers(plan, data)

    def space():
        return parcv.RandomSpace({"alpha": loguniform(1e-3, 1e5)}, random_state=0)

    strategy = Hyperband("max_iter", 27, factor=3)
    ours = parcv.search(FitLoggedIterations(), space(), XR, YR, cv=KFold(3), halving=strategy,
                        backend=Backend())  # fmt: skip
    serial = parcv.search(FitLoggedIterations(), space(), XR, YR, cv=KFold(3),
                          halving=strategy, backend="serial")  # fmt: skip
    np.testing.assert_array_equal(ours.cv_results_["mean_test_score"],
                                  serial.cv_results_["mean_test_score"])  # fmt: skip
    n_plans = sum(len(b.rungs) for b in ours.brackets) + 1  # every rung's part, the refit
    assert n_plans >= 8 and max(sizes) < n_plans
    assert max(sizes) <= len(ours.brackets) + 1  # a part per bracket in flight at most


@pytest.mark.parametrize("with_store", [False, True], ids=["no-store", "store"])
def test_a_point_proposed_again_takes_the_records_of_its_first_trial(
    monkeypatch, tmp_path, with_store
):
    # TPE over two points proposes each again and again. A trial of a point the run has
    # scored takes those records by content key (from the store, or from the run without
    # one) and fits nothing; every trial's scores are scikit-learn's on the same folds.
    pytest.importorskip("optuna")
    ran = []
    run_unit = work.run_unit

    def counted(plan, data, unit, cache):
        ran.append((unit.kind, unit.inner, plan.candidates[unit.candidate].params["alpha"]))
        return run_unit(plan, data, unit, cache)

    monkeypatch.setattr(work, "run_unit", counted)
    space = {"alpha": [0.1, 10.0]}
    store = tmp_path / "s.sqlite" if with_store else None
    strategy = parcv.Sampler("tpe", n_trials=8, seed=0)
    result = parcv.search(Ridge(), space, XR, YR, cv=KFold(3), backend="serial", refit=False,
                          strategy=strategy, store=store)  # fmt: skip
    params = result.cv_results_["params"]
    assert len(params) == 8 and {p["alpha"] for p in params} == {0.1, 10.0}
    for row, p in enumerate(params):
        expected = cross_val_score(Ridge(**p), XR, YR, cv=KFold(3))
        scores = [result.cv_results_[f"split{k}_test_score"][row] for k in range(3)]
        np.testing.assert_array_equal(scores, expected)
    assert sorted(ran) == sorted(("fit", k, a) for k in range(3) for a in (0.1, 10.0))


def test_a_run_in_rounds_reads_its_stores_keys_as_it_opens_it_not_for_every_part(
    monkeypatch, tmp_path
):
    # Each part of a run in rounds looks its units up among the content keys its store holds.
    # Read from the store for every part, they made a sampler's run quadratic in its trials
    # (40 ms a part at 3,000 records); the run now keeps them as it stores its records, and
    # its own records to take. A resume (which reads the earlier run's records it takes from
    # the store) takes every unit of the same rounds back.
    pytest.importorskip("optuna")
    import parcv.store.chunks as chunks
    import parcv.store.messages as messages
    import parcv.store.readers as readers

    reads = []
    read = chunks.read_stored_keys

    def counted(conn):
        reads.append(conn)
        return read(conn)

    for module in (chunks, readers, messages):
        monkeypatch.setattr(module, "read_stored_keys", counted)

    def run(n_trials, store, **kwargs):
        reads.clear()
        strategy = parcv.Sampler("tpe", n_trials=n_trials, seed=0)
        return parcv.search(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, XR, YR, cv=KFold(3),
                            backend="serial", strategy=strategy, store=store, **kwargs)  # fmt: skip

    run(4, tmp_path / "a.sqlite")
    few = len(reads)
    first = run(16, tmp_path / "b.sqlite")
    assert len(reads) == few
    again = run(16, tmp_path / "b.sqlite", resume=True)
    _same(again, first)


# --- a strategy of one's own: one file and its test --------------------------------------


class _Coordinate:
    """A toy strategy: halve the grid of alphas around the best, three rounds."""

    name = "coordinate"

    def config(self):
        return {"name": self.name, "joins": "table"}

    def schedule(self, context):
        n = len(context.candidates)
        return Schedule((RoundBound(n, n * context.n_splits, "all"),), exact=False)

    def start(self, context):
        return _CoordinateProposer(context.candidates)


class _CoordinateProposer:
    def __init__(self, candidates):
        self.candidates = candidates

    def propose(self, history, seed):
        if len(history) == 3:
            return None
        if not history:
            rows = tuple(range(0, len(self.candidates), 4))
        else:
            last = history[-1].parts[0]
            best = last.ids[best_of(last)]
            rows = tuple(i for i in (best - 1, best + 1) if 0 <= i < len(self.candidates))
            rows = rows or (best,)
        return Round((Part(tuple(self.candidates[i] for i in rows), rows),), {"rows": list(rows)})

    def choose(self, history):
        found = [(float(p.means[best_of(p)]), Choice(r, 0, best_of(p)))
                 for r, f in enumerate(history) for p in f.parts]  # fmt: skip
        return max(found, key=lambda x: (x[0], -x[1].round))[1]


def test_a_strategy_of_ones_own_runs_on_the_driver_and_reloads(tmp_path):
    store = tmp_path / "s.sqlite"
    result = parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3), strategy=_Coordinate(),
                          backend="serial", store=store)  # fmt: skip
    reference = parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3), backend="serial")
    rows = [reference.cv_results_["params"].index(p) for p in result.cv_results_["params"]]
    np.testing.assert_array_equal(result.cv_results_["mean_test_score"],
                                  reference.cv_results_["mean_test_score"][rows])  # fmt: skip
    best = int(np.nanargmax(result.cv_results_["mean_test_score"]))
    assert result.best_params_ == result.cv_results_["params"][best]
    assert result.best_estimator_.alpha == result.best_params_["alpha"]
    _same(parcv.load(store), result)
    assert (
        json.loads(parcv.load(store).to_json())["best_params"]
        == json.loads(result.to_json())["best_params"]
    )
    assert math.isfinite(result.best_score_)


def test_inspect_counts_the_units_a_halving_run_makes(tmp_path, capsys):
    from parcv.cli import main

    alphas = ", ".join(repr(float(10.0**e)) for e in np.linspace(-4, 9, 27))
    spec = tmp_path / "h.toml"
    spec.write_text(
        '[data]\nsource = "sklearn:diabetes"\n[estimator]\nclass = "sklearn.linear_model.Ridge"\n'
        f"[space]\nalpha = [{alphas}]\n[search]\nhalving = {{ factor = 3 }}\n[cv]\ncv = 3\n"
    )
    out = tmp_path / "run"
    assert main(["inspect", str(spec), "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "units      120 fits + 1 refit(s) = 121" in shown  # before: 82
    assert "rung 3: 1 candidates x 3 folds" in shown
    assert main(["run", str(spec), "--out", str(out), "--backend", "serial"]) == 0
    assert "121 units computed" in capsys.readouterr().out
    report = (out / "report.md").read_text()
    assert "| scored in (resource) |" in report and "rung 2 (144)" in report


def test_strategy_and_halving_together_are_refused():
    with pytest.raises(ValueError, match="strategy= and halving="):
        parcv.search(FitLogged(), ALPHAS, XR, YR, strategy=Halving(), halving=Halving(),
                     backend="serial")  # fmt: skip
    with pytest.raises(TypeError, match=r"strategy must be a parcv\.Halving"):
        parcv.search(FitLogged(), ALPHAS, XR, YR, strategy="tpe", backend="serial")


# --- Optuna's samplers on the driver -----------------------------------------------------


def test_a_sampler_through_search_equals_optunas_own_study(backend):
    optuna = pytest.importorskip("optuna")
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import cross_val_score

    cv = KFold(3, shuffle=True, random_state=0)
    space = {"alpha": loguniform(1e-3, 1e3)}
    ours = parcv.search(Ridge(), space, XR, YR, cv=cv, backend=backend,
                        strategy=parcv.Sampler("tpe", n_trials=12, seed=0))  # fmt: skip

    def objective(trial):
        alpha = trial.suggest_float("alpha", 1e-3, 1e3, log=True)
        return float(cross_val_score(Ridge(alpha=alpha), XR, YR, cv=cv).mean())

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=0))
    study.optimize(objective, n_trials=12)
    assert [p["alpha"] for p in ours.cv_results_["params"]] == [
        t.params["alpha"] for t in study.trials
    ]
    np.testing.assert_array_equal(ours.cv_results_["mean_test_score"],
                                  [t.value for t in study.trials])  # fmt: skip
    assert ours.best_params_ == study.best_params
    assert ours.best_score_ == study.best_value


def test_a_batched_sampler_in_nested_cv_is_the_same_on_every_backend(backend, tmp_path):
    pytest.importorskip("optuna")
    from sklearn.linear_model import Ridge

    def run(b, store=None):
        return parcv.nested_cv(Ridge(), {"alpha": loguniform(1e-3, 1e3)}, XR, YR, outer=2,
                               inner=3, strategy=parcv.Sampler("tpe", n_trials=6, batch=3),
                               backend=b, store=store)  # fmt: skip

    serial = run("serial")
    other = run(backend, tmp_path / "s.sqlite")
    np.testing.assert_array_equal(other.outer_scores["score"], serial.outer_scores["score"])
    assert other.chosen_params == serial.chosen_params
    _same(parcv.load(tmp_path / "s.sqlite"), other)


def test_a_sampler_spec_runs_nested_and_reports_its_trials(tmp_path, capsys):
    pytest.importorskip("optuna")
    from parcv.cli import main

    spec = tmp_path / "tpe.toml"
    spec.write_text(
        '[data]\nsource = "sklearn:diabetes"\nn_samples = 120\n'
        '[estimator]\nclass = "sklearn.linear_model.Ridge"\n'
        "[space]\nalpha = { loguniform = [1e-3, 1e3] }\n"
        '[search]\nsampler = { kind = "tpe", seed = 0, n_trials = 6, batch = 3 }\n'
        "[cv]\nouter = 2\ninner = 3\n"
    )
    out = tmp_path / "run"
    assert main(["inspect", str(spec), "--out", str(out)]) == 0
    assert "units      at most 54 fits + 3 refit(s) = 57" in capsys.readouterr().out
    assert main(["run", str(spec), "--out", str(out), "--backend", "serial"]) == 0
    assert "57 units computed" in capsys.readouterr().out
    assert (out / "sampler_trials.png").is_file() and (out / "param_importance.png").is_file()
    loaded = parcv.load(out / "store.sqlite")
    assert isinstance(loaded, parcv.NestedResult) and len(loaded.inner) == 2
    assert [len(r.cv_results_["params"]) for r in loaded.inner] == [6, 6]


def test_the_drop_in_searches_take_a_strategy():
    pytest.importorskip("optuna")
    from sklearn.linear_model import Ridge

    space = {"alpha": loguniform(1e-3, 1e3)}
    drop_in = parcv.RandomizedSearchCV(
        Ridge(),
        space,
        cv=KFold(3),
        backend="serial",
        strategy=parcv.Sampler("tpe", n_trials=5, seed=0),
    )
    drop_in.fit(XR, YR)
    direct = parcv.search(Ridge(), space, XR, YR, cv=KFold(3), backend="serial",
                          strategy=parcv.Sampler("tpe", n_trials=5, seed=0))  # fmt: skip
    assert drop_in.cv_results_["params"] == direct.cv_results_["params"]
    assert drop_in.best_params_ == direct.best_params_
    nested = parcv.NestedCV(FitLogged(), ALPHAS, outer=2, inner=KFold(3), backend="serial",
                            strategy=Halving(random_state=0)).fit(XR, YR)  # fmt: skip
    assert nested.outer_scores_["score"].shape == (2,)


def test_a_resumed_sampler_search_fits_nothing_and_decides_the_same(tmp_path):
    pytest.importorskip("optuna")
    from tests.estimators import FIT_LOG, logged_fits

    store = tmp_path / "s.sqlite"

    def run(**options):
        return parcv.nested_cv(FitLogged(), {"alpha": loguniform(1e-3, 1e3)}, XR, YR, outer=2,
                               inner=KFold(3), strategy=parcv.Sampler("tpe", n_trials=4, batch=2),
                               backend="serial", store=store, save_models=True,
                               **options)  # fmt: skip

    FIT_LOG.unlink(missing_ok=True)
    first = run()
    FIT_LOG.unlink()
    again = run(resume=True)
    assert logged_fits() == []
    _same(again, first)
    FIT_LOG.unlink(missing_ok=True)
