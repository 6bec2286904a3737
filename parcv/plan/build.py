"""The plan: candidates, folds and units of a run, as plain data."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import clone, is_classifier
from sklearn.model_selection import LeaveOneOut
from sklearn.utils import _safe_indexing

from parcv.criteria.tasks import CriteriaRequest, check_criteria
from parcv.plan.data import Dataset, check_data_for, data_token
from parcv.plan.fast_cv import decide_fast_cv
from parcv.plan.interval import BBCRequest, IntervalRequest, check_bbc, check_interval
from parcv.plan.iterations import (
    Iterations,
    PathChoice,
    check_iterations,
    choose_path,
    expand_paths,
)
from parcv.plan.kept import KeptFit
from parcv.plan.kinds import KINDS, Key, kind_of
from parcv.plan.partition import PartitionFolds, as_partition, leave_one_out_folds
from parcv.plan.prefix import prefix_ids, sharing_problem
from parcv.plan.records import PREDICT_METHODS, Unit
from parcv.plan.reprs import stable_repr
from parcv.plan.resampling import Permutations
from parcv.plan.routing import rows_of_params
from parcv.plan.scoring import (
    Scoring,
    check_metric_target,
    check_response_methods,
    check_scoring_spec,
)
from parcv.plan.selection import Selection, check_selection
from parcv.plan.shortcuts import log_fallbacks
from parcv.plan.space import (
    Candidate,
    check_candidate_params,
    check_candidate_values,
    check_space,
    shipped_candidates,
)
from parcv.plan.splits import Fold, ThreeWayHoldOut, check_scheme, materialize_folds
from parcv.plan.tokens import Tokenizer, token_hex
from parcv.plan.units import KeySequence, UnitArray, UnitGrid, as_units
from parcv.plan.version import __version__
from parcv.stats.intervals import NestedCVPlan
from parcv.stats.racing import Racing

__all__ = ["FINGERPRINTED", "Plan", "build_plan", "choice_digest", "fingerprint"]


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything that determines the numbers of a run, materialised once.

    Parameters
    ----------
    estimator : estimator object
        Template cloned for every unit.
    candidates : tuple of Candidate
    scoring : Scoring
    outer_folds : tuple of Fold
        Empty unless nested.
    inner_folds : dict
        Inner folds per outer fold (``None`` = all data), absolute indices;
        leave-one-out is a compact :class:`~parcv.plan.partition.PartitionFolds`.
    units : UnitArray or tuple of Unit
        Every unit that runs before the refits, in scheduling priority
        order: ``criteria`` units first, then ``fit`` units (with fast CV,
        one ``fit`` unit per outer fold and batch of candidates). Kept as a
        :class:`~parcv.plan.units.UnitArray`, whose grid of fit units costs
        no memory per unit.
    refit_outers : tuple of int
        Outer folds whose selected candidate is refitted and scored.
    final : bool
        Whether the selected candidate is refitted on all data.
    selection : Selection
    error_score : float or "raise"
    return_train_score : bool
    n_samples : int
    fast_cv : bool, default=False
        Whether the inner CVs run as fast CV (exact held-out predictions of
        a linear smoother, one unit per outer fold and batch).
    batches : tuple of tuple of int, default=()
        With fast CV, the candidates that share one decomposition.
    criteria : CriteriaRequest or None, default=None
        Criteria computed per candidate on every outer-train part (and on
        all data when there is an all-data search).
    prefixes : tuple of tuple of int, default=()
        For a ``Pipeline``, each candidate's transformer prefixes named per
        depth (:func:`parcv.plan.prefix.prefix_ids`): fit units on one fold
        whose prefixes are equal fit them once. Empty when nothing is shared.
    racing : Racing or None, default=None
        Drop candidates from the inner CVs once a paired test on the folds
        scored so far says they are worse than the current best
        (:mod:`parcv.stats.racing`); their later folds are never run.
    interval : IntervalRequest or None, default=None
        The nested CV interval. Of a one-candidate run, its fits are the
        ``ncv`` units; of a nested CV, each of its fits is a whole selection
        (inner CV, refit): an outer fold after the nested CV's own (see
        :attr:`nested_outers`), whose refit keeps its per-sample losses.
        ``ncv`` holds their fold assignments.
    bbc : BBCRequest or None, default=None
        BBC-CV of the candidate selected on all data: the all-data fits keep
        their per-sample test losses.
    predictions : tuple of str, default=()
        Methods (of :data:`~parcv.plan.records.PREDICT_METHODS`) whose output
        on the test rows every ``fit`` and ``refit`` unit keeps.
    estimators : bool, default=False
        Whether every ``fit`` unit keeps its fitted estimator in its record
        (``return_estimator`` of :func:`parcv.cross_validate`).
    random_state : int or None, default=None
        The seed parcv drew for the plan's random choices because the caller
        gave none (a shuffled learning curve); the store records it, so that
        a resume draws the same rows.
    increments : tuple of int, default=()
        The train sizes of an incremental learning curve, whose ``incr``
        units ``partial_fit`` each fold's train rows in these steps.
    iterations : Iterations or None, default=None
        The iteration parameter scored as a path (:mod:`parcv.plan.iterations`):
        each candidate is a (point of the space, checkpoint), and one ``path``
        unit per (fold, point) makes the fit records of all its checkpoints
        (with early stopping, one per point over every inner fold in step).
    paths : tuple of tuple of int, default=()
        With ``iterations``, each point's candidates in checkpoint order.
    path_methods : tuple of str, default=()
        With ``iterations``, how each path is grown (``"staged"``, ...):
        a shortcut where :mod:`parcv.plan.shortcuts` finds it exact, else
        ``"separate"``, whose candidates are ordinary ``fit`` units (with
        early stopping, a ``path`` unit that fits each checkpoint anew).
    starts : dict of key to KeptFit, default={}
        Fitted estimators that ``fit`` units continue by a warm start instead
        of fitting from scratch, by the unit's key: a successive-halving rung
        on an iteration parameter grows the fits of the rung before, a window
        of a pruned trial's path those of the window before. Only for
        growth that equals a fit from scratch bit for bit
        (:func:`parcv.plan.shortcuts.continues_exactly`), so no key covers it.
    keep_fitted : bool, default=False
        Whether ``fit`` units return their fitted estimators to the driver
        (for the next rung to continue), pickled once by their worker
        (:class:`~parcv.plan.kept.KeptFit`), without storing them.
    permutations : Permutations or None, default=None
        The permuted targets of a permutation test, whose fits are the
        ``perm`` units. A bias-variance decomposition's ``boot`` units fit
        on the folds of ``inner_folds[None]`` (bootstrap rows, test rows).
    """

    estimator: Any
    candidates: tuple[Candidate, ...]
    scoring: Scoring
    outer_folds: tuple[Fold, ...]
    inner_folds: dict[int | None, Sequence[Fold]] = field(repr=False)
    units: UnitArray | tuple[Unit, ...] = field(repr=False)
    refit_outers: tuple[int, ...]
    final: bool
    selection: Selection
    error_score: float | str
    return_train_score: bool
    n_samples: int
    fast_cv: bool = False
    batches: tuple[tuple[int, ...], ...] = ()
    criteria: CriteriaRequest | None = None
    prefixes: tuple[tuple[int, ...], ...] = ()
    racing: Racing | None = None
    interval: IntervalRequest | None = None
    ncv: NestedCVPlan | None = field(default=None, repr=False)
    bbc: BBCRequest | None = None
    predictions: tuple[str, ...] = ()
    permutations: Permutations | None = field(default=None, repr=False)
    estimators: bool = False
    random_state: int | None = None
    increments: tuple[int, ...] = ()
    iterations: Iterations | None = None
    paths: tuple[tuple[int, ...], ...] = ()
    path_methods: tuple[str, ...] = ()
    starts: dict[Key, KeptFit] = field(default_factory=dict, repr=False, compare=False)
    keep_fitted: bool = False

    def __post_init__(self) -> None:
        # Units given as a tuple (a curve's, a part's) read like a built plan's.
        object.__setattr__(self, "units", as_units(self.units))

    @property
    def n_units(self) -> int:
        """Total number of records a run makes, refits included."""
        return self.n_fit_records + len(self.refit_outers) + int(self.final)

    @property
    def n_points(self) -> int:
        """Candidates, the checkpoints of one iteration path counted as one point."""
        return len(self.candidates) - sum(map(len, self.paths)) + len(self.paths)

    @property
    def n_fit_records(self) -> int:
        """Number of records the units make before the refits (a grid's: one per unit)."""
        units = as_units(self.units)
        n_grid = sum(len(grid) for _, grid in units.grids())
        return n_grid + sum(len(self.unit_keys(u)) for _, u in units.listed())

    @property
    def nested_outers(self) -> tuple[int, ...]:
        """The outer folds of the nested CV itself: ``refit_outers`` less the interval's.

        The nested CV interval's selections are the outer folds after these:
        outer fold ``len(nested_outers) + i`` is ``ncv.units[i]``.
        """
        if self.interval is None or self.ncv is None or not self.outer_folds:
            return self.refit_outers
        n_own = len(self.outer_folds) - self.ncv.n_fits
        return tuple(o for o in self.refit_outers if o < n_own)

    def for_workers(self) -> Plan:
        """The plan as workers need it: without the unit list (chunks carry their units).

        The list is most of the unpickling time of a plan, which every worker
        pays once per run before its first fit. The candidates pickle in one
        piece where their values are plain (:func:`~parcv.plan.space.shipped_candidates`).
        """
        return replace(self, units=(), candidates=shipped_candidates(self.candidates))

    def rows_of(self, outer: int | None) -> NDArray[np.intp]:
        """Return the rows the inner folds of ``outer`` split (all rows for None)."""
        if outer is None:
            return np.arange(self.n_samples, dtype=np.intp)
        return self.outer_folds[outer].train

    def fold_of(self, unit: Unit) -> Fold:
        """Return the rows a unit fits on and scores on (its kind's ``rows``)."""
        return kind_of(unit).rows(self, unit)

    def batch_of(self, unit: Unit) -> tuple[int, ...]:
        """Return the candidates of a batched unit: a fast-CV batch or an iteration path.

        The group starts at ``unit.candidate``.
        """
        groups: tuple[tuple[int, ...], ...] = getattr(self, kind_of(unit).groups)
        return next(b for b in groups if b[0] == unit.candidate)

    def record_units(self, unit: Unit) -> list[Unit]:
        """Return the units of the records a unit makes.

        One per candidate of a fast batch; one per checkpoint of an iteration path.
        """
        kind = kind_of(unit)
        if not kind.batched:
            return [unit]
        name = kind.records_as or unit.kind
        return [Unit(name, unit.outer, unit.inner, c) for c in self.batch_of(unit)]

    def unit_keys(self, unit: Unit) -> list[Key]:
        """Return the keys of the records a unit makes (one per candidate of a fast batch)."""
        return [u.key for u in self.record_units(unit)]

    def fit_record_keys(self, outer: int | None) -> Sequence[Key]:
        """Return the keys of the fit records that select the candidate of ``outer``."""
        return self.fit_record_keys_by_outer().get(outer, KeySequence())

    def fit_record_keys_by_outer(self) -> dict[int | None, KeySequence]:
        """:meth:`fit_record_keys` of every outer fold, in one pass over the units.

        A grid's keys are read from its ranges when iterated, never held:
        the 11M fit keys of 10 outer x 10 inner x 100,000 candidates would
        take a gigabyte.

        Examples
        --------
        >>> from sklearn.linear_model import Ridge
        >>> from parcv.plan.data import check_dataset
        >>> data = check_dataset(np.arange(24.0).reshape(12, 2), np.arange(12.0))
        >>> plan = build_plan(Ridge(), {"alpha": [1.0, 2.0]}, data, outer=2, inner=2,
        ...                   fast_cv=False)
        >>> keys = plan.fit_record_keys_by_outer()
        >>> sorted(keys, key=str), len(keys[0]), keys[0][0]
        ([0, 1, None], 4, ('fit', 0, 0, 0))
        """
        parts: dict[int | None, list[Any]] = {outer: [] for outer in self.inner_folds}
        for block in as_units(self.units).blocks:
            if isinstance(block, UnitGrid):
                if KINDS[block.kind].selects:
                    for outer, keys in block.outer_keys():
                        parts.setdefault(outer, []).append(keys)
                continue
            for unit in block:
                if kind_of(unit).selects:
                    these = parts.setdefault(unit.outer, [])
                    if not these or not isinstance(these[-1], list):
                        these.append([])
                    these[-1].extend(self.unit_keys(unit))
        return {outer: KeySequence(p) for outer, p in parts.items()}

    def share_group(self, unit: Unit) -> tuple[Any, ...] | None:
        """Return what a fit unit shares its whole fitted prefix with (None: nothing).

        Units with equal groups fit the same transformers on the same fold;
        a chunk that holds them all fits those transformers once.
        """
        if not self.prefixes or not kind_of(unit).shares_prefix:
            return None
        return (unit.outer, unit.inner, self.prefixes[unit.candidate][-1])


