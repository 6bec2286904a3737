"""Successive halving: scikit-learn's rungs, candidates and cv_results_, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import loguniform
from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import RandomForestRegressor
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import HalvingGridSearchCV as SkHalvingGrid
from sklearn.model_selection import HalvingRandomSearchCV as SkHalvingRandom
from sklearn.model_selection import KFold, StratifiedKFold

import parcv
from parcv import Halving, Hyperband
from parcv.plan.halving import plan_schedule, promote
from parcv.strategies.halving import bracket_seeds
from tests.estimators import FIT_LOG, FitLogged, logged_fits

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

X, Y = make_classification(n_samples=300, random_state=0)
GRID = {"C": [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0], "fit_intercept": [True, False]}
CV = StratifiedKFold(3)
XR, YR = make_regression(n_samples=120, n_features=5, noise=20.0, random_state=0)
SCHEDULE = (
    "n_resources_",
    "n_candidates_",
    "n_remaining_candidates_",
    "min_resources_",
    "max_resources_",
    "n_iterations_",
    "n_possible_iterations_",
    "n_required_iterations_",
)
ALPHAS = {"alpha": [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5]}


@pytest.fixture(autouse=True)
def _fresh_log():
    FIT_LOG.unlink(missing_ok=True)
    yield
    FIT_LOG.unlink(missing_ok=True)


def _same_search(ours, theirs):
    """Rungs, candidates, cv_results_ (but times) and the winner equal scikit-learn's."""
    for name in (*SCHEDULE, "best_index_", "best_params_", "best_score_"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.cv_results_["params"] == theirs.cv_results_["params"]
    for key, want in theirs.cv_results_.items():
        if "time" in key or key == "params":
            continue
        got = ours.cv_results_[key]
        if np.ma.isMaskedArray(want):
            np.testing.assert_array_equal(got.mask, want.mask)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=key)


def test_n_samples_halving_equals_scikit_learns_grid():
    theirs = SkHalvingGrid(LogisticRegression(), GRID, cv=CV, random_state=0).fit(X, Y)
    ours = parcv.search(LogisticRegression(), GRID, X, Y, cv=CV, return_train_score=True,
                        halving=Halving(random_state=0), backend="serial")  # fmt: skip
    assert isinstance(ours, parcv.HalvingResult)
    _same_search(ours, theirs)
    assert len(ours.rungs) == ours.n_iterations_ == 3
    np.testing.assert_array_equal(ours.best_estimator_.coef_, theirs.best_estimator_.coef_)


@pytest.mark.parametrize("options", [dict(factor=2, min_resources="smallest"),
                                     dict(factor=4, aggressive_elimination=True,
                                          min_resources=30, max_resources=200)])  # fmt: skip
def test_schedules_equal_scikit_learns(options):
    theirs = SkHalvingGrid(LogisticRegression(), GRID, cv=CV, random_state=3, **options)
    theirs.fit(X, Y)
    ours = parcv.search(LogisticRegression(), GRID, X, Y, cv=CV, return_train_score=True,
                        halving=Halving(random_state=3, **options), backend="serial")  # fmt: skip
    _same_search(ours, theirs)


def test_random_space_equals_scikit_learns_random_halving():
    distributions = {"C": loguniform(1e-3, 1e3)}
    theirs = SkHalvingRandom(LogisticRegression(), distributions, n_candidates=12, cv=CV,
                             random_state=0, min_resources="exhaust").fit(X, Y)  # fmt: skip
    space = parcv.RandomSpace(distributions, n_iter=12, random_state=0)
    ours = parcv.search(LogisticRegression(), space, X, Y, cv=CV, return_train_score=True,
                        halving=Halving(random_state=0), backend="serial")  # fmt: skip
    _same_search(ours, theirs)


