"""Successive halving and Hyperband as strategies: a rung per round, decided on finished rungs.

:class:`HalvingStrategy` proposes scikit-learn's rungs (``HalvingGridSearchCV``'s
schedule and promotion rule, :mod:`parcv.plan.halving`): every candidate with
the first resource, then the best ``1 / factor`` of the last rung with
``factor`` times the resource. :class:`HyperbandStrategy` runs dask-ml's
brackets side by side, one part per bracket in each round, each bracket a
halving search over its own draws of a ``RandomSpace``; the winner is the best
last-rung winner over the brackets. Each round's decision (the candidates kept,
the resource) is stored with the run, so ``parcv.load`` rebuilds every rung.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from parcv.plan.halving import (
    Halving,
    HalvingSchedule,
    Hyperband,
    check_constant_splits,
    check_resource,
    plan_schedule,
    promote,
    resolve_resources,
    with_resource,
)
from parcv.plan.shortcuts import continues_exactly
from parcv.plan.space import RandomSpace, check_space
from parcv.strategies.strategy import (
    Choice,
    FinishedPart,
    FinishedRound,
    Part,
    Proposer,
    Round,
    RoundBound,
    Schedule,
    SearchContext,
    best_of,
)

__all__ = ["HalvingStrategy", "HyperbandStrategy", "bracket_seeds"]


def _schedule(halving: Halving, n_candidates: int, context: SearchContext) -> HalvingSchedule:
    low, high = resolve_resources(
        halving, n_samples=context.n_samples, n_splits=context.n_splits,
        n_classes=context.n_classes,
    )  # fmt: skip
    return plan_schedule(halving, n_candidates, low, high)


def _schedule_json(schedule: HalvingSchedule) -> dict[str, Any]:
    return {
        "n_resources": list(schedule.n_resources),
        "n_candidates": list(schedule.n_candidates),
        "min_resources": schedule.min_resources,
        "max_resources": schedule.max_resources,
        "n_required_iterations": schedule.n_required_iterations,
        "n_possible_iterations": schedule.n_possible_iterations,
        "n_remaining_candidates": schedule.n_remaining_candidates,
        "n_iterations": schedule.n_iterations,
    }


def _schedule_lines(rungs: _Rungs) -> list[str]:
    """scikit-learn's verbose lines about the rungs (logged with ``verbose``)."""
    s, h = rungs.schedule, rungs.halving
    return [
        f"n_iterations: {s.n_iterations}",
        f"n_required_iterations: {s.n_required_iterations}",
        f"n_possible_iterations: {s.n_possible_iterations}",
        f"min_resources_: {s.min_resources}",
        f"max_resources_: {s.max_resources}",
        f"aggressive_elimination: {h.aggressive_elimination}",
        f"factor: {h.factor}",
    ]


def _kept(done: FinishedPart, factor: float) -> list[int]:
    """The rows of a finished rung that go on (raced-out rows rank below every other)."""
    means = np.array(done.means, dtype=np.float64)
    means[done.dropped] = np.nan
    return [int(i) for i in promote(means, math.ceil(len(means) / factor))]


@dataclass
class _Rungs:
    """The rungs of one halving search over ``points`` (ids ``ids``), proposed one by one."""

    halving: Halving
    points: tuple[dict[str, Any], ...]
    ids: tuple[int, ...]
    schedule: HalvingSchedule
    label: str = ""
    warm_start: str | None = None  # the parameter that continues a fit exactly, if any
    # The seed of every rung's subsample (a rows resource): the halving's random_state, one
    # RandomState per search consumed rung after rung; None: the driver's, from each round's seed.
    subsample_seed: int | np.random.RandomState | None = None

    def part(self, rung: int, previous: FinishedPart | None) -> tuple[Part, dict[str, Any]]:
        """Rung ``rung``'s part, from the rung before it (None for the first)."""
        if previous is None:
            points, ids = self.points, self.ids
            kept: list[int] = []
        else:
            kept = _kept(previous, self.halving.factor)
            by_id = dict(zip(self.ids, self.points, strict=True))
            ids = tuple(previous.ids[i] for i in kept)
            points = tuple(by_id[i] for i in ids)
        r = self.schedule.n_resources[rung]
        candidates = tuple(with_resource(points, self.halving, r))
        by_rows = self.halving.resource == "n_samples"
        rows = r if by_rows else None
        label = self.label  # the same in every rung: which fits a rung continues
        # A promoted candidate's fits grow by a warm start from the rung before, where exact.
        grows = None if by_rows else self.warm_start
        last = rung == self.schedule.n_iterations - 1
        decision: dict[str, Any] = {"rung": rung, "n_resources": r, "candidates": list(ids)}
        decision["log"] = ["-" * 10, f"iter: {rung}", f"n_candidates: {len(ids)}",
                           f"n_resources: {r}"]  # fmt: skip
        if previous is not None:
            decision["kept_rows"] = kept
        part = Part(candidates, ids, n_rows=rows, resource=r, label=label, grows=grows,
                    continues=None if previous is None else tuple(kept),
                    keep_fitted=grows is not None and not last,
                    subsample_seed=self.subsample_seed if by_rows else None)  # fmt: skip
        return part, decision

    @property
    def n_rounds(self) -> int:
        return self.schedule.n_iterations