def check_error_score(error_score: Any) -> float | str:
    """Accept ``"raise"`` or a number."""
    if error_score == "raise":
        return "raise"
    if isinstance(error_score, numbers.Real) and not isinstance(error_score, bool):
        return float(error_score)
    raise ValueError(
        f"error_score must be 'raise' or a number; got {error_score!r}. "
        "Use float('nan') to record failures and go on, or 'raise' to stop at the first."
    )


def _check_flag(name: str, value: Any, meaning: str) -> None:
    """Refuse a flag that is not a bool (a string such as "yes" would pass as true)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {value!r}. Pass True {meaning}.")


def _check_estimator(estimator: Any) -> None:
    if isinstance(estimator, type):
        raise TypeError(
            f"estimator must be an instance, not the class {estimator.__name__}; "
            f"pass {estimator.__name__}()."
        )
    if not callable(getattr(estimator, "fit", None)) or not hasattr(estimator, "get_params"):
        raise TypeError(
            f"estimator must be a scikit-learn compatible estimator with fit() and "
            f"get_params(); got {estimator!r}. Wrap your model in a BaseEstimator subclass."
        )


def _inner_folds(
    inner: Any, data: Dataset, rows: Fold | None, classifier: bool, where: str
) -> Sequence[Fold]:
    if type(inner) is LeaveOneOut and (data.n_samples if rows is None else len(rows.train)) > 1:
        # Same folds as LeaveOneOut().split, without n train arrays of n - 1 rows.
        return leave_one_out_folds(np.arange(data.n_samples) if rows is None else rows.train)
    if rows is None:
        y, groups, X, params = data.y, data.groups, data.X, data.split_params
    else:
        idx = rows.train
        y = None if data.y is None else _safe_indexing(data.y, idx)  # None: unsupervised
        groups = None if data.groups is None else data.groups[idx]
        X = _safe_indexing(data.X, idx)
        params = rows_of_params(data.split_params, idx, data.n_samples)
    splitter = check_scheme(inner, y, classifier=classifier, where=where)
    folds = materialize_folds(splitter, X, y, groups, where=where, params=params)
    if rows is None:
        return folds
    return tuple(Fold(rows.train[f.train], rows.train[f.test]) for f in folds)


def build_plan(
    estimator: Any,
    space: Any,
    data: Dataset,
    *,
    inner: Any,
    outer: Any = None,
    scoring: Any = None,
    refit: bool | str = True,
    selection: Selection | None = None,
    error_score: Any = math.nan,
    return_train_score: bool = False,
    final: bool | None = None,
    fast_cv: Any = "auto",
    criteria: Any = None,
    racing: Any = None,
    interval: Any = None,
    confidence: Any = 0.9,
    ncv_repetitions: Any = 50,
    ncv_random_state: Any = 0,
    bbc: Any = False,
    predictions: Any = False,
    estimators: Any = False,
    iterations: Any = None,
    starts: dict[Key, KeptFit] | None = None,
    keep_fitted: bool = False,
    part: bool = False,
) -> Plan:
    """Validate everything and materialise the units of a run.

    Parameters
    ----------
    estimator : estimator object
    space : dict, list of dict, RandomSpace or None
    data : Dataset
    inner : int, splitter or ThreeWayHoldOut
        The CV that scores candidates (on all data, or inside each outer fold).
    outer : int, splitter, ThreeWayHoldOut or None, default=None
        Nested CV when given.
    scoring, refit
        As in :func:`parcv.search`.
    selection : Selection, default=None
        Rule that picks a candidate from its CV scores (best mean by default).
    error_score : "raise" or float, default=nan
    return_train_score : bool, default=False
    final : bool, default=None
        Refit the selection on all data; defaults to ``bool(refit)``.
    fast_cv : {"auto", True, False}, default="auto"
        Exact closed-form held-out predictions for linear smoothers, as in
        :func:`parcv.search`.
    criteria : sequence of str, CriteriaRequest or None, default=None
        Criteria to compute per candidate, as in :func:`parcv.search`.
    racing : Racing or None, default=None
        Race the candidates of every inner CV, as in :func:`parcv.search`.
    interval, confidence, ncv_repetitions, ncv_random_state
        The nested CV interval, as in :func:`parcv.cross_validate`; with
        ``outer``, of the whole selection, as in :func:`parcv.nested_cv`
        (where ``"bbc"`` means ``bbc=True``).
    bbc : bool, default=False
        BBC-CV of the selected candidate, as in :func:`parcv.search`.
    predictions : bool, str or sequence of str, default=False
        Test-fold outputs every fit and refit keeps, as ``return_predictions``
        of :func:`parcv.cross_validate` (see :func:`check_predictions`).
    estimators : bool, default=False
        Every fit keeps its fitted estimator, as ``return_estimator`` of
        :func:`parcv.cross_validate`.
    iterations : Iterations or None, default=None
        Score the iteration parameter as a path, as in :func:`parcv.search`.
    starts, keep_fitted
        A halving rung's continued fits (see :class:`Plan`).
    part : bool, default=False
        The plan is one part of a search in rounds (:mod:`parcv.plan.parts`).
        With a numeric ``error_score``, a candidate that scikit-learn's checks
        reject is then fitted and recorded as failed, even when every candidate
        of the part is (a sampler's one trial of a round): whether the search
        has anything to select is a question of all its rounds, not of one.

    Returns
    -------
    Plan

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.model_selection import LeaveOneOut
    >>> from parcv.plan.data import check_dataset
    >>> data = check_dataset(np.arange(20.0).reshape(10, 2), np.arange(10.0))
    >>> plan = build_plan(Ridge(), {"alpha": [0.1, 1.0]}, data, inner=LeaveOneOut())
    >>> plan.fast_cv, len(plan.units), plan.n_units
    (True, 1, 3)
    """
    _check_estimator(estimator)
    _check_flag("return_train_score", return_train_score, "to score each fit on its train rows")
    if outer is not None and isinstance(interval, str) and interval == "bbc":
        bbc = True  # a nested CV's interval="bbc": BBC-CV of the selection on all data
    candidates = check_space(space)
    path, choices = _check_path(
        check_iterations(iterations), estimator, candidates,
        dict(fast_cv=fast_cv, racing=racing, bbc=bbc, return_predictions=predictions,
             return_estimator=estimators),
        n_samples=data.n_samples,
    )  # fmt: skip
    paths: tuple[tuple[int, ...], ...] = ()
    if path is not None:
        candidates, paths = expand_paths(candidates, path)
        fast_cv = False
    check_candidate_params(estimator, candidates)
    raises = isinstance(error_score, str) and error_score == "raise"
    check_data_for(estimator, data, [c.params for c in candidates], each=raises, part=part)
    error = check_error_score(error_score)
    if error == "raise" or (space is not None and not part):
        # The fits would stop at the first rejected candidate, or have nothing to select from.
        check_candidate_values(estimator, candidates, each=error == "raise")
    selects = len(candidates) > 1 or bool(refit)
    score_spec: Scoring = check_scoring_spec(estimator, scoring, refit, selects=selects)
    params = [c.params for c in candidates]
    check_metric_target(score_spec, data.y, given=scoring, estimator=estimator, params=params,
                        selects=selects)  # fmt: skip
    if error == "raise" or not part:
        check_response_methods(estimator, params, score_spec, each=error == "raise",
                               given=scoring)  # fmt: skip
    request = check_criteria(criteria, estimator)
    race = check_racing(racing, fast_cv)
    methods = check_predictions(predictions, estimator, candidates)
    _check_flag("return_estimator", estimators, "to keep the estimator fitted on each fold")
    if estimators and fast_cv is True:
        raise ValueError(
            "fast_cv=True and return_estimator=True do not go together: fast CV fits no "
            "estimator per fold. Pass fast_cv=False (or the default 'auto') to refit every fold."
        )
    if methods and fast_cv is True:
        raise ValueError(
            "fast_cv=True and return_predictions do not go together: fast CV keeps one "
            f"score per fold, not the predictions (asked for {list(methods)!r}). Pass "
            "fast_cv=False (or the default 'auto') to refit every fold and keep them."
        )
    if race is not None or bbc is True or methods or estimators:
        fast_cv = False  # a race needs one score per fold as it comes; BBC, per-sample losses
    do_final = bool(refit) if final is None else final
    outer_folds, inner_folds = _all_folds(estimator, data, inner, outer, do_final)
    prefixes = _prefixes(estimator, candidates, data)
    wanted = _interval_request(
        interval, estimator, (scoring, refit), inner_folds,
        options=(confidence, ncv_repetitions, ncv_random_state, outer, len(candidates)),
        n_outer=len(outer_folds),
        grouped=data.groups is not None or "groups" in data.split_params,
    )  # fmt: skip
    ncv = None if wanted is None else wanted.fits(data.n_samples)
    if ncv is not None and outer is not None:
        outer_folds, inner_folds = _with_selections(ncv, estimator, data, inner,
                                                    (outer_folds, inner_folds))  # fmt: skip
    bbc_request = _bbc_request(bbc, estimator, (scoring, refit), race, inner_folds,
                               confidence=confidence, n_samples=data.n_samples)  # fmt: skip
    _check_race_folds(race, inner_folds)
    if data.score_params and (wanted is not None or bbc_request is not None):
        raise ValueError(
            f"the scorers take metadata ({sorted(data.score_params)!r}), but the nested CV "
            "interval and BBC-CV score per-sample losses that do not take it. Drop interval= "
            "and bbc=, or the scorers' metadata."
        )
    decision = decide_fast_cv(
        fast_cv, estimator, candidates, data, inner_folds, scoring=score_spec,
        return_train_score=bool(return_train_score),
        rows_of=lambda o: np.arange(data.n_samples) if o is None else outer_folds[o].train,
    )  # fmt: skip
    fits: Sequence[Unit] = make_units(
        inner_folds,
        len(candidates),
        decision.batches,
        request is not None,
        order=None if decision.used or paths else prefixes,
    )
    path_methods = tuple(c.method for c in choices)
    if path is not None:
        fits = _path_units(fits, inner_folds, paths, path_methods)
    return Plan(
        estimator=estimator,
        candidates=candidates,
        scoring=score_spec,
        outer_folds=outer_folds,
        inner_folds=inner_folds,
        units=as_units(fits) + _ncv_units(None if outer is not None else ncv),
        refit_outers=tuple(range(len(outer_folds))),
        final=do_final,
        selection=check_selection(selection, params),
        error_score=error,
        return_train_score=bool(return_train_score),
        n_samples=data.n_samples,
        fast_cv=decision.used,
        batches=decision.batches,
        criteria=request,
        prefixes=() if decision.used else prefixes,
        racing=race,
        interval=wanted,
        ncv=ncv,
        bbc=bbc_request,
        predictions=methods,
        estimators=bool(estimators),
        iterations=path,
        paths=paths,
        path_methods=path_methods,
        starts=dict(starts or {}),
        keep_fitted=bool(keep_fitted),
    )


def _check_path(
    iterations: Iterations | None, estimator: Any, candidates: Sequence[Candidate],
    options: dict[str, Any], *, n_samples: int,
) -> tuple[Iterations | None, tuple[PathChoice, ...]]:  # fmt: skip
    """Refuse what an iteration path does not go with, before anything runs.

    Returns the path and how each point's path is grown (a shortcut where
    it is exact, else separate fits: said once in the log).
    """
    if iterations is None:
        return None, ()
    given = {
        name: value for name, value in options.items()
        if value not in (None, False, "auto") and not (name == "fast_cv" and value is False)
        and not (name == "racing" and iterations.patience is None)
    }  # fmt: skip
    if given:
        name = next(iter(given))
        raise ValueError(
            f"iterations= and {name}={given[name]!r} do not go together: an iteration path "
            "scores each fold at every checkpoint of one fit (with patience, every fold in "
            "step, where racing drops candidates fold by fold; fast CV and BBC-CV, "
            "predictions and kept estimators are per fit). "
            f"Drop {name}= or iterations= (racing goes with iterations without patience)."
        )
    # Every model family must grow the path (checked before any fit).
    choices = tuple(choose_path(estimator, iterations, c.params, n_samples=n_samples)
                    for c in candidates)  # fmt: skip
    fallbacks = [c.fallback for c in choices if c.fallback is not None]
    log_fallbacks(
        f"iterations over {iterations.param!r}: {len(fallbacks)} of {len(choices)} point(s) "
        "are fitted from scratch at every checkpoint",
        fallbacks,
    )
    return iterations, choices


def _path_units(
    fits: Sequence[Unit],
    inner_folds: dict[int | None, Sequence[Fold]],
    paths: tuple[tuple[int, ...], ...],
    methods: tuple[str, ...],
) -> tuple[Unit, ...]:
    """The units of iteration paths: one per (fold, path).

    A ``"separate"`` path keeps the ordinary ``fit`` units of its (point,
    count) candidates. (Early stopping runs in rounds, each a plan of such
    units over a window of the checkpoints: :mod:`parcv.strategies.early_stopping`.)
    """
    others = [u for u in fits if u.kind != "fit"]
    separate = {c for p, m in zip(paths, methods, strict=True) if m == "separate" for c in p}
    plain = [u for u in fits if u.kind == "fit" and u.candidate in separate]
    grown = [p for p, m in zip(paths, methods, strict=True) if m != "separate"]
    return (*others, *plain, *(Unit("path", o, i, p[0]) for o, folds in inner_folds.items()
                               for i in range(len(folds)) for p in grown))  # fmt: skip


def check_predictions(
    predictions: Any, estimator: Any, candidates: Sequence[Candidate] = ()
) -> tuple[str, ...]:
    """Check ``return_predictions``: the methods whose test-fold output the units keep.

    Parameters
    ----------
    predictions : bool, str or sequence of str
        ``False``: none; ``True``: ``("predict",)``; a method name or a list
        of them from :data:`~parcv.plan.records.PREDICT_METHODS`.
    estimator : estimator object
    candidates : sequence of Candidate, default=()
        Every candidate must have the methods (checked on the estimator as
        each candidate configures it).

    Returns
    -------
    tuple of str
        Distinct method names in the order of ``PREDICT_METHODS``.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> check_predictions(True, LogisticRegression())
    ('predict',)
    >>> check_predictions(["predict_proba", "predict"], LogisticRegression())
    ('predict', 'predict_proba')
    >>> check_predictions("transform", LogisticRegression())
    Traceback (most recent call last):
    ...
    ValueError: return_predictions must be True, False, or method names among ['predict', \
'predict_proba', 'predict_log_proba', 'decision_function']; got 'transform'. Pass e.g. \
return_predictions=True or return_predictions=('predict', 'predict_proba').
    """
    if predictions is False or predictions is None:
        return ()
    names: list[Any]
    if predictions is True:
        names = ["predict"]
    elif isinstance(predictions, str):
        names = [predictions]
    elif isinstance(predictions, (list, tuple)) and predictions:
        names = list(predictions)
    else:
        names = [predictions]
    bad = [n for n in names if not isinstance(n, str) or n not in PREDICT_METHODS]
    if bad:
        raise ValueError(
            "return_predictions must be True, False, or method names among "
            f"{list(PREDICT_METHODS)!r}; got {predictions!r}. Pass e.g. return_predictions=True "
            "or return_predictions=('predict', 'predict_proba')."
        )
    methods = tuple(m for m in PREDICT_METHODS if m in names)
    configured = [estimator]
    for c in candidates:
        if any(hasattr(v, "get_params") for v in c.params.values()):  # another model family
            configured.append(clone(estimator).set_params(**clone(c.params, safe=False)))
    for model in configured:
        missing = [m for m in methods if not hasattr(model, m)]
        if missing:
            raise ValueError(
                f"return_predictions asks for {missing!r}, which {type(model).__name__} does "
                f"not have (estimator {stable_repr(model)[:80]}). Ask only for methods every "
                "candidate has, e.g. return_predictions=True for 'predict'."
            )
    return methods


def _metric_name(estimator: Any, scoring: Any, refit: Any) -> str:
    """The name of the metric that selects (or is reported), for the per-sample checks."""
    if scoring is None:
        return "accuracy" if is_classifier(estimator) else "r2"
    if isinstance(refit, str):
        return refit
    listed = list(scoring) if isinstance(scoring, (list, tuple)) else [scoring]
    # With several metrics the interval is of the first one's loss.
    return listed[0] if listed and isinstance(listed[0], str) else repr(scoring)


def _bbc_request(
    bbc: Any,
    estimator: Any,
    metrics: tuple[Any, Any],
    racing: Racing | None,
    inner_folds: dict[int | None, Sequence[Fold]],
    *,
    confidence: Any,
    n_samples: int,
) -> BBCRequest | None:
    """Check ``bbc=`` against the run's all-data search (``metrics``: scoring, refit)."""
    if bbc is True and racing is not None:
        raise ValueError(
            "bbc=True and racing do not go together: a dropped candidate has no "
            "out-of-fold prediction for most rows. Drop one of them."
        )
    if bbc is False or bbc is None:
        return None  # as check_bbc says, without reading the folds (a round's part, each)
    folds = inner_folds.get(None)
    partition = bool(folds) and as_partition(folds, np.arange(n_samples)) is not None  # type: ignore[arg-type]
    return check_bbc(bbc, metric=_metric_name(estimator, *metrics), confidence=confidence,
                     partition=partition, searches=folds is not None)  # fmt: skip