def test_an_estimator_parameter_as_the_resource():
    grid = {"max_depth": [2, 4, 8, None], "max_features": [0.5, 1.0]}
    forest = RandomForestRegressor(random_state=0)
    options = dict(resource="n_estimators", min_resources=2, max_resources=18, factor=3)
    theirs = SkHalvingGrid(forest, grid, cv=KFold(3), **options).fit(XR, YR)
    ours = parcv.search(forest, grid, XR, YR, cv=KFold(3), return_train_score=True,
                        halving=Halving(**options), backend="serial")  # fmt: skip
    _same_search(ours, theirs)
    last = ours.n_resources_[-1]
    assert ours.best_params_["n_estimators"] == last == ours.best_estimator_.n_estimators


def test_decisions_are_equal_on_every_backend(backend):
    halving = Halving(factor=2, random_state=0)
    serial = parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3), halving=halving,
                          backend="serial")  # fmt: skip
    other = parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3), halving=halving,
                         backend=backend)  # fmt: skip
    assert other.cv_results_["params"] == serial.cv_results_["params"]
    np.testing.assert_array_equal(
        other.cv_results_["mean_test_score"], serial.cv_results_["mean_test_score"]
    )
    assert other.best_params_ == serial.best_params_


def test_a_resumed_halving_search_fits_nothing(tmp_path):
    store = tmp_path / "run.sqlite"

    def run(**options):
        return parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3), backend="serial",
                            halving=Halving(factor=2, random_state=0), store=store,
                            save_models=True, **options)  # fmt: skip

    first = run()
    n_fits = len(logged_fits())
    assert n_fits == 3 * sum(first.n_candidates_) + 1  # every rung's folds, and the refit
    FIT_LOG.unlink()
    again = run(resume=True)
    assert logged_fits() == []
    assert again.best_params_ == first.best_params_
    np.testing.assert_array_equal(
        again.cv_results_["mean_test_score"], first.cv_results_["mean_test_score"]
    )


def test_an_interrupted_halving_search_redoes_no_finished_rung(tmp_path):
    store = tmp_path / "run.sqlite"
    halving = Halving(factor=3, min_resources=20, random_state=0)  # rungs of 20 and 60 rows
    # The same first rung, alone: what a run stopped after its first rung has stored.
    first_rung = Halving(factor=3, min_resources=20, max_resources=40, random_state=0)
    parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3), backend="serial", halving=first_rung,
                 store=store, refit=False)  # fmt: skip
    FIT_LOG.unlink()
    full = parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3), backend="serial",
                        halving=halving, store=store, resume=True)  # fmt: skip
    assert full.n_candidates_ == [9, 3]
    assert len(logged_fits()) == 3 * 3 + 1  # the second rung's folds and the refit only
    fresh = parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3), backend="serial",
                         halving=halving)  # fmt: skip
    assert full.cv_results_["params"] == fresh.cv_results_["params"]
    assert full.best_params_ == fresh.best_params_


@pytest.mark.parametrize(
    ("options", "match"),
    [
        (dict(factor=1), "factor must be a number > 1"),
        (dict(resource="n_trees", max_resources=9), "Cannot use resource=n_trees"),
        (dict(resource="alpha", max_resources=9), "Cannot use parameter alpha as the resource"),
        (dict(min_resources=50, max_resources=40), "min_resources_=50 is greater than"),
        (dict(resource="fit_intercept"), "resource can only be 'n_samples'"),
        (dict(min_resources="most"), "min_resources must be an int >= 1"),
    ],
)
def test_bad_arguments_fail_before_any_fit(options, match):
    with pytest.raises(ValueError, match=match):
        halving = Halving(**options)
        parcv.search(FitLogged(), ALPHAS, XR, YR, cv=3, halving=halving, backend="serial")
    assert logged_fits() == []


def test_a_shuffled_unseeded_cv_and_criteria_are_refused_before_any_fit():
    with pytest.raises(ValueError, match="must yield consistent folds"):
        parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3, shuffle=True), halving=Halving(),
                     backend="serial")  # fmt: skip
    with pytest.raises(ValueError, match="halving does not combine with criteria"):
        parcv.search(FitLogged(), ALPHAS, XR, YR, halving=Halving(), criteria=["aic"],
                     backend="serial")  # fmt: skip
    assert logged_fits() == []


