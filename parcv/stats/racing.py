"""Statistical racing of cross-validation candidates: the pure decision core.

Folds are scored in order. After ``burn_in`` folds, and after every further
fold, each surviving candidate is tested against the current best on the
folds scored so far, and dropped when the test says it is worse. Nothing
here runs a model or knows about scheduling: the functions replay a race
from a table of scores, so the engine only has to call :func:`race_step`
once fold ``k`` of every survivor has a score (or has failed).

Scores are greater-is-better (negate losses first). The module is pure:
numpy, scipy and the other tests of :mod:`parcv.stats` only, no I/O and no state.

References
----------
Kuhn (2014), "Futility analysis in the cross-validation of machine learning
models", arXiv:1405.6974. Birattari, Stuetzle, Paquete and Varrentrapp
(2002), "A racing algorithm for configuring metaheuristics", GECCO.
Nadeau and Bengio (2003), Machine Learning 52. Demsar (2006), JMLR 7.
Holm (1979), Scandinavian Journal of Statistics 6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as scipy_stats  # type: ignore[import-untyped, unused-ignore]

from parcv.errors import did_you_mean
from parcv.stats.multiple import holm_adjust
from parcv.stats.paired import corrected_resampled_ttest
from parcv.stats.ranks import friedman_test

__all__ = ["RaceResult", "RaceStep", "Racing", "race_step", "run_race"]

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

#: Names accepted by ``Racing.test``.
RACING_TESTS: Final = ("corrected_t", "friedman")

# Fold differences whose spread is below this (relative to the scores) count
# as constant. It is looser than the check inside corrected_resampled_ttest,
# so that function is only ever called where it has a defined statistic.
_CONSTANT_SPREAD: Final = 64.0 * float(np.finfo(np.float64).eps)


@dataclass(frozen=True, slots=True)
class Racing:
    """Settings of a race that drops candidates worse than the current best.

    Parameters
    ----------
    burn_in : int, default=3
        Number of folds every candidate is scored on before the first
        decision (at least 2, since a paired test needs 2 folds).
    alpha : float, default=0.05
        Per-decision family-wise error rate, in (0, 1): at each decision
        point, the probability of dropping at least one candidate that is not
        worse than the current best is at most ``alpha`` (see
        :func:`race_step`). It is *not* an error rate over the whole race.
    test : {"corrected_t", "friedman"}, default="corrected_t"
        ``"corrected_t"``: one-sided Nadeau-Bengio corrected resampled t-test
        of each survivor against the best, Holm-adjusted. ``"friedman"``:
        Friedman test over all survivors, then one-sided rank tests against
        the best, Holm-adjusted (Demsar 2006).

    Raises
    ------
    TypeError
        If a parameter has the wrong type.
    ValueError
        If ``burn_in < 2``, ``alpha`` is outside (0, 1), or ``test`` is unknown.

    Examples
    --------
    >>> from parcv.stats.racing import Racing
    >>> Racing()
    Racing(burn_in=3, alpha=0.05, test='corrected_t')
    >>> Racing(burn_in=1)
    Traceback (most recent call last):
    ...
    ValueError: burn_in must be an int >= 2; got 1. ...
    """

    burn_in: int = 3
    alpha: float = 0.05
    test: str = "corrected_t"

    def __post_init__(self) -> None:
        burn_in = self.burn_in
        if isinstance(burn_in, bool) or not isinstance(burn_in, (int, np.integer)):
            raise TypeError(
                f"burn_in must be an int >= 2; got {burn_in!r}. Pass the number of "
                "folds to score before the first elimination, e.g. burn_in=3."
            )
        if burn_in < 2:
            raise ValueError(
                f"burn_in must be an int >= 2; got {burn_in!r}. A paired test needs "
                "at least 2 folds per candidate; use e.g. burn_in=3."
            )
        alpha = self.alpha
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)):
            raise TypeError(
                f"alpha must be a float in (0, 1); got {alpha!r}. Pass the "
                "per-decision family-wise error rate, e.g. alpha=0.05."
            )
        if not 0.0 < float(alpha) < 1.0:
            raise ValueError(
                f"alpha must be a float in (0, 1); got {alpha!r}. Pass the "
                "per-decision family-wise error rate, e.g. alpha=0.05."
            )
        if not isinstance(self.test, str) or self.test not in RACING_TESTS:
            raise ValueError(
                f"test must be one of {RACING_TESTS!r}; got {self.test!r}. "
                + did_you_mean(self.test, RACING_TESTS, end=" ")
                + "Use test='corrected_t' (default) or test='friedman'."
            )
        # Normalise numpy scalars so equal settings compare and hash equal.
        object.__setattr__(self, "burn_in", int(burn_in))
        object.__setattr__(self, "alpha", float(alpha))


@dataclass(frozen=True, slots=True)
class RaceStep:
    """Outcome of one decision point of a race.

    Parameters
    ----------
    fold : int
        0-based index of the last fold used: the decision saw folds
        ``0..fold`` and nothing after.
    best : int
        Index of the current best candidate, or -1 if no survivor has a score.
    p_values : tuple of float
        Per candidate, the raw one-sided p-value of "worse than the best";
        NaN where no test was run (the best, dead or untestable candidates).
    adjusted_p_values : tuple of float
        Per candidate, the p-value compared with ``alpha``: Holm-adjusted, and
        for ``"friedman"`` at least the Friedman p-value. NaN as above.
    omnibus_p_value : float
        Friedman p-value over the survivors (``"friedman"`` only, else NaN).
    eliminated : tuple of int
        Candidates dropped at this step, in index order.
    alive : tuple of bool
        Survivors after this step.
    """

    fold: int
    best: int
    p_values: tuple[float, ...]
    adjusted_p_values: tuple[float, ...]
    omnibus_p_value: float
    eliminated: tuple[int, ...]
    alive: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class RaceResult:
    """Outcome of a whole race, one entry per candidate.

    Parameters
    ----------
    eliminated_after : tuple of int
        0-based index of the last fold a candidate was scored on before it
        was dropped (so folds after it were not run), or -1 if it survived.
    p_value : tuple of float
        The adjusted p-value that dropped the candidate (see
        :attr:`RaceStep.adjusted_p_values`); NaN if it survived, or if it was
        dropped because every fit so far failed.
    n_folds : int
        Number of folds of the race.
    steps : tuple of RaceStep
        Every decision point, in fold order.
    """

    eliminated_after: tuple[int, ...]
    p_value: tuple[float, ...]
    n_folds: int
    steps: tuple[RaceStep, ...]

    @property
    def ran(self) -> BoolArray:
        """Boolean mask (n_candidates, n_folds): True where a fold was run."""
        last = np.asarray(self.eliminated_after, dtype=np.int64)
        last = np.where(last < 0, self.n_folds - 1, last)
        return np.arange(self.n_folds)[np.newaxis, :] <= last[:, np.newaxis]

    def to_columns(self) -> dict[str, NDArray[np.generic]]:
        """Return the ``cv_results_`` columns of the race.

        Returns
        -------
        dict of str to ndarray
            ``"race_eliminated_after"`` (int, -1 = survived) and
            ``"race_p_value"`` (float, NaN = survived or all fits failed).
        """
        return {
            "race_eliminated_after": np.asarray(self.eliminated_after, dtype=np.int64),
            "race_p_value": np.asarray(self.p_value, dtype=np.float64),
        }


def _as_table(scores: ArrayLike) -> FloatArray:
    """Return scores as a float (n_candidates, n_folds) array, values unchecked."""
    try:
        table = np.array(scores, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"scores must be a numeric array of shape (n_candidates, n_folds); got "
            f"{scores!r}. Pass one row of per-fold scores per candidate."
        ) from err
    if table.ndim != 2 or table.shape[0] < 1:
        raise ValueError(
            f"scores must be 2-D of shape (n_candidates, n_folds) with at least one "
            f"candidate; got shape {table.shape!r}. Stack one row per candidate."
        )
    return table


def _check_no_inf(seen: FloatArray) -> FloatArray:
    """Refuse infinite scores in the folds a decision reads (NaN is allowed)."""
    where = np.argwhere(np.isinf(seen))
    if where.size:
        candidate, fold = (int(i) for i in where[0])
        raise ValueError(
            f"scores must be finite or NaN (NaN = failed or not run); got "
            f"{float(seen[candidate, fold])!r} for candidate {candidate} on fold {fold}. "
            "Record failed fits as NaN, not -inf."
        )
    return seen


def _check_alive(alive: ArrayLike, n_candidates: int) -> BoolArray:
    """Return ``alive`` as a bool vector of length ``n_candidates``."""
    mask = np.asarray(alive)
    if mask.dtype != np.bool_ or mask.shape != (n_candidates,):
        raise ValueError(
            f"alive must be a bool array of shape ({n_candidates},), one flag per row "
            f"of scores; got {alive!r}. Start a race with np.ones(n, dtype=bool)."
        )
    return mask.copy()


def _check_size(value: object, name: str) -> float:
    """Return a fold size as a positive finite float, or raise."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and number > 0.0:
            return number
    raise ValueError(
        f"{name} must be a number > 0 with test='corrected_t'; got {value!r}. Pass the "
        "number of training and test samples per fold (averages are fine), or use "
        "Racing(test='friedman'), which needs no sizes."
    )


