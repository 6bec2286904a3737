"""Shortcuts that must give the numbers of separate fits from scratch, and when they do.

Placeholder of the lead's integration branch: the table of every shortcut lands
with its property test; this holds the continuation rule the strategy driver
asks for until then.
"""

from __future__ import annotations

import numbers
from typing import Any

from sklearn.base import clone

__all__ = ["exact_continuation"]


def _final(estimator: Any) -> Any:
    steps = getattr(estimator, "steps", None)
    return steps[-1][1] if isinstance(steps, list) and steps else estimator


def exact_continuation(estimator: Any, params: dict[str, Any], resource: str) -> bool:
    """Whether growing ``resource`` by a warm start equals a fit from scratch with it.

    Only for a seeded model (an int ``random_state``: a ``RandomState`` or None
    draws differently when continued) that stops on nothing but the count
    (no ``n_iter_no_change`` / early stopping).

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> exact_continuation(RandomForestRegressor(random_state=0), {}, "n_estimators")
    True
    >>> exact_continuation(RandomForestRegressor(), {}, "n_estimators")
    False
    """
    model = _final(clone(estimator).set_params(**clone(params, safe=False)))
    settings = model.get_params(deep=False)
    seed = settings.get("random_state", 0)
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool):
        return False
    if settings.get("n_iter_no_change") is not None:
        return False
    return settings.get("early_stopping", False) is False