def test_schedule_and_promotion_follow_scikit_learns_rules():
    schedule = plan_schedule(Halving(), 30, 20, 1000)
    assert schedule.n_candidates == (30, 10, 4, 2)
    assert schedule.n_remaining_candidates == 1
    # NaN ranks last; the next rung lists the kept candidates worst first, as _top_k.
    assert promote(np.array([0.3, np.nan, 0.9, 0.5]), 2).tolist() == [3, 2]


def _same_fitted(ours, theirs):
    _same_search(ours, theirs)
    assert ours.n_splits_ == theirs.n_splits_
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))


def test_halving_grid_search_cv_equals_scikit_learns():
    options = dict(cv=CV, factor=2, random_state=0)
    theirs = SkHalvingGrid(LogisticRegression(), GRID, **options).fit(X, Y)
    ours = parcv.HalvingGridSearchCV(LogisticRegression(), GRID, backend="serial", **options)
    _same_fitted(ours.fit(X, Y), theirs)
    assert ours.result_.rungs[-1].best_params_ == theirs.best_params_


@pytest.mark.parametrize("random_state", [0, None])
def test_halving_random_search_cv_equals_scikit_learns(random_state):
    distributions = {"C": loguniform(1e-3, 1e3), "fit_intercept": [True, False]}
    rng = 7 if random_state is None else random_state
    seed = np.random.RandomState(rng) if random_state is None else rng
    theirs = SkHalvingRandom(LogisticRegression(), distributions, cv=CV, random_state=seed)
    theirs.fit(X, Y)
    seed = np.random.RandomState(rng) if random_state is None else rng
    ours = parcv.HalvingRandomSearchCV(LogisticRegression(), distributions, cv=CV,
                                       random_state=seed, backend="serial")  # fmt: skip
    _same_fitted(ours.fit(X, Y), theirs)


def test_the_drop_in_on_the_local_pool_equals_serial():
    options = dict(cv=CV, factor=3, random_state=0)
    serial = parcv.HalvingGridSearchCV(LogisticRegression(), GRID, backend="serial", **options)
    pool = parcv.HalvingGridSearchCV(LogisticRegression(), GRID, backend="local", n_jobs=2,
                                     **options)  # fmt: skip
    serial.fit(X, Y)
    pool.fit(X, Y)
    assert pool.cv_results_["params"] == serial.cv_results_["params"]
    np.testing.assert_array_equal(
        pool.cv_results_["mean_test_score"], serial.cv_results_["mean_test_score"]
    )


def test_nested_cv_with_halving_equals_scikit_learns_search_in_each_outer_fold():
    outer = KFold(3, shuffle=True, random_state=0)
    ours = parcv.nested_cv(FitLogged(), ALPHAS, XR, YR, outer=outer, inner=KFold(3),
                           return_train_score=True, halving=Halving(random_state=0),
                           backend="serial")  # fmt: skip
    assert isinstance(ours, parcv.NestedHalvingResult)
    for o, (train, test) in enumerate(outer.split(XR)):
        theirs = SkHalvingGrid(FitLogged(), ALPHAS, cv=KFold(3), random_state=0)
        theirs.fit(XR[train], YR[train])
        _same_search(ours.inner[o], theirs)
        assert ours.chosen_params[o] == theirs.best_params_
        assert ours.outer_scores["score"][o] == theirs.score(XR[test], YR[test])
    assert ours.estimate["score"].mean == np.mean(ours.outer_scores["score"])
    theirs = SkHalvingGrid(FitLogged(), ALPHAS, cv=KFold(3), random_state=0).fit(XR, YR)
    assert ours.final.best_params_ == theirs.best_params_


def test_a_resumed_nested_halving_run_fits_nothing(tmp_path):
    store = tmp_path / "run.sqlite"

    def run(**options):
        return parcv.nested_cv(FitLogged(), ALPHAS, XR, YR, outer=3, inner=KFold(3),
                               halving=Halving(factor=2, random_state=0), backend="serial",
                               store=store, save_models=True, **options)  # fmt: skip

    first = run()
    FIT_LOG.unlink()
    again = run(resume=True)
    assert logged_fits() == []
    np.testing.assert_array_equal(again.outer_scores["score"], first.outer_scores["score"])
    assert again.final.best_params_ == first.final.best_params_


