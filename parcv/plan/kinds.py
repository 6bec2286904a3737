"""Unit kinds as data: one registry entry per kind says everything the code asks of it.

A unit kind (``fit``, ``refit``, ``final``, ``criteria``, ``ncv``, ``perm``,
``boot``, ``incr``, ``path``, and the fast-CV variant of ``fit``) declares here its graph key
shape, the rows it fits and scores on, what its record keeps, its place in
sorted results, whether it waits for its outer fold's fits, the tag of its
content key and how its failure reads. The plan, the content keys, the engine
and the results read these entries instead of testing kind names, as dask's
``normalize_token.register`` or joblib's ``register_parallel_backend``: a new
kind is one :func:`register_kind` call (and, if it does not run as a fit, one
runner in :mod:`parcv.engine.work`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from parcv.plan.splits import Fold

if TYPE_CHECKING:
    from parcv.plan.resampling import Permutations
    from parcv.stats.intervals import NestedCVPlan

__all__ = [
    "KEEPS",
    "KINDS",
    "ContentKeysLike",
    "Key",
    "Kind",
    "PlanLike",
    "UnitLike",
    "kind_of",
    "kind_order",
    "refit_kind",
    "register_kind",
]

# A graph key: a kind's name, then the unit fields its kind's ``key_fields`` name.
Key = tuple[Any, ...]

# What a record can keep; the engine's one fit loop has a keeper for each.
KEEPS = (
    "scores",  # test scores of every scorer (on the test rows, if any)
    "train_scores",  # train scores too, when the plan asks (return_train_score)
    "predictions",  # the outputs of the plan's predict methods on the test rows, when asked
    "bbc_losses",  # per-sample test losses of an all-data fit, when the plan asks for BBC-CV
    # per-sample test losses of the nested-CV interval's metric, as folds["loss"]: its ncv
    # units' (cross_validate), or the refits' of a nested CV with the interval
    "losses",
    "predicted",  # predict() on the test rows as float64, as folds["prediction"]
    "criteria",  # the information criteria of the fit on its training rows
    "model",  # the fitted estimator itself
    "estimator",  # the fitted estimator of a fit, when the plan asks (return_estimator)
    "fold_scores",  # per-fold test scores of a whole inner CV (fast CV)
)

_FIELDS = ("outer", "inner", "candidate")


# What a kind's entries read of a unit, a plan and its content keys, named here by shape:
# Unit, Plan and ContentKeys are built on this registry, so it cannot import them.
class UnitLike(Protocol):
    """A unit as its kind reads it: a :class:`~parcv.plan.records.Unit`.

    Examples
    --------
    >>> from parcv.plan.records import Unit
    >>> KINDS["refit"].key(Unit("refit", 2, None, 0))
    ('refit', 2)
    """

    @property
    def kind(self) -> str: ...

    @property
    def outer(self) -> int | None: ...

    @property
    def inner(self) -> int | None: ...

    @property
    def candidate(self) -> int: ...


class PlanLike(Protocol):
    """What a kind's ``rows`` and ``targets`` read of a :class:`~parcv.plan.build.Plan`."""

    @property
    def outer_folds(self) -> tuple[Fold, ...]: ...

    @property
    def inner_folds(self) -> Mapping[int | None, Sequence[Fold]]: ...

    @property
    def ncv(self) -> NestedCVPlan | None: ...

    @property
    def permutations(self) -> Permutations | None: ...

    def rows_of(self, outer: int | None) -> NDArray[np.intp]:
        """Return the rows the inner folds of ``outer`` split (all rows for None)."""
        ...


class ContentKeysLike(Protocol):
    """What a kind's ``digests`` read of a :class:`~parcv.plan.keys.ContentKeys`."""

    @property
    def folds(self) -> Mapping[tuple[Any, Any], bytes]: ...

    @property
    def criteria(self) -> bytes: ...

    @property
    def bbc(self) -> bytes: ...

    @property
    def ncv(self) -> Mapping[int, bytes]: ...

    @property
    def perm(self) -> Mapping[tuple[int, int], bytes]: ...

    @property
    def increments(self) -> bytes: ...

    @property
    def losses(self) -> bytes: ...


def _no_targets(plan: PlanLike, unit: UnitLike, fold: Fold) -> Fold:
    """The target rows of a unit that fits ``y`` of its own rows."""
    return fold


