"""Candidate spaces: grids, random search and several model families."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import numpy as np
from sklearn import get_config
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid

from parcv.errors import did_you_mean
from parcv.plan.draws import draw_candidates
from parcv.plan.tokens import fixed_number_type, values_hex

try:  # what fit() runs first; scikit-learn has no public name for either
    from sklearn.base import BaseEstimator
    from sklearn.utils._param_validation import (
        InvalidParameterError,
        validate_parameter_constraints,
    )

    _REJECTED: tuple[type[Exception], ...] = (InvalidParameterError,)
except ImportError:  # pragma: no cover - moved in some scikit-learn: the fits report it
    _REJECTED = ()

__all__ = ["Candidate", "RandomSpace", "check_space", "format_params", "parameter_value_error"]

T = TypeVar("T")


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
    # Formatted on first use, then kept: a report of 20,000 candidates asked for labels
    # 120,000 times, and a plan of 100,000 drawn ones needs none before its first unit.
    _label: str = field(init=False, repr=False, compare=False, hash=False, default="")
    # Tokened on first use, then kept: a run of 20,000 candidates asked for ids 40,000 times.
    # A candidate lives for one call's plan, so the values it names are read within that call.
    _id: str = field(init=False, repr=False, compare=False, hash=False, default="")

    def __reduce__(self) -> tuple[type[Candidate], tuple[int, dict[str, Any]]]:
        # What identifies it: a worker formats or tokens again only what it reads.
        return (Candidate, (self.index, self.params))

    @property
    def label(self) -> str:
        """Human-readable ``name=value`` label."""
        if not self._label:
            object.__setattr__(self, "_label", format_params(self.params))
        return self._label

    @property
    def id(self) -> str:
        """Stable id: the index plus the first digits of the parameters' token (code named)."""
        if not self._id:
            object.__setattr__(self, "_id", f"c{self.index}-{values_hex(self.params)[:8]}")
        return self._id


