"""Tests of the racing decision core (parcv.stats.racing)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy import stats as scipy_stats  # type: ignore[import-untyped, unused-ignore]

from parcv.stats.racing import RaceResult, RaceStep, Racing, race_step, run_race

SIZES = {"n_train": 80.0, "n_test": 20.0}
TESTS = ("corrected_t", "friedman")


def _noisy(n_candidates: int, n_folds: int, seed: int = 0) -> NDArray[np.float64]:
    """Scores around 0.8 with small fold-to-fold noise."""
    rng = np.random.default_rng(seed)
    return 0.8 + 0.01 * rng.standard_normal((n_candidates, n_folds))


def _same_step(a: RaceStep, b: RaceStep) -> None:
    """Assert two steps are equal, NaN equal to NaN."""
    for name in RaceStep.__slots__:
        np.testing.assert_equal(getattr(a, name), getattr(b, name), err_msg=name)


def _corrected_t_by_hand(best: NDArray[np.float64], other: NDArray[np.float64]) -> float:
    """One-sided p of "other worse than best", Nadeau-Bengio, written out."""
    d = best - other
    j = d.size
    variance = (1.0 / j + SIZES["n_test"] / SIZES["n_train"]) * np.var(d, ddof=1)
    return float(scipy_stats.t.sf(np.mean(d) / math.sqrt(variance), j - 1))


# (a) ties ---------------------------------------------------------------------


@pytest.mark.parametrize("test", TESTS)
def test_all_tied_candidates_eliminates_none(test: str) -> None:
    row = np.array([0.81, 0.79, 0.84, 0.80, 0.83, 0.78])
    scores = np.tile(row, (5, 1))
    result = run_race(scores, Racing(burn_in=3, test=test), **SIZES)
    assert result.eliminated_after == (-1,) * 5
    assert all(math.isnan(p) for p in result.p_value)
    for step in result.steps:
        assert step.eliminated == ()
        assert step.best == 0
        assert all(p >= 0.05 for p in step.adjusted_p_values[1:])


def test_tie_with_zero_variance_has_p_one() -> None:
    scores = np.array([[0.9, 0.8, 0.7], [0.9, 0.8, 0.7]])
    step = race_step(scores, np.ones(2, dtype=bool), 2, racing=Racing(), **SIZES)
    assert step.p_values[1] == 1.0 and step.adjusted_p_values[1] == 1.0
    assert step.eliminated == ()


def test_constant_positive_gap_is_eliminated() -> None:
    # Zero variance but always worse by the same amount: the limit t -> inf.
    scores = np.array([[0.9, 0.8, 0.7], [0.8, 0.7, 0.6]])
    step = race_step(scores, np.ones(2, dtype=bool), 2, racing=Racing(), **SIZES)
    assert step.p_values[1] == 0.0
    assert step.eliminated == (1,)


# (b) a clearly worse candidate -------------------------------------------------


@pytest.mark.parametrize("burn_in", [2, 3, 5])
def test_clearly_worse_is_dropped_at_burn_in(burn_in: int) -> None:
    scores = _noisy(4, 8)
    scores[0] += 0.02  # the best
    scores[2] -= 0.5  # clearly worse
    result = run_race(scores, Racing(burn_in=burn_in), **SIZES)
    assert result.eliminated_after[2] == burn_in - 1
    assert result.eliminated_after[0] == -1
    assert result.p_value[2] < 0.05
    assert result.steps[0].best == 0
    assert result.ran[2].tolist() == [f < burn_in for f in range(8)]


def test_clearly_worse_is_dropped_at_burn_in_friedman() -> None:
    # Every fold ranks 0 > 1 > 2 > 3: Friedman p = 0.029 at N = 3; Holm keeps 1, 2.
    scores = np.array([[0.9, 0.8, 0.85]]) - np.array([[0.0], [0.01], [0.02], [0.5]])
    result = run_race(scores, Racing(burn_in=3, test="friedman"))
    step = result.steps[0]
    assert step.best == 0
    assert step.eliminated == (3,)
    assert result.eliminated_after == (-1, -1, -1, 2)


def test_best_is_never_eliminated() -> None:
    scores = _noisy(6, 10, seed=3)
    for test in TESTS:
        for step in run_race(scores, Racing(burn_in=2, test=test), **SIZES).steps:
            assert step.best not in step.eliminated


# (c) no look-ahead, determinism -------------------------------------------------


@st.composite
def _races(draw: st.DrawFn) -> tuple[NDArray[np.float64], int, Racing]:
    n_candidates = draw(st.integers(2, 5))
    n_folds = draw(st.integers(3, 7))
    value = st.one_of(
        st.floats(0.0, 1.0, allow_subnormal=False),
        st.sampled_from([0.5, 0.75, math.nan]),  # ties and failed fits
    )
    cells = draw(st.lists(value, min_size=n_candidates * n_folds, max_size=n_candidates * n_folds))
    scores = np.array(cells).reshape(n_candidates, n_folds)
    burn_in = draw(st.integers(2, n_folds))
    cut = draw(st.integers(burn_in, n_folds))
    return scores, cut, Racing(burn_in=burn_in, test=draw(st.sampled_from(TESTS)))


@settings(max_examples=150, deadline=None)
@given(race=_races(), data=st.data())
def test_decisions_ignore_later_folds(
    race: tuple[NDArray[np.float64], int, Racing], data: st.DataObject
) -> None:
    scores, cut, racing = race
    other = scores.copy()
    future = st.floats(-1e3, 1e3, allow_subnormal=False) | st.just(math.nan)
    for index in np.ndindex(other[:, cut:].shape):
        other[index[0], cut + index[1]] = data.draw(future)
    first, second = run_race(scores, racing, **SIZES), run_race(other, racing, **SIZES)
    # Steps after folds 0..cut-1 are the first cut - burn_in + 1 steps.
    n_common = cut - racing.burn_in + 1
    for a, b in zip(first.steps[:n_common], second.steps[:n_common], strict=True):
        _same_step(a, b)
    # race_step does not even validate later columns: inf there is fine.
    other[:, cut:] = math.inf
    alive = np.ones(scores.shape[0], dtype=bool)
    _same_step(
        race_step(scores, alive, cut - 1, racing=racing, **SIZES),
        race_step(other, alive, cut - 1, racing=racing, **SIZES),
    )


def test_run_race_equals_live_steps() -> None:
    scores = _noisy(5, 8, seed=7)
    scores[3] -= 0.03
    scores[4] -= 0.2
    for test in TESTS:
        racing = Racing(burn_in=3, test=test)
        replay = run_race(scores, racing, **SIZES)
        alive = np.ones(5, dtype=bool)
        live = np.full_like(scores, np.nan)
        for fold in range(8):
            # The engine fills fold `fold` of the survivors only, in any order.
            live[alive, fold] = scores[alive, fold]
            step = race_step(live, alive, fold, racing=racing, **SIZES)
            if fold >= 2:
                _same_step(step, replay.steps[fold - 2])
            alive = np.array(step.alive)


def test_no_decision_before_burn_in() -> None:
    scores = _noisy(3, 5)
    scores[2] -= 1.0
    step = race_step(scores, np.ones(3, dtype=bool), 1, racing=Racing(burn_in=3), **SIZES)
    assert step.eliminated == () and step.best == -1 and step.fold == 1
    assert step.alive == (True, True, True)


# (d) p-values against an independent computation --------------------------------


def test_corrected_t_p_values_match_hand_formula() -> None:
    scores = _noisy(4, 6, seed=11)
    scores[0] += 0.01
    scores[3] -= 0.01
    step = race_step(scores, np.ones(4, dtype=bool), 4, racing=Racing(), **SIZES)
    seen = scores[:, :5]
    best = int(np.argmax(seen.mean(axis=1)))
    assert step.best == best
    raw = {j: _corrected_t_by_hand(seen[best], seen[j]) for j in range(4) if j != best}
    for j, p in raw.items():
        assert step.p_values[j] == pytest.approx(p, rel=1e-12)
    assert math.isnan(step.p_values[best])
    # Holm by hand over the 3 comparisons.
    order = sorted(raw, key=raw.__getitem__)
    running = 0.0
    for rank, j in enumerate(order):
        running = max(running, min(1.0, (3 - rank) * raw[j]))
        assert step.adjusted_p_values[j] == pytest.approx(running, rel=1e-12)


def test_eliminated_p_value_is_the_adjusted_one() -> None:
    scores = _noisy(3, 5, seed=5)
    scores[1] -= 0.3
    result = run_race(scores, Racing(burn_in=3), **SIZES)
    step = result.steps[0]
    assert result.eliminated_after[1] == 2
    assert result.p_value[1] == step.adjusted_p_values[1]
    columns = result.to_columns()
    assert columns["race_eliminated_after"].tolist() == [-1, 2, -1]
    assert np.isnan(columns["race_p_value"][[0, 2]]).all()


# (e) validation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"burn_in": 1}, ValueError, r"burn_in must be an int >= 2; got 1\."),
        ({"burn_in": 0}, ValueError, "burn_in must"),
        ({"burn_in": 3.0}, TypeError, r"burn_in must be an int >= 2; got 3\.0\."),
        ({"burn_in": True}, TypeError, "burn_in must"),
        ({"alpha": 0.0}, ValueError, r"alpha must be a float in \(0, 1\); got 0\.0\."),
        ({"alpha": 1}, ValueError, "alpha must"),
        ({"alpha": math.nan}, ValueError, "alpha must"),
        ({"alpha": "0.05"}, TypeError, r"alpha must .* got '0\.05'\."),
        ({"test": "anova"}, ValueError, r"test must be one of .* got 'anova'\."),
        ({"test": None}, ValueError, "test must"),
    ],
)
def test_racing_validation(kwargs: dict[str, object], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Racing(**kwargs)  # type: ignore[arg-type]


def test_racing_normalizes_numpy_scalars() -> None:
    racing = Racing(burn_in=np.int64(4), alpha=np.float32(0.25))  # type: ignore[arg-type]
    assert racing == Racing(burn_in=4, alpha=0.25)
    assert type(racing.burn_in) is int and type(racing.alpha) is float


def test_call_validation() -> None:
    scores = _noisy(3, 4)
    alive = np.ones(3, dtype=bool)
    with pytest.raises(ValueError, match="n_train must be a number > 0"):
        run_race(scores, Racing())
    with pytest.raises(ValueError, match=r"n_test must be a number > 0 .*; got -1\."):
        run_race(scores, Racing(), n_train=10, n_test=-1)
    with pytest.raises(ValueError, match="at least burn_in=5 folds; got 4"):
        run_race(scores, Racing(burn_in=5), **SIZES)
    with pytest.raises(ValueError, match="scores must be 2-D"):
        run_race(scores[0], Racing(), **SIZES)
    with pytest.raises(ValueError, match=r"alive must be a bool array of shape \(3,\)"):
        race_step(scores, [1, 1, 1], 3, racing=Racing(), **SIZES)
    with pytest.raises(ValueError, match=r"fold must be in \[0, 3\]"):
        race_step(scores, alive, 4, racing=Racing(), **SIZES)
    with pytest.raises(TypeError, match="fold must be an int"):
        race_step(scores, alive, 2.0, racing=Racing(), **SIZES)  # type: ignore[arg-type]
    bad = scores.copy()
    bad[1, 2] = -math.inf
    with pytest.raises(ValueError, match="candidate 1 on fold 2"):
        run_race(bad, Racing(), **SIZES)
    # Friedman needs no fold sizes.
    assert isinstance(run_race(scores, Racing(test="friedman")), RaceResult)


# (f) NaN handling -----------------------------------------------------------------


@pytest.mark.parametrize("test", TESTS)
def test_all_failed_candidate_is_dropped_with_nan_p(test: str) -> None:
    scores = _noisy(3, 5)
    scores[1] = np.nan
    result = run_race(scores, Racing(burn_in=3, test=test), **SIZES)
    assert result.eliminated_after[1] == 2
    assert math.isnan(result.p_value[1])
    assert 1 in result.steps[0].eliminated


def test_failed_fold_is_dropped_from_the_pair_only() -> None:
    scores = _noisy(3, 6, seed=2)
    scores[0] += 0.01
    scores[2, 1] = np.nan
    step = race_step(scores, np.ones(3, dtype=bool), 5, racing=Racing(), **SIZES)
    assert step.best == 0
    shared = [0, 2, 3, 4, 5]
    assert step.p_values[2] == pytest.approx(
        _corrected_t_by_hand(scores[0, shared], scores[2, shared]), rel=1e-12
    )
    assert step.p_values[1] == pytest.approx(_corrected_t_by_hand(scores[0], scores[1]))


def test_too_few_shared_folds_is_untested_and_kept() -> None:
    scores = _noisy(2, 3)
    scores[1, :2] = np.nan
    scores[1, 2] -= 1.0
    step = race_step(scores, np.ones(2, dtype=bool), 2, racing=Racing(), **SIZES)
    assert math.isnan(step.p_values[1]) and step.eliminated == ()


def test_friedman_uses_complete_folds() -> None:
    scores = _noisy(4, 6, seed=4)
    scores[2, 3] = np.nan
    step = race_step(scores, np.ones(4, dtype=bool), 5, racing=Racing(test="friedman"))
    complete = [0, 1, 2, 4, 5]
    expected = scipy_stats.friedmanchisquare(*scores[:, complete]).pvalue
    assert step.omnibus_p_value == pytest.approx(expected, rel=1e-10)


def test_dead_candidates_scores_are_ignored() -> None:
    scores = _noisy(3, 5)
    alive = np.array([True, True, False])
    scores[2] = 100.0  # would be best if it counted
    step = race_step(scores, alive, 4, racing=Racing(), **SIZES)
    assert step.best != 2 and math.isnan(step.p_values[2]) and not step.alive[2]


# (g) Friedman against scipy -------------------------------------------------------


def test_friedman_step_matches_scipy_and_demsar_z() -> None:
    scores = np.array(
        [
            [0.90, 0.85, 0.90, 0.80, 0.88],
            [0.80, 0.80, 0.70, 0.75, 0.79],
            [0.70, 0.75, 0.80, 0.70, 0.71],
            [0.60, 0.86, 0.65, 0.66, 0.60],
        ]
    )
    step = race_step(scores, np.ones(4, dtype=bool), 4, racing=Racing(test="friedman"))
    omnibus = scipy_stats.friedmanchisquare(*scores).pvalue
    assert step.omnibus_p_value == pytest.approx(omnibus, rel=1e-10)
    mean_ranks = scipy_stats.rankdata(-scores, axis=0).mean(axis=1)
    assert step.best == 0 == int(np.argmin(mean_ranks))
    z = (mean_ranks - mean_ranks[0]) / math.sqrt(4 * 5 / (6 * 5))
    for j in (1, 2, 3):
        assert step.p_values[j] == pytest.approx(scipy_stats.norm.sf(z[j]), rel=1e-12)
    holm = sorted(step.p_values[1:])
    assert min(step.adjusted_p_values[1:]) == pytest.approx(max(omnibus, 3 * holm[0]))
    assert step.eliminated == tuple(j for j in (1, 2, 3) if step.adjusted_p_values[j] < 0.05)


def test_friedman_not_significant_drops_none() -> None:
    # Post-hoc p would be small for candidate 2, but the omnibus gate holds.
    scores = np.array([[0.9, 0.7, 0.9], [0.8, 0.8, 0.8], [0.7, 0.9, 0.7]])
    step = race_step(scores, np.ones(3, dtype=bool), 2, racing=Racing(test="friedman"))
    assert step.omnibus_p_value >= 0.05
    assert step.eliminated == ()
    assert all(p >= step.omnibus_p_value for p in step.adjusted_p_values if not math.isnan(p))


def test_a_gap_too_small_for_its_variance_races_as_a_constant_gap() -> None:
    # Hypothesis found it: the differences' spread is 7.5e-237, their variance underflows to 0.
    scores = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 7.52214564e-237]])
    race = run_race(scores, Racing(burn_in=2, test="corrected_t"), **SIZES)
    assert race.eliminated_after[1] == -1  # the best by mean is never dropped
