"""Coverage of the CV error's intervals: the usual one vs the nested CV interval.

The settings of Bates, Hastie & Tibshirani ("Cross-validation: what does it estimate and
how well does it do it?", JASA 2023), K = 10:

* ``ols``: linear regression with intercept, n = 100, p = 20, x ~ N(0, I),
  y = x'beta + N(0, 1), beta = (1, 1, 1, 1, 0, ..., 0), squared-error loss. The true
  ``Err_XY = 1 + b0^2 + |b - beta|^2`` of the final fit is exact (the limit of an
  infinitely large independent test sample).
* ``logistic``: logistic regression, n = 100, p = 10, beta = (2, 0, ..., 0) (their
  ``lowd_logistic.R``, strength 2), misclassification loss. ``Err_XY`` is measured on an
  independent sample of 50 000 points (using P(y != y_hat | x), which has less noise
  than drawing y).

Part 1 (``--study ncv``): each replication runs ``parcv.cross_validate(..., interval="ncv")``
on a new data set: its
nested CV interval, the usual per-fold interval of its 10-fold CV (``naive_interval``,
what parcv reported before) and the per-sample one of the interval's first repetition
(sd / sqrt(n), the one BHT study). Coverage is of ``Err_XY`` (the target) and of ``Err``
(the mean of Err_XY over the replications).

Part 2 (``--study bbc``): a search over 50 candidates (logistic regressions on random
subsets of 5 of 30 features, 3 of them informative), n = 100, accuracy, 5-fold CV, by
``parcv.nested_cv(..., bbc=True)``: the winner's raw CV score, its BBC-CV estimate (no
extra fits) and the nested CV estimate (5 x 5 folds), against the accuracy of the winner
refitted on all data, on 50 000 new points.

Part 3 (``--study nested``): the interval of a whole selection, select-then-refit, by
``parcv.nested_cv(..., interval="ncv", bbc=True)``: least squares on the first k of p = 20
features, k in (2, 4, 10, 20), selected by 5-fold inner CV on n = 100 rows; 5 outer folds.
``sparse``: beta = (1, 1, 1, 1, 0, ..., 0) as in ``ols``; ``decay``: beta_j = 1 / sqrt(j),
every feature matters a little less. The target is ``Err_XY`` of the model the selection
ships (the winner on all rows, refitted there), exact as in ``ols``. Rows: the NCV
interval of the selection (R = 10 repetitions, 150 more selections), the usual interval of
the nested CV's outer folds (``naive_interval``), the per-sample one over the pooled outer
test losses (sd / sqrt(n)), and BBC-CV of the selection on all data (``final.bbc``, no
extra fits).

Usage::

    python scripts/bench/interval_coverage.py --quick        # smoke run (< 3 min on 2 cores)
    python scripts/bench/interval_coverage.py --study ncv    # 200 replications, R = 50 (~15 min)
    python scripts/bench/interval_coverage.py --study nested # 200 replications, R = 10 (~25 min)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import _setup  # noqa: F401  (pins BLAS threads before numpy is imported)
import numpy as np
from joblib import Parallel, delayed
from numpy.typing import NDArray
from scipy import special  # a module reference: cloudpickle cannot ship the bare ufunc
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

import parcv
from parcv.stats.intervals import naive_cv_interval

FloatArray = NDArray[np.float64]
N_HOLDOUT = 50_000


# ---------------------------------------------------------------------------
# fast estimators: the same fits as LinearRegression / LogisticRegression, in numpy
# (sklearn's input validation costs more than these tiny fits; test_intervals.py checks
# they agree with scikit-learn)
# ---------------------------------------------------------------------------


def _design(X: FloatArray, features: tuple[int, ...] | None) -> FloatArray:
    cols = X if features is None else X[:, list(features)]
    return np.column_stack([np.ones(len(cols)), cols])


class FastOLS(RegressorMixin, BaseEstimator):  # type: ignore[misc]
    """Least squares with intercept on the first ``n_features`` columns (None: all).

    Equals ``LinearRegression()`` on ``X[:, :n_features]``.
    """

    def __init__(self, n_features: int | None = None) -> None:
        self.n_features = n_features

    def _columns(self, X: FloatArray) -> FloatArray:
        return X if self.n_features is None else X[:, : self.n_features]

    def fit(self, X: FloatArray, y: FloatArray) -> FastOLS:
        coef, *_ = np.linalg.lstsq(_design(self._columns(X), None), y, rcond=None)
        self.intercept_, self.coef_ = float(coef[0]), coef[1:]
        return self

    def predict(self, X: FloatArray) -> FloatArray:
        return np.asarray(self._columns(X) @ self.coef_ + self.intercept_, dtype=np.float64)


class FastLogit(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Binary logistic regression by Newton-Raphson; equals ``LogisticRegression(C=1/l2)``.

    ``l2`` (default 1e-4, on the slopes only) keeps the fit finite on separable data,
    where the unpenalised MLE does not exist.
    """

    def __init__(self, features: tuple[int, ...] | None = None, l2: float = 1e-4) -> None:
        self.features = features
        self.l2 = l2

    def fit(self, X: FloatArray, y: NDArray[Any]) -> FastLogit:
        A = _design(X, self.features)
        self.classes_ = np.unique(y)
        t = (y == self.classes_[-1]).astype(float)
        w = np.zeros(A.shape[1])
        ridge = np.diag(np.r_[1e-12, np.full(A.shape[1] - 1, self.l2)])  # intercept free
        for _ in range(100):
            p = special.expit(A @ w)  # no overflow warning on (near-)separable folds
            step = np.linalg.solve((A.T * (p * (1 - p))) @ A + ridge, A.T @ (t - p) - ridge @ w)
            w += step
            if np.max(np.abs(step)) < 1e-9:
                break
        self.intercept_, self.coef_ = float(w[0]), w[1:]
        return self

    def decision_function(self, X: FloatArray) -> FloatArray:
        cols = X if self.features is None else X[:, list(self.features)]
        return np.asarray(cols @ self.coef_ + self.intercept_, dtype=np.float64)

    def predict(self, X: FloatArray) -> NDArray[Any]:
        return np.asarray(self.classes_[(self.decision_function(X) > 0).astype(int)])


