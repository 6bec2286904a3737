"""Which strategy a call runs: ``strategy=``, or the ``halving=`` and ``iterations=`` it implies."""

from __future__ import annotations

from typing import Any

from parcv.plan.halving import Halving, Hyperband
from parcv.plan.iterations import Iterations
from parcv.strategies.early_stopping import EarlyStopping
from parcv.strategies.halving import HalvingStrategy, HyperbandStrategy
from parcv.strategies.strategy import Strategy

__all__ = ["check_strategy"]


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
