"""Tests of intervals.py against brute-force loops written from the papers' algorithms."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from itertools import combinations
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from parcv.stats.intervals import (
    CVInterval,
    FitUnit,
    NestedCVLosses,
    NestedCVPlan,
    bbc_bootstrap_indices,
    bbc_cv,
    naive_cv_interval,
    ncv_interval,
    plan_nested_cv,
)
from tests.intervals_reference import nested_cv_losses, squared_error

Z90 = NormalDist().inv_cdf(0.95)

# ---------------------------------------------------------------------------
# nested CV: brute force (BHT Algorithm 1, literally) on a tiny case
# ---------------------------------------------------------------------------


def _simple_ls(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Hand-written least squares y = a + b x (the model of the tiny case)."""
    mx, my = statistics.fmean(x), statistics.fmean(y)
    b = sum((u - mx) * (v - my) for u, v in zip(x, y, strict=True)) / sum((u - mx) ** 2 for u in x)
    return my - b * mx, b


def _losses_of_fit(
    x: list[float], y: list[float], train: list[int], test: list[int]
) -> list[float]:
    a, b = _simple_ls([x[i] for i in train], [y[i] for i in train])
    return [(y[i] - a - b * x[i]) ** 2 for i in test]


def brute_force_ncv(
    x: list[float], y: list[float], fold_ids: list[list[int]], confidence: float
) -> dict[str, float]:
    """BHT Algorithm 1 with separate fits per (k, k'), then the bounds and bias correction."""
    n, k_folds = len(y), max(fold_ids[0]) + 1
    a_list, b_list, es, outs = [], [], [], []
    for f in fold_ids:
        for k in range(k_folds):
            e_in: list[float] = []
            for k2 in range(k_folds):
                if k2 != k:
                    train = [i for i in range(n) if f[i] not in (k, k2)]
                    e_in += _losses_of_fit(x, y, train, [i for i in range(n) if f[i] == k2])
            train, test = [i for i in range(n) if f[i] != k], [i for i in range(n) if f[i] == k]
            e_out = _losses_of_fit(x, y, train, test)
            a_list.append((statistics.fmean(e_in) - statistics.fmean(e_out)) ** 2)
            b_list.append(statistics.variance(e_out) / len(e_out))
            es += e_in
            outs += e_out
    mse = statistics.fmean(a_list) - statistics.fmean(b_list)
    lo = statistics.stdev(es) / math.sqrt(n)
    se = min(max(math.sqrt(max(0.0, mse * (k_folds - 1) / k_folds)), lo), math.sqrt(k_folds) * lo)
    err_ncv, err_cv = statistics.fmean(es), statistics.fmean(outs)
    bias = (1 + (k_folds - 2) / k_folds) * (err_ncv - err_cv)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    est = err_ncv - bias
    return {
        "estimate": est,
        "lower": est - z * se,
        "upper": est + z * se,
        "se": se,
        "mse_hat": mse,
        "err_ncv": err_ncv,
        "err_cv": err_cv,
        "bias": bias,
    }


