"""The driver: dependency order, chunking, failures, on every backend."""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.pipeline import Pipeline

import parcv
from parcv.engine import runner
from parcv.engine.backends.serial import SerialBackend
from parcv.engine.runner import _CHUNK_MOST_UNITS, _ChunkSizer, estimate_chunks, run_plan
from parcv.engine.work import run_units
from parcv.plan.build import build_plan
from parcv.plan.data import check_dataset
from tests.estimators import FailsOnAlpha, WarnsOnFit

X = np.random.default_rng(0).normal(size=(80, 3))
Y = X @ np.array([1.0, -2.0, 0.5]) + np.random.default_rng(1).normal(size=80)
ROOT = Path(__file__).resolve().parents[2]


class ShuffledExecutor:
    """Completes chunks in a random order, several at a time, like a busy pool."""

    n_workers = 3
    chunk_seconds = 10.0  # chunks as large as balance allows once timing is known
    chunk_rate = math.inf
    depth = 2

    def __init__(self, plan, data, seed):
        self.plan, self.data, self.rng = plan, data, random.Random(seed)
        self.queue, self.count, self.sizes = {}, 0, []

    def submit(self, units):
        self.count += 1
        self.queue[self.count] = units
        self.sizes.append(len(units))
        return self.count

    def wait(self):
        tickets = self.rng.sample(sorted(self.queue), k=min(2, len(self.queue)))
        for t in tickets:
            yield t, run_units(self.plan, self.data, self.queue.pop(t))

    def cancel(self):
        self.queue.clear()


class ShuffledBackend:
    def __init__(self, seed):
        self.seed, self.executors = seed, []

    @contextmanager
    def open(self, plan, data):
        ex = ShuffledExecutor(plan, data, self.seed)
        self.executors.append(ex)
        yield ex


@pytest.mark.parametrize("seed", range(5))
def test_any_completion_order_gives_the_same_records(seed):
    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), {"alpha": [0.1, 1.0, 10.0, 100.0]}, data, inner=3, outer=4)
    ref = run_plan(plan, data, SerialBackend())
    backend = ShuffledBackend(seed)
    got = run_plan(plan, data, backend)
    assert set(got) == set(ref) and len(got) == plan.n_units
    for key, record in ref.items():
        assert got[key].test_scores == record.test_scores
        assert got[key].unit == record.unit
    assert max(backend.executors[0].sizes) > 1  # tiny units were chunked


def test_refit_of_an_outer_fold_waits_only_for_its_own_fits():
    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), {"alpha": [0.1, 1.0]}, data, inner=2, outer=3, refit=False)
    order = []
    run_plan(plan, data, SerialBackend(), on_batch=lambda b: order.extend(r.key for r in b))
    first_refit = order.index(("refit", 0))
    # Outer fold 0's refit runs before any fit of outer fold 2: no global barrier.
    assert first_refit < min(i for i, k in enumerate(order) if k[0] == "fit" and k[1] == 2)


def test_resume_from_done_records_runs_only_the_missing_units():
    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), {"alpha": [0.1, 1.0]}, data, inner=3, outer=3)
    full = run_plan(plan, data, SerialBackend())
    done = dict(list(full.items())[:10])
    new = []
    resumed = run_plan(plan, data, SerialBackend(), done=done, on_batch=new.extend)
    assert len(new) == plan.n_units - 10
    assert {k: r.test_scores for k, r in resumed.items()} == {
        k: r.test_scores for k, r in full.items()
    }


def test_failed_fits_are_recorded_and_skipped_by_selection(backend):
    with pytest.warns(parcv.FitFailedWarning, match="alpha=-1.0 failed in every fold"):
        result = parcv.nested_cv(
            FailsOnAlpha(), {"alpha": [-1.0, 1.0]}, X, Y, outer=3, inner=3, backend=backend
        )
    failed = [r for r in result.records if not r.ok]
    assert len(failed) == 4 * 3 and all(r.unit.candidate == 0 for r in failed)
    assert "alpha must be >= 0" in failed[0].error.traceback
    assert result.chosen == [1, 1, 1]
    assert list(result.final.cv_results_["n_failed_fits"]) == [3, 0]