def _check_sizes(racing: Racing, n_train: object, n_test: object) -> tuple[float, float]:
    """Check the fold sizes the corrected t needs; the Friedman test ignores them."""
    if racing.test != "corrected_t":
        return math.nan, math.nan
    return _check_size(n_train, "n_train"), _check_size(n_test, "n_test")


def _check_fold(fold: object, n_folds: int) -> int:
    """Return ``fold`` as an index into the columns of scores, or raise."""
    if isinstance(fold, bool) or not isinstance(fold, (int, np.integer)):
        raise TypeError(
            f"fold must be an int; got {fold!r}. Pass the 0-based index of the fold "
            "that every survivor has just finished."
        )
    if not 0 <= fold < n_folds:
        raise ValueError(
            f"fold must be in [0, {n_folds - 1}] for scores with {n_folds} folds; got "
            f"{fold!r}. Pass the 0-based index of the fold just finished."
        )
    return int(fold)


def _holm_where_tested(p_values: FloatArray) -> FloatArray:
    """Holm over the entries that were tested (non-NaN); NaN stays NaN."""
    adjusted = np.full_like(p_values, np.nan)
    tested = ~np.isnan(p_values)
    if np.any(tested):
        adjusted[tested] = holm_adjust(p_values[tested])
    return adjusted


