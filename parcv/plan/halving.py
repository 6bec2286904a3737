"""Successive halving as data: the options, the schedule of rungs and the promotion rule.

A rung is one ordinary search: its candidates, its resource (rows per fold,
or an estimator parameter such as ``n_estimators``) and its explicit CV
splits. This module computes them exactly as scikit-learn's
``HalvingGridSearchCV``/``HalvingRandomSearchCV`` do; the rung loop (in
:mod:`parcv.api`) runs each rung on the engine and reads back only finished
rungs, so every backend promotes the same candidates.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import ceil, floor, log
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.utils import resample

from parcv.plan.splits import Fold

__all__ = [
    "Bracket",
    "Halving",
    "Hyperband",
    "HalvingSchedule",
    "check_constant_splits",
    "check_resource",
    "plan_schedule",
    "promote",
    "resolve_resources",
    "subsample_folds",
    "with_resource",
]

_MIN_NAMES = ("exhaust", "smallest")


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


@dataclass(frozen=True, slots=True)
class Halving:
    """Successive halving of the candidates of a search, as scikit-learn's Halving searches.

    Every candidate is first scored by CV with a small resource; the best
    ``1 / factor`` of them go on to the next rung with ``factor`` times the
    resource, until few candidates are left or the resource is spent. The
    winner is the best candidate of the last rung, refitted on all data.

    Parameters
    ----------
    resource : str, default="n_samples"
        ``"n_samples"``: each rung fits on a random subsample of every CV
        fold's train rows (and scores on a subsample of its test rows) of
        ``n_resources`` rows in all, as scikit-learn does. Otherwise the name
        of an estimator parameter that grows with the rung (``n_estimators``,
        ``max_iter``), set to ``n_resources`` in every candidate of the rung.
        Where a warm start grows the model a fit from scratch would make
        (forests, gradient boosting, HistGradientBoosting, bagging), a
        promoted candidate's fits continue from the rung before (``factor x
        r`` costs ``(factor - 1) x r`` more iterations, not ``factor x r``),
        with the same scores; other estimators are fitted again, as
        scikit-learn does (a ``partial_fit`` or booster continuation would
        not be the model ``fit`` makes).
    factor : float, default=3
        Greater than 1: each rung keeps ``ceil(n_candidates / factor)``
        candidates and multiplies the resource by ``factor``.
    min_resources : int, "exhaust" or "smallest", default="exhaust"
        The resource of the first rung. ``"smallest"``: ``2 * n_splits``
        rows (times the number of classes for a classifier), or 1 for a
        parameter; ``"exhaust"``: the largest first resource with which the
        last rung still uses at most ``max_resources``.
    max_resources : int or "auto", default="auto"
        The most a candidate may get; ``"auto"`` is the number of rows (only
        with ``resource="n_samples"``).
    aggressive_elimination : bool, default=False
        Repeat the first resource until few enough candidates are left for
        the last rung to get ``max_resources``.
    random_state : int, numpy.random.RandomState or None, default=None
        Seed of the subsamples (``resource="n_samples"``): an int subsamples
        every fold with that seed, as scikit-learn does, so a resumed run
        draws the same rows and reuses every finished rung; a RandomState is
        drawn from rung after rung, as scikit-learn's; ``None`` draws each
        rung's rows from the run's seed (``random_state`` of
        :func:`parcv.search`, ``--seed`` in a spec), so a rerun or a resume
        with that seed draws the same rows too.

    Raises
    ------
    TypeError, ValueError
        A value of the wrong type or out of range, with the fix.

    See Also
    --------
    parcv.search : ``search(..., halving=Halving(...))`` runs it.
    parcv.HalvingGridSearchCV : The drop-in estimator.

    Notes
    -----
    Each rung is an ordinary search whose units are stored under their
    content keys: with ``store=``, a run stopped in rung ``k`` and started
    again with ``resume=True`` (and the same ``random_state``) reads rungs
    ``0 .. k-1`` back, takes the same decisions, and fits only what is
    missing. ``parcv.load(store)`` rebuilds the last rung alone.

    Examples
    --------
    >>> Halving(factor=2).factor
    2
    >>> Halving(factor=1)
    Traceback (most recent call last):
    ...
    ValueError: factor must be a number > 1; got 1. Pass e.g. factor=3 to keep a third of the \