@pytest.mark.parametrize(("n", "k", "reps", "seed"), [(12, 3, 2, 7), (13, 3, 2, 1), (16, 4, 1, 3)])
def test_ncv_equals_brute_force(n: int, k: int, reps: int, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    x = rng.normal(size=n)
    y = 1.0 + 2.0 * x + rng.standard_t(3, size=n)
    # The reference driver (sklearn fits, shared pair fits) vs. the literal algorithm.
    losses = nested_cv_losses(
        LinearRegression(),
        x[:, None],
        y,
        loss=squared_error,
        n_folds=k,
        n_repetitions=reps,
        random_state=seed,
    )
    got = ncv_interval(losses, 0.8)
    folds = plan_nested_cv(n, k, reps, random_state=seed).fold_ids.tolist()
    want = brute_force_ncv(x.tolist(), y.tolist(), folds, 0.8)
    for key in ("estimate", "lower", "upper", "se"):
        assert getattr(got, key) == pytest.approx(want[key], rel=1e-9, abs=1e-12), key
    for key in ("mse_hat", "err_ncv", "err_cv", "bias"):
        assert got.details[key] == pytest.approx(want[key], rel=1e-9, abs=1e-12), key
    assert got.n_fits == reps * k * (k + 1) // 2
    assert got.naive is not None
    assert got.naive.estimate == pytest.approx(float(np.mean(losses.outer[0])))


def test_ncv_without_bias_correction_is_centred_on_err_ncv() -> None:
    rng = np.random.default_rng(0)
    plan = plan_nested_cv(20, 4, 3, random_state=0)
    losses = plan.assemble({u: rng.exponential(size=plan.test_indices(u).size) for u in plan.units})
    on, off = ncv_interval(losses), ncv_interval(losses, bias_correction=False)
    assert off.estimate == pytest.approx(on.details["err_ncv"])
    assert on.estimate == pytest.approx(
        on.details["err_ncv"] - 1.5 * (on.details["err_ncv"] - on.details["err_cv"])
    )  # 1 + (K - 2) / K = 1.5 for K = 4
    assert on.se == off.se


# ---------------------------------------------------------------------------
# nested CV: the three branches of the bounds, on hand-built losses
# ---------------------------------------------------------------------------


def _hand_losses(inner_shift: float, noise: float) -> NestedCVLosses:
    """K=3, n=6, R=1: inner losses = outer + per-fold shift; outer alternates 1, 1 + noise."""
    fold_ids = np.array([[0, 0, 1, 1, 2, 2]])
    outer = np.array([[1.0, 1.0 + noise, 1.0, 1.0 + noise, 1.0, 1.0 + noise]])
    inner = np.repeat(outer[:, None, :], 3, axis=1)
    inner[0, 0] += inner_shift  # e_in of outer fold 0 moves away from e_out
    return NestedCVLosses(fold_ids, inner, outer)


def test_ncv_se_clipped_up_to_naive_inner_se() -> None:
    iv = ncv_interval(_hand_losses(0.0, 0.2))  # a = 0, so MSE_hat = -mean(b) < 0
    assert iv.details["mse_hat"] < 0
    assert iv.se == pytest.approx(iv.details["se_lower"])
    assert iv.details["inflation"] == pytest.approx(1.0)


def test_ncv_se_clipped_down_to_sqrt_k_times_naive() -> None:
    iv = ncv_interval(_hand_losses(50.0, 0.2))
    assert iv.details["se_unclipped"] > iv.details["se_upper"]
    assert iv.se == pytest.approx(math.sqrt(3) * iv.details["se_lower"])


def test_ncv_se_unclipped_in_between() -> None:
    iv = ncv_interval(_hand_losses(1.0, 0.7))
    # By hand: every e_out is (1, 1.7): b_k = var/2 = (0.7^2 / 2) / 2; only outer fold 0's
    # e_in is shifted by 1: a = (1, 0, 0). MSE_hat = 1/3 - 0.7^2/4, rescaled by (K-1)/K.
    mse = 1 / 3 - 0.7**2 / 4
    assert iv.details["mse_hat"] == pytest.approx(mse)
    se = math.sqrt(mse * 2 / 3)
    assert iv.details["se_lower"] < se < iv.details["se_upper"]
    assert iv.se == pytest.approx(se)
    assert iv.upper - iv.estimate == pytest.approx(Z90 * se)


@pytest.mark.parametrize("seed", range(20))
def test_ncv_width_between_independent_and_fully_dependent_bounds(seed: int) -> None:
    # What BHT's bounds (nestedcv: max(1, min(sd_infl, sqrt(K)))) guarantee:
    # s/sqrt(n) <= se <= sqrt(K) s/sqrt(n), s = sd of the pooled inner losses.
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(3, 7)), int(rng.integers(20, 40))
    plan = plan_nested_cv(n, k, int(rng.integers(1, 4)), random_state=seed)
    scale = rng.exponential()
    units = {
        u: scale * rng.gamma(0.5, size=plan.test_indices(u).size) * (2.0 if u.is_outer else 1.0)
        for u in plan.units
    }
    iv = ncv_interval(plan.assemble(units))
    pooled = np.concatenate(
        [plan.assemble(units).e_in(r, f) for r in range(plan.n_repetitions) for f in range(k)]
    )
    floor = Z90 * pooled.std(ddof=1) / math.sqrt(n)
    assert floor * (1 - 1e-12) <= iv.upper - iv.estimate <= math.sqrt(k) * floor * (1 + 1e-12)


