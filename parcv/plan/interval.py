"""The interval a run reports for its error, and the fits it takes.

``interval="ncv"`` asks for the nested cross-validation interval of Bates, Hastie
and Tibshirani: ``n_repetitions`` random assignments of the rows to K folds, and
for each, K (K - 1) / 2 fits without two folds and K fits without one
(:func:`parcv.stats.intervals.plan_nested_cv`). Those fits are ordinary units of
the plan. Their per-sample losses need a per-sample loss, so the metric must
have one.

Of :func:`parcv.cross_validate`, the "fit" is one model's fit (an ``ncv`` unit).
Of :func:`parcv.nested_cv`, it is the whole procedure the nested CV estimates:
select a candidate by the inner CV on the train rows, refit it there and keep its
per-sample losses on the test rows -- exactly an outer fold of nested CV. So the
interval's ``R K (K + 1) / 2`` (train, test) pairs are more outer folds of the
nested plan (after the user's own), each with its inner fits and its refit, and K
is the number of outer folds. ``interval="bbc"`` of :func:`parcv.nested_cv` is
BBC-CV of the selection on all data instead: no extra fit.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

from parcv.stats.checks import check_confidence
from parcv.stats.intervals import NestedCVPlan, plan_nested_cv

__all__ = [
    "INTERVAL_LOSSES",
    "INTERVALS",
    "BBCRequest",
    "IntervalRequest",
    "check_bbc",
    "check_interval",
]

#: Metrics whose per-sample loss the nested CV interval uses, and that loss.
INTERVAL_LOSSES = {
    "neg_mean_squared_error": "squared error",
    "neg_mean_absolute_error": "absolute error",
    "accuracy": "0-1 loss",
    "neg_log_loss": "log loss",
}

#: The intervals each kind of run offers (``interval=``): cross_validate, nested_cv.
INTERVALS = {"cross_validate": ("ncv",), "nested_cv": ("ncv", "bbc")}


@dataclass(frozen=True, slots=True)
class IntervalRequest:
    """A nested-CV interval for the error of a cross-validated model.

    Parameters
    ----------
    metric : str
        The scorer name whose per-sample loss is used (see ``INTERVAL_LOSSES``).
    confidence : float
        Nominal coverage, e.g. 0.9.
    n_folds : int
        K, the folds of each random assignment (the run's own CV's number; of
        a nested CV, its number of outer folds).
    n_repetitions : int
        R random assignments of the rows to K folds.
    random_state : int
        Seed of those assignments.
    """

    metric: str
    confidence: float
    n_folds: int
    n_repetitions: int
    random_state: int

    @property
    def loss(self) -> str:
        """The per-sample loss, in words."""
        return INTERVAL_LOSSES[self.metric]

    def fits(self, n_samples: int) -> NestedCVPlan:
        """The fits of the interval on ``n_samples`` rows (the same for the same request)."""
        return plan_nested_cv(n_samples, self.n_folds, self.n_repetitions, self.random_state)


def _check_int(name: str, value: Any, minimum: int, hint: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value!r}. {hint}")
    return int(value)


def check_interval(
    interval: Any,
    *,
    confidence: Any,
    metric: str,
    n_folds: int,
    n_repetitions: Any,
    random_state: Any,
    caller: str = "cross_validate",
) -> IntervalRequest | None:
    """Check an interval request against the run's metric and folds, before any fit.

    ``caller`` is the entry point (a key of :data:`INTERVALS`): ``n_folds`` are
    the folds of ``cv`` of :func:`parcv.cross_validate`, of ``outer`` of
    :func:`parcv.nested_cv`. ``interval="bbc"`` (nested CV only) needs no fits:
    it gives None here, and ``bbc=True`` does the rest.

    Examples
    --------
    >>> check_interval(None, confidence=0.9, metric="r2", n_folds=5, n_repetitions=50,
    ...                random_state=0) is None
    True
    >>> check_interval("ncv", confidence=0.9, metric="accuracy", n_folds=5,
    ...                n_repetitions=20, random_state=0).loss
    '0-1 loss'
    >>> check_interval("bbc", confidence=0.9, metric="accuracy", n_folds=5,
    ...                n_repetitions=20, random_state=0)
    Traceback (most recent call last):
    ...
    ValueError: interval must be None or 'ncv'; got 'bbc'. Use interval='ncv' for the nested \