def _ncv_units(ncv: NestedCVPlan | None) -> tuple[Unit, ...]:
    """One ``ncv`` unit per fit of the nested CV interval."""
    return () if ncv is None else tuple(Unit("ncv", None, i, 0) for i in range(ncv.n_fits))


def _interval_request(
    interval: Any,
    estimator: Any,
    metrics: tuple[Any, Any],
    inner_folds: dict[int | None, Sequence[Fold]],
    *,
    options: tuple[Any, Any, Any, Any, int],
    n_outer: int,
    grouped: bool,
) -> IntervalRequest | None:
    """Check ``interval=`` against the run (``metrics``: scoring, refit), before any fit.

    Without ``outer``: one candidate and a per-sample loss. With ``outer``
    (nested CV): the interval of the whole selection, K = the outer folds.
    """
    confidence, repetitions, seed, outer, n_candidates = options
    if interval is None:
        return None
    nested = outer is not None
    if not nested and n_candidates != 1:
        raise ValueError(
            f"interval={interval!r} is for cross_validate of one model; this run has "
            f"{n_candidates} candidates. Use nested_cv(..., interval='ncv') for the interval "
            "of the whole selection, cross-validate the chosen model with interval='ncv', or "
            "drop interval=."
        )
    if grouped and interval != "bbc":
        raise ValueError(
            f"interval={interval!r} assigns rows to folds at random, which would split the "
            "groups given with groups=; it is not available for grouped data. Drop interval=."
        )
    refit = metrics[1] if nested else None
    return check_interval(interval, confidence=confidence,
                          metric=_metric_name(estimator, metrics[0], refit),
                          n_folds=n_outer if nested else len(inner_folds[None]),
                          n_repetitions=repetitions, random_state=seed,
                          caller="nested_cv" if nested else "cross_validate")  # fmt: skip