def test_error_score_raise_raises_the_estimators_error_naming_candidate_and_fold():
    # As scikit-learn: the estimator's own exception; parcv's context is its note.
    with pytest.raises(ValueError, match=r"alpha must be >= 0, got -1\.0") as info:
        parcv.search(
            FailsOnAlpha(),
            {"alpha": [-1.0, 1.0]},
            X,
            Y,
            cv=3,
            error_score="raise",
            backend="serial",
        )
    assert type(info.value) is ValueError
    assert "alpha=-1.0 on all data, inner fold 0" in "".join(info.value.__notes__)


def test_all_candidates_failing_is_a_clear_error():
    with pytest.raises(parcv.ParcvError, match="every candidate failed"):
        parcv.search(FailsOnAlpha(), {"alpha": [-1.0, -2.0]}, X, Y, cv=3, backend="serial")


def test_fit_params_are_split_with_the_rows():
    from sklearn import model_selection as ms

    w = np.linspace(0.5, 2.0, 80)
    ours = parcv.cross_validate(
        Ridge(), X, Y, cv=4, fit_params={"sample_weight": w}, backend="serial"
    )
    ref = ms.cross_validate(Ridge(), X, Y, cv=4, params={"sample_weight": w})
    np.testing.assert_array_equal(ours.scores["test_score"], ref["test_score"])


def test_warnings_inside_fits_are_counted_and_warned_once_per_category():
    # As scikit-learn's serial loop lets them through, the caller sees the estimator's
    # warning (its category and first message), once per run with its count.
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    y = (Y > 0).astype(int)
    pattern = r"(?s)lbfgs failed to converge.*raised 3 time"
    with pytest.warns(ConvergenceWarning, match=pattern) as got:
        result = parcv.cross_validate(LogisticRegression(max_iter=1), X, y, cv=3, backend="serial")
    assert len([w for w in got if w.category is ConvergenceWarning]) == 1
    assert got[0].filename == __file__
    assert all("ConvergenceWarning" in r.warnings for r in result.records)


def test_local_backend_leaves_scikit_learns_process_pool_working():
    from sklearn.model_selection import GridSearchCV

    parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, X, Y, cv=3, backend="local", n_jobs=2)
    ref = GridSearchCV(Ridge(), {"alpha": [0.1, 1.0]}, cv=3, n_jobs=2).fit(X, Y)
    assert np.isfinite(ref.cv_results_["mean_test_score"]).all()
    again = parcv.search(Ridge(), {"alpha": [0.1, 1.0]}, X, Y, cv=3, backend="local", n_jobs=2)
    np.testing.assert_array_equal(
        again.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"]
    )


def _workers(n_jobs, idle_timeout):
    """The worker processes (host:pid) a local run of this pool size and timeout ran on."""
    backend = parcv.LocalBackend(n_jobs=n_jobs, idle_timeout=idle_timeout)
    return {r.worker for r in parcv.cross_validate(Ridge(), X, Y, cv=4, backend=backend).records}


def test_alternating_two_pool_sizes_starts_no_worker_again():
    # One pool per process used to be restarted on every change of n_jobs: each switch
    # paid its workers' imports again (3.5 s of CPU). The pools of the last two sizes are
    # kept. An idle_timeout of their own keeps other tests' pools out of this one.
    one, _, one_again = _workers(1, 301.0), _workers(2, 301.0), _workers(1, 301.0)
    assert len(one) == 1
    assert one_again == one  # the same process