@dataclass
class _HalvingProposer:
    rungs: _Rungs

    def propose(
        self, history: Sequence[FinishedRound], seed: np.random.SeedSequence
    ) -> Round | None:
        rung = len(history)
        if rung >= self.rungs.n_rounds:
            return None
        previous = history[-1].parts[0] if history else None
        part, decision = self.rungs.part(rung, previous)
        if rung == 0:
            decision["schedule"] = _schedule_json(self.rungs.schedule)
            decision["log"] = _schedule_lines(self.rungs) + decision["log"]
        return Round((part,), decision)

    def choose(self, history: Sequence[FinishedRound]) -> Choice:
        # scikit-learn's _select_best_index: the best mean of the last rung (first on ties).
        return Choice(len(history) - 1, 0, best_of(history[-1].parts[0]))


@dataclass(frozen=True)
class HalvingStrategy:
    """Successive halving (:class:`~parcv.plan.halving.Halving`) as a strategy.

    Examples
    --------
    >>> ctx = SearchContext(tuple({"a": i} for i in range(9)), None, None, 90, 3, None, "score")
    >>> [r.n_candidates for r in HalvingStrategy(Halving(random_state=0)).schedule(ctx).rounds]
    [9, 3, 1]
    """

    halving: Halving
    name: str = "halving"
    # Whether a warm start continues the rungs exactly, decided (and said) once per run.
    _warm: dict[int, str | None] = field(default_factory=dict, compare=False, repr=False)

    def _warm_start(self, context: SearchContext, points: Sequence[dict[str, Any]]) -> str | None:
        if context.n_samples not in self._warm:
            self._warm[context.n_samples] = continues_exactly(
                context.estimator, list(points), self.halving.resource, n_samples=context.n_samples
            )
        return self._warm[context.n_samples]

    def config(self) -> dict[str, Any]:
        """Return the halving options and how its parts join (rungs)."""
        h = self.halving
        seed = h.random_state if isinstance(h.random_state, int) else None
        return {"name": self.name, "joins": "rungs", "resource": h.resource,
                "factor": h.factor, "min_resources": h.min_resources,
                "max_resources": h.max_resources,
                "aggressive_elimination": bool(h.aggressive_elimination),
                "random_state": seed}  # fmt: skip

    def start(self, context: SearchContext) -> Proposer:
        """Return the proposer of one halving search over the context's candidates.

        Raises
        ------
        ValueError
            A resource the estimator does not take or the space varies, or a
            CV whose splits change between calls (scikit-learn's checks).
        """
        check_constant_splits(context.cv)
        check_resource(self.halving, context.estimator, context.candidates)
        points = tuple(dict(c) for c in context.candidates)
        schedule = _schedule(self.halving, len(points), context)
        # A RandomState is copied per search, as scikit-learn's nested idiom clones a search
        # (and its random_state) per outer fold, then consumed rung after rung.
        seed = copy.deepcopy(self.halving.random_state)
        rungs = _Rungs(self.halving, points, tuple(range(len(points))), schedule,
                       warm_start=self._warm_start(context, points),
                       subsample_seed=seed)  # fmt: skip
        return _HalvingProposer(rungs)

    def schedule(self, context: SearchContext) -> Schedule:
        """Return the rungs: exact counts of candidates and units per rung."""
        s = _schedule(self.halving, len(context.candidates), context)
        by_rows = self.halving.resource == "n_samples"
        rounds = tuple(
            RoundBound(n, n * context.n_splits,
                       f"rung {i}: {n} candidates x {context.n_splits} folds, "
                       f"{self.halving.resource}={r}", n_rows=r if by_rows else None)
            for i, (n, r) in enumerate(zip(s.n_candidates, s.n_resources, strict=True))
        )  # fmt: skip
        return Schedule(rounds, exact=True)


def bracket_seeds(random_state: int, n_brackets: int) -> list[int]:
    """The seed of each bracket's draws, spawned from the space's ``random_state``.

    ``numpy.random.SeedSequence(random_state).spawn``: brackets draw
    independently, and runs with different seeds never share a draw (seeds
    ``s + bracket`` did: seed 0's bracket 1 was seed 1's bracket 0).

    Examples
    --------
    >>> a, b = bracket_seeds(0, 3), bracket_seeds(1, 3)
    >>> len(set(a) | set(b))
    6
    """
    children = np.random.SeedSequence(random_state).spawn(n_brackets)
    return [int(child.generate_state(1, dtype=np.uint32)[0]) for child in children]