def _with_selections(
    ncv: NestedCVPlan,
    estimator: Any,
    data: Dataset,
    inner: Any,
    folds: tuple[tuple[Fold, ...], dict[int | None, Sequence[Fold]]],
) -> tuple[tuple[Fold, ...], dict[int | None, Sequence[Fold]]]:
    """The nested CV's folds with the interval's selections after its own outer folds.

    Each (train, test) pair of the interval is one more outer fold: the inner CV
    of ``inner`` on its train rows selects, the refit scores on its test rows.
    """
    outer_folds, inner_folds = list(folds[0]), dict(folds[1])
    classifier = is_classifier(estimator)
    for fit in ncv.units:
        fold = Fold(ncv.train_indices(fit), ncv.test_indices(fit))
        inner_folds[len(outer_folds)] = _inner_folds(inner, data, fold, classifier, "inner")
        outer_folds.append(fold)
    return tuple(outer_folds), inner_folds


def check_racing(racing: Any, fast_cv: Any) -> Racing | None:
    """Accept ``None`` or a :class:`~parcv.stats.racing.Racing`, and no forced fast CV.

    Examples
    --------
    >>> check_racing(None, "auto") is None
    True
    >>> check_racing("anova", "auto")
    Traceback (most recent call last):
    ...
    TypeError: racing must be a parcv.Racing or None; got 'anova'. Use e.g. \
racing=parcv.Racing(burn_in=3, alpha=0.05).
    """
    if racing is None:
        return None
    if not isinstance(racing, Racing):
        raise TypeError(
            f"racing must be a parcv.Racing or None; got {racing!r}. Use e.g. "
            "racing=parcv.Racing(burn_in=3, alpha=0.05)."
        )
    if fast_cv is True:
        raise ValueError(
            "racing and fast_cv=True do not go together: fast CV scores every fold of a "
            "candidate at once, so there is nothing to race. Drop fast_cv=True, or racing."
        )
    return racing