def test_ncv_is_not_guaranteed_wider_than_naive() -> None:
    # The floor uses the inner losses' sd (as BHT's code does), not the CV losses' sd: when
    # outer losses vary much more than inner ones, the NCV interval is the narrower one.
    losses = _hand_losses(0.0, 0.2)
    outer = losses.outer.copy()
    outer[0, ::2] -= 0.9  # e_out spread grows, e_in unchanged
    wide = NestedCVLosses(losses.fold_ids, losses.inner, outer)
    iv = ncv_interval(wide)
    assert iv.naive is not None
    assert iv.width < iv.naive.width


# ---------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------


def test_plan_lists_each_pair_once_and_outer_fits_form_a_cv() -> None:
    plan = plan_nested_cv(23, 5, 3, random_state=42)
    assert plan.n_fits == 3 * 5 * 6 // 2
    for r in range(3):
        held = sorted(u.held_out for u in plan.units if u.repetition == r)
        assert held == sorted([*combinations(range(5), 2), *((f,) for f in range(5))])
        tests = [plan.test_indices(FitUnit(r, (f,))) for f in range(5)]
        assert sorted(np.concatenate(tests).tolist()) == list(range(23))
        assert {t.size for t in tests} <= {4, 5}  # balanced folds
    unit = FitUnit(1, (0, 3))
    both = np.concatenate([plan.train_indices(unit), plan.test_indices(unit)])
    assert sorted(both.tolist()) == list(range(23))
    assert set(plan.fold_ids[1, plan.test_indices(unit)].tolist()) == {0, 3}


def test_plan_is_reproducible_and_immutable() -> None:
    a, b = plan_nested_cv(30, 3, 2, random_state=5), plan_nested_cv(30, 3, 2, random_state=5)
    assert np.array_equal(a.fold_ids, b.fold_ids)
    with pytest.raises(ValueError, match="read-only"):
        a.fold_ids[0, 0] = 1


def test_assemble_routes_pair_losses_to_both_outer_folds() -> None:
    plan = NestedCVPlan.from_fold_ids([[0, 1, 2, 0, 1, 2]])
    units = {
        u: np.asarray(plan.test_indices(u), dtype=float) * 10 + len(u.held_out) for u in plan.units
    }
    losses = plan.assemble(units)
    # Pair fit (0, 1) tests samples 0, 1, 3, 4: fold-1 samples are outer fold 0's inner
    # losses, fold-0 samples outer fold 1's.
    assert losses.inner[0, 0, [1, 4]].tolist() == [12.0, 42.0]
    assert losses.inner[0, 1, [0, 3]].tolist() == [2.0, 32.0]
    assert losses.e_in(0, 2).tolist() == [2.0, 12.0, 32.0, 42.0]
    assert losses.outer[0].tolist() == [1.0, 11.0, 21.0, 31.0, 41.0, 51.0]


# ---------------------------------------------------------------------------
# naive interval
# ---------------------------------------------------------------------------


def test_naive_per_fold_matches_hand_computation() -> None:
    iv = naive_cv_interval([0.2, 0.4, 0.3, 0.5], confidence=0.9)
    m = 0.35
    se = math.sqrt(((0.2 - m) ** 2 + (0.4 - m) ** 2 + (0.3 - m) ** 2 + (0.5 - m) ** 2) / 12)
    assert iv.estimate == pytest.approx(m)
    assert iv.se == pytest.approx(se)
    assert (iv.lower, iv.upper) == pytest.approx((m - Z90 * se, m + Z90 * se))
    assert iv.n_fits == 4 and iv.method == "naive" and iv.naive is None


def test_naive_per_sample_and_per_fold_se() -> None:
    losses, folds = [1.0, 2.0, 6.0, 3.0, 4.0, 8.0], [0, 0, 0, 1, 1, 1]
    samples = naive_cv_interval(losses, folds, 0.95)
    assert samples.estimate == pytest.approx(4.0)
    assert samples.se == pytest.approx(statistics.stdev(losses) / math.sqrt(6))
    assert samples.upper == pytest.approx(4.0 + NormalDist().inv_cdf(0.975) * samples.se)
    by_fold = naive_cv_interval(losses, folds, 0.95, se_from="folds")
    assert by_fold.se == pytest.approx(math.sqrt(((3 - 4) ** 2 + (5 - 4) ** 2) / 2))