@dataclass(frozen=True, slots=True)
class Kind:
    """What one kind of unit is: its key, rows, record, order, dependencies and text.

    Parameters
    ----------
    name : str
        The ``Unit.kind`` it describes (a variant's own name, e.g. ``"fast-cv"``).
    order : int
        Place of its records in sorted results (smaller first).
    key_fields : tuple of str
        The unit fields after the name in its graph key: ``("outer", "inner",
        "candidate")`` gives ``("fit", o, i, c)``, ``()`` gives ``("final",)``.
    rows : callable
        ``rows(plan, unit) -> Fold``: the rows it fits on and scores on.
    keeps : tuple of str
        What its record keeps, from :data:`KEEPS`.
    tag : bytes
        First part of its content key: the same tag and digests make the same key.
    digests : callable
        ``digests(keys, outer, inner) -> tuple of bytes``: what else than the
        candidate, the data and the scorers determines its numbers, read from
        a :class:`~parcv.plan.keys.ContentKeys`.
    describe : callable
        ``describe(unit) -> str``: where it ran, for failure messages.
    noun : str, default="fit"
        What it is, for failure messages ("The {noun} of candidate ... on ...").
    after_fits : bool, default=False
        Whether it waits for the fits that select its candidate (refits);
        otherwise it depends on nothing and runs in chunks with the others.
    selects : bool, default=False
        Whether its records are the inner-CV scores that select a candidate.
    targets : callable, default=None
        ``targets(plan, unit, fold) -> Fold``: the rows of ``y`` its rows of
        ``X`` take (a permutation test's permuted targets); None: their own.
    runner : str, default="fit"
        The engine's runner: ``"fit"`` is the one fit loop (clone, fit, keep).
    variant : callable, default=None
        ``variant(unit) -> str or None``: the name of another entry that
        describes this unit (a ``fit`` unit with ``inner=None`` is fast CV).
    batched : bool, default=False
        Whether a unit makes one record per candidate of its fast-CV batch.
    shares_prefix : bool, default=False
        Whether units on one fold may share fitted Pipeline steps.
    groups : str, default="batches"
        With ``batched``, the plan attribute that holds the groups of
        candidates one unit makes records for (a group starts at
        ``unit.candidate``).
    records_as : str, default=None
        With ``batched``, the kind of the records it makes (an iteration
        path's records are ``fit`` records, one per checkpoint); None: its own.

    Examples
    --------
    >>> KINDS["refit"].key_fields, KINDS["refit"].after_fits
    (('outer',), True)
    """

    name: str
    order: int
    key_fields: tuple[str, ...]
    rows: Callable[[PlanLike, UnitLike], Fold]
    keeps: tuple[str, ...]
    tag: bytes
    digests: Callable[[ContentKeysLike, int | None, int | None], tuple[bytes, ...]]
    describe: Callable[[UnitLike], str]
    noun: str = "fit"
    after_fits: bool = False
    selects: bool = False
    targets: Callable[[PlanLike, UnitLike, Fold], Fold] = _no_targets
    runner: str = "fit"
    variant: Callable[[UnitLike], str | None] | None = None
    batched: bool = False
    shares_prefix: bool = False
    groups: str = "batches"
    records_as: str | None = None
    key: Callable[[UnitLike], Key] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        unknown = [k for k in self.keeps if k not in KEEPS]
        if unknown:
            raise ValueError(
                f"keeps of kind {self.name!r} must be among {KEEPS!r}; got {unknown!r}. "
                "Keep what the engine's fit loop can keep, or add a keeper to it."
            )
        bad = [f for f in self.key_fields if f not in _FIELDS]
        if bad:
            raise ValueError(
                f"key_fields of kind {self.name!r} must be among {_FIELDS!r}; got {bad!r}."
            )
        object.__setattr__(self, "key", _key_maker(self.name, self.key_fields))

    def unit_fields(self, key: Key) -> dict[str, Any]:
        """Return the unit fields a graph key of this kind gives (the others default).

        Examples
        --------
        >>> KINDS["perm"].unit_fields(("perm", 4, 1))
        {'outer': 4, 'inner': 1, 'candidate': 0}
        """
        fields = {"outer": None, "inner": None, "candidate": 0}
        fields.update(zip(self.key_fields, key[1:], strict=True))
        return fields


