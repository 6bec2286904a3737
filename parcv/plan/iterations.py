"""Iterations as a resource: an iterative estimator's path of scores, in one fit per fold.

A search over ``n_estimators`` of a gradient boosting model refits from scratch
for every value; yet the model at 100 stages is the model at 50 stages and 50
more. :class:`Iterations` makes the iteration count a path instead: one fit per
(fold, candidate) is scored at every checkpoint, and with ``patience`` a
candidate's path stops once its mean score over the folds stops improving, as
``xgb.cv(early_stopping_rounds=...)`` decides. Results look like a grid over
the iteration parameter: a candidate per (point of the space, checkpoint).

How a path is grown (``method``: staged predictions, a warm start, a booster read at
earlier rounds, ``partial_fit`` passes) and when it equals separate fits is told in
the Notes of :class:`Iterations`, which the API reference shows.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

from parcv.errors import did_you_mean
from parcv.plan.shortcuts import (
    Fallback,
    Shortcut,
    booster_library,
    decide,
    given_seed,
    grows_by_warm_start,
)
from parcv.plan.space import Candidate

__all__ = [
    "METHODS",
    "Iterations",
    "PathChoice",
    "booster_library",
    "choose_path",
    "check_iterations",
    "expand_paths",
    "path_method",
    "path_stopped",
    "warm_start_param",
    "stop_index",
]

METHODS = ("auto", "staged", "warm_start", "booster", "partial_fit", "separate")

# The order in which "auto" tries the shortcuts.
_SHORTCUT_METHODS = ("booster", "staged", "warm_start", "partial_fit")


def _counts_stages(model: Any, leaf: str) -> bool:
    """Whether ``leaf`` counts the stages ``staged_predict`` yields (HGB's is max_iter)."""
    boosted = (HistGradientBoostingClassifier, HistGradientBoostingRegressor)
    return leaf == "n_estimators" or (leaf == "max_iter" and isinstance(model, boosted))


@dataclass(frozen=True)
class Iterations:
    """The iteration parameter of a search as a path scored at checkpoints.

    Parameters
    ----------
    param : str
        The parameter that counts iterations, as ``set_params`` takes it:
        ``"n_estimators"``, ``"max_iter"``, ``"model__max_iter"``.
    up_to : int
        The last iteration count scored.
    every : int, default=1
        Score every ``every``-th iteration (and ``up_to``).
    patience : int or None, default=None
        Early stopping: stop a candidate's path once its mean test score over
        the folds (of the refit metric) has not improved by more than ``tol``
        for ``patience`` checkpoints, as ``xgb.cv(early_stopping_rounds=...)``;
        the checkpoints after the stop are never fitted and are NaN in
        ``cv_results_``. The decision reads only the checkpoints up to it, so
        every backend stops at the same one.
    tol : float, default=0.0
        The improvement that counts as one.
    method : {"auto", "staged", "warm_start", "booster", "partial_fit", "separate"}, \
default="auto"
        How the path is grown (see Notes); ``"auto"`` picks the
        first the estimator supports in the order booster, staged, warm start,
        partial_fit that is exact for its settings, else ``"separate"``. A
        shortcut named here is taken only where it is exact too (else
        ``"separate"``, said once in the log).
    window : tuple of int or None, default=None
        Set by parcv, not by a user: the checkpoints one round of early
        stopping scores (a part of :attr:`checkpoints` as ``up_to`` and
        ``every`` give them); None: all of them.

    See Also
    --------
    parcv.search : Takes it as ``iterations=``; the user guide's
        :ref:`user_guide_iterations` shows a search with early stopping.

    Notes
    -----
    How a path is grown (``method``):

    - ``"staged"``: fit once with the last checkpoint's count, then read each
      checkpoint from ``staged_predict`` / ``staged_decision_function`` /
      ``staged_predict_proba`` (GradientBoosting*, HistGradientBoosting*,
      AdaBoostRegressor). A model that stopped early (its own
      ``n_iter_no_change``) is read at its last stage for the counts after it,
      as a fit with that count would stop there too.
    - ``"warm_start"``: set ``warm_start=True`` and raise the count checkpoint by
      checkpoint (forests, Bagging, ExtraTrees).
    - ``"booster"``: ``XGBRegressor``, ``XGBClassifier``, ``LGBMRegressor`` or
      ``LGBMClassifier`` (not ``XGBRF*``, whose trees are one round), fitted once
      with the last count and read with ``iteration_range`` / ``num_iteration``.
    - ``"partial_fit"``: one ``partial_fit`` epoch over the fold's training rows
      per iteration (SGD*, Perceptron, MLP*), read as ``fit(max_iter=t)``.
    - ``"separate"``: a fit from scratch at every checkpoint, as a grid over the
      count would make (ordinary ``fit`` units; with early stopping, grown in
      step as the other paths).

    Each of the first four is a shortcut, taken only where
    :mod:`parcv.plan.shortcuts` declares it exact for the estimator's settings
    (its exact class, not a subclass; booster type, ``random_state`` kind, early
    stopping, shuffling, ...): then the scores at every checkpoint are those of
    separate fits with that count, bit for bit. Elsewhere the path is
    ``"separate"``, and parcv says so once in the log (logger ``"parcv"``). A
    candidate ``max_iter=t`` of a ``partial_fit`` path is ``fit(max_iter=t)`` as
    anywhere else: the epochs are its shortcut, not another model.

    Examples
    --------
    >>> Iterations("n_estimators", up_to=10, every=3).checkpoints
    (3, 6, 9, 10)
    """

    param: str
    up_to: int
    every: int = 1
    patience: int | None = None
    tol: float = 0.0
    method: str = "auto"
    window: tuple[int, ...] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.param, str) or not self.param:
            raise TypeError(
                f"Iterations.param must be the name of the iteration parameter, e.g. "
                f"'n_estimators'; got {self.param!r}."
            )
        for name, low in (("up_to", 1), ("every", 1)):
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
                raise ValueError(
                    f"Iterations.{name} must be an int >= {low}; got {value!r}. "
                    "Pass e.g. Iterations('n_estimators', up_to=500, every=10)."
                )
        if self.every > self.up_to:
            raise ValueError(
                f"Iterations.every ({self.every}) is larger than up_to ({self.up_to}): "
                "no checkpoint but the last. Pass every <= up_to."
            )
        patience = self.patience
        if patience is not None and (
            not isinstance(patience, numbers.Integral) or isinstance(patience, bool) or patience < 1
        ):
            raise ValueError(
                f"Iterations.patience must be None or an int >= 1 (checkpoints without "
                f"improvement before the path stops); got {patience!r}."
            )
        if not isinstance(self.tol, numbers.Real) or not math.isfinite(self.tol) or self.tol < 0:
            raise ValueError(f"Iterations.tol must be a finite number >= 0; got {self.tol!r}.")
        if self.method not in METHODS:
            raise ValueError(
                f"Iterations.method must be one of {list(METHODS)!r}; got {self.method!r}. "
                + did_you_mean(self.method, METHODS)
            )
        if self.window is not None:
            window = tuple(int(t) for t in self.window)
            if not window or not set(window) <= set(self.all_checkpoints):
                raise ValueError(
                    f"Iterations.window must be some of the checkpoints "
                    f"{self.all_checkpoints!r}; got {self.window!r}."
                )
            object.__setattr__(self, "window", tuple(sorted(window)))

    @property
    def all_checkpoints(self) -> tuple[int, ...]:
        """Every iteration count of the path, ascending: every ``every``-th and ``up_to``."""
        counts = list(range(self.every, self.up_to + 1, self.every))
        if counts[-1] != self.up_to:
            counts.append(self.up_to)
        return tuple(counts)

    @property
    def checkpoints(self) -> tuple[int, ...]:
        """The iteration counts scored, ascending: the ``window``'s, or every one."""
        return self.all_checkpoints if self.window is None else self.window