def _one_sided_corrected_t(
    best: FloatArray, other: FloatArray, n_train: float, n_test: float
) -> float:
    """P-value of "other is worse than best" by the corrected resampled t-test."""
    difference = best - other
    scale = max(float(np.max(np.abs(best))), float(np.max(np.abs(other))))
    # A spread of ~1e-200 whose variance underflows to zero is as constant for t.
    constant = float(np.ptp(difference)) <= _CONSTANT_SPREAD * scale
    if constant or (difference.size > 1 and float(np.var(difference, ddof=1)) == 0.0):
        # Zero variance: t is undefined. Identical scores are a tie (never drop);
        # a constant positive gap is the limit t -> +inf, as irace treats it.
        return 0.0 if float(np.mean(difference)) > _CONSTANT_SPREAD * scale else 1.0
    result = corrected_resampled_ttest(best, other, n_train, n_test)
    statistic = result.statistic
    if statistic is None:
        raise RuntimeError("corrected_resampled_ttest returned no statistic; a parcv bug.")
    return float(scipy_stats.t.sf(statistic, difference.size - 1))


def _best_by_mean(seen: FloatArray, candidates: NDArray[np.intp]) -> int:
    """Highest mean over each candidate's scored folds; ties go to the lowest index."""
    means = np.array([np.mean(row[~np.isnan(row)]) for row in seen[candidates]])
    # np.argmax returns the first maximum, and candidates is sorted ascending.
    return int(candidates[int(np.argmax(means))])