candidates at each rung.
    """

    resource: str = "n_samples"
    factor: float = 3
    min_resources: int | str = "exhaust"
    max_resources: int | str = "auto"
    aggressive_elimination: bool = False
    random_state: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.resource, str) or not self.resource:
            raise TypeError(
                f"resource must be 'n_samples' or the name of an estimator parameter; got "
                f"{self.resource!r}. Pass e.g. resource='n_estimators'."
            )
        factor = self.factor
        if not isinstance(factor, numbers.Real) or isinstance(factor, (bool, np.bool_)):
            raise TypeError(f"factor must be a number > 1; got {factor!r}. Pass e.g. factor=3.")
        if not factor > 1:
            raise ValueError(
                f"factor must be a number > 1; got {factor!r}. Pass e.g. factor=3 to keep a "
                "third of the candidates at each rung."
            )
        _check_amount("min_resources", self.min_resources, _MIN_NAMES)
        _check_amount("max_resources", self.max_resources, ("auto",))
        if not isinstance(self.aggressive_elimination, (bool, np.bool_)):
            raise TypeError(
                f"aggressive_elimination must be True or False; got "
                f"{self.aggressive_elimination!r}. Pass e.g. aggressive_elimination=True."
            )
        seed = self.random_state
        if not (seed is None or _is_int(seed) or isinstance(seed, np.random.RandomState)):
            raise TypeError(
                f"random_state must be an int, a numpy RandomState or None; got {seed!r}. "
                "Pass e.g. random_state=0 for subsamples a resumed run draws again."
            )


def _check_amount(name: str, value: Any, words: tuple[str, ...]) -> None:
    choices = "".join(f" or {w!r}" for w in words)
    if isinstance(value, str):
        if value not in words:
            raise ValueError(f"{name} must be an int >= 1{choices}; got {value!r}.")
        return
    if not _is_int(value):
        raise TypeError(f"{name} must be an int >= 1{choices}; got {value!r}. Pass e.g. {name}=10.")
    if value < 1:
        raise ValueError(
            f"{name} must be an int >= 1{choices}; got {value!r}. Pass e.g. {name}=10."
        )


def resolve_resources(
    halving: Halving, *, n_samples: int, n_splits: int, n_classes: int | None
) -> tuple[int, int]:
    """The first and the largest resource before the candidates are known, as scikit-learn's.

    Parameters
    ----------
    halving : Halving
    n_samples : int
        Rows of ``X``.
    n_splits : int
        Folds of the CV.
    n_classes : int or None
        Classes of ``y`` for a classifier, else None.

    Returns
    -------
    (min_resources, max_resources) : tuple of int
        ``min_resources`` is raised later for ``"exhaust"`` (see :func:`plan_schedule`).

    Raises
    ------
    ValueError
        ``max_resources="auto"`` with a parameter resource, or the first
        resource above the largest (scikit-learn's messages).

    Examples
    --------
    >>> resolve_resources(Halving(), n_samples=100, n_splits=5, n_classes=2)
    (20, 100)
    """
    minimum = halving.min_resources
    if isinstance(minimum, str):
        minimum = 1
        if halving.resource == "n_samples":
            minimum = n_splits * 2 * (n_classes or 1)
    maximum = halving.max_resources
    if isinstance(maximum, str):
        if halving.resource != "n_samples":
            raise ValueError(
                "resource can only be 'n_samples' when max_resources='auto': give the largest "
                f"value of {halving.resource!r}, e.g. max_resources=100."
            )
        maximum = n_samples
    if minimum > maximum:
        raise ValueError(
            f"min_resources_={minimum} is greater than max_resources_={maximum}. Lower "
            "min_resources or raise max_resources."
        )
    if minimum == 0:
        raise ValueError(
            f"min_resources_={minimum}: you might have passed an empty dataset X. Pass at "
            "least one row."
        )
    return int(minimum), int(maximum)


@dataclass(frozen=True, slots=True)
class HalvingSchedule:
    """The rungs of a halving search: resource and number of candidates of each.

    Parameters
    ----------
    n_resources : tuple of int
        Resource of each rung.
    n_candidates : tuple of int
        Candidates scored in each rung.
    min_resources, max_resources : int
        scikit-learn's ``min_resources_`` and ``max_resources_``.
    n_required_iterations, n_possible_iterations : int
        Rungs needed for the last to hold fewer than ``factor`` candidates,
        and rungs the resources allow.
    n_remaining_candidates : int
        Candidates the last rung would promote.
    """

    n_resources: tuple[int, ...]
    n_candidates: tuple[int, ...]
    min_resources: int
    max_resources: int
    n_required_iterations: int
    n_possible_iterations: int
    n_remaining_candidates: int

    @property
    def n_iterations(self) -> int:
        """Number of rungs run."""
        return len(self.n_resources)


def plan_schedule(
    halving: Halving, n_candidates: int, min_resources: int, max_resources: int
) -> HalvingSchedule:
    """Compute the rungs as scikit-learn's ``BaseSuccessiveHalving._run_search`` does.

    Parameters
    ----------
    halving : Halving
    n_candidates : int
        Candidates of the first rung.
    min_resources, max_resources : int
        From :func:`resolve_resources`.

    Returns
    -------
    HalvingSchedule

    Examples
    --------
    >>> s = plan_schedule(Halving(), 30, 20, 1000)
    >>> s.n_resources, s.n_candidates
    ((37, 111, 333, 999), (30, 10, 4, 2))
    """
    factor = halving.factor
    n_required = 1 + floor(log(n_candidates, factor))
    first: float = min_resources
    if halving.min_resources == "exhaust":
        first = max(min_resources, max_resources // factor ** (n_required - 1))
    n_possible = 1 + floor(log(max_resources // first, factor))
    n_iterations = n_required if halving.aggressive_elimination else min(n_possible, n_required)
    resources, candidates = [], []
    n = n_candidates
    for itr in range(n_iterations):
        power = itr
        if halving.aggressive_elimination:
            power = max(0, itr - n_required + n_possible)
        resources.append(min(int(factor**power * first), max_resources))
        candidates.append(n)
        n = min(n, ceil(n / factor))
    return HalvingSchedule(
        n_resources=tuple(resources),
        n_candidates=tuple(candidates),
        min_resources=int(first),
        max_resources=int(max_resources),
        n_required_iterations=n_required,
        n_possible_iterations=n_possible,
        n_remaining_candidates=n,
    )


def promote(means: NDArray[np.float64], n_keep: int) -> NDArray[np.intp]:
    """The rung's candidates that go on, best last, with scikit-learn's order and ties.

    NaN means rank below every number; among the rest, ``numpy.argsort``
    orders them, as scikit-learn's ``_top_k``, so the next rung lists the
    same candidates in the same order.

    Parameters
    ----------
    means : ndarray of shape (n_candidates,)
        Mean test score of each candidate of the rung.
    n_keep : int
        How many go on.

    Returns
    -------
    ndarray of int
        Indices into ``means``, in the order of the next rung.

    Examples
    --------
    >>> promote(np.array([0.5, np.nan, 0.9, 0.7]), 2).tolist()
    [3, 2]
    """
    means = np.asarray(means, dtype=np.float64)
    order = np.roll(np.argsort(means), np.count_nonzero(np.isnan(means)))
    return np.asarray(order[-n_keep:], dtype=np.intp)


def check_constant_splits(cv: Any) -> None:
    """Refuse a splitter whose ``split`` changes between calls (shuffled, unseeded).

    Raises
    ------
    ValueError
        scikit-learn's message, with the fix.
    """
    shuffle = getattr(cv, "shuffle", True)
    seed = getattr(cv, "random_state", 0)
    if not (isinstance(seed, numbers.Integral) or not shuffle):
        raise ValueError(
            "The cv parameter must yield consistent folds across calls to split(). Set its "
            f"random_state to an int, or set shuffle=False; got cv={cv!r}."
        )


def check_resource(
    halving: Halving, estimator: Any, candidates: Sequence[Mapping[str, Any]]
) -> None:
    """Refuse a resource the estimator does not take, or one the space also varies.

    Raises
    ------
    ValueError
        scikit-learn's messages, with the fix.
    """
    if halving.resource == "n_samples":
        return
    if halving.resource not in estimator.get_params():
        raise ValueError(
            f"Cannot use resource={halving.resource} which is not supported by estimator "
            f"{type(estimator).__name__}: pass resource='n_samples' or one of its parameters."
        )
    if any(halving.resource in c for c in candidates):
        raise ValueError(
            f"Cannot use parameter {halving.resource} as the resource since it is part of the "
            "searched parameters. Remove it from the space."
        )


def subsample_folds(
    folds: Sequence[Fold], n_resources: int, n_samples: int, random_state: Any
) -> list[tuple[NDArray[np.intp], NDArray[np.intp]]]:
    """The folds of one rung with ``resource="n_samples"``: subsamples of each fold's rows.

    Each fold keeps ``int(n_resources / n_samples * len(rows))`` of its train
    rows and of its test rows, drawn without replacement with
    ``random_state`` as scikit-learn's Halving searches draw them (an int
    seeds every draw alike; a RandomState is consumed fold after fold).

    Parameters
    ----------
    folds : sequence of Fold
        The CV folds on all rows.
    n_resources : int
        Rows of the rung.
    n_samples : int
        Rows of the data.
    random_state : int, RandomState or None

    Returns
    -------
    list of (train, test)
        Explicit splits, as a search's ``cv`` takes them.

    Examples
    --------
    >>> folds = [Fold(np.arange(5, 10), np.arange(5)), Fold(np.arange(5), np.arange(5, 10))]
    >>> [(len(tr), len(te)) for tr, te in subsample_folds(folds, 6, 10, 0)]
    [(3, 3), (3, 3)]
    """
    fraction = n_resources / n_samples
    splits = []
    for fold in folds:
        parts = []
        for rows in (fold.train, fold.test):
            drawn = resample(rows, replace=False, random_state=random_state,
                             n_samples=int(fraction * len(rows)))  # fmt: skip
            parts.append(np.asarray(drawn, dtype=np.intp))
        splits.append((parts[0], parts[1]))
    return splits


def with_resource(
    candidates: Sequence[Mapping[str, Any]], halving: Halving, n_resources: int
) -> list[dict[str, Any]]:
    """The rung's candidates: with the resource parameter set, unless it is ``n_samples``.

    Examples
    --------
    >>> with_resource([{"a": 1}], Halving(resource="n_estimators", max_resources=9), 3)
    [{'a': 1, 'n_estimators': 3}]
    """
    if halving.resource == "n_samples":
        return [dict(c) for c in candidates]
    return [{**c, halving.resource: n_resources} for c in candidates]


@dataclass(frozen=True, slots=True)
class Bracket:
    """One bracket of Hyperband: a halving search of ``n_candidates`` from ``min_resources``.

    Parameters
    ----------
    index : int
        dask-ml's bracket id ``s``: how many times its candidates are halved.
    n_candidates : int
    min_resources : int
    """

    index: int
    n_candidates: int
    min_resources: int


@dataclass(frozen=True, slots=True)
class Hyperband:
    """Hyperband: several successive-halving brackets over an iteration parameter.

    Bracket ``s`` (from ``s_max = floor(log(max_resources, factor))`` down
    to 0) draws ``ceil((s_max + 1) * factor**s / (s + 1))`` candidates and
    halves them from ``int(max_resources * factor**-s)`` up to
    ``max_resources``, as dask-ml's ``HyperbandSearchCV`` sizes its brackets
    (Li et al., "Hyperband", JMLR 2018). Each bracket is one halving search
    (scored by CV), so the many-candidates-few-iterations brackets and the
    few-candidates-many-iterations ones hedge each other; the winner is the
    best last-rung candidate over all brackets.

    Parameters
    ----------
    resource : str
        The estimator parameter that counts iterations (``max_iter``,
        ``n_estimators``), set to the rung's resource in every candidate.
    max_resources : int
        The most iterations a candidate gets (dask-ml's ``max_iter``).
    factor : float, default=3
        dask-ml's ``aggressiveness``: greater than 1.

    Raises
    ------
    TypeError, ValueError
        A value of the wrong type or out of range, with the fix.

    See Also
    --------
    Halving : One bracket, with scikit-learn's schedule.

    Examples
    --------
    >>> [(b.index, b.n_candidates, b.min_resources) for b in Hyperband("max_iter", 9).brackets()]
    [(2, 9, 1), (1, 5, 3), (0, 3, 9)]
    """

    resource: str
    max_resources: int
    factor: float = 3

    def __post_init__(self) -> None:
        if not isinstance(self.resource, str) or self.resource in ("", "n_samples"):
            error = ValueError if isinstance(self.resource, str) else TypeError
            raise error(
                f"resource must name the estimator parameter that counts iterations; got "
                f"{self.resource!r}. Pass e.g. resource='max_iter' (for rows, use Halving)."
            )
        _check_amount("max_resources", self.max_resources, ())
        Halving(resource=self.resource, factor=self.factor, max_resources=self.max_resources)

    def brackets(self) -> tuple[Bracket, ...]:
        """The brackets, in dask-ml's order (most candidates first)."""
        s_max = floor(log(self.max_resources, self.factor))
        return tuple(
            Bracket(
                index=s,
                n_candidates=ceil((s_max + 1) * self.factor**s / (s + 1)),
                min_resources=int(self.max_resources * self.factor**-s),
            )
            for s in reversed(range(s_max + 1))
        )

    def halving(self, bracket: Bracket) -> Halving:
        """The halving search of one bracket."""
        return Halving(
            resource=self.resource,
            factor=self.factor,
            min_resources=bracket.min_resources,
            max_resources=self.max_resources,
        )
