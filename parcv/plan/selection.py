"""The selection rule of a plan: which candidate its CV scores choose, as checked data."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from parcv.errors import ParcvError

__all__ = ["Selection", "check_selection"]


@dataclass(frozen=True, slots=True)
class Selection:
    """Rule that picks one candidate from its CV scores.

    Parameters
    ----------
    rule : {"best", "one_se"}, default="best"
        ``best``: highest mean score (ties: first candidate), as
        ``GridSearchCV``. ``one_se``: the simplest candidate whose mean is
        within one standard error of the best mean.
    complexity : str or callable, default=None
        For ``one_se``: a parameter name (larger value = more complex) or
        ``callable(params) -> float``.

    Examples
    --------
    >>> Selection("one_se", complexity="degree").rule
    'one_se'
    """

    rule: str = "best"
    complexity: str | Callable[[dict[str, Any]], float] | None = None

    def __post_init__(self) -> None:
        if self.rule not in ("best", "one_se"):
            raise ValueError(
                f"Selection.rule must be 'best' or 'one_se'; got {self.rule!r}. Use 'best' for "
                "the highest mean score, 'one_se' for the one-standard-error rule."
            )
        if not (self.complexity is None or isinstance(self.complexity, str)) and not callable(
            self.complexity
        ):
            raise TypeError(
                f"Selection complexity must be a parameter name or a callable(params) -> float; "
                f"got {self.complexity!r}. Pass e.g. complexity='alpha'."
            )
        if self.rule == "one_se" and self.complexity is None:
            raise ValueError(
                "Selection('one_se') needs complexity=: a parameter name such as 'degree' "
                "(larger = more complex) or a callable(params) -> float."
            )

    def complexity_of(self, params: Mapping[str, Any]) -> float:
        """Return the complexity of a candidate (smaller is simpler)."""
        if callable(self.complexity):
            try:
                return float(self.complexity(dict(params)))
            except Exception as err:  # a ParcvError: not mistaken for "every candidate failed"
                raise ParcvError(
                    f"Selection complexity={self.complexity!r} raised for candidate "
                    f"{dict(params)!r}: {err!r}. Make it return a float for every candidate."
                ) from err
        name = self.complexity
        if name is None or name not in params:
            raise ValueError(
                f"Selection complexity={self.complexity!r} is not a parameter of candidate "
                f"{dict(params)!r}. Name a parameter every candidate sets, or pass a callable."
            )
        return float(params[name])


def check_selection(selection: Any, params: Sequence[Mapping[str, Any]]) -> Selection:
    """Check a selection rule against the candidates, before any fit.

    Parameters
    ----------
    selection : Selection or None
        ``None`` is ``Selection()``, the best mean.
    params : sequence of dict
        Parameters of every candidate.

    Returns
    -------
    Selection

    Raises
    ------
    TypeError
        If ``selection`` is not a :class:`Selection` (a rule name such as
        ``"one_se"`` is refused: ``one_se`` also needs ``complexity``).
    ValueError
        If a ``complexity`` name is not a numeric parameter of every candidate
        (a callable complexity cannot be checked before the fits).

    Examples
    --------
    >>> check_selection(None, [{"alpha": 1.0}]).rule
    'best'
    >>> check_selection(Selection("one_se", complexity="alpah"), [{"alpha": 1.0}])
    Traceback (most recent call last):
    ...
    ValueError: Selection complexity='alpah' is not a parameter of the space; the space has \
['alpha']. Pass complexity= one of those names (larger value = more complex), or a \
callable(params) -> float.
    """
    if selection is None:
        return Selection()
    if not isinstance(selection, Selection):
        hint = "parcv.Selection('one_se', complexity=...)"
        if isinstance(selection, str) and selection == "best":
            hint = "parcv.Selection('best'), or leave selection=None"
        raise TypeError(f"selection must be a parcv.Selection; got {selection!r}. Use {hint}.")
    if selection.rule == "one_se" and isinstance(selection.complexity, str):
        _check_complexity(selection.complexity, params)
    return selection


def _check_complexity(name: str, params: Sequence[Mapping[str, Any]]) -> None:
    """A complexity name must be a numeric parameter of every candidate."""
    names = sorted({n for p in params for n in p})
    fix = "Pass complexity= one of those names (larger value = more complex), or a callable"
    if name not in names:
        raise ValueError(
            f"Selection complexity={name!r} is not a parameter of the space; the space has "
            f"{names}. {fix}(params) -> float."
        )
    for p in params:
        if name not in p:
            raise ValueError(
                f"Selection complexity={name!r} is not set by candidate {dict(p)!r}. Name a "
                "parameter every candidate sets, or pass a callable(params) -> float."
            )
        try:
            float(p[name])
        except (TypeError, ValueError) as err:
            raise ValueError(
                f"Selection complexity={name!r} must name a numeric parameter; candidate "
                f"{dict(p)!r} has {name}={p[name]!r}. Pass a callable(params) -> float that "
                "ranks the candidates by complexity."
            ) from err