def check_iterations(iterations: Any) -> Iterations | None:
    """Accept None or an :class:`Iterations` (a dict of its fields, as a spec gives).

    Examples
    --------
    >>> check_iterations({"param": "max_iter", "up_to": 4}).checkpoints
    (1, 2, 3, 4)
    """
    if iterations is None or isinstance(iterations, Iterations):
        return iterations
    if isinstance(iterations, dict):
        try:
            return Iterations(**iterations)
        except TypeError as err:
            raise TypeError(f"iterations={iterations!r}: {err}. Fields: {_FIELDS}.") from None
    raise TypeError(
        f"iterations must be a parcv.Iterations or None; got {iterations!r}. Use e.g. "
        "iterations=parcv.Iterations('n_estimators', up_to=500, every=10, patience=5)."
    )


_FIELDS = "param, up_to, every, patience, tol, method"  # window is parcv's own


def _final_step(estimator: Any) -> Any:
    steps = getattr(estimator, "steps", None)
    return steps[-1][1] if isinstance(steps, list) and steps else estimator


@dataclass(frozen=True, slots=True)
class PathChoice:
    """How one point's path is grown, and why not by a shortcut when it is ``"separate"``.

    Parameters
    ----------
    method : str
        One of :data:`METHODS` but ``"auto"``.
    fallback : Fallback or None, default=None
        With ``"separate"`` chosen for want of an exact shortcut: the first
        shortcut the estimator supports, and why it is not exact.
    """

    method: str
    fallback: Fallback | None = None