def test_a_call_as_the_idle_pool_expires_neither_warns_nor_hangs():
    # With loky's worker timeout, a call that came as the workers timed out made loky's
    # manager thread warn ("A worker stopped while some jobs were given to the executor");
    # under a filter of "error" the thread died and the run waited forever (a test suite
    # whose pool sat idle for 300 s met it). Calls every ~idle_timeout, in a fresh process
    # with warnings as errors, from a little before to a little after; on the previous code
    # it hung within a few calls.
    code = (
        "import time, warnings\n"
        "warnings.simplefilter('error')\n"
        "import numpy as np, parcv\n"
        "from sklearn.linear_model import Ridge\n"
        "X = np.random.default_rng(0).normal(size=(60, 3)); y = X[:, 0]\n"
        "backend = parcv.LocalBackend(n_jobs=1, idle_timeout=1.0)\n"
        "for i in range(10):\n"
        "    parcv.cross_validate(Ridge(), X, y, cv=5, backend=backend)\n"
        "    time.sleep(0.9 + 0.01 * i)\n"
        "print('done')\n"
    )
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              cwd=ROOT, timeout=120, check=False)  # fmt: skip
    except subprocess.TimeoutExpired as hung:
        raise AssertionError(f"a call waited forever: {hung.stderr}") from None
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"


def test_an_idle_pool_is_shut_down_after_its_idle_timeout_and_kept_before():
    first = _workers(1, 0.5)
    time.sleep(1.5)  # idle past its 0.5 s: its worker is gone, the next call starts one
    assert _workers(1, 0.5) != first
    kept = _workers(1, 302.0)
    assert _workers(1, 302.0) == kept


class WideExecutor(ShuffledExecutor):
    """Many idle workers: the driver has room to start refits speculatively."""

    n_workers = 8
    chunk_seconds = 0.0

    def __init__(self, plan, data, seed):
        super().__init__(plan, data, seed)
        self.submitted = []

    def submit(self, units):
        self.submitted.extend(units)
        return super().submit(units)

    def wait(self):  # one chunk at a time, oldest first
        ticket = min(self.queue)
        yield ticket, run_units(self.plan, self.data, self.queue.pop(ticket))


class WideBackend(ShuffledBackend):
    @contextmanager
    def open(self, plan, data):
        ex = WideExecutor(plan, data, self.seed)
        self.executors.append(ex)
        yield ex