def _check_race_folds(racing: Racing | None, inner_folds: dict[Any, Sequence[Fold]]) -> None:
    """A race decides before the last fold: it needs more folds than its burn-in."""
    if racing is None:
        return
    n_folds = min(len(folds) for folds in inner_folds.values())
    if n_folds <= racing.burn_in:
        raise ValueError(
            f"racing with burn_in={racing.burn_in} needs more than {racing.burn_in} CV folds "
            f"(it drops candidates after fold {racing.burn_in}, before the last); the CV has "
            f"{n_folds} folds. Use more folds (e.g. cv=10) or a smaller burn_in."
        )


def _prefixes(
    estimator: Any, candidates: tuple[Candidate, ...], data: Dataset
) -> tuple[tuple[int, ...], ...]:
    """Candidates' prefix ids when a Pipeline's units can share fitted steps, else ()."""
    if len(candidates) < 2 or sharing_problem(estimator, data):
        return ()
    ids = prefix_ids(estimator, candidates)
    shared = any(len({row[j] for row in ids}) < len(ids) for j in range(len(ids[0])))
    return ids if shared else ()


def _all_folds(
    estimator: Any, data: Dataset, inner: Any, outer: Any, do_final: bool
) -> tuple[tuple[Fold, ...], dict[int | None, Sequence[Fold]]]:
    """Materialise the outer folds and the inner folds of every outer fold.

    In nested CV each inner split takes a copy of ``inner`` as it was given, as
    scikit-learn's ``cross_validate(GridSearchCV(cv=inner), cv=outer)`` clones
    the search (and so its splitter) for every outer fold: a splitter holding a
    ``RandomState`` draws the same way in each, not on from where the last left.
    """
    classifier = is_classifier(estimator)
    outer_folds: tuple[Fold, ...] = ()
    inner_folds: dict[int | None, Sequence[Fold]] = {}
    if isinstance(outer, ThreeWayHoldOut) and inner is None:
        inner = outer.inner_splitter()
    nested = outer is not None
    if do_final or outer is None:
        a_scheme = inner.inner_splitter() if isinstance(inner, ThreeWayHoldOut) else inner
        where = "cv" if outer is None else "inner"  # the user's parameter, named in errors
        a_scheme = _fresh(a_scheme) if nested else a_scheme
        inner_folds[None] = _inner_folds(a_scheme, data, None, classifier, where)
    if outer is not None:
        outer_splitter = check_scheme(outer, data.y, classifier=classifier, where="outer")
        outer_folds = materialize_folds(outer_splitter, data.X, data.y, data.groups, where="outer",
                                        params=data.split_params)  # fmt: skip
        for o, fold in enumerate(outer_folds):
            inner_folds[o] = _inner_folds(_fresh(inner), data, fold, classifier, "inner")
    return outer_folds, inner_folds