def test_interval_result_is_frozen() -> None:
    iv = naive_cv_interval([1.0, 2.0])
    with pytest.raises(AttributeError):
        iv.estimate = 0.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        iv.details["n_folds"] = 3.0  # type: ignore[index]


# ---------------------------------------------------------------------------
# BBC-CV: brute force with the same bootstrap rows
# ---------------------------------------------------------------------------


def brute_force_bbc(values: list[list[float]], rows: list[list[int]], greater: bool) -> list[float]:
    """Tsamardinos et al. (2018): select on the bootstrap sample, score out of bag."""
    n, n_cand = len(values), len(values[0])
    out = []
    for bag in rows:
        perf = [sum(values[i][c] for i in bag) / n for c in range(n_cand)]
        best = perf.index(max(perf) if greater else min(perf))  # first of ties
        oob = [i for i in range(n) if i not in set(bag)]
        out.append(sum(values[i][best] for i in oob) / len(oob))
    return out


@pytest.mark.parametrize("greater", [True, False])
def test_bbc_equals_brute_force(greater: bool) -> None:
    rng = np.random.default_rng(3)
    values = rng.integers(0, 3, size=(15, 4)).astype(float)  # integers: exact sums, real ties
    rows = bbc_bootstrap_indices(15, 60, random_state=11)
    want = brute_force_bbc(values.tolist(), rows.tolist(), greater)
    iv = bbc_cv(values, greater_is_better=greater, n_bootstrap=60, random_state=11, confidence=0.8)
    assert iv.estimate == pytest.approx(statistics.fmean(want))
    assert (iv.lower, iv.upper) == pytest.approx(tuple(np.percentile(want, [10, 90])))
    assert iv.se == pytest.approx(statistics.stdev(want))
    overall = values.mean(axis=0)
    winner = int(np.argmax(overall) if greater else np.argmin(overall))
    assert iv.details["winner"] == winner
    assert iv.details["raw_winner_score"] == pytest.approx(overall[winner])
    assert iv.n_fits is None and iv.naive is None


def test_bbc_metric_path_equals_per_sample_path() -> None:
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, size=25)
    preds = rng.integers(0, 2, size=(25, 6))
    correct = (preds == y[:, None]).astype(float)
    fold_ids = np.arange(25) % 5

    def accuracy(y_true: Any, y_pred: Any) -> float:
        return float(np.mean(y_true == y_pred))

    a = bbc_cv(correct, greater_is_better=True, n_bootstrap=40, random_state=2, fold_ids=fold_ids)
    b = bbc_cv(
        preds,
        y,
        accuracy,
        greater_is_better=True,
        n_bootstrap=40,
        random_state=2,
        fold_ids=fold_ids,
    )
    assert (a.estimate, a.lower, a.upper) == pytest.approx((b.estimate, b.lower, b.upper))
    assert a.n_fits == b.n_fits == 6 * 5
    assert a.naive is not None and b.naive is not None
    assert a.naive.estimate == pytest.approx(b.naive.estimate)


def test_bbc_corrects_the_winners_curse() -> None:
    # 40 candidates of identical true accuracy 0.7: the raw max is optimistic, BBC is not.
    rng = np.random.default_rng(0)
    raw, bbc = [], []
    for _ in range(20):
        correct = (rng.random((80, 40)) < 0.7).astype(float)
        iv = bbc_cv(correct, greater_is_better=True, n_bootstrap=200, random_state=rng)
        raw.append(iv.details["raw_winner_score"] - 0.7)
        bbc.append(iv.estimate - 0.7)
    assert np.mean(raw) > 0.05
    assert abs(np.mean(bbc)) < 0.5 * np.mean(raw)


