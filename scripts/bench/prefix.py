"""Shared Pipeline prefixes: a pipeline grid with parcv, scikit-learn and dask-ml side by side.

The workload: StandardScaler -> PCA(svd_solver="full"; 10, 20, 40, 80) ->
LogisticRegression(max_iter=200; C = logspace(-3, 2, 8)) on
make_classification(3000, 400, n_informative=40, random_state=0), KFold(5,
shuffle, 0): 32 candidates x 5 folds, only 4 distinct prefixes per fold. Every
tool runs the CV alone (refit=False). Each row's ratio is its wall time over the
unshared ideal (the summed single-core fit + score time of all 160 unshared
units, divided by the cores), all measured in the same round.

    python scripts/bench/prefix.py              # one round (~3 min on 2 cores)
    python scripts/bench/prefix.py --quick      # smoke run with tiny sizes
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from typing import Any

import _setup  # noqa: F401  (pins BLAS threads before numpy is imported)
import numpy as np
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import get_scorer
from sklearn.model_selection import GridSearchCV, KFold, ParameterGrid
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import parcv


@dataclass(frozen=True)
class Job:
    X: np.ndarray
    y: np.ndarray
    grid: dict[str, list[Any]]
    cv: KFold
    n_jobs: int

    def pipeline(self, memory: str | None = None) -> Pipeline:
        return Pipeline(
            [
                ("scale", StandardScaler()),
                ("pca", PCA(svd_solver="full")),
                ("clf", LogisticRegression(max_iter=200)),
            ],
            memory=memory,
        )


def make_job(quick: bool, n_jobs: int) -> Job:
    if quick:
        X, y = make_classification(300, 40, n_informative=10, random_state=0)
        components = [2, 4, 8, 16]
    else:
        X, y = make_classification(3000, 400, n_informative=40, random_state=0)
        components = [10, 20, 40, 80]
    grid = {"pca__n_components": components, "clf__C": list(np.logspace(-3, 2, 8))}
    return Job(X, y, grid, KFold(5, shuffle=True, random_state=0), n_jobs)


def _means(scores: dict[tuple[int, int], float], n_candidates: int, n_folds: int) -> np.ndarray:
    table = np.array([[scores[(c, k)] for k in range(n_folds)] for c in range(n_candidates)])
    return table.mean(axis=1)


def ideals(job: Job) -> tuple[float, float, np.ndarray]:
    """Single-core seconds of the unshared and of the shared grid, and the mean scores."""
    scorer = get_scorer("accuracy")
    candidates = list(ParameterGrid(job.grid))
    unshared = shared = 0.0
    scores: dict[tuple[int, int], float] = {}
    for k, (train, test) in enumerate(job.cv.split(job.X)):
        X_train, y_train, X_test, y_test = job.X[train], job.y[train], job.X[test], job.y[test]
        prefixes: dict[int, tuple[Any, float]] = {}
        for c, params in enumerate(candidates):
            pipe = clone(job.pipeline()).set_params(**params)
            t0 = time.perf_counter()
            pipe.fit(X_train, y_train)
            scores[(c, k)] = scorer(pipe, X_test, y_test)
            unshared += time.perf_counter() - t0
            n = params["pca__n_components"]
            if n not in prefixes:  # the shared grid fits this fold's prefix once
                t0 = time.perf_counter()
                head = clone(Pipeline(pipe.steps[:-1])).fit(X_train, y_train)
                Xt = head.transform(X_train)
                prefixes[n] = ((head, Xt), time.perf_counter() - t0)
                shared += prefixes[n][1]
            (head, Xt), _ = prefixes[n]
            t0 = time.perf_counter()
            last = clone(pipe.steps[-1][1]).fit(Xt, y_train)
            whole = Pipeline([*head.steps, ("clf", last)])
            scorer(whole, X_test, y_test)
            shared += time.perf_counter() - t0
    return unshared, shared, _means(scores, len(candidates), job.cv.get_n_splits())


def _sklearn(job: Job, memory: str | None = None) -> np.ndarray:
    search = GridSearchCV(job.pipeline(memory), job.grid, cv=job.cv, n_jobs=job.n_jobs,
                          refit=False)  # fmt: skip
    return np.asarray(search.fit(job.X, job.y).cv_results_["mean_test_score"])


def _sklearn_memory(job: Job) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        return _sklearn(job, memory=folder)


def _dask_ml(job: Job, client: Any) -> np.ndarray:
    from dask_ml.model_selection import GridSearchCV as DaskGridSearchCV

    search = DaskGridSearchCV(job.pipeline(), job.grid, cv=job.cv, refit=False, scheduler=client)
    return np.asarray(search.fit(job.X, job.y).cv_results_["mean_test_score"])


def _parcv(job: Job, backend: Any) -> np.ndarray:
    result = parcv.search(job.pipeline(), job.grid, job.X, job.y, cv=job.cv, refit=False,
                          scoring="accuracy", backend=backend)  # fmt: skip
    return np.asarray(result.cv_results_["mean_test_score"])


def _timed(run: Any) -> tuple[float, np.ndarray]:
    t0 = time.perf_counter()
    means = run()
    return time.perf_counter() - t0, means


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    parser.add_argument("--n-jobs", type=int, default=2, help="cores for every tool")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # convergence warnings of small C: the same for every tool
    job = make_job(args.quick, args.n_jobs)
    small = make_job(True, args.n_jobs)
    # The tools that need no Dask run first, with no Dask cluster alive: an idle cluster's
    # scheduler, nannies and workers (heartbeats, the statistical profiler) take CPU from
    # whatever runs beside them, which cost parcv local 0.7 s of 2.1 here.
    local = {
        "scikit-learn": lambda: _sklearn(job),
        "scikit-learn memory=": lambda: _sklearn_memory(job),
        "parcv local": lambda: _parcv(job, parcv.LocalBackend(n_jobs=args.n_jobs)),
    }
    # Warm pools and imports first.
    _parcv(small, parcv.LocalBackend(n_jobs=args.n_jobs))
    _sklearn(small)
    unshared, shared, reference = ideals(job)
    rows = [("unshared ideal", unshared / args.n_jobs, reference),
            ("shared ideal", shared / args.n_jobs, reference)]  # fmt: skip
    rows += [(name, *_timed(run)) for name, run in local.items()]
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=args.n_jobs, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:  # fmt: skip
        on_dask = {
            "dask-ml": lambda: _dask_ml(job, client),
            "parcv dask": lambda: _parcv(job, parcv.DaskBackend(client=client)),
        }
        _parcv(small, parcv.DaskBackend(client=client))
        _dask_ml(small, client)
        rows += [(name, *_timed(run)) for name, run in on_dask.items()]
    base = rows[0][1]
    print(f"{'tool':<22} {'wall s':>8} {'ratio':>7} {'/ shared':>9}  mean scores")
    ok = True
    for name, wall, means in rows:
        # dask-ml averages the folds in another order: its means may differ in the last bit.
        if np.array_equal(means, reference):
            same = "equal"
        elif np.allclose(means, reference, rtol=1e-12, atol=0):
            same = "equal to 1e-12"
        else:
            same, ok = "DIFFERENT", False
        print(f"{name:<22} {wall:8.2f} {wall / base:7.2f} {wall / rows[1][1]:9.2f}  {same}")
    walls = {name: wall for name, wall, _ in rows}
    local = walls["parcv local"]
    print(f"\nparcv local / shared ideal = {local / rows[1][1]:.2f} (target <= 1.2)")
    print(f"parcv local / dask-ml = {local / walls['dask-ml']:.2f} (target < 1)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