def _fresh(splitter: Any) -> Any:
    """A copy of a splitter as scikit-learn's ``clone`` makes one of a search's ``cv``."""
    try:
        return clone(splitter, safe=False)
    except TypeError:  # cannot be copied (a generator of splits): used as it is
        return splitter


def make_units(
    inner_folds: dict[int | None, Sequence[Fold]],
    n_candidates: int,
    batches: tuple[tuple[int, ...], ...],
    criteria: bool,
    *,
    order: tuple[tuple[int, ...], ...] | None = None,
) -> UnitArray:
    """Build the units that run before the refits, criteria first.

    Parameters
    ----------
    inner_folds : dict of outer fold to folds
    n_candidates : int
    batches : tuple of tuple of int
        Fast-CV batches; empty for one ``fit`` unit per (fold, candidate).
    criteria : bool
        Whether one ``criteria`` unit per (outer fold, candidate) runs.
    order : tuple of tuple of int, default=None
        Candidates' prefix ids: within a fold, candidates that share fitted
        steps come next to each other (stable, so otherwise in index order).

    Returns
    -------
    UnitArray
        Without batches, the fit units are one :class:`~parcv.plan.units.UnitGrid`
        (fold by fold, candidates ranked), which costs no memory per unit.

    Examples
    --------
    >>> [u.key for u in make_units({None: [None] * 2}, 2, ((0, 1),), True)]
    [('criteria', None, 0), ('criteria', None, 1), ('fit', None, None, 0)]
    >>> [u.key for u in make_units({0: [None] * 2}, 2, (), False, order=((1,), (0,)))]
    [('fit', 0, 0, 1), ('fit', 0, 0, 0), ('fit', 0, 1, 1), ('fit', 0, 1, 0)]
    """
    listed = tuple(Unit("criteria", o, None, c) for o in inner_folds if criteria
                   for c in range(n_candidates))  # fmt: skip
    if batches:
        fits: tuple[Unit, ...] | UnitGrid = tuple(
            Unit("fit", o, None, b[0]) for o in inner_folds for b in batches
        )
    else:
        ranked = (
            sorted(range(n_candidates), key=lambda c: order[c]) if order else range(n_candidates)
        )
        folds = tuple((o, len(f)) for o, f in inner_folds.items())
        fits = UnitGrid("fit", folds, tuple(ranked) if order else range(n_candidates))
    return UnitArray((listed, fits))