@dataclass
class _HyperbandProposer:
    brackets: list[_Rungs]
    offsets: list[int] = field(default_factory=list)

    def propose(
        self, history: Sequence[FinishedRound], seed: np.random.SeedSequence
    ) -> Round | None:
        t = len(history)
        parts, decisions = [], []
        for b, rungs in enumerate(self.brackets):
            if t >= rungs.n_rounds:
                continue
            previous = None if t == 0 else self._part_of(history[-1], rungs.label)
            part, made = rungs.part(t, previous)
            parts.append(part)
            decisions.append({"bracket": b, **made})
        if not parts:
            return None
        decision: dict[str, Any] = {"round": t, "brackets": decisions}
        if t == 0:
            decision["schedules"] = {r.label: _schedule_json(r.schedule) for r in self.brackets}
        return Round(tuple(parts), decision)

    @staticmethod
    def _part_of(finished: FinishedRound, label: str) -> FinishedPart:
        return next(p for p in finished.parts if p.part.label == label)

    def choose(self, history: Sequence[FinishedRound]) -> Choice:
        winners: list[tuple[float, Choice]] = []
        for rungs in self.brackets:
            last = rungs.n_rounds - 1
            parts = history[last].parts
            p = next(i for i, part in enumerate(parts) if part.part.label == rungs.label)
            row = best_of(parts[p])
            winners.append((float(parts[p].means[row]), Choice(last, p, row)))
        scores = np.array([score for score, _ in winners])
        chosen = 0 if np.isnan(scores).all() else int(np.nanargmax(scores))
        return winners[chosen][1]


@dataclass(frozen=True)
class HyperbandStrategy:
    """Hyperband (:class:`~parcv.plan.halving.Hyperband`) as a strategy: brackets side by side.

    Bracket ``s`` draws its candidates from the ``RandomSpace`` with its own
    seed (:func:`bracket_seeds`), so a resumed run draws the same ones.
    """

    hyperband: Hyperband
    name: str = "hyperband"

    def config(self) -> dict[str, Any]:
        """Return the Hyperband options and how its parts join (brackets of rungs)."""
        h = self.hyperband
        return {"name": self.name, "joins": "brackets", "resource": h.resource,
                "max_resources": h.max_resources, "factor": h.factor}  # fmt: skip

    def _brackets(self, context: SearchContext) -> list[_Rungs]:
        space = context.space
        if not isinstance(space, RandomSpace):
            raise TypeError(
                f"Hyperband draws each bracket's candidates from a RandomSpace; got space="
                f"{space!r}. Pass e.g. space=parcv.RandomSpace({{'alpha': loguniform(1e-3, "
                "1e3)}, random_state=0) (its n_iter is not used: each bracket sets its own)."
            )
        check_resource(Halving(resource=self.hyperband.resource, max_resources=1),
                       context.estimator, [dict(c.params) for c in check_space(space)])  # fmt: skip
        brackets = self.hyperband.brackets()
        seeds = bracket_seeds(space.random_state, len(brackets))
        out, offset = [], 0
        for bracket, seed in zip(brackets, seeds, strict=True):
            drawn = check_space(replace(space, n_iter=bracket.n_candidates, random_state=seed))
            points = tuple(dict(c.params) for c in drawn)
            halving = self.hyperband.halving(bracket)
            schedule = _schedule(halving, len(points), context)
            ids = tuple(range(offset, offset + len(points)))
            warm = continues_exactly(context.estimator, list(points), halving.resource,
                                     n_samples=context.n_samples)  # fmt: skip
            out.append(_Rungs(halving, points, ids, schedule, label=f"bracket {bracket.index}",
                              warm_start=warm))  # fmt: skip
            offset += len(points)
        return out

    def start(self, context: SearchContext) -> Proposer:
        """Return the proposer of every bracket of one search."""
        return _HyperbandProposer(self._brackets(context))

    def schedule(self, context: SearchContext) -> Schedule:
        """Return the rounds: each bracket's rung of that round, exact counts."""
        brackets = self._brackets(context)
        rounds = []
        for t in range(max(b.n_rounds for b in brackets)):
            live = [b for b in brackets if t < b.n_rounds]
            n = sum(b.schedule.n_candidates[t] for b in live)
            text = "; ".join(f"{b.label}: {b.schedule.n_candidates[t]} candidates, "
                             f"{self.hyperband.resource}={b.schedule.n_resources[t]}"
                             for b in live)  # fmt: skip
            rounds.append(RoundBound(n, n * context.n_splits, f"round {t}: {text}"))
        # Its candidates are the brackets' own draws, not the space's n_iter points.
        return Schedule(tuple(rounds), exact=True,
                        n_candidates=sum(len(b.points) for b in brackets))  # fmt: skip
