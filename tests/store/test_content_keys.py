"""Content-addressed units: an edited or grown sweep computes only what changed.

Fits are counted by an estimator that logs each fit to a file (tests/estimators.py),
not by parcv's own counters.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import loguniform
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, RepeatedKFold

import parcv
from parcv.errors import ModelNotAvailableError, PlanMismatchError
from parcv.plan.build import build_plan
from parcv.plan.data import check_dataset
from parcv.plan.keys import candidate_digest, content_keys
from parcv.plan.records import Unit
from parcv.plan.space import RandomSpace
from parcv.store.readers import read_counts
from tests.estimators import FIT_LOG, FitLogged, logged_fits

X, Y = make_regression(n_samples=60, n_features=5, noise=20.0, random_state=0)
SIX = [0.01, 1.0, 10.0, 100.0, 1e3, 1e4]
NINE = [*SIX, 0.1, 30.0, 3e3]


@pytest.fixture(autouse=True)
def _fresh_log():
    FIT_LOG.unlink(missing_ok=True)
    yield
    FIT_LOG.unlink(missing_ok=True)


def _nested(grid, store=None, backend="serial", **options):
    return parcv.nested_cv(
        FitLogged(), {"alpha": grid}, X, Y, outer=3, inner=3, backend=backend, store=store,
        save_models=store is not None, **options,
    )  # fmt: skip


def _chosen(result):
    """The chosen alpha of each refit and of the final fit."""
    chosen = {("refit", o): p["alpha"] for o, p in enumerate(result.chosen_params)}
    return {**chosen, ("final",): result.final.best_params_["alpha"]}


def _scores(result):
    return {r.key: (r.unit.candidate, r.test_scores) for r in result.records}


def _same(got, want):
    """Every record's candidate and scores equal (==, bit for bit)."""
    assert _scores(got) == _scores(want)


def test_growing_a_grid_computes_the_new_candidates_and_the_changed_refits(tmp_path):
    store = tmp_path / "run.sqlite"
    first = _nested(SIX, store)
    FIT_LOG.unlink()
    grown = _nested(NINE, store, resume=True)
    fresh = _nested(NINE)
    n_folds = 3 * 3 + 3  # inner folds of each outer fold, plus the all-data search's
    changed = sum(_chosen(first)[k] != a for k, a in _chosen(fresh).items())
    assert changed > 0  # the new small alphas win somewhere: refits must be redone
    fits = logged_fits()[: -len(_scores(fresh))]  # the fresh run's own fits come last
    assert len(fits) == 3 * n_folds + changed
    new_alphas = {repr(a) for a in NINE[6:]}
    assert sum(line.split()[0] in new_alphas for line in fits) >= 3 * n_folds
    _same(grown, fresh)


def test_shrinking_a_grid_computes_only_the_changed_refits(tmp_path):
    store = tmp_path / "run.sqlite"
    first = _nested(NINE, store)
    FIT_LOG.unlink()
    shrunk = _nested(SIX, store, resume=True)
    n_shrunk = len(logged_fits())
    fresh = _nested(SIX)
    changed = sum(_chosen(first)[k] != a for k, a in _chosen(fresh).items())
    assert changed > 0
    assert n_shrunk == changed
    _same(shrunk, fresh)


def test_shrinking_then_growing_back_computes_nothing(tmp_path):
    store = tmp_path / "run.sqlite"
    _nested(NINE, store)
    _nested(SIX, store, resume=True)
    FIT_LOG.unlink(missing_ok=True)
    again = _nested(NINE, store, resume=True)
    assert logged_fits() == []
    assert again.final.best_estimator_.alpha in NINE  # the saved model, checked and loaded


def test_doubling_repeated_kfold_repeats_computes_only_the_new_repeats(tmp_path):
    store = tmp_path / "run.sqlite"
    space = {"alpha": [0.1, 10.0]}

    def run(repeats, **options):
        cv = RepeatedKFold(n_splits=3, n_repeats=repeats, random_state=0)
        return parcv.search(FitLogged(), space, X, Y, cv=cv, backend="serial", refit=False,
                            **options)  # fmt: skip

    run(2, store=store)
    FIT_LOG.unlink()
    doubled = run(4, store=store, resume=True)
    assert len(logged_fits()) == 2 * 3 * 2  # 2 candidates x the 6 folds of the new repeats
    fresh = run(4)
    np.testing.assert_array_equal(
        doubled.cv_results_["mean_test_score"], fresh.cv_results_["mean_test_score"]
    )


