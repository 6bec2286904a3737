"""Racing: fits and wall time with and without a race, on data sets that ship with scikit-learn.

For each data set a grid of >= 50 candidates is searched by 10-fold CV three ways on the
same folds and cores: parcv without racing (the full grid), parcv with
``Racing(burn_in=3, alpha=0.05)``, and scikit-learn's ``HalvingGridSearchCV``. A winner
"agrees" when it is the full grid's winner, or a candidate the full grid's own one-sided
corrected t-test (same alpha, all folds) does not find worse than it ("tied"); the
"tied" column counts the full grid's candidates tied with its winner so (winner included).

The "oracle" column bounds what any race with this burn-in can save: it drops, right
after the burn-in folds, exactly the candidates that the full grid's test (same alpha,
all folds, no multiplicity correction) finds worse than the full grid's winner, and
runs every other candidate on all folds. A race that cannot see the future does not beat it.

    python scripts/bench/racing.py              # 5 data sets (~5 min on 2 cores)
    python scripts/bench/racing.py --quick      # smoke run: 2 small data sets
    python scripts/bench/racing.py --repeats 5  # 5 x 10-fold: more folds to race over
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any

import _setup  # noqa: F401  (pins BLAS threads before numpy is imported)
import numpy as np
from sklearn.datasets import (
    load_breast_cancer,
    load_diabetes,
    load_digits,
    load_wine,
    make_classification,
)
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.model_selection import (
    HalvingGridSearchCV,
    KFold,
    RepeatedKFold,
    RepeatedStratifiedKFold,
    StratifiedKFold,
)
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import parcv
from parcv.stats import corrected_resampled_ttest


@dataclass(frozen=True)
class Case:
    name: str
    X: np.ndarray
    y: np.ndarray
    estimator: Any
    grid: dict[str, list[Any]]
    cv: Any


def _svc_grid(n_c: int, n_gamma: int) -> dict[str, list[Any]]:
    return {
        "svc__C": list(np.logspace(-2, 4, n_c)),
        "svc__gamma": list(np.logspace(-5, 1, n_gamma)),
    }


def make_cases(quick: bool, repeats: int = 1) -> list[Case]:
    svc = make_pipeline(StandardScaler(), SVC())
    folds = _folds(StratifiedKFold, RepeatedStratifiedKFold, repeats)
    cases = [
        Case("breast_cancer", *load_breast_cancer(return_X_y=True), svc, _svc_grid(7, 8), folds),
        Case("wine", *load_wine(return_X_y=True), svc, _svc_grid(7, 8), folds),
    ]
    if quick:
        return cases
    X, y = make_classification(1000, 20, n_informative=8, random_state=0)
    knn = make_pipeline(StandardScaler(), KNeighborsRegressor())
    knn_grid = {"kneighborsregressor__n_neighbors": list(range(1, 51, 2)),
                "kneighborsregressor__weights": ["uniform", "distance"]}  # fmt: skip
    X_digits, y_digits = load_digits(return_X_y=True)
    return [
        *cases,
        Case("digits", X_digits, y_digits, svc, _svc_grid(7, 8), folds),
        Case("diabetes", *load_diabetes(return_X_y=True), knn, knn_grid,
             _folds(KFold, RepeatedKFold, repeats)),
        Case("make_classification", X, y, svc, _svc_grid(7, 8), folds),
    ]  # fmt: skip


def _folds(once: Any, repeated: Any, repeats: int) -> Any:
    """10-fold CV, shuffled with seed 0, once or ``repeats`` times."""
    if repeats == 1:
        return once(10, shuffle=True, random_state=0)
    return repeated(n_splits=10, n_repeats=repeats, random_state=0)


def _split_scores(cv_results: dict[str, Any], n_folds: int) -> np.ndarray:
    return np.array([cv_results[f"split{k}_test_score"] for k in range(n_folds)]).T


def _agrees(full: Any, index: int, n: int, n_folds: int, alpha: float) -> str:
    """'same', 'tied' (the full grid's test does not find it worse) or 'worse'."""
    best = full.best_index_
    if index == best:
        return "same"
    scores = _split_scores(full.cv_results_, n_folds)
    difference = scores[best] - scores[index]
    if np.ptp(difference) == 0:  # the same gap on every fold: no variance to test with
        return "tied" if difference[0] == 0 else "worse"
    test = corrected_resampled_ttest(scores[best], scores[index], n_train=n * 0.9, n_test=n * 0.1)
    one_sided = test.p_value / 2 if test.statistic > 0 else 1 - test.p_value / 2
    return "tied" if one_sided >= alpha else "worse"


def _timed(run: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = run()
    return time.perf_counter() - t0, out


def run_case(case: Case, n_jobs: int, racing: parcv.Racing) -> dict[str, Any]:
    n_folds, n_cand = case.cv.get_n_splits(), int(np.prod([len(v) for v in case.grid.values()]))
    backend = parcv.LocalBackend(n_jobs=n_jobs)

    def search(race: parcv.Racing | None) -> Any:
        return parcv.search(case.estimator, case.grid, case.X, case.y, cv=case.cv, refit=False,
                            racing=race, backend=backend)  # fmt: skip

    full_s, full = _timed(lambda: search(None))
    race_s, raced = _timed(lambda: search(racing))
    halving = HalvingGridSearchCV(case.estimator, case.grid, cv=case.cv, refit=False,
                                  n_jobs=n_jobs, random_state=0)  # fmt: skip
    try:
        halving_s, _ = _timed(lambda: halving.fit(case.X, case.y))
    except ValueError as err:  # e.g. more folds x classes than rows to start halving with
        print(f"{case.name}: HalvingGridSearchCV cannot run: {err}", file=sys.stderr)
        halving_s, halving_best, halving_fits = math.nan, None, 0
    else:
        halving_best = next(i for i, p in enumerate(full.cv_results_["params"])
                            if p == halving.best_params_)  # fmt: skip
        halving_fits = len(halving.cv_results_["params"]) * n_folds
    worse = sum(_agrees(full, i, len(case.y), n_folds, racing.alpha) == "worse"
                for i in range(n_cand))  # fmt: skip
    oracle_fits = worse * racing.burn_in + (n_cand - worse) * n_folds
    kept = raced.cv_results_["race_eliminated_after"]
    decided = int(sum(k + 1 if k >= 0 else n_folds for k in kept))
    n = len(case.y)
    return {
        "case": case.name, "candidates": n_cand, "full_fits": n_cand * n_folds,
        "race_fits": sum(1 for r in raced.records if r.unit.kind == "fit"), "race_needed": decided,
        "halving_fits": halving_fits,
        "full_s": full_s, "race_s": race_s, "halving_s": halving_s,
        "race_agrees": _agrees(full, raced.best_index_, n, n_folds, racing.alpha),
        "halving_agrees": "n/a" if halving_best is None
        else _agrees(full, halving_best, n, n_folds, racing.alpha),
        "dropped": int((kept >= 0).sum()), "oracle_fits": oracle_fits, "worse": worse,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two small data sets")
    parser.add_argument("--n-jobs", type=int, default=2, help="cores for every tool")
    parser.add_argument("--repeats", type=int, default=1, help="repeats of the 10-fold CV")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # convergence warnings of extreme C: the same for every tool
    racing = parcv.Racing(burn_in=3, alpha=0.05)
    rows = [run_case(case, args.n_jobs, racing) for case in make_cases(args.quick, args.repeats)]
    head = (f"{'data set':<20} {'cand':>4} {'full fits':>9} {'race fits':>9} {'x fewer':>7} "
            f"{'dropped':>7} {'race s':>7} {'full s':>7} {'winner':>7} {'halving fits':>12} "
            f"{'halving':>7} {'tied':>4} {'oracle x':>8}")  # fmt: skip
    print(head)
    ratios = []
    for r in rows:
        ratio = r["full_fits"] / r["race_fits"]
        ratios.append(ratio)
        print(f"{r['case']:<20} {r['candidates']:>4} {r['full_fits']:>9} {r['race_fits']:>9} "
              f"{ratio:>7.2f} {r['dropped']:>7} {r['race_s']:>7.1f} {r['full_s']:>7.1f} "
              f"{r['race_agrees']:>7} {r['halving_fits']:>12} "
              f"{r['halving_agrees']:>7} {r['candidates'] - r['worse']:>4} "
              f"{r['full_fits'] / r['oracle_fits']:>8.2f}")  # fmt: skip
    median = float(np.median(ratios))
    oracle = float(np.median([r["full_fits"] / r["oracle_fits"] for r in rows]))
    agree = all(r["race_agrees"] != "worse" for r in rows)
    print(f"\nmedian fits ratio full / raced = {median:.2f} (target >= 3; oracle bound "
          f"{oracle:.2f}); "
          f"racing's winner equal or tied in every case: {agree}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