class FitLoggedIterations(FitLogged):
    """FitLogged with an iteration count to halve on (it does not change the fit)."""

    def __init__(self, alpha=1.0, fit_intercept=True, max_iter=1):
        super().__init__(alpha=alpha, fit_intercept=fit_intercept)
        self.max_iter = max_iter


def test_hyperband_brackets_are_the_papers_table():
    # Li et al., "Hyperband", JMLR 18 (2018), Table 1: R = 81, eta = 3; bracket s starts
    # n_i = 81, 34, 15, 8, 5 configurations with r_i = 1, 3, 9, 27, 81 resources.
    ours = Hyperband("max_iter", 81, factor=3).brackets()
    assert {b.index: (b.n_candidates, b.min_resources) for b in ours} == {
        4: (81, 1), 3: (34, 3), 2: (15, 9), 1: (8, 27), 0: (5, 81),
    }  # fmt: skip


def test_each_hyperband_bracket_is_scikit_learns_random_halving():
    from sklearn.linear_model import SGDClassifier

    distributions = {"alpha": loguniform(1e-5, 1e-1)}
    sgd = SGDClassifier(random_state=0, tol=None)
    space = parcv.RandomSpace(distributions, random_state=5)
    ours = parcv.search(sgd, space, X, Y, cv=CV, return_train_score=True, backend="serial",
                        halving=Hyperband("max_iter", 9))  # fmt: skip
    assert isinstance(ours, parcv.HyperbandResult)
    assert [b.n_candidates_[0] for b in ours.brackets] == [9, 5, 3]
    # Each bracket draws with its own seed, spawned from the space's (SeedSequence.spawn).
    seeds = bracket_seeds(5, 3)
    for bracket, seed, first in zip(ours.brackets, seeds, [1, 3, 9], strict=True):
        theirs = SkHalvingRandom(sgd, distributions, n_candidates=bracket.n_candidates_[0],
                                 resource="max_iter", min_resources=first, max_resources=9,
                                 cv=CV, random_state=seed).fit(X, Y)  # fmt: skip
        _same_search(bracket, theirs)
    best = int(np.argmax([b.best_score_ for b in ours.brackets]))
    assert ours.best_params_ == ours.brackets[best].best_params_
    assert ours.best_bracket_ == [2, 1, 0][best]
    assert len(ours.cv_results_["params"]) == sum(sum(b.n_candidates_) for b in ours.brackets)
    assert ours.best_estimator_.max_iter == 9


def test_a_resumed_hyperband_search_fits_nothing(tmp_path):
    store = tmp_path / "run.sqlite"
    space = parcv.RandomSpace({"alpha": loguniform(1e-3, 1e5)}, random_state=0)

    def run(**options):
        return parcv.search(FitLoggedIterations(), space, XR, YR, cv=KFold(3), backend="serial",
                            halving=Hyperband("max_iter", 9), store=store, save_models=True,
                            **options)  # fmt: skip

    first = run()
    FIT_LOG.unlink()
    again = run(resume=True)
    assert logged_fits() == []
    assert again.best_params_ == first.best_params_


def test_bad_hyperband_arguments_fail_before_any_fit():
    with pytest.raises(ValueError, match="resource must name the estimator parameter"):
        Hyperband("n_samples", 9)
    with pytest.raises(ValueError, match="factor must be a number > 1"):
        Hyperband("max_iter", 9, factor=1)
    with pytest.raises(TypeError, match="Hyperband draws each bracket's candidates"):
        parcv.search(FitLoggedIterations(), ALPHAS, XR, YR, halving=Hyperband("max_iter", 9),
                     backend="serial")  # fmt: skip
    space = parcv.RandomSpace({"alpha": loguniform(1e-3, 1e5)}, random_state=0)
    with pytest.raises(ValueError, match="Cannot use resource=n_iter"):
        parcv.search(FitLoggedIterations(), space, XR, YR, halving=Hyperband("n_iter", 9),
                     backend="serial")  # fmt: skip
    assert logged_fits() == []