@pytest.mark.parametrize("seed", range(4))
def test_guesses_read_the_tables_columns_as_the_records_one_by_one(seed):
    from parcv.engine.speculate import _partial_scores, guesses
    from parcv.plan.record_table import RecordTable

    # A fold part done: some fits finished, some failed (alpha < 0), the rest not back.
    data = check_dataset(X, Y)
    space = {"alpha": [-1.0, 0.1, 1.0, 10.0, -2.0, 100.0]}
    plan = build_plan(FailsOnAlpha(), space, data, inner=3, outer=2, error_score=0.0)
    rng = random.Random(seed)
    fits = [u for u in plan.units if u.kind == "fit"]
    done = run_units(plan, data, rng.sample(fits, len(fits) // 2))
    table = RecordTable.growing()
    table.add(done)
    by_key = {r.key: r for r in done}
    for outer in [0, 1, None]:
        columns, one_by_one = (_partial_scores(plan, t, outer) for t in (table, by_key))
        np.testing.assert_array_equal(columns, one_by_one)
        assert guesses(plan, table, outer) == guesses(plan, by_key, outer)
    assert np.isnan(_partial_scores(plan, table, 0)[0]).all()  # alpha -1 failed everywhere


@pytest.mark.parametrize("selection", ["best", "one_se"])
def test_speculative_refits_on_idle_workers_change_nothing(selection):
    data = check_dataset(X, Y)
    rule = parcv.Selection(selection, complexity=lambda p: -p["alpha"])
    space = {"alpha": [0.1, 1.0, 10.0, 100.0, 1000.0]}
    plan = build_plan(Ridge(), space, data, inner=3, outer=3, selection=rule)
    ref = run_plan(plan, data, SerialBackend())
    backend, delivered = WideBackend(0), []
    got = run_plan(plan, data, backend, on_batch=delivered.extend)
    refits = [u for u in backend.executors[0].submitted if u.kind in ("refit", "final")]
    # Guesses were started (more refits than folds), some of them wrong and dropped ...
    assert len(refits) > len(plan.refit_outers) + 1
    assert len(set(refits)) == len(refits)  # ... and no refit ran twice
    # ... yet every key is delivered once, with the selected candidate's numbers.
    assert sorted(map(str, (r.key for r in delivered))) == sorted(map(str, ref))
    assert {k: (r.unit, r.test_scores) for k, r in got.items()} == {
        k: (r.unit, r.test_scores) for k, r in ref.items()
    }


class ChainingExecutor(ShuffledExecutor):
    """Runs chained refits as Dask does: after the chunks they depend on, on their records.

    One worker, so the driver starts no speculative refit: every refit is either
    chained or, when a chained task returns nothing (``broken``), run by the driver.
    """

    n_workers = 1
    chunk_seconds = 0.0

    def __init__(self, plan, data, broken):
        super().__init__(plan, data, 0)
        self.broken, self.submitted, self.chains, self.results = broken, [], {}, {}

    def submit(self, units):
        self.submitted.extend(units)
        return super().submit(units)

    def submit_refit(self, outer, after, known):
        self.count += 1
        self.chains[self.count] = (outer, list(after), known)
        return self.count

    def wait(self):
        from parcv.engine.backends._dask_executor import _Payload, _PlanCopy, _run_refit

        for ticket, (outer, after, known) in list(self.chains.items()):
            if all(t in self.results for t in after):  # its chunks finished: run it first
                del self.chains[ticket]
                deps = [self.results[t] for t in after]
                data, plan = _Payload(self.data), _PlanCopy(self.plan.for_workers())
                yield (
                    ticket,
                    [] if self.broken else _run_refit(data, plan, outer, known, 1, None, *deps),
                )
                return
        ticket = min(self.queue)
        self.results[ticket] = run_units(self.plan, self.data, self.queue.pop(ticket))
        yield ticket, self.results[ticket]


class ChainingBackend:
    def __init__(self, broken):
        self.broken, self.executors = broken, []

    @contextmanager
    def open(self, plan, data):
        self.executors.append(ChainingExecutor(plan, data, self.broken))
        yield self.executors[-1]


@pytest.mark.parametrize("broken", [False, True])
def test_chained_refits_select_on_the_worker_and_change_nothing(broken):
    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), {"alpha": [0.1, 1.0, 10.0, 100.0, 1000.0]}, data, inner=3, outer=3)
    ref = run_plan(plan, data, SerialBackend())
    backend = ChainingBackend(broken)
    got = run_plan(plan, data, backend)
    [executor] = backend.executors
    refits = [u for u in executor.submitted if u.kind in ("refit", "final")]
    assert len(plan.refit_outers) == 3 and plan.final
    if broken:  # the chained tasks returned nothing: the driver refit every fold itself
        assert sorted(u.key for u in refits) == sorted(k for k in ref if k[0] != "fit")
    else:  # every refit (and the final one) was chained to its fits: none went through submit
        assert refits == []
    assert {k: (r.unit, r.test_scores) for k, r in got.items()} == {
        k: (r.unit, r.test_scores) for k, r in ref.items()
    }


def test_a_fold_with_more_fits_than_the_bound_is_refit_by_the_driver_not_chained(monkeypatch):
    # A chained task carries every fit record of its fold through Dask's graph: 1.1M of
    # them made a 92 MiB graph. Each fold here has 5 candidates x 3 inner folds: 15 fits.
    monkeypatch.setattr(runner, "_CHAIN_MOST_FITS", 14)
    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), {"alpha": [0.1, 1.0, 10.0, 100.0, 1000.0]}, data, inner=3, outer=3)
    ref = run_plan(plan, data, SerialBackend())
    backend = ChainingBackend(broken=False)
    got = run_plan(plan, data, backend)
    [executor] = backend.executors
    # Every refit (and the final one) went through submit: none was chained.
    refits = [u for u in executor.submitted if u.kind in ("refit", "final")]
    assert sorted(u.key for u in refits) == sorted(k for k in ref if k[0] != "fit")
    assert {k: (r.unit, r.test_scores) for k, r in got.items()} == {
        k: (r.unit, r.test_scores) for k, r in ref.items()
    }