def _corrected_t_step(
    seen: FloatArray, candidates: NDArray[np.intp], n_train: float, n_test: float
) -> tuple[int, FloatArray, float]:
    """Best by mean, and one-sided corrected t p-values of the others against it."""
    best = _best_by_mean(seen, candidates)
    raw = np.full(seen.shape[0], np.nan)
    for other in candidates[candidates != best]:
        # Pair on the folds both candidates have scores for.
        shared = ~np.isnan(seen[best]) & ~np.isnan(seen[other])
        if np.count_nonzero(shared) >= 2:
            raw[other] = _one_sided_corrected_t(
                seen[best, shared], seen[other, shared], n_train, n_test
            )
    return best, raw, math.nan


def _friedman_step(seen: FloatArray, candidates: NDArray[np.intp]) -> tuple[int, FloatArray, float]:
    """Best by average rank, rank-test p-values against it, and the Friedman p-value."""
    complete = np.all(~np.isnan(seen[candidates]), axis=0)
    # Blocks (folds) x treatments (candidates), on the folds every survivor has.
    table = seen[candidates][:, complete].T
    raw = np.full(seen.shape[0], np.nan)
    n_blocks, k = table.shape
    if n_blocks < 2 or k < 2:
        return _best_by_mean(seen, candidates), raw, math.nan
    ranks = np.asarray(scipy_stats.rankdata(-table, axis=1), dtype=np.float64)
    mean_ranks = ranks.mean(axis=0)
    position = int(np.argmin(mean_ranks))  # first minimum: ties go to the lowest index
    # Every fold tying every candidate leaves Friedman undefined: no evidence.
    tied = bool(np.all(table == table[:, :1]))
    omnibus = 1.0 if tied else friedman_test(table).p_value
    # Demsar (2006, sec. 3.2.2): z = (R_j - R_best) / sqrt(k (k + 1) / (6 N)).
    z = (mean_ranks - mean_ranks[position]) / math.sqrt(k * (k + 1.0) / (6.0 * n_blocks))
    others = np.arange(k) != position
    raw[candidates[others]] = scipy_stats.norm.sf(z[others])
    return int(candidates[position]), raw, float(omnibus)


def _no_decision(seen: FloatArray, alive: BoolArray) -> RaceStep:
    """A step before ``burn_in``: nothing is tested or dropped."""
    nan = (math.nan,) * seen.shape[0]
    return RaceStep(seen.shape[1] - 1, -1, nan, nan, math.nan, (), tuple(alive.tolist()))


def _decide(
    seen: FloatArray, alive: BoolArray, racing: Racing, sizes: tuple[float, float]
) -> RaceStep:
    """Take the decision after the last column of ``seen``; no other data is read."""
    if seen.shape[1] < racing.burn_in:
        return _no_decision(seen, alive)
    # A survivor without a single score cannot be tested; every fit failed.
    failed = alive & np.all(np.isnan(seen), axis=1)
    candidates = np.flatnonzero(alive & ~failed)
    if candidates.size == 0:
        best, raw, omnibus = -1, np.full(seen.shape[0], np.nan), math.nan
    elif racing.test == "friedman":
        best, raw, omnibus = _friedman_step(seen, candidates)
    else:
        best, raw, omnibus = _corrected_t_step(seen, candidates, *sizes)
    adjusted = _holm_where_tested(raw)
    if not math.isnan(omnibus):
        # Drop only if the omnibus test also rejects: max() gates the post-hoc.
        adjusted = np.maximum(adjusted, omnibus)
    # NaN (untested) compares False, so untested candidates always survive.
    dropped = failed | (adjusted < racing.alpha)
    return RaceStep(
        fold=seen.shape[1] - 1,
        best=best,
        p_values=tuple(raw.tolist()),
        adjusted_p_values=tuple(adjusted.tolist()),
        omnibus_p_value=omnibus,
        eliminated=tuple(np.flatnonzero(dropped).tolist()),
        alive=tuple((alive & ~dropped).tolist()),
    )