# ---------------------------------------------------------------------------
# settings
# ---------------------------------------------------------------------------


def _sigmoid(z: FloatArray) -> FloatArray:
    return np.asarray(special.expit(z), dtype=np.float64)


@dataclass(frozen=True)
class Setting:
    """A data-generating process, its model and loss, and the true error of a fit."""

    name: str
    n: int
    p: int
    beta: FloatArray
    kind: str  # "ols" or "logistic"

    def sample(self, rng: np.random.Generator, n: int) -> tuple[FloatArray, FloatArray]:
        X = rng.normal(size=(n, self.p))
        eta = X @ self.beta
        if self.kind == "ols":
            return X, eta + rng.normal(size=n)
        return X, (rng.random(n) < _sigmoid(eta)).astype(float)

    def estimator(self) -> BaseEstimator:
        return FastOLS() if self.kind == "ols" else FastLogit()

    @property
    def scoring(self) -> str:
        return "neg_mean_squared_error" if self.kind == "ols" else "accuracy"

    def true_error(self, model: Any, X_hold: FloatArray) -> float:
        if self.kind == "ols":  # E[(y - b0 - x'b)^2] = 1 + b0^2 + |b - beta|^2 for x ~ N(0, I)
            coef = np.zeros(self.p)
            coef[: model.coef_.size] = model.coef_  # a fit on the first k features: b_j = 0 after
            return float(1.0 + model.intercept_**2 + np.sum((coef - self.beta) ** 2))
        prob = _sigmoid(X_hold @ self.beta)
        yhat = model.predict(X_hold)
        return float(np.mean(np.where(yhat == 1, 1.0 - prob, prob)))


