"""Several objectives: the Pareto front of a search's trials, and the choice of one of them.

A search with several objectives (``parcv.Sampler(..., objectives={...})``)
scores each trial on every objective, its CV mean over the folds: a metric's
``mean_test_<name>`` or the mean fit (or score) time. A trial is on the
*Pareto front* when no other complete trial is at least as good on every
objective and better on one: the front is every trade-off the search found,
as Optuna's ``study.best_trials``. :class:`ParetoFront` holds it with each
objective's mean and standard error over the folds (``std / sqrt(k - 1)``, as
the report's error bars), and the search ships one trial of it: the one a
``select`` callable names, or by default the one :func:`best_on` the refit
metric (see :func:`pareto_front` for why).

Every function here is pure: it reads the numbers a search scored (its
finished rounds, or a result's ``cv_results_``), never an engine or a store.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DIRECTIONS",
    "TIMES",
    "ParetoFront",
    "best_on",
    "check_objectives",
    "nondominated",
    "outer_objectives",
    "pareto_front",
    "select_from",
]

#: The directions an objective takes, as Optuna's ``directions``.
DIRECTIONS = ("maximize", "minimize")

#: Objectives that are not metrics: a trial's mean fit and score time over its folds (seconds).
TIMES = ("fit_time", "score_time")


def check_objectives(objectives: Any) -> dict[str, str]:
    """Check a search's objectives: two or more names, each with its direction.

    Parameters
    ----------
    objectives : dict of str to {"maximize", "minimize"}
        A metric's name as ``cv_results_`` keys it (``"score"`` for one metric,
        the scoring's names for several) or ``"fit_time"`` / ``"score_time"``,
        and whether more of it is better.

    Returns
    -------
    dict of str to str
        The objectives, in the order given.

    Raises
    ------
    TypeError, ValueError
        Not a dict of names to directions, or fewer than two objectives.

    Examples
    --------
    >>> check_objectives({"accuracy": "maximize", "fit_time": "minimize"})
    {'accuracy': 'maximize', 'fit_time': 'minimize'}
    """
    example = "{'accuracy': 'maximize', 'fit_time': 'minimize'}"
    if not isinstance(objectives, Mapping):
        raise TypeError(
            f"objectives must be a dict of a metric's name to 'maximize' or 'minimize'; got "
            f"{objectives!r}. Pass e.g. objectives={example}."
        )
    checked: dict[str, str] = {}
    for name, direction in objectives.items():
        if not isinstance(name, str):
            raise TypeError(f"objectives' keys must be metric names (str); got {name!r}.")
        if direction not in DIRECTIONS:
            raise ValueError(
                f"objectives[{name!r}] must be 'maximize' or 'minimize'; got {direction!r}. "
                f"Scores are greater-is-better: pass e.g. objectives={example}."
            )
        checked[name] = str(direction)
    if len(checked) < 2:
        raise ValueError(
            f"objectives must name two or more objectives; got {objectives!r}. One objective "
            "is the refit metric a plain Sampler maximizes: drop objectives=, or add one, "
            f"e.g. objectives={example}."
        )
    return checked


def nondominated(values: Any, directions: Sequence[str]) -> NDArray[np.bool_]:
    """Which rows no other row dominates: the Pareto front, as Optuna's ``best_trials``.

    Row ``a`` dominates row ``b`` when it is at least as good on every objective
    and better on one; equal rows dominate neither (both are on the front). A row
    with a NaN (a failed trial) is never on the front and dominates nothing.

    Parameters
    ----------
    values : array-like of shape (n_rows, n_objectives)
    directions : sequence of {"maximize", "minimize"}
        One per objective.

    Returns
    -------
    ndarray of bool of shape (n_rows,)

    Examples
    --------
    >>> nondominated([[0.9, 2.0], [0.8, 1.0], [0.7, 3.0], [0.9, 2.0]],
    ...              ["maximize", "minimize"]).tolist()
    [True, True, False, True]
    """
    signs = np.array([-1.0 if d == "maximize" else 1.0 for d in directions])
    cost = np.asarray(values, dtype=np.float64).reshape(-1, len(signs)) * signs
    ok: NDArray[np.bool_] = ~np.isnan(cost).any(axis=1)
    front = ok.copy()
    for i in np.flatnonzero(ok):
        others = cost[ok]
        beaten = (others <= cost[i]).all(axis=1) & (others < cost[i]).any(axis=1)
        front[i] = not beaten.any()
    return front


@dataclass(frozen=True)
class ParetoFront:
    """The trials of a search that no other beats on every objective.

    Parameters
    ----------
    objectives : tuple of str
        The objectives' names (``"fit_time"`` for the mean fit time).
    directions : tuple of str
        ``"maximize"`` or ``"minimize"``, one per objective.
    trials : tuple of int
        The front's trial numbers, in trial order.
    params : tuple of dict
        Each front trial's parameters.
    means : ndarray of shape (n_front, n_objectives)
        Each objective's mean over the folds (``cv_results_``'s ``mean_*``).
    ses : ndarray of shape (n_front, n_objectives)
        Its standard error over the folds, ``std / sqrt(k - 1)`` (``std`` as
        ``cv_results_``'s, with ``ddof=0``; the sample standard deviation over
        ``sqrt(k)``); NaN with one fold.
    rows : tuple of int, default=()
        Each front trial's row of ``cv_results_`` (read from a result).
    selected : int or None, default=None
        The place in the front of the trial the search selected (None: not known).

    Examples
    --------
    >>> front = ParetoFront(("r2", "fit_time"), ("maximize", "minimize"), (0, 3),
    ...                     ({"alpha": 1.0}, {"alpha": 9.0}),
    ...                     np.array([[0.9, 0.2], [0.8, 0.1]]), np.full((2, 2), 0.01))
    >>> front.mean("fit_time").tolist(), best_on(front, "r2")
    ([0.2, 0.1], 0)
    """

    objectives: tuple[str, ...]
    directions: tuple[str, ...]
    trials: tuple[int, ...]
    params: tuple[dict[str, Any], ...]
    means: NDArray[np.float64]
    ses: NDArray[np.float64]
    rows: tuple[int, ...] = ()
    selected: int | None = None

    def __len__(self) -> int:
        return len(self.trials)

    def mean(self, objective: str) -> NDArray[np.float64]:
        """Each front trial's mean of ``objective``."""
        return self.means[:, self._column(objective)]

    def se(self, objective: str) -> NDArray[np.float64]:
        """Each front trial's standard error of ``objective``."""
        return self.ses[:, self._column(objective)]

    def _column(self, objective: str) -> int:
        if objective not in self.objectives:
            raise ValueError(
                f"objective must be one of the front's {list(self.objectives)}; got "
                f"{objective!r}. Name an objective of the search."
            )
        return self.objectives.index(objective)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the objectives, and each front trial's parameters, means and errors."""
        return {
            "objectives": dict(zip(self.objectives, self.directions, strict=True)),
            "selected": None if self.selected is None else int(self.selected),
            "trials": [
                {"trial": int(n), "params": {k: _plain(v) for k, v in p.items()},
                 "mean": {o: _finite(self.means[i, j]) for j, o in enumerate(self.objectives)},
                 "se": {o: _finite(self.ses[i, j]) for j, o in enumerate(self.objectives)}}
                for i, (n, p) in enumerate(zip(self.trials, self.params, strict=True))
            ],
        }  # fmt: skip


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return value.item() if isinstance(value, np.generic) else repr(value)