# What the plan fingerprint covers, as a mismatch message names it (see _fingerprint_parts).
FINGERPRINTED = (
    "data", "estimator", "space", "folds", "scoring", "refit", "return_train_score",
    "fast_cv", "criteria", "interval", "BBC-CV", "return_predictions", "return_estimator",
    "permutations", "metadata", "unit kinds", "parcv version",
)  # fmt: skip


def _fingerprint_parts(plan: Plan, data: Dataset) -> dict[str, Any]:
    """The values the fingerprint tokens, under the names of :data:`FINGERPRINTED`."""
    permutations = plan.permutations
    # Only when set, so that the fingerprints of plans without them stay as they were.
    extra: dict[str, Any] = {"return_estimator": True} if plan.estimators else {}
    if plan.increments:
        extra["increments"] = list(plan.increments)  # the steps of incremental fits
    if plan.iterations is not None:  # fits are scored along iteration paths
        extra["iterations"] = (plan.iterations, plan.path_methods)
    parts = {
        "data": data_token(data),
        "estimator": plan.estimator,
        "space": [c.params for c in plan.candidates],
        "folds": [_folds_value(f) for f in (plan.outer_folds, *plan.inner_folds.values())],
        "scoring": dict(plan.scoring.scorers),
        "refit": plan.final,
        "return_train_score": plan.return_train_score,
        # Fast CV agrees with refits to rounding, not bit for bit: never mix the two in a store.
        "fast_cv": plan.fast_cv,
        "criteria": plan.criteria,
        "interval": plan.interval,  # its fits are units of the plan
        "BBC-CV": plan.bbc,  # the fits keep per-sample losses
        "return_predictions": plan.predictions,  # fits and refits keep test-fold outputs
        **extra,  # fits keep their fitted estimators; incremental fits' steps
        "permutations": None
        if permutations is None
        else (permutations.indices, [_folds_value(f) for f in permutations.folds]),
        # A plan whose units keep other things (predictions of bootstrap rounds).
        "unit kinds": sorted(as_units(plan.units).kinds()),
        "parcv version": __version__,
    }
    if data.score_params or data.split_params or data.routed:
        # Which metadata each scorer and the splitter take (their values are in "data"); a
        # plan without any keeps the fingerprint it had before metadata was routed.
        parts["metadata"] = (
            {name: sorted(p) for name, p in data.score_params.items()},
            sorted(data.split_params),
            data.routed,
        )
    return parts