def _beta(p: int, nonzero: Sequence[float]) -> FloatArray:
    beta = np.zeros(p)
    beta[: len(nonzero)] = nonzero
    return beta


SETTINGS = {
    "ols": Setting("ols n=100 p=20", 100, 20, _beta(20, [1.0] * 4), "ols"),
    "logistic": Setting("logistic n=100 p=10", 100, 10, _beta(10, [2.0]), "logistic"),
}


# ---------------------------------------------------------------------------
# part 1: coverage of naive and NCV intervals
# ---------------------------------------------------------------------------


def ncv_replication(
    seed: np.random.SeedSequence,
    setting: Setting,
    args: argparse.Namespace,
    X_hold: FloatArray,
) -> dict[str, float]:
    """Return truth, and (lower, upper) of every interval, for one data set."""
    rng = np.random.default_rng(seed)
    X, y = setting.sample(rng, setting.n)
    # The interval's fold assignments and the CV's folds come from this data set's stream.
    seeds = rng.integers(0, 2**31 - 1, size=2)
    result = parcv.cross_validate(
        setting.estimator(), X, y, cv=KFold(args.folds, shuffle=True, random_state=seeds[0]),
        scoring=setting.scoring, interval="ncv", confidence=args.confidence,
        ncv_repetitions=args.ncv_repetitions, ncv_random_state=int(seeds[1]), backend="serial",
    )  # fmt: skip
    ncv, folds = result.interval, result.naive_interval
    assert ncv is not None and ncv.naive is not None and folds is not None
    truth = setting.true_error(clone(setting.estimator()).fit(X, y), X_hold)
    row = {
        "truth": truth,
        "ncv_fits": float(ncv.n_fits or 0),
        "inflation": ncv.details["inflation"],
    }
    for name, iv in (("ncv", ncv), ("naive-samples", ncv.naive), ("naive-folds", folds)):
        row[f"{name}_lo"], row[f"{name}_hi"], row[f"{name}_est"] = iv.lower, iv.upper, iv.estimate
    return row


def _chunks(items: Sequence[Any], n_chunks: int) -> list[Sequence[Any]]:
    size = math.ceil(len(items) / n_chunks)
    return [items[i : i + size] for i in range(0, len(items), size)]


def _run_chunk(
    fn: Callable[..., dict[str, float]], seeds: Sequence[Any], extra: tuple[Any, ...]
) -> list[dict[str, float]]:
    with threadpool_limits(limits=1):  # belt and braces: the env vars are set already
        return [fn(seed, *extra) for seed in seeds]


def run_parallel(
    fn: Callable[..., dict[str, float]],
    seeds: Sequence[Any],
    extra: tuple[Any, ...],
    n_jobs: int,
) -> list[dict[str, float]]:
    """Return ``[fn(seed, *extra) for seed in seeds]``, run in ``n_jobs`` processes."""
    chunks = _chunks(seeds, 4 * n_jobs)  # few tasks: the fits are too small to ship one by one
    parts = Parallel(n_jobs=n_jobs)(delayed(_run_chunk)(fn, c, extra) for c in chunks)
    return [row for part in parts for row in part]


def coverage_rows(
    setting: Setting,
    rows: list[dict[str, float]],
    methods: Sequence[str] = ("naive-folds", "naive-samples", "ncv"),
) -> list[list[str]]:
    """Return table rows: method, coverage of Err_XY (miss below/above), of Err, width."""
    truth = np.array([r["truth"] for r in rows])
    err = float(truth.mean())  # Err: Err_XY averaged over data sets
    out = []
    for method in methods:
        lo = np.array([r[f"{method}_lo"] for r in rows])
        hi = np.array([r[f"{method}_hi"] for r in rows])
        est = np.array([r[f"{method}_est"] for r in rows])
        cover = float(np.mean((lo <= truth) & (truth <= hi)))
        se = math.sqrt(cover * (1 - cover) / len(rows))
        out.append(
            [
                setting.name,
                method,
                f"{cover:.3f} +- {se:.3f}",
                f"{np.mean(truth < lo):.3f}/{np.mean(truth > hi):.3f}",
                f"{np.mean((lo <= err) & (err <= hi)):.3f}",
                f"{np.mean(hi - lo):.4f}",
                f"{np.mean(est - truth):+.4f}",
            ]
        )
    return out