def race_step(
    scores: ArrayLike,
    alive: ArrayLike,
    fold: int,
    *,
    racing: Racing,
    n_train: float | None = None,
    n_test: float | None = None,
) -> RaceStep:
    """Decide which survivors to drop once fold ``fold`` is scored for all of them.

    Only columns ``0..fold`` of ``scores`` are read, so the decision cannot
    depend on later folds nor on the order in which fits finished. Before
    ``burn_in`` folds (``fold + 1 < racing.burn_in``) nothing is dropped.

    Parameters
    ----------
    scores : array-like of shape (n_candidates, n_folds)
        Greater-is-better scores in fold order; NaN where a fit failed or a
        fold was not run. Columns after ``fold`` are ignored.
    alive : array-like of bool, shape (n_candidates,)
        Candidates still in the race before this step.
    fold : int
        0-based index of the fold every survivor has just finished.
    racing : Racing
        Burn-in, level and test.
    n_train, n_test : float or None, default=None
        Training and test samples per fold; required for ``"corrected_t"``.

    Returns
    -------
    RaceStep
        The best candidate, the p-values and the survivors after this step.

    Raises
    ------
    TypeError
        If ``scores`` is not numeric or ``fold`` is not an int.
    ValueError
        If shapes do not match, a score on folds ``0..fold`` is infinite,
        ``fold`` is out of range, or fold sizes are missing for
        ``"corrected_t"``.

    Notes
    -----
    Survivors with no score on folds ``0..fold`` (every fit failed) are
    dropped with p-value NaN. The others are compared with the best:

    - ``"corrected_t"``: the best is the highest mean over each candidate's
      scored folds (ties: lowest index). Each other survivor gets the
      one-sided p-value of the Nadeau-Bengio corrected resampled t-test of
      ``best - other > 0`` on the folds both have scores for (untested, and
      kept, with fewer than 2 such folds). Zero variance of the differences:
      p = 1 for identical scores (a tie), p = 0 for a constant positive gap.
    - ``"friedman"``: on the folds all survivors have scores, the best is the
      lowest average rank (ties: lowest index); each other survivor gets the
      one-sided p-value of ``z = (R_j - R_best) / sqrt(k (k + 1) / (6 N))``
      (Demsar 2006), and the adjusted p-value is at least the Friedman
      p-value, so nothing is dropped unless the Friedman test rejects.

    Multiple comparisons: the p-values of the survivors tested at this step
    are Holm-adjusted, and a survivor is dropped when its adjusted p-value
    is ``< alpha``. This bounds by ``alpha`` the family-wise error of this
    one step: the probability of dropping at least one survivor that is not
    worse than the best, given the survivors and the best. It is not an
    error rate over the whole race: decisions are repeated after every fold
    and are not corrected for that. The bound is also approximate: the best
    is picked from the same folds it is tested on (which makes the tests
    somewhat liberal), and folds share training data (the corrected t
    accounts for that; the Friedman test does not).

    Examples
    --------
    >>> import numpy as np
    >>> from parcv.stats.racing import Racing, race_step
    >>> scores = np.array([[0.90, 0.92, 0.91, np.nan],
    ...                    [0.89, 0.93, 0.90, np.nan],
    ...                    [0.70, 0.71, 0.69, np.nan]])
    >>> alive = np.ones(3, dtype=bool)
    >>> step = race_step(scores, alive, 2, racing=Racing(), n_train=80, n_test=20)
    >>> step.best, step.eliminated, step.alive
    (0, (2,), (True, True, False))
    >>> [round(p, 4) for p in step.adjusted_p_values[1:]]
    [0.3709, 0.0013]
    """
    table = _as_table(scores)
    mask = _check_alive(alive, table.shape[0])
    last = _check_fold(fold, table.shape[1])
    sizes = _check_sizes(racing, n_train, n_test)
    # The only read of the values: folds 0..fold, not even validated beyond.
    seen = _check_no_inf(table[:, : last + 1])
    return _decide(seen, mask, racing, sizes)