def test_a_longer_random_search_reuses_the_equal_draws(tmp_path):
    store = tmp_path / "run.sqlite"

    def run(n_iter, **options):
        space = RandomSpace({"alpha": loguniform(1e-3, 1e3)}, n_iter=n_iter, random_state=0)
        return parcv.search(FitLogged(), space, X, Y, cv=3, backend="serial", refit=False,
                            **options)  # fmt: skip

    short = run(20, store=store)
    FIT_LOG.unlink()
    longer = run(40, store=store, resume=True)
    old = {c.params["alpha"] for c in short.candidates}
    new = [c for c in longer.candidates if c.params["alpha"] not in old]
    assert 0 < len(new) < 40 and len(new) == 20  # the first 20 draws are the same
    assert len(logged_fits()) == 3 * len(new)
    fresh = run(40)
    np.testing.assert_array_equal(
        longer.cv_results_["mean_test_score"], fresh.cv_results_["mean_test_score"]
    )


@pytest.mark.parametrize("change", ["X", "non-searched parameter", "cv seed"])
def test_a_change_to_what_every_unit_depends_on_recomputes_everything(tmp_path, change):
    store = tmp_path / "run.sqlite"
    X2 = X.copy()

    def run(x, estimator, seed, **options):
        cv = KFold(3, shuffle=True, random_state=seed)
        return parcv.search(estimator, {"alpha": SIX}, x, Y, cv=cv, backend="serial",
                            store=store, save_models=True, **options)  # fmt: skip

    first = run(X, FitLogged(), 0)
    FIT_LOG.unlink()
    if change == "X":
        X2[7, 2] += 1e-9
        run(X2, FitLogged(), 0, resume=True)
    elif change == "cv seed":
        second = run(X, FitLogged(), 1, resume=True)
    else:
        run(X, FitLogged(fit_intercept=False), 0, resume=True)
    # Every fit, and the final refit, except with another CV seed: the final fits all rows,
    # whatever the folds, so it is reused when the same candidate is chosen.
    same_final = change == "cv seed" and second.best_params_ == first.best_params_
    assert len(logged_fits()) == 6 * 3 + (0 if same_final else 1)


def test_results_equal_a_fresh_run_of_the_grown_sweep_on_every_backend(tmp_path, backend):
    store = tmp_path / "run.sqlite"

    def run(grid, **options):
        return parcv.search(FitLogged(), {"alpha": grid}, X, Y, cv=3, backend=backend, **options)

    run(SIX, store=store, save_models=True)
    grown = run(NINE, store=store, save_models=True, resume=True)
    fresh = run(NINE)
    _same(grown, fresh)
    np.testing.assert_array_equal(
        grown.best_estimator_.predict(X), fresh.best_estimator_.predict(X)
    )


def test_identical_units_of_one_plan_run_once():
    # alpha=1.0 twice, and once more as the estimator's default: one candidate's content.
    space = [{"alpha": [1.0, 2.0]}, {"alpha": [1.0]}, {"fit_intercept": [True]}]
    result = parcv.search(FitLogged(), space, X, Y, cv=3, backend="serial", refit=False)
    assert len(logged_fits()) == 2 * 3
    scores = result.cv_results_["mean_test_score"]
    assert scores[0] == scores[2] == scores[3] != scores[1]


def test_without_resume_a_changed_sweep_is_refused_with_the_hint(tmp_path):
    store = tmp_path / "run.sqlite"
    parcv.search(Ridge(), {"alpha": SIX}, X, Y, cv=3, backend="serial", store=store)
    with pytest.raises(PlanMismatchError, match=r"different plan.*resume=True \(--resume\)"):
        parcv.search(Ridge(), {"alpha": NINE}, X, Y, cv=3, backend="serial", store=store)