def _able(model: Any, leaf: str) -> dict[str, bool]:
    """The shortcuts the configured ``model`` supports mechanically for ``leaf``."""
    final = _final_step(model)
    return {
        "booster": booster_library(final) is not None and leaf == "n_estimators",
        "staged": hasattr(final, "staged_predict") and _counts_stages(final, leaf),
        "warm_start": grows_by_warm_start(final, leaf),
        "partial_fit": hasattr(final, "partial_fit") and final is model,
        "separate": True,
    }


def choose_path(
    estimator: Any, iterations: Iterations, params: dict[str, Any], *, n_samples: int | None = None
) -> PathChoice:
    """Return how the path of ``estimator`` configured with ``params`` is grown, and why.

    The first shortcut the estimator supports (booster, staged, warm start,
    partial_fit; or the one ``iterations.method`` names) that
    :func:`parcv.plan.shortcuts.decide` finds exact; else ``"separate"``.

    Parameters
    ----------
    estimator : estimator object
    iterations : Iterations
    params : dict
        The point's parameters.
    n_samples : int, default=None
        An upper bound on a fit's training rows (see
        :func:`parcv.plan.shortcuts.exact_shortcut`).

    Returns
    -------
    PathChoice

    Raises
    ------
    ValueError
        If the estimator has no way to grow ``iterations.param`` that parcv
        knows, or not the one ``iterations.method`` names.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> import numpy as np
    >>> forest = RandomForestRegressor(random_state=np.random.RandomState(0))
    >>> choice = choose_path(forest, Iterations("n_estimators", 5), {})
    >>> choice.method, choice.fallback.kind
    ('separate', 'warm_start')
    """
    model = clone(estimator).set_params(**clone(params, safe=False))
    leaf = iterations.param.rsplit("__", 1)[-1]
    able = _able(model, leaf)
    final = _final_step(model)
    pipeline = " (in a Pipeline)" if final is not model else ""
    if iterations.method != "auto":
        if not able[iterations.method]:
            raise ValueError(
                f"Iterations(method={iterations.method!r}) cannot grow {iterations.param!r} of "
                f"{type(final).__name__}{pipeline}. Use method='auto' or one of "
                f"{[m for m, ok in able.items() if ok]!r}."
            )
        tried = [iterations.method] if iterations.method != "separate" else []
    else:
        tried = [m for m in _SHORTCUT_METHODS if able[m]]
        if not tried:
            raise ValueError(
                f"Iterations over {iterations.param!r}: {type(final).__name__} has no "
                "staged_predict, warm_start, booster iteration range or partial_fit that grows "
                "it (a Pipeline takes no partial_fit). Search the parameter as an ordinary grid "
                "instead."
            )
    first: Fallback | None = None
    for method in tried:
        decision = decide(method, model, iterations.param, up_to=iterations.up_to,
                          n_samples=n_samples, seed=given_seed(estimator, params))  # fmt: skip
        if isinstance(decision, Shortcut):
            return PathChoice(method)
        first = first or decision
    return PathChoice("separate", first)


def path_method(
    estimator: Any, iterations: Iterations, params: dict[str, Any], *, n_samples: int | None = None
) -> str:
    """Return how the path of ``estimator`` configured with ``params`` is grown.

    The method of :func:`choose_path`: a shortcut where it is exact, else
    ``"separate"`` (a fit from scratch at every checkpoint).

    Raises
    ------
    ValueError
        If the estimator has no way to grow ``iterations.param`` that parcv
        knows, or not the one ``iterations.method`` names.

    Examples
    --------
    >>> from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
    >>> from sklearn.linear_model import SGDClassifier
    >>> path_method(GradientBoostingRegressor(random_state=0), Iterations("n_estimators", 5), {})
    'staged'
    >>> path_method(RandomForestRegressor(random_state=0), Iterations("n_estimators", 5), {})
    'warm_start'
    >>> path_method(GradientBoostingRegressor(), Iterations("n_estimators", 5), {})
    'separate'
    >>> sgd = SGDClassifier(shuffle=False, tol=None, penalty=None)
    >>> path_method(sgd, Iterations("max_iter", 5), {})
    'partial_fit'
    >>> path_method(SGDClassifier(), Iterations("max_iter", 5), {})
    'separate'
    """
    return choose_path(estimator, iterations, params, n_samples=n_samples).method