def run_race(
    scores: ArrayLike,
    racing: Racing,
    *,
    n_train: float | None = None,
    n_test: float | None = None,
) -> RaceResult:
    """Replay a race fold by fold from a table of scores.

    Equivalent to calling :func:`race_step` after each fold from
    ``burn_in - 1`` on, feeding each step's survivors into the next.

    Parameters
    ----------
    scores : array-like of shape (n_candidates, n_folds)
        Greater-is-better scores in fold order; NaN where a fit failed or a
        fold was not run. Scores of a candidate after it was dropped are
        ignored.
    racing : Racing
        Burn-in, level and test.
    n_train, n_test : float or None, default=None
        Training and test samples per fold; required for ``"corrected_t"``.

    Returns
    -------
    RaceResult
        When each candidate was dropped, with which p-value, and every step.

    Raises
    ------
    TypeError
        If ``scores`` is not numeric.
    ValueError
        If ``scores`` is not 2-D, holds an infinite score, has fewer folds
        than ``racing.burn_in``, or fold sizes are missing for ``"corrected_t"``.

    See Also
    --------
    race_step : One decision, with the statistics and the error control.

    Examples
    --------
    >>> import numpy as np
    >>> from parcv.stats.racing import Racing, run_race
    >>> scores = np.array([[0.90, 0.92, 0.91, 0.93, 0.90],
    ...                    [0.89, 0.93, 0.90, 0.92, 0.91],
    ...                    [0.70, 0.71, 0.69, 0.70, 0.72],
    ...                    [np.nan, np.nan, np.nan, np.nan, np.nan]])
    >>> result = run_race(scores, Racing(burn_in=3), n_train=80, n_test=20)
    >>> result.eliminated_after
    (-1, -1, 2, 2)
    >>> [round(p, 4) for p in result.p_value]
    [nan, nan, 0.0013, nan]
    >>> result.ran[2].tolist()
    [True, True, True, False, False]
    >>> friedman = run_race(scores[:3], Racing(burn_in=3, test="friedman"))
    >>> friedman.eliminated_after, round(friedman.p_value[2], 4)
    ((-1, -1, 3), 0.0388)
    """
    table = _check_no_inf(_as_table(scores))
    sizes = _check_sizes(racing, n_train, n_test)
    n_candidates, n_folds = table.shape
    if n_folds < racing.burn_in:
        raise ValueError(
            f"scores must hold at least burn_in={racing.burn_in} folds; got {n_folds}. "
            "Use more folds or a smaller Racing(burn_in=...)."
        )
    alive = np.ones(n_candidates, dtype=bool)
    eliminated_after = [-1] * n_candidates
    p_value = [math.nan] * n_candidates
    steps: list[RaceStep] = []
    for fold in range(racing.burn_in - 1, n_folds):
        # Each decision sees folds 0..fold only, exactly as race_step would live.
        step = _decide(table[:, : fold + 1], alive, racing, sizes)
        for candidate in step.eliminated:
            eliminated_after[candidate] = fold
            p_value[candidate] = step.adjusted_p_values[candidate]
        alive = np.array(step.alive, dtype=bool)
        steps.append(step)
    return RaceResult(tuple(eliminated_after), tuple(p_value), n_folds, tuple(steps))