def shipped_candidates(candidates: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """The candidates as a plan sent to workers holds them: pickled in one piece where plain.

    A pickler that records what each object names (cloudpickle, the local and
    Dask backends') visits every candidate, its dict and each numpy value:
    two seconds for 100,000 drawn candidates. Where every value is plain
    (``None``, ``bool``, ``int``, ``float``, ``str``, ``bytes`` or a numpy
    number) the whole tuple is one blob of the standard pickler instead, which
    pickles those values as cloudpickle does and names no module of the user's
    own; anything else is pickled candidate by candidate as before. Either way
    the worker unpickles a plain tuple of equal candidates.

    Examples
    --------
    >>> import pickle
    >>> shipped = shipped_candidates(check_space({"alpha": [0.1, 1.0]}))
    >>> pickle.loads(pickle.dumps(shipped)) == check_space({"alpha": [0.1, 1.0]})
    True
    """
    return _ShippedCandidates(candidates)


class _ShippedCandidates(tuple):  # type: ignore[type-arg]
    __slots__ = ()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if not self or not all(
            type(name) is str and _plain_value(value)
            for cand in self for name, value in cand.params.items()
        ):  # fmt: skip
            return (tuple, (tuple(self),))
        names = tuple(self[0].params)
        if not names or any(tuple(cand.params) != names for cand in self):
            pairs = [(cand.index, cand.params) for cand in self]
            return (_unpickled_candidates, (pickle.dumps(pairs, protocol=5),))
        # One column per name, in the names' order; a column of one numpy number type as
        # an array of it, whose items are those numbers again, bit for bit.
        columns = [_column([cand.params[name] for cand in self]) for name in names]
        indices = [cand.index for cand in self]
        blob = pickle.dumps((indices, names, columns), protocol=5)
        return (_unpickled_columns, (blob,))


def _plain_value(value: Any) -> bool:
    t = type(value)
    return t in _PLAIN_TYPES or (issubclass(t, np.generic) and t is not np.object_)


def _column(values: list[Any]) -> Any:
    t = type(values[0])
    if fixed_number_type(t) and all(type(v) is t for v in values):
        return np.array(values, dtype=t)
    return values


_PLAIN_TYPES = frozenset({type(None), bool, int, float, str, bytes})


def _unpickled_candidates(blob: bytes) -> tuple[Candidate, ...]:
    return tuple(Candidate(index, params) for index, params in pickle.loads(blob))


def _unpickled_columns(blob: bytes) -> tuple[Candidate, ...]:
    indices, names, columns = pickle.loads(blob)
    rows = zip(*(list(c) for c in columns), strict=True)
    return tuple(
        Candidate(index, dict(zip(names, row, strict=True)))
        for index, row in zip(indices, rows, strict=True)
    )


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
    return [{name: _check_values(name, values) for name, values in grid.items()} for grid in grids]


def _check_values(name: str, values: Any) -> Any:
    """One grid entry: a non-empty list, tuple, range or 1-D array of values."""
    if isinstance(values, np.ndarray) and values.ndim > 1:
        raise ValueError(
            f"space[{name!r}] must be a 1-D list or array of values; got an array of shape "
            f"{values.shape}: {values!r}. Pass a 1-D array such as np.logspace(-2, 2, 5), or "
            f"a list of arrays to try whole arrays as values: {{{name!r}: [array1, array2]}}."
        )
    if isinstance(values, np.ndarray) and values.ndim == 1:
        # Python scalars, as from the equal list: same candidates, labels, fingerprint, store.
        values = values.tolist()
    if hasattr(values, "rvs") and not isinstance(values, Sequence):
        raise TypeError(
            f"space[{name!r}] is a distribution ({values!r}); a grid takes lists of values. "
            "Pass n_iter=... to draw candidates from it (a random search, as "
            "RandomizedSearchCV), or list the values to try."
        )
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise TypeError(  # scikit-learn's words first: its users (and tests) match them
            f"Parameter grid for parameter {name!r} needs to be a list or a numpy array, but "
            f"got {values!r} (of type {type(values).__name__}) instead. Single values need to "
            f"be wrapped in a list with one element. For example: {{{name!r}: [{values!r}]}}."
        )
    unordered = next((v for v in values if isinstance(v, (set, frozenset))), None)
    if unordered is not None:
        raise TypeError(
            f"space[{name!r}] holds the set {unordered!r}: a set has no order, so it is no "
            "stable parameter value (scikit-learn estimators take lists, tuples or arrays). "
            f"Pass it as a sorted tuple, e.g. {tuple(sorted(unordered, key=repr))!r}."
        )
    if len(values) == 0:
        raise ValueError(
            f"Parameter grid for parameter {name!r} need to be a non-empty sequence, got: "
            f"{values!r}: the grid has no candidate. Give at least one value or remove the key."
        )
    return values


def check_space(space: Any) -> tuple[Candidate, ...]:
    """Enumerate a candidate space into candidates with stable ids.

    Parameters
    ----------
    space : dict, list of dict, RandomSpace or None
        A grid (as ``GridSearchCV``'s ``param_grid``), a :class:`RandomSpace`,
        or ``None`` for the single candidate "the estimator as given". A
        grid's values are a list, tuple, range or 1-D array; an array's
        values become Python scalars (``.tolist()``), so
        ``np.logspace(-2, 2, 5)`` makes the same candidates as the equal list.

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
    >>> [c.params for c in check_space({"alpha": np.logspace(-1, 1, 3)})]
    [{'alpha': 0.1}, {'alpha': 1.0}, {'alpha': 10.0}]
    """
    if space is None:
        return (Candidate(0, {}),)
    if isinstance(space, RandomSpace):
        try:
            sampled = draw_candidates(space.distributions, space.n_iter, space.random_state)
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
    valid = estimator.get_params(deep=True)
    if all(
        name in valid and not hasattr(value, "get_params")
        for c in candidates for name, value in c.params.items()
    ):  # fmt: skip
        return  # set_params would accept every candidate: no structure changes, known names
    for cand in candidates:
        try:
            clone(estimator).set_params(**clone(cand.params, safe=False))
        except ValueError as err:
            valid = sorted(_valid_names(estimator, cand.params))
            bad = [name for name in cand.params if name not in valid]
            raise ValueError(
                f"candidate {cand.label} sets parameter(s) {bad!r} that "
                f"{type(estimator).__name__} does not have. "
                + "".join(did_you_mean(name, valid, end=" ") for name in bad)
                + f"Valid names: {valid}. "
                "Fix the key in the space (nested parameters are written 'step__param')."
            ) from err


def check_candidate_values(
    estimator: Any, candidates: Sequence[Candidate], *, each: bool = True
) -> None:
    """Raise if scikit-learn's parameter constraints reject candidates, before any fit.

    Parameters
    ----------
    estimator : estimator object
    candidates : sequence of Candidate
    each : bool, default=True
        Raise at the first rejected candidate (``error_score="raise"``: the
        run would stop there). Otherwise raise only when every candidate is
        rejected (nothing could be selected), stopping at the first accepted.

    Raises
    ------
    ValueError
        Naming the candidate, scikit-learn's message and the fix.

    Notes
    -----
    The check is what ``fit`` runs first: ``_validate_params()`` of
    ``clone(estimator).set_params(**params)`` and of every estimator among
    its parameters (pipeline steps); estimators without
    ``_parameter_constraints`` are not checked. Constraints hold per
    parameter, so each distinct value is checked once against its
    constraint (about 10 us); a candidate that swaps in an estimator, or an
    estimator with its own ``_validate_params``, costs one clone (about
    0.4 ms). 5,000 Ridge alphas take about 50 ms. Nothing is checked under
    ``sklearn.set_config(skip_parameter_validation=True)``.
    """
    if not _REJECTED or get_config().get("skip_parameter_validation"):
        return  # fit() would not check either
    check = _ConstraintCheck(estimator)
    first: tuple[Candidate, Exception] | None = None
    for cand in candidates:
        err = check.rejection(cand.params)
        if err is None and not each:
            return
        if err is not None and first is None:
            first = (cand, err)
            if each:
                break
    if first is None:
        return
    cand, err = first
    what = f"candidate {cand.label}" if cand.params else f"the estimator as given ({estimator!r})"
    if each:
        raise ValueError(
            f"{what} is rejected by scikit-learn's parameter check: {err} Fix the value in "
            "the space, or pass error_score=float('nan') to record its fits as failed and go on."
        ) from err
    raise ValueError(
        f"every candidate is rejected by scikit-learn's parameter check, so nothing could be "
        f"selected; the first, {what}: {err} Fix the values in the space."
    ) from err


def parameter_value_error(estimator: Any, name: str, value: Any) -> Exception | None:
    """scikit-learn's constraint error for one ``step__param`` value, or None if accepted.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> parameter_value_error(LogisticRegression(), "class_weight", "balanced") is None
    True
    >>> type(parameter_value_error(LogisticRegression(), "class_weight", "none")).__name__
    'InvalidParameterError'
    """
    if get_config().get("skip_parameter_validation"):
        return None
    return _ConstraintCheck(estimator).value_error(name, value)


def _is_estimator(value: Any) -> bool:
    return hasattr(value, "get_params") and not isinstance(value, type)


def holds_estimator(value: Any) -> bool:
    """Whether a parameter value is, or lists, an estimator (a step swapped in)."""
    if isinstance(value, (list, tuple)):
        return any(holds_estimator(v) for v in value)
    return _is_estimator(value)


def _constrained(part: Any) -> bool:
    return hasattr(part, "_parameter_constraints") and hasattr(part, "_validate_params")


class _ConstraintCheck:
    """Rejections of candidates by parameter constraints, one distinct value at a time."""

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator
        nested = estimator.get_params(deep=True)
        self.parts = {"": estimator, **{k: v for k, v in nested.items() if _is_estimator(v)}}
        # An estimator's own _validate_params may check more than each value alone.
        self.per_value = all(
            getattr(type(p), "_validate_params", None) is BaseEstimator._validate_params
            for p in self.parts.values() if _constrained(p)
        )  # fmt: skip
        self.seen: dict[Any, Exception | None] = {}
        self.base = {n: e for n, v in nested.items() if (e := self.value_error(n, v)) is not None}

    def value_error(self, name: str, value: Any) -> Exception | None:
        """The error of one ``step__param`` value, cached per (name, type, value)."""
        path, _, leaf = name.rpartition("__")
        part = self.parts.get(path)
        constraints = getattr(part, "_parameter_constraints", {}) if _constrained(part) else {}
        if leaf not in constraints:
            return None
        return memo(self.seen, (name, type(value), value), partial(_violation, part, leaf, value))

    def rejection(self, params: Mapping[str, Any]) -> Exception | None:
        """The first constraint error of a candidate, or None."""
        if not self.per_value or any(holds_estimator(v) for v in params.values()):
            return _rejection(self.estimator, params)
        for name, value in params.items():
            if (err := self.value_error(name, value)) is not None:
                return err
        return next((e for n, e in self.base.items() if n not in params), None)


def memo(cache: dict[Any, T], key: Any, compute: Callable[[], T]) -> T:
    """``compute()``, kept in ``cache`` under ``key``; computed every time for an unhashable
    key (a list or array among the values)."""
    try:
        if key not in cache:
            cache[key] = compute()
        return cache[key]
    except TypeError:
        return compute()


def _violation(part: Any, leaf: str, value: Any) -> Exception | None:
    """The error of one value against its parameter's constraint in ``part``, or None."""
    try:
        validate_parameter_constraints(
            {leaf: part._parameter_constraints[leaf]},
            {leaf: value},
            caller_name=type(part).__name__,
        )
    except _REJECTED as caught:
        return caught
    return None


def _rejection(estimator: Any, params: Mapping[str, Any]) -> Exception | None:
    """The constraint error fit() would raise first for these parameters, or None."""
    # Estimator-valued parameters are cloned: set_params of 'model__alpha' would mutate them.
    est = clone(estimator).set_params(**clone(dict(params), safe=False))
    parts = [est, *(v for v in est.get_params(deep=True).values() if _is_estimator(v))]
    for part in parts:
        if _constrained(part):
            try:
                part._validate_params()
            except _REJECTED as err:
                return err
    return None


def _valid_names(estimator: Any, params: Mapping[str, Any]) -> set[str]:
    # Parameters of a step swapped in by the candidate itself (model families) are valid too.
    names = set(clone(estimator).get_params(deep=True))
    for name, value in params.items():
        if hasattr(value, "get_params") and "__" not in name:
            names |= {f"{name}__{sub}" for sub in value.get_params(deep=True)}
    return names