def expand_paths(
    candidates: Sequence[Candidate], iterations: Iterations
) -> tuple[tuple[Candidate, ...], tuple[tuple[int, ...], ...]]:
    """The candidates of a search over a space and a path, and each path's candidates.

    Every point of the space becomes one candidate per checkpoint (the point's
    candidates next to each other, in checkpoint order); a path is the
    indices of one point's candidates.

    Raises
    ------
    ValueError
        If the space sets the iteration parameter itself.

    Examples
    --------
    >>> from parcv.plan.space import check_space
    >>> cands, paths = expand_paths(check_space({"a": [1, 2]}), Iterations("n", 4, every=2))
    >>> [c.params for c in cands], paths
    ([{'a': 1, 'n': 2}, {'a': 1, 'n': 4}, {'a': 2, 'n': 2}, {'a': 2, 'n': 4}], ((0, 1), (2, 3)))
    """
    name, checkpoints = iterations.param, iterations.checkpoints
    clash = [c.params for c in candidates if name in c.params]
    if clash:
        raise ValueError(
            f"the space sets {name!r} (e.g. {clash[0]!r}), which iterations= scores as a path "
            f"up to {iterations.up_to}. Drop {name!r} from the space."
        )
    expanded: list[Candidate] = []
    paths: list[tuple[int, ...]] = []
    for c in candidates:
        start = len(expanded)
        expanded += [Candidate(start + j, {**c.params, name: t}) for j, t in enumerate(checkpoints)]
        paths.append(tuple(range(start, len(expanded))))
    return tuple(expanded), tuple(paths)


def stop_index(means: Sequence[float], patience: int, tol: float = 0.0) -> int | None:
    """The checkpoint (0-based) at which a path stops, or None if it runs to the end.

    The best mean so far improves when a checkpoint's mean exceeds it by more
    than ``tol``; the path stops at the first checkpoint that is the
    ``patience``-th in a row without an improvement, as xgboost's
    ``EarlyStopping`` callback (NaN never improves). Only checkpoints up to
    the stop are read.

    Examples
    --------
    >>> stop_index([0.5, 0.6, 0.6, 0.59, 0.7], patience=2)
    3
    >>> stop_index([0.5, 0.6, 0.7], patience=2) is None
    True
    """
    best, waited = -np.inf, 0
    for j, mean in enumerate(means):
        if mean > best + tol and not math.isnan(mean):
            best, waited = mean, 0
            continue
        waited += 1
        if waited >= patience:
            return j
    return None


def path_stopped(
    iterations: Iterations, paths: Sequence[Sequence[int]], means: Sequence[float]
) -> np.ndarray:
    """Per candidate, whether its checkpoint came after its path stopped early.

    ``means`` are the candidates' mean test scores of the refit metric, as
    the early-stopping rule read them; without ``patience`` nothing stops.

    Examples
    --------
    >>> it = Iterations("n", 4, patience=1)
    >>> path_stopped(it, [(0, 1, 2, 3)], [0.5, 0.4, np.nan, np.nan]).tolist()
    [False, False, True, True]
    """
    stopped = np.zeros(len(means), dtype=bool)
    if iterations.patience is None:
        return stopped
    values = np.asarray(means, dtype=np.float64)
    for path in paths:
        at = stop_index(values[list(path)].tolist(), iterations.patience, iterations.tol)
        if at is not None:
            stopped[list(path[at + 1 :])] = True
    return stopped


def warm_start_param(estimator: Any, params: dict[str, Any], param: str) -> str | None:
    """The ``warm_start`` parameter that grows ``param`` of ``estimator``, or None.

    Only whether a warm start grows the model; whether the grown model is
    the one a fit from scratch makes is :func:`parcv.plan.shortcuts.continues_exactly`'s
    question (a halving rung continues fits only then).

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from sklearn.linear_model import SGDClassifier
    >>> warm_start_param(RandomForestRegressor(), {}, "n_estimators")
    'warm_start'
    >>> warm_start_param(SGDClassifier(), {}, "max_iter") is None
    True
    """
    model = clone(estimator).set_params(**clone(params, safe=False))
    if not grows_by_warm_start(model, param):
        return None
    head, sep, _ = param.rpartition("__")
    return f"{head}{sep}warm_start"