class FifoExecutor(ShuffledExecutor):
    """Sixteen workers; finishes the oldest chunk at each wait, recording what was out."""

    n_workers = 16

    def __init__(self, plan, data):
        super().__init__(plan, data, 0)
        self.out_at_submit, self.kinds = [], []

    def submit(self, units):
        self.out_at_submit.append(len(self.queue))
        self.kinds.append(units[0].kind)
        return super().submit(units)

    def wait(self):
        ticket = min(self.queue)
        yield ticket, run_units(self.plan, self.data, self.queue.pop(ticket))


def test_single_units_keep_workers_fed_until_four_are_timed():
    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), {"alpha": list(np.logspace(-3, 3, 12))}, data, inner=3, outer=3)
    executor = FifoExecutor(plan, data)

    @contextmanager
    def open_(plan, data):
        yield executor

    ref = run_plan(plan, data, SerialBackend())
    got = run_plan(plan, data, type("B", (), {"open": staticmethod(open_)})())
    # Two single units per worker go out; each of the first three records back frees a
    # slot that gets another single unit; the fourth calibrates the sizes.
    n_probes = 2 * 16 + 3
    assert executor.sizes[:n_probes] == [1] * n_probes
    assert executor.sizes[n_probes] > 1
    assert max(executor.out_at_submit[:n_probes]) == 2 * 16 - 1
    # parcv inspect's estimate runs the same sizing: it predicts the chunks of fits sent.
    n_fit_chunks = executor.kinds.count("fit")
    assert estimate_chunks(len(plan.units), 16, executor.chunk_seconds, None) == n_fit_chunks
    assert {k: r.test_scores for k, r in got.items()} == {k: r.test_scores for k, r in ref.items()}


def test_chunks_lengthen_past_the_rate_the_driver_side_takes():
    # Units of 2**-10 s, chunks of 2**-4 s: 64 units, until more workers than the rate of
    # 128 chunks a second allows at that length (8) make them n_workers / 128 seconds long.
    for workers, size in [(2, 64), (8, 64), (16, 128), (64, 512)]:
        sizer = _ChunkSizer(2.0**-4, workers, rate=128.0)
        sizer.n_seen, sizer.total_time = 4, 4 * 2.0**-10
        assert sizer.size(10**9) == size
        # Factoring still bounds a chunk by 1/(2 x workers) of the units left to send.
        assert sizer.size(32 * workers) == 16
    # With no rate (a pool that does not give one) the target alone sizes them.
    sizer = _ChunkSizer(2.0**-4, 64)
    sizer.n_seen, sizer.total_time = 4, 4 * 2.0**-10
    assert sizer.size(10**9) == 64
    # parcv inspect's estimate runs the same sizing.
    n = 10**6
    assert estimate_chunks(n, 16, 2.0**-4, 2.0**-10, 128.0) < estimate_chunks(
        n, 16, 2.0**-4, 2.0**-10
    )
    assert estimate_chunks(n, 2, 2.0**-4, 2.0**-10, 128.0) == estimate_chunks(
        n, 2, 2.0**-4, 2.0**-10
    )


def test_no_chunk_holds_more_than_the_most_units_however_short_its_fits(monkeypatch):
    # Fits of a microsecond in chunks of a second would make chunks of a million units,
    # each held by the driver while out and its records taken back in one message.
    sizer = _ChunkSizer(1.0, 2)
    sizer.n_seen, sizer.total_time = 4, 4e-6
    assert sizer.size(10**9) == _CHUNK_MOST_UNITS
    assert sizer.size(4 * 100) == 100  # factoring still shrinks the last ones
    n = 10**7  # parcv inspect's estimate runs the same sizing
    assert estimate_chunks(n, 2, 1.0, None) >= n / _CHUNK_MOST_UNITS
    # A run sends no chunk over the bound, and gives the serial run's records.
    monkeypatch.setattr(runner, "_CHUNK_MOST_UNITS", 3)
    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), {"alpha": list(np.logspace(-3, 3, 12))}, data, inner=3, outer=3)
    executor = FifoExecutor(plan, data)  # chunks of 10 s: Ridge's fits ask for thousands

    @contextmanager
    def open_(plan, data):
        yield executor

    ref = run_plan(plan, data, SerialBackend())
    got = run_plan(plan, data, type("B", (), {"open": staticmethod(open_)})())
    assert max(executor.sizes) == 3
    assert {k: r.test_scores for k, r in got.items()} == {k: r.test_scores for k, r in ref.items()}


