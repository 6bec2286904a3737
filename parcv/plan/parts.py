"""A strategy's rounds as plans: each part of a round, and the refit after a search.

A search that runs in rounds (successive halving, early stopping, a sampler)
starts from a *base plan*: the folds of every search (the inner folds of each
outer fold, and of all data) and the options every round shares (scoring,
error_score, racing, ...), with no units. Each part a strategy proposes is
then an ordinary search plan of its own: its candidates on the search's folds
(subsampled for a rows resource), built and checked by :func:`build_plan`.
After a search, its winner is refitted by a plan of one candidate: on the
outer fold's training rows and scored on its test rows (nested CV), or on all
data (the model to ship). Those refits are units of the same kinds, with the
same content keys, as the refits of a one-round nested CV: a store shares them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from parcv.plan.build import Plan, build_plan
from parcv.plan.data import Dataset
from parcv.plan.halving import subsample_folds
from parcv.plan.iterations import Iterations
from parcv.plan.kept import KeptFit
from parcv.plan.kinds import Key
from parcv.plan.records import Record
from parcv.plan.space import Candidate
from parcv.plan.splits import Fold

__all__ = [
    "PartBuilder",
    "RoundOptions",
    "base_plan",
    "continued",
    "refit_plan",
    "search_rows",
]


@dataclass(frozen=True)
class RoundOptions:
    """What every part plan of a run shares: the search's options, as ``build_plan`` takes them.

    Parameters
    ----------
    scoring : object
        As :func:`parcv.search`'s ``scoring``.
    refit : bool or str
        The refit metric's name with several metrics (or True).
    error_score : "raise" or float
    return_train_score : bool
    racing : Racing or None
        Each part races its candidates over its folds.
    iterations : Iterations or None
        Each part scores its candidates as iteration paths (at its ``window``).
    predictions : tuple of str
        Test-fold outputs every fit keeps.
    bbc : bool, default=False
        The fits of the search on all data keep their per-sample losses, for
        BBC-CV of its selection (at ``confidence``), as a grid search's do.
    confidence : float, default=0.9
        The level of BBC-CV's interval.
    """

    scoring: Any
    refit: Any
    error_score: Any
    return_train_score: bool
    racing: Any = None
    iterations: Iterations | None = None
    predictions: Any = False
    bbc: bool = False
    confidence: Any = 0.9


def base_plan(
    estimator: Any,
    space: Any,
    data: Dataset,
    *,
    inner: Any,
    outer: Any,
    options: RoundOptions,
    interval: Mapping[str, Any] | None = None,
) -> Plan:
    """The plan of a run in rounds before its first round: every search's folds, no units.

    Its candidates are the space's (none for a sampler's distributions); its
    folds are those of the searches: ``inner_folds[None]`` (all data) and
    ``inner_folds[o]`` per outer fold ``o``. It is what the store describes as
    the run's plan (``parcv inspect``, the fingerprint) and what the workers
    receive first. ``interval`` holds a nested CV's ``interval``,
    ``confidence``, ``ncv_repetitions`` and ``ncv_random_state``, as
    :func:`build_plan` takes them: with ``"ncv"``, the interval's selections
    are outer folds after the nested CV's own (:attr:`Plan.nested_outers`),
    each searched by the strategy as an outer fold is.
    """
    plan = build_plan(
        estimator, space, data, inner=inner, outer=outer, scoring=options.scoring,
        refit=options.refit, error_score=options.error_score,
        return_train_score=options.return_train_score, final=True, fast_cv=False,
        predictions=options.predictions, bbc=options.bbc, **(interval or {}),
    )  # fmt: skip
    return replace(plan, units=(), refit_outers=(), final=False)


def search_rows(base: Plan, key: int | None) -> int:
    """Rows the search on outer fold ``key`` (None: all data) splits."""
    return int(base.rows_of(key).size)


@dataclass
class PartBuilder:
    """Builds the part plans of one search, in the order its rounds are proposed."""

    estimator: Any
    data: Dataset
    base: Plan
    key: int | None
    options: RoundOptions

    def build(
        self,
        candidates: tuple[dict[str, Any], ...],
        *,
        n_rows: int | None = None,
        subsample_seed: int | np.random.RandomState | None = None,
        window: tuple[int, ...] | None = None,
        starts: dict[Key, KeptFit] | None = None,
        keep_fitted: bool = False,
    ) -> Plan:
        """The plan of one part: ``candidates`` on this search's folds.

        With ``n_rows``, every fold is subsampled with ``subsample_seed`` (an
        int, or a RandomState consumed fold after fold: see
        :class:`~parcv.strategies.strategy.Part`); the driver resolves a part's
        None to a seed from its round's, so a part plan never draws fresh rows.
        The rows drawn are the folds of the plan, in every unit's content key.
        ``starts`` are fitted estimators its fits continue (see :func:`continued`);
        ``keep_fitted`` keeps its own for the next part to continue.
        """
        folds = self.base.inner_folds[self.key]
        if n_rows is None:
            cv = [(f.train, f.test) for f in folds]
        else:
            if subsample_seed is None:
                raise ValueError(
                    "a subsample of n_rows rows needs its seed; got subsample_seed=None. The "
                    "driver draws it from the round's seed (strategy.subsample_seed)."
                )
            rows = search_rows(self.base, self.key)
            cv = subsample_folds(folds, n_rows, rows, subsample_seed)
        iterations = self.options.iterations
        if iterations is not None:
            iterations = replace(iterations, patience=None, window=window)
        o = self.options
        return build_plan(
            self.estimator, [{k: [v] for k, v in c.items()} for c in candidates], self.data,
            inner=cv, scoring=o.scoring, refit=o.refit, final=False,
            error_score=o.error_score, return_train_score=o.return_train_score,
            racing=o.racing, iterations=iterations, predictions=o.predictions,
            fast_cv=False, starts=starts, keep_fitted=keep_fitted,
            bbc=o.bbc and self.key is None, confidence=o.confidence, part=True,
        )  # fmt: skip


def continued(
    previous: Plan,
    records: Mapping[Key, Record],
    continues: Sequence[int],
    warm_start: str,
) -> dict[Key, KeptFit]:
    """The starts of a part whose row ``j`` continues row ``continues[j]`` of ``previous``.

    Each kept fit of the previous part (a :class:`~parcv.plan.kept.KeptFit`,
    returned with ``keep_fitted``) is set to grow by a warm start
    (``warm_start`` names the parameter, as
    :func:`~parcv.plan.shortcuts.continues_exactly` gave it where the growth is
    exact), its bytes handed on unread; a fit read back from a store has no
    kept fit and starts from scratch, with the same numbers.
    """
    starts: dict[Key, KeptFit] = {}
    n_folds = len(previous.inner_folds[None])
    for new, old in enumerate(continues):
        for i in range(n_folds):
            record = records.get(("fit", None, i, int(old)))
            if record is not None and isinstance(record.estimator, KeptFit):
                starts[("fit", None, i, new)] = record.estimator.grown_by(warm_start)
    return starts


def refit_plan(base: Plan, key: int | None, params: dict[str, Any]) -> Plan:
    """The refit of a search's winner: on outer fold ``key``'s rows, or on all data (None).

    One candidate and no inner CV: the plan selects it without fits, and its
    ``refit`` (scored on the outer fold's test rows) or ``final`` unit is keyed
    as a one-round nested CV's refit of the same candidate on the same rows.
    """
    candidates = (Candidate(0, dict(params)),)
    if key is None:
        return replace(base, candidates=candidates, outer_folds=(), inner_folds={None: ()},
                       units=(), refit_outers=(), final=True, prefixes=(), iterations=None,
                       paths=(), path_methods=(), interval=None, ncv=None)  # fmt: skip
    # The other outer folds as no rows: a nested CV interval's hundreds of selections
    # would otherwise ship, hash and store every fold with each refit.
    empty = np.empty(0, dtype=np.intp)
    outer = tuple(f if o == key else Fold(empty, empty) for o, f in enumerate(base.outer_folds))
    return replace(base, candidates=candidates, outer_folds=outer, inner_folds={key: ()},
                   units=(), refit_outers=(key,), final=False, prefixes=(), iterations=None,
                   paths=(), path_methods=())  # fmt: skip