FAULTY_SPACE = {"alpha": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]}


def _faulty_halving(fault, **options):
    from tests.estimators import Faulty

    return parcv.search(Faulty(fault=fault), FAULTY_SPACE, XR, YR, cv=KFold(3),
                        halving=Halving(factor=2, random_state=0), error_score=-1e6,
                        progress=False, **options)  # fmt: skip


def _failed_in_rungs(result):
    return [sorted({r.unit.candidate for r in rung.records if not r.ok}) for rung in result.rungs]


def test_a_failing_candidate_scores_error_score_and_is_not_promoted(tmp_path):
    store = tmp_path / "run.sqlite"
    with pytest.warns(parcv.FitFailedWarning):
        result = _faulty_halving("oom", backend="serial", store=store)
    assert _failed_in_rungs(result) == [[2], [], []]  # alpha=1.0 fails in rung 0 only
    assert {"alpha": 1.0} not in result.cv_results_["params"][6:]
    with pytest.warns(parcv.FitFailedWarning):
        again = _faulty_halving("oom", backend="serial", store=store, resume=True)
    assert [len(rung.records) for rung in again.rungs] == [len(r.records) for r in result.rungs]
    assert again.cv_results_["params"] == result.cv_results_["params"]


@pytest.mark.slow
def test_a_unit_past_its_timeout_fails_and_the_halving_goes_on():
    with pytest.warns(parcv.FitFailedWarning):
        result = _faulty_halving("hang", backend="local", n_jobs=2, timeout=2.0)
    assert _failed_in_rungs(result) == [[2], [], []]
    reference = _faulty_halving("none", backend="serial")
    others = [0, 1, 3, 4, 5]  # the first rung but alpha=1.0, which the reference keeps
    np.testing.assert_array_equal(
        result.cv_results_["mean_test_score"][others],
        reference.cv_results_["mean_test_score"][others],
    )


def test_verbose_logs_scikit_learns_lines_about_the_rungs(capsys):
    parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3), halving=Halving(random_state=0),
                 backend="serial", verbose=1, progress=False)  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == ["n_iterations: 3", "n_required_iterations: 3", "n_possible_iterations: 3",
                       "min_resources_: 13"]  # fmt: skip
    assert out[-3:] == ["iter: 2", "n_candidates: 1", "n_resources: 117"]


def test_the_drop_in_clones_pickles_and_refuses_bad_counts():
    import pickle

    from sklearn.base import clone

    search = parcv.HalvingGridSearchCV(LogisticRegression(), GRID, cv=CV, random_state=0,
                                       backend="serial")  # fmt: skip
    assert clone(search).get_params()["factor"] == 3
    fitted = pickle.loads(pickle.dumps(search.fit(X, Y)))
    assert fitted.n_candidates_ == search.n_candidates_
    np.testing.assert_array_equal(fitted.predict(X), search.predict(X))
    for bad, error in [(0, ValueError), (2.5, TypeError)]:
        random = parcv.HalvingRandomSearchCV(LogisticRegression(), {"C": [1.0]},
                                             n_candidates=bad, backend="serial")  # fmt: skip
        with pytest.raises(error, match="n_candidates must be an int >= 1"):
            random.fit(X, Y)
    with pytest.raises(TypeError, match="halving must be a parcv"):
        parcv.search(FitLogged(), ALPHAS, XR, YR, halving=True, backend="serial")


def test_nested_cv_with_hyperband():
    space = parcv.RandomSpace({"alpha": loguniform(1e-3, 1e5)}, random_state=0)
    result = parcv.nested_cv(FitLoggedIterations(), space, XR, YR, outer=3, inner=KFold(3),
                             halving=Hyperband("max_iter", 9), backend="serial")  # fmt: skip
    assert all(isinstance(r, parcv.HyperbandResult) for r in result.inner)
    assert isinstance(result.final, parcv.HyperbandResult)
    assert [p["max_iter"] for p in result.chosen_params] == [9, 9, 9]
    assert result.outer_scores["score"].shape == (3,)