def study_ncv(args: argparse.Namespace, root: np.random.SeedSequence) -> list[list[str]]:
    table: list[list[str]] = []
    for key in args.settings:
        setting = SETTINGS[key]
        hold_seed, *seeds = root.spawn(args.replications + 1)
        X_hold = np.random.default_rng(hold_seed).normal(size=(N_HOLDOUT, setting.p))
        t0 = time.perf_counter()
        rows = run_parallel(ncv_replication, seeds, (setting, args, X_hold), args.n_jobs)
        infl = np.mean([r["inflation"] for r in rows])
        print(
            f"# {setting.name}: {len(rows)} replications, {int(rows[0]['ncv_fits'])} NCV fits "
            f"each, mean inflation {infl:.2f}, {time.perf_counter() - t0:.0f} s",
            flush=True,
        )
        table += coverage_rows(setting, rows)
    return table


# ---------------------------------------------------------------------------
# part 3: coverage of the interval of a whole selection (nested_cv)
# ---------------------------------------------------------------------------


NESTED_SETTINGS = {
    "sparse": Setting("nested-sparse n=100 p=20", 100, 20, _beta(20, [1.0] * 4), "ols"),
    # Every feature matters, less and less: the selection trades bias against variance.
    "decay": Setting("nested-decay n=100 p=20", 100, 20, 1.0 / np.sqrt(np.arange(1, 21)), "ols"),
}
NESTED_FEATURES = [2, 4, 10, 20]  # least squares on the first k features: the candidates
NESTED_OUTER, NESTED_INNER = 5, 5


def nested_replication(
    seed: np.random.SeedSequence, setting: Setting, args: argparse.Namespace
) -> dict[str, float]:
    """Truth and every interval of one data set's selection, from one parcv.nested_cv run."""
    rng = np.random.default_rng(seed)
    X, y = setting.sample(rng, setting.n)
    seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=3)]
    result = parcv.nested_cv(
        FastOLS(), {"n_features": NESTED_FEATURES}, X, y,
        outer=KFold(NESTED_OUTER, shuffle=True, random_state=seeds[0]),
        inner=KFold(NESTED_INNER, shuffle=True, random_state=seeds[1]),
        scoring="neg_mean_squared_error", interval="ncv", confidence=args.confidence,
        ncv_repetitions=args.nested_repetitions, ncv_random_state=seeds[2], bbc=True,
        backend="serial",
    )  # fmt: skip
    ncv, folds, search = result.interval, result.naive_interval, result.final
    assert ncv is not None and folds is not None and search is not None and search.bbc
    # The nested CV's own outer refits keep their per-sample losses too: the pooled ones.
    own = [r for r in result.records if r.unit.kind == "refit" and r.unit.outer < NESTED_OUTER]
    pooled = np.concatenate([r.folds.test["loss"] for r in own])
    # sd / sqrt(n) of the n pooled losses (the fold ids only say they are per sample).
    samples = naive_cv_interval(pooled, np.arange(pooled.size) % NESTED_OUTER, args.confidence)
    row = {
        "truth": setting.true_error(search.best_estimator_, np.empty((0, setting.p))),
        "ncv_fits": float(ncv.n_fits or 0),
        "selections": ncv.details["n_selections"],
        "inflation": ncv.details["inflation"],
    }
    for name, iv in (("ncv", ncv), ("naive-folds", folds), ("naive-samples", samples),
                     ("bbc", search.bbc)):  # fmt: skip
        row[f"{name}_lo"], row[f"{name}_hi"], row[f"{name}_est"] = iv.lower, iv.upper, iv.estimate
    return row