def _key_maker(name: str, key_fields: tuple[str, ...]) -> Callable[[UnitLike], Key]:
    """A fast ``unit -> key`` for one key shape (``Unit.key`` runs once per unit)."""
    if not key_fields:
        only = (name,)
        return lambda unit: only
    if key_fields == _FIELDS:  # most units: one tuple, no getter
        return lambda unit: (name, unit.outer, unit.inner, unit.candidate)
    get = attrgetter(*key_fields)
    if len(key_fields) == 1:
        return lambda unit: (name, get(unit))
    return lambda unit: (name, *get(unit))


# Every kind, by name: read, never branched on.
KINDS: dict[str, Kind] = {}


def register_kind(kind: Kind) -> Kind:
    """Add a kind of unit to the registry that the plan, engine and results read.

    Parameters
    ----------
    kind : Kind

    Returns
    -------
    Kind
        ``kind``, now ``KINDS[kind.name]``.

    Raises
    ------
    ValueError
        If a kind of that name is registered already.

    Examples
    --------
    >>> register_kind(KINDS["fit"])
    Traceback (most recent call last):
    ...
    ValueError: a unit kind named 'fit' is registered already; pick another name.
    """
    if kind.name in KINDS:
        raise ValueError(
            f"a unit kind named {kind.name!r} is registered already; pick another name."
        )
    KINDS[kind.name] = kind
    return kind


def kind_of(unit: UnitLike) -> Kind:
    """Return the registry entry that describes ``unit`` (its variant's, if it has one).

    Examples
    --------
    >>> from parcv.plan.records import Unit
    >>> kind_of(Unit("fit", 0, 1, 2)).name, kind_of(Unit("fit", 0, None, 2)).name
    ('fit', 'fast-cv')
    """
    kind = KINDS[unit.kind]
    if kind.variant is not None:
        other = kind.variant(unit)
        if other is not None:
            return KINDS[other]
    return kind


def kind_order() -> dict[str, int]:
    """Return each kind's place in sorted results, by name.

    Examples
    --------
    >>> order = kind_order()
    >>> order["criteria"] < order["fit"] < order["refit"] < order["final"] < order["boot"]
    True
    """
    return {name: kind.order for name, kind in KINDS.items()}


def refit_kind(outer: int | None) -> str:
    """Return the kind that refits the candidate selected on ``outer`` (None: all data).

    Examples
    --------
    >>> refit_kind(0), refit_kind(None)
    ('refit', 'final')
    """
    return "final" if outer is None else "refit"


def _no_test(rows: Any) -> Fold:
    return Fold(rows, np.empty(0, dtype=np.intp))


def _where(outer: int | None) -> str:
    return "all data" if outer is None else f"outer fold {outer}"


def _fit_digests(keys: ContentKeysLike, outer: int | None, inner: int | None) -> tuple[bytes, ...]:
    # An all-data fit of a BBC-CV run keeps its per-sample losses too: another record.
    bbc = (keys.bbc,) if outer is None and keys.bbc else ()
    return (keys.folds[(outer, inner)], *bbc)


def _refit_digests(
    keys: ContentKeysLike, outer: int | None, inner: int | None
) -> tuple[bytes, ...]:
    # The refits of a nested CV with the interval keep their per-sample losses: other records.
    return (keys.folds[(outer, "outer")], *((keys.losses,) if keys.losses else ()))


def _ncv_rows(plan: PlanLike, unit: UnitLike) -> Fold:
    fit = plan.ncv.units[unit.inner]  # type: ignore[union-attr,index]
    return Fold(plan.ncv.train_indices(fit), plan.ncv.test_indices(fit))  # type: ignore[union-attr]


def _permuted_rows(plan: PlanLike, unit: UnitLike) -> Fold:
    return plan.permutations.folds[unit.outer][unit.inner]  # type: ignore[union-attr,index]


def _permuted_targets(plan: PlanLike, unit: UnitLike, fold: Fold) -> Fold:
    take = plan.permutations.target_rows  # type: ignore[union-attr]
    return Fold(take(unit.outer, fold.train), take(unit.outer, fold.test))  # type: ignore[arg-type]