def _folds_value(folds: Sequence[Fold]) -> Any:
    if isinstance(folds, PartitionFolds):
        return ("partition", folds.leave_one_out, folds.rows, folds.tests, folds.offsets)
    return [(fold.train, fold.test) for fold in folds]


def fingerprint(plan: Plan, data: Dataset, *, tokenizer: Tokenizer | None = None) -> str:
    """Token what determines the fits' numbers: data, estimator, space, folds, scorers, version.

    How a candidate is chosen from the fits is left out: see :func:`choice_digest`.
    :data:`FINGERPRINTED` names every part.

    Parameters
    ----------
    plan : Plan
    data : Dataset
    tokenizer : Tokenizer, optional
        The call's, which its content keys use too: the code reached is read once.

    Returns
    -------
    str
        Hex digest; equal plans on equal data give equal fingerprints,
        whatever backend or chunking runs them.
    """
    return (
        (Tokenizer() if tokenizer is None else tokenizer)
        .token(_fingerprint_parts(plan, data))
        .hex()
    )


def choice_digest(plan: Plan) -> str:
    """Token how a candidate is chosen from the fits: refit metric, selection, error_score, race.

    Refit records and failed fits' scores depend on it; other fit records do not.
    """
    selection = (plan.selection.rule, plan.selection.complexity)
    # A race drops candidates: it is part of how one is chosen.
    return token_hex(plan.scoring.refit, selection, plan.error_score, plan.racing)