def study_nested(args: argparse.Namespace, root: np.random.SeedSequence) -> list[list[str]]:
    table: list[list[str]] = []
    for key, seed in zip(args.nested_settings, root.spawn(len(args.nested_settings)),
                         strict=True):  # fmt: skip
        setting = NESTED_SETTINGS[key]
        t0 = time.perf_counter()
        rows = run_parallel(nested_replication, seed.spawn(args.replications), (setting, args),
                            args.n_jobs)  # fmt: skip
        infl = np.mean([r["inflation"] for r in rows])
        print(
            f"# {setting.name}: {len(rows)} replications, {int(rows[0]['selections'])} NCV "
            f"selections = {int(rows[0]['ncv_fits'])} fits each, mean inflation {infl:.2f}, "
            f"{time.perf_counter() - t0:.0f} s",
            flush=True,
        )
        table += coverage_rows(setting, rows, ("naive-folds", "naive-samples", "bbc", "ncv"))
    return table


# ---------------------------------------------------------------------------
# part 2: BBC-CV against the raw winner's score and nested CV
# ---------------------------------------------------------------------------


BBC_N, BBC_P, BBC_CANDIDATES, BBC_SUBSET, BBC_FOLDS = 100, 30, 50, 5, 5
BBC_BETA = _beta(BBC_P, [1.0, 1.0, 1.0])