def test_a_cluster_of_batch_jobs_sizes_chunks_as_its_dask_executor_does():
    from types import SimpleNamespace

    from parcv.engine.backends._dask_executor import _DaskExecutor
    from parcv.engine.backends.jobqueue import _ScaledExecutor

    dask = _DaskExecutor
    inner = SimpleNamespace(
        n_workers=2, chunk_seconds=dask.chunk_seconds, chunk_rate=dask.chunk_rate, depth=dask.depth
    )
    scaled = _ScaledExecutor(inner, 64)  # sized for the jobs' 64 cores, not the 2 up yet
    got = (scaled.n_workers, scaled.chunk_seconds, scaled.chunk_rate, scaled.depth)
    assert got == (64, dask.chunk_seconds, dask.chunk_rate, dask.depth)


@pytest.mark.parametrize(
    "options", [dict(outer=3, inner=2), dict(inner=3), dict(outer=2, inner=2, criteria=["aic"])]
)
def test_the_last_fit_of_each_outer_fold_is_found_from_the_plan_shape(options):
    from parcv.engine.runner import _last_fits
    from parcv.plan.kinds import KINDS

    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), {"alpha": [0.1, 1.0, 10.0]}, data, fast_cv=False, **options)
    brute: dict = {}
    for at, unit in enumerate(list(plan.units)):  # every unit built: the reference
        if KINDS[unit.kind].selects:
            brute[unit.outer] = at
    assert _last_fits(plan.units) == brute


class AllAtOnceExecutor(ShuffledExecutor):
    """Hands back every chunk out at each wait, as a pool whose fits all finished together."""

    n_workers = 3
    chunk_seconds = 0.0

    def wait(self):
        while self.queue:
            ticket = min(self.queue)
            yield ticket, run_units(self.plan, self.data, self.queue.pop(ticket))


class AllAtOnceBackend(ShuffledBackend):
    @contextmanager
    def open(self, plan, data):
        yield AllAtOnceExecutor(plan, data, 0)


def test_a_first_wave_stops_after_the_same_fits_however_chunks_arrive():
    # Chunks that come back together are stored together, but the first-wave check
    # reads them one by one: the run stops once every candidate failed alike.
    data = check_dataset(X, Y)
    model = Pipeline([("scale", WarnsOnFit(fail=True)), ("ridge", Ridge())])
    plan = build_plan(model, {"ridge__alpha": [1.0, 2.0, 3.0]}, data, inner=3, refit=False)
    with pytest.raises(parcv.FitFailedError, match=r"the first 3 fits .* run the other 6"):
        run_plan(plan, data, AllAtOnceBackend(0))


def test_a_run_sets_its_heap_aside_from_full_collections_and_puts_it_back(monkeypatch):
    import gc

    import parcv.engine.runner as runner

    data = check_dataset(X, Y)
    plan = build_plan(Ridge(), {"alpha": [0.1, 1.0]}, data, inner=2, refit=False)
    during = []
    assert gc.get_freeze_count() == 0
    run_plan(plan, data, SerialBackend(), on_batch=lambda b: during.append(gc.get_freeze_count()))
    assert max(during) == 0  # a run of a few units leaves the collector alone
    monkeypatch.setattr(runner, "_FREEZE_FROM", plan.n_units)
    during.clear()
    run_plan(plan, data, SerialBackend(), on_batch=lambda b: during.append(gc.get_freeze_count()))
    assert min(during) > 0 and gc.get_freeze_count() == 0
    gc.freeze()  # a process that froze its own objects: left as it was
    try:
        run_plan(plan, data, SerialBackend())
        assert gc.get_freeze_count() > 0  # not unfrozen by the run
    finally:
        gc.unfreeze()
