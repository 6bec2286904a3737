"""Decide, once per plan, whether fast CV applies and how candidates are batched."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from parcv.fastcv.scoring import scorer_problem
from parcv.fastcv.smoothers import batch_candidates, smoother_problem
from parcv.plan.data import Dataset
from parcv.plan.partition import PartitionFolds, as_partition
from parcv.plan.scoring import Scoring
from parcv.plan.space import Candidate
from parcv.plan.splits import Fold

__all__ = ["FastCVDecision", "check_fast_cv", "decide_fast_cv"]

_OPTIONS = ("auto", True, False)


@dataclass(frozen=True, slots=True)
class FastCVDecision:
    """Whether a plan computes held-out predictions in closed form, and in which batches.

    Parameters
    ----------
    used : bool
    batches : tuple of tuple of int
        Candidates that share one decomposition (one unit per outer fold each).
    reason : str
        Why fast CV is not used ('' when it is).

    Examples
    --------
    >>> FastCVDecision(False, (), "fast_cv=False").used
    False
    """

    used: bool
    batches: tuple[tuple[int, ...], ...]
    reason: str


def check_fast_cv(fast_cv: Any) -> str | bool:
    """Accept ``"auto"``, True or False.

    Examples
    --------
    >>> check_fast_cv("auto")
    'auto'
    """
    if isinstance(fast_cv, (bool, np.bool_)):
        return bool(fast_cv)
    if fast_cv == "auto":
        return "auto"
    raise ValueError(
        f"fast_cv must be 'auto', True or False; got {fast_cv!r}. 'auto' uses exact "
        "closed-form leave-one-out when it applies, True also k-fold (and raises if it "
        "cannot apply), False always refits per fold."
    )


def _folds_problem(
    option: str | bool, inner_folds: Mapping[Any, Sequence[Fold]], rows_of: Callable[[Any], Any]
) -> str:
    for outer, folds in inner_folds.items():
        if option == "auto" and not (isinstance(folds, PartitionFolds) and folds.leave_one_out):
            return (
                "the CV scheme is not LeaveOneOut (fast_cv='auto' takes the fast path only for "
                "leave-one-out; fast_cv=True also takes it for k-fold)"
            )
        if as_partition(folds, rows_of(outer)) is None:
            return (
                "the test folds do not partition the rows with train = the rest (e.g. "
                "ShuffleSplit, RepeatedKFold, TimeSeriesSplit)"
            )
    return ""


def _data_problem(data: Dataset, return_train_score: bool) -> str:
    if data.fit_params:
        return f"fit_params {sorted(data.fit_params)!r} are given (they change the smoother)"
    if return_train_score:
        return "return_train_score=True (train scores need every refit)"
    if data.score_params:
        return "the scorers take metadata (score parameters are split with each fold's rows)"
    if sp.issparse(data.X):
        return "X is sparse"
    X: NDArray[Any] = np.asarray(data.X)
    if X.ndim != 2 or not (X.dtype.kind in "iub" or X.dtype == np.float64):
        return f"X has dtype {X.dtype} and shape {X.shape} (needs a 2-D float64 or int array)"
    y: NDArray[Any] = np.asarray(data.y)
    if y.ndim != 1 or y.dtype.kind not in "iuf":
        return f"y has dtype {y.dtype} and shape {y.shape} (needs 1-D numeric targets)"
    return ""


def decide_fast_cv(
    option: Any,
    estimator: Any,
    candidates: Sequence[Candidate],
    data: Dataset,
    inner_folds: Mapping[Any, Sequence[Fold]],
    *,
    scoring: Scoring,
    rows_of: Callable[[Any], Any],
    return_train_score: bool = False,
) -> FastCVDecision:
    """Decide whether every inner CV of a plan can run as fast CV.

    Parameters
    ----------
    option : {"auto", True, False}
    estimator : estimator object
    candidates : sequence of Candidate
    data : Dataset
    inner_folds : mapping of outer fold to folds
    scoring : Scoring
    rows_of : callable
        ``rows_of(outer)``: the rows the inner folds of ``outer`` split.
    return_train_score : bool, default=False

    Returns
    -------
    FastCVDecision

    Raises
    ------
    ValueError
        ``fast_cv=True`` where fast CV does not apply; the message says why.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from parcv.plan.data import check_dataset
    >>> from parcv.plan.partition import leave_one_out_folds
    >>> from parcv.plan.scoring import check_scoring_spec
    >>> from parcv.plan.space import check_space
    >>> data = check_dataset(np.arange(8.0).reshape(4, 2), np.arange(4.0))
    >>> decide_fast_cv("auto", Ridge(), check_space({"alpha": [1.0, 2.0]}), data,
    ...                {None: leave_one_out_folds(np.arange(4))},
    ...                scoring=check_scoring_spec(Ridge(), None, True),
    ...                rows_of=lambda o: np.arange(4))
    FastCVDecision(used=True, batches=((0, 1),), reason='')
    """
    option = check_fast_cv(option)
    if option is False:
        return FastCVDecision(False, (), "fast_cv=False")
    params = [c.params for c in candidates]
    problem = (
        _folds_problem(option, inner_folds, rows_of)
        or _data_problem(data, return_train_score)
        or smoother_problem(estimator, params)
    )
    for name, scorer in scoring.scorers.items():
        problem = problem or scorer_problem(name, scorer, estimator, strict=option == "auto")
    if problem and option is True:
        raise ValueError(
            f"fast_cv=True but fast CV does not apply: {problem}. Use fast_cv='auto' to refit "
            "per fold where it does not apply, or change the setting named above."
        )
    if problem:
        return FastCVDecision(False, (), problem)
    return FastCVDecision(True, batch_candidates(estimator, params), "")
