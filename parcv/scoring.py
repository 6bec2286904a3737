"""Scorers: scikit-learn names and callables, several at once."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.metrics import check_scoring, get_scorer, get_scorer_names

__all__ = ["Scoring", "check_scoring_spec"]


@dataclass(frozen=True, slots=True)
class Scoring:
    """Named scorers, and which one selects candidates.

    Parameters
    ----------
    scorers : dict of str to callable
        ``scorer(estimator, X, y) -> float``, greater is better.
    refit : str
        Name of the scorer used for selection.
    multimetric : bool
        Whether the user asked for several metrics (changes result key names
        the way scikit-learn does: ``test_score`` vs ``test_<name>``).
    """

    scorers: dict[str, Callable[..., float]]
    refit: str
    multimetric: bool

    def suffix(self, name: str) -> str:
        """Return scikit-learn's key suffix for metric ``name``."""
        return name if self.multimetric else "score"


def _named_scorer(name: str) -> Callable[..., float]:
    if not isinstance(name, str):
        raise TypeError(f"scoring names must be str; got {name!r}.")
    try:
        return get_scorer(name)  # type: ignore[no-any-return]
    except ValueError as err:
        close = difflib.get_close_matches(name, get_scorer_names(), n=4, cutoff=0.5)
        hint = f" Did you mean {close}?" if close else ""
        raise ValueError(
            f"scoring={name!r} is not a known scorer name.{hint} "
            "See sklearn.metrics.get_scorer_names() for all names, or pass a callable."
        ) from err


def check_scoring_spec(
    estimator: Any, scoring: Any, refit: bool | str, *, selects: bool = True
) -> Scoring:
    """Normalise ``scoring`` and the ``refit`` metric into a :class:`Scoring`.

    Parameters
    ----------
    estimator : estimator object
        Used for its default ``score`` method when ``scoring=None``.
    scoring : None, str, callable, list of str or dict of str to str/callable
        As in scikit-learn.
    refit : bool or str
        With several metrics, the metric name that selects candidates.
    selects : bool, default=True
        Whether a metric must select candidates; if not (one candidate,
        no refit), the first metric stands in.

    Returns
    -------
    Scoring

    Raises
    ------
    ValueError
        For an unknown scorer name (close matches listed) or an ambiguous
        ``refit`` with several metrics.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> check_scoring_spec(Ridge(), ["r2", "neg_mean_squared_error"], "r2").refit
    'r2'
    """
    _check_refit(refit, scoring)
    if scoring is None or isinstance(scoring, str) or callable(scoring):
        if isinstance(scoring, str):
            scorer = _named_scorer(scoring)
        else:
            scorer = check_scoring(estimator, scoring=scoring)
        return Scoring({"score": scorer}, "score", multimetric=False)
    scorers = _multimetric(scoring)
    if isinstance(refit, str) and refit in scorers:
        return Scoring(scorers, refit, multimetric=True)
    if (refit is False and len(scorers) == 1) or not selects:
        return Scoring(scorers, next(iter(scorers)), multimetric=True)
    raise ValueError(
        f"With several metrics {sorted(scorers)}, refit must name the one that selects "
        f"candidates; got refit={refit!r}. Pass e.g. refit={next(iter(scorers))!r}."
    )


def _check_refit(refit: Any, scoring: Any) -> None:
    """A bool, or a metric name: one of several (checked with them), or the one str scoring."""
    one = scoring is None or isinstance(scoring, str) or callable(scoring)
    if isinstance(refit, (bool, np.bool_)) or (
        isinstance(refit, str) and (not one or refit == scoring)
    ):
        return
    raise (ValueError if isinstance(refit, str) else TypeError)(
        f"refit must be True, False or the name of the metric that selects; got refit={refit!r} "
        f"with scoring={scoring!r}. A name selects among several metrics, e.g. scoring=['r2', "
        "'neg_mean_squared_error'], refit='r2'; pass selection= to change how one is picked."
    )


def _multimetric(scoring: Any) -> dict[str, Callable[..., float]]:
    if isinstance(scoring, Mapping):
        items = list(scoring.items())
    elif isinstance(scoring, Sequence) and not isinstance(scoring, str):
        items = [(name, name) for name in scoring]
    else:
        raise TypeError(
            f"scoring must be None, a str, a callable, a list of str or a dict; got {scoring!r}."
        )
    if not items:
        raise ValueError("scoring is empty; name at least one metric or pass None.")
    scorers: dict[str, Callable[..., float]] = {}
    for name, spec in items:
        if not isinstance(name, str):
            raise TypeError(f"scoring keys must be str; got {name!r}.")
        scorers[name] = spec if callable(spec) else _named_scorer(spec)
    if len(scorers) != len(items):
        raise ValueError(f"scoring names metrics more than once: {scoring!r}.")
    return scorers