def test_the_model_file_is_loaded_only_when_its_tag_verifies(tmp_path):
    store = tmp_path / "run.sqlite"
    r = parcv.search(Ridge(), {"alpha": SIX}, X, Y, cv=3, backend="serial", store=store,
                     save_models=True)  # fmt: skip
    np.testing.assert_array_equal(parcv.load(store).best_estimator_.coef_, r.best_estimator_.coef_)
    [model] = (tmp_path / "run.sqlite.models").glob("final-*.joblib")
    import joblib

    joblib.dump(Ridge(alpha=123.0).fit(X, Y), model)  # planted: not the file the run recorded
    with pytest.raises(ModelNotAvailableError, match="does not verify"):
        parcv.load(store).best_estimator_  # noqa: B018
    with pytest.raises(ValueError, match="does not verify"):
        parcv.load(store, load_models=True)
    # A resumed run never unpickles it either: the final refit runs again.
    FIT_LOG.unlink(missing_ok=True)
    again = parcv.search(Ridge(), {"alpha": SIX}, X, Y, cv=3, backend="serial", store=store,
                         save_models=True, resume=True)  # fmt: skip
    assert again.best_estimator_.alpha == r.best_estimator_.alpha


def test_a_model_file_beside_a_store_that_saved_none_is_never_loaded(tmp_path):
    store = tmp_path / "run.sqlite"
    parcv.search(Ridge(), {"alpha": SIX}, X, Y, cv=3, backend="serial", store=store)
    folder = tmp_path / "run.sqlite.models"
    folder.mkdir()
    (folder / "final.joblib").write_bytes(b"not a pickle: loading it would raise")
    loaded = parcv.load(store)
    with pytest.raises(ModelNotAvailableError, match=r"keeps no fitted final model.*resume=True"):
        loaded.best_estimator_  # noqa: B018
    assert not hasattr(loaded, "best_estimator_")  # an AttributeError, as in scikit-learn
    resumed = parcv.search(Ridge(), {"alpha": SIX}, X, Y, cv=3, backend="serial", store=store,
                           resume=True)  # fmt: skip
    assert resumed.best_estimator_ is not None


def test_a_store_of_the_previous_schema_is_refused_for_runs_and_read_by_load(tmp_path):
    store = tmp_path / "old.sqlite"
    with closing(sqlite3.connect(store)) as conn:
        conn.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('fingerprint', 'x')")
        conn.execute("CREATE TABLE records (key TEXT PRIMARY KEY, kind TEXT)")
        conn.commit()
    with pytest.raises(PlanMismatchError, match=r"written by parcv 0\.1\.0.*--overwrite"):
        parcv.search(Ridge(), {"alpha": SIX}, X, Y, cv=3, backend="serial", store=store,
                     resume=True)  # fmt: skip
    parcv.search(Ridge(), {"alpha": SIX}, X, Y, cv=3, backend="serial", store=store,
                 overwrite=True)  # fmt: skip


def test_candidate_digest_equals_the_digest_of_the_estimator_with_its_params_set():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    assert candidate_digest(Ridge(), {"alpha": 2.0}) == candidate_digest(Ridge(alpha=2.0), {})
    assert candidate_digest(Ridge(), {"alpha": 2.0}) != candidate_digest(Ridge(), {"alpha": 2})
    pipe = make_pipeline(StandardScaler(), Ridge())
    nested = candidate_digest(pipe, {"ridge__alpha": 2.0})
    assert nested == candidate_digest(make_pipeline(StandardScaler(), Ridge(alpha=2.0)), {})
    assert nested != candidate_digest(pipe, {})
    family = candidate_digest(pipe, {"ridge": Ridge(alpha=2.0)})
    assert family == nested


def test_content_keys_separate_what_determines_the_numbers():
    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), {"alpha": SIX}, data, inner=3, fast_cv=False)
    keys = content_keys(plan, data)
    fit = Unit("fit", None, 0, 0)
    assert keys.key(fit) == content_keys(plan, check_dataset(X.copy(), Y)).key(fit)
    X2 = X.copy()
    X2[0, 0] = np.nextafter(X2[0, 0], np.inf)
    assert keys.key(fit) != content_keys(plan, check_dataset(X2, Y)).key(fit)
    scored = build_plan(Ridge(), {"alpha": SIX}, data, inner=3, fast_cv=False, scoring="r2")
    assert keys.key(fit) != content_keys(scored, data).key(fit)
    graph = keys.graph_keys(plan)
    assert len(set(graph.values())) == len(graph) == 6 * 3