def best_on(front: ParetoFront, objective: str) -> int:
    """The front trial best on one objective, the first in trial order on ties.

    The default rule of a search with several objectives, on its refit metric
    (see :func:`pareto_front`).
    """
    values = front.mean(objective)
    if front.directions[front.objectives.index(objective)] == "minimize":
        return int(np.argmin(values))
    return int(np.argmax(values))


def select_from(
    front: ParetoFront, select: Callable[[ParetoFront], Any] | None, metric: str
) -> int:
    """The place in the front of the trial to ship: ``select``'s, or best on ``metric``.

    Raises
    ------
    TypeError, ValueError
        ``select`` did not return a place in the front (an int in ``[0, len(front))``).
    """
    if select is None:
        return best_on(front, metric)
    chosen = select(front)
    if isinstance(chosen, (bool, np.bool_)) or not isinstance(chosen, (int, np.integer)):
        raise TypeError(
            f"select must return the place in the front of the trial to ship, an int in "
            f"[0, {len(front)}); {_name(select)} returned {chosen!r}. Return e.g. "
            "int(np.argmax(front.mean('accuracy')))."
        )
    if not 0 <= chosen < len(front):
        raise ValueError(
            f"select must return the place in the front of the trial to ship, an int in "
            f"[0, {len(front)}); {_name(select)} returned {chosen!r} for a front of "
            f"{len(front)} trials (trials {list(front.trials)})."
        )
    return int(chosen)