def test_bootstrap_rows_always_leave_something_out() -> None:
    rows = bbc_bootstrap_indices(2, 200, random_state=0)  # half of the draws are full at n=2
    assert all(len(set(r)) == 1 for r in rows.tolist())


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "exc", "pattern"),
    [
        (lambda: naive_cv_interval([1.0, 2.0], confidence=90), ValueError, r"confidence.*90"),
        (lambda: naive_cv_interval([1.0, 2.0], confidence="0.9"), TypeError, "confidence"),  # type: ignore[arg-type]
        (lambda: naive_cv_interval([1.0]), ValueError, "at least 2"),
        (lambda: naive_cv_interval([1.0, np.nan]), ValueError, "finite"),
        (lambda: naive_cv_interval([1.0, 2.0], [0, 0]), ValueError, "K >= 2"),
        (lambda: naive_cv_interval([1.0, 2.0], [0, 1, 1]), ValueError, "one fold id per"),
        (lambda: naive_cv_interval([1.0, 2.0], se_from="samples"), ValueError, "fold_ids"),
        (lambda: plan_nested_cv(30, n_folds=2), ValueError, r"n_folds.*>= 3.*2"),
        (lambda: plan_nested_cv(5, n_folds=3), ValueError, r"n_samples.*>= 6.*5"),
        (lambda: plan_nested_cv(30.0, n_folds=3), TypeError, r"n_samples.*30\.0"),  # type: ignore[arg-type]
        (lambda: plan_nested_cv(30, 3, n_repetitions=0), ValueError, "n_repetitions"),
        (lambda: NestedCVPlan.from_fold_ids([[0, 0, 1, 1, 3, 3]]), ValueError, "fold sizes"),
        (lambda: ncv_interval("losses"), TypeError, "NestedCVLosses"),  # type: ignore[arg-type]
        (lambda: bbc_cv(np.ones((5, 2)), greater_is_better="yes"), TypeError, "greater_is_b"),  # type: ignore[arg-type]
        (lambda: bbc_cv(np.ones((5, 2)), [1] * 5, greater_is_better=True), ValueError, "y is only"),
        (lambda: bbc_cv(np.ones(5), greater_is_better=True), ValueError, "2-D"),
        (
            lambda: bbc_cv(np.ones((5, 2)), np.ones(4), np.mean, greater_is_better=True),
            ValueError,
            "out-of-fold predictions",
        ),
    ],
)
def test_validation_errors_name_the_parameter(
    call: Callable[[], object], exc: type[Exception], pattern: str
) -> None:
    with pytest.raises(exc, match=pattern):
        call()


def test_assemble_rejects_fold_level_metric_and_missing_units() -> None:
    plan = plan_nested_cv(12, 3, 1, random_state=0)
    units = {u: np.zeros(plan.test_indices(u).size) for u in plan.units}
    bad = dict(units)
    bad[plan.units[0]] = np.array([0.7])  # one AUC per fit instead of one loss per sample
    with pytest.raises(ValueError, match="per-sample"):
        plan.assemble(bad)
    del bad[plan.units[0]]
    with pytest.raises(ValueError, match="missing"):
        plan.assemble(bad)


def test_reference_rejects_a_loss_that_is_not_per_sample() -> None:
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 1)), rng.normal(size=12)
    with pytest.raises(ValueError, match="per-sample"):
        nested_cv_losses(
            LinearRegression(),
            X,
            y,
            n_folds=3,
            n_repetitions=1,
            loss=lambda t, p: float(np.mean((t - p) ** 2)),
        )


def test_nan_loss_names_its_position() -> None:
    plan = plan_nested_cv(12, 3, 1, random_state=0)
    units = {u: np.zeros(plan.test_indices(u).size) for u in plan.units}
    outer_unit = next(u for u in plan.units if u.is_outer)
    units[outer_unit] = np.full(plan.test_indices(outer_unit).size, np.nan)
    with pytest.raises(ValueError, match=r"outer must be finite.*index"):
        plan.assemble(units)


# ---------------------------------------------------------------------------
# the study's fast estimators are the scikit-learn fits
# ---------------------------------------------------------------------------


def test_cvinterval_helpers() -> None:
    iv = CVInterval("naive", 1.0, 0.0, 2.0, 0.9, 0.6, 3)
    assert iv.width == 2.0 and iv.covers(0.0) and not iv.covers(2.5)


def test_bbc_metric_path_accepts_label_predictions() -> None:
    rng = np.random.default_rng(5)
    y = rng.choice(np.array(["cat", "dog"]), size=20)
    preds = np.where(rng.random((20, 3)) < 0.8, y[:, None], "cat")

    def accuracy(y_true: Any, y_pred: Any) -> float:
        return float(np.mean(y_true == y_pred))

    iv = bbc_cv(preds, y, accuracy, greater_is_better=True, n_bootstrap=30, random_state=0)
    assert 0.0 <= iv.lower <= iv.estimate <= iv.upper <= 1.0
