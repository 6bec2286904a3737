"""Candidate spaces: grids, random search and several model families."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sklearn.base import clone
from sklearn.model_selection import ParameterGrid, ParameterSampler

__all__ = ["Candidate", "RandomSpace", "check_space", "format_params"]


def format_params(params: Mapping[str, Any]) -> str:
    """Render a parameter dict as a short, stable, human-readable label.

    Parameters
    ----------
    params : mapping of str to object
        Hyperparameters of one candidate.

    Returns
    -------
    str
        ``"name=value, ..."`` sorted by name; ``"(defaults)"`` when empty.

    Examples
    --------
    >>> format_params({"C": 1.0, "kernel": "rbf"})
    "C=1.0, kernel='rbf'"
    """
    if not params:
        return "(defaults)"
    return ", ".join(f"{name}={_plain(params[name])!r}" for name in sorted(params))


def _plain(value: Any) -> Any:
    # numpy scalars (random search draws) print as plain numbers: C=4.43, not np.float64(4.43).
    return value.item() if hasattr(value, "item") and getattr(value, "ndim", None) == 0 else value


@dataclass(frozen=True, slots=True)
class Candidate:
    """One point of the candidate space.

    Parameters
    ----------
    index : int
        Position in the space, in scikit-learn's enumeration order.
    params : dict
        Hyperparameters passed to ``estimator.set_params``.
    """

    index: int
    params: dict[str, Any] = field(hash=False, compare=True)

    @property
    def label(self) -> str:
        """Human-readable ``name=value`` label."""
        return format_params(self.params)

    @property
    def id(self) -> str:
        """Stable id: the index plus a digest of the parameters."""
        digest = hashlib.sha256(self.label.encode()).hexdigest()[:8]
        return f"c{self.index}-{digest}"


@dataclass(frozen=True, slots=True)
class RandomSpace:
    """A random-search space: distributions or lists sampled ``n_iter`` times.

    Parameters
    ----------
    distributions : dict or list of dict
        As ``sklearn.model_selection.ParameterSampler``: each value is a list
        (sampled uniformly) or a ``scipy.stats`` distribution with ``rvs``.
    n_iter : int
        Number of candidates to draw.
    random_state : int
        Seed of the draw; the same seed draws the same candidates as
        ``RandomizedSearchCV(random_state=...)``.

    Examples
    --------
    >>> from scipy.stats import loguniform
    >>> space = RandomSpace({"alpha": loguniform(1e-3, 1e3)}, n_iter=4, random_state=0)
    >>> len(check_space(space))
    4
    """

    distributions: Any
    n_iter: int = 10
    random_state: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.n_iter, bool) or not isinstance(self.n_iter, int) or self.n_iter < 1:
            raise ValueError(
                f"n_iter must be an int >= 1; got {self.n_iter!r}. "
                "Ask for at least one random candidate."
            )
        if isinstance(self.random_state, bool) or not isinstance(self.random_state, int):
            raise TypeError(
                f"random_state must be an int seed; got {self.random_state!r}. "
                "parcv needs a fixed seed so that every run draws the same candidates."
            )


def _check_grid(space: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    grids = [space] if isinstance(space, Mapping) else list(space)
    if not grids:
        raise ValueError(
            "space must hold at least one candidate; got an empty list. "
            "Pass a dict such as {'alpha': [0.1, 1.0]}, or {} to score the estimator as is."
        )
    for grid in grids:
        if not isinstance(grid, Mapping):
            raise TypeError(
                f"space must be a dict, a list of dicts or a RandomSpace; got an item {grid!r}. "
                "Write each grid as {'param': [values, ...]}."
            )
        for name, values in grid.items():
            if isinstance(values, str) or not isinstance(values, Sequence):
                raise TypeError(
                    f"space[{name!r}] must be a list of values; got {values!r}. "
                    f"Wrap a single value in a list: {{{name!r}: [{values!r}]}}."
                )
            if len(values) == 0:
                raise ValueError(
                    f"space[{name!r}] is an empty list, so the grid has no candidate. "
                    "Give at least one value or remove the key."
                )
    return [dict(grid) for grid in grids]


def check_space(space: Any) -> tuple[Candidate, ...]:
    """Enumerate a candidate space into candidates with stable ids.

    Parameters
    ----------
    space : dict, list of dict, RandomSpace or None
        A grid (as ``GridSearchCV``'s ``param_grid``), a :class:`RandomSpace`,
        or ``None`` for the single candidate "the estimator as given".

    Returns
    -------
    tuple of Candidate
        In scikit-learn's order (``ParameterGrid`` / ``ParameterSampler``).

    Raises
    ------
    ValueError
        If the space is empty.
    TypeError
        If the space is not one of the accepted types.

    Examples
    --------
    >>> [c.params for c in check_space({"a": [1, 2], "b": ["x"]})]
    [{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'x'}]
    """
    if space is None:
        return (Candidate(0, {}),)
    if isinstance(space, RandomSpace):
        try:
            sampled = list(
                ParameterSampler(
                    space.distributions, n_iter=space.n_iter, random_state=space.random_state
                )
            )
        except (TypeError, ValueError) as err:
            raise TypeError(f"RandomSpace.distributions is not valid: {err}") from err
        return tuple(Candidate(i, dict(p)) for i, p in enumerate(sampled))
    if not isinstance(space, (Mapping, list, tuple)):
        raise TypeError(
            f"space must be a dict, a list of dicts, a RandomSpace or None; got {space!r}."
        )
    return tuple(Candidate(i, dict(p)) for i, p in enumerate(ParameterGrid(_check_grid(space))))


def check_candidate_params(estimator: Any, candidates: Sequence[Candidate]) -> None:
    """Raise if any candidate names a parameter the estimator does not have."""
    for cand in candidates:
        try:
            clone(estimator).set_params(**clone(cand.params, safe=False))
        except ValueError as err:
            valid = sorted(_valid_names(estimator, cand.params))
            bad = [name for name in cand.params if name not in valid]
            raise ValueError(
                f"candidate {cand.label} sets parameter(s) {bad!r} that "
                f"{type(estimator).__name__} does not have. Valid names: {valid}. "
                "Fix the key in the space (nested parameters are written 'step__param')."
            ) from err


def _valid_names(estimator: Any, params: Mapping[str, Any]) -> set[str]:
    # Parameters of a step swapped in by the candidate itself (model families) are valid too.
    names = set(clone(estimator).get_params(deep=True))
    for name, value in params.items():
        if hasattr(value, "get_params") and "__" not in name:
            names |= {f"{name}__{sub}" for sub in value.get_params(deep=True)}
    return names