def _name(select: Any) -> str:
    return str(getattr(select, "__qualname__", type(select).__name__))


def _search_of(result: Any) -> Any:
    """A nested result's search on all data, a search's result itself."""
    return getattr(result, "final", None) if hasattr(result, "outer_scores") else result


def pareto_front(result: Any) -> ParetoFront:
    """The Pareto front of a search with several objectives, from its result.

    The front is every trial no other complete trial beats on every objective
    (Optuna's ``study.best_trials``); ``selected`` is the trial the search
    shipped. Unless the sampler's ``select`` names another, that is the front
    trial best on the refit metric (the first asked on ties). That rule needs
    no exchange rate between objectives of different units (a score and
    seconds), and it ships the trial a search of the refit metric alone would
    ship from these trials, unless another trial equals its score and beats it
    on another objective: adding objectives shows the trade-offs, and changes
    the choice only by a ``select`` the user writes (see :class:`parcv.Sampler`).

    Parameters
    ----------
    result : SearchResult or NestedResult
        Of ``parcv.search`` (or ``nested_cv``: its search on all data) with
        ``strategy=parcv.Sampler(..., objectives=...)``; also loaded from a store.

    Returns
    -------
    ParetoFront
        With ``rows`` (the trials' rows of ``cv_results_``) and ``selected``.

    Raises
    ------
    ValueError
        The result is of no search with several objectives.
    """
    search = _search_of(result)
    config = getattr(search, "strategy", None) or {}
    objectives = config.get("objectives")
    if search is None or not objectives:
        raise ValueError(
            "pareto_front needs the result of a search with several objectives, "
            "strategy=parcv.Sampler(..., objectives={...}); got one of "
            f"{config.get('name', 'a grid or a nested CV without refit')!r} without objectives."
        )
    cv = search.cv_results_
    names, directions = tuple(objectives), tuple(objectives.values())
    means = np.column_stack([_column(cv, "mean", n) for n in names])
    stds = np.column_stack([_column(cv, "std", n) for n in names])
    k = int(search.n_splits_)
    ses = stds / math.sqrt(k - 1) if k > 1 else np.full_like(stds, math.nan)
    rows = np.flatnonzero(nondominated(means, directions))
    trials = cv.get("trial", np.arange(len(means)))
    best = int(search.best_index_)
    return ParetoFront(
        names, directions, tuple(int(trials[r]) for r in rows),
        tuple(dict(cv["params"][r]) for r in rows), means[rows], ses[rows],
        rows=tuple(int(r) for r in rows),
        selected=int(np.flatnonzero(rows == best)[0]) if best in rows else None,
    )  # fmt: skip


def _column(cv: Mapping[str, Any], stat: str, name: str) -> NDArray[np.float64]:
    key = f"{stat}_{name}" if name in TIMES else f"{stat}_test_{name}"
    return np.asarray(cv[key], dtype=np.float64)


def outer_objectives(result: Any) -> dict[str, NDArray[np.float64]]:
    """A nested CV's outer score of each objective: one value per outer fold.

    Each outer fold's search chose a trial of its own front; that trial was
    refitted on the fold's training rows and scored on its test rows. A
    metric's value is that outer test score (``outer_scores[name]``); a time's
    (``"fit_time"``, ``"score_time"``) is the refit's own time, on the larger
    training rows of the outer fold.

    Parameters
    ----------
    result : NestedResult
        Of ``parcv.nested_cv`` with ``strategy=parcv.Sampler(..., objectives=...)``.

    Returns
    -------
    dict of str to ndarray of shape (n_outer_splits,)
        By objective, in the sampler's order.

    Raises
    ------
    ValueError
        The result is no nested CV of a search with several objectives.
    """
    inner = tuple(getattr(result, "inner", ()))
    config = (getattr(inner[0], "strategy", None) or {}) if inner else {}
    objectives = config.get("objectives")
    if not hasattr(result, "outer_scores") or not objectives:
        raise ValueError(
            "outer_objectives needs the result of parcv.nested_cv with "
            "strategy=parcv.Sampler(..., objectives={...}); got "
            f"{type(result).__name__} without objectives."
        )
    out = {}
    for name in objectives:
        if name in TIMES:
            out[name] = np.array([float(o.scores[name][0]) for o in result.outer])
        else:
            out[name] = np.asarray(result.outer_scores[name], dtype=np.float64)
    return out