cross-validation interval of Bates, Hastie and Tibshirani (interval='bbc' is for \
nested_cv: BBC-CV of a selection).
    """
    offered = INTERVALS[caller]
    if interval is None or (isinstance(interval, str) and interval == "bbc" and "bbc" in offered):
        return None
    if not isinstance(interval, str) or interval not in offered:
        names = " or ".join(repr(m) for m in (None, *offered))
        also = (
            " (interval='bbc' is for nested_cv: BBC-CV of a selection)"
            if "bbc" not in offered
            else ", or interval='bbc' for BBC-CV of the selection on all data (no extra fits)"
        )
        raise ValueError(
            f"interval must be {names}; got {interval!r}. Use interval='ncv' for the nested "
            f"cross-validation interval of Bates, Hastie and Tibshirani{also}."
        )
    if metric not in INTERVAL_LOSSES:
        raise ValueError(
            f"interval='ncv' needs a metric with a per-sample loss; got {metric!r}, which "
            "is not an average of per-sample losses (as R^2, ROC AUC or F1 are not). Pass "
            f"scoring= one of {sorted(INTERVAL_LOSSES)}."
        )
    where = "cv" if caller == "cross_validate" else "outer"
    if not 3 <= n_folds <= 20:
        raise ValueError(
            f"interval='ncv' needs {where} with 3 to 20 folds (it holds out two folds at once "
            f"and fits R K (K + 1) / 2 models); got {n_folds} folds. Use e.g. {where}=5."
        )
    reps = _check_int("ncv_repetitions", n_repetitions, 1, "Use e.g. 50 (Bates et al. use 200).")
    seed = _check_int("ncv_random_state", random_state, 0, "Pass a non-negative int seed.")
    return IntervalRequest(metric, check_confidence(confidence), n_folds, reps, seed)


@dataclass(frozen=True, slots=True)
class BBCRequest:
    """BBC-CV of a search's selected candidate, from its out-of-fold per-sample losses.

    Parameters
    ----------
    metric : str
        The refit metric, whose per-sample loss each fit on all data keeps.
    confidence : float
    n_bootstrap : int
    random_state : int
    """

    metric: str
    confidence: float
    n_bootstrap: int
    random_state: int

    @property
    def loss(self) -> str:
        """The per-sample loss, in words."""
        return INTERVAL_LOSSES[self.metric]


def check_bbc(
    bbc: Any, *, metric: str, confidence: Any, partition: bool, searches: bool
) -> BBCRequest | None:
    """Check ``bbc=True`` against the run, before any fit.

    ``partition`` says the all-data search's test folds partition the rows (each row is
    scored once per candidate); ``searches`` that there is a search on all data.

    Examples
    --------
    >>> check_bbc(True, metric="accuracy", confidence=0.9, partition=True, searches=True)
    BBCRequest(metric='accuracy', confidence=0.9, n_bootstrap=1000, random_state=0)
    """
    if bbc is False or bbc is None:
        return None
    if bbc is not True:
        raise TypeError(f"bbc must be True or False; got {bbc!r}.")
    if not searches:
        raise ValueError(
            "bbc=True corrects the CV score of the candidate selected on all data; this run "
            "has no search on all data (refit=False). Pass refit=True, or drop bbc=True."
        )
    if metric not in INTERVAL_LOSSES:
        raise ValueError(
            f"bbc=True needs a refit metric with a per-sample loss; got {metric!r}. Pass "
            f"scoring= (and refit=) one of {sorted(INTERVAL_LOSSES)}."
        )
    if not partition:
        raise ValueError(
            "bbc=True needs CV folds whose test sets partition the rows (KFold, "
            "StratifiedKFold, GroupKFold...), so that every row has one out-of-fold "
            "prediction per candidate; this CV repeats or leaves rows out. Use a k-fold CV."
        )
    return BBCRequest(metric, check_confidence(confidence), 1000, 0)