def bbc_replication(
    seed: np.random.SeedSequence, args: argparse.Namespace, X_hold: FloatArray
) -> dict[str, float]:
    """Truth, raw winner score, BBC-CV and nested CV of one data set, from one parcv run."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(BBC_N, BBC_P))
    y = (rng.random(BBC_N) < _sigmoid(X @ BBC_BETA)).astype(float)
    subsets = [tuple(sorted(rng.choice(BBC_P, BBC_SUBSET, replace=False).tolist()))
               for _ in range(BBC_CANDIDATES)]  # fmt: skip
    folds = KFold(BBC_FOLDS, shuffle=True, random_state=int(rng.integers(2**31)))
    result = parcv.nested_cv(FastLogit(), {"features": subsets}, X, y, outer=folds, inner=folds,
                             scoring="accuracy", bbc=True, confidence=args.confidence,
                             backend="serial")  # fmt: skip
    search = result.final
    assert search is not None and search.bbc is not None
    prob = _sigmoid(X_hold @ BBC_BETA)
    predicted = search.best_estimator_.predict(X_hold)
    truth = float(np.mean(np.where(predicted == 1, prob, 1.0 - prob)))
    n_search = sum(1 for r in result.records if r.unit.outer is None)
    return {
        "truth": truth,
        "raw": search.best_score_,
        "bbc": 1.0 - search.bbc.estimate,  # BBC-CV of the error rate, as an accuracy
        "bbc_lo": 1.0 - search.bbc.upper,
        "bbc_hi": 1.0 - search.bbc.lower,
        "nested": result.estimate["score"].mean,
        "cv_fits": float(n_search),
        "nested_fits": float(len(result.records)),
    }


def study_bbc(args: argparse.Namespace, root: np.random.SeedSequence) -> list[list[str]]:
    hold_seed, *seeds = root.spawn(args.replications + 1)
    X_hold = np.random.default_rng(hold_seed).normal(size=(N_HOLDOUT, BBC_P))
    t0 = time.perf_counter()
    rows = run_parallel(bbc_replication, seeds, (args, X_hold), args.n_jobs)
    print(f"# bbc: {len(rows)} replications, {time.perf_counter() - t0:.0f} s", flush=True)
    truth = np.array([r["truth"] for r in rows])
    table = []
    for method, key, fits in (
        ("raw winner CV", "raw", "cv_fits"),
        ("BBC-CV", "bbc", "cv_fits"),
        ("nested CV (+ the search)", "nested", "nested_fits"),
    ):
        bias = np.array([r[key] for r in rows]) - truth
        se = float(bias.std(ddof=1) / math.sqrt(len(rows)))
        rmse = float(np.sqrt(np.mean(bias**2)))
        table.append([method, f"{bias.mean():+.4f} +- {se:.4f}", f"{rmse:.4f}",
                      f"{int(rows[0][fits])}"])  # fmt: skip
    cover = np.mean([(r["bbc_lo"] <= r["truth"] <= r["bbc_hi"]) for r in rows])
    table.append(["BBC-CV interval coverage", f"{cover:.3f}", "", ""])
    return table


def print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    for line in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--replications", type=int, default=None, help="data sets per setting (200; quick: 24)"
    )
    parser.add_argument(
        "--ncv-repetitions",
        type=int,
        default=50,
        help="R, random fold assignments per nested CV (BHT: 200)",
    )
    parser.add_argument(
        "--nested-repetitions",
        type=int,
        default=10,
        help="R of the nested study (nested_cv's default: 10)",
    )
    parser.add_argument("--folds", type=int, default=10, help="K (BHT: 10)")
    parser.add_argument("--confidence", type=float, default=0.9)
    parser.add_argument("--study", choices=("ncv", "bbc", "nested", "all"), default="all")
    parser.add_argument("--settings", nargs="+", choices=sorted(SETTINGS), default=sorted(SETTINGS))
    parser.add_argument(
        "--nested-settings",
        nargs="+",
        choices=list(NESTED_SETTINGS),
        default=list(NESTED_SETTINGS),
    )
    parser.add_argument("--n-jobs", type=int, default=2, help="processes (at most 2)")
    parser.add_argument("--seed", type=int, default=20230423)
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 24 replications, R = 5 (nested R = 2)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.ncv_repetitions, args.nested_repetitions = 5, 2
    if args.replications is None:
        args.replications = 24 if args.quick else 200
    if not 1 <= args.n_jobs <= 2:
        parser.error(f"--n-jobs must be 1 or 2 (2 shared cores); got {args.n_jobs}.")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    root = np.random.SeedSequence(args.seed)
    ncv_seed, bbc_seed, nested_seed = root.spawn(3)
    t0 = time.perf_counter()
    print(
        f"# nominal coverage {args.confidence:.2f}; K={args.folds}, "
        f"R={args.ncv_repetitions}, {args.replications} replications per setting"
    )
    header = [
        "setting",
        "method",
        f"cover Err_XY (nominal {args.confidence:.2f})",
        "miss lo/hi",
        "cover Err",
        "mean width",
        "mean est-truth",
    ]
    if args.study in ("ncv", "all"):
        print_table(header, study_ncv(args, ncv_seed))
    if args.study in ("nested", "all"):
        print(
            f"\n# nested: select the first k in {NESTED_FEATURES} features by {NESTED_INNER}-fold "
            f"CV, refit; {NESTED_OUTER} outer folds, R={args.nested_repetitions}; truth = "
            "Err_XY of the selection on all rows"
        )
        print_table(header, study_nested(args, nested_seed))
    if args.study in ("bbc", "all"):
        print(
            f"\n# BBC: {BBC_CANDIDATES} candidates, n={BBC_N}, accuracy, {BBC_FOLDS}-fold CV "
            f"(nested: {BBC_FOLDS} x {BBC_FOLDS}); truth = winner refit, {N_HOLDOUT} new points"
        )
        header = ["estimator of the winner's accuracy", "bias (est - truth)", "RMSE", "fits"]
        print_table(header, study_bbc(args, bbc_seed))
    print(f"# total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
