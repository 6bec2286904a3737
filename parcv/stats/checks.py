"""Input checks and shared t-distribution helpers for :mod:`parcv.stats`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special  # type: ignore[import-untyped, unused-ignore]

FloatArray = NDArray[np.float64]


def check_scores(scores: ArrayLike, name: str) -> FloatArray:
    """Convert per-fold scores to a finite float vector or raise."""
    try:
        array = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"{name} must be an array-like of numeric per-fold scores; got {scores!r}. "
            "Pass a list or ndarray of floats, one per fold."
        ) from err
    if array.ndim not in (1, 2):
        raise ValueError(
            f"{name} must be 1-D (n_folds,) or 2-D (n_repeats, n_splits); got shape "
            f"{array.shape!r}. Pass one score per fold, e.g. np.ravel(scores)."
        )
    bad = np.flatnonzero(~np.isfinite(array.ravel()))
    if bad.size:
        raise ValueError(
            f"{name} must contain only finite scores; got {float(array.ravel()[bad[0]])!r} at "
            f"flat position(s) {bad.tolist()!r}. Drop or refit the failed folds "
            "(for both candidates) before testing."
        )
    return array


def check_paired(a: ArrayLike, b: ArrayLike, *, min_n: int = 2) -> tuple[FloatArray, FloatArray]:
    """Check that ``a`` and ``b`` are paired per-fold scores; return flat copies."""
    a_array, b_array = check_scores(a, "a"), check_scores(b, "b")
    if a_array.shape != b_array.shape:
        raise ValueError(
            f"a and b must be paired scores on the same folds, so equal shapes; got "
            f"a.shape={a_array.shape!r} and b.shape={b_array.shape!r}. Evaluate both "
            "candidates on the same splits and pass their scores in the same order."
        )
    if a_array.size < min_n:
        raise ValueError(
            f"a and b must hold at least {min_n} paired folds; got {a_array.size!r}. "
            "Use more cross-validation folds (or repeats)."
        )
    return a_array.ravel(), b_array.ravel()


def check_constant_difference(
    difference: FloatArray, a: FloatArray, b: FloatArray, spread: float
) -> None:
    """Raise if a t-type statistic would divide by a zero variance."""
    scale = max(float(np.max(np.abs(a))), float(np.max(np.abs(b))))
    # Differences of ~1e-200 have a spread yet a variance that underflows to zero.
    if spread <= 8.0 * np.finfo(np.float64).eps * scale or _zero_variance(difference):
        raise ValueError(
            "scores of A and B differ by the same amount on every fold; a t-test is "
            "undefined because the variance of the differences a - b is zero (got "
            f"a - b = {float(difference[0])!r} on all {difference.size!r} folds). Check "
            "that a and b come from different candidates, or use wilcoxon_test() or "
            "one_se_rule_compare()."
        )


def _zero_variance(difference: FloatArray) -> bool:
    return difference.size > 1 and float(np.var(difference, ddof=1)) == 0.0


def check_probability(value: float, name: str, hint: str) -> float:
    """Check that ``value`` is a float strictly between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise TypeError(f"{name} must be a float in (0, 1); got {value!r}. {hint}")
    if not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be a float in (0, 1); got {value!r}. {hint}")
    return float(value)


def check_confidence(confidence: float) -> float:
    """Check the interval level."""
    return check_probability(confidence, "confidence", "Use e.g. confidence=0.95.")


def check_positive(value: float | None, name: str, hint: str) -> float:
    """Check that ``value`` is a finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a positive number; got {value!r}. {hint}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}. {hint}")
    return float(value)


def check_score_table(
    scores: ArrayLike | Mapping[str, ArrayLike], names: Sequence[str] | None
) -> tuple[FloatArray, tuple[str, ...]]:
    """Normalize a dict of score vectors or an (n_folds, n_candidates) array."""
    if isinstance(scores, Mapping):
        if names is not None:
            raise ValueError(
                f"names must be None when scores is a dict; got names={names!r}. "
                "The dict keys already name the candidates."
            )
        names = [str(key) for key in scores]
        columns = [check_scores(scores[key], f"scores[{key!r}]").ravel() for key in scores]
        if len({column.size for column in columns}) > 1:
            sizes = {name: column.size for name, column in zip(names, columns, strict=True)}
            raise ValueError(
                f"scores must hold the same number of folds for every candidate; got "
                f"{sizes!r}. Evaluate all candidates on the same splits."
            )
        table = np.column_stack(columns) if columns else np.empty((0, 0))
    else:
        table = check_scores(scores, "scores")
        if table.ndim != 2:
            raise ValueError(
                f"scores must be 2-D of shape (n_folds, n_candidates); got shape "
                f"{table.shape!r}. Stack one column per candidate, or pass a dict."
            )
    return table, _check_names(names, table.shape[1])


def _check_names(names: Sequence[str] | None, n_candidates: int) -> tuple[str, ...]:
    """Default candidate names to column indices; check count and uniqueness."""
    if names is None:
        return tuple(str(i) for i in range(n_candidates))
    names = tuple(str(name) for name in names)
    if len(names) != n_candidates or len(set(names)) != len(names):
        raise ValueError(
            f"names must be {n_candidates} distinct strings, one per column of scores; "
            f"got {names!r}. Pass one unique name per candidate."
        )
    return names


# scipy.stats.t.ppf and .sf call these special functions; called directly they skip
# rv_continuous's argument handling (about 0.5 ms a call), which dominated a best-vs-rest
# table of thousands of candidates. The values are the same to the last bit.
@lru_cache(maxsize=256)
def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom."""
    return float(special.stdtrit(df, q))


def t_interval(center: float, scale: float, df: float, confidence: float) -> tuple[float, float]:
    """Return the equal-tailed t interval ``center -/+ t_q * scale``."""
    quantile = t_quantile(0.5 + confidence / 2.0, float(df))
    return center - quantile * scale, center + quantile * scale


def two_sided_t_p_value(statistic: float, df: float) -> float:
    """Return the two-sided p-value of a t statistic."""
    return min(1.0, 2.0 * float(special.stdtr(df, -abs(statistic))))
