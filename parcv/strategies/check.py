"""Which strategy a call runs: ``strategy=``, or the ``halving=`` and ``iterations=`` it implies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from parcv.plan.halving import Halving, Hyperband
from parcv.plan.iterations import Iterations
from parcv.strategies.early_stopping import EarlyStopping
from parcv.strategies.halving import HalvingStrategy, HyperbandStrategy
from parcv.strategies.strategy import Strategy

__all__ = ["check_strategy", "check_strategy_metric"]


def check_strategy(
    strategy: Any, *, halving: Any = None, iterations: Any = None
) -> Strategy | None:
    """The strategy of a search that runs in rounds, or None for one round (grid, random).

    ``strategy`` may be a :class:`~parcv.strategies.strategy.Strategy` (a
    ``parcv.Sampler``, your own) or a :class:`~parcv.plan.halving.Halving` /
    :class:`~parcv.plan.halving.Hyperband`; ``halving=`` is the older spelling of
    the latter, and ``iterations=Iterations(patience=...)`` is early stopping.

    Raises
    ------
    TypeError
        ``strategy`` is not a strategy.
    ValueError
        Two strategies at once.

    Examples
    --------
    >>> check_strategy(None) is None
    True
    >>> check_strategy(Halving()).name
    'halving'
    >>> check_strategy(None, iterations=Iterations("n_estimators", 9, patience=2)).name
    'early_stopping'
    """
    given = [(n, v) for n, v in (("strategy", strategy), ("halving", halving)) if v is not None]
    if isinstance(iterations, Iterations) and iterations.patience is not None:
        given.append(("iterations", iterations))
    if len(given) > 1:
        names = " and ".join(f"{n}=" for n, _ in given)
        raise ValueError(
            f"{names} are two ways of choosing which units run; a search takes one. Drop all "
            "but one (early stopping goes with neither halving nor a sampler)."
        )
    if not given:
        return None
    name, value = given[0]
    if isinstance(value, Iterations):
        return EarlyStopping(value)
    if isinstance(value, Hyperband):
        return HyperbandStrategy(value)
    if isinstance(value, Halving):
        return HalvingStrategy(value)
    if isinstance(value, Strategy):
        return value
    raise TypeError(
        f"{name} must be a parcv.Halving, a parcv.Hyperband, a parcv.Sampler or an object with "
        f"start(), schedule(), config() and a name (a strategy); got {value!r}. Pass e.g. "
        f"{name}=parcv.Halving(factor=3)."
    )


def check_strategy_metric(strategy: Strategy, scoring: Any, refit: Any, *, nested: bool) -> None:
    """Refuse several metrics with ``refit=False``: a strategy decides by one metric.

    Every strategy in rounds reads one metric's mean test score to decide which
    units run next and which candidate wins (``SearchContext.metric``).
    scikit-learn's searches with several metrics and ``refit=False`` select
    nothing (no ``best_params_``), so no metric is named; parcv refuses rather
    than let the first one decide unsaid.

    Parameters
    ----------
    strategy : Strategy
    scoring : None, str, callable, list of str or dict
        As the search takes it.
    refit : bool or str
        As the search takes it: the metric's name with several metrics.
    nested : bool
        Whether the call is a nested CV (``refit`` then also runs the search on all data).

    Raises
    ------
    ValueError
        Several metrics and ``refit=False``.

    Examples
    --------
    >>> check_strategy_metric(HalvingStrategy(Halving()), ["r2", "max_error"], "r2", nested=False)
    >>> check_strategy_metric(HalvingStrategy(Halving()), ["r2", "max_error"], False, nested=False)
    Traceback (most recent call last):
    ...
    ValueError: halving decides which units run by one metric's mean test score; got several \
metrics ['r2', 'max_error'] and refit=False, which names none of them (scikit-learn's searches \
with several metrics and refit=False select nothing: they have no best_params_). Pass \
refit='r2' (or another of the metrics) to say which one halving maximises; the winner is then \
also refitted on all data. Or pass that one metric as scoring.
    """
    several = isinstance(scoring, (Mapping, list, tuple)) and len(scoring) > 1
    if not several or not (isinstance(refit, (bool, np.bool_)) and not refit):
        return
    names = list(scoring)
    refitted = (
        "the search on all data then also runs, and its winner is refitted there"
        if nested
        else "the winner is then also refitted on all data"
    )
    raise ValueError(
        f"{strategy.name} decides which units run by one metric's mean test score; got "
        f"several metrics {names!r} and refit=False, which names none of them (scikit-learn's "
        "searches with several metrics and refit=False select nothing: they have no "
        f"best_params_). Pass refit={names[0]!r} (or another of the metrics) to say which one "
        f"{strategy.name} maximises; {refitted}. Or pass that one metric as scoring."
    )