GROWN: list[int] = []  # per fit of the counted forest (serial backend): trees it grew


def _count_growth(monkeypatch):
    """Count the trees each RandomForestRegressor fit grows: the class itself, as the shortcut
    table names exact classes (a subclass is fitted from scratch at every rung)."""
    fit = RandomForestRegressor.fit

    def counted(self, X, y, sample_weight=None):
        before = len(getattr(self, "estimators_", [])) if self.warm_start else 0
        fit(self, X, y, sample_weight=sample_weight)
        GROWN.append(len(self.estimators_) - before)
        return self

    monkeypatch.setattr(RandomForestRegressor, "fit", counted)


@pytest.mark.parametrize("backend_name", ["serial", "local"])
def test_a_promoted_candidate_continues_its_fits_with_scikit_learns_numbers(
    backend_name, monkeypatch
):
    _count_growth(monkeypatch)
    grid = {"max_depth": [2, 4, 8, None], "max_features": [0.5, 1.0]}
    options = dict(resource="n_estimators", min_resources=2, max_resources=18, factor=3)
    forest = RandomForestRegressor(random_state=0)
    GROWN.clear()
    theirs = SkHalvingGrid(forest, grid, cv=KFold(3), refit=False, **options).fit(XR, YR)
    from_scratch = sum(GROWN)
    GROWN.clear()
    ours = parcv.search(forest, grid, XR, YR, cv=KFold(3), return_train_score=True, refit=False,
                        halving=Halving(**options), backend=backend_name, n_jobs=2)  # fmt: skip
    _same_search(ours, theirs)
    assert ours.n_resources_ == [2, 6] and ours.n_candidates_ == [8, 3]
    if backend_name == "serial":  # the counter lives in this process
        # 8 candidates x 3 folds grow 2 trees, then the 3 kept grow 4 more (not 6 anew).
        assert sum(GROWN) == 3 * (8 * 2 + 3 * 4)
        assert from_scratch == 3 * (8 * 2 + 3 * 6)


def test_racing_inside_each_rung_never_promotes_a_dropped_candidate_over_a_survivor():
    racing = parcv.Racing(burn_in=2, alpha=0.3)
    alphas = {"alpha": [1e-3, 1e-2, 0.1, 1.0, 10.0, 1e2, 1e3, 1e4, 1e5]}
    result = parcv.search(FitLogged(), alphas, XR, YR, cv=KFold(5), racing=racing,
                          halving=Halving(factor=3, min_resources=40, random_state=0),
                          backend="serial")  # fmt: skip
    first = result.rungs[0].cv_results_
    dropped = np.asarray(first["race_eliminated_after"]) >= 0
    assert dropped.any()
    survivors = {repr(p) for p, d in zip(first["params"], dropped, strict=True) if not d}
    promoted = {repr(p) for p in result.rungs[1].cv_results_["params"]}
    assert len(survivors) >= len(promoted) == 3
    assert promoted <= survivors


def test_the_report_plots_every_rung_and_bracket():
    from parcv.report.plots import halving_rungs, render_plots

    result = parcv.search(FitLogged(), ALPHAS, XR, YR, cv=KFold(3),
                          halving=Halving(factor=2, random_state=0), backend="serial")  # fmt: skip
    assert render_plots(result)["halving.png"].startswith(b"\x89PNG")
    fig = halving_rungs(result)
    (ax,) = fig.axes
    assert len(ax.get_xticks()) == result.n_iterations_
    counts = " → ".join(map(str, result.n_candidates_))
    assert counts in fig._suptitle.get_text()
    # A line (or point) per candidate of the first rung, and the winner's star; the scores
    # below the axis (the first rung's worst) are triangles at its edge, one line of them.
    paths = [line for line in ax.lines if line.get_marker() not in ("v", "^")]
    assert len(paths) == result.n_candidates_[0] + 1