@pytest.mark.parametrize(
    "estimator, options",
    [(Ridge(), {"fast_cv": False}), (Ridge(), {"fast_cv": True}), (FitLogged(), {"outer": 3})],
)
def test_block_keys_equal_each_units_keys_and_code(estimator, options):
    # A worker's records sent as columns are keyed in blocks: the bytes of each unit's
    # content key and values key, and its code, as the unit's own methods give them.
    data = check_dataset(X, Y)
    plan = build_plan(estimator, {"alpha": SIX}, data, inner=3, **options)
    keys = content_keys(plan, data)
    records = [r for u in plan.units for r in plan.record_units(u)]
    for kind in {r.kind for r in records}:
        units = [r for r in records if r.kind == kind]
        ckeys, vkeys, codes = keys.block_keys(
            kind, [(u.outer, u.inner, u.candidate) for u in units]
        )
        assert ckeys == [bytes.fromhex(keys.key(u)) for u in units]
        assert vkeys == [bytes.fromhex(keys.values_key(u)) for u in units]
        assert codes == [keys.environment(u) for u in units]
    assert all(digest for digest, _ in codes)  # the code run: the scorer's, library versions


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.sets(st.sampled_from(NINE), min_size=1, max_size=4),
    second=st.sets(st.sampled_from(NINE), min_size=1, max_size=4),
    seeds=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    intercepts=st.tuples(st.booleans(), st.booleans()),
    scorers=st.tuples(*[st.sampled_from(["r2", "neg_mean_squared_error"])] * 2),
    nudge=st.booleans(),
)
def test_random_edits_never_reuse_a_record_whose_inputs_differ(
    tmp_path_factory, first, second, seeds, intercepts, scorers, nudge
):
    store = tmp_path_factory.mktemp("edit") / "run.sqlite"
    X2 = X.copy()
    if nudge:
        X2[3, 1] += 1.0

    def run(x, grid, seed, intercept, scorer, **options):
        cv = KFold(3, shuffle=True, random_state=seed)
        return parcv.search(FitLogged(fit_intercept=intercept), {"alpha": sorted(grid)}, x, Y,
                            cv=cv, scoring=scorer, backend="serial", refit=False,
                            **options)  # fmt: skip

    def contents(x, grid, seed, intercept, scorer):
        # An independent key: the fit's inputs themselves, spelled out.
        folds = list(KFold(3, shuffle=True, random_state=seed).split(x))
        return {(a, intercept, scorer, tuple(tr), tuple(te), x.tobytes()) for a in grid
                for tr, te in folds}  # fmt: skip

    run(X, first, seeds[0], intercepts[0], scorers[0], store=store)
    FIT_LOG.unlink(missing_ok=True)
    edited = run(X2, second, seeds[1], intercepts[1], scorers[1], store=store, resume=True)
    new = contents(X2, second, seeds[1], intercepts[1], scorers[1]) - contents(
        X, first, seeds[0], intercepts[0], scorers[0]
    )
    assert len(logged_fits()) == len(new)
    fresh = run(X2, second, seeds[1], intercepts[1], scorers[1])
    assert _scores(edited) == _scores(fresh)


@pytest.mark.slow
def test_sigkill_during_a_grown_run_then_resume_equals_an_undisturbed_run(tmp_path):
    store = tmp_path / "run.sqlite"
    script = tmp_path / "grow.py"
    script.write_text(
        "import sys, parcv\n"
        "from tests.store.test_content_keys import X, Y, NINE\n"
        "from tests.estimators import FitLogged\n"
        "parcv.nested_cv(FitLogged(), {'alpha': NINE}, X, Y, outer=3, inner=3, backend='local',"
        " n_jobs=2, store=sys.argv[1], resume=True, save_models=True)\n"
    )
    _nested(SIX, store)
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, str(script), str(store)], env=env)
    deadline = time.monotonic() + 60
    n_before = _n_records(store)
    while _n_records(store) == n_before and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with closing(sqlite3.connect(store)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    resumed = _nested(NINE, store, resume=True)
    _same(resumed, _nested(NINE))


def _n_records(store):
    return read_counts(store)[0]