register_kind(Kind(
    "criteria", 0, ("outer", "candidate"),
    rows=lambda plan, u: _no_test(plan.rows_of(u.outer)),
    keeps=("criteria",),
    tag=b"criteria",
    digests=lambda keys, o, i: (keys.folds[(o, "rows")], keys.criteria),
    describe=lambda u: _where(u.outer),
    noun="criteria fit",
))  # fmt: skip
register_kind(Kind(
    "fit", 1, _FIELDS,
    rows=lambda plan, u: plan.inner_folds[u.outer][u.inner],  # type: ignore[index]
    keeps=("scores", "train_scores", "bbc_losses", "predictions", "estimator"),
    tag=b"fit",
    digests=_fit_digests,
    describe=lambda u: f"{_where(u.outer)}, inner fold {u.inner}",
    selects=True,
    variant=lambda u: "fast-cv" if u.inner is None else None,
    shares_prefix=True,
))  # fmt: skip
register_kind(Kind(
    "fast-cv", 1, _FIELDS,
    rows=lambda plan, u: _no_test(plan.rows_of(u.outer)),
    keeps=("fold_scores",),
    tag=b"fast-cv",
    digests=lambda keys, o, i: (keys.folds[(o, "inner")],),
    describe=lambda u: f"{_where(u.outer)}, every inner fold (fast CV)",
    selects=True,
    runner="fast-cv",
    batched=True,
))  # fmt: skip
register_kind(Kind(
    "refit", 2, ("outer",),
    rows=lambda plan, u: plan.outer_folds[u.outer],  # type: ignore[index]
    keeps=("scores", "train_scores", "predictions", "losses"),
    tag=b"refit",
    digests=_refit_digests,
    describe=lambda u: _where(u.outer),
    noun="refit",
    after_fits=True,
))  # fmt: skip
register_kind(Kind(
    "final", 3, (),
    rows=lambda plan, u: _no_test(plan.rows_of(None)),
    keeps=("scores", "train_scores", "model"),
    tag=b"final",
    digests=lambda keys, o, i: (keys.folds[(None, "rows")],),
    describe=lambda u: "all data",
    noun="final fit",
    after_fits=True,
))  # fmt: skip
register_kind(Kind(
    "ncv", 4, ("inner",),
    rows=_ncv_rows,
    keeps=("losses",),
    tag=b"ncv",
    digests=lambda keys, o, i: (keys.ncv[i],),  # type: ignore[index]
    describe=lambda u: f"nested-CV interval fit {u.inner}",
))  # fmt: skip
register_kind(Kind(
    "perm", 5, ("outer", "inner"),
    rows=_permuted_rows,
    keeps=("scores",),
    tag=b"perm",
    digests=lambda keys, o, i: (keys.perm[(o, i)],),  # type: ignore[index]
    describe=lambda u: f"fold {u.inner} of permutation {u.outer} of the targets",
    targets=_permuted_targets,
))  # fmt: skip
register_kind(Kind(
    "boot", 6, ("inner", "candidate"),
    rows=lambda plan, u: plan.inner_folds[None][u.inner],  # type: ignore[index]
    keeps=("predicted",),
    tag=b"boot",
    digests=lambda keys, o, i: (keys.folds[(None, i)],),
    describe=lambda u: f"bootstrap round {u.inner}",
))  # fmt: skip
register_kind(Kind(
    "incr", 7, ("inner", "candidate"),
    rows=lambda plan, u: plan.inner_folds[None][u.inner],  # type: ignore[index]
    keeps=("fold_scores",),
    tag=b"incr",
    digests=lambda keys, o, i: (keys.folds[(o, i)], keys.increments),
    describe=lambda u: f"fold {u.inner}, fitted incrementally",
    noun="incremental fit",
    runner="incremental",
))  # fmt: skip


def _path_rows(plan: PlanLike, unit: UnitLike) -> Fold:
    return plan.inner_folds[unit.outer][unit.inner]  # type: ignore[index]


def _path_where(unit: UnitLike) -> str:
    return f"{_where(unit.outer)}, inner fold {unit.inner} (iteration path)"


register_kind(Kind(
    "path", 1, _FIELDS,
    rows=_path_rows,
    keeps=("scores", "train_scores"),
    tag=b"fit",  # its records are fit records: the same prefix as a fit's
    digests=_fit_digests,
    describe=_path_where,
    noun="iteration path",
    selects=True,
    runner="path",
    batched=True,
    groups="paths",
    records_as="fit",
))  # fmt: skip
